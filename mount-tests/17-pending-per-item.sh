#!/usr/bin/env bash
# (q) pending/ lists one directory per pending preview, head (newest)
# first, each with label, source, resolve, reject. Writing
# pending/<id>/resolve applies exactly that preview even when it is not
# the head; the head is untouched. A decided id is gone: looking it up,
# opening its files, and writing a descriptor opened before the decision
# all fail with ENOENT, and so does `xdev resolve --id` (exit 1).
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

stage_bg older --label "older edit" --source-tool patch -- echo "older applied"
older=$ID
older_pid=$BG_PID
stage_bg middle --label "middle edit" -- echo "middle applied"
middle=$ID
middle_pid=$BG_PID
stage_bg newer --label "newer edit" -- echo "newer applied"
newer=$ID
newer_pid=$BG_PID

# Listing order: head first (directory order, as `ls -U` shows it), the
# same as status.json's stack.
assert_eq "$(ls -U "$D/pending" | tr '\n' ' ')" "$newer $middle $older " "ls -U pending/ (head first)"
assert_eq "$(status_json '" ".join(e["id"] for e in s["stack"])')" "$newer $middle $older" "status.json stack"
assert_eq "$(ls -U "$D/pending/$older" | tr '\n' ' ')" "label source resolve reject " "ls -U pending/<id>/"
assert_content "$D/pending/$older/label" "older edit"
assert_content "$D/pending/$older/source" "patch"
assert_content "$D/pending/$middle/source" "external"

# Keep a descriptor on the middle item's resolve, opened while it is pending.
exec {early}>"$D/pending/$middle/resolve" || fail "cannot open pending/$middle/resolve"

# Apply the middle one (not the head) by id.
if ! err=$(echo "middle first" 2>&1 >"$D/pending/$middle/resolve"); then
    fail "'echo > pending/$middle/resolve' failed: $err"
fi
assert_last "middle applied"
wait_exit "$middle_pid" 10000 "the middle preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the middle preview's stager"
still_running "$newer_pid" "the head's stager"
still_running "$older_pid" "the oldest preview's stager"
assert_eq "$(ls -U "$D/pending" | tr '\n' ' ')" "$newer $older " "ls -U pending/ after deciding the middle"
assert_eq "$(status_json 's["head"]["id"]')" "$newer" "head after deciding the middle"

# The decided id is gone.
[ ! -e "$D/pending/$middle" ] || fail "pending/$middle still exists after it was applied"
py '
base = D + "/pending/" + sys.argv[1]
expect_errno("ENOENT", os.stat, base)
expect_errno("ENOENT", os.open, base + "/resolve", os.O_WRONLY)
expect_errno("ENOENT", os.open, base + "/label", os.O_RDONLY)
' "$middle"
if err=$(echo "again" 2>&1 >&"$early"); then
    fail "a write on a descriptor opened before the decision succeeded"
fi
exec {early}>&-
assert_contains "$err" "No such file or directory" "writing the early descriptor after the decision"
if err=$(xdev resolve --id "$middle" "again" 2>&1); then
    fail "xdev resolve --id of a decided id succeeded: $err"
fi
assert_contains "$err" "xdev: ENOENT: " "xdev resolve --id of a decided id"

# Reject the oldest by id with the CLI; the head stays.
out=$(xdev reject --id "$older" "not this one") || fail "xdev reject --id $older failed"
assert_eq "$out" "$(expected discarded label "older edit" reason "not this one")" "xdev reject --id output"
wait_exit "$older_pid" 10000 "the oldest preview's stager"
assert_eq "$EXIT_CODE" 3 "exit status of the oldest preview's stager"
assert_eq "$(ls -U "$D/pending" | tr '\n' ' ')" "$newer " "ls -U pending/ with only the head left"

# And the head through its own item directory.
echo "now the head" >"$D/pending/$newer/resolve" || fail "resolve of the head by id failed"
assert_last "newer applied"
wait_exit "$newer_pid" 10000 "the head's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the head's stager"
assert_eq "$(ls -A "$D/pending")" "" "pending/ when nothing is pending"
# By id with the CLI (the result on stdout, the head untouched), and
# pending/<id>/reject on O_RDWR (the result read back on the descriptor).
stage_bg a --label a -- echo "applied A"
a=$ID
a_pid=$BG_PID
stage_bg b --label b -- sh -c 'echo ran >"$1"' sh "$SCRATCH/b-ran"
b=$ID
b_pid=$BG_PID
out=$(xdev resolve --id "$a" "only a") || fail "xdev resolve --id $a failed"
assert_eq "$out" "applied A" "xdev resolve --id output"
wait_exit "$a_pid" 10000 "the stager of a"
assert_eq "$EXIT_CODE" 0 "exit status of the stager of a"
still_running "$b_pid" "the head's stager"
assert_eq "$(status_json 's["head"]["id"]')" "$b" "head after xdev resolve --id"
py '
fd = os.open(D + "/pending/" + sys.argv[1] + "/reject", os.O_RDWR)
try:
    n = os.write(fd, b"not now\n")
    answer = os.read(fd, 65536)
finally:
    os.close(fd)
if n != 8 or answer != (sys.argv[2] + "\n").encode():
    sys.exit("pending/<id>/reject via O_RDWR: write returned %r, read back %r" % (n, answer))
' "$b" "$(expected discarded label b reason "not now")"
wait_exit "$b_pid" 10000 "the stager of b"
assert_eq "$EXIT_CODE" 3 "exit status of the stager of b after discard"
[ ! -e "$SCRATCH/b-ran" ] || fail "CMD of b ran although it was discarded"

note "pending/: head-first listing, middle applied by id, decided id ENOENT"
