#!/usr/bin/env bash
# npm's write-file-atomic (pinned in lib.sh), the temp-file writer of npm
# and many Node.js tools, onto the devices. Both writeFileAtomicSync and
# the async writeFileAtomic realpath and stat the target, create the draft
# `<target>.<number>` with the target's mode, write it, fsync it, chown it
# to the target's uid/gid and chmod it to the target's mode (as root an
# EPERM there is fatal), then rename(2) it onto the target; the async one
# unlinks the draft afterwards in any case, the sync one only on failure.
#
#   - sync and async onto resolve, a preview pending: no error, CMD runs
#     once each, the stagers exit 0, the journal names the node process.
#   - sync and async onto resolve, nothing pending: the error has code
#     ENOENT from the rename; nothing runs.
#   - sync onto reject, a preview pending: no error; the stager exits 3.
#   - no draft is left in the mount after any of them.
# time limit: 90 s
. "$(dirname "$0")/lib.sh"
need_xdev
need_npm_clients
scratch
export CLIENT_CACHE
tok="wfa-$$-$RANDOM" # in every reason: the journal outlives scenarios

# wfa sync|async DEVICE BODY: one node process writes BODY to $D/DEVICE
# with write-file-atomic; prints its pid, then `ok` or `error CODE SYSCALL`.
wfa() {
    node -e '
const writeFileAtomic = require(process.env.CLIENT_CACHE + "/node_modules/write-file-atomic");
const [mode, device, body] = process.argv.slice(1);
const target = process.env.D + "/" + device;
console.log(process.pid);
const report = (err) => console.log(err ? `error ${err.code} ${err.syscall}` : "ok");
if (mode === "sync") {
    try { writeFileAtomic.sync(target, body); report(null); } catch (err) { report(err); }
} else {
    writeFileAtomic(target, body).then(() => report(null), report);
}' "$1" "$2" "$3" >"$SCRATCH/wfa.out" 2>"$SCRATCH/wfa.err" ||
        fail "node (write-file-atomic $1 onto $2) failed: $(cat "$SCRATCH/wfa.err")"
    WFA_PID=$(sed -n 1p "$SCRATCH/wfa.out")
    WFA_RESULT=$(sed -n 2p "$SCRATCH/wfa.out")
}

# 1. Onto resolve with a preview pending, sync then async: applied once each.
for mode in sync async; do
    stage_counted "$mode" "write-file-atomic $mode"
    stager=$BG_PID
    wfa "$mode" resolve "applied by $mode write-file-atomic $tok"
    assert_eq "$WFA_RESULT" ok "writeFileAtomic ($mode) onto resolve with a preview pending"
    assert_last "applied: applied by $mode write-file-atomic $tok"
    wait_exit "$stager" 10000 "xdev stage after writeFileAtomic ($mode)"
    assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after writeFileAtomic ($mode) onto resolve"
    assert_eq "$(runs_of "$ID")" 1 "CMD runs for the preview applied by writeFileAtomic ($mode)"
    assert_decision "applied by $mode write-file-atomic $tok" resolve ok - "$WFA_PID" node
    assert_no_drafts "after writeFileAtomic ($mode) onto resolve"
done

# 2. Onto resolve with nothing pending: the rename fails with ENOENT.
for mode in sync async; do
    wfa "$mode" resolve "nothing for $mode $tok"
    assert_eq "$WFA_RESULT" "error ENOENT rename" "writeFileAtomic ($mode) onto resolve with nothing pending"
    assert_last "$NOTHING_TO_RESOLVE"
    assert_decision "nothing for $mode $tok" resolve error ENOENT "$WFA_PID" node
    assert_no_drafts "after writeFileAtomic ($mode) onto resolve with nothing pending"
done
assert_eq "$(runs_of all)" 2 "CMD runs in total after the failed writes"

# 3. Onto reject with a preview pending: discarded, CMD never runs.
stage_counted discard "write-file-atomic reject"
stager=$BG_PID
wfa sync reject "discarded by write-file-atomic $tok"
assert_eq "$WFA_RESULT" ok "writeFileAtomicSync onto reject with a preview pending"
assert_last "$(expected discarded label "write-file-atomic reject" reason "discarded by write-file-atomic $tok")"
wait_exit "$stager" 10000 "xdev stage after writeFileAtomicSync onto reject"
assert_eq "$EXIT_CODE" 3 "exit status of xdev stage after writeFileAtomicSync onto reject"
assert_eq "$(runs_of "$ID")" 0 "CMD runs for the discarded preview"
assert_decision "discarded by write-file-atomic $tok" reject ok - "$WFA_PID" node
assert_no_drafts "after writeFileAtomicSync onto reject"
pending_is 0 || fail "something is still pending: $(cat "$D/status")"
note "write-file-atomic: sync and async applied once each, ENOENT from rename with nothing pending, reject discards"
