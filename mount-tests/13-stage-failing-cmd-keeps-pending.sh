#!/usr/bin/env bash
# (m) A CMD that exits non-zero is an apply failure: the resolver's write
# fails with EIO, `last` reads `Apply failed: <stderr tail>` (the last lines
# of CMD's stderr, not its stdout), the preview stays pending at the head
# (even above a newer one) and the stager keeps waiting; a later resolve
# runs CMD again, and a reject then discards it (stager exit 3).
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
runs=$SCRATCH/runs

# 30 lines of stderr: the tail keeps the end (the last line in full), not
# the start.
stage_bg flaky --label "flaky edit" -- sh -c '
echo run >>"$1"
echo "this stdout is not the message"
i=1; while [ $i -le 30 ]; do echo "stderr line $i" >&2; i=$((i + 1)); done
echo "3 tests failed" >&2
exit 1' sh "$runs"
flaky=$ID
flaky_pid=$BG_PID
stage_bg newer --label "newer edit" -- echo newer
newer=$ID
newer_pid=$BG_PID
assert_eq "$(status_json 's["head"]["id"]')" "$newer" "head before the failing apply"

# The head is the newer one: apply the flaky one by id, from Python, to see
# the errno of write(2) itself.
py '
fd = os.open(D + "/pending/" + sys.argv[1] + "/resolve", os.O_WRONLY)
try:
    expect_errno("EIO", os.write, fd, b"try it\n")
finally:
    os.close(fd)
' "$flaky"
last=$(cat "$D/last")
assert_contains "$last" "Apply failed: " "last after a failing CMD"
case "$last" in
"Apply failed: "*"stderr line 30"$'\n'"3 tests failed") ;;
*) fail "last should end with the stderr tail: $(printf '%q' "$last")" ;;
esac
case "$last" in *"stderr line 1"$'\n'*) fail "the stderr tail kept the first line: $(printf '%q' "$last")" ;; esac
case "$last" in *"this stdout"*) fail "the failure message has CMD's stdout: $(printf '%q' "$last")" ;; esac
assert_eq "$(status_json 's["last"]["ok"], s["last"]["errno"]')" "(False, 'EIO')" "status.json last after a failing CMD"

# Still pending, now at the head again (above the newer one); the stager waits.
assert_eq "$(status_json 's["pending"], s["head"]["id"], [e["id"] for e in s["stack"]]')" \
    "(2, '$flaky', ['$flaky', '$newer'])" "the stack after the failed apply"
still_running "$flaky_pid" "the stager of the failed preview"
assert_contains "$(cat "$SCRATCH/flaky.err")" "3 tests failed" "the stager's stderr (CMD's stderr passes through)"

# The shell sees EIO too; CMD ran again.
if err=$(echo "try again" 2>&1 >"$D/resolve"); then
    fail "a resolve of the failing preview succeeded"
fi
assert_contains "$err" "Input/output error" "the shell's error for the second resolve"
assert_eq "$(grep -c . "$runs")" 2 "CMD runs after two failed resolves"
assert_eq "$(status_json 's["head"]["id"]')" "$flaky" "head after the second failure"
still_running "$flaky_pid" "the stager of the failed preview"

# reject discards it: the stager exits 3 and CMD never runs again.
echo "give up" >"$D/reject" || fail "reject of the failing preview failed"
assert_last "$(expected discarded label "flaky edit" reason "give up")"
wait_exit "$flaky_pid" 10000 "the failing preview's stager after reject"
assert_eq "$EXIT_CODE" 3 "exit status of xdev stage after discard"
assert_eq "$(grep -c . "$runs")" 2 "CMD runs after the reject"

# The newer one is untouched, and is the head now.
assert_eq "$(status_json 's["pending"], s["head"]["id"]')" "(1, '$newer')" "the stack after the reject"
echo "ok" >"$D/resolve" || fail "resolve of the newer preview failed"
assert_last "newer"
wait_exit "$newer_pid" 10000 "the newer preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the newer stager"
# Through the CLI: exit 1 and `xdev: EIO: Apply failed: <stderr tail>`, or
# the exit status when CMD printed nothing; a retry after the cause is
# fixed applies it.
flag=$SCRATCH/fixed
stage_bg fragile --label fragile --source-tool patch -- sh -c \
    'if [ -e "$1" ]; then echo fixed; else echo noise >&2; echo boom >&2; exit 2; fi' sh "$flag"
fragile_pid=$BG_PID
assert_contains "$ID" "pending-action:patch:" "the id with --source-tool patch"
xdev resolve go >"$SCRATCH/cli.out" 2>"$SCRATCH/cli.err"
assert_eq "$?:$(cat "$SCRATCH/cli.out")" "1:" "xdev resolve of a failing CMD (status:stdout)"
assert_eq "$(cat "$SCRATCH/cli.err")" "xdev: EIO: Apply failed: noise"$'\n'"boom" "stderr of xdev resolve of a failing CMD"
still_running "$fragile_pid" "the stager of the failed preview"
assert_eq "$(status_json 's["pending"], s["head"]["id"]')" "(1, '$ID')" "the stack after the failed CLI resolve"
touch "$flag"
out=$(xdev resolve "go again") || fail "xdev resolve after the fix failed"
assert_eq "$out" "fixed" "xdev resolve after the fix"
wait_exit "$fragile_pid" 10000 "the fixed preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the fixed preview's stager"

stage_bg quiet --label quiet -- sh -c 'exit 5'
quiet_pid=$BG_PID
xdev resolve go >/dev/null 2>"$SCRATCH/cli.err" && fail "xdev resolve of a CMD exiting 5 succeeded"
assert_eq "$(cat "$SCRATCH/cli.err")" "xdev: EIO: Apply failed: exit status 5" "a CMD failing without stderr"
out=$(xdev reject give up) || fail "xdev reject of the quiet preview failed"
assert_eq "$out" "$(expected discarded label quiet reason "give up")" "xdev reject output"
wait_exit "$quiet_pid" 10000 "the quiet preview's stager"
assert_eq "$EXIT_CODE" 3 "exit status of the quiet preview's stager after discard"

note "failing CMD: EIO, last ended '${last##*$'\n'}', the preview stayed at the head; reject: exit 3"
