#!/usr/bin/env bash
# (h) `: > resolve` (open with O_TRUNC, close, no write) succeeds and
# dispatches nothing; truncating a device to 0 succeeds, any other size
# fails with EINVAL.
. "$(dirname "$0")/lib.sh"

echo why >"$D/reject" || fail "reject failed"
assert_last "$NOTHING_TO_REJECT"

: >"$D/resolve" || fail "': > $D/resolve' failed"
# A dispatched resolve would have set last to the ENOENT text.
assert_last "$NOTHING_TO_REJECT"
: >>"$D/resolve" || fail "': >> $D/resolve' failed"
assert_last "$NOTHING_TO_REJECT"

if truncate -s 5 "$D/resolve" 2>/dev/null; then
    fail "'truncate -s 5 $D/resolve' succeeded"
fi
py 'expect_errno("EINVAL", os.truncate, D + "/resolve", 5)'

truncate -s 0 "$D/resolve" || fail "'truncate -s 0 $D/resolve' failed"
py 'os.truncate(D + "/resolve", 0)'
assert_last "$NOTHING_TO_REJECT"
note "O_TRUNC and size 0 ok, size 5 EINVAL, nothing dispatched"
