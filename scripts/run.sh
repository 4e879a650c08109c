#!/usr/bin/env bash
# The main job: prepares the machine, builds xdev (release) and serves the
# devices at DIR (default /xdev) in the foreground until SIGINT/SIGTERM.
#
#   scripts/run.sh [DIR]
#
# Prints `xdev: mounted DIR` once the mount answers.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-/xdev}

# Only what running needs: no test tools, no agents.
bash "$root/scripts/setup.sh" --run >&2
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
bin=$("$root/scripts/build-xdev.sh" --release)

# `xdev mount` creates a missing mount point itself and removes it again when
# it exits (also, after a SIGKILL, when the next daemon there exits), so that
# no bare directory is left for `echo ... > DIR/resolve` to write into. Only a
# user who cannot create DIR (not root, parent not writable, e.g. /xdev) gets
# it from sudo here; that directory stays after xdev exits.
parent=$(dirname -- "$dir")
if [ "$(id -u)" -ne 0 ] && [ ! -e "$dir" ] && [ ! -w "$parent" ] &&
    ! grep -qF " $dir fuse" /proc/self/mounts 2>/dev/null && command -v sudo >/dev/null 2>&1; then
    sudo mkdir -p -- "$dir"
    sudo chown "$(id -u):$(id -g)" -- "$dir"
fi

exec "$bin" mount "$dir"
