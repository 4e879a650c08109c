#!/usr/bin/env bash
# Shutdown tells the truth. On a daemon of its own (with --journal): while
# `echo ... > resolve` waits on a preview whose CMD waits at a gate, the
# daemon gets SIGTERM. A new decision is refused at once (ECANCELED); the
# gate opens, the running apply finishes within the grace period and its
# writer gets the real outcome (success, not ECANCELED); `xdev stage` exits
# 0; the daemon exits 0, unmounted; the journal file has the decision with
# CMD's output. The apply is gated, not timed, so a busy machine cannot make
# it end before the scenario has seen it under way.
. "$(dirname "$0")/lib.sh"
scratch
journal=$SCRATCH/journal.jsonl
start_own_daemon --journal "$journal" --grace 60s
P=$OWN_DIR
gate=$SCRATCH/gate
stage_gated stager "$gate" --mount "$P" --label "slow edit"
stager=$BG_PID
# Only the write's own result: the mount may be gone right after it.
bg writer sh -c 'echo "ship it" >"$1/resolve"' sh "$P"
writer=$BG_PID
D=$P wait_until 10000 "the slow apply under way" in_progress_is 1

kill -TERM "$OWN_PID"
# A propose outside plan mode decides nothing (EPERM) until the daemon is
# stopping; then it is refused like every new decision (ECANCELED).
stopping() {
    case $(echo probe 2>&1 >"$P/propose") in *"Operation canceled"*) return 0 ;; *) return 1 ;; esac
}
wait_until 10000 "the daemon stopping after SIGTERM" stopping
if err=$(echo "not now" 2>&1 >"$P/reject"); then
    fail "a new decision succeeded while the daemon was stopping"
fi
assert_contains "$err" "Operation canceled" "the shell's error for a decision during shutdown"
touch "$gate"

wait_exit "$writer" 30000 "the writer of the running apply"
assert_eq "$EXIT_CODE" 0 "exit status of the writer (the real outcome: applied)"
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
note "SIGTERM during a gated apply: new decision ECANCELED, writer applied, stager 0, daemon 0, journal has it"
