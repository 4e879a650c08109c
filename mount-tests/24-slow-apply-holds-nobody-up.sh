#!/usr/bin/env bash
# A slow apply holds nobody up, and its writer stays killable. While
# `echo ... > resolve` waits on a preview whose CMD waits for a gate file:
# `cat status` answers; a second `echo ... > resolve` (same device, same
# `>`) applies a newer preview; `kill` of the waiting writer returns it.
# Each of these finishes while the gate is still closed, so none of them
# waited behind the slow apply (how fast they are is the benchmark's
# question; the bounds here are generous). Then the gate opens: the slow
# apply finishes, and the journal tells both that its writer left and how
# the apply ended.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

gate="$SCRATCH/gate"
stage_gated slow "$gate" --label "slow edit"
slow=$ID
slow_stager=$BG_PID
bg slow-writer sh -c 'echo "slow one" >"$1/resolve"' sh "$D"
writer=$BG_PID
wait_until 10000 "the slow apply under way" in_progress_is 1

cat "$D/status" >/dev/null || fail "cat status failed during the slow apply"

stage_bg fast --label "fast edit" -- echo fast done
fast_stager=$BG_PID
echo "fast one" >"$D/resolve" || fail "a second writer of resolve failed during the slow apply"
assert_last "fast done"
wait_exit "$fast_stager" 10000 "the fast preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the fast preview's stager (applied)"

still_running "$writer" "the writer of the slow preview"
disown "$writer" # no "Terminated" notice from bash
kill -TERM "$writer"
wait_exit "$writer" 10000 "the killed writer of the slow preview"
[ ! -e "$gate" ] || fail "the gate opened early"

# The apply was not cancelled: it finishes and counts.
touch "$gate"
wait_exit "$slow_stager" 10000 "the slow preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the slow preview's stager (applied)"
wait_until 10000 "an ok resolve record for $slow in the log" \
    has_log_record "r['id'] == '$slow' and r['event'] == 'resolve' and r['outcome'] == 'ok'"
has_log_record "r['id'] == '$slow' and r['event'] == 'writer-left' and r['errno'] == 'EINTR'" ||
    fail "no writer-left record for $slow in the log"
wait_until 10000 "nothing pending or under way" pending_is 0
