#!/usr/bin/env bash
# (j) status.json is one JSON object with pending, head, planMode, last and
# stack; `status` is human-readable and mentions `pending: 0`; both (and
# `last`) are fresh after every device write; `reminder` is empty with
# nothing pending.
. "$(dirname "$0")/lib.sh"

py '
with open(D + "/status.json") as f:
    s = json.load(f)
if not isinstance(s, dict):
    sys.exit("status.json is not a JSON object: %r" % s)
missing = [k for k in ("pending", "head", "planMode", "last", "stack") if k not in s]
if missing:
    sys.exit("status.json lacks %s: %r" % (missing, s))
if s["pending"] != 0 or s["head"] is not None or s["stack"] != [] or s["planMode"] is not False:
    sys.exit("status.json of an idle mount: %r" % s)
'

status=$(cat "$D/status") || fail "cannot read $D/status"
assert_contains "$status" "pending: 0" "status"

# Fresh after each write (no stale cached size or content).
echo x >"$D/resolve" 2>/dev/null
assert_contains "$(cat "$D/status")" "resolve" "status after a resolve"
assert_contains "$(cat "$D/status")" "$NOTHING_TO_RESOLVE" "status after a resolve"
assert_eq "$(status_json 's["last"]["device"]')" "resolve" "status.json last.device after a resolve"
echo why >"$D/reject" || fail "reject failed"
assert_contains "$(cat "$D/status")" "reject" "status after a reject"
assert_contains "$(cat "$D/status")" "$NOTHING_TO_REJECT" "status after a reject"
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"], s["last"]["text"]')" \
    "('reject', True, '$NOTHING_TO_REJECT')" "status.json last after a reject"
assert_last "$NOTHING_TO_REJECT"
# The reported size matches what a read returns.
py '
for name in ("status", "status.json", "last"):
    size = os.stat(D + "/" + name).st_size
    with open(D + "/" + name, "rb") as f:
        data = f.read()
    if size != len(data):
        sys.exit("%s: stat size %d, but %d bytes read" % (name, size, len(data)))
'

reminder=$(cat "$D/reminder") || fail "cannot read $D/reminder"
assert_eq "$reminder" "" "reminder with nothing pending"
note "status.json keys, status text, fresh content, empty reminder"
