#!/usr/bin/env bash
# A stager SIGKILLed while its command runs for an apply: the waiting
# resolver gets EIO, `outcome unknown: producer died during apply`, within
# about a second; the journal records that outcome as `unknown`; and the
# command's whole process group is gone (its `sleep 30` too), so it never
# goes on to finish.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
group_file=$SCRATCH/group
marker=$SCRATCH/marker

stage_bg doomed --label "slow migration" -- sh -c 'echo $$ >"$1"; sleep 30; touch "$2"' sh "$group_file" "$marker"
stager=$BG_PID
bg resolver "$XDEV_BIN" resolve "go"
resolver=$BG_PID
wait_until 10000 "the command started (it writes its process group)" test -s "$group_file"
group=$(cat "$group_file")
kill -0 -- "-$group" 2>/dev/null || fail "the command's process group $group is not running"

start=$(now_ms)
disown "$stager" # no "Killed" notice from bash
kill -KILL "$stager"
wait_exit "$resolver" 10000 "the resolver after its producer died"
took=$(($(now_ms) - start))
assert_eq "$EXIT_CODE" 1 "exit status of xdev resolve"
assert_eq "$(cat "$SCRATCH/resolver.err")" "xdev: EIO: outcome unknown: producer died during apply" \
    "what xdev resolve says"

wait_until 10000 "a resolve record for $ID with outcome unknown in the log" \
    has_log_record "r['id'] == '$ID' and r['event'] == 'resolve' and r['outcome'] == 'unknown' and r['errno'] == 'EIO' and r['text'] == 'outcome unknown: producer died during apply'"
wait_until 10000 "a withdrawn record for $ID saying why" \
    has_log_record "r['id'] == '$ID' and r['event'] == 'withdrawn' and r['reason'] == 'producer died during apply'"
gone() { ! kill -0 -- "-$group" 2>/dev/null; }
wait_until 10000 "the command's process group $group gone" gone
pgrep -g "$group" >/dev/null && fail "processes left in group $group: $(pgrep -a -g "$group")"
sleep 0.2
[ ! -e "$marker" ] || fail "the command went on after its stager died"
pending_is 0 || fail "the preview is still pending: $(cat "$D/status")"
note "resolver answered $took ms after the SIGKILL"
