#!/usr/bin/env bash
# (v) `xdev run -- CMD...` mounts a private mount, runs CMD with XDEV_DIR
# set to it (the devices work there), exits with CMD's exit code (7 here;
# 128 + N when CMD is killed by signal N) and leaves nothing mounted and
# no directory behind. With --mount DIR (missing) it mounts there, and
# removes DIR afterwards.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

xdev run -- sh -c '
echo "$XDEV_DIR"
test -f "$XDEV_DIR/status.json" || exit 90
echo "inside" > "$XDEV_DIR/reject" || exit 91
exit 7' >"$SCRATCH/run.out" 2>"$SCRATCH/run.err"
status=$?
[ "$status" -ne 90 ] || fail "CMD saw no mount at \$XDEV_DIR"
[ "$status" -ne 91 ] || fail "reject in the private mount failed"
assert_eq "$status" 7 "exit status of xdev run -- sh -c 'exit 7' (stderr: $(cat "$SCRATCH/run.err"))"
private=$(head -n 1 "$SCRATCH/run.out")
if [ -z "$private" ] || [ "$private" = "$D" ]; then
    fail "xdev run exported XDEV_DIR=$(printf '%q' "$private")"
fi
! is_mounted "$private" || fail "$private is still mounted after xdev run"
[ ! -e "$private" ] || fail "the private mount point $private is left behind"

xdev run -- sh -c 'kill -TERM $$' 2>/dev/null
assert_eq "$?" 143 "exit status of xdev run when CMD is killed by SIGTERM"
xdev run -- sh -c 'kill -KILL $$' 2>/dev/null
assert_eq "$?" 137 "exit status of xdev run when CMD is killed by SIGKILL"

# xdev commands inside find the private mount through XDEV_DIR.
out=$(xdev run -- "$XDEV_BIN" reject inside) || fail "xdev run -- xdev reject failed with status $?"
assert_eq "$out" "$NOTHING_TO_REJECT" "xdev reject inside xdev run"

where=$SCRATCH/run-here
xdev run --mount "$where" -- sh -c 'test "$XDEV_DIR" = "$1" && test -f "$1/status" && grep -qF " $1 " /proc/self/mounts' sh "$where"
assert_eq "$?" 0 "xdev run --mount DIR: CMD saw the mount at DIR"
! is_mounted "$where" || fail "$where is still mounted after xdev run --mount"
[ ! -e "$where" ] || fail "xdev run --mount left $where behind (it created it)"
note "xdev run: exit 7 passed on, $private unmounted and removed"
