#!/usr/bin/env bash
# Prepares a fresh Debian machine to build, run and test xdev.
#
#   scripts/setup.sh           everything below: to build, run and test
#   scripts/setup.sh --run     only what building and running needs: fuse3,
#                              /dev/fuse and cargo (scripts/run.sh uses it)
#
# Idempotent: packages are installed only when something is missing, so a
# second run changes nothing. Needs root, or sudo when not run as root.
#
#   - fuse3       fusermount3 (mounting and unmounting as a user, cleanup)
#   - python3     the mount tests drive raw os.open/os.write calls with it
#   - procps      ps/pgrep/kill, used by the tests
#   - util-linux  mountpoint, setpriv (second-uid tests)
#   - nodejs      the tests drive real Node.js writers too
#   - gcc         the signal tests build a small C writer (a retry loop
#                 with real signal handlers)
#   - npm         the client scenarios install pinned npm packages (an MCP
#                 server, write-file-atomic) into target/client-cache
#   - iproute2    ip: the Codex scenario brings up lo in a network namespace
#                 of its own (`unshare --net`) for its scripted model server
#
# It also installs the pinned Codex CLI (npm @openai/codex, the version in
# scripts/e2e/lib.sh) into ${XDEV_CLIENT_CACHE:-target/client-cache} when
# that exact version is not there: mount-tests/36-codex-hook.sh runs it.
# Running xdev needs none of that (--run).
#
# The Rust toolchain (cargo) must already be installed. Where rustup manages
# it, the musl target is added too (the fast build of xdev-hook).
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

only_run=0
case ${1-} in
--run) only_run=1 ;;
"") ;;
*) die "unknown argument '$1' (the only one is --run)" ;;
esac

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (run this script as root, or install sudo)"
    fi
}

# --- system packages ---------------------------------------------------------
# package name -> a command it provides
declare -A needs=(
    [fuse3]=fusermount3
    [python3]=python3
    [procps]=pgrep
    [util-linux]=mountpoint
    [nodejs]=node
    [npm]=npm
    [gcc]=cc
    [iproute2]=ip
    [tmux]=tmux
)
packages=(fuse3 python3 procps util-linux nodejs npm gcc iproute2 tmux)
[ "$only_run" -eq 0 ] || packages=(fuse3)
missing=()
for package in "${packages[@]}"; do
    if ! command -v "${needs[$package]}" >/dev/null 2>&1; then
        missing+=("$package")
    fi
done
# setpriv is in util-linux too (older Debian releases split it out).
if [ "$only_run" -eq 0 ] && ! command -v setpriv >/dev/null 2>&1 &&
    [[ " ${missing[*]-} " != *" util-linux "* ]]; then
    missing+=(util-linux)
fi

if [ "${#missing[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 ||
        die "missing ${missing[*]} and apt-get is not available; install them by hand"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
    say "system packages present (${packages[*]})"
fi

# --- /dev/fuse -----------------------------------------------------------------
if [ ! -e /dev/fuse ]; then
    say "/dev/fuse is missing; trying 'modprobe fuse'"
    if command -v modprobe >/dev/null 2>&1; then
        as_root modprobe fuse || true
    fi
    if [ ! -e /dev/fuse ]; then
        die "/dev/fuse does not exist and 'modprobe fuse' did not create it.
  xdev needs the FUSE kernel module. On a normal machine: 'modprobe fuse'.
  In a container, start it with '--device /dev/fuse --cap-add SYS_ADMIN'."
    fi
fi
[ -c /dev/fuse ] || die "/dev/fuse exists but is not a character device"
say "/dev/fuse present"

# --- Rust toolchain ------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
    die "cargo (the Rust toolchain) is not installed or not on PATH.
  Install it first, e.g. from https://rustup.rs, then run this again."
fi
say "cargo present ($(cargo --version))"

# The agents' hook starts fastest linked statically against musl
# (scripts/build-hook.sh); where rustup cannot add that target, the hook is
# linked statically against glibc instead, which also works.
if command -v rustup >/dev/null 2>&1; then
    musl="$(uname -m)-unknown-linux-musl"
    if rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
        say "Rust target $musl present (for xdev-hook)"
    elif rustup target add "$musl" >/dev/null 2>&1; then
        say "added the Rust target $musl (for xdev-hook)"
    else
        say "cannot add the Rust target $musl: xdev-hook will be linked statically against glibc"
    fi
fi

# --- the pinned Codex CLI ---------------------------------------------------------
[ "$only_run" -eq 0 ] || exit 0
# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/e2e/lib.sh"
E2E_NAME=setup
e2e_codex
say "Codex present ($("$CODEX" --version) in $CACHE)"
