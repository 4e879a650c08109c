#!/usr/bin/env bash
# Shutdown tells the truth. On a daemon of its own (with --journal): while
# `echo ... > resolve` waits on a preview whose CMD takes 1 s, the daemon
# gets SIGTERM. A new decision is refused at once (ECANCELED); the running
# apply finishes within the grace period and its writer gets the real
# outcome (success); `xdev stage` exits 0; the daemon exits 0, unmounted;
# the journal file has the decision with CMD's output.
. "$(dirname "$0")/lib.sh"
scratch
journal=$SCRATCH/journal.jsonl
start_own_daemon --journal "$journal" --grace 10s
P=$OWN_DIR
bg stager "$XDEV_BIN" stage --mount "$P" --label "slow edit" -- sh -c 'sleep 1; echo slow done'
stager=$BG_PID
wait_line "$SCRATCH/stager.out" 5000 "the id printed by xdev stage" "$stager"
# Only the write's own result: the mount may be gone right after it.
bg writer sh -c 'echo "ship it" >"$1/resolve"' sh "$P"
writer=$BG_PID
in_progress() { [ "$(D=$P status_json 's.get("inProgress", 0)')" = 1 ]; }
wait_until 10000 "the slow apply under way" in_progress

start=$(now_ms)
kill -TERM "$OWN_PID"
sleep 0.2
if err=$(echo "not now" 2>&1 >"$P/reject"); then
    fail "a new decision succeeded while the daemon was stopping"
fi
assert_contains "$err" "Operation canceled" "the shell's error for a decision during shutdown"

wait_exit "$writer" 10000 "the writer of the running apply"
assert_eq "$EXIT_CODE" 0 "exit status of the writer (the real outcome: applied)"
took=$(($(now_ms) - start))
[ "$took" -lt 10000 ] || fail "the writer got its answer after $took ms, beyond the grace period"
wait_exit "$stager" 10000 "xdev stage"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage (its command ran and succeeded)"
wait_exit "$OWN_PID" 10000 "the daemon after SIGTERM"
assert_eq "$EXIT_CODE" 0 "exit status of the daemon"
! is_mounted "$P" || fail "$P is still mounted after the daemon exited"
"$PYTHON" -c '
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
if not any(r["event"] == "resolve" and r["outcome"] == "ok" and r["text"] == "slow done" for r in records):
    sys.exit("no successful resolve in the journal: %r" % records)' "$journal" || fail "the journal lacks the decision"
note "SIGTERM during a 1 s apply: new decision ECANCELED, writer applied after $took ms, stager 0, daemon 0, journal has it"
