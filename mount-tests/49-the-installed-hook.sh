#!/usr/bin/env bash
# 49: the hook as scripts/install.sh builds and installs it
# (scripts/build-hook.sh: `xdev-hook`, static, not position-independent,
# against musl where rustup has its target), which the shipped agent
# configurations run. $XDEV_STATIC_HOOK names that build (scripts/test.sh
# makes it before the tests); without it, this scenario builds it.
#   - it is statically linked (no dynamic loader runs when it starts);
#   - on a mount whose rules allow `ls *` and deny `rm *` with a reason, a
#     Claude Code event asking for `ls -la` is allowed with nobody
#     answering, and one asking for `rm -rf build/` denied with the rule's
#     reason, as `xdev hook` answers them;
#   - a command line it does not read itself (`--help`) goes to the
#     `xdev hook` of the `xdev` on PATH (none is beside it here).
# time limit: 300 s
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

hook=${XDEV_STATIC_HOOK:-}
if [ -z "$hook" ]; then
    hook=$(cd "$LIB_ROOT" && scripts/build-hook.sh --release --quiet) || fail "scripts/build-hook.sh failed"
fi
[ -x "$hook" ] || fail "no hook at $hook"
if ldd "$hook" >/dev/null 2>&1; then
    fail "$hook is dynamically linked: $(ldd "$hook" 2>&1 | head -n 3)"
fi

start_policy_daemon <<'RULES'
{"permissions": {
  "allow": ["Bash(ls *)"],
  "deny": [{"rule": "Bash(rm *)", "reason": "Deleting files needs a person: ask in the chat."}]
}}
RULES

# answer NAME HOOK...: what HOOK printed for event NAME, run as an agent runs
# it (see agent_hook_bg).
answer() {
    local name=$1
    shift
    # shellcheck disable=SC2016 # expanded by the stand-in
    bg "$name" sh -c '"$@" <"$0" & wait $!' "$SCRATCH/$name.json" "$@"
    wait_exit "$BG_PID" 20000 "the hook on $name"
    assert_eq "$EXIT_CODE" 0 "the hook's exit code on $name"
}

bash_event allowed "ls -la"
answer allowed "$hook"
assert_content "$SCRATCH/allowed.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"policy: Bash(ls *)"}}'
cp "$SCRATCH/allowed.json" "$SCRATCH/allowed-cli.json"
answer allowed-cli "$XDEV_BIN" hook
assert_eq "$(cat "$SCRATCH/allowed.out")" "$(cat "$SCRATCH/allowed-cli.out")" "xdev-hook and xdev hook on an allowed call"

bash_event denied "rm -rf build/"
answer denied "$hook"
assert_content "$SCRATCH/denied.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Deleting files needs a person: ask in the chat."}}'

help=$(PATH="$(dirname "$XDEV_BIN"):$PATH" "$hook" --help) || fail "xdev-hook --help failed"
assert_contains "$help" "Usage: xdev hook" "xdev-hook --help, answered by xdev hook"
stop_own_daemon
note "the install script's hook ($(file -b "$hook" | cut -d, -f1)): allowed and denied by the policy as xdev hook is; --help went to xdev hook"
