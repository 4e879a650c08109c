#!/usr/bin/env bash
# Runs the whole test suite N times while two CPU-burning processes run
# alongside (a busy CI machine), and counts the runs that failed:
#   scripts/flake.sh [N]        (default 10)
# Prints one line per run and, last, `flake: N runs, K failed`; exits
# non-zero if any run failed. Logs of failed runs are kept under
# $TMPDIR (their paths are printed).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
runs=${1:-10}

bash scripts/setup.sh >/dev/null || {
    echo "flake: setup failed" >&2
    exit 1
}
export XDEV_REQUIRE_FUSE=1
# Built once, before the load starts: the runs measure the tests, not the build.
cargo test --all-targets --no-run --quiet || exit 1

burners=()
stop_burners() {
    if [ "${#burners[@]}" -gt 0 ]; then
        kill "${burners[@]}" 2>/dev/null
        wait "${burners[@]}" 2>/dev/null
    fi
}
trap stop_burners EXIT
for _ in 1 2; do
    (while :; do :; done) &
    burners+=($!)
done

failed=0
for run in $(seq "$runs"); do
    log=$(mktemp "${TMPDIR:-/tmp}/xdev-flake-$run.XXXXXX")
    start=$SECONDS
    if cargo test --all-targets --no-fail-fast >"$log" 2>&1; then
        echo "flake: run $run ok ($((SECONDS - start)) s)"
        rm -f "$log"
    else
        failed=$((failed + 1))
        echo "flake: run $run FAILED ($((SECONDS - start)) s): $(grep -E '^test .* FAILED$' "$log" | head -5 | tr '\n' ' ')log: $log"
    fi
done
echo "flake: $runs runs, $failed failed"
[ "$failed" -eq 0 ]
