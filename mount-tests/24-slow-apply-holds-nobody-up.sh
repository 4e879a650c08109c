#!/usr/bin/env bash
# A slow apply holds nobody up, and its writer stays killable. While
# `echo ... > resolve` waits on a preview whose CMD sleeps 2 s: `cat status`
# answers at once; a second `echo ... > resolve` (same device, same `>`)
# applies a newer preview at once; `kill` of the waiting writer returns it
# within 0.5 s. The slow apply still finishes and is recorded.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

# in_progress_is N: whether status.json shows N decisions under way.
in_progress_is() {
    [ "$(status_json 's.get("inProgress", 0)')" = "$1" ]
}

# ms_since START: milliseconds since START (from now_ms).
ms_since() { echo $(($(now_ms) - $1)); }

stage_bg slow --label "slow edit" -- sh -c 'sleep 2; echo slow done'
slow=$ID
slow_stager=$BG_PID
bg slow-writer sh -c 'echo "slow one" >"$1/resolve"' sh "$D"
writer=$BG_PID
wait_until 2000 "the slow apply under way" in_progress_is 1

start=$(now_ms)
cat "$D/status" >/dev/null || fail "cat status failed during the slow apply"
took=$(ms_since "$start")
[ "$took" -lt 500 ] || fail "cat status took $took ms during the slow apply"

stage_bg fast --label "fast edit" -- echo fast done
fast_stager=$BG_PID
start=$(now_ms)
echo "fast one" >"$D/resolve" || fail "a second writer of resolve failed during the slow apply"
took=$(ms_since "$start")
[ "$took" -lt 1000 ] || fail "a second writer of resolve took $took ms behind the slow apply"
assert_last "fast done"
wait_exit "$fast_stager" 2000 "the fast preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the fast preview's stager (applied)"

still_running "$writer" "the writer of the slow preview"
start=$(now_ms)
disown "$writer" # no "Terminated" notice from bash
kill -TERM "$writer"
wait_exit "$writer" 500 "the killed writer of the slow preview"
note "a killed waiting writer returned after $(ms_since "$start") ms"

# The apply was not cancelled: it finishes and counts.
wait_exit "$slow_stager" 4000 "the slow preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the slow preview's stager (applied)"
wait_until 1000 "an ok resolve record for $slow in the log" \
    test -n "$(log_records "r['id'] == '$slow' and r['event'] == 'applied' and r['outcome'] == 'ok'")"
wait_until 1000 "nothing pending or under way" pending_is 0
