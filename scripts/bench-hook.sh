#!/usr/bin/env bash
# What an agent's permission hook costs: `xdev-hook` (what the agents'
# hook configurations run, built as the install script builds it, see
# scripts/build-hook.sh) with a Claude Code PreToolUse event on stdin
# (examples/hooks/cargo-test.json) against a trivial hook, `sh -c 'echo
# <the same allow JSON>'`, in interleaved pairs (A B A B ...), through a
# real mount in a temp dir served by a release build of `xdev`.
#
#   - resolver: the mount with no policy; a resolver following `events`
#     resolves each staged preview at once (scripts/bench_hook.py resolve);
#   - policy: the mount with `--policy` allowing `cargo test`, so the
#     daemon decides as the preview is staged (no resolver); skipped when
#     the binary has no `--policy`.
#
# Usage: scripts/bench-hook.sh [resolver|policy|all]   (env: RUNS=30,
#        XDEV_BIN=the xdev that mounts, XDEV_HOOK_BIN=the xdev-hook to
#        time, instead of building them; HOOK=cli to time `xdev hook`
#        instead of `xdev-hook`)
# Prints each part's medians and the ratio; see docs/performance.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
part=${1:-all}
runs=${RUNS:-30}
case "$part" in
resolver | policy | all) ;;
*)
    echo "usage: scripts/bench-hook.sh [resolver|policy|all]" >&2
    exit 2
    ;;
esac

bin=${XDEV_BIN:-$(scripts/build-xdev.sh --release --quiet)}
case ${HOOK:-small} in
cli) hook=("$bin" hook) ;;
*) hook=("${XDEV_HOOK_BIN:-$(scripts/build-hook.sh --release --quiet)}") ;;
esac
echo "bench-hook: timing ${hook[*]} ($(file -b "${hook[0]}" | grep -o "statically linked\|dynamically linked" || true))"
event="$root/examples/hooks/cargo-test.json"
allow='{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"bench"}}'

work=$(mktemp -d "${TMPDIR:-/tmp}/xdev-bench-hook.XXXXXX")
chmod 700 "$work"
dir="$work/mnt"
daemon=""
resolver=""
cleanup() {
    [ -n "$resolver" ] && kill "$resolver" 2>/dev/null && wait "$resolver" 2>/dev/null
    if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
        kill -TERM "$daemon"
        wait "$daemon" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# start_daemon ARGS...: `xdev mount $dir ARGS...`, waited for.
start_daemon() {
    "$bin" mount "$dir" "$@" >"$work/daemon.out" 2>"$work/daemon.err" &
    daemon=$!
    "$bin" wait "$dir" --pid "$daemon" --timeout 10s
}

stop_daemon() {
    kill -TERM "$daemon"
    wait "$daemon" || true
    daemon=""
}

# time_hook TITLE: the pairs against the mount now running.
time_hook() {
    echo "bench-hook: $1"
    python3 scripts/bench_hook.py time "$event" "$runs" \
        -- "${hook[@]}" --mount "$dir" \
        -- sh -c "echo '$allow'"
}

if [ "$part" != policy ]; then
    start_daemon
    python3 scripts/bench_hook.py resolve "$dir" "$work/resolver.ready" &
    resolver=$!
    for _ in $(seq 500); do
        [ -e "$work/resolver.ready" ] && break
        sleep 0.02
    done
    [ -e "$work/resolver.ready" ] || {
        echo "bench-hook: the resolver did not start" >&2
        exit 1
    }
    time_hook "xdev hook answered by a resolver following events (A) against a trivial hook (B)"
    kill "$resolver"
    wait "$resolver" 2>/dev/null || true
    resolver=""
    stop_daemon
fi

if [ "$part" != resolver ]; then
    if ! "$bin" mount --help | grep -q -- '--policy'; then
        echo "bench-hook: this xdev has no --policy; the policy part is skipped"
        exit 0
    fi
    printf '%s\n' '{"permissions": {"allow": ["Bash(cargo test:*)"]}}' >"$work/policy.json"
    start_daemon --policy "$work/policy.json"
    time_hook "xdev hook allowed by the daemon's policy (A) against a trivial hook (B)"
    stop_daemon
fi
