#!/usr/bin/env bash
# (c) reject with nothing pending succeeds with the exact text
# `nothing-to-reject` of expected-texts.
. "$(dirname "$0")/lib.sh"

# Make `last` something else first, so the check below proves a new result.
echo x >"$D/resolve" 2>/dev/null && fail "resolve succeeded with nothing pending"
assert_last "$NOTHING_TO_RESOLVE"

if ! err=$(echo why 2>&1 >"$D/reject"); then
    fail "'echo why > $D/reject' failed: $err"
fi
assert_last "$NOTHING_TO_REJECT"
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"]')" "('reject', True)" "status.json last"
note "ok, last: $NOTHING_TO_REJECT"
