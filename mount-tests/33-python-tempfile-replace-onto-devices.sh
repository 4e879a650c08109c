#!/usr/bin/env bash
# Python's atomic-write idiom onto the devices: a draft made by
# tempfile.NamedTemporaryFile(dir=D, delete=False) (open with
# O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, named tmpXXXXXXXX), written
# and closed, then os.replace(draft, D + "/resolve") (rename(2)).
#
#   - a preview pending: os.replace succeeds, CMD runs once, the stager
#     exits 0; the draft is gone; os.stat of resolve in the same process
#     reports st_size == the draft's length.
#   - nothing pending: FileNotFoundError (ENOENT); nothing runs; the draft
#     is consumed anyway (gone, and a later unlink is ENOENT).
#   - a draft that is not UTF-8 onto resolve: EINVAL, nothing dispatched,
#     the draft is KEPT (the writer unlinks it, which succeeds).
#   - a draft onto status (not a device): EPERM, the draft is kept.
#   - a draft made in pending/<id>/ and replaced onto pending/<id>/resolve
#     applies exactly that preview.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
pid_file=$SCRATCH/py.pid
tok="tmp-$$-$RANDOM" # in every reason: the journal outlives scenarios

# 1. A preview pending: applied once; stat shows the draft's length.
stage_counted replace "tempfile replace"
stager=$BG_PID
py '
import tempfile
note_pid(sys.argv[1])
body = ("applied by os.replace " + sys.argv[2] + "\n").encode()
with tempfile.NamedTemporaryFile(dir=D, delete=False) as tmp:
    tmp.write(body)
draft = tmp.name
if os.path.dirname(draft) != D:
    sys.exit("the draft %r is not in the mount" % draft)
with open(D + "/status.json") as f:
    pending = json.load(f)["pending"]
if pending != 1:
    sys.exit("status.json shows %r pending while a draft exists (drafts are not previews)" % pending)
os.replace(draft, D + "/resolve")
if os.path.lexists(draft):
    sys.exit("the draft %s is still there after a successful os.replace" % draft)
size = os.stat(D + "/resolve").st_size
if size != len(body):
    sys.exit("os.stat(resolve).st_size after replacing a %d-byte draft: %d" % (len(body), size))
' "$pid_file" "$tok"
assert_last "applied: applied by os.replace $tok"
wait_exit "$stager" 10000 "xdev stage after os.replace onto resolve"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after os.replace onto resolve"
assert_eq "$(runs_of "$ID")" 1 "CMD runs for the preview applied by os.replace"
assert_decision "applied by os.replace $tok" resolve ok - "$(cat "$pid_file")" python3
assert_no_drafts "after os.replace onto resolve"

# 2. Nothing pending: FileNotFoundError, and the draft is consumed anyway.
py '
import tempfile
note_pid(sys.argv[1])
with tempfile.NamedTemporaryFile(dir=D, delete=False) as tmp:
    tmp.write(("nothing to apply " + sys.argv[2]).encode())
try:
    os.replace(tmp.name, D + "/resolve")
except FileNotFoundError as e:
    if e.errno != errno.ENOENT:
        sys.exit("FileNotFoundError with errno %r" % e.errno)
else:
    sys.exit("os.replace onto resolve with nothing pending succeeded")
if os.path.lexists(tmp.name):
    sys.exit("the draft %s is still there after the failed os.replace" % tmp.name)
expect_errno("ENOENT", os.unlink, tmp.name)
' "$pid_file" "$tok"
assert_last "$NOTHING_TO_RESOLVE"
assert_decision "nothing to apply $tok" resolve error ENOENT "$(cat "$pid_file")" python3
assert_eq "$(runs_of all)" 1 "CMD runs in total after the failed os.replace"
assert_no_drafts "after os.replace onto resolve with nothing pending"

# 3. Refused renames keep the draft: not UTF-8 onto resolve (EINVAL, with a
# preview pending that stays pending), and any draft onto status (EPERM).
stage_counted kept "kept pending"
stager=$BG_PID
py '
import tempfile
def draft(body):
    with tempfile.NamedTemporaryFile(dir=D, delete=False) as tmp:
        tmp.write(body)
    return tmp.name
bad = draft(b"caf\xe9 latin-1")
expect_errno("EINVAL", os.replace, bad, D + "/resolve")
if not os.path.exists(bad):
    sys.exit("the non-UTF-8 draft is gone after its refused rename")
with open(bad, "rb") as f:
    kept = f.read()
if kept != b"caf\xe9 latin-1":
    sys.exit("the kept draft reads %r" % kept)
os.unlink(bad)
plain = draft(b"not a device")
expect_errno("EPERM", os.replace, plain, D + "/status")
if not os.path.exists(plain):
    sys.exit("the draft is gone after its rename onto status was refused")
os.unlink(plain)
'
still_running "$stager" "the stager of the preview no rename decided"
assert_eq "$(runs_of "$ID")" 0 "CMD runs after the refused renames"
pending_is 1 || fail "the preview is not pending any more after the refused renames: $(cat "$D/status")"
assert_no_drafts "after the refused renames (the writer unlinked its drafts)"

# 4. A draft in pending/<id>/ onto pending/<id>/resolve: that preview, once.
py '
import tempfile
item = D + "/pending/" + sys.argv[1]
with tempfile.NamedTemporaryFile(dir=item, delete=False) as tmp:
    tmp.write(b"applied by id\n")
names = sorted(os.listdir(D + "/pending"))
if names != [sys.argv[1]]:
    sys.exit("pending/ lists %r while a draft is being written (drafts are not items)" % names)
os.replace(tmp.name, item + "/resolve")
if os.path.lexists(tmp.name):
    sys.exit("the draft %s is still there after os.replace onto pending/<id>/resolve" % tmp.name)
' "$ID"
assert_last "applied: applied by id"
wait_exit "$stager" 10000 "xdev stage after os.replace onto pending/<id>/resolve"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after os.replace onto pending/<id>/resolve"
assert_eq "$(runs_of "$ID")" 1 "CMD runs for the preview applied through pending/<id>/resolve"
assert_eq "$(runs_of all)" 2 "CMD runs in total"
assert_no_drafts "after os.replace onto pending/<id>/resolve"
pending_is 0 || fail "something is still pending: $(cat "$D/status")"
note "tempfile + os.replace: applied, ENOENT (draft consumed), EINVAL/EPERM (draft kept), per-item resolve"
