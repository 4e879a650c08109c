#!/usr/bin/env bash
# 42: a mount removed from outside ends its daemon, so a supervisor sees it
# go. After `fusermount3 -u DIR` the daemon exits 5 with one line on stderr
# and removes the DIR it created. After a lazy unmount (`umount -l`, or
# `fusermount3 -uz` for a user other than root) while `echo ... > resolve`
# waits on an apply whose CMD waits at a gate: the daemon notices at once and
# stops as on SIGTERM; the writer's descriptor still reaches the detached
# mount, so once the gate opens it gets the real outcome (applied) and the
# journal has the decision; a stager still waiting for a decision gets "mount
# gone" (exit 5) and its command never runs; the daemon exits 5.
# time limit: 90 s
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

dir=$SCRATCH/mnt
UNMOUNTED=$(expected unmounted-from-outside dir "$dir") || exit 1

# lazy_unmount DIR: detach DIR at once, busy or not.
lazy_unmount() {
    if [ "$(id -u)" = 0 ]; then umount -l "$1"; else fusermount3 -u -z "$1"; fi
}

note "fusermount3 -u: exit 5, one line, the directory xdev made is gone"
start_own_daemon_at "$dir"
fusermount3 -u "$dir" || fail "fusermount3 -u $dir failed"
wait_exit "$OWN_PID" 20000 "the daemon after fusermount3 -u"
assert_eq "$EXIT_CODE" 5 "exit status of the daemon after fusermount3 -u"
assert_eq "$(cat "$SCRATCH/own-daemon.err")" "xdev: $UNMOUNTED" "the daemon's stderr"
[ ! -e "$dir" ] || fail "$dir, made by xdev, is still there after the daemon exited"

note "a lazy unmount during a gated apply: the writer gets the real outcome"
journal=$SCRATCH/journal.jsonl
export XDEV_LOG=info
start_own_daemon_at "$dir" --journal "$journal" --grace 60s
unset XDEV_LOG
gate=$SCRATCH/gate
ran=$SCRATCH/waiting-ran
stage_bg waiting --mount "$dir" --label "never decided" -- touch "$ran"
waiting=$BG_PID
stage_gated stager "$gate" --mount "$dir" --label "slow edit"
stager=$BG_PID
bg writer sh -c 'echo "ship it" >"$1/resolve"' sh "$dir"
writer=$BG_PID
D=$dir wait_until 10000 "the slow apply under way" in_progress_is 1

lazy_unmount "$dir" || fail "the lazy unmount of $dir failed"
noticed() { grep -q "unmounted from outside; stopping" "$SCRATCH/own-daemon.err"; }
wait_until 20000 "the daemon noticing the unmount (its log)" noticed
still_running "$OWN_PID" "the daemon (it gives the running apply its grace period)"
touch "$gate"

wait_exit "$writer" 30000 "the writer of the running apply"
assert_eq "$EXIT_CODE" 0 "exit status of the writer (the real outcome: applied)"
wait_exit "$stager" 10000 "xdev stage of the running apply"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage (its command ran and succeeded)"
wait_exit "$waiting" 20000 "the stager still waiting for a decision"
assert_eq "$EXIT_CODE" 5 "exit status of the waiting stager (the mount went away)"
[ ! -e "$ran" ] || fail "the waiting stager's command ran"
wait_exit "$OWN_PID" 20000 "the daemon after the lazy unmount"
assert_eq "$EXIT_CODE" 5 "exit status of the daemon after the lazy unmount"
assert_eq "$(grep -c '^xdev: ' "$SCRATCH/own-daemon.err")" 1 "lines of the daemon's stderr that are not log lines"
assert_contains "$(cat "$SCRATCH/own-daemon.err")" "xdev: $UNMOUNTED" "the daemon's stderr"
assert_eq "$(mounts_at "$dir")" 0 "mounts at $dir"
[ ! -e "$dir" ] || fail "$dir, made by xdev, is still there after the daemon exited"
"$PYTHON" -c '
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
if not any(r["event"] == "resolve" and r["outcome"] == "ok" and r["text"] == "slow done" for r in records):
    sys.exit("no successful resolve in the journal: %r" % records)' "$journal" || fail "the journal lacks the decision"
note "unmounted from outside: exit 5 with one line; after a lazy unmount the running apply finished, the waiting stager exited 5"
