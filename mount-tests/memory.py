#!/usr/bin/env python3
"""The daemon's memory stays bounded, whoever the reader is.

Against a mount served with --allow-other (and --share-journal, so that a
second uid may read `events`), measures the daemon's resident memory while:

  1. a second uid polls `events` with a zero timeout in a loop (--flood s);
  2. a second uid holds 1000 descriptors of `status.json`, each read one
     byte, while PREVIEWS previews are pending (a large status);
  3. PREVIEWS previews are staged and then decided (withdrawn by their
     producer closing its descriptors) and every descriptor is closed.

Fails when the growth exceeds --flood-limit MiB (1), --opens-limit MiB (2),
or when the memory after (3) exceeds twice that of the fresh daemon.
Prints one `memory:` line per figure.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from verdict import verdict

NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]

FLOOD = r"""
import os, select, sys, time
fd = os.open(os.path.join(sys.argv[1], "events"), os.O_RDONLY)
poller = select.poll()
poller.register(fd, select.POLLIN)
end = time.monotonic() + float(sys.argv[2])
polls = 0
while time.monotonic() < end:
    poller.poll(0)
    polls += 1
print(polls)
"""

HOLD_OPEN = r"""
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds = []
for _ in range(int(sys.argv[2])):
    fd = os.open(os.path.join(sys.argv[1], "status.json"), os.O_RDONLY)
    os.read(fd, 1)
    fds.append(fd)
print("open", flush=True)
sys.stdin.read()
"""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--daemon-pid", type=int, required=True)
    parser.add_argument("--previews", type=int, default=2000)
    parser.add_argument("--opens", type=int, default=1000)
    parser.add_argument("--flood", type=float, default=10.0, help="seconds of poll flood")
    parser.add_argument("--flood-limit", type=float, default=10.0, help="MiB")
    parser.add_argument("--opens-limit", type=float, default=50.0, help="MiB")
    return parser.parse_args()


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def say(name, value):
    print(f"memory: {name}: {value}", flush=True)


def stage(mount, count):
    """Stages `count` previews; closing the returned descriptors withdraws them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fds = []
    for index in range(count):
        fd = os.open(os.path.join(mount, "stage"), os.O_RDWR)
        request = {"label": f"memory preview {index}", "sourceTool": "memory"}
        os.write(fd, json.dumps(request).encode() + b"\n")
        fds.append(fd)
    return fds


def pending(mount):
    with open(os.path.join(mount, "status.json")) as status:
        return json.load(status)["pending"]


def settle(pid, seconds=1.0):
    """Memory after the daemon had a moment to give back what it freed."""
    time.sleep(seconds)
    return rss_mib(pid)


def main():
    args = parse_args()
    problems = []
    fresh = settle(args.daemon_pid, 0.2)
    say("fresh daemon (MiB)", f"{fresh:.1f}")

    flood = subprocess.run(NOBODY + [sys.executable, "-c", FLOOD, args.dir, str(args.flood)],
                           capture_output=True, text=True, check=False)
    if flood.returncode != 0:
        problems.append(f"the poll flood failed: {flood.stderr.strip()}")
    after_flood = settle(args.daemon_pid)
    growth = after_flood - fresh
    say("poll flood", f"{flood.stdout.strip() or '?'} polls of events by uid 65534 in {args.flood:.0f} s; growth {growth:.1f} MiB (limit {args.flood_limit:.0f})")
    if growth > args.flood_limit:
        problems.append(f"a poll flood grew the daemon by {growth:.1f} MiB")

    producers = stage(args.dir, args.previews)
    if pending(args.dir) != args.previews:
        problems.append(f"{pending(args.dir)} pending after staging {args.previews}")
    with open(os.path.join(args.dir, "status.json"), "rb") as status:
        size = len(status.read())
    before_opens = settle(args.daemon_pid, 0.2)
    holder = subprocess.Popen(NOBODY + [sys.executable, "-c", HOLD_OPEN, args.dir, str(args.opens)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = holder.stdout.readline().strip()
    if ready != "open":
        problems.append(f"uid 65534 could not hold {args.opens} status.json open: {holder.stderr.read().strip()}")
    held = settle(args.daemon_pid, 0.2)
    growth = held - before_opens
    say("open status.json", f"{args.opens} descriptors of a {size // 1024} KiB status.json held by uid 65534; growth {growth:.1f} MiB (limit {args.opens_limit:.0f})")
    if growth > args.opens_limit:
        problems.append(f"{args.opens} open status.json descriptors grew the daemon by {growth:.1f} MiB")
    holder.communicate("")

    staged = rss_mib(args.daemon_pid)
    for fd in producers:
        os.close(fd)
    deadline = time.monotonic() + 30
    while pending(args.dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = settle(args.daemon_pid, 2.0)
    say("staged and decided", f"{args.previews} previews: {staged:.1f} MiB with them staged, {after:.1f} MiB after (fresh {fresh:.1f}, limit {2 * fresh:.1f})")
    if after > 2 * fresh:
        problems.append(f"after {args.previews} previews the daemon holds {after:.1f} MiB, over twice the fresh {fresh:.1f} MiB")

    return verdict("memory", problems)


if __name__ == "__main__":
    sys.exit(main())
