#!/usr/bin/env python3
"""The assertions of scripts/claude-code-e2e.sh, over the files its run left in WORK.

Usage: check.py WORK MARK1 MARK2 RESOLVE_REASON REJECT_REASON [real|stand-in]

With `real` (the default), also what only `xdev hook` does: the journal's
decision records carry Claude Code's session and tool_use ids, and each
preview's `pending/<id>/detail` held the tool input.

Prints one `ok:` line per check that holds and one `FAIL:` line per check
that does not; exits 1 when any failed.
"""

import json
import os
import sys

work, mark1, mark2, resolve_reason, reject_reason = sys.argv[1:6]
real_hook = (sys.argv[6] if len(sys.argv) > 6 else "real") == "real"
failures = []


def ok(what):
    print(f"ok: {what}")


def fail(what):
    failures.append(what)
    print(f"FAIL: {what}")


def check(cond, what, why=""):
    if cond:
        ok(what)
    else:
        fail(what + (f" ({why})" if why else ""))
    return cond


def read_jsonl(name):
    path = os.path.join(work, name)
    records = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except ValueError as e:
                        fail(f"{name} line {n} is not JSON: {e}")
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    return records


def text_of(content):
    """A tool_result's content as one string (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content)


# --- the agent's network: loopback only ------------------------------------------
try:
    links = [line.split()[1] for line in open(os.path.join(work, "netns.txt")) if line.startswith("link ")]
except OSError:
    links = None
check(links == ["lo"], "the agent's network namespace has no link but lo", f"links: {links}")

# --- Claude Code's own result -------------------------------------------------------
try:
    rc = int(open(os.path.join(work, "claude.rc")).read())
except (OSError, ValueError):
    rc = None
check(rc == 0, "claude -p exited 0", f"exit status {rc}; its stderr is in {work}/claude.err")
try:
    result = json.load(open(os.path.join(work, "claude.json")))
except (OSError, ValueError) as e:
    result = {}
    fail(f"claude.json is not Claude Code's JSON result: {e}")
if result:
    check(result.get("is_error") is False and result.get("subtype") == "success",
          "Claude Code reports success", f"is_error={result.get('is_error')} subtype={result.get('subtype')}")
    denied = [d.get("tool_use_id") for d in result.get("permission_denials") or []]
    check(denied == ["toolu_e2e_step2"], "Claude Code lists exactly the second Bash call as denied",
          f"permission_denials: {denied}")

# --- the commands ran only when resolved ---------------------------------------------
check(os.path.exists(mark1), f"MARK1 exists: the resolved `touch {mark1}` ran")
check(not os.path.exists(mark2), f"MARK2 does not exist: the rejected `touch {mark2}` never ran")

decisions = []
try:
    for line in open(os.path.join(work, "decider.tsv")):
        n, preview_id, device, write_rc, mark1_before, label = line.rstrip("\n").split("\t", 5)
        decisions.append(dict(n=n, id=preview_id, device=device, rc=write_rc, mark1_before=mark1_before, label=label))
except (OSError, ValueError) as e:
    fail(f"cannot read the decider's record: {e}")
check(len(decisions) == 2, "the decider saw exactly two Bash previews",
      f"it decided {len(decisions)}; see {work}/decider.err")
if len(decisions) >= 1:
    d = decisions[0]
    check(d["label"].startswith("Bash: ") and f"touch {mark1}" in d["label"],
          f"the first preview is labelled {d['label']!r}", f"expected 'Bash: touch {mark1}'")
    check(d["mark1_before"] == "absent", "MARK1 did not exist while its preview was pending (the hook held the command)")
    check(d["device"] == "resolve" and d["rc"] == "0", "`echo ... > resolve` succeeded",
          f"device {d['device']}, write status {d['rc']}")
if len(decisions) >= 2:
    d = decisions[1]
    check(d["label"].startswith("Bash: ") and f"touch {mark2}" in d["label"],
          f"the second preview is labelled {d['label']!r}", f"expected 'Bash: touch {mark2}'")
    check(d["device"] == "reject" and d["rc"] == "0", "`echo ... > reject` succeeded",
          f"device {d['device']}, write status {d['rc']}")

# --- what the model received ----------------------------------------------------------
requests = read_jsonl("requests.jsonl")
main = [r for r in requests if isinstance(r.get("body"), dict)
        and any(t.get("name") == "Bash" for t in r["body"].get("tools") or [])]
check(len(main) == 3, "the model got three agent requests (tool call, tool call, final text)",
      f"it got {len(main)}")
results = {}
for index, r in enumerate(main):
    for message in r["body"].get("messages") or []:
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.setdefault(block.get("tool_use_id"), (index + 1, block))
first = results.get("toolu_e2e_step1")
second = results.get("toolu_e2e_step2")
if check(first is not None, "the model received a tool_result for the first Bash call"):
    check(not first[1].get("is_error"), "that tool_result is a success", text_of(first[1].get("content")))
if check(second is not None, "the model received a tool_result for the second Bash call"):
    content = text_of(second[1].get("content"))
    check(second[1].get("is_error") is True and reject_reason in content,
          f"request {second[0]} carries the rejection reason in the tool_result: {content!r}",
          f"is_error={second[1].get('is_error')}, content {content!r}")

# --- the xdev journal -------------------------------------------------------------------
journal = read_jsonl("journal.jsonl")
staged = [r for r in journal if r.get("event") == "staged"]
resolves = [r for r in journal if r.get("event") == "resolve"]
rejects = [r for r in journal if r.get("event") == "reject"]
check(len(staged) == 2, "the journal has two `staged` records", f"it has {len(staged)}")
if check(len(resolves) == 1, "the journal has one `resolve` record", f"it has {len(resolves)}"):
    r = resolves[0]
    check(r.get("outcome") == "ok" and r.get("reason") == resolve_reason and mark1 in (r.get("label") or ""),
          f"resolve: {r.get('label')!r}, reason {r.get('reason')!r}, outcome {r.get('outcome')}",
          json.dumps(r))
if check(len(rejects) == 1, "the journal has one `reject` record", f"it has {len(rejects)}"):
    r = rejects[0]
    check(r.get("outcome") == "ok" and r.get("reason") == reject_reason and mark2 in (r.get("label") or ""),
          f"reject: {r.get('label')!r}, reason {r.get('reason')!r}, outcome {r.get('outcome')}",
          json.dumps(r))
if real_hook:
    session = result.get("session_id")
    for records, tool_use_id in ((resolves, "toolu_e2e_step1"), (rejects, "toolu_e2e_step2")):
        for r in records:
            check(r.get("sessionId") == session and r.get("toolUseId") == tool_use_id,
                  f"the {r.get('event')} record carries Claude Code's session_id {session} and tool_use_id {tool_use_id}",
                  f"sessionId {r.get('sessionId')!r}, toolUseId {r.get('toolUseId')!r}")
    for n, mark in ((0, mark1), (1, mark2)):
        try:
            detail = json.load(open(os.path.join(work, f"detail.{n}")))
        except (OSError, ValueError) as e:
            detail = None
            fail(f"preview {n + 1}'s pending/<id>/detail was not readable JSON ({e})")
        if detail is not None:
            check(isinstance(detail, dict) and detail.get("command") == f"touch {mark}",
                  f"preview {n + 1}'s pending/<id>/detail showed the tool input {json.dumps(detail)}")

sys.exit(1 if failures else 0)
