#!/usr/bin/env bash
# Builds the xdev binary and prints its path as cargo reports it, so that
# CARGO_TARGET_DIR (or a workspace's target directory) is honoured and
# ./target is never assumed:
#
#   bin=$(scripts/build-xdev.sh --release)
#
# Arguments go to `cargo build`; cargo's own messages go to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
bin=$(cargo build --bin xdev --message-format=json-render-diagnostics "$@" |
    grep '"reason":"compiler-artifact"' |
    grep '"kind":\["bin"\]' |
    grep '"name":"xdev"' |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' |
    tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "build-xdev: cargo built no xdev binary that it told of" >&2
    exit 1
fi
printf '%s\n' "$bin"
