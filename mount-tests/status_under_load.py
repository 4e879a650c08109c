#!/usr/bin/env python3
"""The owner's `cat status` while other users loop over a large status.json.

Stages PREVIEWS previews through the mount's `stage` file (one descriptor
each, held open), then times the owner's reads of `status` READS times with
no other reader (the baseline), and again while LOOPS processes of uid 65534
read `status.json` in a loop (the mount must be started with --allow-other
--share-journal). Prints the medians, the 90th percentiles and the ratio of
the loaded median to the baseline one. A figure, not a test: run it by hand
or from scripts/bench.sh.

    status_under_load.py DIR [--previews 15000] [--loops 4] [--reads 60]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


def owner_reads(path, reads):
    times = []
    for _ in range(reads):
        started = time.perf_counter()
        with open(path, "rb") as status:
            status.read()
        times.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--previews", type=int, default=15000)
    parser.add_argument("--loops", type=int, default=4)
    parser.add_argument("--reads", type=int, default=60)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stagers = []
    for n in range(args.previews):
        fd = os.open(os.path.join(args.dir, "stage"), os.O_RDWR)
        os.write(fd, (json.dumps({"label": f"edit {n}"}) + "\n").encode())
        stagers.append(fd)
    status = os.path.join(args.dir, "status")
    base_median, base_p90 = owner_reads(status, args.reads)
    loop = f"while :; do cat '{args.dir}/status.json' >/dev/null; done"
    loops = [subprocess.Popen(NOBODY + ["sh", "-c", loop]) for _ in range(args.loops)]
    try:
        time.sleep(1)
        loaded_median, loaded_p90 = owner_reads(status, args.reads)
    finally:
        for process in loops:
            process.kill()
            process.wait()
        for fd in stagers:
            os.close(fd)
    print(f"status under load: {args.previews} pending, owner's cat status over {args.reads} reads")
    print(f"status under load: alone: median {base_median:.2f} ms, p90 {base_p90:.2f} ms")
    print(f"status under load: with {args.loops} uid-65534 loops on status.json: median {loaded_median:.2f} ms, p90 {loaded_p90:.2f} ms")
    print(f"status under load: ratio of medians {loaded_median / base_median:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
