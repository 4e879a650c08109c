#!/usr/bin/env bash
# (d) propose outside plan mode fails with EPERM and the exact text of
# SPEC §3, which names this mount's propose file.
. "$(dirname "$0")/lib.sh"

if err=$(echo my-plan 2>&1 >"$D/propose"); then
    fail "'echo my-plan > $D/propose' succeeded outside plan mode"
fi
assert_contains "$err" "Operation not permitted" "the shell's error for 'echo my-plan > propose'"
assert_last "$NO_PLAN"

py '
fd = os.open(D + "/propose", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("EPERM", os.write, fd, b"my-plan\n")
finally:
    os.close(fd)
'
assert_last "$NO_PLAN"
note "EPERM, last: $NO_PLAN"
