#!/usr/bin/env bash
# Builds xdev (release) and installs it like a Linux tool:
#
#   scripts/install.sh [PREFIX]          PREFIX defaults to /usr/local
#
#   PREFIX/bin/xdev
#   PREFIX/bin/xdev-hook                               (the agents' hook; static)
#   PREFIX/share/man/man1/xdev.1                       (`xdev man`)
#   PREFIX/share/bash-completion/completions/xdev      (`xdev completions bash`)
#   PREFIX/share/zsh/site-functions/_xdev              (`xdev completions zsh`)
#   PREFIX/share/fish/vendor_completions.d/xdev.fish   (`xdev completions fish`)
#   PREFIX/lib/systemd/system/xdev@.service            (ExecStart= is PREFIX/bin/xdev)
#   PREFIX/lib/systemd/user/xdev@.service              (the user unit, the same)
#
# DESTDIR, if set, is put in front of every path written (for packagers);
# the units still name PREFIX/bin/xdev. The build runs as you; the files are
# installed as you when you can write there, else through sudo. It needs
# cargo and nothing else (scripts/setup.sh --run prepares a machine to run
# xdev). Afterwards it prints the next step for the units: with PREFIX
# /usr/local or /usr, which systemd reads, `systemctl daemon-reload` and
# `systemctl enable --now xdev@xdev` (serves /xdev); with any other PREFIX,
# systemd never looks there, so first `systemctl link` each unit.
set -euo pipefail

say() { printf 'install: %s\n' "$*"; }
die() {
    printf 'install: error: %s\n' "$*" >&2
    exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${1:-/usr/local}
case $prefix in
/*) ;;
*) die "PREFIX must be an absolute path, not '$prefix'" ;;
esac
prefix=${prefix%/}
dest=${DESTDIR:-}${prefix}

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || die "cargo (the Rust toolchain) is not installed or not on PATH"

say "building (cargo build --release)"
bin=$("$root/scripts/build-xdev.sh" --release) || die "the build failed"
say "built $bin ($("$bin" --version))"
say "building the hook (scripts/build-hook.sh --release)"
hook=$("$root/scripts/build-hook.sh" --release) || die "the hook's build failed"
say "built $hook"

# Generated files: made by the binary just built, so they match it.
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
"$bin" man >"$work/xdev.1"
"$bin" completions bash >"$work/xdev.bash"
"$bin" completions zsh >"$work/_xdev"
"$bin" completions fish >"$work/xdev.fish"
# The units name the binary where it is installed.
sed "s|/usr/bin/xdev|$prefix/bin/xdev|g" "$root/packaging/xdev@.service" >"$work/xdev@.service"
sed "s|/usr/bin/xdev|$prefix/bin/xdev|g" "$root/packaging/user/xdev@.service" >"$work/xdev-user@.service"

# Runs a command as root only when the destination needs it.
as_needed() {
    if [ -n "$use_sudo" ]; then
        sudo "$@"
    else
        "$@"
    fi
}
# The nearest existing directory above (or at) $dest decides.
probe=$dest
while [ ! -d "$probe" ]; do
    probe=$(dirname -- "$probe")
done
use_sudo=
if [ ! -w "$probe" ] || { [ -e "$dest" ] && [ ! -w "$dest" ]; }; then
    if [ "$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null 2>&1; then
        die "cannot write to $dest (run as root, or choose a PREFIX you can write)"
    fi
    say "installing into $dest through sudo"
    use_sudo=1
fi

installed=()
put() {
    local mode=$1 source=$2 target=$dest/$3
    as_needed install -D -m "$mode" -- "$source" "$target"
    installed+=("$target")
}
put 755 "$bin" bin/xdev
put 755 "$hook" bin/xdev-hook
put 644 "$work/xdev.1" share/man/man1/xdev.1
put 644 "$work/xdev.bash" share/bash-completion/completions/xdev
put 644 "$work/_xdev" share/zsh/site-functions/_xdev
put 644 "$work/xdev.fish" share/fish/vendor_completions.d/xdev.fish
put 644 "$work/xdev@.service" lib/systemd/system/xdev@.service
put 644 "$work/xdev-user@.service" lib/systemd/user/xdev@.service

for file in "${installed[@]}"; do
    say "installed $file"
done

# systemd reads units from its own directories only (`systemd-analyze
# unit-paths` lists them): PREFIX/lib/systemd is one of them for /usr/local
# and /usr alone. A unit elsewhere is linked into /etc/systemd first.
system_unit=$prefix/lib/systemd/system/xdev@.service
user_unit=$prefix/lib/systemd/user/xdev@.service
case $prefix in
/usr/local | /usr)
    say "next: systemctl daemon-reload && systemctl enable --now xdev@xdev   (serves /xdev)"
    say "  or, for one user without root: systemctl --user daemon-reload && systemctl --user enable --now xdev@main   (serves \$XDG_RUNTIME_DIR/xdev-main)"
    ;;
*)
    say "next: systemd does not read units under $prefix; link the unit in first:"
    say "  systemctl link $system_unit && systemctl enable --now xdev@xdev   (serves /xdev)"
    say "  or, for one user without root: systemctl --user link $user_unit && systemctl --user enable --now xdev@main   (serves \$XDG_RUNTIME_DIR/xdev-main)"
    ;;
esac
