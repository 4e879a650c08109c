#!/usr/bin/env bash
# Runs the benchmarks (criterion) after preparing the machine:
#   benches/session.rs  the session queue in process
#   benches/mount.rs    device writes through a real mount, RUNS times
#                       (default 3); the median of each of its headline
#                       figures (its `bench-figures` line) is appended to
#                       target/bench-history.jsonl with the date, commit and
#                       host, and shown next to the last run on this host
#   benches/review.rs   `xdev review`: a redraw with 10,000 previews, and a
#                       staged preview until it is on screen; then
#                       scripts/bench-review.sh, the review's memory
#   mount-tests/status_under_load.py  the owner's `cat status` while other
#                       users loop over a 15,000-preview status.json
# Extra arguments go to criterion, e.g. `scripts/bench.sh --quick`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

runs=${RUNS:-3}
figures=$(mktemp "${TMPDIR:-/tmp}/xdev-bench-figures.XXXXXX")
ran=0
if [ -f benches/session.rs ]; then
    echo "==> cargo bench --bench session"
    cargo bench --bench session -- "$@"
    ran=$((ran + 1))
fi
if [ -f benches/mount.rs ]; then
    for run in $(seq "$runs"); do
        echo "==> cargo bench --bench mount (run $run of $runs)"
        cargo bench --bench mount -- "$@" | tee "$figures.run"
        sed -n 's/^bench-figures //p' "$figures.run" >>"$figures"
    done
    ran=$((ran + 1))
    python3 scripts/bench_history.py "$figures" target/bench-history.jsonl
fi
if [ -f benches/review.rs ]; then
    echo "==> cargo bench --bench review, scripts/bench-review.sh"
    cargo bench --bench review -- "$@"
    bash scripts/bench-review.sh
    ran=$((ran + 1))
fi
rm -f "$figures" "$figures.run"
# The owner's reads while other users loop over a large status.json.
work=$(mktemp -d "${TMPDIR:-/tmp}/xdev-bench.XXXXXX")
chmod 755 "$work"
bin=$(scripts/build-xdev.sh --release)
"$bin" mount "$work/mnt" --allow-other --share-journal >"$work/out" 2>"$work/err" &
daemon=$!
"$bin" wait "$work/mnt" --pid "$daemon" --timeout 20s
python3 mount-tests/status_under_load.py "$work/mnt" || ran=0
kill -TERM "$daemon"
wait "$daemon" || true
rm -rf "$work"

if [ "$ran" -eq 0 ]; then
    echo "bench: no benches/session.rs or benches/mount.rs found" >&2
    exit 1
fi
