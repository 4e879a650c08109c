#!/usr/bin/env bash
# (f) O_RDWR: write, then read on the same descriptor returns that write's
# result text and a newline (success or error).
. "$(dirname "$0")/lib.sh"

py '
fd = os.open(D + "/reject", os.O_RDWR)
try:
    n = os.write(fd, b"looks wrong\n")
    if n != 12:
        sys.exit("write to reject returned %d, expected 12" % n)
    got = os.read(fd, 65536)
finally:
    os.close(fd)
want = (os.environ["NOTHING_TO_REJECT"] + "\n").encode()
if got != want:
    sys.exit("read back after reject: %r, expected %r" % (got, want))

fd = os.open(D + "/resolve", os.O_RDWR)
try:
    expect_errno("ENOENT", os.write, fd, b"tests pass\n")
    got = os.read(fd, 65536)
finally:
    os.close(fd)
want = (os.environ["NOTHING_TO_RESOLVE"] + "\n").encode()
if got != want:
    sys.exit("read back after failed resolve: %r, expected %r" % (got, want))
'
note "result read back on the same descriptor"
