#!/usr/bin/env bash
# (k) One message per open: the first write(2) on a device descriptor is the
# message and its call returns the outcome; later writes on the descriptor
# dispatch nothing and return the same outcome; the journal notes their
# bytes as ignored. So a writer that splits its output is never told failure
# for a preview it applied (nor success for one nothing decided).
. "$(dirname "$0")/lib.sh"

# count_records EXPR: how many journal records after the first $skip match
# the Python expression over `r`.
count_records() {
    "$PYTHON" -c '
import json, sys
lines = [line for line in open(sys.argv[1]) if line.strip()][int(sys.argv[2]):]
print(sum(1 for line in lines if eval(sys.argv[3], {"r": json.loads(line)})))' "$D/log" "$skip" "$1" ||
        fail "cannot read the journal at $D/log"
}
records() { grep -c . "$D/log" || true; }
skip=$(records)

# An echo of up to 8 KiB arrives in one write: one message, whole.
reason=$(head -c 8191 /dev/zero | tr '\0' r)
echo "$reason" >"$D/reject" || fail "an 8 KiB echo to reject failed"
assert_last "$NOTHING_TO_REJECT"
assert_eq "$(count_records 'r["event"] == "reject" and r["reason"] == "r" * 8191')" 1 "decisions with the whole 8 KiB reason"

# Two echos on one descriptor: the first is the message; the shell is told
# the same success for the second, and the journal notes its bytes.
skip=$(records)
{ echo "README looks good"; echo "ship it"; } >"$D/reject" || fail "grouped echos to reject failed"
assert_eq "$(count_records 'r["event"] == "reject"')" 1 "decisions of the grouped echos"
assert_eq "$(count_records 'r["event"] == "ignored" and r["text"].startswith("8 bytes")')" 1 "notes of the ignored second echo"

# A failed first write: the later writes fail the same (ENOENT), and last
# keeps the real message.
if { echo "go"; echo "go again"; } >"$D/resolve" 2>/dev/null; then
    fail "grouped echos to resolve with nothing pending succeeded"
fi
assert_last "$NOTHING_TO_RESOLVE"

# A message longer than 8 KiB must come in one write(2): 20 KiB from Python.
skip=$(records)
py 'fd = os.open(D + "/reject", os.O_WRONLY | os.O_TRUNC)
n = os.write(fd, b"w" * 20480)
os.close(fd)
if n != 20480:
    sys.exit("a 20 KiB write returned %d" % n)'
assert_eq "$(count_records 'r["event"] == "reject" and r["reason"] == "w" * 20480')" 1 "decisions with the whole 20 KiB reason"
note "8 KiB echo whole; grouped echos one decision + one ignored note; same errno again; 20 KiB in one write whole"
