#!/usr/bin/env bash
# (r) The journal `log` (JSON Lines, append-only) names who made each
# decision and staging: the uid, pid and process name of the process that
# wrote — `sh` for a shell writer, `python3` for a Python one, `xdev` for
# `xdev stage` — with every field docs/journal.md lists (Records).
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
uid=$(id -u)
token="who-$$-$RANDOM"
size_before=$(stat -c %s "$D/log")
head_before=$(head -c "$size_before" "$D/log" | md5sum)

# A shell writer.
sh -c 'echo $$ >"$1"; echo "$2 from sh" >"$3/reject"' sh "$SCRATCH/sh.pid" "$token" "$D" ||
    fail "the sh writer failed"
# A Python writer (plain os.write).
"$PYTHON" -c '
import os, sys
print(os.getpid())
fd = os.open(sys.argv[2] + "/reject", os.O_WRONLY)
os.write(fd, (sys.argv[1] + " from python\n").encode())
os.close(fd)' "$token" "$D" >"$SCRATCH/py.pid" || fail "the python writer failed"
# A stager, decided by a shell.
stage_bg stager --label "$token staged" -- echo "done"
stager=$BG_PID
echo "$token resolve" >"$D/resolve" || fail "resolve failed"
wait_exit "$stager" 10000 "xdev stage"

py '
token, uid, sh_pid, py_pid, stager_pid, stage_id = sys.argv[1:7]
with open(D + "/log") as f:
    records = [json.loads(line) for line in f if line.strip()]
fields = ["time", "event", "id", "label", "sourceTool", "device", "reason",
          "outcome", "text", "errno", "uid", "pid", "process"]
def one(what, pred):
    found = [r for r in records if pred(r)]
    if len(found) != 1:
        sys.exit("%s: %d records, expected 1: %r" % (what, len(found), found))
    r = found[0]
    missing = [k for k in fields if k not in r]
    if missing:
        sys.exit("%s: fields %s missing from %r" % (what, missing, r))
    return r
def check(what, r, **want):
    for key, value in want.items():
        if r[key] != value:
            sys.exit("%s: %s is %r, expected %r (record %r)" % (what, key, r[key], value, r))

r = one("the sh writer", lambda r: r.get("reason") == token + " from sh")
check("the sh writer", r, event="reject", device="reject", outcome="ok", uid=int(uid),
      pid=int(sh_pid), process="sh", text=os.environ["NOTHING_TO_REJECT"], errno=None)
if not isinstance(r["time"], (int, float)):
    sys.exit("time is not a number: %r" % r)

r = one("the python writer", lambda r: r.get("reason") == token + " from python")
check("the python writer", r, event="reject", uid=int(uid), pid=int(py_pid), process="python3")

r = one("the staging", lambda r: r["event"] == "staged" and r["id"] == stage_id)
check("the staging", r, label=token + " staged", sourceTool="external", outcome="ok",
      uid=int(uid), pid=int(stager_pid), process="xdev")

r = one("the resolve", lambda r: r.get("reason") == token + " resolve")
check("the resolve", r, event="resolve", device="resolve", id=stage_id, label=token + " staged",
      sourceTool="external", outcome="ok", text="done", errno=None, process="bash", pid=os.getppid())
' "$token" "$uid" "$(cat "$SCRATCH/sh.pid")" "$(cat "$SCRATCH/py.pid")" "$stager" "$ID"

# A failed decision names its errno.
echo "$token fails" >"$D/resolve" 2>/dev/null && fail "resolve with nothing pending succeeded"
failed=$(log_records "r.get('reason') == '$token fails'")
py '
r = json.loads(sys.argv[1])
if (r["outcome"], r["errno"], r["text"]) != ("error", "ENOENT", os.environ["NOTHING_TO_RESOLVE"]):
    sys.exit("failed resolve record: %r" % r)
' "$failed"

# Append-only: what was there before is unchanged, and reads from any
# offset agree with the whole.
assert_eq "$(head -c "$size_before" "$D/log" | md5sum)" "$head_before" "the log's earlier bytes"
py '
whole = open(D + "/log", "rb").read()
fd = os.open(D + "/log", os.O_RDONLY)
try:
    os.lseek(fd, 7, 0)
    tail = b""
    while True:
        chunk = os.read(fd, 100)
        if not chunk:
            break
        tail += chunk
finally:
    os.close(fd)
if tail != whole[7:]:
    sys.exit("log read from offset 7 in 100-byte reads differs from the whole")
'
note "journal: sh pid $(cat "$SCRATCH/sh.pid"), python3 pid $(cat "$SCRATCH/py.pid"), xdev stager pid $stager"
