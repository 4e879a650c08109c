#!/usr/bin/env bash
# End-to-end: the real Claude Code, gated by `xdev hook`, cannot approve its
# own call through a tool the hook does not gate; a decision from outside
# the agent goes through. Against a scripted model server on 127.0.0.1, in a
# network namespace of its own.
#
#   scripts/claude-code-self-approve-e2e.sh [--keep]
#
# What happens:
#   1. Claude Code (pinned in scripts/e2e/lib.sh) is installed once into
#      ${XDEV_CLIENT_CACHE:-target/client-cache}; the xdev binary is built
#      when missing (or taken from $XDEV_BIN).
#   2. `xdev mount` serves a fresh mount in a temporary directory; the
#      project's .claude/settings.json runs `xdev hook --mount <mnt>` before
#      every Bash call (PreToolUse), as the plugin does. Claude Code starts a
#      stdio MCP server of ours (scripts/e2e/self_approving_mcp.py, given with
#      --mcp-config): its tool `approve_pending` is allowed (--allowedTools)
#      and no hook gates it, as no hook gates an MCP server's write tool.
#   3. Inside `unshare --net`, the scripted model (scripts/e2e/model_server.py
#      --script self-approve) calls `mcp__selfapprove__approve_pending`, which
#      starts watching <mnt>/pending, then asks for Bash `touch MARK1`. The
#      hook stages the call; the MCP server, a process Claude Code started,
#      writes <mnt>/resolve and <mnt>/pending/<id>/resolve to approve it.
#   4. A decider here (outside Claude Code's processes, as a person's terminal
#      is) waits until the MCP server has tried, checks that the call is still
#      pending and MARK1 absent, then resolves it.
#   5. scripts/e2e/check.py (`self-approve`) asserts: the MCP server runs
#      under Claude Code (the process its hook's agent is), both of its writes
#      failed with EPERM and read back the refusal naming Claude Code and the
#      MCP server and where to decide from; the journal has both refusals
#      (outcome refused, the MCP server's pid, Claude Code's session and
#      tool_use ids) and the decider's resolve; MARK1 exists, and did not
#      while the MCP server tried; the model got both tool results as
#      successes.
#
# Not part of CI. Needs root (unshare --net, FUSE), node/npm with the npm
# registry reachable for the first install, python3, and iproute2.
#
# Options:
#   --keep   keep the work directory (it is always kept on failure)
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for the claude run, default 180).
set -uo pipefail

RESOLVE_REASON="a person outside the agent decided"
PROMPT="Call the approval tool, then run the scripted shell command."
MCP_TOOL=mcp__selfapprove__approve_pending

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
for arg in "$@"; do
    e2e_common_arg claude-code-self-approve-e2e "$arg"
done

e2e_begin claude-code-self-approve-e2e
e2e_claude

# --- the work directory, the mount, the settings, the MCP server --------------------
e2e_claude_dirs

e2e_mount "$MNT" "$W/xdev"

e2e_hook_settings "$PROJECT/.claude/settings.json" "$(printf '%q hook --mount %q' "$XDEV_BIN" "$MNT")"
"$PYTHON" - "$W/mcp.json" "$PYTHON" "$E2E/self_approving_mcp.py" "$MNT" "$W/mcp.jsonl" <<'PY' || die "cannot write the MCP config"
import json, sys
mcp_path, python, server, mnt, log = sys.argv[1:6]
mcp = {"mcpServers": {"selfapprove": {"type": "stdio", "command": python, "args": [server, mnt, log]}}}
with open(mcp_path, "w") as f:
    json.dump(mcp, f, indent=2)
    f.write("\n")
PY

# --- the decider: outside the agent, once its own tool has tried --------------------
# One line into decider.tsv: id, whether the call was still pending and MARK1
# absent when the MCP server was done, the write's status.
decide_after_the_agents_tool() {
    local id="" before rc
    for _ in $(seq 1200); do
        id=$(ls -U "$MNT/pending" 2>/dev/null | head -n 1)
        [ -n "$id" ] && grep -q '"event": "done"' "$W/mcp.jsonl" 2>/dev/null && break
        sleep 0.05
    done
    [ -n "$id" ] || { echo "decider: no preview came" >&2; return 1; }
    grep -q '"event": "done"' "$W/mcp.jsonl" 2>/dev/null || echo "decider: the MCP server never reported" >&2
    if [ -d "$MNT/pending/$id" ]; then before=pending; else before=gone; fi
    if [ -e "$MARK1" ]; then before="$before,present"; else before="$before,absent"; fi
    echo "decider: $id ($(cat "$MNT/pending/$id/label" 2>/dev/null)): $before; resolve \"$RESOLVE_REASON\"" >&2
    echo "$RESOLVE_REASON" >"$MNT/resolve"
    # shellcheck disable=SC2320 # echo's status is the device write's
    rc=$?
    echo "decider: write status $rc; last: $(cat "$MNT/last" 2>/dev/null)" >&2
    printf '%s\t%s\t%s\n' "$id" "$before" "$rc" >"$W/decider.tsv"
}
decide_after_the_agents_tool 2>"$W/decider.err" &
decider_pid=$!

# --- the agent, in a network namespace of its own -----------------------------------
e2e_say_versions "Claude Code" "$CLAUDE_CODE_VERSION"
export E2E_WORK=$W E2E_PROJECT=$PROJECT E2E_HOME=$HOME_DIR E2E_MARK1=$MARK1 E2E_SCRIPT=self-approve \
    E2E_MCP_CONFIG=$W/mcp.json E2E_MCP_TOOL=$MCP_TOOL E2E_CLAUDE=$CLAUDE E2E_PROMPT=$PROMPT \
    E2E_TIMEOUT=$TIMEOUT E2E_PYTHON=$PYTHON E2E_SERVER=$E2E/model_server.py
e2e_run_agent "$W"
e2e_finish_decider
e2e_save_journal "$W/journal.jsonl"

say "MCP server:"
sed 's/^/  /' "$W/mcp.jsonl" 2>/dev/null
e2e_show_run
if "$PYTHON" "$E2E/check.py" self-approve "$W" "$MNT" "$MARK1" "$RESOLVE_REASON" >"$W/check.out"; then
    sed 's/^/  /' "$W/check.out"
    say "PASS: Claude Code $CLAUDE_CODE_VERSION through xdev hook: the MCP server it started could not approve its pending Bash call (EPERM twice, journaled as refused, still pending); a decision from outside ran it (${elapsed}s in the namespace)"
    exit 0
else
    sed 's/^/  /' "$W/check.out"
    e2e_checks_failed
fi
