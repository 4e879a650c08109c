#!/usr/bin/env bash
# Runs inside the private network namespace of scripts/claude-code-e2e.sh,
# scripts/claude-code-write-e2e.sh, scripts/claude-code-plan-e2e.sh,
# scripts/claude-code-self-approve-e2e.sh, scripts/codex-e2e.sh and
# scripts/policy-e2e.sh (`unshare --net`): brings up lo, starts the scripted
# model server on 127.0.0.1, and runs Claude Code (or Codex) against it.
# Everything comes from the environment the outer script exports (E2E_*):
#   E2E_SCRIPT   bash (default): Bash calls `touch $E2E_MARK1`, `touch $E2E_MARK2`,
#                under --permission-mode default;
#                write: Read then Write of $E2E_FILE with $E2E_CONTENT, allowed by
#                E2E_PERMISSIONS: rules (default): --permission-mode default with
#                --allowedTools "Read(/$E2E_FILE)" "Edit(/$E2E_FILE)" (`//` is
#                Claude Code's spelling of an absolute path); accept-edits:
#                --permission-mode acceptEdits --add-dir "$(dirname "$E2E_FILE")"
#                plan: the plan $E2E_PLAN into Claude Code's plan file, ExitPlanMode,
#                then (if approved) Write of $E2E_FILE with $E2E_CONTENT, under
#                --permission-mode plan --permission-prompt-tool stdio, the prompt
#                sent as --input-format stream-json on a stdin that stays open
#                and never answers until the result (see claude-code-plan-e2e.sh)
#                self-approve: a call of the MCP tool $E2E_MCP_TOOL (from the servers of
#                $E2E_MCP_CONFIG, which Claude Code starts; the tool is allowed), then
#                a Bash call `touch $E2E_MARK1`, under --permission-mode default
#                codex: Codex (`$E2E_CODEX exec --json`, CODEX_HOME=$E2E_CODEX_HOME,
#                whose config.toml names the provider `e2e`) against the server's
#                Responses API: shell calls `touch $E2E_MARK1`, `touch $E2E_MARK2`,
#                asking to leave the sandbox when E2E_ESCALATE is set; extra
#                `codex exec` arguments in E2E_CODEX_ARGS (one line each). Its
#                JSONL events go to codex.jsonl, its exit status to codex.rc.
#   E2E_COMMANDS bash, codex: the scripted shell commands instead of the two
#                touches, one a line (scripts/policy-e2e.sh)
#   E2E_STRACE   if set, Claude Code runs under strace -f, which writes there
#   E2E_PATH     the agent's PATH (default /usr/local/bin:/usr/bin:/bin), for a
#                hook command found on PATH (the plugin's `xdev`)
# Claude Code's pid goes to $E2E_WORK/claude.pid, its exit status to claude.rc.
# Not meant to be run by hand.
set -uo pipefail

W=$E2E_WORK
agent_path=${E2E_PATH:-/usr/local/bin:/usr/bin:/bin}
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

# The shell commands the model asks for (bash, codex): E2E_COMMANDS, else
# the two touches.
commands=()
if [ -n "${E2E_COMMANDS:-}" ]; then
    mapfile -t lines <<<"$E2E_COMMANDS"
    for line in "${lines[@]}"; do commands+=(--command "$line"); done
elif [ "${E2E_SCRIPT:-bash}" = bash ] || [ "${E2E_SCRIPT:-}" = codex ]; then
    commands=(--command "touch $E2E_MARK1" --command "touch $E2E_MARK2")
fi
stream_json=0
case "${E2E_SCRIPT:-bash}" in
bash)
    script_args=("${commands[@]}")
    claude_args=(--permission-mode default)
    ;;
write)
    script_args=(--script write --file "$E2E_FILE" --content "$E2E_CONTENT")
    case "${E2E_PERMISSIONS:-rules}" in
    rules) claude_args=(--permission-mode default --allowedTools "Read(/$E2E_FILE)" "Edit(/$E2E_FILE)") ;;
    accept-edits) claude_args=(--permission-mode acceptEdits --add-dir "$(dirname "$E2E_FILE")") ;;
    *)
        echo "in_netns: unknown E2E_PERMISSIONS: $E2E_PERMISSIONS" >&2
        exit 93
        ;;
    esac
    ;;
self-approve)
    # The MCP server of $E2E_MCP_CONFIG is started by Claude Code itself; its
    # tool is allowed (it asks no permission) and no hook gates it.
    script_args=(--script self-approve --mcp-tool "$E2E_MCP_TOOL" --command "touch $E2E_MARK1")
    claude_args=(--permission-mode default --mcp-config "$E2E_MCP_CONFIG" --strict-mcp-config
        --allowedTools "$E2E_MCP_TOOL")
    ;;
codex)
    script_args=(--api responses "${commands[@]}")
    [ -n "${E2E_ESCALATE:-}" ] && script_args+=(--escalate)
    ;;
plan)
    script_args=(--script plan --plan "$E2E_PLAN" --file "$E2E_FILE" --content "$E2E_CONTENT")
    claude_args=(--permission-mode plan --permission-prompt-tool stdio)
    stream_json=1
    ;;
*)
    echo "in_netns: unknown E2E_SCRIPT: $E2E_SCRIPT" >&2
    exit 93
    ;;
esac
tracer=()
if [ -n "${E2E_STRACE:-}" ]; then
    tracer=(strace -f -qq -tt -y -s 256 -o "$E2E_STRACE" -e "trace=openat,rename,renameat2,statx,newfstatat,unlink,ftruncate,write")
fi

"$E2E_PYTHON" "$E2E_SERVER" --port-file "$W/port" --log "$W/requests.jsonl" \
    "${script_args[@]}" 2>"$W/server.err" &
server_pid=$!
for _ in $(seq 100); do
    [ -s "$W/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { echo "in_netns: the model server died: $(cat "$W/server.err")" >&2; exit 91; }
    sleep 0.1
done
[ -s "$W/port" ] || { echo "in_netns: the model server did not listen within 10 s" >&2; exit 91; }
port=$(cat "$W/port")

cd "$E2E_PROJECT" || exit 92
if [ "${E2E_SCRIPT:-}" = codex ]; then
    codex_args=()
    [ -n "${E2E_CODEX_ARGS:-}" ] && mapfile -t codex_args <<<"$E2E_CODEX_ARGS"
    env -i PATH="$agent_path" HOME="$E2E_HOME" USER=root LOGNAME=root SHELL=/bin/bash \
        TERM=dumb LANG=C.UTF-8 CODEX_HOME="$E2E_CODEX_HOME" XDEV_E2E_API_KEY=dummy \
        timeout --kill-after=5 "$E2E_TIMEOUT" "$E2E_CODEX" exec --json --skip-git-repo-check \
        -c "model_providers.e2e.base_url=\"http://127.0.0.1:$port/v1\"" "${codex_args[@]}" "$E2E_PROMPT" \
        >"$W/codex.jsonl" 2>"$W/codex.err" </dev/null &
    claude_pid=$!
    wait "$claude_pid"
    echo "$?" >"$W/codex.rc"
    claude_pid=
    exit 0
fi
# Claude Code's pid (the journal names it): a shell writes its own pid, then
# execs Claude Code in its place.
# shellcheck disable=SC2016 # expanded by that sh
record_pid='echo "$$" >"$0" && exec "$@"'
# A clean environment: nothing of the caller's (no real key, no proxy) leaks in.
clean_env=(env -i
    PATH="$agent_path" HOME="$E2E_HOME" USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8
    ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=dummy
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1
    DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1
    timeout --kill-after=5 "$E2E_TIMEOUT" "${tracer[@]}"
    sh -c "$record_pid" "$W/claude.pid" "$E2E_CLAUDE")
if [ "$stream_json" = 0 ]; then
    "${clean_env[@]}" -p "$E2E_PROMPT" --output-format json "${claude_args[@]}" \
        >"$W/claude.json" 2>"$W/claude.err" </dev/null &
    claude_pid=$!
else
    # The prompt as one stream-json user message; stdin then stays open and
    # silent (a permission prompt sent to this host is never answered) until
    # Claude Code reports its result, and claude.json is that result line.
    mkfifo "$W/claude.in" || exit 92
    "${clean_env[@]}" -p --input-format stream-json --output-format stream-json --verbose "${claude_args[@]}" \
        >"$W/claude.stream" 2>"$W/claude.err" <"$W/claude.in" &
    claude_pid=$!
    {
        "$E2E_PYTHON" -c 'import json, sys; print(json.dumps({"type": "user", "message": {"role": "user", "content": sys.argv[1]}}))' "$E2E_PROMPT"
        while kill -0 "$claude_pid" 2>/dev/null && ! grep -q '"type":"result"' "$W/claude.stream"; do sleep 0.1; done
    } >"$W/claude.in"
fi
wait "$claude_pid"
rc=$?
claude_pid=
echo "$rc" >"$W/claude.rc"
if [ "$stream_json" = 1 ]; then
    "$E2E_PYTHON" -c '
import json, sys
results = []
for line in open(sys.argv[1]):
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if isinstance(message, dict) and message.get("type") == "result":
        results.append(line)
sys.stdout.write(results[-1] if results else "")' "$W/claude.stream" >"$W/claude.json"
fi
exit 0
