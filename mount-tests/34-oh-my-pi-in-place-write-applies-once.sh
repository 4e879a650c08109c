#!/usr/bin/env bash
# oh-my-pi's write tool writes in place, replayed syscall for syscall:
# open(resolve, O_WRONLY|O_CREAT, 0644) (no O_TRUNC), one write of the
# body, ftruncate(fd, len(body)) -- which must succeed -- and close. The
# preview is applied once (by the write; the truncate and the close
# dispatch nothing), the stager exits 0, and no scratch file appears.
# (tests/mount.rs an_in_place_writer_may_truncate_to_what_it_wrote covers
# the other truncate sizes and O_EXCL in-process; this is the real mount.)
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
tok="omp-$$-$RANDOM" # a reason of this run's own (the journal outlives scenarios)

stage_counted omp "oh-my-pi write"
stager=$BG_PID
py '
note_pid(sys.argv[1])
body = ("applied in place " + sys.argv[2] + "\n").encode()
fd = os.open(D + "/resolve", os.O_WRONLY | os.O_CREAT, 0o644)
try:
    n = os.write(fd, body)
    if n != len(body):
        sys.exit("write returned %d for %d bytes" % (n, len(body)))
    os.ftruncate(fd, len(body))
finally:
    os.close(fd)
' "$SCRATCH/py.pid" "$tok"
assert_last "applied: applied in place $tok"
wait_exit "$stager" 10000 "xdev stage after the in-place write"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after the in-place write"
assert_eq "$(runs_of all)" 1 "CMD runs after the in-place write"
assert_decision "applied in place $tok" resolve ok - "$(cat "$SCRATCH/py.pid")" python3
assert_no_drafts "after the in-place write"
note "oh-my-pi in place: open(O_CREAT) + write + ftruncate(len) + close applied once"
