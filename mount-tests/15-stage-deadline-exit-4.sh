#!/usr/bin/env bash
# (o) `xdev stage --deadline 300ms` with no decision: the preview is
# withdrawn (never applied: CMD does not run), xdev stage says so on stderr
# and exits 4, and `log` has a `withdrawn` record for its id with outcome
# `timeout`. A resolve afterwards finds nothing to apply.
. "$(dirname "$0")/lib.sh"
need_xdev

start=$(now_ms)
stage_marked late --label "wait for me" --deadline 300ms
stager=$BG_PID
wait_exit "$stager" 10000 "xdev stage --deadline 300ms"
took=$(($(now_ms) - start))
assert_eq "$EXIT_CODE" 4 "exit status of xdev stage when its deadline passed"
[ "$took" -ge 250 ] || fail "xdev stage --deadline 300ms ended after only $took ms"
assert_contains "$(cat "$SCRATCH/late.err")" "deadline passed" "xdev stage's stderr"
[ ! -e "$MARKER" ] || fail "CMD ran although no decision came (a timeout must never apply)"
pending_is 0 || fail "the preview is still pending after its deadline: $(cat "$D/status")"

records=$(log_records "r['id'] == '$ID'")
withdrawn=$(log_records "r['id'] == '$ID' and r['event'] == 'withdrawn'")
[ -n "$withdrawn" ] || fail "no withdrawn record for $ID in the log: $records"
py '
r = json.loads(sys.argv[1].splitlines()[0])
if r["outcome"] != "timeout" or r["reason"] != "deadline":
    sys.exit("withdrawn record: outcome %r, reason %r (expected timeout, deadline)" % (r["outcome"], r["reason"]))
decisions = [json.loads(l) for l in sys.argv[2].splitlines() if json.loads(l)["event"] not in ("staged", "withdrawn")]
if decisions:
    sys.exit("decisions recorded for a preview nobody decided: %r" % decisions)
' "$withdrawn" "$records"

echo "too late" >"$D/resolve" 2>/dev/null && fail "a resolve after the deadline succeeded"
assert_last "$NOTHING_TO_RESOLVE"
[ ! -e "$MARKER" ] || fail "CMD ran after the deadline"
note "deadline 300ms: exit 4 after $took ms, withdrawn record with outcome timeout"
