#!/usr/bin/env bash
# An agent cannot approve its own call. An agent stand-in
# (mount-tests/agent_stand_in.py) runs `xdev hook` on the recorded Claude
# Code PreToolUse event as its child, as Claude Code runs its hooks; then a
# tool of its own that no hook gates (another child, as an MCP server the
# agent started would be) tries to decide that call:
#   - the root `resolve` and `reject`, `pending/<id>/resolve`,
#     `sessions/<session>/resolve`, and a draft renamed onto
#     `pending/<id>/reject` each fail with EPERM, and the tool reads back on
#     its descriptor why and where to decide from;
#   - the journal records each refusal (`outcome` refused, `errno` EPERM,
#     the tool's pid and process), nothing of it ran (no `intent`), and the
#     call is still pending;
#   - this script, outside the agent's processes as a person in a terminal
#     of their own is, resolves it: the hook allows the call with the reason.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
require_idle

hooks="$(cd "$(dirname "$0")/../examples/hooks" && pwd)"
bg agent "$PYTHON" "$(dirname "$0")/agent_stand_in.py" "$D" "$hooks/claude-pretooluse-bash.json" "$SCRATCH" \
    -- "$XDEV_BIN" hook --mount "$D"
agent=$BG_PID
wait_until 20000 "the agent's own tool tried to decide the call" test -e "$SCRATCH/attempts.json"
still_running "$agent" "the agent stand-in (its hook waits for a decision)"

attempt() { "$PYTHON" -c 'import json, sys; print(eval(sys.argv[2], {"r": json.load(open(sys.argv[1]))}))' "$SCRATCH/attempts.json" "$1"; }
ID=$(attempt 'r["id"]')
tool=$(attempt 'r["tool"]')
assert_eq "$(attempt 'r["agent"]')" "$agent" "the agent the tool ran under"
refusal=$(expected agents-own-call id "$ID" agent python3 agent-pid "$agent" writer python3 writer-pid "$tool")
assert_eq "$(attempt '[a["errno"] for a in r["attempts"]]')" "['EPERM', 'EPERM', 'EPERM', 'EPERM', 'EPERM']" \
    "what the root resolve, reject, pending/<id>/resolve, sessions/<session>/resolve and a rename got"
assert_eq "$(attempt '[a["pending"] for a in r["attempts"]]')" "[True, True, True, True, True]" \
    "the call still pending after each attempt"
assert_eq "$(attempt 'r["attempts"][0]["text"]')" "$refusal" "what the tool read back on its resolve descriptor"
assert_last "$refusal"
pending_is 1 || fail "the call is not pending any more"

assert_eq "$(log_records "r['outcome'] == 'refused' and r['errno'] == 'EPERM' and r['id'] == '$ID' and r['pid'] == $tool and r['process'] == 'python3'" | wc -l)" 5 \
    "the journal's refusals, naming the tool"
assert_eq "$(log_records "r['event'] == 'intent'" | wc -l)" 0 "intent records (nothing of a refusal runs)"

(echo "a person decides" >"$D/resolve") || fail "resolve from outside the agent's processes failed"
wait_exit "$agent" 10000 "the agent stand-in after resolve"
assert_eq "$EXIT_CODE" 0 "the agent stand-in's (its hook's) exit code"
assert_content "$SCRATCH/hook.out" '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"a person decides"}}'
pending_is 0 || fail "a preview is left pending"
note "an agent's own tool: EPERM five ways, journaled, still pending; a person outside resolved it"
