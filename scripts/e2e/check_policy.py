#!/usr/bin/env python3
"""The assertions of scripts/policy-e2e.sh, over the files one agent's run
left in RUNDIR (the helpers are check.py's).

Usage:
  check_policy.py claude-code|codex RUNDIR ALLOWED KEEP ASKED ALLOW_RULE DENY_RULE DENY_REASON PERSON_REASON DAEMON_PID

The model asked for three shell calls: `touch ALLOWED` (ALLOW_RULE allows
it), `rm KEEP` (DENY_RULE denies it with DENY_REASON), `mkdir ASKED` (no
rule: ask). Checked:
  - the allowed call ran, decided by the policy alone: the journal's
    decision is the daemon's (DAEMON_PID), `"decider": "policy"` with
    ALLOW_RULE, and the agent got a success;
  - the denied call did not run (KEEP is still there), the journal's
    decision is the policy's with DENY_RULE and DENY_REASON, and the
    model read DENY_REASON in the call's tool_result (Claude Code) or
    function_call_output (Codex);
  - the asked call waited: the person (scripts/policy-e2e.sh's loop, outside
    the agent's processes) found it in pending/ and in status, before and
    after a pause, with ASKED absent; its write of pending/<id>/resolve
    succeeded, the journal's decision is the person's (its pid, PERSON_REASON,
    no decider), ASKED exists and the agent got a success;
  - nobody else decided anything: the journal's only decision without
    `"decider": "policy"` is the person's, and nothing was withdrawn.

Prints one `ok:` line per check that holds and one `FAIL:` line per check
that does not; exits 1 when any failed.
"""

import json
import os
import sys

import check as base
from check import check, fail, text_of

DECISION_EVENTS = ("resolve", "reject")


def is_decision(record):
    """Whether a journal record is a decision's outcome (not its intent)."""
    event = record.get("event") or ""
    return record.get("device") is not None and event != "intent" \
        and (event in DECISION_EVENTS or event.endswith(("/resolve", "/reject")))


def person_record(path):
    """The person loop's lines: (ids it saw with their labels, its one resolve or None)."""
    seen, decided = [], None
    try:
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if fields[0] == "seen" and len(fields) == 3:
                    seen.append((fields[1], fields[2]))
                elif fields[0] == "resolve" and len(fields) == 6:
                    decided = dict(id=fields[1], rc=fields[2], before=fields[3], after=fields[4], pid=fields[5])
    except OSError as e:
        fail(f"cannot read the person's record {path}: {e}")
    return seen, decided


def agent_answers(agent):
    """Checks the agent's run ended well; returns step number -> (text the
    model read for that call, whether it was marked an error or None)."""
    answers = {}
    if agent == "claude-code":
        result = base.check_claude_result()
        if result:
            denied = [d.get("tool_use_id") for d in result.get("permission_denials") or []]
            check(denied == ["toolu_e2e_step2"], "Claude Code lists exactly the second (denied) call as denied",
                  f"permission_denials: {denied}")
        main = base.agent_requests(base.read_jsonl("requests.jsonl"), "Bash")
        check(len(main) == 4, "the model got four agent requests (three tool calls, final text)",
              f"it got {len(main)}")
        for step, (_, block) in ((int(k.rsplit("step", 1)[1]), v) for k, v in base.tool_results(main).items()
                                 if str(k).startswith("toolu_e2e_step")):
            answers[step] = (text_of(block.get("content")), block.get("is_error") is True)
    else:
        events, _ = base.codex_run()
        check(any(e.get("type") == "turn.completed" for e in events), "Codex completed its turn")
        for call_id, (_, text) in base.function_outputs(base.read_jsonl("requests.jsonl")).items():
            if str(call_id).startswith("call_e2e_step"):
                answers[int(call_id.rsplit("step", 1)[1])] = (text, None)
    return answers


def ran(agent, answer):
    """Whether the text the model read says the command ran and succeeded."""
    text, is_error = answer
    if agent == "claude-code":
        return is_error is False
    return "exited with code 0" in text


def one_decision(journal, label, what):
    """The one decision record of the call labelled `label`, or None (a FAIL line says so)."""
    records = [r for r in journal if r.get("label") == label and is_decision(r)]
    if check(len(records) == 1, f"the journal has one decision of the {what} call",
             f"decisions: {json.dumps(records)}"):
        return records[0]
    return None


def main(argv):
    agent, rundir, allowed, keep, asked, allow_rule, deny_rule, deny_reason, person_reason, daemon = argv[:10]
    base.work = rundir
    commands = (f"touch {allowed}", f"rm {keep}", f"mkdir {asked}")
    labels = [f"Bash: {c}" for c in commands]
    base.check_network()
    answers = agent_answers(agent)
    journal = base.read_jsonl("journal.jsonl")
    staged = {r.get("label"): r.get("id") for r in journal if r.get("event") == "staged"}
    check(sorted(staged) == sorted(labels), "the journal has the three calls staged, one each",
          f"staged: {list(staged)}")

    # --- allowed: ran, nobody answered -----------------------------------------------------
    check(os.path.exists(allowed), f"ALLOWED exists: the allowed `{commands[0]}` ran")
    r = one_decision(journal, labels[0], "allowed")
    if r is not None:
        check(r.get("event") == f"pending/{r.get('id')}/resolve" and r.get("outcome") == "ok"
              and r.get("decider") == "policy" and r.get("rule") == allow_rule and str(r.get("pid")) == daemon,
              f"the policy resolved it: {r.get('event')}, decider {r.get('decider')}, rule {r.get('rule')!r}, "
              f"writer {r.get('process')} pid {r.get('pid')} (the daemon)", json.dumps(r))
    if check(1 in answers, "the agent answered the model for the allowed call"):
        check(ran(agent, answers[1]), f"the model read that it ran: {answers[1][0]!r}")

    # --- denied: did not run, the model read the rule's reason ------------------------------
    check(os.path.exists(keep), f"KEEP still exists: the denied `{commands[1]}` never ran")
    r = one_decision(journal, labels[1], "denied")
    if r is not None:
        check(r.get("event") == f"pending/{r.get('id')}/reject" and r.get("outcome") == "ok"
              and r.get("decider") == "policy" and r.get("rule") == deny_rule
              and r.get("reason") == deny_reason and str(r.get("pid")) == daemon,
              f"the policy rejected it: {r.get('event')}, rule {r.get('rule')!r}, reason {r.get('reason')!r}, "
              f"writer pid {r.get('pid')} (the daemon)", json.dumps(r))
    if check(2 in answers, "the agent answered the model for the denied call"):
        text, is_error = answers[2]
        where = "tool_result" if agent == "claude-code" else "function_call_output"
        check(deny_reason in text and is_error is not False,
              f"the model read the rule's reason in the denied call's {where}: {text!r}",
              f"is_error {is_error}")

    # --- asked: waited for a person, ran once the person resolved it -------------------------
    seen, decided = person_record(os.path.join(rundir, "person.tsv"))
    print(f"info: the person saw in pending/: {seen}")
    if check(decided is not None, "the person found the asked call in pending/ and resolved it"):
        check(decided["id"] == staged.get(labels[2]), f"it was the asked call: {decided['id']}",
              f"the asked call was staged as {staged.get(labels[2])}")
        check(decided["before"] == "pending,absent" and decided["after"] == "pending,absent",
              "when found and again after the pause, it was listed in pending/ and had not run (no ASKED)",
              f"found: {decided['before']}, after the pause: {decided['after']}")
        check(decided["rc"] == "0", "the person's write of pending/<id>/resolve succeeded",
              f"write status {decided['rc']}")
        status = base.read_text("status.pending") or ""
        check("pending: 1\n" in status and commands[2] in status,
              "status showed it pending (pending: 1, its command)", f"status: {status!r}")
    check(os.path.exists(asked), f"ASKED exists: `{commands[2]}` ran once the person resolved it")
    r = one_decision(journal, labels[2], "asked")
    if r is not None and decided is not None:
        check(r.get("event") == f"pending/{r.get('id')}/resolve" and r.get("outcome") == "ok"
              and r.get("decider") is None and r.get("reason") == person_reason
              and str(r.get("pid")) == decided["pid"],
              f"the person resolved it: {r.get('event')}, reason {r.get('reason')!r}, "
              f"writer {r.get('process')} pid {r.get('pid')}, no decider", json.dumps(r))
    if check(3 in answers, "the agent answered the model for the asked call"):
        check(ran(agent, answers[3]), f"the model read that it ran: {answers[3][0]!r}")

    # --- nobody else decided ---------------------------------------------------------------
    others = [r for r in journal if is_decision(r) and r.get("decider") != "policy"]
    check(len(others) == 1, "the only decision not the policy's is the person's one",
          f"decisions not the policy's: {json.dumps(others)}")
    withdrawn = [r for r in journal if r.get("event") == "withdrawn"]
    check(withdrawn == [], "nothing was withdrawn", json.dumps(withdrawn))


if __name__ == "__main__":
    if len(sys.argv) != 11:
        sys.exit(__doc__)
    main(sys.argv[1:])
    sys.exit(1 if base.failures else 0)
