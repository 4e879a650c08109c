# Shared helpers for the mount-tests scenarios. Source it first:
#
#   . "$(dirname "$0")/lib.sh"
#
# Every scenario runs against an xdev mount at $XDEV_DIR that has nothing
# staged, and exits non-zero with a clear message on the first failure.
# shellcheck shell=bash

set -uo pipefail

if [ -z "${XDEV_DIR:-}" ]; then
    echo "XDEV_DIR is not set: run this through mount-tests/run.sh [DIR]," >&2
    echo "or export XDEV_DIR=/path/to/an/xdev/mount first" >&2
    exit 2
fi
D=$XDEV_DIR
# Prefer the system Python: a version-manager shim (pyenv) costs ~100 ms a call.
if [ -z "${PYTHON:-}" ]; then
    if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
SCENARIO=$(basename "$0" .sh)

# The exact texts of SPEC section 3, for this mount point.
NOTHING_TO_RESOLVE="No pending action to resolve. Nothing to apply or discard."
NOTHING_TO_REJECT="Nothing to reject; no pending action remains."
NO_PLAN="No plan is awaiting approval — $D/propose only accepts a plan title while plan mode is active."
USAGE_RESOLVE="Write a one-sentence reason as plain text to $D/resolve to APPLY the pending staged action (e.g. a tool preview)."
USAGE_REJECT="Write a one-sentence reason as plain text to $D/reject to DISCARD the pending staged action (e.g. a tool preview)."
USAGE_PROPOSE="Write your plan's <slug> (matching <slug>-plan.md) as plain text to $D/propose to submit the plan for approval. Valid only while plan mode is active."
export D NOTHING_TO_RESOLVE NOTHING_TO_REJECT NO_PLAN USAGE_RESOLVE USAGE_REJECT USAGE_PROPOSE

# The entries of an idle mount: the devices and status files of SPEC §3-5,
# and those of SPEC §7 (journal, watching, per-item dirs, external staging,
# plan review) that a mount may add.
CORE_ENTRIES="last propose reject reminder resolve status status.json"
SECTION7_ENTRIES="events log pending plan stage"

# fail MESSAGE...: report and stop the scenario.
fail() {
    printf '%s: FAIL: %s\n' "$SCENARIO" "$*" >&2
    exit 1
}

# note MESSAGE...: progress, shown by run.sh only when the scenario fails.
note() {
    printf '%s: %s\n' "$SCENARIO" "$*"
}

# assert_eq ACTUAL EXPECTED WHAT
assert_eq() {
    if [ "$1" != "$2" ]; then
        fail "$3
    expected: $(printf '%q' "$2")
    actual:   $(printf '%q' "$1")"
    fi
}

# assert_contains HAYSTACK NEEDLE WHAT
assert_contains() {
    case "$1" in
    *"$2"*) ;;
    *) fail "$3: $(printf '%q' "$1") does not contain $(printf '%q' "$2")" ;;
    esac
}

# assert_content FILE EXPECTED: FILE holds exactly EXPECTED plus a newline
# (read on a fresh descriptor, byte for byte).
assert_content() {
    local file=$1 expected=$2
    if ! cmp -s "$file" <(printf '%s\n' "$expected"); then
        fail "content of $file (as sed -n l shows it)
    expected: $(printf '%s\n' "$expected" | sed -n 'l 0')
    actual:   $(head -c 2000 "$file" 2>&1 | sed -n 'l 0')"
    fi
}

# assert_last EXPECTED: the `last` status file reads exactly EXPECTED + "\n".
assert_last() {
    assert_content "$D/last" "$1"
}

# py CODE [ARGS...]: runs Python with D and the texts above in the
# environment; `import os, errno, json, sys` and a helper
# `expect_errno(name, fn, *args)` are ready.
py() {
    local code=$1
    shift
    "$PYTHON" -c "
import errno, json, os, sys
D = os.environ['D']
def expect_errno(name, fn, *args):
    want = getattr(errno, name)
    try:
        got = fn(*args)
    except OSError as e:
        if e.errno != want:
            sys.exit('%s%r: expected %s, got %s (%s)' % (
                fn.__name__, args, name, errno.errorcode.get(e.errno, e.errno), e.strerror))
        return e
    sys.exit('%s%r: expected %s, but it succeeded (returned %r)' % (fn.__name__, args, name, got))
$code" "$@" || fail "python check failed (see above)"
}

# status_json_field EXPR: a Python expression over `s` (status.json parsed).
status_json() {
    "$PYTHON" -c '
import json, sys
with open(sys.argv[1]) as f:
    s = json.load(f)
print(eval(sys.argv[2]))' "$D/status.json" "$1" || fail "cannot evaluate $1 over status.json"
}

# assert_listing WHAT: the mount lists every core entry, and nothing but
# core and section-7 entries.
assert_listing() {
    local listing entry missing="" unknown=""
    listing=" $(ls -A "$D" | LC_ALL=C sort | tr '\n' ' ')"
    for entry in $CORE_ENTRIES; do
        [[ "$listing" == *" $entry "* ]] || missing+=" $entry"
    done
    for entry in $listing; do
        [[ " $CORE_ENTRIES $SECTION7_ENTRIES " == *" $entry "* ]] || unknown+=" $entry"
    done
    [ -z "$missing" ] || fail "$1: missing${missing} (listing:${listing})"
    [ -z "$unknown" ] || fail "$1: unexpected${unknown} (listing:${listing})"
}

# require_idle: these scenarios expect a mount with nothing staged.
require_idle() {
    local pending
    pending=$(status_json 's["pending"]')
    [ "$pending" = "0" ] ||
        fail "the mount at $D has $pending pending preview(s); these scenarios need a mount with nothing staged"
}

require_idle
