#!/usr/bin/env bash
# (u) Plan mode with the `review` handler, on a daemon of this scenario's
# own started in plan mode (--plan-mode): `echo auth > propose` blocks until a reviewer decides; meanwhile a
# second propose fails EBUSY and `xdev plan status` shows the plan under
# review. `xdev plan approve --feedback` releases the writer with the
# approval text plus the feedback and ends plan mode; `xdev plan refine`
# releases it with the refinement text plus the feedback and keeps plan
# mode on; the reviewer's plan/ctl records in the journal name the plan
# and the outcome; killing a waiting proposer cancels its review, and so
# does `xdev plan exit` (the proposer gets ECANCELED).
. "$(dirname "$0")/lib.sh"
scratch
plans=$SCRATCH/plans
mkdir "$plans"
start_own_daemon --plan-dir "$plans" --plan-handler review --plan-mode
P=$OWN_DIR
printf '# Auth\n\n1. Add a login endpoint\n' >"$plans/auth-plan.md"

under_review() { [ "$(D=$P status_json 's["planMode"]')" = True ] &&
    xdev plan status --mount "$P" | grep -q '"underReview":{"slug":"auth"'; }
nothing_under_review() { xdev plan status --mount "$P" | grep -q '"underReview":null'; }

assert_eq "$(D=$P status_json 's["planMode"]')" "True" "planMode of a daemon started with --plan-mode"

# 1. approve with feedback.
bg proposer sh -c 'echo auth > "$1/propose" && cat "$1/last"' sh "$P"
proposer=$BG_PID
wait_until 10000 "the plan under review in xdev plan status" under_review
sleep 0.2
still_running "$proposer" "the proposer (a review write blocks until the decision)"
if err=$(echo auth 2>&1 >"$P/propose"); then
    fail "a second propose during the review succeeded"
fi
assert_contains "$err" "Device or resource busy" "the shell's error for a second propose (EBUSY)"
out=$(xdev plan approve --mount "$P" --feedback "ship it") || fail "xdev plan approve failed"
approved=$(expected plan-approved-review path "$plans/auth-plan.md")
assert_eq "$out" "$approved"$'\n\n'"Reviewer feedback: ship it" "xdev plan approve --feedback output"
wait_exit "$proposer" 10000 "the proposer after the approval"
assert_eq "$EXIT_CODE" 0 "exit status of the proposer after the approval"
assert_eq "$(cat "$SCRATCH/proposer.out")" "$out" "what the proposer's write answered (last)"
assert_eq "$(D=$P status_json 's["planMode"]')" "False" "planMode after the approval"

# 2. refine: feedback to the writer, plan mode stays on.
xdev plan enter --mount "$P" >/dev/null || fail "xdev plan enter failed"
bg refined "$XDEV_BIN" propose --mount "$P" auth
proposer=$BG_PID
wait_until 10000 "the plan under review" under_review
out=$(xdev plan refine --mount "$P" "split step 1 in two") || fail "xdev plan refine failed"
refine=$(expected plan-refine slug auth dir "$P")
assert_contains "$out" "$refine" "xdev plan refine output"
assert_contains "$out" "split step 1 in two" "xdev plan refine output"
wait_exit "$proposer" 10000 "the proposer after the refinement"
assert_eq "$EXIT_CODE" 0 "exit status of xdev propose after a refinement"
assert_eq "$(cat "$SCRATCH/refined.out")" "$out" "what xdev propose printed after the refinement"
assert_eq "$(D=$P status_json 's["planMode"]')" "True" "planMode after a refinement"
# The reviewer's writes to plan/ctl name the plan they decided in the
# journal, as the proposer's writes do.
ctl_plans=$(D=$P log_records 'r["event"] == "plan/ctl" and r.get("plan")' | py '
for line in sys.stdin:
    plan = json.loads(line)["plan"]
    print(plan["title"], plan["outcome"], plan["planPath"])')
assert_eq "$ctl_plans" "auth approved $plans/auth-plan.md"$'\n'"auth refine $plans/auth-plan.md" "the plans of the reviewer's plan/ctl records"

# 3. killing a waiting proposer cancels its review.
bg doomed sh -c 'echo auth > "$1/propose"' sh "$P"
proposer=$BG_PID
wait_until 10000 "the plan under review" under_review
disown "$proposer"
kill -KILL "$proposer"
wait_until 10000 "the review cancelled after its proposer was killed" nothing_under_review
if err=$(xdev plan approve --mount "$P" 2>&1); then
    fail "xdev plan approve with nothing under review succeeded: $err"
fi
assert_eq "$err" "xdev: ENOENT: No plan is under review." "xdev plan approve with nothing under review"

# 4. leaving plan mode cancels the review of a waiting proposer.
bg exiting "$XDEV_BIN" propose --mount "$P" auth
proposer=$BG_PID
wait_until 10000 "the plan under review" under_review
out=$(xdev plan exit --mount "$P") || fail "xdev plan exit failed"
assert_eq "$out" "Plan mode exited." "xdev plan exit"
wait_exit "$proposer" 10000 "the proposer after xdev plan exit"
assert_eq "$EXIT_CODE" 1 "exit status of xdev propose cancelled by xdev plan exit"
assert_contains "$(cat "$SCRATCH/exiting.err")" "xdev: ECANCELED: " "stderr of the cancelled xdev propose"
assert_eq "$(D=$P status_json 's["planMode"]')" "False" "planMode after xdev plan exit"

stop_own_daemon
note "review: blocked until approve (feedback), EBUSY meanwhile, refine keeps plan mode, kill cancels"
