#!/usr/bin/env bash
# The MCP reference filesystem server (@modelcontextprotocol/server-filesystem,
# pinned in lib.sh), driven over stdio JSON-RPC as an agent would, with
# the mount as its allowed directory. Its write_file first tries
# open(O_CREAT|O_EXCL) (EEXIST on a device), then writes a draft
# `<target>.<32 hex>.tmp` beside the target and rename(2)s it onto the
# target; on a rename error it unlinks the draft and returns the error.
# edit_file reads the target (a device reads as its usage line), applies
# the edit in memory and writes the result by the same draft + rename.
# One server process serves the whole scenario, as an agent's would.
#
#   - write_file resolve, a preview pending: success ("Successfully wrote"),
#     CMD runs once, the stager exits 0, the journal names the server.
#   - write_file resolve, nothing pending: isError, the text names ENOENT;
#     nothing runs; journal outcome error / ENOENT.
#   - write_file reject, a preview pending: success; CMD never runs, the
#     stager exits 3.
#   - read_text_file resolve afterwards: the whole usage line (the
#     server's earlier renames onto resolve do not shorten what it reads).
#   - edit_file resolve (oldText a phrase of the usage line), a preview
#     pending: success with a diff; the edited usage line is the reason.
#   - After each call, no draft is left in the mount.
# time limit: 90 s
. "$(dirname "$0")/lib.sh"
need_xdev
need_npm_clients
scratch
tok="mcp-$$-$RANDOM" # in every reason: the journal outlives scenarios
export tok
[ -f "$MCP_FILESYSTEM_SERVER" ] || fail "no MCP filesystem server at $MCP_FILESYSTEM_SERVER"

# --- the client: one MCP session for the whole scenario -----------------------
coproc MCP { exec "$PYTHON" "$(dirname "$0")/mcp_client.py" "$SCRATCH/server.err" -- \
    node "$MCP_FILESYSTEM_SERVER" "$D" 2>"$SCRATCH/client.err"; }
BG_PIDS+=("$MCP_PID")
mcp_in=${MCP[1]}
mcp_out=${MCP[0]}

mcp_diagnostics() {
    printf 'client stderr: %s\nserver stderr: %s' "$(cat "$SCRATCH/client.err" 2>/dev/null)" \
        "$(cat "$SCRATCH/server.err" 2>/dev/null)"
}

read -r -t 20 ready <&"$mcp_out" || fail "the MCP handshake did not complete: $(mcp_diagnostics)"
server_pid=$("$PYTHON" -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["ready"]; print(r["serverPid"])' "$ready") ||
    fail "unexpected first line from the MCP client: $ready"
BG_PIDS+=("$server_pid")

# mcp_call TOOL ARGS: ARGS is a Python expression (D is the mount, tok this
# run's token) for the
# tool's arguments; the outcome ({"isError", "text", ...}) lands in $OUT.
mcp_call() {
    local args
    args=$("$PYTHON" -c 'import json, os, sys; D = os.environ["D"]; tok = os.environ["tok"]; print(json.dumps({"name": sys.argv[1], "arguments": eval(sys.argv[2])}))' "$1" "$2") ||
        fail "bad arguments for $1: $2"
    printf '%s\n' "$args" >&"$mcp_in" || fail "cannot send $1 to the MCP client: $(mcp_diagnostics)"
    read -r -t 20 OUT <&"$mcp_out" || fail "no answer to $1 $2: $(mcp_diagnostics)"
}

# tool_result IS-ERROR PY-CHECK WHAT: $OUT has isError IS-ERROR (True or
# False) and the Python condition over `text` holds.
tool_result() {
    py '
out = json.loads(sys.argv[1])
if "rpcError" in out:
    sys.exit("%s: a JSON-RPC error instead of a tool result: %r" % (sys.argv[4], out["rpcError"]))
text = out["text"]
if out["isError"] != eval(sys.argv[2]) or not eval(sys.argv[3]):
    sys.exit("%s: isError %r, text %r (expected isError %s and %s)" % (
        sys.argv[4], out["isError"], text, sys.argv[2], sys.argv[3]))
' "$OUT" "$1" "$2" "$3"
}

# 1. write_file onto resolve with a preview pending: applied once.
stage_counted write "mcp write_file"
stager=$BG_PID
mcp_call write_file '{"path": D + "/resolve", "content": "looks right via write_file " + tok + "\n"}'
tool_result False 'text == "Successfully wrote to " + D + "/resolve"' "write_file resolve (pending)"
assert_last "applied: looks right via write_file $tok"
wait_exit "$stager" 10000 "xdev stage after write_file onto resolve"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after write_file onto resolve"
assert_eq "$(runs_of "$ID")" 1 "CMD runs for the preview applied by write_file"
assert_decision "looks right via write_file $tok" resolve ok - "$server_pid" node
assert_no_drafts "after write_file onto resolve"

# 2. write_file onto resolve with nothing pending: the tool reports ENOENT.
mcp_call write_file '{"path": D + "/resolve", "content": "nothing to apply " + tok}'
tool_result True '"ENOENT" in text' "write_file resolve (nothing pending)"
assert_last "$NOTHING_TO_RESOLVE"
assert_eq "$(runs_of all)" 1 "CMD runs in total after the failed write_file"
assert_decision "nothing to apply $tok" resolve error ENOENT "$server_pid" node
assert_no_drafts "after write_file onto resolve with nothing pending"

# 3. write_file onto reject with a preview pending: discarded.
stage_counted discard "mcp reject"
stager=$BG_PID
mcp_call write_file '{"path": D + "/reject", "content": "not this one " + tok}'
tool_result False 'text == "Successfully wrote to " + D + "/reject"' "write_file reject (pending)"
assert_last "$(expected discarded label "mcp reject" reason "not this one $tok")"
wait_exit "$stager" 10000 "xdev stage after write_file onto reject"
assert_eq "$EXIT_CODE" 3 "exit status of xdev stage after write_file onto reject"
assert_eq "$(runs_of "$ID")" 0 "CMD runs for the discarded preview"
assert_decision "not this one $tok" reject ok - "$server_pid" node
assert_no_drafts "after write_file onto reject"

# 4. The same server process still reads a device whole (Node's readFile
# reads no more than fstat's st_size: a device must not look shorter than
# its text to the process that renamed onto it).
mcp_call read_text_file '{"path": D + "/resolve"}'
tool_result False 'text == os.environ["USAGE_RESOLVE"] + "\n"' "read_text_file resolve after the renames"

# 5. edit_file on resolve: it reads the usage line, edits a phrase of it,
# and renames the result onto resolve; the edited line is the reason.
stage_counted edit "mcp edit_file"
stager=$BG_PID
edited=${USAGE_RESOLVE/a one-sentence reason as plain text/the edited usage text $tok}
[ "$edited" != "$USAGE_RESOLVE" ] || fail "the usage line no longer holds the phrase this scenario edits"
mcp_call edit_file '{"path": D + "/resolve", "edits": [{"oldText": "a one-sentence reason as plain text", "newText": "the edited usage text " + tok}]}'
tool_result False '"```diff" in text and "+Write the edited usage text" in text' "edit_file resolve (pending)"
assert_last "applied: $edited"
wait_exit "$stager" 10000 "xdev stage after edit_file onto resolve"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after edit_file onto resolve"
assert_eq "$(runs_of "$ID")" 1 "CMD runs for the preview applied by edit_file"
assert_eq "$(runs_of all)" 2 "CMD runs in total"
assert_decision "$edited" resolve ok - "$server_pid" node
assert_no_drafts "after edit_file onto resolve"
pending_is 0 || fail "something is still pending: $(cat "$D/status")"

# The session ends cleanly: closing its stdin stops the server.
exec {mcp_in}>&-
wait_exit "$MCP_PID" 10000 "the MCP client after its stdin closed"
assert_eq "$EXIT_CODE" 0 "exit status of the MCP client"
note "MCP server (pid $server_pid): write_file/edit_file by draft + rename applied 2, discarded 1, ENOENT with nothing pending"
