#!/usr/bin/env bash
# (t) Plan mode with the `yolo` handler, on a daemon of this scenario's own
# (`xdev mount DIR --plan-dir P --plan-handler yolo`, stopped at the end):
#   - plan mode starts off: propose fails EPERM with the `no-plan` text of
#     expected-texts for DIR;
#   - `xdev plan enter` turns it on; a plan that is not there fails ENOENT
#     with `Plan file not found at <path>. Write the finalized plan to
#     <path> before requesting approval.` and is never swapped for another;
#   - in plan mode, resolve and reject with nothing pending add the hint to
#     write the plan's title to DIR/propose instead;
#   - `echo auth > DIR/propose` with auth-plan.md present succeeds with
#     `Plan approved. Implementing now with <target>.` (the daemon's
#     --execute-with) and plan mode ends, so the next propose is EPERM
#     again; `xdev plan status` names the handler and the decision;
#   - status.json's `last.plan` and the journal's propose record name the
#     plan decided (title, plan path, outcome).
# The shared mount is not touched (it stays out of plan mode).
. "$(dirname "$0")/lib.sh"
scratch
plans=$SCRATCH/plans
mkdir "$plans"
start_own_daemon --plan-dir "$plans" --plan-handler yolo --execute-with impl-bot
P=$OWN_DIR
no_plan=$(expected no-plan dir "$P")
not_found=$(expected plan-not-found path "$plans/auth-plan.md")
approved=$(expected plan-approved-yolo target impl-bot)

[ -d "$P/plan" ] || fail "$P/plan is missing on a mount with --plan-dir"
assert_eq "$(D=$P status_json 's["planMode"]')" "False" "planMode at start"

# Outside plan mode: EPERM.
if err=$(echo auth 2>&1 >"$P/propose"); then
    fail "propose outside plan mode succeeded"
fi
assert_contains "$err" "Operation not permitted" "the shell's error for propose outside plan mode"
assert_content "$P/last" "$no_plan"

out=$(xdev plan enter --mount "$P") || fail "xdev plan enter failed"
assert_eq "$out" "Plan mode entered." "xdev plan enter"
assert_eq "$(D=$P status_json 's["planMode"]')" "True" "planMode after xdev plan enter"
assert_contains "$(cat "$P/status")" "plan mode: on" "status in plan mode"

# Nothing pending in plan mode: the texts point at propose.
hint=$(expected plan-hint dir "$P")
echo x >"$P/resolve" 2>/dev/null && fail "resolve with nothing pending succeeded in plan mode"
assert_content "$P/last" "$NOTHING_TO_RESOLVE$hint"
echo x >"$P/reject" || fail "reject with nothing pending failed in plan mode"
assert_content "$P/last" "$NOTHING_TO_REJECT$hint"

# A named plan that is missing: ENOENT with the exact text, even though
# another plan file exists.
echo "# Other" >"$plans/other-plan.md"
D=$P py '
fd = os.open(D + "/propose", os.O_WRONLY)
try:
    expect_errno("ENOENT", os.write, fd, b"auth\n")
finally:
    os.close(fd)
'
assert_content "$P/last" "$not_found"
assert_eq "$(D=$P status_json 's["planMode"]')" "True" "planMode after a failed propose"

# The plan is there: approved at once, plan mode ends.
printf '# Auth\n\n1. Add a login endpoint\n' >"$plans/auth-plan.md"
if ! err=$(echo auth 2>&1 >"$P/propose"); then
    fail "'echo auth > propose' in plan mode with auth-plan.md failed: $err"
fi
assert_content "$P/last" "$approved"
assert_eq "$(D=$P status_json 's["planMode"]')" "False" "planMode after a yolo approval"
# What a review UI reads: the plan the handler decided, in status.json and
# in the journal's propose record.
plan_seen="{'outcome': 'approved', 'planPath': '$plans/auth-plan.md', 'title': 'auth'}"
assert_eq "$(D=$P status_json 'dict(sorted(s["last"]["plan"].items()))')" "$plan_seen" "status.json last.plan"
propose_record=$(D=$P log_records 'r["event"] == "propose" and r["outcome"] == "ok"')
record_plan=$(py '
print(dict(sorted(json.loads(sys.argv[1])["plan"].items())))' "$propose_record")
assert_eq "$record_plan" "$plan_seen" "the plan in the journal record of the propose"
plan_status=$(xdev plan status --mount "$P") || fail "xdev plan status failed"
py '
s = json.loads(sys.argv[1])
if (s["handler"], s["lastDecision"]) != ("yolo", sys.argv[2]):
    sys.exit("xdev plan status after the approval: %r" % s)
' "$plan_status" "$approved"
echo auth >"$P/propose" 2>/dev/null && fail "propose after the approval (plan mode over) succeeded"
assert_content "$P/last" "$no_plan"

# The CLI: exit 0 with the answer on stdout, exit 1 with ERRNO on stderr.
xdev plan enter --mount "$P" >/dev/null || fail "xdev plan enter failed"
out=$(xdev propose --mount "$P" auth) || fail "xdev propose auth failed"
assert_eq "$out" "$approved" "xdev propose auth"
if err=$(xdev propose --mount "$P" auth 2>&1); then
    fail "xdev propose outside plan mode exited 0"
fi
assert_eq "$err" "xdev: EPERM: $no_plan" "xdev propose outside plan mode"

stop_own_daemon
note "yolo: EPERM outside plan mode, ENOENT for a missing plan, '$approved'"
