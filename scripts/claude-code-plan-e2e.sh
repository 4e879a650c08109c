#!/usr/bin/env bash
# End-to-end: the real Claude Code binary in plan mode, its ExitPlanMode
# decided on xdev's plan desk through `xdev hook`, against a scripted model
# server on 127.0.0.1, in a network namespace of its own.
#
#   scripts/claude-code-plan-e2e.sh [--keep]
#
# Two runs, each on a fresh mount (`xdev mount <mnt> --plan-dir <plans>
# --plan-handler review`) with a fresh HOME and project directory whose
# .claude/settings.json has
#   PermissionRequest, matcher ExitPlanMode: `xdev hook --mount <mnt>`
#   PreToolUse, matcher Bash:                `xdev hook --mount <mnt>` (as the
#                                            docs/hooks.md shows; no Bash call here)
#   PreToolUse, matcher ExitPlanMode:        a passive tap that answers nothing,
#                                            to record that this event fires too
# every hook run through scripts/e2e/hook_tap.py, which records the event and
# the hook's answer in <run>/hooks.jsonl. Write is not hooked.
#
# Claude Code runs as `claude -p --permission-mode plan --permission-prompt-tool
# stdio --input-format stream-json --output-format stream-json --verbose`:
# Claude Code 2.1.332 in -p disables ExitPlanMode (also EnterPlanMode and
# AskUserQuestion; "No such tool available: ExitPlanMode. ExitPlanMode is
# disabled for this session") unless a permission prompt tool is named, and
# with one it sends ExitPlanMode's prompt to that host (a `can_use_tool`
# control_request on stdout) at the same time as it runs the PermissionRequest
# hook: the first answer wins. With stdin at /dev/null the host's "answer" is
# "Tool permission request failed: AbortError: Stream closed", which beat even
# a 70 ms hook. So the prompt goes in as one stream-json message on a stdin
# that stays open and silent until the result (scripts/e2e/in_netns.sh):
# the hook's answer wins and Claude Code cancels the host's prompt
# (control_cancel_request).
#
# The scripted model does what plan mode asks: it writes the plan (`# Add hello
# ...`) to the plan file the plan-mode reminder names, then calls ExitPlanMode
# with no argument (Claude Code fills in plan and planFilePath from that file).
# A decider here polls `xdev plan status` until the plan is under review, then:
#
#   approve  `xdev plan approve --mode acceptEdits`: the model's next turn is
#            Write of <project>/hello.txt, which acceptEdits lets run without
#            a prompt, then it ends with text. (Without --mode, Claude Code goes
#            back to `default` and that Write's prompt goes to the silent host:
#            the run hangs until E2E_TIMEOUT.)
#   refine   `xdev plan refine "add tests"`: the model reads the refusal and
#            ends with text.
#
# scripts/e2e/check.py (`plan`) asserts, for both: claude exited 0 with
# success, xdev hook answered ExitPlanMode's PermissionRequest (once), the
# plan file was written in plan mode and Claude Code passed it in the
# ExitPlanMode input, the desk's <plans>/Add-hello-plan.md holds that plan,
# the journal (<mnt>/log) has a propose record of it with outcome approved
# (refine), the only prompt sent to the host was ExitPlanMode's and it was
# cancelled, and the agent's namespace has only lo; for approve: the hook's
# allow carries updatedInput (the call's own input) and updatedPermissions
# setMode acceptEdits, Claude Code's mode went plan -> acceptEdits, the
# model's ExitPlanMode tool_result says "User has approved your plan", the
# Write's tool_result is a success, hello.txt holds the content, and nothing
# was denied; for refine: the hook's deny, the model's tool_result carries
# "Revise the plan and present it again" and "add tests", and hello.txt was
# not written.
#
# Not part of CI. Needs root (unshare --net, FUSE), node/npm with the npm
# registry reachable for the first install, python3, and iproute2.
#
# Options:
#   --keep   keep the work directory (it is always kept on failure)
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for each claude run, default 180).
set -uo pipefail

PLAN=$'# Add hello\n\n1. Write hello.txt in the project with a greeting.\n'
CONTENT=$'hello from the approved plan\n'
FEEDBACK="add tests"
PROMPT="Plan the scripted change, then carry it out once the plan is approved."

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
for arg in "$@"; do
    e2e_common_arg claude-code-plan-e2e "$arg"
done

e2e_begin claude-code-plan-e2e
e2e_need_subcommand plan
e2e_claude
e2e_work_dir
e2e_say_versions "Claude Code" "$CLAUDE_CODE_VERSION"

# decide R MNT DECISION: waits (up to the claude timeout) until a plan is under
# review on MNT, then runs `xdev plan approve --mode acceptEdits` or `xdev
# plan refine "$FEEDBACK"`. Leaves the status it saw, the decision's output and
# exit status in R/decider.*.
decide() {
    local R=$1 mnt=$2 decision=$3 status rc
    for _ in $(seq $((TIMEOUT * 10))); do
        status=$("$XDEV_BIN" plan status --mount "$mnt" 2>/dev/null) || status=
        if [[ "$status" == *'"underReview":{'* ]]; then
            printf '%s\n' "$status" >"$R/decider.status"
            if [ "$decision" = approve ]; then
                "$XDEV_BIN" plan approve --mode acceptEdits --mount "$mnt" >"$R/decider.out" 2>&1
            else
                "$XDEV_BIN" plan refine "$FEEDBACK" --mount "$mnt" >"$R/decider.out" 2>&1
            fi
            rc=$?
            echo "$rc" >"$R/decider.rc"
            return 0
        fi
        sleep 0.1
    done
    echo "no plan came under review" >"$R/decider.out"
}

# run_variant NAME: one run (approve or refine) in $W/NAME; its checks go to
# $W/NAME/check.out. Returns check.py's status.
run_variant() {
    local name=$1 R elapsed netns_status
    R=$W/$name
    MNT=$R/mnt
    local plans=$R/plans project=$R/project
    mkdir -p "$plans" "$project/.claude" "$R/home" || die "cannot create $R"
    "$XDEV_BIN" mount "$MNT" --plan-dir "$plans" --plan-handler review >"$R/xdev.out" 2>"$R/xdev.err" </dev/null &
    xdev_pid=$!
    for _ in $(seq 100); do
        grep -q '^xdev: mounted' "$R/xdev.out" 2>/dev/null && break
        kill -0 "$xdev_pid" 2>/dev/null || die "xdev mount exited: $(cat "$R/xdev.err")"
        sleep 0.1
    done
    grep -q '^xdev: mounted' "$R/xdev.out" || die "xdev mount did not report its mount within 10 s"

    local hook tap
    hook="$(printf '%q %q %q %q hook --mount %q' "$PYTHON" "$E2E/hook_tap.py" "$R/hooks.jsonl" "$XDEV_BIN" "$MNT")"
    tap="$(printf '%q %q %q -' "$PYTHON" "$E2E/hook_tap.py" "$R/hooks.jsonl")"
    "$PYTHON" - "$project/.claude/settings.json" "$hook" "$tap" <<'PY' || die "cannot write the settings"
import json, sys
path, hook, tap = sys.argv[1:4]
def run(command):
    return [{"type": "command", "command": command, "timeout": 600}]
settings = {
    "permissions": {"disableBypassPermissionsMode": "disable"},
    "hooks": {
        "PermissionRequest": [{"matcher": "ExitPlanMode", "hooks": run(hook)}],
        "PreToolUse": [{"matcher": "Bash", "hooks": run(hook)},
                       {"matcher": "ExitPlanMode", "hooks": run(tap)}],
    },
}
with open(path, "w") as f:
    json.dump(settings, f, indent=2)
    f.write("\n")
PY

    decide "$R" "$MNT" "$name" &
    decider_pid=$!

    export E2E_WORK=$R E2E_PROJECT=$project E2E_HOME=$R/home E2E_CLAUDE=$CLAUDE E2E_PROMPT=$PROMPT \
        E2E_TIMEOUT=$TIMEOUT E2E_PYTHON=$PYTHON E2E_SERVER=$E2E/model_server.py E2E_SCRIPT=plan \
        E2E_PLAN=$PLAN E2E_FILE=$project/hello.txt E2E_CONTENT=$CONTENT E2E_STRACE=
    e2e_run_agent "$R" "$name"

    # The decider is done once it decided; a plan never proposed leaves it waiting.
    e2e_finish_decider
    e2e_save_journal "$R/journal.jsonl"
    "$XDEV_BIN" plan status --mount "$MNT" >"$R/plan-status.json" 2>&1
    e2e_unmount "$MNT"
    MNT=

    say "$name: decider: $(cat "$R/decider.out" 2>/dev/null) (exit $(cat "$R/decider.rc" 2>/dev/null))"
    say "$name: server requests (${elapsed}s in the namespace):"
    e2e_print_requests "$R/requests.jsonl"
    say "$name: hooks (event -> answer):"
    "$PYTHON" - "$R/hooks.jsonl" <<'PY' | sed 's/^/  /'
import json, sys
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError:
    lines = []
for line in lines:
    r = json.loads(line)
    e = r["event"] if isinstance(r["event"], dict) else {}
    who = "tap" if r["command"] == ["-"] else "xdev hook"
    out = json.dumps(r["stdout"]) if r["stdout"] != "" else "(nothing)"
    print(f"{e.get('hook_event_name')} {e.get('tool_name')} ({who}, {r['seconds']}s, rc {r['rc']}): {out}")
    if r["stderr"].strip():
        print(f"  stderr: {r['stderr'].strip()}")
PY
    say "$name: journal:"
    sed 's/^/  /' "$R/journal.jsonl"
    say "$name: claude's result: $("$PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({k: r.get(k) for k in ("subtype","is_error","result","num_turns","permission_denials")}))' "$R/claude.json" 2>&1)"
    say "$name: checks:"
    "$PYTHON" "$E2E/check.py" plan "$R" "$name" "$plans" "$project/hello.txt" "$CONTENT" "$FEEDBACK" >"$R/check.out"
    local status=$?
    sed 's/^/  /' "$R/check.out"
    return "$status"
}

failed=0
run_variant approve || failed=$((failed + 1))
run_variant refine || failed=$((failed + 1))
if [ "$failed" = 0 ]; then
    say "PASS: Claude Code $CLAUDE_CODE_VERSION in plan mode: an ExitPlanMode approved on the plan desk (--mode acceptEdits) proceeded and its Write ran unprompted; a refined one told the model to revise, with the feedback"
    exit 0
fi
e2e_runs_failed "$failed"
