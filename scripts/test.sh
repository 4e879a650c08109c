#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine (as root, or a
# user with sudo): installs what is missing (scripts/setup.sh), then
#   cargo fmt --check
#   cargo clippy --all-targets -- -D warnings
#   cargo test --all-targets --no-fail-fast  (XDEV_REQUIRE_FUSE=1: FUSE tests never skip)
#   cargo test --doc
#   cargo build, then the shell scenarios in mount-tests/ against a fresh mount
# Every step runs even when an earlier one failed; the script exits non-zero
# if any failed. The last line is `mount-tests: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1

bash scripts/setup.sh || {
    echo "test: setup failed" >&2
    exit 1
}
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

# Tests that need FUSE fail loudly instead of skipping.
export XDEV_REQUIRE_FUSE=1

failed=()
step() {
    local name=$1
    shift
    printf '\n==> %s\n' "$name"
    local start=$SECONDS
    if "$@"; then
        printf '==> ok: %s (%ss)\n' "$name" $((SECONDS - start))
        return 0
    fi
    printf '==> FAILED: %s (%ss)\n' "$name" $((SECONDS - start))
    failed+=("$name")
    return 1
}

step "cargo fmt --check" cargo fmt --check
step "cargo clippy --all-targets -- -D warnings" cargo clippy --all-targets -- -D warnings
step "cargo test --all-targets" cargo test --all-targets --no-fail-fast
step "cargo test --doc" cargo test --doc

summary="mount-tests: 0 passed, 1 failed"
if step "cargo build" cargo build; then
    log=$(mktemp)
    # shellcheck disable=SC2064
    trap "rm -f '$log'" EXIT
    printf '\n==> %s\n' "mount-tests/run.sh"
    XDEV_BIN="$root/target/debug/xdev" bash mount-tests/run.sh 2>&1 | tee "$log"
    if [ "${PIPESTATUS[0]}" -eq 0 ]; then
        printf '==> ok: %s\n' "mount-tests/run.sh"
    else
        printf '==> FAILED: %s\n' "mount-tests/run.sh"
        failed+=("mount-tests/run.sh")
    fi
    line=$(grep -E '^mount-tests: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    [ -n "$line" ] && summary=$line
else
    echo "mount-tests: not run, because cargo build failed"
fi

echo
if [ "${#failed[@]}" -gt 0 ]; then
    echo "test: FAILED steps:"
    printf '  - %s\n' "${failed[@]}"
    status=1
else
    echo "test: all steps passed"
    status=0
fi
echo "$summary"
exit "$status"
