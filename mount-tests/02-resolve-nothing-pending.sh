#!/usr/bin/env bash
# (b) resolve with nothing pending: the write fails with ENOENT (the shell
# reports it) and `last` then reads the exact text `nothing-to-resolve` of
# expected-texts.
. "$(dirname "$0")/lib.sh"

assert_refused resolve ENOENT "No such file or directory" "$NOTHING_TO_RESOLVE"
assert_eq "$(status_json 's["last"]["device"], s["last"]["ok"], s["last"]["errno"]')" "('resolve', False, 'ENOENT')" "status.json last"
assert_contains "$(cat "$D/status")" "last: resolve error ENOENT" "status after the failed resolve"
note "ENOENT, last: $NOTHING_TO_RESOLVE"
