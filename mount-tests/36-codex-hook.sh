#!/usr/bin/env bash
# The real Codex CLI (npm @openai/codex, pinned in scripts/e2e/lib.sh and
# installed by scripts/setup.sh) runs `xdev hook` as its PreToolUse hook,
# against the scripted Responses API server (scripts/e2e/model_server.py) on
# 127.0.0.1, inside a network namespace of its own (`unshare --net`: only
# lo). The model asks for `touch MARK1`, then `touch MARK2`; the first
# preview is resolved and runs, the second is rejected, never runs, and the
# model reads the reason. The hook is trusted the way Codex's TUI saves it
# (a `[hooks.state."<hooks.json>:pre_tool_use:0:0"]` entry in config.toml,
# written by scripts/e2e/codex_trust.py), not by the bypass flag; and the
# entry shipped in integrations/codex/trust.toml is the one for the hooks
# shipped beside it. Checked by scripts/e2e/check.py codex, as
# scripts/codex-e2e.sh checks its runs. As root the namespace is
# `unshare --net`; as another user `unshare --net --map-root-user` (a user
# namespace of its own). Fails, never skips, when Codex cannot be installed.
# time limit: 150 s
. "$(dirname "$0")/lib.sh"
# shellcheck source=scripts/e2e/lib.sh
. "$LIB_ROOT/scripts/e2e/lib.sh"
E2E_NAME=$SCENARIO
need_xdev
scratch
for tool in unshare ip npm node timeout flock; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (scripts/setup.sh installs what this needs)"
done
e2e_codex
namespace=(unshare --net)
[ "$(id -u)" = 0 ] || namespace+=(--map-root-user)

# integrations/codex: the saved trust shipped, filled in for a Codex home as
# its header says, is the one for the hooks shipped, copied there.
shipped_home=$SCRATCH/a-codex-home
shipped=$(grep -v '^#' "$LIB_ROOT/integrations/codex/trust.toml" | sed "s|@CODEX_HOME@|$shipped_home|" | sed '/^$/d')
computed=$("$PYTHON" "$E2E/codex_trust.py" "$LIB_ROOT/integrations/codex/hooks.json" "$shipped_home/hooks.json" | sed '/^$/d')
assert_eq "$shipped" "$computed" "integrations/codex/trust.toml against its hooks.json"

RD=$SCRATCH/run
MNT=$D
RESOLVE_REASON="codex may touch MARK1 $$"
REJECT_REASON="no touching MARK2 $$: policy says so"
mkdir -p "$RD/marks" "$RD/project" "$RD/home" "$RD/codex-home" || fail "cannot create $RD"
MARK1=$RD/marks/MARK1
MARK2=$RD/marks/MARK2
cat >"$RD/codex-home/config.toml" <<TOML || fail "cannot write config.toml"
model = "gpt-e2e-scripted"
model_provider = "e2e"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.e2e]
name = "xdev scripted server"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "XDEV_E2E_API_KEY"
request_max_retries = 0
stream_max_retries = 0
TOML
"$PYTHON" -c '
import json, sys
handler = {"type": "command", "command": sys.argv[2], "timeout": 600}
with open(sys.argv[1], "w") as f:
    json.dump({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}, f, indent=2)
' "$RD/codex-home/hooks.json" "$(printf '%q hook --agent codex --mount %q' "$XDEV_BIN" "$D")" ||
    fail "cannot write hooks.json"
"$PYTHON" "$E2E/codex_trust.py" "$RD/codex-home/hooks.json" >>"$RD/codex-home/config.toml" ||
    fail "cannot write the saved trust"

# The agent's namespace and the decider are stopped at exit, pass or fail
# (before lib.sh's cleanup, which kills by KILL: in_netns.sh stops its
# server and Codex on TERM).
stop_agent() {
    local pid
    for pid in "${netns_pid:-}" "${decider_pid:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    netns_pid='' decider_pid=''
}
trap 'status=$?; stop_agent; (exit "$status"); lib_cleanup' EXIT

: >"$RD/decider.tsv"
e2e_decide_two "$RD" "$MARK1" 2>"$RD/decider.err" &
decider_pid=$!
export E2E_SCRIPT=codex E2E_WORK=$RD E2E_PROJECT=$RD/project E2E_HOME=$RD/home E2E_CODEX_HOME=$RD/codex-home \
    E2E_MARK1=$MARK1 E2E_MARK2=$MARK2 E2E_CODEX=$CODEX E2E_TIMEOUT=120 E2E_PYTHON=$PYTHON \
    E2E_SERVER=$E2E/model_server.py E2E_ESCALATE='' E2E_CODEX_ARGS='' \
    E2E_PROMPT="Run the two scripted shell commands, one after the other."
"${namespace[@]}" -- bash "$E2E/in_netns.sh" &
netns_pid=$!
wait "$netns_pid"
netns_status=$?
netns_pid=
[ "$netns_status" = 0 ] || fail "the namespace run failed (status $netns_status): $(cat "$RD"/*.err 2>/dev/null | tail -n 5)"
e2e_finish_decider

cp "$D/log" "$RD/journal.jsonl" || fail "cannot read $D/log"
if ! "$PYTHON" "$E2E/check.py" codex "$RD" "$RD/journal.jsonl" PreToolUse "$MARK1" "$MARK2" \
    "$RESOLVE_REASON" "$REJECT_REASON" >"$RD/check.out"; then
    fail "Codex $CODEX_VERSION through xdev hook:
$(grep '^FAIL' "$RD/check.out")
the decider: $(cat "$RD/decider.err")
Codex's stderr ends: $(tail -n 5 "$RD/codex.err" 2>/dev/null)"
fi
note "Codex $CODEX_VERSION, PreToolUse trusted by a saved entry: resolve ran the call, reject blocked it and the model read the reason"
