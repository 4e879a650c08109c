#!/usr/bin/env python3
"""The assertions of scripts/claude-code-e2e.sh, scripts/claude-code-write-e2e.sh,
scripts/claude-code-plan-e2e.sh and scripts/claude-code-self-approve-e2e.sh,
over the files a run left in WORK.

Usage:
  check.py WORK MARK1 MARK2 RESOLVE_REASON REJECT_REASON [real|stand-in]
  check.py write WORK pending|none MNT CONTENT MARKER
  check.py trace WORK MNT
  check.py plan WORK approve|refine PLANDIR FILE CONTENT FEEDBACK
  check.py codex RUNDIR JOURNAL PreToolUse|PermissionRequest MARK1 MARK2 RESOLVE_REASON REJECT_REASON
  check.py codex-untrusted RUNDIR JOURNAL MARK1 MARK2
  check.py plugin WORK PLUGIN HOME PROJECT MNT
  check.py self-approve WORK MNT MARK1 RESOLVE_REASON

The first form checks a run of claude-code-e2e.sh. With `real` (the default),
also what only `xdev hook` does: the journal's decision records carry Claude
Code's session and tool_use ids, and each preview's `pending/<id>/detail`
held the tool input.

`write` checks one run of claude-code-write-e2e.sh: with a preview pending
or with none. When WORK/strace.txt exists (its --strace), it also checks the
Write's syscalls on MNT. `trace` prints those syscalls.

`plan` checks one run of claude-code-plan-e2e.sh: ExitPlanMode approved (with
--mode acceptEdits) or refined with FEEDBACK on the plan desk.

`codex` checks one run of scripts/codex-e2e.sh (its RUNDIR, and the
mount's journal copied to JOURNAL): the first shell call resolved and run,
the second rejected with the reason reaching the model, and the journal's
records carrying Codex's session (thread) id. `codex-untrusted` checks a run
whose hook Codex skipped (neither trusted nor bypassed): both commands ran,
and the journal has no record with the run's session id.

`plugin` checks the install of scripts/claude-code-plugin-e2e.sh: the
plugin at PLUGIN was added as a local (directory) marketplace and installed
and enabled as xdev@xdev from it, its installed copy carries the shipped
hooks, the project's settings give hooks XDEV_DIR=MNT, and no settings file
under HOME or PROJECT declares a hook of its own (so the plugin's is the
only one).

`self-approve` checks a run of scripts/claude-code-self-approve-e2e.sh: the
MCP server Claude Code started tried to approve its pending Bash call and
was refused (EPERM, journaled as refused), and the decider outside resolved
it.

Prints one `ok:` line per check that holds and one `FAIL:` line per check
that does not; exits 1 when any failed.
"""

import json
import os
import re
import sys

work = None
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
    """The records of the JSON Lines file `name` (in `work` unless absolute)."""
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


def check_network():
    """The agent's network namespace: loopback only."""
    try:
        links = [line.split()[1] for line in open(os.path.join(work, "netns.txt")) if line.startswith("link ")]
    except OSError:
        links = None
    check(links == ["lo"], "the agent's network namespace has no link but lo", f"links: {links}")


def check_claude_result():
    """Claude Code exited 0 and reported success; returns its JSON result ({} if none)."""
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
    return result


def agent_requests(requests, tool):
    """The requests of the agent's main loop: those that offer the model `tool`."""
    return [r for r in requests if isinstance(r.get("body"), dict)
            and any(t.get("name") == tool for t in r["body"].get("tools") or [])]


def tool_results(main):
    """tool_use_id -> (the 1-based number of the first request that carried it, its tool_result block)."""
    results = {}
    for index, r in enumerate(main):
        for message in r["body"].get("messages") or []:
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        results.setdefault(block.get("tool_use_id"), (index + 1, block))
    return results


def check_bash(argv):
    """claude-code-e2e.sh: two Bash calls through the hook, the first resolved, the second rejected."""
    global work
    work, mark1, mark2, resolve_reason, reject_reason = argv[:5]
    real_hook = (argv[5] if len(argv) > 5 else "real") == "real"
    check_network()
    result = check_claude_result()
    if result:
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
    main = agent_requests(requests, "Bash")
    check(len(main) == 3, "the model got three agent requests (tool call, tool call, final text)",
          f"it got {len(main)}")
    results = tool_results(main)
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
        check_details(work, (mark1, mark2))


def read_text(name):
    try:
        with open(os.path.join(work, name)) as f:
            return f.read()
    except OSError:
        return None


def strace_calls(mnt):
    """The syscalls of WORK/strace.txt that touch the mount, as (pid, name, args, result)
    in order; None when there is no trace. A call strace split around another thread's
    (`<unfinished ...>`, `<... name resumed>`) is joined again. Paths through an O_PATH
    descriptor of the mount (`/proc/self/fd/N/resolve`, as Claude Code uses) count."""
    text = read_text("strace.txt")
    if text is None:
        return None
    line_re = re.compile(r"^(\d+) [\d:.]+ (.*)$")
    unfinished = {}
    calls = []
    via_fd = re.compile(r'"/proc/self/fd/\d+/')
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        pid, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            unfinished[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = re.match(r"^<\.\.\. (\w+) resumed>(.*)$", rest)
        if resumed:
            rest = unfinished.pop(pid, resumed.group(1) + "(") + resumed.group(2)
        call = re.match(r"^(\w+)\((.*)\) += (.*)$", rest)
        if not call:
            continue
        name, args, result = call.groups()
        if mnt in args or mnt in result or via_fd.search(args):
            calls.append((int(pid), name, args, result))
    return calls


def check_write(argv):
    """claude-code-write-e2e.sh, one run: Read then Write of MNT/resolve, with a
    preview pending (`pending`) or with none (`none`)."""
    global work
    work, variant, mnt, content, marker = argv[:5]
    resolve = os.path.join(mnt, "resolve")
    reason = content.strip()
    check_network()
    result = check_claude_result()
    if result:
        denied = result.get("permission_denials") or []
        check(denied == [], "Claude Code denied no tool call (the permissions let Read and Write run)",
              f"permission_denials: {json.dumps(denied)}")
    try:
        claude_pid = int(read_text("claude.pid") or "")
    except ValueError:
        claude_pid = None

    # --- what the model received ----------------------------------------------------
    main = agent_requests(read_jsonl("requests.jsonl"), "Write")
    check(len(main) == 3, "the model got three agent requests (Read, Write, final text)", f"it got {len(main)}")
    results = tool_results(main)
    read = results.get("toolu_e2e_step1")
    write = results.get("toolu_e2e_step2")
    if check(read is not None, "the model received a tool_result for the Read"):
        text = text_of(read[1].get("content"))
        check(not read[1].get("is_error") and "APPLY" in text,
              f"the Read returned the device's usage line: {text.strip()!r}",
              f"is_error={read[1].get('is_error')}, content {text!r}")
    write_text = None
    if check(write is not None, "the model received a tool_result for the Write"):
        write_text = text_of(write[1].get("content"))
        if variant == "pending":
            check(not write[1].get("is_error") and not re.search(r"size|verif|mismatch|error", write_text, re.I),
                  f"the Write's tool_result is a success: {write_text!r}",
                  f"is_error={write[1].get('is_error')}, content {write_text!r}")
        else:
            check(write[1].get("is_error") is True and ("ENOENT" in write_text or "no such file" in write_text.lower()),
                  f"the Write's tool_result is an error naming ENOENT: {write_text!r}",
                  f"is_error={write[1].get('is_error')}, content {write_text!r}")

    # --- the mount ------------------------------------------------------------------------
    before, after = read_text("ls.before"), read_text("ls.after")
    check(before is not None and before == after,
          f"no draft is left in the mount (`ls -A` after the run is as before: {' '.join((after or '').split())})",
          f"before: {before!r}, after: {after!r}")
    journal = read_jsonl("journal.jsonl")
    staged = [r for r in journal if r.get("event") == "staged"]
    decisions = [r for r in journal if r.get("device") is not None or r.get("event") in ("resolve", "reject")]
    resolves = [r for r in journal if r.get("event") == "resolve"]
    try:
        status = json.loads(read_text("status.json") or "")
    except ValueError:
        status = None
    if variant == "pending":
        stage_rc = (read_text("stage.rc") or "").strip()
        check(stage_rc == "0", "the stager (`xdev stage ... -- sh -c 'echo applied; touch MARKER'`) exited 0 (applied)",
              f"exit status {stage_rc!r}; its stderr: {read_text('stage.err')!r}")
        check(os.path.exists(marker), f"the marker exists: the staged command ran ({marker})")
        check(len(staged) == 1, "the journal has one `staged` record", f"it has {len(staged)}")
        if check(len(resolves) == 1 and len(decisions) == 1, "the journal has exactly one decision, a `resolve`",
                 f"decisions: {json.dumps(decisions)}"):
            r = resolves[0]
            check(r.get("outcome") == "ok" and r.get("reason") == reason and r.get("text") == "applied"
                  and r.get("label") == "edit README",
                  f"resolve: {r.get('label')!r}, reason {r.get('reason')!r}, outcome {r.get('outcome')}, result {r.get('text')!r}",
                  json.dumps(r))
            check(claude_pid is not None and r.get("pid") == claude_pid,
                  f"the resolve record names the claude process: pid {r.get('pid')}, process {r.get('process')!r}",
                  f"claude's pid {claude_pid}; record {json.dumps(r)}")
    else:
        check(not os.path.exists(marker), "nothing was applied (no marker)")
        check(staged == [], "the journal has no `staged` record", f"it has {len(staged)}")
        applied = [r for r in decisions if r.get("outcome") == "ok"]
        check(applied == [], "the journal has no successful decision", json.dumps(applied))
        for r in resolves:
            check(r.get("errno") in ("ENOENT", 2) and r.get("pid") == claude_pid,
                  f"the journal's resolve record: outcome {r.get('outcome')}, errno {r.get('errno')}, "
                  f"reason {r.get('reason')!r}, process {r.get('process')!r} (claude)",
                  json.dumps(r))
    if status is not None:
        check(status.get("pending") == 0 and status.get("inProgress") == 0,
              f"nothing is pending afterwards (status.json: {json.dumps(status)})")
    else:
        fail(f"{work}/status.json is not the mount's status.json")

    # --- the Write's syscalls (--strace) -----------------------------------------------------
    calls = strace_calls(mnt)
    if calls is None:
        return
    size = len(content.encode())
    creates = [c for c in calls if c[1] == "openat" and "O_CREAT" in c[2] and not re.search(r'"[^"]*/resolve"', c[2])]
    drafts = [re.search(r'"[^"]*/([^"/]+)"', c[2]).group(1) for c in creates]
    check(len(creates) == 1 and "O_EXCL" in creates[0][2] and creates[0][3].split("<")[0].isdigit(),
          f"strace: Claude Code made one draft beside the devices, O_CREAT|O_EXCL: {drafts}",
          "; ".join(c[2] + " = " + c[3] for c in creates))
    draft = drafts[0] if drafts else None
    writes = [c for c in calls if c[1] == "write" and draft and f"/{draft}>" in c[2]]
    check(len(writes) == 1 and writes[0][3] == str(size),
          f"strace: one write(2) of {size} bytes to the draft", "; ".join(f"{c[2]} = {c[3]}" for c in writes))
    renames = [c for c in calls if c[1] in ("rename", "renameat", "renameat2") and re.search(r'/resolve"', c[2])]
    expect = "0" if variant == "pending" else "-1 ENOENT"
    check(len(renames) == 1 and renames[0][3].startswith(expect) and draft and draft in renames[0][2],
          f"strace: one rename(draft, resolve), which returned {expect}",
          "; ".join(f"{c[1]}({c[2]}) = {c[3]}" for c in renames))
    in_place = [c for c in calls if (c[1] == "openat" and re.search(r'/resolve"', c[2])
                                     and re.search(r"O_WRONLY|O_RDWR|O_TRUNC", c[2])) or c[1] == "ftruncate"]
    check(in_place == [], "strace: no in-place fallback (no open of resolve for writing, no ftruncate)",
          "; ".join(f"{c[1]}({c[2]}) = {c[3]}" for c in in_place))
    if renames:
        later = calls[calls.index(renames[0]) + 1:]
        stats = [c for c in later if c[1] in ("statx", "newfstatat") and re.search(r'/resolve[">]', c[2])]
        if variant == "pending":
            sizes = [re.search(r"(?:stx_size|st_size)=(\d+)", c[2]) for c in stats]
            sizes = [int(m.group(1)) for m in sizes if m]
            check(sizes != [] and sizes[0] == size,
                  f"strace: Claude Code's stat of resolve after the rename shows the {size} bytes it delivered "
                  f"(sizes seen after the rename: {sizes})", f"sizes {sizes}")
        else:
            unlinks = [c for c in later if c[1] == "unlink" and draft and draft in c[2]]
            check(all(c[3].startswith("-1 ENOENT") for c in unlinks),
                  f"strace: the draft was gone after the failed rename (xdev consumed it): Claude Code's "
                  f"unlink of it: {'; '.join(c[3] for c in unlinks) or 'none'}",
                  "; ".join(f"unlink({c[2]}) = {c[3]}" for c in unlinks))


def print_trace(argv):
    """Prints the syscalls of WORK/strace.txt that touch the mount's resolve device or a
    draft, MNT shown as <mnt>, repeated calls folded."""
    global work
    work, mnt = argv[:2]
    calls = strace_calls(mnt)
    if calls is None:
        print("(no strace.txt)")
        return
    out = []
    for pid, name, args, result in calls:
        if "O_PATH" in args or not re.search(r"resolve", args):
            continue
        args = re.sub(r"\{stx_mask=[^}]*?stx_mode=([^,]*), stx_size=(\d+), \.\.\.\}", r"{mode=\1, size=\2}", args)
        args = re.sub(r"AT_FDCWD<[^>]*>, ", "", args).replace(mnt, "<mnt>")
        line = f"{name}({args}) = {result.replace(mnt, '<mnt>')}"
        if out and out[-1][1] == line:
            out[-1][2] += 1
        else:
            out.append([pid, line, 1])
    for pid, line, n in out:
        print(f"{pid} {line}" + (f"  (x{n})" if n > 1 else ""))

def check_plan(argv):
    """claude-code-plan-e2e.sh, one run: ExitPlanMode decided on the plan desk, then
    (approve) Write of FILE with CONTENT under the mode the approval set."""
    global work
    work, variant, plan_dir, path, content, feedback = argv[:6]
    approve = variant == "approve"
    check_network()
    result = check_claude_result()
    if result and approve:
        denied = result.get("permission_denials") or []
        check(denied == [], "Claude Code denied no tool call", f"permission_denials: {json.dumps(denied)}")

    # --- the hooks: which events fired for ExitPlanMode, what xdev hook answered ---------
    hooks = read_jsonl("hooks.jsonl")
    events = [(h["event"].get("hook_event_name"), h["event"].get("tool_name"))
              for h in hooks if isinstance(h.get("event"), dict)]
    print(f"info: hook events, in order: {events}")
    asked = [h for h in hooks if h.get("command") != ["-"] and isinstance(h.get("event"), dict)
             and h["event"].get("tool_name") == "ExitPlanMode"]
    plan_input = None
    if check(len(asked) == 1 and asked[0]["event"].get("hook_event_name") == "PermissionRequest",
             "xdev hook ran once for ExitPlanMode, on its PermissionRequest",
             f"xdev hook runs for ExitPlanMode: {[h['event'].get('hook_event_name') for h in asked]}"):
        h = asked[0]
        plan_input = h["event"].get("tool_input")
        answer = h.get("stdout") if isinstance(h.get("stdout"), dict) else {}
        decision = (answer.get("hookSpecificOutput") or {}).get("decision") or {}
        if approve:
            check(decision.get("behavior") == "allow" and decision.get("updatedInput") == plan_input,
                  "the hook allowed it with updatedInput = the call's own tool_input", json.dumps(answer))
            check(decision.get("updatedPermissions") == [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
                  "the allow carries updatedPermissions setMode acceptEdits (session)", json.dumps(answer))
        else:
            message = decision.get("message") or ""
            check(decision.get("behavior") == "deny" and feedback in message,
                  f"the hook denied it with the feedback: {message!r}", json.dumps(answer))

    # --- what the model received ----------------------------------------------------------
    main = agent_requests(read_jsonl("requests.jsonl"), "Write")
    results = tool_results(main)
    plan_write = results.get("toolu_e2e_step1")
    exit_plan = results.get("toolu_e2e_step2")
    write = results.get("toolu_e2e_step3")
    if check(plan_write is not None, "the model received a tool_result for the Write of its plan file"):
        text = text_of(plan_write[1].get("content"))
        check(not plan_write[1].get("is_error"), f"the plan file was written in plan mode: {text[:120]!r}",
              f"is_error={plan_write[1].get('is_error')}, content {text!r}")
    if isinstance(plan_input, dict):
        check(bool(plan_input.get("plan")) and bool(plan_input.get("planFilePath")),
              f"Claude Code filled the ExitPlanMode input from the plan file: planFilePath {plan_input.get('planFilePath')}",
              json.dumps(plan_input))
    if check(exit_plan is not None, "the model received a tool_result for ExitPlanMode"):
        text = text_of(exit_plan[1].get("content"))
        if approve:
            check(not exit_plan[1].get("is_error") and "User has approved your plan" in text,
                  f"the ExitPlanMode tool_result says the plan was approved: {text[:200]!r}",
                  f"is_error={exit_plan[1].get('is_error')}, content {text!r}")
        else:
            check("Revise the plan and present it again" in text and feedback in text,
                  f"the ExitPlanMode tool_result asks for a revision with the feedback: {text!r}",
                  f"is_error={exit_plan[1].get('is_error')}, content {text!r}")
    if approve:
        check(len(main) == 4, "the model got four agent requests (plan Write, ExitPlanMode, Write, final text)",
              f"it got {len(main)}")
        if check(write is not None, "the model received a tool_result for the Write"):
            text = text_of(write[1].get("content"))
            check(not write[1].get("is_error"), f"the Write's tool_result is a success: {text[:200]!r}",
                  f"is_error={write[1].get('is_error')}, content {text!r}")
        try:
            written = open(path).read()
        except OSError:
            written = None
        check(written == content, f"{path} holds the content the model wrote", f"it holds {written!r}")
    else:
        check(len(main) == 3, "the model got three agent requests (plan Write, ExitPlanMode, final text)",
              f"it got {len(main)}")
        check(write is None and not os.path.exists(path), f"no Write ran: {path} does not exist")

    # --- Claude Code's side (claude.stream: its stream-json output) ---------------------------
    stream = read_jsonl("claude.stream")
    asked_host = [m["request"].get("tool_name") for m in stream
                  if m.get("type") == "control_request" and (m.get("request") or {}).get("subtype") == "can_use_tool"]
    cancelled = {m.get("request_id") for m in stream if m.get("type") == "control_cancel_request"}
    open_asks = [m["request"].get("tool_name") for m in stream if m.get("type") == "control_request"
                 and m.get("request_id") not in cancelled]
    modes = [m.get("permissionMode") or m.get("status") for m in stream if m.get("type") == "system"
             and m.get("subtype") in ("init", "status")]
    print(f"info: permission prompts sent to the (silent) host: {asked_host}, left open: {open_asks}; "
          f"modes (init, status): {modes}")
    check(asked_host == ["ExitPlanMode"] and open_asks == [],
          "the only permission prompt was ExitPlanMode's, and the hook's answer cancelled it",
          f"prompts {asked_host}, left open {open_asks}")
    if approve:
        check(modes[:1] == ["plan"] and modes[-1:] == ["acceptEdits"],
              f"Claude Code went from plan mode to acceptEdits: {modes}", f"modes {modes}")

    # --- the plan desk and the journal ---------------------------------------------------------
    plans = sorted(n for n in os.listdir(plan_dir) if n.endswith("-plan.md")) if os.path.isdir(plan_dir) else []
    own_plan = (plan_input or {}).get("plan") if isinstance(plan_input, dict) else None
    if check(len(plans) == 1, f"the plan dir holds one plan file: {plans}", f"it holds {plans}"):
        with open(os.path.join(plan_dir, plans[0])) as f:
            text = f.read()
        check(own_plan is not None and text == own_plan, f"{plans[0]} holds the plan of the ExitPlanMode call",
              f"it holds {text!r}; the call's plan {own_plan!r}")
    journal = read_jsonl("journal.jsonl")
    outcome = "approved" if approve else "refine"
    proposes = [r for r in journal if r.get("event") == "propose" or r.get("device") == "propose"]
    print(f"info: propose records: {json.dumps(proposes)}")
    decided = [r for r in proposes if (r.get("plan") or {}).get("outcome") == outcome]
    if check(len(decided) == 1, f"the journal has one propose record with outcome {outcome}",
             f"propose records: {json.dumps(proposes)}"):
        r = decided[0]
        check(plans and (r.get("plan") or {}).get("planPath") == os.path.join(plan_dir, plans[0]),
              f"it names the plan: {json.dumps(r.get('plan'))}", json.dumps(r))


def codex_run():
    """The Codex run in `work`: checks that `codex exec` exited 0 and reported
    its thread id; returns its JSON events and that id."""
    try:
        rc = int(open(os.path.join(work, "codex.rc")).read())
    except (OSError, ValueError):
        rc = None
    check(rc == 0, "codex exec exited 0", f"exit status {rc}; its stderr is in {work}/codex.err")
    events = read_jsonl("codex.jsonl")
    threads = [e.get("thread_id") for e in events if e.get("type") == "thread.started"]
    session = threads[0] if threads else None
    check(session is not None, f"Codex reported its thread id {session}")
    return events, session


def function_outputs(requests):
    """call_id -> (the 1-based number of the first request of Codex's main loop, the
    requests offering exec_command, that carried it, its function_call_output's text)."""
    main_loop = [r for r in requests if isinstance(r.get("body"), dict)
                 and any(t.get("name") == "exec_command" for t in r["body"].get("tools") or [])]
    outputs = {}
    for index, r in enumerate(main_loop):
        for item in r["body"].get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                outputs.setdefault(item.get("call_id"), (index + 1, text_of(item.get("output"))))
    return outputs


def check_codex(argv):
    """codex-e2e.sh: one Codex run, the first shell call resolved, the second rejected."""
    global work
    work, journal_path, event, mark1, mark2, resolve_reason, reject_reason = argv[:7]
    check_network()
    events, session = codex_run()
    check(any(e.get("type") == "turn.completed" for e in events), "Codex completed its turn")

    check(os.path.exists(mark1), f"MARK1 exists: the resolved `touch {mark1}` ran")
    check(not os.path.exists(mark2), f"MARK2 does not exist: the rejected `touch {mark2}` never ran")

    decisions = []
    try:
        for line in open(os.path.join(work, "decider.tsv")):
            n, preview_id, device, write_rc, mark1_before, label = line.rstrip("\n").split("\t", 5)
            decisions.append(dict(device=device, rc=write_rc, mark1_before=mark1_before, label=label))
    except (OSError, ValueError) as e:
        fail(f"cannot read the decider's record: {e}")
    check(len(decisions) == 2, "the decider saw exactly two Bash previews", f"it decided {len(decisions)}")
    for n, (mark, device) in enumerate(((mark1, "resolve"), (mark2, "reject"))):
        if len(decisions) > n:
            d = decisions[n]
            check(d["label"].startswith("Bash: ") and f"touch {mark}" in d["label"],
                  f"preview {n + 1} is labelled {d['label']!r}")
            check(d["device"] == device and d["rc"] == "0", f"`echo ... > {device}` succeeded",
                  f"device {d['device']}, write status {d['rc']}")
    if decisions:
        check(decisions[0]["mark1_before"] == "absent",
              "MARK1 did not exist while its preview was pending (the hook held the command)")

    outputs = function_outputs(read_jsonl("requests.jsonl"))
    first = outputs.get("call_e2e_step1")
    second = outputs.get("call_e2e_step2")
    if check(first is not None, "the model received the first call's function_call_output"):
        check("exited with code 0" in first[1], f"the first call ran: {first[1]!r}")
    if check(second is not None, "the model received the second call's function_call_output"):
        check(reject_reason in second[1],
              f"request {second[0]} carries the rejection reason in the function_call_output: {second[1]!r}")

    journal = read_jsonl(journal_path)
    mine = [r for r in journal if r.get("sessionId") == session]
    resolves = [r for r in mine if r.get("event") == "resolve"]
    rejects = [r for r in mine if r.get("event") == "reject"]
    if check(len(resolves) == 1, f"the journal has one `resolve` record with session {session}",
             f"it has {len(resolves)}"):
        r = resolves[0]
        check(r.get("outcome") == "ok" and r.get("reason") == resolve_reason and mark1 in (r.get("label") or ""),
              f"resolve: {r.get('label')!r}, reason {r.get('reason')!r}, outcome {r.get('outcome')}", json.dumps(r))
    if check(len(rejects) == 1, f"the journal has one `reject` record with session {session}",
             f"it has {len(rejects)}"):
        r = rejects[0]
        check(r.get("outcome") == "ok" and r.get("reason") == reject_reason and mark2 in (r.get("label") or ""),
              f"reject: {r.get('label')!r}, reason {r.get('reason')!r}, outcome {r.get('outcome')}", json.dumps(r))
    for records, n in ((resolves, 1), (rejects, 2)):
        for r in records:
            want = f"call_e2e_step{n}" if event == "PreToolUse" else None
            check(r.get("toolUseId") == want, f"the {r.get('event')} record's toolUseId is {want!r}",
                  f"toolUseId {r.get('toolUseId')!r}")
    check_details(work, (mark1, mark2))


def load_json(path):
    """The JSON document at path, or None (a FAIL line says why)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path} as JSON: {e}")
        return None


def check_plugin(argv):
    """claude-code-plugin-e2e.sh: the xdev plugin came from the local marketplace, and only it hooks."""
    global work
    work, plugin, home, project, mnt = argv[:5]
    plugins = load_json(os.path.join(work, "plugins.json")) or []
    mine = [p for p in plugins if isinstance(p, dict) and p.get("id") == "xdev@xdev"]
    if check(len(mine) == 1, "`claude plugin list` shows xdev@xdev",
             f"ids: {[p.get('id') for p in plugins if isinstance(p, dict)]}"):
        entry = mine[0]
        check(entry.get("enabled") is True, "xdev@xdev is enabled", json.dumps(entry))
        check(os.path.realpath(entry.get("readFromFolder") or "") == os.path.realpath(plugin),
              f"it was read from the local marketplace folder {plugin}", f"readFromFolder {entry.get('readFromFolder')!r}")
        installed = entry.get("installPath") or ""
        shipped = load_json(os.path.join(plugin, "hooks", "hooks.json"))
        copied = load_json(os.path.join(installed, "hooks", "hooks.json"))
        check(shipped is not None and copied == shipped,
              f"its installed copy ({installed}) carries the shipped hooks/hooks.json")
    settings = load_json(os.path.join(home, ".claude", "settings.json")) or {}
    source = ((settings.get("extraKnownMarketplaces") or {}).get("xdev") or {}).get("source") or {}
    check(source.get("source") == "directory" and os.path.realpath(source.get("path") or "") == os.path.realpath(plugin),
          "the user settings declare the marketplace xdev as the local directory", json.dumps(source))
    project_settings = load_json(os.path.join(project, ".claude", "settings.json")) or {}
    env = project_settings.get("env") or {}
    check(env.get("XDEV_DIR") == mnt, f"the project's settings give hooks XDEV_DIR={mnt}", json.dumps(env))
    hooked = []
    for path in (os.path.join(home, ".claude", "settings.json"),
                 os.path.join(project, ".claude", "settings.json"),
                 os.path.join(project, ".claude", "settings.local.json")):
        if os.path.exists(path) and "hooks" in (load_json(path) or {}):
            hooked.append(path)
    check(not hooked, "no settings file declares a hook: the plugin's is the only one", f"hooks in {hooked}")


def check_codex_untrusted(argv):
    """codex-e2e.sh's untrusted run: Codex skipped the hook, so both calls ran and nothing was staged."""
    global work
    work, journal_path, mark1, mark2 = argv[:4]
    check_network()
    _, session = codex_run()
    check(os.path.exists(mark1) and os.path.exists(mark2),
          "MARK1 and MARK2 exist: with the hook untrusted, both commands ran unasked")
    journal = read_jsonl(journal_path)
    mine = [r for r in journal if session is not None and r.get("sessionId") == session]
    check(not mine, f"the journal has no record of session {session}: the hook never ran",
          f"{len(mine)} records")


def check_self_approve(argv):
    """claude-code-self-approve-e2e.sh: the MCP server Claude Code started
    tried to approve its pending Bash call and was refused; the decider
    outside resolved it."""
    global work
    work, mnt, mark1, reason = argv[:4]
    check_network()
    result = check_claude_result()
    if result:
        check(not result.get("permission_denials"), "Claude Code lists no permission denial",
              f"permission_denials: {result.get('permission_denials')}")
    try:
        claude = int(open(os.path.join(work, "claude.pid")).read())
    except (OSError, ValueError) as e:
        claude = None
        fail(f"no Claude Code pid in claude.pid: {e}")

    # --- the MCP server: Claude Code's own, refused twice ---------------------------------
    mcp = read_jsonl("mcp.jsonl")
    started = [r for r in mcp if r.get("event") == "started"]
    server = started[0].get("pid") if started else None
    if check(len(started) == 1, "Claude Code started the MCP server once", f"{len(started)} starts"):
        check(claude in started[0].get("ancestors", []),
              f"the MCP server (pid {server}) runs under Claude Code (pid {claude})",
              f"its ancestors: {started[0].get('ancestors')}")
    check(sum(1 for r in mcp if r.get("event") == "called") == 1, "the model called the MCP tool once")
    attempts = [r for r in mcp if r.get("event") == "attempt"]
    check([a.get("how") for a in attempts] == ["resolve", "pending/<id>/resolve"],
          "the MCP server wrote the root resolve and pending/<id>/resolve",
          f"attempts: {[a.get('how') for a in attempts]}; MCP log: {mcp}")
    preview = attempts[0].get("id") if attempts else None
    for a in attempts:
        text = a.get("text") or ""
        check(a.get("errno") == "EPERM", f"its {a.get('how')} failed with EPERM", f"errno {a.get('errno')}")
        check("an agent does not decide its own calls" in text and f"(pid {claude})" in text
              and f"(pid {server})" in text and f"{mnt}/pending/{preview}/resolve" in text,
              f"it read back why, naming Claude Code and itself, and where to decide from: {text!r}")

    # --- the decider outside, and the command -------------------------------------------
    try:
        decided_id, before, write_rc = open(os.path.join(work, "decider.tsv")).read().rstrip("\n").split("\t")
    except (OSError, ValueError) as e:
        decided_id = before = write_rc = None
        fail(f"cannot read the decider's record: {e}; see {work}/decider.err")
    check(decided_id == preview, "the decider decided the call the MCP server tried to",
          f"{decided_id} against {preview}")
    check(before == "pending,absent", "after the MCP server's writes the call was still pending and MARK1 absent",
          f"{before}")
    check(write_rc == "0", "the decider's `echo ... > resolve` succeeded", f"write status {write_rc}")
    check(os.path.exists(mark1), f"MARK1 exists: the call ran once the decider resolved it")

    # --- the journal ----------------------------------------------------------------------
    journal = read_jsonl("journal.jsonl")
    session = result.get("session_id")
    refused = [r for r in journal if r.get("outcome") == "refused"]
    check([r.get("event") for r in refused] == ["resolve", f"pending/{preview}/resolve"],
          "the journal has both refusals", json.dumps(refused))
    for r in refused:
        check(r.get("errno") == "EPERM" and r.get("pid") == server and r.get("process") == "python3"
              and r.get("id") == preview and r.get("sessionId") == session
              and r.get("toolUseId") == "toolu_e2e_step2",
              f"the {r.get('event')} refusal names the MCP server (pid {server}) and Claude Code's call",
              json.dumps(r))
    resolves = [r for r in journal if r.get("event") == "resolve" and r.get("outcome") == "ok"]
    if check(len(resolves) == 1, "the journal has one resolve that went through", f"it has {len(resolves)}"):
        r = resolves[0]
        check(r.get("reason") == reason and r.get("id") == preview and r.get("pid") != server,
              f"it is the decider's: reason {r.get('reason')!r}, pid {r.get('pid')}", json.dumps(r))

    # --- what the model received ----------------------------------------------------------
    main = agent_requests(read_jsonl("requests.jsonl"), "Bash")
    results = tool_results(main)
    for step, what in (("toolu_e2e_step1", "the MCP tool"), ("toolu_e2e_step2", "the Bash call")):
        got = results.get(step)
        if check(got is not None, f"the model received a tool_result for {what}"):
            check(not got[1].get("is_error"), f"{what}'s tool_result is a success", text_of(got[1].get("content")))


def check_details(work, marks):
    """Each preview's pending/<id>/detail (saved as detail.N by the decider)
    showed the command that touches its mark."""
    for n, mark in enumerate(marks):
        try:
            detail = json.load(open(os.path.join(work, f"detail.{n}")))
        except (OSError, ValueError) as e:
            detail = None
            fail(f"preview {n + 1}'s pending/<id>/detail was not readable JSON ({e})")
        if detail is not None:
            check(isinstance(detail, dict) and detail.get("command") == f"touch {mark}",
                  f"preview {n + 1}'s pending/<id>/detail showed the tool input {json.dumps(detail)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "write":
        check_write(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "codex":
        check_codex(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "plan":
        check_plan(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "codex-untrusted":
        check_codex_untrusted(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "plugin":
        check_plugin(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "self-approve":
        check_self_approve(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "trace":
        print_trace(sys.argv[2:])
    else:
        check_bash(sys.argv[1:])
    sys.exit(1 if failures else 0)
