#!/usr/bin/env bash
# Two descriptors of `resolve` opened for writing before either writes (as
# `exec 3>resolve 4>resolve` does, or two shells' `>` at the same moment)
# decide apart. The first write waits on a preview whose CMD waits for a
# gate file; the second write, through the other descriptor, applies the
# older preview and returns while the gate is still closed: it did not
# wait in the kernel behind the first, where no signal would reach it.
# Then the gate opens and the first write gets its own answer.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

gate="$SCRATCH/gate"
stage_bg fast --label "fast edit" -- echo fast done
fast_stager=$BG_PID
stage_gated slow "$gate" --label "slow edit"
slow_stager=$BG_PID

exec 3>"$D/resolve" 4>"$D/resolve" || fail "cannot open resolve twice"
# The newest preview (the slow one) goes to the first write.
bg slow-writer sh -c 'echo "slow one" >&3'
slow_writer=$BG_PID
wait_until 10000 "the slow apply under way" in_progress_is 1

bg fast-writer sh -c 'echo "fast one" >&4'
wait_exit "$BG_PID" 10000 "the second descriptor's write"
assert_eq "$EXIT_CODE" 0 "exit status of the second descriptor's write"
wait_exit "$fast_stager" 10000 "the fast preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the fast preview's stager (applied)"
still_running "$slow_writer" "the first descriptor's write"
[ ! -e "$gate" ] || fail "the gate opened early"
exec 3>&- 4>&-

touch "$gate"
wait_exit "$slow_writer" 10000 "the first descriptor's write"
assert_eq "$EXIT_CODE" 0 "exit status of the first descriptor's write"
wait_exit "$slow_stager" 10000 "the slow preview's stager"
assert_eq "$EXIT_CODE" 0 "exit status of the slow preview's stager (applied)"
wait_until 10000 "nothing pending or under way" pending_is 0
