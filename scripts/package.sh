#!/usr/bin/env bash
# Builds the Debian package of xdev with cargo-deb:
#
#   scripts/package.sh [cargo deb options...]
#
# Builds the release binary, generates with it what the package ships
# besides it (the man page and the bash, zsh and fish completions) into
# packaging/ next to the binary, then runs `cargo deb --no-build`, which
# takes the files [package.metadata.deb] in Cargo.toml lists. Prints the
# path of the .deb. Needs cargo-deb (`cargo install cargo-deb`).
set -euo pipefail

say() { printf 'package: %s\n' "$*"; }
die() {
    printf 'package: error: %s\n' "$*" >&2
    exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
cargo deb --version >/dev/null 2>&1 || die "cargo-deb is missing: cargo install cargo-deb"

# Cargo says where the binary is: under CARGO_TARGET_DIR when that is set,
# which is also where cargo-deb resolves the target/release/ paths of the
# asset list.
say "building (cargo build --release)"
bin=$(scripts/build-xdev.sh --release) || die "the build failed"

generated=$(dirname -- "$bin")/packaging
mkdir -p -- "$generated"
say "building the hook (scripts/build-hook.sh --release)"
hook=$(scripts/build-hook.sh --release) || die "the hook's build failed"
cp -- "$hook" "$generated/xdev-hook"
# Debian installs man pages compressed; -n keeps the archive free of a
# timestamp, so the same binary makes the same package.
"$bin" man | gzip -9n >"$generated/xdev.1.gz"
"$bin" completions bash >"$generated/xdev.bash"
"$bin" completions zsh >"$generated/_xdev"
"$bin" completions fish >"$generated/xdev.fish"
say "generated the man page and completions in $generated"

cargo deb --no-build "$@"
