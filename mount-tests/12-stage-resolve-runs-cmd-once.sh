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
wait_until 2000 "the staged preview in status.json" pending_is 1
assert_eq "$(status_json 's["head"]["id"], s["head"]["label"], s["head"]["sourceTool"]')" \
    "('$ID', 'edit README', 'external')" "status.json head while staged"
[ ! -e "$runs" ] || fail "CMD ran before any decision"

if ! err=$(echo "looks right" 2>&1 >"$D/resolve"); then
    fail "'echo looks right > resolve' failed: $err"
fi
assert_last "applied: looks right"
wait_exit "$stager" 2000 "xdev stage after its preview was applied"
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
wait_exit "$stager" 2000 "the second xdev stage"
assert_eq "$EXIT_CODE" 0 "exit status of the second xdev stage"
assert_eq "$(grep -c . "$runs")" 2 "CMD runs in total (once per applied preview)"
note "stage -> resolve: CMD ran once, result '$(cat "$D/last")', stager exit 0"
