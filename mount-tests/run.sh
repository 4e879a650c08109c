#!/usr/bin/env bash
# Hand-runnable scenarios against a real xdev mount.
#
#   mount-tests/run.sh DIR   run every scenario against an xdev already
#                            mounted at DIR (nothing staged, plan mode off);
#                            the CLI scenarios still use XDEV_BIN (below)
#   mount-tests/run.sh       build/locate the binary (XDEV_BIN, default
#                            target/debug/xdev), mount it on a fresh temp
#                            dir, run every scenario, then stop the daemon
#                            with SIGTERM and check it exits 0 and unmounts
#
# One scenario by hand: XDEV_DIR=/xdev bash mount-tests/03-reject-nothing-pending.sh
# Plan-mode scenarios start a second daemon of their own on a temp dir (with
# --plan-dir), so the shared mount stays out of plan mode.
# MOUNT_TESTS_VERBOSE=1 shows every scenario's output, not only a failure's.
#
# Prints `mount-tests: N passed, N failed` last; exits 1 if any failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
passed=0
failed=0
failures=()

summary() {
    echo "mount-tests: $passed passed, $failed failed"
}

record() { # record ok|fail NAME SECONDS [OUTPUT]
    if [ "$1" = ok ]; then
        passed=$((passed + 1))
        printf 'ok    %-40s %s\n' "$2" "$3"
        if [ -n "${MOUNT_TESTS_VERBOSE:-}" ] && [ -n "${4:-}" ]; then
            printf '%s\n' "$4" | sed 's/^/      | /'
        fi
    else
        failed=$((failed + 1))
        failures+=("$2")
        printf 'FAIL  %-40s %s\n' "$2" "$3"
        if [ -n "${4:-}" ]; then
            printf '%s\n' "$4" | sed 's/^/      | /'
        fi
    fi
}

now_ms() { date +%s%3N; }

# --- the daemon (only when no DIR was given) -----------------------------------
daemon_pid=""
mount_dir=""
daemon_out=""
daemon_err=""

cleanup() {
    if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -TERM "$daemon_pid" 2>/dev/null
        # Up to 3 s to go (tail returns when it has), then SIGKILL.
        timeout 3 tail --pid="$daemon_pid" -f /dev/null 2>/dev/null
        kill -KILL "$daemon_pid" 2>/dev/null
        wait "$daemon_pid" 2>/dev/null
    fi
    daemon_pid=""
    if [ -n "$mount_dir" ]; then
        if mountpoint -q "$mount_dir" 2>/dev/null || grep -qF " $mount_dir " /proc/self/mounts; then
            fusermount3 -u "$mount_dir" 2>/dev/null || fusermount3 -uz "$mount_dir" 2>/dev/null ||
                umount -l "$mount_dir" 2>/dev/null
        fi
        rmdir "$mount_dir" 2>/dev/null
        mount_dir=""
    fi
    rm -f "$daemon_out" "$daemon_err"
}
trap cleanup EXIT
trap 'echo "mount-tests: interrupted" >&2; exit 130' INT TERM

# The binary: $XDEV_BIN (relative to the repository root), default
# target/debug/xdev, built when missing. Exported (absolute) for the
# scenarios that run the CLI.
locate_bin() {
    bin=${XDEV_BIN:-target/debug/xdev}
    case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
    if [ ! -x "$bin" ]; then
        echo "mount-tests: $bin is missing; running cargo build"
        (cd "$root" && cargo build) || return 1
    fi
    [ -x "$bin" ] || {
        echo "mount-tests: no xdev binary at $bin" >&2
        return 1
    }
    XDEV_BIN=$bin
    export XDEV_BIN
}

start_daemon() {
    mount_dir=$(mktemp -d "${TMPDIR:-/tmp}/xdev-mount-tests.XXXXXX") || return 1
    daemon_out=$(mktemp) && daemon_err=$(mktemp) || return 1
    "$bin" mount "$mount_dir" >"$daemon_out" 2>"$daemon_err" </dev/null &
    daemon_pid=$!
    local deadline=$(($(now_ms) + 10000))
    while ! grep -qxF "xdev: mounted $mount_dir" "$daemon_out"; do
        if ! kill -0 "$daemon_pid" 2>/dev/null; then
            wait "$daemon_pid"
            echo "mount-tests: xdev mount exited with status $? before it was ready" >&2
            daemon_pid=""
            sed 's/^/      | /' "$daemon_out" "$daemon_err" >&2
            return 1
        fi
        if [ "$(now_ms)" -ge "$deadline" ]; then
            echo "mount-tests: no 'xdev: mounted $mount_dir' line within 10 s" >&2
            sed 's/^/      | /' "$daemon_out" "$daemon_err" >&2
            return 1
        fi
        sleep 0.02
    done
    echo "mount-tests: xdev (pid $daemon_pid) mounted at $mount_dir"
}

# SIGTERM → exit 0 within 5 s (docs/cli.md, Stopping the daemon: signals),
# and the mount is gone.
stop_daemon() {
    local start problems="" status
    start=$(now_ms)
    kill -TERM "$daemon_pid"
    local deadline=$((start + 5000))
    while kill -0 "$daemon_pid" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do
        sleep 0.02
    done
    if kill -0 "$daemon_pid" 2>/dev/null; then
        problems+="daemon still running 5 s after SIGTERM"$'\n'
        kill -KILL "$daemon_pid"
    fi
    wait "$daemon_pid"
    status=$?
    daemon_pid=""
    local took=$(($(now_ms) - start))
    [ "$status" -eq 0 ] || problems+="daemon exited with status $status (expected 0)"$'\n'
    [ "$took" -le 10000 ] || problems+="daemon took ${took} ms to exit (not within 10 s)"$'\n'
    if mountpoint -q "$mount_dir" 2>/dev/null || grep -qF " $mount_dir " /proc/self/mounts; then
        problems+="$mount_dir is still mounted after the daemon exited"$'\n'
    fi
    local lines
    lines=$(grep -c . "$daemon_out")
    [ "$lines" -eq 1 ] || problems+="daemon printed $lines stdout lines (expected exactly one ready line)"$'\n'
    if [ -z "$problems" ]; then
        record ok "daemon: SIGTERM, exit 0, unmounted" "$((took))ms"
    else
        record fail "daemon: SIGTERM, exit 0, unmounted" "$((took))ms" \
            "${problems%$'\n'}$(printf '\nstderr:\n'; cat "$daemon_err")"
    fi
}

# --- main ------------------------------------------------------------------------
if [ $# -gt 1 ]; then
    echo "usage: $0 [DIR]" >&2
    exit 2
fi

if ! locate_bin; then
    failed=1
    failures+=("xdev binary")
    summary
    exit 1
fi

if [ $# -eq 1 ]; then
    dir=$1
    [ "$dir" != / ] && dir=${dir%/}
    if ! mountpoint -q "$dir" || [ ! -e "$dir/status.json" ]; then
        echo "mount-tests: $dir is not an xdev mount (start one with: xdev mount $dir)" >&2
        failed=1
        summary
        exit 1
    fi
    XDEV_DIR=$dir
else
    if ! start_daemon; then
        failed=1
        failures+=("daemon start")
        summary
        exit 1
    fi
    XDEV_DIR=$mount_dir
fi
export XDEV_DIR

shopt -s nullglob
scenarios=("$here"/[0-9][0-9]-*.sh)
if [ "${#scenarios[@]}" -eq 0 ]; then
    echo "mount-tests: no scenarios found in $here" >&2
    failed=1
fi
for scenario in "${scenarios[@]}"; do
    name=$(basename "$scenario" .sh)
    start=$(now_ms)
    # A scenario may ask for more than 20 s: a line `# time limit: N s`.
    limit=$(sed -n 's/^# time limit: \([0-9][0-9]*\) s$/\1/p' "$scenario" | head -n 1)
    limit=${limit:-20}
    output=$(cd "$here" && timeout -k 2 "$limit" bash "$scenario" 2>&1)
    status=$?
    took="$(($(now_ms) - start))ms"
    if [ "$status" -eq 0 ]; then
        record ok "$name" "$took" "$output"
    else
        [ "$status" -eq 124 ] && output+=$'\n'"timed out after $limit s"
        record fail "$name" "$took" "$output"
    fi
done

if [ -n "$daemon_pid" ]; then
    stop_daemon
    cleanup
fi

if [ "$failed" -gt 0 ] && [ "${#failures[@]}" -gt 0 ]; then
    echo "mount-tests: failed: ${failures[*]}"
fi
summary
[ "$failed" -eq 0 ]
