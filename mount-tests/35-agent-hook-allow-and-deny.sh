#!/usr/bin/env bash
# `xdev hook` as an agent runs it, with the walkthrough events of docs/hooks.md
# (examples/hooks/): a Claude Code PreToolUse event piped to
# `xdev hook` waits for a decision from a second process; resolve prints the
# agent's allow (with the reason), reject its deny (with the reason as the
# message the model reads). The preview shows the tool input as `detail`,
# and the journal names the agent's session and tool call.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
require_idle

# hook_bg NAME INPUT-FILE: `xdev hook` in the background (see bg), the
# event on its stdin, run as an agent runs it: by an agent stand-in (a
# shell of its own, whose exit status is the hook's), so that this script
# decides from outside the agent's processes, as a person in another
# terminal does (the agent's own processes may not decide its calls: see
# 45-an-agent-cannot-approve-its-own-call.sh). Waits until its preview is
# staged ($ID).
hook_bg() {
    agent_hook_bg "$1" "$2"
    wait_until 10000 "the hook's preview staged" pending_is 1
    ID=$(ls "$D/pending")
}

# The walkthrough events of docs/hooks.md.
hooks="$(cd "$(dirname "$0")/../examples/hooks" && pwd)"

hook_bg allowed "$hooks/cargo-test.json"
assert_content "$D/pending/$ID/label" "Bash: cargo test"
assert_content "$D/pending/$ID/detail" '{
  "command": "cargo test",
  "description": "Run the tests"
}'
hook=$BG_PID
still_running "$hook" "xdev hook (waiting for a decision)"
(echo "tests are safe to run" >"$D/resolve") || fail "resolve from a second process failed"
wait_exit "$hook" 10000 "xdev hook after resolve"
assert_eq "$EXIT_CODE" 0 "xdev hook's exit code after resolve"
assert_content "$SCRATCH/allowed.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"tests are safe to run"}}'
assert_eq "$(cat "$SCRATCH/allowed.err")" "" "xdev hook's stderr after resolve"
assert_last "Allowed: Bash: cargo test. Reason: tests are safe to run"
assert_eq "$(log_records "r['id'] == '$ID' and r['event'] == 'resolve' and r['sessionId'] == '0b7f4c1e' and r['toolUseId'] == 'toolu_01A'" | wc -l)" 1 \
    "the resolve record with the agent's session and tool call"

hook_bg denied "$hooks/rm-ssh.json"
hook=$BG_PID
(echo "never touch ~/.ssh; ask the user first" >"$D/reject") || fail "reject from a second process failed"
wait_exit "$hook" 10000 "xdev hook after reject"
assert_eq "$EXIT_CODE" 0 "xdev hook's exit code after reject"
assert_content "$SCRATCH/denied.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"never touch ~/.ssh; ask the user first"}}'
assert_last "Denied: Bash: rm -rf ~/.ssh. Reason: never touch ~/.ssh; ask the user first"
pending_is 0 || fail "a preview is left pending"

"$XDEV_BIN" hook --mount "$SCRATCH/nowhere" <"$hooks/cargo-test.json" >"$SCRATCH/nowhere.out" 2>"$SCRATCH/nowhere.err"
assert_eq "$?" 0 "xdev hook's exit code with no mount"
assert_eq "$(cat "$SCRATCH/nowhere.out")" "" "xdev hook's stdout with no mount (no opinion)"
assert_contains "$(cat "$SCRATCH/nowhere.err")" "printing nothing, so the agent asks as usual" "xdev hook's stderr with no mount"
note "the hooks walkthrough: allowed and denied through $D"
