#!/usr/bin/env bash
# Builds `xdev-hook` to start as fast as this machine allows and prints its
# path as cargo reports it:
#
#   hook=$(scripts/build-hook.sh --release)
#
# An agent starts its hook once for every tool call, and most of what a
# hook costs is starting (see docs/performance.md). So the hook is linked
# statically and not position-independent: no dynamic loader runs, and
# nothing is relocated. Against musl when its Rust target is installed
# (`rustup target add x86_64-unknown-linux-musl`; scripts/setup.sh adds it
# where rustup can): glibc's start-up asks the CPU for its cache sizes,
# and under a hypervisor each of those questions is an exit to the host.
# Else statically against glibc, else as any other build.
#
# Arguments go to `cargo build`; cargo's own messages go to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
host=$(rustc -vV | sed -n 's/^host: //p')
arch=${host%%-*}
musl=$arch-unknown-linux-musl
target=()
flags="-C relocation-model=static"
if rustc --print target-libdir --target "$musl" >/dev/null 2>&1 &&
    [ -d "$(rustc --print target-libdir --target "$musl")" ] &&
    [ -n "$(ls "$(rustc --print target-libdir --target "$musl")" 2>/dev/null)" ]; then
    target=(--target "$musl")
elif [[ $host == *-linux-gnu ]]; then
    target=(--target "$host")
    flags="$flags -C target-feature=+crt-static"
fi
if [ ${#target[@]} -gt 0 ]; then
    # Given with --target, the flags reach only the binary, not the build
    # scripts and proc-macros (which cannot be static).
    export RUSTFLAGS="${RUSTFLAGS:-} $flags"
fi
bin=$(cargo build --bin xdev-hook --message-format=json-render-diagnostics ${target[@]+"${target[@]}"} "$@" |
    grep '"reason":"compiler-artifact"' |
    grep '"kind":\["bin"\]' |
    grep '"name":"xdev-hook"' |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' |
    tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "build-hook: cargo built no xdev-hook binary that it told of" >&2
    exit 1
fi
printf '%s\n' "$bin"
