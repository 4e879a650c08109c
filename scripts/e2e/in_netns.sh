#!/usr/bin/env bash
# Runs inside the private network namespace of scripts/claude-code-e2e.sh
# (`unshare --net`): brings up lo, starts the scripted model server on
# 127.0.0.1, and runs Claude Code against it. Everything comes from the
# environment the outer script exports (E2E_*). Not meant to be run by hand.
set -uo pipefail

W=$E2E_WORK
server_pid=
claude_pid=
# shellcheck disable=SC2317 # run by the traps
stop() {
    [ -n "$claude_pid" ] && kill -TERM "$claude_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null
    [ -n "$claude_pid" ] && wait "$claude_pid" 2>/dev/null
    [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null
    claude_pid='' server_pid=''
}
trap 'stop; exit 143' TERM INT
trap stop EXIT

ip link set lo up || { echo "in_netns: cannot bring up lo" >&2; exit 90; }
# What the agent can reach: one line per link, and the routes.
{ ip -o link show | awk -F': ' '{print "link " $2}'; ip route show table all | sed 's/^/route /'; } >"$W/netns.txt"

"$E2E_PYTHON" "$E2E_SERVER" --port-file "$W/port" --log "$W/requests.jsonl" \
    --command "touch $E2E_MARK1" --command "touch $E2E_MARK2" 2>"$W/server.err" &
server_pid=$!
for _ in $(seq 100); do
    [ -s "$W/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { echo "in_netns: the model server died: $(cat "$W/server.err")" >&2; exit 91; }
    sleep 0.1
done
[ -s "$W/port" ] || { echo "in_netns: the model server did not listen within 10 s" >&2; exit 91; }
port=$(cat "$W/port")

cd "$E2E_PROJECT" || exit 92
# A clean environment: nothing of the caller's (no real key, no proxy) leaks in.
env -i \
    PATH=/usr/local/bin:/usr/bin:/bin HOME="$E2E_HOME" USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
    ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=dummy \
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
    DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1 \
    timeout --kill-after=5 "$E2E_TIMEOUT" "$E2E_CLAUDE" -p "$E2E_PROMPT" \
    --output-format json --permission-mode default \
    >"$W/claude.json" 2>"$W/claude.err" </dev/null &
claude_pid=$!
wait "$claude_pid"
rc=$?
claude_pid=
echo "$rc" >"$W/claude.rc"
exit 0
