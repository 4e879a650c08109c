#!/usr/bin/env bash
# (k) A 20 KiB reason written by bash's `echo` reaches the device in several
# write(2) calls (full chunks of the block size, then the rest); it is one message,
# dispatched once by the write that completes it. Were the chunks dispatched
# separately, the second write would fail with EALREADY and `echo` with it.
. "$(dirname "$0")/lib.sh"

echo x >"$D/resolve" 2>/dev/null && fail "resolve succeeded with nothing pending"
assert_last "$NOTHING_TO_RESOLVE"

reason=$(printf 'r%.0s' $(seq 20480))
[ "${#reason}" -eq 20480 ] || fail "built a reason of ${#reason} bytes"
if ! err=$(echo "$reason" 2>&1 >"$D/reject"); then
    fail "echo of a 20 KiB reason to reject failed: $err"
fi
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"]')" "('reject', True)" "status.json last"
assert_last "$NOTHING_TO_REJECT"
note "20 KiB echo: one message, ok"
