#!/usr/bin/env bash
# Runs the benchmarks (criterion) after preparing the machine:
#   benches/session.rs  the session queue in process
#   benches/mount.rs    device writes through a real mount
# Extra arguments go to criterion, e.g. `scripts/bench.sh --quick`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

ran=0
for bench in session mount; do
    if [ -f "benches/$bench.rs" ]; then
        echo "==> cargo bench --bench $bench"
        cargo bench --bench "$bench" -- "$@"
        ran=$((ran + 1))
    fi
done
if [ "$ran" -eq 0 ]; then
    echo "bench: no benches/session.rs or benches/mount.rs found" >&2
    exit 1
fi
