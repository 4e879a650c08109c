#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for scripts/claude-code-e2e.sh,
scripts/claude-code-write-e2e.sh, scripts/claude-code-plan-e2e.sh and
scripts/claude-code-self-approve-e2e.sh (and scripts/policy-e2e.sh).

It listens on 127.0.0.1 and plays a fixed script, chosen with --script, to any
request that offers the model the agent's tools (the agent's main loop):

  --script bash (the default; give --command once per call):
    no tool_result in the conversation yet  -> tool_use Bash {"command": COMMAND 1}
    one tool_result                         -> tool_use Bash {"command": COMMAND 2}
    as many tool_results as commands        -> text, stop_reason end_turn

  --script write (give --file and --content):
    no tool_result yet                      -> tool_use Read {"file_path": FILE}
    one tool_result                         -> tool_use Write {"file_path": FILE, "content": CONTENT}
    two or more                             -> text, stop_reason end_turn

  --script self-approve (give --mcp-tool and one --command):
    no tool_result yet                      -> tool_use MCP_TOOL {}
    one tool_result                         -> tool_use Bash {"command": COMMAND}
    two or more                             -> text, stop_reason end_turn
  (the agent's main loop is told by Bash: an MCP tool may be offered
  through a tool search rather than listed)

  --script plan (give --plan, --file and --content; the agent's main loop is
  told by Write, since ExitPlanMode is offered only in plan mode). As Claude
  Code's plan mode asks: the plan goes into the plan file its reminder names
  ("create your plan at PATH using the Write tool"), and ExitPlanMode takes
  no argument (Claude Code fills in plan and planFilePath from that file):
    no tool_result yet                      -> tool_use Write {"file_path": PATH, "content": PLAN}
    one tool_result                         -> tool_use ExitPlanMode {}
    the ExitPlanMode tool_result, no error  -> tool_use Write {"file_path": FILE, "content": CONTENT}
    the ExitPlanMode tool_result, an error  -> text (the plan was refused), end_turn
    three or more                           -> text, stop_reason end_turn
  Without a plan file named in the conversation, ExitPlanMode is called at
  once with {"plan": PLAN}.

The n-th tool call's id is toolu_e2e_step<n>. Requests without the script's
tools (side queries such as a title or a topic check) get a short harmless
text. `POST /v1/messages/count_tokens` answers a rough count. Anything else
is a 404 in the API's error shape, which Claude Code tolerates for its
optional calls.

Both streaming (`"stream": true`, server-sent events: message_start,
content_block_start, content_block_delta, content_block_stop,
message_delta, message_stop) and plain JSON replies are served, as the
request asks.

With --api responses (for scripts/codex-e2e.sh and scripts/policy-e2e.sh's
Codex run) it speaks the OpenAI
Responses API instead, as Codex does with `wire_api = "responses"`:
`POST /v1/responses` plays --script bash against the request's `input`
items, counting `function_call_output` items as tool results: each step is
a `function_call` of the shell tool the request offers (`exec_command`
{"cmd": ...}, `shell_command` {"command": ...} or `shell` {"command":
["bash", "-lc", ...]}; with --escalate an exec_command call also asks
for `"sandbox_permissions": "require_escalated"`), with call_id call_e2e_step<n>, then a final
assistant message. Replies stream as server-sent events (response.created,
response.output_item.added, response.output_item.done, response.completed).
Requests offering no shell tool get a short text; anything else is a 404.

Every request is appended to --log as one JSON line: method, path, the
headers that matter, the parsed body (or the raw text), and what was
answered. The port is written to --port-file once the socket listens.
"""

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINAL_TEXT = {
    "bash": "The scripted commands were handled.",
    "self-approve": "The command ran once someone decided it.",
    "write": "The reason was written to the device.",
    "plan": "The approved plan was carried out.",
}
REFUSED_PLAN_TEXT = "The reviewer refused the plan; stopping here."
SIDE_TEXT = "ok"
MODEL = "claude-e2e-scripted"


def count_tool_results(messages):
    """How many tool_result blocks the user side of the conversation holds."""
    n = 0
    for message in messages or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            n += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return n


def result_is_error(messages, tool_use_id):
    """Whether the conversation's tool_result for tool_use_id is an error."""
    for message in messages or []:
        content = message.get("content") if message.get("role") == "user" else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" \
                    and block.get("tool_use_id") == tool_use_id:
                return block.get("is_error") is True
    return False


PLAN_FILE = re.compile(r"(?:create your plan at|A plan file already exists at) (/\S+?\.md)")


def plan_file(messages):
    """The plan file Claude Code's plan-mode reminder names, if any."""
    match = PLAN_FILE.search(json.dumps(messages))
    return match.group(1) if match else None


def offers(body, names):
    """Whether the request offers the model every tool in names."""
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return set(names) <= offered


class Script:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seq = 0

    def next_id(self, prefix):
        with self.lock:
            self.seq += 1
            return f"{prefix}_e2e_{self.seq:04d}"

    def steps(self, messages=None):
        """The script's tool calls, in order: (tool name, input)."""
        if self.args.script == "plan":
            path = plan_file(messages)
            plan = [("Write", {"file_path": path, "content": self.args.plan}), ("ExitPlanMode", {})] \
                if path else [("ExitPlanMode", {"plan": self.args.plan})]
            return plan + [("Write", {"file_path": self.args.file, "content": self.args.content})]
        if self.args.script == "self-approve":
            return [(self.args.mcp_tool, {}),
                    ("Bash", {"command": self.args.command[0], "description": "Scripted step 2"})]
        if self.args.script == "write":
            return [
                ("Read", {"file_path": self.args.file}),
                ("Write", {"file_path": self.args.file, "content": self.args.content}),
            ]
        return [("Bash", {"command": command, "description": f"Scripted step {n + 1}"})
                for n, command in enumerate(self.args.command)]

    def reply_for(self, body):
        """(content blocks, stop_reason, what) for a /v1/messages body."""
        messages = body.get("messages")
        steps = self.steps(messages)
        main_loop = {"Write"} if self.args.script == "plan" else {name for name, _ in steps}
        if self.args.script == "self-approve":
            main_loop = {"Bash"}
        if not offers(body, main_loop):
            return [{"type": "text", "text": SIDE_TEXT}], "end_turn", "side-text"
        step = count_tool_results(messages)
        if self.args.script == "plan" and 0 < step < len(steps) and steps[step - 1][0] == "ExitPlanMode" \
                and result_is_error(messages, f"toolu_e2e_step{step}"):
            return [{"type": "text", "text": REFUSED_PLAN_TEXT}], "end_turn", "final-text:plan-refused"
        if step < len(steps):
            name, tool_input = steps[step]
            block = {
                "type": "tool_use",
                "id": f"toolu_e2e_step{step + 1}",
                "name": name,
                "input": tool_input,
            }
            return [block], "tool_use", f"tool_use:{step + 1}:{name}"
        return [{"type": "text", "text": FINAL_TEXT[self.args.script]}], "end_turn", "final-text"


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_events(message_id, model, blocks, stop_reason):
    usage = {"input_tokens": 25, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    yield sse("message_start", {
        "type": "message_start",
        "message": {"id": message_id, "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage},
    })
    yield sse("ping", {"type": "ping"})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield sse("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            start = dict(block, input={})
            yield sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
            text = json.dumps(block["input"])
            half = len(text) // 2  # two partial_json pieces, as a real stream sends
            for piece in (text[:half], text[half:]):
                yield sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "input_json_delta", "partial_json": piece}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                "usage": {"output_tokens": 20}})
    yield sse("message_stop", {"type": "message_stop"})


SHELL_TOOLS = ("exec_command", "shell_command", "shell")


def responses_tools(body):
    """The names of the tools a Responses API request offers."""
    return [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]


def count_function_outputs(body):
    """How many function_call_output items a Responses API request's input holds."""
    return sum(1 for item in body.get("input") or []
               if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"))


def responses_reply(args, body):
    """(output item, what) for a POST /v1/responses body."""
    tools = responses_tools(body)
    shell = next((name for name in SHELL_TOOLS if name in tools), None)
    step = count_function_outputs(body)
    if shell is not None and step < len(args.command):
        command = args.command[step]
        arguments = {"exec_command": {"cmd": command},
                     "shell_command": {"command": command},
                     "shell": {"command": ["bash", "-lc", command]}}[shell]
        if args.escalate and shell == "exec_command":
            arguments.update(sandbox_permissions="require_escalated",
                             justification=f"Scripted step {step + 1} must run outside the sandbox.")
        item = {"type": "function_call", "id": f"fc_e2e_step{step + 1}", "call_id": f"call_e2e_step{step + 1}",
                "name": shell, "arguments": json.dumps(arguments), "status": "completed"}
        return item, f"function_call:{step + 1}:{shell}"
    text, what = (FINAL_TEXT["bash"], "final-text") if shell is not None else (SIDE_TEXT, "side-text")
    item = {"type": "message", "id": f"msg_e2e_{step}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return item, what


def responses_events(response_id, model, item):
    usage = {"input_tokens": 25, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 45}
    response = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    yield sse("response.created", {"type": "response.created", "sequence_number": 0, "response": response})
    yield sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                             "output_index": 0, "item": dict(item, status="in_progress")})
    yield sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                            "output_index": 0, "item": item})
    yield sse("response.completed", {"type": "response.completed", "sequence_number": 3,
                                     "response": dict(response, status="completed", output=[item], usage=usage)})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "xdev-e2e-model/1"

    def log_message(self, fmt, *args):  # keep stderr quiet; the JSON log has it all
        pass

    def record(self, body, answer, status):
        entry = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()
                        if k.lower() in ("user-agent", "anthropic-version", "anthropic-beta", "x-app",
                                         "content-type", "accept", "x-stainless-helper-method")},
            "body": body,
            "status": status,
            "answer": answer,
        }
        with self.server.log_lock, open(self.server.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_e2e")
        self.end_headers()
        self.wfile.write(data)

    def not_found(self, body):
        self.record(body, "404", 404)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                         "message": f"scripted server: no {self.command} {self.path}"}})

    def do_GET(self):
        self.not_found(None)

    def do_HEAD(self):
        self.record(None, "200 (HEAD)", 200)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def post_responses(self, path, body):
        if path != "/v1/responses" or not isinstance(body, dict):
            self.not_found(body)
            return
        item, what = responses_reply(self.server.script.args, body)
        response_id = self.server.script.next_id("resp")
        self.record(body, f"stream {what}", 200)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in responses_events(response_id, body.get("model") or MODEL, item):
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        if self.server.api == "responses":
            self.post_responses(path, body)
            return
        if path == "/v1/messages/count_tokens":
            self.record(body, "count_tokens", 200)
            self.send_json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages" or not isinstance(body, dict):
            self.not_found(body)
            return
        blocks, stop_reason, what = self.server.script.reply_for(body)
        message_id = self.server.script.next_id("msg")
        model = body.get("model") or MODEL
        if body.get("stream"):
            self.record(body, f"stream {what}", 200)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", "req_e2e")
            self.end_headers()
            for chunk in stream_events(message_id, model, blocks, stop_reason):
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True
        else:
            self.record(body, f"json {what}", 200)
            self.send_json(200, {"id": message_id, "type": "message", "role": "assistant", "model": model,
                                 "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
                                 "usage": {"input_tokens": 25, "output_tokens": 20}})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port (see --port-file)")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True, help="JSON Lines file of every request")
    parser.add_argument("--api", choices=("messages", "responses"), default="messages",
                        help="messages: the Anthropic Messages API (Claude Code); "
                             "responses: the OpenAI Responses API (Codex; --script bash only)")
    parser.add_argument("--escalate", action="store_true",
                        help="responses: each exec_command call asks to leave the sandbox "
                             "(sandbox_permissions require_escalated), so Codex asks for approval")
    parser.add_argument("--script", choices=sorted(FINAL_TEXT), default="bash",
                        help="bash: one Bash call per --command; write: Read then Write of --file; "
                             "plan: ExitPlanMode with --plan, then Write of --file; "
                             "self-approve: a call of --mcp-tool, then a Bash call of the one --command")
    parser.add_argument("--command", action="append", default=[],
                        help="bash: the command of each scripted tool call, in order (give it once per call)")
    parser.add_argument("--file", help="write, plan: the file_path of the Write (and of write's Read)")
    parser.add_argument("--content", help="write, plan: the content of the Write")
    parser.add_argument("--plan", help="plan: the plan text of the ExitPlanMode call")
    parser.add_argument("--mcp-tool", help="self-approve: the MCP tool called first (mcp__<server>__<tool>)")
    args = parser.parse_args()
    if args.script == "bash" and not args.command:
        parser.error("--script bash needs --command (once per call)")
    if args.api == "responses" and args.script != "bash":
        parser.error("--api responses plays --script bash only")
    if args.script == "self-approve" and (args.mcp_tool is None or len(args.command) != 1):
        parser.error("--script self-approve needs --mcp-tool and one --command")
    if args.script == "write" and (args.file is None or args.content is None):
        parser.error("--script write needs --file and --content")
    if args.script == "plan" and (args.plan is None or args.file is None or args.content is None):
        parser.error("--script plan needs --plan, --file and --content")

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.script = Script(args)
    server.api = args.api
    server.log_path = args.log
    server.log_lock = threading.Lock()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
