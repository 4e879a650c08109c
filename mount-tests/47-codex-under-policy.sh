#!/usr/bin/env bash
# 47: a rules file decides a real agent's calls. The real Codex CLI (npm
# @openai/codex, pinned in scripts/e2e/lib.sh, installed by scripts/setup.sh)
# runs `xdev hook` as its PreToolUse hook on a mount served with `--policy`,
# against the scripted model server on 127.0.0.1 inside `unshare --net`.
# The model asks for three shell calls:
#   - `touch …/ALLOWED`: a rule allows it; it runs with nobody answering, and
#     the journal's decision names the policy and the rule;
#   - `rm …/KEEP`: a rule denies it with a reason; it never runs, and the
#     model reads the rule's reason in its function_call_output;
#   - `mkdir …/ASKED`: no rule, so ask; it waits, pending and not run, until
#     a person outside the agent's processes writes pending/<id>/resolve.
# This is scripts/policy-e2e.sh's Codex run (the same checks, one `ok:` line
# each), with the scenario's binary and client cache. Fails, never skips,
# when Codex cannot be installed.
# time limit: 150 s
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
for tool in unshare ip npm node timeout flock; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (scripts/setup.sh installs what this needs)"
done

log=$SCRATCH/policy-e2e.log
if ! XDEV_CLIENT_CACHE=$CLIENT_CACHE E2E_TIMEOUT=120 \
    bash "$LIB_ROOT/scripts/policy-e2e.sh" codex >"$log" 2>&1; then
    cat "$log" >&2
    fail "scripts/policy-e2e.sh codex failed (its output is above)"
fi
grep -q '^ *ok: ' "$log" || fail "scripts/policy-e2e.sh codex ran no check: $(cat "$log")"
if grep -q '^ *FAIL: ' "$log"; then
    cat "$log" >&2
    fail "a check of scripts/policy-e2e.sh codex failed"
fi
note "$(grep -c '^ *ok: ' "$log") checks passed"
