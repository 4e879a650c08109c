#!/usr/bin/env python3
"""Appends the medians of the mount benchmark's runs to the bench history.

Usage: bench_history.py FIGURES HISTORY

FIGURES holds one JSON object per run (the `bench-figures` line of
`cargo bench --bench mount`). The median of each figure goes to HISTORY
(JSON Lines) with the date, the commit and the host, and is printed next
to the last entry of the same host, so a change shows at once. Figures
from different machines are never compared: the host is part of the key.
"""

import datetime
import json
import socket
import statistics
import subprocess
import sys

# Figures where more is better; for the others (times, ratios of times,
# CPU per echo) less is better, but for settings, which are only shown.
MORE_IS_BETTER = ("writers_", "journal_ratio")
SETTINGS = ("threads",)


def medians(path):
    with open(path, encoding="utf-8") as runs:
        figures = [json.loads(line) for line in runs if line.strip()]
    if not figures:
        sys.exit("bench: no bench-figures line in the mount benchmark's output")
    keys = [key for key in figures[0] if all(key in run for run in figures)]
    return len(figures), {key: statistics.median(run[key] for run in figures) for key in keys}


def commit():
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def last_of_host(path, host):
    last = None
    try:
        with open(path, encoding="utf-8") as history:
            for line in history:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if entry.get("host") == host:
                    last = entry
    except FileNotFoundError:
        pass
    return last


def change(key, now, before):
    if not isinstance(before, (int, float)) or before == 0:
        return ""
    ratio = now / before
    if key in SETTINGS:
        return "(setting)" if ratio != 1 else ""
    better = ratio > 1 if key.startswith(MORE_IS_BETTER) else ratio < 1
    word = "better" if better else "worse"
    if abs(ratio - 1) < 0.02:
        word = "same"
    return f"x{ratio:.3f} ({word})"


def main():
    figures_path, history_path = sys.argv[1], sys.argv[2]
    runs, figures = medians(figures_path)
    host = socket.gethostname()
    entry = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": host,
        "runs": runs,
        "figures": figures,
    }
    last = last_of_host(history_path, host)
    print(f"\nbench: medians of {runs} run(s) of the mount benchmark, commit {entry['commit']}")
    if last:
        print(f"       against {last['date']} (commit {last['commit']}) on this host")
    for key, now in figures.items():
        before = last["figures"].get(key) if last else None
        shown = "" if before is None else f"{before:>10.3f}  {change(key, now, before)}"
        print(f"  {key:<24} {now:>10.3f}  {shown}")
    with open(history_path, "a", encoding="utf-8") as history:
        history.write(json.dumps(entry) + "\n")
    print(f"bench: appended to {history_path}")


if __name__ == "__main__":
    main()
