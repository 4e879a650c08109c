#!/usr/bin/env bash
# Load figures of a release build through a real mount (separate from the
# tests; a shorter run of the same tool is mount-tests/27):
#   - WRITERS shells x WRITES `echo ... > resolve` each, against as many
#     previews of an async producer, with a `stat` loop of missing names and
#     a `cat status` loop alongside; two of the writers start a background
#     job before each write, so SIGCHLD keeps arriving while they wait (0
#     failed writes, every preview applied exactly once, all the same); a watchdog fails the run after 5 s with
#     no progress (mount-tests/stress.py);
#   - `ls pending` and `ls -l pending` times with many previews pending;
#   - the daemon's memory: fresh, with everything staged, after deciding.
# Usage: scripts/stress.sh [RUNS]   (env: WRITERS=16 WRITES=2000)
# Prints `stress: ...` figures; exits non-zero if any run failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
runs=${1:-1}
writers=${WRITERS:-16}
writes=${WRITES:-2000}

bash scripts/setup.sh >/dev/null
bin=$(scripts/build-xdev.sh --release --quiet)

work=$(mktemp -d "${TMPDIR:-/tmp}/xdev-stress.XXXXXX")
dir="$work/mnt"
mkdir -p "$dir"
daemon=""
cleanup() {
    if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
        kill -TERM "$daemon"
        wait "$daemon" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# start_daemon: a fresh daemon at $dir with its journal in $work.
start_daemon() {
    rm -f "$work/journal.jsonl"
    "$bin" mount "$dir" --journal "$work/journal.jsonl" >"$work/daemon.out" 2>"$work/daemon.err" &
    daemon=$!
    for _ in $(seq 250); do
        grep -q "xdev: mounted" "$work/daemon.out" && return 0
        sleep 0.02
    done
    echo "stress: the daemon did not start: $(cat "$work/daemon.err")" >&2
    exit 1
}

stop_daemon() {
    kill -TERM "$daemon"
    wait "$daemon"
    daemon=""
}

failed=0
for run in $(seq "$runs"); do
    echo "==> run $run of $runs: $writers writers x $writes writes"
    start_daemon
    python3 mount-tests/stress.py "$dir" --writers "$writers" --writes "$writes" \
        --journal "$work/journal.jsonl" --daemon-pid "$daemon" || failed=$((failed + 1))
    stop_daemon
done
echo "stress: runs: $runs, failed: $failed"
[ "$failed" -eq 0 ]
