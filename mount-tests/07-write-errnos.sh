#!/usr/bin/env bash
# (g) The write errnos that need nothing staged (docs/semantics.md, Writing):
#   64 KiB + 1 bytes in one write -> EMSGSIZE, nothing dispatched
#   exactly 64 KiB                -> accepted whole
#   non-UTF-8 body                -> EINVAL
#   a second write on one descriptor -> the first write's outcome again
. "$(dirname "$0")/lib.sh"

py '
def write_once(device, data, flags=os.O_WRONLY | os.O_TRUNC):
    fd = os.open(D + "/" + device, flags)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)

def last():
    with open(D + "/last") as f:
        return f.read()

def last_record():
    with open(D + "/status.json") as f:
        return json.load(f)["last"]

def nothing_dispatched(what):
    # A dispatched reject would leave the reject text in `last`. Recording
    # the refusal itself as an error result is allowed.
    rec = last_record()
    if last() == before:
        return
    if rec and rec.get("ok") is False and rec.get("errno") == "EMSGSIZE":
        print("note: %s refusal recorded in last: %r" % (what, rec["text"]))
        return
    sys.exit("%s dispatched something: last is %r (status.json last %r)" % (what, last(), rec))

# A known `last` (from resolve), so a dispatched reject would show.
try:
    write_once("resolve", b"x\n")
except OSError:
    pass
before = last()
if before != os.environ["NOTHING_TO_RESOLVE"] + "\n":
    sys.exit("last after resolve: %r" % before)

# 64 KiB + 1 in one write: EMSGSIZE, never a short count, nothing dispatched.
fd = os.open(D + "/reject", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("EMSGSIZE", os.write, fd, b"a" * (64 * 1024 + 1))
finally:
    os.close(fd)
nothing_dispatched("a 64 KiB + 1 write")

# 1 MiB: EMSGSIZE too.
fd = os.open(D + "/reject", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("EMSGSIZE", os.write, fd, b"a" * (1024 * 1024))
finally:
    os.close(fd)
nothing_dispatched("a 1 MiB write")

# Exactly 64 KiB (ending in a newline, so it completes the message) is
# accepted whole and dispatched.
n = write_once("reject", b"a" * (64 * 1024 - 1) + b"\n")
if n != 64 * 1024:
    sys.exit("64 KiB write to reject returned %d" % n)
if last() != os.environ["NOTHING_TO_REJECT"] + "\n":
    sys.exit("last after a 64 KiB reject: %r" % last())

# Non-UTF-8: EINVAL.
fd = os.open(D + "/reject", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("EINVAL", os.write, fd, b"bad \xff\xfe bytes\n")
finally:
    os.close(fd)

# Second write on one descriptor: the outcome of the first again (success
# with its own count here; the errno of a failed first one).
fd = os.open(D + "/reject", os.O_WRONLY | os.O_TRUNC)
try:
    n = os.write(fd, b"first\n")
    if n != 6:
        sys.exit("first write returned %d" % n)
    n = os.write(fd, b"second, longer\n")
    if n != 15:
        sys.exit("second write returned %d" % n)
finally:
    os.close(fd)
fd = os.open(D + "/resolve", os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno("ENOENT", os.write, fd, b"first\n")
    expect_errno("ENOENT", os.write, fd, b"second\n")
finally:
    os.close(fd)
'
note "EMSGSIZE, 64 KiB whole, EINVAL, a second write repeats the first outcome"
