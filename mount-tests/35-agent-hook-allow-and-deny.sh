#!/usr/bin/env bash
# `xdev hook` as an agent runs it: a Claude Code PreToolUse event piped to
# `xdev hook` waits for a decision from a second process; resolve prints the
# agent's allow (with the reason), reject its deny (with the reason as the
# message the model reads). The preview shows the tool input as `detail`,
# and the journal names the agent's session and tool call.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
require_idle

# hook_bg NAME INPUT-FILE: `xdev hook` in the background (see bg), the
# event on its stdin; waits until its preview is staged ($ID).
hook_bg() {
    "$XDEV_BIN" hook <"$2" >"$SCRATCH/$1.out" 2>"$SCRATCH/$1.err" &
    BG_PID=$!
    BG_PIDS+=("$BG_PID")
    wait_until 10000 "the hook's preview staged" pending_is 1
    ID=$(ls "$D/pending")
}

event() { # event COMMAND TOOL-USE-ID: a PreToolUse event for Bash COMMAND
    printf '{"session_id":"s-35","transcript_path":"/tmp/t.jsonl","cwd":"/work/app","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"%s"},"tool_use_id":"%s"}\n' "$1" "$2"
}

event "make test" toolu_35a >"$SCRATCH/allow.json"
hook_bg allowed "$SCRATCH/allow.json"
assert_content "$D/pending/$ID/label" "Bash: make test"
assert_content "$D/pending/$ID/detail" '{
  "command": "make test"
}'
hook=$BG_PID
still_running "$hook" "xdev hook (waiting for a decision)"
(echo "tests are safe" >"$D/resolve") || fail "resolve from a second process failed"
wait_exit "$hook" 10000 "xdev hook after resolve"
assert_eq "$EXIT_CODE" 0 "xdev hook's exit code after resolve"
assert_content "$SCRATCH/allowed.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"tests are safe"}}'
assert_eq "$(cat "$SCRATCH/allowed.err")" "" "xdev hook's stderr after resolve"
assert_last "Allowed: Bash: make test. Reason: tests are safe"
assert_eq "$(log_records "r['id'] == '$ID' and r['event'] == 'resolve' and r['sessionId'] == 's-35' and r['toolUseId'] == 'toolu_35a'" | wc -l)" 1 \
    "the resolve record with the agent's session and tool call"

event "rm -rf /" toolu_35b >"$SCRATCH/deny.json"
hook_bg denied "$SCRATCH/deny.json"
hook=$BG_PID
(echo "never on this machine" >"$D/reject") || fail "reject from a second process failed"
wait_exit "$hook" 10000 "xdev hook after reject"
assert_eq "$EXIT_CODE" 0 "xdev hook's exit code after reject"
assert_content "$SCRATCH/denied.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"never on this machine"}}'
assert_last "Denied: Bash: rm -rf /. Reason: never on this machine"
pending_is 0 || fail "a preview is left pending"
note "allowed and denied through $D"
