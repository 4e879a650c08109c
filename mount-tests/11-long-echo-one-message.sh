#!/usr/bin/env bash
# (k) A 20 KiB reason written by bash's `echo` reaches the device in several
# write(2) calls (full chunks of the block size, then the rest); it is one message,
# dispatched once by the write that completes it. Were the chunks dispatched
# separately, the second write would fail with EALREADY and `echo` with it.
. "$(dirname "$0")/lib.sh"

echo x >"$D/resolve" 2>/dev/null && fail "resolve succeeded with nothing pending"
assert_last "$NOTHING_TO_RESOLVE"

reason=$(printf 'r%.0s' $(seq 20480))
[ "${#reason}" -eq 20480 ] || fail "built a reason of ${#reason} bytes"
journal_lines() { [ -f "$D/log" ] && grep -c . "$D/log"; }
before=$(journal_lines)
if ! err=$(echo "$reason" 2>&1 >"$D/reject"); then
    fail "echo of a 20 KiB reason to reject failed: $err"
fi
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"]')" "('reject', True)" "status.json last"
assert_last "$NOTHING_TO_REJECT"

# With a journal (SPEC §7 `log`): exactly one new decision, whose reason is
# the whole 20 KiB.
if [ -n "$before" ]; then
    py '
with open(D + "/log") as f:
    lines = [line for line in f.read().splitlines() if line.strip()]
new = [json.loads(line) for line in lines[int(sys.argv[1]):]]
if len(new) != 1:
    sys.exit("the 20 KiB echo produced %d journal entries, expected 1: %r"
             % (len(new), [(e.get("device"), e.get("outcome"), len(e.get("reason") or "")) for e in new]))
entry = new[0]
if entry.get("device") != "reject" or entry.get("outcome") != "ok" or entry.get("reason") != "r" * 20480:
    sys.exit("journal entry of the 20 KiB echo: device %r, outcome %r, reason of %d bytes"
             % (entry.get("device"), entry.get("outcome"), len(entry.get("reason") or "")))
' "$before"
    note "20 KiB echo: one message, ok, one journal entry with the whole reason"
else
    note "20 KiB echo: one message, ok (no journal at $D/log to count entries)"
fi
