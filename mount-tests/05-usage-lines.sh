#!/usr/bin/env bash
# (e) Reading a device on a descriptor that has not written returns its
# usage line (`usage-*` of expected-texts; docs/semantics.md, Reading)
# naming this mount, every time, also on O_RDWR.
. "$(dirname "$0")/lib.sh"

assert_content "$D/resolve" "$USAGE_RESOLVE"
assert_content "$D/reject" "$USAGE_REJECT"
assert_content "$D/propose" "$USAGE_PROPOSE"
# Reading dispatches nothing and can be repeated.
assert_eq "$(cat "$D/resolve")" "$USAGE_RESOLVE" "second read of resolve"

py '
for device, want in (("resolve", os.environ["USAGE_RESOLVE"]),
                     ("reject", os.environ["USAGE_REJECT"]),
                     ("propose", os.environ["USAGE_PROPOSE"])):
    fd = os.open(D + "/" + device, os.O_RDWR)
    try:
        got = os.read(fd, 65536)
    finally:
        os.close(fd)
    if got.rstrip(b"\n") != want.encode():
        sys.exit("O_RDWR read of %s before any write: %r, expected %r" % (device, got, want))
'
note "usage lines match"
