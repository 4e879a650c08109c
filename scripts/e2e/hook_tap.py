#!/usr/bin/env python3
"""A command hook that records what it was given and what it answered, for
scripts/claude-code-plan-e2e.sh.

  hook_tap.py LOG COMMAND [ARG...]

Reads the agent's hook event on stdin, runs COMMAND with it on stdin, passes
COMMAND's stdout on as its own and exits with COMMAND's status. Appends one
JSON line to LOG: the event (parsed), COMMAND's stdout (parsed when it is
JSON, else the raw text), its stderr, its exit status and how long it took.
With COMMAND `-` it answers nothing (a passive tap: "no opinion").
"""

import json
import subprocess
import sys
import time


def parsed(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def main():
    log, command = sys.argv[1], sys.argv[2:]
    event = sys.stdin.buffer.read()
    started = time.time()
    if command == ["-"]:
        out, err, rc = b"", b"", 0
    else:
        done = subprocess.run(command, input=event, capture_output=True)
        out, err, rc = done.stdout, done.stderr, done.returncode
    record = {
        "time": started,
        "seconds": round(time.time() - started, 3),
        "command": command,
        "event": parsed(event.decode("utf-8", "replace")),
        "stdout": parsed(out.decode("utf-8", "replace")) if out.strip() else "",
        "stderr": err.decode("utf-8", "replace"),
        "rc": rc,
    }
    with open(log, "a") as f:
        f.write(json.dumps(record) + "\n")
    sys.stdout.buffer.write(out)
    sys.stderr.buffer.write(err)
    return rc


if __name__ == "__main__":
    sys.exit(main())
