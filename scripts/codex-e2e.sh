#!/usr/bin/env bash
# End-to-end: the real Codex CLI, gated by `xdev hook`, against a scripted
# Responses API server on 127.0.0.1, in a network namespace of its own.
#
#   scripts/codex-e2e.sh [--keep] [--no-permission-request]
#
# What happens:
#   1. Codex (npm @openai/codex, pinned in scripts/e2e/lib.sh) is installed
#      once into ${XDEV_CLIENT_CACHE:-target/client-cache}; the xdev binary is
#      built when missing (or taken from $XDEV_BIN).
#   2. `xdev mount` serves a fresh mount. Each run has a fresh CODEX_HOME
#      whose config.toml points the provider `e2e` (wire_api "responses",
#      key from XDEV_E2E_API_KEY) at the scripted server, and whose
#      hooks.json runs `xdev hook --agent codex --mount <mnt>` (matcher Bash).
#      Codex runs hooks only once trusted: `codex exec
#      --dangerously-bypass-hook-trust` trusts them for the one invocation
#      (without it they are skipped silently).
#   3. Inside `unshare --net` (only lo), scripts/e2e/model_server.py --api
#      responses plays two shell calls (`touch MARK1`, `touch MARK2`), then a
#      final message; `codex exec --json` runs against it.
#   4. A decider here resolves the first preview (`echo ... > <mnt>/resolve`)
#      and rejects the second (`echo ... > <mnt>/reject`).
#   5. scripts/e2e/check.py codex asserts: MARK1 exists (and did not while its
#      preview was pending), MARK2 does not, the model read the rejection
#      reason in the second call's function_call_output, and <mnt>/log holds a
#      resolve and a reject record carrying Codex's session (thread) id.
#
# Four runs:
#   pre   PreToolUse hook; danger-full-access, approval "never", so the hook is
#         what holds the call (Codex ignores a PreToolUse allow: `resolve`
#         prints nothing and the call goes on; `reject` denies it).
#   perm  PermissionRequest hook (skipped with --no-permission-request): the
#         model asks to leave the sandbox (exec_command sandbox_permissions
#         "require_escalated") under workspace-write with --approve-for-me, the
#         only way `codex exec` asks for approval (it runs approval "never"
#         otherwise, and approval_policy "untrusted" is refused). The hook
#         answers before the automatic reviewer.
#   trust as pre, without --dangerously-bypass-hook-trust: config.toml holds
#         the saved trust the TUI's hook review writes, made by hand:
#           [hooks.state."<CODEX_HOME>/hooks.json:pre_tool_use:0:0"]
#           trusted_hash = "sha256:<hex>"
#         the key being the hooks file, the event, the matcher group's and
#         the handler's index; the hash the SHA-256 of the hook's identity as
#         compact JSON with sorted keys: {"event_name":"pre_tool_use",
#         "hooks":[{"async":false,"command":"...","timeout":600,
#         "type":"command"}],"matcher":"Bash"} (scripts/e2e/codex_trust.py
#         prints it). Checked as pre.
#   untrusted  the same hooks.json with neither trust nor the flag: Codex
#         skips the hook without a word, so both commands run and nothing
#         is staged (what makes the trust run mean something).
#
# Not part of CI. Needs root (unshare --net, FUSE), node/npm with the npm
# registry reachable for the first install, python3, and iproute2.
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for each codex run, default 180).
set -uo pipefail

RESOLVE_REASON="looks safe"
REJECT_REASON="no touching MARK2: policy says so"
PROMPT="Run the two scripted shell commands, one after the other."

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
runs="pre perm trust untrusted"
for arg in "$@"; do
    case "$arg" in
    --no-permission-request) runs="pre trust untrusted" ;;
    *) e2e_common_arg codex-e2e "$arg" ;;
    esac
done

e2e_begin codex-e2e
e2e_need_subcommand hook
e2e_codex
e2e_work_dir
MNT=$W/mnt
e2e_mount "$MNT" "$W/xdev"
hook_command="$(printf '%q hook --agent codex --mount %q' "$XDEV_BIN" "$MNT")"

e2e_say_versions Codex "$CODEX_VERSION"
failed=0
summary=
for run in $runs; do
    RD=$W/$run
    mkdir -p "$RD/marks" "$RD/project" "$RD/home" || die "cannot create $RD"
    MARK1=$RD/marks/MARK1
    MARK2=$RD/marks/MARK2
    bypass=--dangerously-bypass-hook-trust trust=''
    if [ "$run" = perm ]; then
        event=PermissionRequest approval=on-request sandbox=workspace-write escalate=1 extra=--approve-for-me
    else
        event=PreToolUse approval=never sandbox=danger-full-access escalate='' extra=''
    fi
    case "$run" in
    trust) bypass='' trust=saved ;;
    untrusted) bypass='' ;;
    esac
    e2e_codex_home "$RD/codex-home" "$event" "$approval" "$sandbox" "$hook_command"
    # What the TUI's hook review saves, written by hand (see the header).
    if [ "$trust" = saved ]; then
        "$PYTHON" "$E2E/codex_trust.py" "$RD/codex-home/hooks.json" >>"$RD/codex-home/config.toml" ||
            die "cannot write the saved trust"
    fi
    : >"$RD/decider.tsv"
    e2e_decide_two "$RD" "$MARK1" 2>"$RD/decider.err" &
    decider_pid=$!
    codex_args=$bypass
    [ -n "$extra" ] && codex_args="${codex_args:+$codex_args$'\n'}$extra"
    export E2E_SCRIPT=codex E2E_WORK=$RD E2E_PROJECT=$RD/project E2E_HOME=$RD/home E2E_CODEX_HOME=$RD/codex-home \
        E2E_MARK1=$MARK1 E2E_MARK2=$MARK2 E2E_CODEX=$CODEX E2E_PROMPT=$PROMPT E2E_TIMEOUT=$TIMEOUT \
        E2E_PYTHON=$PYTHON E2E_SERVER=$E2E/model_server.py E2E_ESCALATE=$escalate E2E_CODEX_ARGS=$codex_args
    say "run $run: $event hook, approval $approval, sandbox $sandbox${extra:+, $extra}, hook trust: ${bypass:-${trust:-none}}"
    e2e_run_agent "$RD"
    e2e_finish_decider
    e2e_save_journal "$W/journal.jsonl"
    sed 's/^/  /' "$RD/decider.err"
    e2e_print_requests "$RD/requests.jsonl"
    if [ "$run" = untrusted ]; then
        set -- codex-untrusted "$RD" "$W/journal.jsonl" "$MARK1" "$MARK2"
    else
        set -- codex "$RD" "$W/journal.jsonl" "$event" "$MARK1" "$MARK2" "$RESOLVE_REASON" "$REJECT_REASON"
    fi
    if "$PYTHON" "$E2E/check.py" "$@" >"$RD/check.out"; then
        sed 's/^/  /' "$RD/check.out"
        summary="$summary $run ($event): pass (${elapsed}s);"
    else
        sed 's/^/  /' "$RD/check.out"
        failed=1
        summary="$summary $run ($event): FAIL (${elapsed}s);"
        say "Codex's stderr ends: $(tail -n 5 "$RD/codex.err" 2>/dev/null)"
    fi
done
[ "$failed" = 0 ] || die "check(s) failed:$summary"
say "PASS: Codex $CODEX_VERSION through xdev hook:$summary resolved command ran, rejected did not, the model read the reason, the journal has the decisions with Codex's session id; a hand-written saved trust runs the hook without the bypass flag, no trust skips it"
