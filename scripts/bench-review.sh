#!/usr/bin/env bash
# `xdev review`'s resident memory with 10,000 previews across 100 agent
# sessions pending on a real mount: an `xdev mount` daemon on a temp dir, a
# Python producer that stages the previews through `stage` (and holds them
# open), then `xdev review` in tmux at 80x24, RUNS times (default 3); each
# run waits until the review shows all 10,000, reads its VmRSS and VmHWM
# from /proc, and quits it with `q`. Prints each run and the medians
# (target: at most 40 MB), and a `bench-figures {...}` line.
#
#   scripts/bench-review.sh        (XDEV_BIN: default the release binary,
#                                   built when missing)
# The redraw time and the staged-to-screen latency are `cargo bench --bench
# review`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
XDEV_BIN=${XDEV_BIN:-$target/release/xdev}
runs=${RUNS:-3}
previews=10000
sessions=100

command -v tmux >/dev/null || { echo "bench-review: tmux is missing (scripts/setup.sh)" >&2; exit 1; }
if [ ! -x "$XDEV_BIN" ]; then
    (cd "$root" && cargo build --release --bin xdev)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xdev-bench-review.XXXXXX")
dir=$tmp/xdev
socket=$tmp/tmux.sock
daemon=""
producer=""
cleanup() {
    tmux -S "$socket" kill-server 2>/dev/null || true
    [ -n "$producer" ] && kill "$producer" 2>/dev/null || true
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

"$XDEV_BIN" mount "$dir" >/dev/null 2>"$tmp/daemon.err" &
daemon=$!
"$XDEV_BIN" wait "$dir" --pid "$daemon"

# The producer: stages every preview, says so, and holds them until killed
# (a closed stage file withdraws its preview).
python3 - "$dir" "$previews" "$sessions" "$tmp/staged" <<'PY' &
import json, os, signal, sys
mount, count, sessions, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
held = []
for seq in range(count):
    f = open(os.path.join(mount, "stage"), "r+b", buffering=0)
    request = {"label": f"Bash: cargo test --package crate-{seq:05}", "sourceTool": "Bash",
               "sessionId": f"session-{seq % sessions:03d}",
               "detail": {"command": f"cargo test --package crate-{seq:05}"}}
    f.write((json.dumps(request) + "\n").encode())
    line = f.readline()
    assert b'"staged"' in line, line
    held.append(f)
open(ready, "w").close()
signal.pause()
PY
producer=$!
for _ in $(seq 6000); do
    [ -e "$tmp/staged" ] && break
    kill -0 "$producer" 2>/dev/null || { echo "bench-review: the producer failed" >&2; exit 1; }
    sleep 0.05
done
[ -e "$tmp/staged" ] || { echo "bench-review: $previews previews not staged within 300 s" >&2; exit 1; }

kib() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$2/status"; }
rss_runs=()
hwm_runs=()
for run in $(seq "$runs"); do
    tmux -S "$socket" -f /dev/null new-session -d -s "review$run" -x 80 -y 24 "exec '$XDEV_BIN' review '$dir'"
    pid=$(tmux -S "$socket" display-message -p -t "review$run" '#{pane_pid}')
    for _ in $(seq 1200); do
        tmux -S "$socket" capture-pane -p -t "review$run" | grep -qF "$previews pending in $sessions group(s)" && break
        sleep 0.05
    done
    tmux -S "$socket" capture-pane -p -t "review$run" | grep -qF "$previews pending in $sessions group(s)" ||
        { echo "bench-review: the review did not show $previews previews within 60 s" >&2; exit 1; }
    # Scroll through the whole list once, so the figure includes the rows
    # drawn along the way.
    tmux -S "$socket" send-keys -t "review$run" End
    sleep 0.5
    rss=$(kib VmRSS "$pid")
    hwm=$(kib VmHWM "$pid")
    echo "run $run: xdev review VmRSS $((rss / 1024)) MiB ($rss kB), peak VmHWM $((hwm / 1024)) MiB ($hwm kB)"
    rss_runs+=("$rss")
    hwm_runs+=("$hwm")
    tmux -S "$socket" send-keys -t "review$run" q
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rss=$(median "${rss_runs[@]}")
hwm=$(median "${hwm_runs[@]}")
echo "xdev review with $previews previews in $sessions sessions: median VmRSS $((rss / 1024)) MiB, median peak $((hwm / 1024)) MiB (target <= 40 MB)"
echo "bench-figures {\"review_rss_kib\": $rss, \"review_hwm_kib\": $hwm}"
