#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine (as root, or a
# user with sudo): installs what is missing (scripts/setup.sh), then
#   cargo fmt --check
#   cargo clippy --all-targets -- -D warnings
#   scripts/build-hook.sh --release  (the agents' hook as scripts/install.sh
#       builds it; scenario 49 tests that build, named by XDEV_STATIC_HOOK)
#   cargo test --all-targets --no-fail-fast  (XDEV_REQUIRE_FUSE=1: FUSE tests never skip;
#       tests/scenarios.rs runs every shell scenario of mount-tests/, one
#       test each, against a fresh mount of the built binary)
#   cargo test --doc
#   cargo clippy --no-default-features  (the session core alone builds, lint-clean:
#       no FUSE, no CLI)
#   the examples: cargo run --example in_process, mount and plan_review (the
#       mount example needs FUSE and fails loudly without it, never skips)
# Every step runs even when an earlier one failed; the script exits non-zero
# if any failed. The last line is `test: N steps passed, N failed`.
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
steps=0
step() {
    local name=$1
    shift
    steps=$((steps + 1))
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
# The agents' hook as scripts/install.sh builds it, for scenario 49.
# shellcheck disable=SC2317 # run through step
build_static_hook() {
    XDEV_STATIC_HOOK=$(scripts/build-hook.sh --release) && export XDEV_STATIC_HOOK
}
step "the agents' hook as the install script builds it (scripts/build-hook.sh)" build_static_hook
step "cargo test --all-targets" cargo test --all-targets --no-fail-fast
step "cargo test --doc" cargo test --doc
step "cargo clippy --no-default-features -- -D warnings (the core alone)" \
    cargo clippy --no-default-features -- -D warnings

# Runs every example, each to the end even when one failed; fails if any did.
# shellcheck disable=SC2317 # run through step
run_examples() {
    local example status=0
    for example in in_process mount plan_review; do
        echo "--> cargo run --example $example"
        cargo run --example "$example" || {
            echo "--> FAILED: example $example"
            status=1
        }
    done
    return "$status"
}
step "cargo run --example (in_process, mount, plan_review)" run_examples

echo
status=0
if [ "${#failed[@]}" -gt 0 ]; then
    echo "test: FAILED steps:"
    printf '  - %s\n' "${failed[@]}"
    status=1
fi
echo "test: $((steps - ${#failed[@]})) steps passed, ${#failed[@]} failed"
exit "$status"
