#!/usr/bin/env bash
# (f) O_RDWR: write, then read on the same descriptor returns that write's
# result text and a newline (success or error).
. "$(dirname "$0")/lib.sh"

py '
for device, body, refused, want in (
    ("reject", b"looks wrong\n", None, os.environ["NOTHING_TO_REJECT"]),
    ("resolve", b"tests pass\n", "ENOENT", os.environ["NOTHING_TO_RESOLVE"]),
):
    fd = os.open(D + "/" + device, os.O_RDWR)
    try:
        if refused:
            expect_errno(refused, os.write, fd, body)
        elif os.write(fd, body) != len(body):
            sys.exit("write to %s did not take all %d bytes" % (device, len(body)))
        got = os.read(fd, 65536)
    finally:
        os.close(fd)
    if got != (want + "\n").encode():
        sys.exit("read back after the write to %s: %r, expected %r" % (device, got, want))
'
note "result read back on the same descriptor"
