#!/usr/bin/env bash
# (s) `events`: a reader sees only records made after its open, one JSON line
# each; poll(2) (Python select.poll) reports it not ready until the next
# record and POLLIN once there is one; after the reader takes it, not ready
# again. A plain blocking read (`head -n 1 events`) waits for the next record.
. "$(dirname "$0")/lib.sh"
token="ev-$$-$RANDOM"

# A record before the reader opens: it must not see it.
echo "$token before" >"$D/reject" || fail "reject failed"

py '
import select, subprocess, time
token = sys.argv[1]
fd = os.open(D + "/events", os.O_RDONLY)
try:
    p = select.poll()
    p.register(fd, select.POLLIN)
    ready = p.poll(200)
    if ready:
        sys.exit("events polled ready right after open (nothing new yet): %r" % ready)
    subprocess.run(["sh", "-c", "echo \"$1\" > \"$2/reject\"", "sh", token + " after", D], check=True)
    start = time.monotonic()
    ready = p.poll(2000)
    if not ready or not ready[0][1] & select.POLLIN:
        sys.exit("no POLLIN within 2 s of a new record: %r" % ready)
    data = os.read(fd, 65536)
    if not data.endswith(b"\n"):
        sys.exit("events read is not whole lines: %r" % data)
    records = [json.loads(line) for line in data.decode().splitlines()]
    if [r["reason"] for r in records] != [token + " after"]:
        sys.exit("events gave %r, expected only the record after the open" % records)
    if records[0]["event"] != "reject" or records[0]["process"] != "sh":
        sys.exit("event record: %r" % records[0])
    ready = p.poll(200)
    if ready:
        sys.exit("events still polled ready after its record was read: %r" % ready)
    # Two records: both arrive, in order.
    subprocess.run(["sh", "-c", "echo \"$1 one\" > \"$2/reject\"; echo \"$1 two\" > \"$2/reject\"",
                    "sh", token, D], check=True)
    got = []
    deadline = time.monotonic() + 2
    while len(got) < 2 and time.monotonic() < deadline:
        if p.poll(500):
            got += [json.loads(l)["reason"] for l in os.read(fd, 65536).decode().splitlines()]
    if got != [token + " one", token + " two"]:
        sys.exit("two records in a row gave %r" % got)
finally:
    os.close(fd)
' "$token"

# A blocking read waits for the next record.
scratch
bg head timeout 5 head -n 1 "$D/events"
reader=$BG_PID
wait_until 10000 "head has $D/events open" holds_open "$D/events"
still_running "$reader" "head -n 1 $D/events (it must block until the next record)"
echo "$token for head" >"$D/reject" || fail "reject failed"
wait_exit "$reader" 10000 "head -n 1 $D/events after a new record"
assert_eq "$EXIT_CODE" 0 "exit status of head -n 1 events"
assert_contains "$(cat "$SCRATCH/head.out")" "\"reason\":\"$token for head\"" "the line head read from events"
note "events: not ready at open, POLLIN after a record, blocking read gets the next record"
