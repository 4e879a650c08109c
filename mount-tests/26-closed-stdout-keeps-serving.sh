#!/usr/bin/env bash
# (z) `xdev mount D | true`: a daemon whose stdout reader is gone before the
# ready line keeps serving (the failed line is logged on stderr, no panic);
# `cat D/status` answers, and SIGTERM still unmounts it and exits 0. Runs a
# daemon of its own on a temp dir.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

dir=$(mktemp -d "${TMPDIR:-/tmp}/xdev-$SCENARIO-mount.XXXXXX") || fail "mktemp failed"
mkfifo "$SCRATCH/stdout" || fail "mkfifo failed"
"$XDEV_BIN" mount "$dir" >"$SCRATCH/stdout" 2>"$SCRATCH/daemon.err" </dev/null &
pid=$!
OWN_DAEMONS+=("$pid $dir")
# Open the reading end (which lets the daemon's open of its stdout finish),
# then close it at once: the ready line then meets a closed pipe (EPIPE).
exec {reader}<"$SCRATCH/stdout"
exec {reader}<&-

wait_until 10000 "the daemon answers status" grep -sqx "pending: 0" "$dir/status"
# The ready line is printed once the mount answers: its failure comes after.
wait_until 10000 "the daemon's note of the failed ready line" \
    grep -sqF "cannot print a line; carrying on" "$SCRATCH/daemon.err"
kill -0 "$pid" 2>/dev/null || fail "the daemon exited: $(cat "$SCRATCH/daemon.err")"
case "$(cat "$SCRATCH/daemon.err")" in
*panicked*) fail "the daemon panicked: $(cat "$SCRATCH/daemon.err")" ;;
esac

OWN_PID=$pid OWN_DIR=$dir stop_own_daemon
note "ready line to a closed pipe: logged, status answered, SIGTERM exit 0, unmounted"
