#!/usr/bin/env bash
# (l) `xdev stage` prints the preview's id and waits; `echo REASON > resolve`
# runs its CMD exactly once, CMD's stdout (trailing newline trimmed) is the
# result of the resolver's write (in `last`, and read back on an O_RDWR
# descriptor), the stager exits 0 and nothing is left pending. The CMD sees
# XDEV_ID and XDEV_REASON. A later resolve finds nothing and runs nothing.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch
runs=$SCRATCH/runs

# 1. The walkthrough: stage, resolve with echo, read `last`.
stage_bg one --label "edit README" -- sh -c \
    'echo "$XDEV_ID" >>"$1"; echo "applied: $XDEV_REASON"; echo "(stderr is not the result)" >&2' sh "$runs"
assert_contains "$ID" "pending-action:external:" "the id of a preview staged with no --source-tool"
stager=$BG_PID
wait_until 10000 "the staged preview in status.json" pending_is 1
assert_eq "$(status_json 's["head"]["id"], s["head"]["label"], s["head"]["sourceTool"]')" \
    "('$ID', 'edit README', 'external')" "status.json head while staged"
[ ! -e "$runs" ] || fail "CMD ran before any decision"

if ! err=$(echo "looks right" 2>&1 >"$D/resolve"); then
    fail "'echo looks right > resolve' failed: $err"
fi
assert_last "applied: looks right"
wait_exit "$stager" 10000 "xdev stage after its preview was applied"
assert_eq "$EXIT_CODE" 0 "exit status of xdev stage after apply"
assert_content "$runs" "$ID"
assert_content "$SCRATCH/one.out" "$ID"
pending_is 0 || fail "something is still pending after the apply: $(cat "$D/status")"

# A second resolve finds nothing pending; CMD does not run again.
echo "again" >"$D/resolve" 2>/dev/null && fail "a second resolve succeeded"
assert_last "$NOTHING_TO_RESOLVE"
assert_content "$runs" "$ID"

# 2. The same with O_RDWR: the result comes back on the resolver's own
# descriptor; --source-tool names the tool in the id.
stage_bg two --label "bump version" --source-tool bump -- sh -c 'echo "$XDEV_ID" >>"$1"; printf "version 1.2.0\n\n"' sh "$runs"
assert_contains "$ID" "pending-action:bump:" "the id with --source-tool bump"
stager=$BG_PID
py '
fd = os.open(D + "/resolve", os.O_RDWR)
try:
    n = os.write(fd, b"ship it\n")
    answer = os.read(fd, 65536)
finally:
    os.close(fd)
if n != 8 or answer != b"version 1.2.0\n":
    sys.exit("resolve via O_RDWR: write returned %r, read back %r" % (n, answer))
'
wait_exit "$stager" 10000 "the second xdev stage"
assert_eq "$EXIT_CODE" 0 "exit status of the second xdev stage"
assert_eq "$(grep -c . "$runs")" 2 "CMD runs in total (once per applied preview)"
# 3. The CLI: `xdev resolve WORDS...` joins its words into the reason,
# prints the result on stdout and exits 0; the journal has the decision.
stage_counted three "edit a"
stager=$BG_PID
third=$ID
xdev resolve tests pass >"$SCRATCH/cli.out" 2>"$SCRATCH/cli.err"
assert_eq "$?" 0 "exit status of xdev resolve (stderr: $(cat "$SCRATCH/cli.err"))"
assert_content "$SCRATCH/cli.out" "applied: tests pass"
assert_eq "$(cat "$SCRATCH/cli.err")" "" "stderr of xdev resolve"
wait_exit "$stager" 10000 "the third xdev stage"
assert_eq "$EXIT_CODE" 0 "exit status of the third xdev stage"
assert_eq "$(runs_of "$third")" 1 "CMD runs for the third preview"
assert_eq "$(log_records "r['id'] == '$third' and r['event'] == 'resolve'" |
    "$PYTHON" -c 'import json, sys; r = json.loads(sys.stdin.readline()); print(r["reason"], "|", r["text"])')" \
    "tests pass | applied: tests pass" "the journal's resolve record (reason | text)"

# The decided id is gone: xdev resolve --id says so in one line.
item=$D/pending/$third/resolve
xdev resolve --id "$third" again >/dev/null 2>"$SCRATCH/cli.err" && fail "xdev resolve --id of a decided id succeeded"
assert_eq "$(cat "$SCRATCH/cli.err")" \
    "xdev: ENOENT: no such pending preview (already decided or withdrawn?); cannot open $item: No such file or directory" \
    "xdev resolve --id of a decided id"
assert_eq "$(runs_of "$third")" 1 "CMD runs for the third preview after resolve --id"

note "stage -> resolve: CMD ran once, result '$(cat "$D/last")', stager exit 0"
