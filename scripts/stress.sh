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
#
# With --against-no-journal, each of RUNS rounds runs the same load (WRITES
# defaults to 500 then) against a daemon with --journal and against one
# without, back to back, and ends with the median throughput of each and
# their ratio: what the journal's syncs cost writers that are real shells.
#
# Prints `stress: ...` figures; exits non-zero if any run failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
against=""
if [ "${1:-}" = "--against-no-journal" ]; then
    against=yes
    shift
fi
runs=${1:-1}
writers=${WRITERS:-16}
writes=${WRITES:-$([ -n "$against" ] && echo 500 || echo 2000)}

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

# start_daemon [none]: a fresh daemon at $dir with its journal in $work
# (with `none`, without a journal file).
start_daemon() {
    rm -f "$work/journal.jsonl"
    local journal=(--journal "$work/journal.jsonl")
    [ "${1:-}" = none ] && journal=()
    "$bin" mount "$dir" "${journal[@]}" >"$work/daemon.out" 2>"$work/daemon.err" &
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

# run_load [none]: the load against a fresh daemon; its output to stdout.
run_load() {
    start_daemon "${1:-}"
    local journal=(--journal "$work/journal.jsonl")
    [ "${1:-}" = none ] && journal=()
    local status=0
    python3 mount-tests/stress.py "$dir" --writers "$writers" --writes "$writes" \
        "${journal[@]}" --daemon-pid "$daemon" || status=$?
    stop_daemon
    return "$status"
}

# median: the median of the numbers on stdin.
median() {
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

if [ -n "$against" ]; then
    failed=0
    : >"$work/journal.rates"
    : >"$work/none.rates"
    for run in $(seq "$runs"); do
        for mode in journal none; do
            echo "==> round $run of $runs, $mode: $writers writers x $writes writes"
            run_load "$([ "$mode" = none ] && echo none)" >"$work/load.out" || failed=$((failed + 1))
            cat "$work/load.out"
            sed -n 's/^stress: throughput (writes\/s): //p' "$work/load.out" >>"$work/$mode.rates"
        done
    done
    with=$(median <"$work/journal.rates")
    without=$(median <"$work/none.rates")
    echo "stress: median throughput (writes/s): --journal $with, no journal $without"
    echo "stress: journal ratio: $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.2f", a / b }')"
    echo "stress: rounds: $runs, failed: $failed"
    [ "$failed" -eq 0 ]
    exit
fi

failed=0
for run in $(seq "$runs"); do
    echo "==> run $run of $runs: $writers writers x $writes writes"
    run_load || failed=$((failed + 1))
done
echo "stress: runs: $runs, failed: $failed"
[ "$failed" -eq 0 ]
