#!/usr/bin/env bash
# End-to-end: the xdev Claude Code plugin (integrations/claude-code), added
# from a local marketplace path and installed with the real Claude Code CLI,
# gates Bash calls through `xdev hook`, against a scripted model server on
# 127.0.0.1, in a network namespace of its own.
#
#   scripts/claude-code-plugin-e2e.sh [--keep]
#
# What happens:
#   1. Claude Code (pinned in scripts/e2e/lib.sh) is installed once into
#      ${XDEV_CLIENT_CACHE:-target/client-cache}; xdev is built when missing.
#   2. `claude plugin validate` checks the plugin and its marketplace manifest.
#   3. With a fresh HOME and no network (`unshare --net`, a clean
#      environment), `claude plugin marketplace add integrations/claude-code`
#      then `claude plugin install xdev@xdev`: the plugin's hooks run
#      `xdev-hook`, which finds the mount through XDEV_DIR, else /xdev. The
#      project's .claude/settings.json sets XDEV_DIR=<mnt> (its `env`) and
#      holds no hook: the only one is the plugin's. The agent's PATH starts
#      with a directory holding `xdev` and `xdev-hook` (links to $XDEV_BIN
#      and the xdev-hook beside it), as an installed xdev would be on PATH.
#   4. As scripts/claude-code-e2e.sh: inside `unshare --net` the model asks
#      for `touch MARK1` then `touch MARK2` under --permission-mode default;
#      a decider resolves the first preview and rejects the second.
#   5. scripts/e2e/check.py asserts the plugin was installed from the local
#      marketplace and enabled, with the shipped hooks, and no hook came
#      from settings; then the checks of claude-code-e2e.sh:
#      MARK1 ran only once resolved, MARK2 never ran, the model read the
#      rejection reason, the journal has one resolve and one reject carrying
#      Claude Code's session_id and tool_use_id.
#
# Not part of CI. Needs root (unshare --net, FUSE), node/npm with the npm
# registry reachable for the first install, python3, and iproute2.
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for the claude run, default 180).
set -uo pipefail

RESOLVE_REASON="looks safe"
REJECT_REASON="no touching MARK2: policy says so"
PROMPT="Run the two scripted shell commands, one after the other."

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

PLUGIN=$ROOT/integrations/claude-code

keep=0
for arg in "$@"; do
    e2e_common_arg claude-code-plugin-e2e "$arg"
done

e2e_begin claude-code-plugin-e2e
e2e_need_subcommand hook
e2e_claude
e2e_claude_dirs
mkdir -p "$W/bin" || die "cannot create $W/bin"
ln -s "$XDEV_BIN" "$W/bin/xdev" || die "cannot link $W/bin/xdev"
ln -s "$(dirname "$XDEV_BIN")/xdev-hook" "$W/bin/xdev-hook" || die "cannot link $W/bin/xdev-hook"

# Permissions and the mount (XDEV_DIR, which Claude Code passes to hooks);
# no hook: the one hook is the plugin's.
"$PYTHON" - "$PROJECT/.claude/settings.json" "$MNT" <<'PY' || die "cannot write the settings"
import json, sys
path, mount = sys.argv[1:3]
settings = {
    "permissions": {"defaultMode": "default", "disableBypassPermissionsMode": "disable"},
    "env": {"XDEV_DIR": mount},
}
with open(path, "w") as f:
    json.dump(settings, f, indent=2)
    f.write("\n")
PY

# --- the plugin: validate, add the local marketplace, install -------------------------
e2e_say_versions "Claude Code" "$CLAUDE_CODE_VERSION"
e2e_mount "$MNT" "$W/xdev"
for manifest in "$PLUGIN" "$PLUGIN/.claude-plugin/marketplace.json"; do
    e2e_claude_offline "$HOME_DIR" "$PROJECT" plugin validate "$manifest" >"$W/validate.out" 2>&1 ||
        die "claude plugin validate $manifest failed: $(cat "$W/validate.out")"
done
say "claude plugin marketplace add $PLUGIN"
e2e_claude_offline "$HOME_DIR" "$PROJECT" plugin marketplace add "$PLUGIN" >"$W/marketplace-add.out" 2>&1 ||
    die "claude plugin marketplace add failed: $(cat "$W/marketplace-add.out")"
sed 's/^/  /' "$W/marketplace-add.out"
say "claude plugin install xdev@xdev"
e2e_claude_offline "$HOME_DIR" "$PROJECT" plugin install xdev@xdev >"$W/install.out" 2>&1 ||
    die "claude plugin install failed: $(cat "$W/install.out")"
sed 's/^/  /' "$W/install.out"
e2e_claude_offline "$HOME_DIR" "$PROJECT" plugin list --json >"$W/plugins.json" 2>"$W/plugin-list.err" ||
    die "claude plugin list failed: $(cat "$W/plugin-list.err")"

# --- the decider and the agent ---------------------------------------------------
: >"$W/decider.tsv"
e2e_decide_two "$W" "$MARK1" 2>"$W/decider.err" &
decider_pid=$!

export E2E_WORK=$W E2E_PROJECT=$PROJECT E2E_HOME=$HOME_DIR E2E_MARK1=$MARK1 E2E_MARK2=$MARK2 \
    E2E_CLAUDE=$CLAUDE E2E_PROMPT=$PROMPT E2E_TIMEOUT=$TIMEOUT E2E_PYTHON=$PYTHON \
    E2E_SERVER=$E2E/model_server.py E2E_PATH=$W/bin:/usr/local/bin:/usr/bin:/bin
e2e_run_agent "$W"
e2e_finish_decider

e2e_save_journal "$W/journal.jsonl"

e2e_show_run
status=0
"$PYTHON" "$E2E/check.py" plugin "$W" "$PLUGIN" "$HOME_DIR" "$PROJECT" "$MNT" >"$W/check.out" || status=1
"$PYTHON" "$E2E/check.py" "$W" "$MARK1" "$MARK2" "$RESOLVE_REASON" "$REJECT_REASON" real >>"$W/check.out" || status=1
sed 's/^/  /' "$W/check.out"
if [ "$status" = 0 ]; then
    say "PASS: Claude Code $CLAUDE_CODE_VERSION with the xdev plugin from a local marketplace: resolved Bash ran, rejected Bash did not, the model read the rejection reason, the journal has 1 resolve + 1 reject (${elapsed}s in the namespace)"
    exit 0
fi
e2e_checks_failed
