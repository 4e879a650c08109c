#!/usr/bin/env python3
"""A stand-in for `xdev hook`, for debugging scripts/claude-code-e2e.sh only
(its --stand-in-hook flag). Not the product: it speaks just enough of the
contract for the harness to be exercised before `xdev hook` exists.

Usage: stand_in_hook.py XDEV_BIN MOUNT  (one Claude Code PreToolUse event on stdin)

It stages a preview labelled `<tool>: <command>` through `xdev stage` on MOUNT,
waits for the decision, and prints Claude Code's PreToolUse answer: allow
with the resolver's reason, or deny with the rejecter's reason.
"""

import json
import os
import subprocess
import sys
import tempfile


def main():
    xdev, mount = sys.argv[1], sys.argv[2]
    event = json.load(sys.stdin)
    tool = event.get("tool_name") or "tool"
    tool_input = event.get("tool_input") or {}
    label = f"{tool}: {tool_input.get('command', json.dumps(tool_input))}"
    with tempfile.TemporaryDirectory() as tmp:
        reason_file = os.path.join(tmp, "reason")
        save = f'printf %s "$XDEV_REASON" > {reason_file}'
        env = dict(os.environ, XDEV_DIR=mount)
        proc = subprocess.run(
            [xdev, "stage", "--label", label, "--source-tool", tool, "--on-reject", save,
             "--", "sh", "-c", save],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            with open(reason_file) as f:
                reason = f.read()
        except OSError:
            reason = ""
    if proc.returncode == 0:
        decision = "allow"
    elif proc.returncode == 3:
        decision = "deny"
    else:  # a quiet hook: Claude Code's normal flow decides
        print(f"stand-in hook: xdev stage exited {proc.returncode}: {proc.stderr.strip()}", file=sys.stderr)
        return 0
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                             "permissionDecisionReason": reason}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
