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

bash "$root/scripts/setup.sh" >&2
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
(cd "$root" && cargo build --release) >&2

# Create the mount point when it is missing. A stale mount left by a killed
# daemon fails `stat` ("Transport endpoint is not connected") yet exists:
# leave that to xdev, which clears it.
if [ ! -e "$dir" ] && ! grep -qF " $dir fuse" /proc/self/mounts 2>/dev/null; then
    if ! mkdir -p -- "$dir" 2>/dev/null; then
        if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
            sudo mkdir -p -- "$dir"
            sudo chown "$(id -u):$(id -g)" -- "$dir"
        else
            mkdir -p -- "$dir" # again, to show the error
        fi
    fi
fi

exec "$root/target/release/xdev" mount "$dir"
