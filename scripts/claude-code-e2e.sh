#!/usr/bin/env bash
# End-to-end: the real Claude Code binary, gated by `xdev hook`, against a
# scripted model server on 127.0.0.1, in a network namespace of its own.
#
#   scripts/claude-code-e2e.sh [--keep] [--stand-in-hook]
#
# What happens:
#   1. Claude Code (npm @anthropic-ai/claude-code, pinned in scripts/e2e/lib.sh) is installed
#      once into ${XDEV_CLIENT_CACHE:-target/client-cache}; the xdev binary is
#      built when missing (or taken from $XDEV_BIN).
#   2. `xdev mount` serves a fresh mount in a temporary directory; a project
#      directory holds .claude/settings.json with a PreToolUse hook (matcher
#      Bash) running `xdev hook --mount <mnt>`, and HOME is a fresh directory.
#   3. Inside `unshare --net` (only lo, brought up there), the scripted model
#      server (scripts/e2e/model_server.py) starts on 127.0.0.1 and
#      `claude -p ... --output-format json --permission-mode default` runs
#      against it. The model asks for `touch MARK1`, then `touch MARK2`, then
#      ends with text.
#   4. A decider loop here watches <mnt>/pending: it resolves the first Bash
#      preview (`echo "looks safe" > <mnt>/resolve`) and rejects the second
#      (`echo "no touching MARK2: policy says so" > <mnt>/reject`).
#   5. scripts/e2e/check.py asserts: MARK1 exists (and did not while its
#      preview was pending), MARK2 does not, the model received the rejection
#      reason in the second call's tool_result, and <mnt>/log holds one
#      resolve and one reject record, carrying Claude Code's session_id and
#      tool_use_id; each preview's pending/<id>/detail showed its command.
#
# The permission mode is `default` with no allow rules, so the hook is the only
# way a Bash call runs: a quiet hook (deadline, no mount) leaves the call to
# Claude Code's prompt, which `-p` cannot show, so the call is refused. (With
# --dangerously-skip-permissions, which needs IS_SANDBOX=1 as root, a quiet
# hook would let the command run; this script does not use it.)
#
# Not part of CI (scripts/test.sh, mount-tests/run.sh do not run it). Needs
# root (unshare --net, FUSE), node/npm with the npm registry reachable for the
# first install, python3, and iproute2.
#
# Options:
#   --keep           keep the work directory (it is always kept on failure)
#   --stand-in-hook  use scripts/e2e/stand_in_hook.py (which stages through
#                    `xdev stage`) instead of `xdev hook`: for debugging this
#                    harness only, not a test of xdev hook
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for the claude run, default 180).
set -uo pipefail

RESOLVE_REASON="looks safe"
REJECT_REASON="no touching MARK2: policy says so"
PROMPT="Run the two scripted shell commands, one after the other."

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
stand_in=0
for arg in "$@"; do
    case "$arg" in
    --stand-in-hook) stand_in=1 ;;
    *) e2e_common_arg claude-code-e2e "$arg" ;;
    esac
done

e2e_begin claude-code-e2e
[ "$stand_in" = 1 ] ||
    e2e_need_subcommand hook "rebuild it from a tree that has xdev hook, or try --stand-in-hook to debug the harness"
e2e_claude

# --- the work directory, the mount, the settings ----------------------------------
e2e_claude_dirs
e2e_mount "$MNT" "$W/xdev"

if [ "$stand_in" = 1 ]; then
    hook_command="$(printf '%q %q %q %q' "$PYTHON" "$E2E/stand_in_hook.py" "$XDEV_BIN" "$MNT")"
    say "using the STAND-IN hook (harness debugging; not a test of xdev hook)"
else
    hook_command="$(printf '%q hook --mount %q' "$XDEV_BIN" "$MNT")"
fi
e2e_hook_settings "$PROJECT/.claude/settings.json" "$hook_command"

# --- the decider: resolve the first Bash preview, reject the second ----------------
: >"$W/decider.tsv"
e2e_decide_two "$W" "$MARK1" 2>"$W/decider.err" &
decider_pid=$!

# --- the agent, in a network namespace of its own -----------------------------------
e2e_say_versions "Claude Code" "$CLAUDE_CODE_VERSION"
export E2E_WORK=$W E2E_PROJECT=$PROJECT E2E_HOME=$HOME_DIR E2E_MARK1=$MARK1 E2E_MARK2=$MARK2 \
    E2E_CLAUDE=$CLAUDE E2E_PROMPT=$PROMPT E2E_TIMEOUT=$TIMEOUT E2E_PYTHON=$PYTHON \
    E2E_SERVER=$E2E/model_server.py
e2e_run_agent "$W"

# The decider is done once both previews were decided.
e2e_finish_decider

e2e_save_journal "$W/journal.jsonl"

e2e_show_run
hook_kind=real
[ "$stand_in" = 1 ] && hook_kind=stand-in
if "$PYTHON" "$E2E/check.py" "$W" "$MARK1" "$MARK2" "$RESOLVE_REASON" "$REJECT_REASON" "$hook_kind" >"$W/check.out"; then
    sed 's/^/  /' "$W/check.out"
    hook_kind="xdev hook"
    [ "$stand_in" = 1 ] && hook_kind="the STAND-IN hook"
    say "PASS: Claude Code $CLAUDE_CODE_VERSION through $hook_kind: resolved Bash ran, rejected Bash did not, the model read the rejection reason, the journal has 1 resolve + 1 reject (${elapsed}s in the namespace)"
    exit 0
else
    sed 's/^/  /' "$W/check.out"
    e2e_checks_failed
fi
