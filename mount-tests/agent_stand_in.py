#!/usr/bin/env python3
"""An agent stand-in, for the rule that an agent does not decide its own
calls (tests/hook.rs and mount-tests/45-an-agent-cannot-approve-its-own-call.sh).

  agent_stand_in.py MOUNT EVENT WORK -- HOOK_COMMAND...

Runs HOOK_COMMAND as its child with the file EVENT on its stdin (its stdout
and stderr go to WORK/hook.out and WORK/hook.err), as Claude Code and Codex
run a command hook: this process is the agent. Once the hook's preview is
pending under MOUNT/pending (the new one there), a tool of the agent's own that no hook gates (a
second child, as an MCP server the agent started would be) tries to decide
that call in every way a writer can: the root `resolve` and `reject`,
`pending/<id>/resolve`, `sessions/<session>/resolve`, and a draft renamed
onto `pending/<id>/reject`. WORK/attempts.json then holds, as one JSON
object: the agent's pid, the tool's pid, the preview's id, and one entry per
attempt (`how`, `errno`: the errno name or null, `text`: what the tool read
back on its descriptor, `pending`: whether the preview was still pending
afterwards). Then the stand-in waits for the hook (which someone outside the
agent decides) and exits with its status.
"""

import errno
import json
import os
import subprocess
import sys
import time

PATIENCE = 20.0


def errno_name(error):
    return errno.errorcode.get(error.errno, str(error.errno))


def write_device(path, reason):
    """Writes `reason` to the device at `path` on one O_RDWR descriptor and
    reads back what the write got: (errno name or None, text); the errno of
    the open, and no text, when it cannot be opened."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as error:
        return errno_name(error), ""
    try:
        try:
            os.write(fd, reason.encode())
            failed = None
        except OSError as error:
            failed = errno_name(error)
        text = os.read(fd, 65536).decode("utf-8", "replace").strip()
        return failed, text
    finally:
        os.close(fd)


def rename_draft(mount, target, reason):
    """Creates a draft beside the devices and renames it onto `target`:
    (errno name or None, the mount's `last`)."""
    draft = os.path.join(mount, f".own-tool-draft.{os.getpid()}")
    try:
        with open(draft, "w") as f:
            f.write(reason)
        os.rename(draft, target)
        failed = None
    except OSError as error:
        failed = errno_name(error)
    with open(os.path.join(mount, "last")) as f:
        return failed, f.read().strip()


def own_tool(mount, preview, session, work):
    """The agent's ungated tool: tries each way of deciding `preview`."""
    item = os.path.join(mount, "pending", preview)
    attempts = [
        ("resolve", lambda: write_device(os.path.join(mount, "resolve"), "approved by my own tool")),
        ("reject", lambda: write_device(os.path.join(mount, "reject"), "rejected by my own tool")),
        ("pending/<id>/resolve", lambda: write_device(os.path.join(item, "resolve"), "approved by id")),
        (
            "sessions/<session>/resolve",
            lambda: write_device(os.path.join(mount, "sessions", session, "resolve"), "approved by session"),
        ),
        ("rename onto pending/<id>/reject", lambda: rename_draft(mount, os.path.join(item, "reject"), "draft")),
    ]
    results = []
    for how, attempt in attempts:
        failed, text = attempt()
        results.append({"how": how, "errno": failed, "text": text, "pending": os.path.isdir(item)})
    report = {"agent": os.getppid(), "tool": os.getpid(), "id": preview, "attempts": results}
    scratch = os.path.join(work, "attempts.json.tmp")
    with open(scratch, "w") as f:
        json.dump(report, f)
    os.rename(scratch, os.path.join(work, "attempts.json"))


def wait_for_preview(mount, hook, before):
    """The id of the hook's preview (the one pending that was not in
    `before`), once it is pending."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        ids = [id for id in os.listdir(os.path.join(mount, "pending")) if id not in before]
        if ids:
            return ids[0]
        if hook.poll() is not None:
            sys.exit(f"agent_stand_in: the hook ended (status {hook.returncode}) before staging")
        time.sleep(0.02)
    sys.exit("agent_stand_in: the hook staged nothing")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--tool":
        own_tool(*sys.argv[2:6])
        return 0
    mount, event, work, dashes, *command = sys.argv[1:]
    if dashes != "--" or not command:
        sys.exit(__doc__)
    before = set(os.listdir(os.path.join(mount, "pending")))
    with open(event, "rb") as stdin, open(os.path.join(work, "hook.out"), "wb") as out, open(
        os.path.join(work, "hook.err"), "wb"
    ) as err:
        hook = subprocess.Popen(command, stdin=stdin, stdout=out, stderr=err)
    with open(event) as f:
        session = json.load(f)["session_id"]
    preview = wait_for_preview(mount, hook, before)
    subprocess.run([sys.executable, __file__, "--tool", mount, preview, session, work], check=True)
    return hook.wait()


if __name__ == "__main__":
    sys.exit(main())
