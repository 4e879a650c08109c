#!/usr/bin/env python3
"""A minimal MCP client over stdio, for the mount-tests scenarios.

    mcp_client.py SERVER-STDERR-FILE -- CMD [ARGS...]

Starts CMD (an MCP server speaking newline-delimited JSON-RPC on stdio),
performs the handshake (`initialize`, then `notifications/initialized`) and
prints one JSON line:

    {"ready": true, "serverPid": N, "serverInfo": {...}}

Then, for every line read from its own stdin -- a JSON object
{"name": TOOL, "arguments": {...}} -- it sends `tools/call` and prints one
JSON line with the outcome:

    {"isError": bool, "text": "the text content, joined", "result": {...}}

or, when the server answers with a JSON-RPC error instead of a result,
{"rpcError": {...}}. The server is one long-lived process for the whole
session, as an agent's would be. When stdin ends (or on SIGTERM) the server
is stopped. A server that dies or stays silent past the timeout is
reported on stderr and ends the client with status 1.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

TIMEOUT = float(os.environ.get("MCP_CLIENT_TIMEOUT", "15"))


class Server:
    def __init__(self, argv, stderr_path):
        self.stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr
        )
        self.next_id = 0
        self.buffer = b""

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.wait_for(self.next_id, method)

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def read_line(self, deadline):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def wait_for(self, wanted, what):
        deadline = time.monotonic() + TIMEOUT
        while True:
            line = self.read_line(deadline)
            if line is None:
                die("no answer to %s within %.0f s" % (what, TIMEOUT))
            if line == b"":
                status = self.proc.wait()
                die("the server exited (status %s) before answering %s" % (status, what))
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("id") == wanted and "method" not in message:
                return message
            if "method" in message and "id" in message:
                # A request from the server (roots/list, sampling, ...): this
                # client offers no capabilities, so none is expected.
                self.send({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32601, "message": "not supported"}})
            # Notifications (logging, list changes) are ignored.

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


SERVER = None


def die(message):
    print("mcp_client: %s" % message, file=sys.stderr)
    if SERVER is not None:
        SERVER.proc.kill()
    sys.exit(1)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    global SERVER
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: mcp_client.py SERVER-STDERR-FILE -- CMD [ARGS...]")
    SERVER = Server(args[2:], args[0])
    signal.signal(signal.SIGTERM, lambda *_: (SERVER.stop(), sys.exit(143)))

    init = SERVER.request("initialize", {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "xdev-mount-tests", "version": "1"},
    })
    if "result" not in init:
        die("initialize failed: %s" % json.dumps(init))
    SERVER.notify("notifications/initialized")
    emit({"ready": True, "serverPid": SERVER.proc.pid,
          "serverInfo": init["result"].get("serverInfo"),
          "protocolVersion": init["result"].get("protocolVersion")})

    for line in sys.stdin:
        if not line.strip():
            continue
        call = json.loads(line)
        answer = SERVER.request("tools/call", {"name": call["name"],
                                               "arguments": call.get("arguments", {})})
        if "error" in answer:
            emit({"rpcError": answer["error"]})
            continue
        result = answer["result"]
        text = "\n".join(c.get("text", "") for c in result.get("content", [])
                         if c.get("type") == "text")
        emit({"isError": bool(result.get("isError")), "text": text, "result": result})
    SERVER.stop()


if __name__ == "__main__":
    main()
