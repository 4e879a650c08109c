#!/usr/bin/env bash
# (p) SIGKILL of a waiting `xdev stage` withdraws its preview within 1 s:
# it leaves status.json and pending/, `log` records `withdrawn`, and a
# resolve afterwards applies nothing.
. "$(dirname "$0")/lib.sh"
need_xdev

stage_marked doomed --label "doomed edit"
stager=$BG_PID
wait_until 10000 "the preview in status.json" pending_is 1
[ -d "$D/pending/$ID" ] || fail "$D/pending/$ID is missing while staged"

start=$(now_ms)
disown "$stager" # no "Killed" notice from bash
kill -KILL "$stager"
wait_until 10000 "the killed stager's preview withdrawn " pending_is 0
took=$(($(now_ms) - start))

[ ! -e "$D/pending/$ID" ] || fail "$D/pending/$ID still exists after the withdrawal"
wait_until 10000 "a withdrawn record for $ID in the log (not a timeout)" \
    has_log_record "r['id'] == '$ID' and r['event'] == 'withdrawn' and r['outcome'] != 'timeout'"
echo "go" >"$D/resolve" 2>/dev/null && fail "a resolve after the stager died succeeded"
assert_last "$NOTHING_TO_RESOLVE"
[ ! -e "$MARKER" ] || fail "CMD ran for a withdrawn preview"
note "SIGKILL: withdrawn after $took ms"
