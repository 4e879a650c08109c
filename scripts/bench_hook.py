#!/usr/bin/env python3
"""Times `xdev hook` against a trivial hook, in interleaved pairs.

Run by scripts/bench-hook.sh, which mounts the devices and builds the
binary. Two parts:

- `resolve MOUNT READY`: follows MOUNT/events and resolves every staged
  preview at once (`pending/<id>/resolve`), as a person who always says
  yes would; creates the file READY once it follows; runs until killed.
- `time EVENT RUNS -- A... -- B...`: runs command A and command B in turn
  (A B A B ...), each with EVENT on its stdin and its stdout thrown away,
  RUNS counted pairs after 3 warm-up pairs, and prints the median wall time
  of each, the ratio of the medians and the median of the pairs' own
  ratios (which holds when the machine's speed drifts during the run).

Each run is spawned with posix_spawn and timed from the spawn to the
reaping; that overhead is the same for both commands.
"""

import json
import os
import select
import statistics
import sys
import time

WARMUP = 3


def resolve_one(mount, preview):
    """Resolves one preview; one decided meanwhile is no error."""
    try:
        with open(os.path.join(mount, "pending", preview, "resolve"), "w") as device:
            device.write("bench\n")
    except FileNotFoundError:
        pass


def resolve(mount, ready):
    """Resolves each preview the journal says was staged, at once; creates
    the file `ready` once it follows `events` (which streams only what comes
    after it was opened)."""
    with open(os.path.join(mount, "events"), "rb", buffering=0) as events:
        poll = select.poll()
        poll.register(events, select.POLLIN)
        for preview in os.listdir(os.path.join(mount, "pending")):
            resolve_one(mount, preview)
        open(ready, "w").close()
        rest = b""
        while poll.poll():
            rest += events.read(65536)
            *lines, rest = rest.split(b"\n")
            for line in lines:
                record = json.loads(line)
                if record.get("event") == "staged" and record.get("id"):
                    resolve_one(mount, record["id"])


def run_once(argv, event):
    """One run of argv with `event` on stdin; its wall time and output."""
    stdin = os.open(event, os.O_RDONLY)
    read_end, write_end = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_DUP2, write_end, 1),
        (os.POSIX_SPAWN_CLOSE, stdin),
        (os.POSIX_SPAWN_CLOSE, write_end),
        (os.POSIX_SPAWN_CLOSE, read_end),
    ]
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    os.close(write_end)
    os.close(stdin)
    out = b""
    while chunk := os.read(read_end, 65536):
        out += chunk
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    os.close(read_end)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-hook: {argv[0]} exited with {status}")
    return elapsed, out


def timed(event, runs, a, b):
    """Interleaved runs of a and b; prints the figures."""
    first_a, first_b = run_once(a, event)[1], run_once(b, event)[1]
    for name, out in (("A", first_a), ("B", first_b)):
        answer = json.loads(out)["hookSpecificOutput"]
        if answer.get("permissionDecision") != "allow":
            sys.exit(f"bench-hook: {name} did not allow: {out!r}")
    times_a, times_b = [], []
    for n in range(WARMUP + runs):
        ta, _ = run_once(a, event)
        tb, _ = run_once(b, event)
        if n >= WARMUP:
            times_a.append(ta)
            times_b.append(tb)
    med_a, med_b = statistics.median(times_a), statistics.median(times_b)
    pairs = statistics.median(x / y for x, y in zip(times_a, times_b))
    print(f"A = {' '.join(a)}")
    print(f"B = {' '.join(b)}")
    print(f"pairs: {runs} (after {WARMUP} warm-up pairs), A B A B ...")
    print(f"A median {med_a * 1000:.2f} ms (min {min(times_a) * 1000:.2f}, max {max(times_a) * 1000:.2f})")
    print(f"B median {med_b * 1000:.2f} ms (min {min(times_b) * 1000:.2f}, max {max(times_b) * 1000:.2f})")
    print(f"ratio of medians A/B {med_a / med_b:.2f}; median of pair ratios {pairs:.2f}")


def main():
    if sys.argv[1:2] == ["resolve"]:
        resolve(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1:2] != ["time"]:
        sys.exit(__doc__)
    event, runs = sys.argv[2], int(sys.argv[3])
    rest = sys.argv[4:]
    if rest[:1] != ["--"] or rest[1:].count("--") != 1:
        sys.exit("usage: bench_hook.py time EVENT RUNS -- A... -- B...")
    split = rest.index("--", 1)
    timed(event, runs, rest[1:split], rest[split + 1 :])


if __name__ == "__main__":
    main()
