#!/usr/bin/env python3
"""Prints the saved trust Codex (0.171.0) keeps in config.toml for each command
hook of a hooks.json, as its TUI's hook review writes it:

  [hooks.state."<hooks.json path>:<event_snake>:<group>:<handler>"]
  trusted_hash = "sha256:<hex>"

The hash is the SHA-256 of the hook's identity as compact JSON with sorted
keys: the event (snake_case), the group's matcher, and the one handler with
its timeout (default 600) and async (default false) filled in. A handler
with other fields (statusMessage, say) is refused: this was not checked
against Codex. Used by scripts/codex-e2e.sh and
mount-tests/36-codex-hook.sh.

Usage: codex_trust.py HOOKS_JSON [KEY_PATH]
KEY_PATH is the path the key names (default: HOOKS_JSON made absolute).
"""

import hashlib
import json
import os
import re
import sys


def snake(event):
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()


def entries(hooks_file, key_path):
    with open(hooks_file) as f:
        events = json.load(f).get("hooks") or {}
    for event, groups in events.items():
        for group_index, group in enumerate(groups):
            for handler_index, handler in enumerate(group.get("hooks") or []):
                if handler.get("type") != "command":
                    continue
                other = set(handler) - {"type", "command", "timeout", "async"}
                if other:
                    sys.exit(f"codex_trust.py: {event} group {group_index} hook {handler_index} has {sorted(other)}, "
                             "which this hash does not cover")
                normalized = {"type": "command", "command": handler["command"]}
                normalized["timeout"] = max(int(handler.get("timeout", 600)), 1)
                normalized["async"] = bool(handler.get("async", False))
                identity = {"event_name": snake(event), "hooks": [normalized]}
                if group.get("matcher") is not None:
                    identity["matcher"] = group["matcher"]
                text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                digest = hashlib.sha256(text.encode()).hexdigest()
                key = f"{key_path}:{snake(event)}:{group_index}:{handler_index}"
                yield key, f"sha256:{digest}"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[-1])
    hooks_file = sys.argv[1]
    key_path = sys.argv[2] if len(sys.argv) == 3 else os.path.abspath(hooks_file)
    for key, digest in entries(hooks_file, key_path):
        print(f"\n[hooks.state.{json.dumps(key)}]\ntrusted_hash = \"{digest}\"")


if __name__ == "__main__":
    main()
