#!/usr/bin/env bash
# (n) Discarding a staged preview: `echo REASON > reject` succeeds with
# `Discarded: <label>. Reason: <reason>` (also in `last`), CMD never runs and `xdev stage`
# exits 3. With --on-reject CMD2, CMD2 runs instead (with XDEV_REASON) and
# its stdout is the reject's result; the stager still exits 3.
. "$(dirname "$0")/lib.sh"
need_xdev

stage_marked plain --label "edit README"
stager=$BG_PID
if ! err=$(echo "not needed" 2>&1 >"$D/reject"); then
    fail "'echo not needed > reject' failed: $err"
fi
assert_last "$(expected discarded label "edit README" reason "not needed")"
wait_exit "$stager" 10000 "xdev stage after its preview was discarded"
assert_eq "$EXIT_CODE" 3 "exit status of xdev stage after discard"
[ ! -e "$MARKER" ] || fail "CMD ran although the preview was discarded"
pending_is 0 || fail "something is still pending after the discard: $(cat "$D/status")"

stage_marked hooked --label "edit Cargo.toml" --on-reject 'echo "reverted ($XDEV_REASON)"'
stager=$BG_PID
out=$(xdev reject "wrong file") || fail "xdev reject failed with status $?"
assert_eq "$out" "reverted (wrong file)" "what xdev reject printed (CMD2's stdout)"
assert_last "reverted (wrong file)"
wait_exit "$stager" 10000 "xdev stage --on-reject after discard"
assert_eq "$EXIT_CODE" 3 "exit status of xdev stage --on-reject after discard"
[ ! -e "$MARKER" ] || fail "CMD ran although the preview was discarded"
note "discard: exit 3, CMD never ran; --on-reject output is the result"
