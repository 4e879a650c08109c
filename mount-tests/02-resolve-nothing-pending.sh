#!/usr/bin/env bash
# (b) resolve with nothing pending: the write fails with ENOENT (the shell
# reports it) and `last` then reads the exact text of SPEC §3.
. "$(dirname "$0")/lib.sh"

if err=$(echo x 2>&1 >"$D/resolve"); then
    fail "'echo x > $D/resolve' succeeded with nothing pending"
fi
assert_contains "$err" "No such file or directory" "the shell's error for 'echo x > resolve'"
assert_last "$NOTHING_TO_RESOLVE"

py '
fd = os.open(D + "/resolve", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("ENOENT", os.write, fd, b"x\n")
finally:
    os.close(fd)
'
assert_last "$NOTHING_TO_RESOLVE"
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"], s["last"]["errno"]')" "('resolve', False, 'ENOENT')" "status.json last"
assert_contains "$(cat "$D/status")" "last: resolve error ENOENT" "status after the failed resolve"
note "ENOENT, last: $NOTHING_TO_RESOLVE"
