#!/usr/bin/env bash
# (t) Plan mode with the `yolo` handler, on a daemon of this scenario's own
# (`xdev mount DIR --plan-dir P --plan-handler yolo`, stopped at the end):
#   - plan mode starts off: propose fails EPERM with the SPEC text for DIR;
#   - `xdev plan enter` turns it on; a plan that is not there fails ENOENT
#     with `Plan file not found at <path>. Write the finalized plan to
#     <path> before requesting approval.` and is never swapped for another;
#   - `echo auth > DIR/propose` with auth-plan.md present succeeds with
#     `Plan approved. Implementing now with the current agent.` and plan
#     mode ends, so the next propose is EPERM again.
# The shared mount is not touched (it stays out of plan mode).
. "$(dirname "$0")/lib.sh"
scratch
plans=$SCRATCH/plans
mkdir "$plans"
start_own_daemon --plan-dir "$plans" --plan-handler yolo
P=$OWN_DIR
no_plan="No plan is awaiting approval — $P/propose only accepts a plan title while plan mode is active."
not_found="Plan file not found at $plans/auth-plan.md. Write the finalized plan to $plans/auth-plan.md before requesting approval."
approved="Plan approved. Implementing now with the current agent."

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
