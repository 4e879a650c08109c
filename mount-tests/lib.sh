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

# expected KEY [NAME VALUE]...: the text KEY of mount-tests/expected-texts
# (the one list of expected texts, read by the Rust tests too), with <dir>
# as $D and each <NAME> as VALUE. Exits the scenario if KEY is unknown.
EXPECTED_TEXTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/expected-texts
expected() {
    local want=$1 key text found=""
    shift
    while IFS=$'\t' read -r key text; do
        if [ "$key" = "$want" ]; then
            found=1
            break
        fi
    done <"$EXPECTED_TEXTS"
    if [ -z "$found" ]; then
        printf '%s: FAIL: no text %s in %s\n' "$SCENARIO" "$want" "$EXPECTED_TEXTS" >&2
        exit 1
    fi
    while [ $# -ge 2 ]; do
        text=${text//"<$1>"/"$2"}
        shift 2
    done
    printf '%s' "${text//"<dir>"/"$D"}"
}

# The exact texts of expected-texts, for this mount point.
NOTHING_TO_RESOLVE=$(expected nothing-to-resolve) || exit 1
NOTHING_TO_REJECT=$(expected nothing-to-reject) || exit 1
NO_PLAN=$(expected no-plan) || exit 1
USAGE_RESOLVE=$(expected usage-resolve) || exit 1
USAGE_REJECT=$(expected usage-reject) || exit 1
USAGE_PROPOSE=$(expected usage-propose) || exit 1
export D NOTHING_TO_RESOLVE NOTHING_TO_REJECT NO_PLAN USAGE_RESOLVE USAGE_REJECT USAGE_PROPOSE

# The entries of an idle mount (docs/semantics.md, Files at a glance): the
# devices and status files every mount has, and those a mount may add
# (journal, watching, per-item dirs, sessions, external staging, plan
# review).
CORE_ENTRIES="last propose reject reminder resolve status status.json"
OPTIONAL_ENTRIES="events log pending plan sessions stage"

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
# environment; `import os, errno, json, sys` and the helpers
# `expect_errno(name, fn, *args)` and `note_pid(path)` (writes this
# process's pid to path, for assert_decision) are ready.
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
def note_pid(path):
    with open(path, 'w') as f:
        f.write(str(os.getpid()))
$code" "$@" || fail "python check failed (see above)"
}

# assert_refused DEVICE ERRNO SHELL-ERROR LAST: `echo x > $D/DEVICE` fails
# (the shell says SHELL-ERROR), and so does a raw write(2), with ERRNO (a
# name: ENOENT); after each, `last` reads exactly LAST.
assert_refused() {
    local device=$1 errno_name=$2 shell_error=$3 last=$4 err
    if err=$(echo x 2>&1 >"$D/$device"); then
        fail "'echo x > $D/$device' succeeded"
    fi
    assert_contains "$err" "$shell_error" "the shell's error for 'echo x > $device'"
    assert_last "$last"
    py '
fd = os.open(D + "/" + sys.argv[1], os.O_WRONLY | os.O_TRUNC)
try:
    expect_errno(sys.argv[2], os.write, fd, b"x\n")
finally:
    os.close(fd)
' "$device" "$errno_name"
    assert_last "$last"
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
# core and optional entries.
assert_listing() {
    local listing entry missing="" unknown=""
    listing=" $(ls -A "$D" | LC_ALL=C sort | tr '\n' ' ')"
    for entry in $CORE_ENTRIES; do
        [[ "$listing" == *" $entry "* ]] || missing+=" $entry"
    done
    for entry in $listing; do
        [[ " $CORE_ENTRIES $OPTIONAL_ENTRIES " == *" $entry "* ]] || unknown+=" $entry"
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

# --- the CLI, background processes, scratch files --------------------------------
#
# Scenarios that run `xdev` (stage, resolve, plan, run, ...) use $XDEV_BIN:
# run.sh exports it; run by hand it defaults to target/debug/xdev of this
# repository (a relative XDEV_BIN is taken from the repository root too).
# Everything a scenario starts in the background goes through `bg`, and is
# killed (by pid) when the scenario exits, pass or fail; then the scenario
# waits until the mount has nothing pending again, so the next one starts
# idle. Own daemons (`start_own_daemon`) are stopped and unmounted too.

LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XDEV_BIN=${XDEV_BIN:-target/debug/xdev}
case "$XDEV_BIN" in /*) ;; *) XDEV_BIN="$LIB_ROOT/$XDEV_BIN" ;; esac
export XDEV_BIN

now_ms() { date +%s%3N; }

BG_PIDS=()
OWN_DAEMONS=() # "pid dir" pairs
SCRATCH=""

# scratch: a private temp dir for this scenario, removed at exit.
scratch() {
    if [ -z "$SCRATCH" ]; then
        SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/xdev-$SCENARIO.XXXXXX") || fail "mktemp failed"
    fi
}

# need_xdev: fail unless the xdev binary is there.
need_xdev() {
    [ -x "$XDEV_BIN" ] || fail "no xdev binary at $XDEV_BIN (run cargo build, or set XDEV_BIN)"
}

# --- real clients from npm ----------------------------------------------------------
#
# Scenarios that drive real agents' file-writing code install it from npm,
# pinned, once, into $CLIENT_CACHE (git-ignored target/ by default) and
# reuse it afterwards. node and npm are required: a scenario that needs them
# fails (it does not skip) when they are missing.
CLIENT_CACHE=${XDEV_CLIENT_CACHE:-$LIB_ROOT/target/client-cache}
NPM_CLIENTS=("@modelcontextprotocol/server-filesystem@2026.8.31" "write-file-atomic@7.0.1")
# shellcheck disable=SC2034 # used by the scenarios
MCP_FILESYSTEM_SERVER=$CLIENT_CACHE/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js

# need_node: fail unless node is there.
need_node() {
    command -v node >/dev/null 2>&1 ||
        fail "node is missing: these scenarios drive real Node.js clients (run scripts/setup.sh, or apt-get install nodejs)"
}

# npm_clients_missing: prints the NPM_CLIENTS specs whose exact version is
# not installed in $CLIENT_CACHE (by its node_modules/NAME/package.json).
npm_clients_missing() {
    "$PYTHON" -c '
import json, os, sys
cache = sys.argv[1]
for spec in sys.argv[2:]:
    name, version = spec.rsplit("@", 1)
    try:
        with open(os.path.join(cache, "node_modules", name, "package.json")) as f:
            installed = json.load(f).get("version")
    except (OSError, ValueError):
        installed = None
    if installed != version:
        print(spec)' "$CLIENT_CACHE" "${NPM_CLIENTS[@]}"
}

# need_npm_clients: node, and the pinned NPM_CLIENTS in $CLIENT_CACHE,
# installed there when missing (`npm install --prefix`; a no-op when they
# already are). Fails loudly if npm is missing or cannot install them.
need_npm_clients() {
    need_node
    local missing shown log
    missing=$(npm_clients_missing) || fail "cannot check the npm clients in $CLIENT_CACHE"
    [ -z "$missing" ] && return 0
    shown=${missing//$'\n'/ }
    command -v npm >/dev/null 2>&1 ||
        fail "npm is missing, and $CLIENT_CACHE lacks $shown (run scripts/setup.sh, or apt-get install npm)"
    mkdir -p "$CLIENT_CACHE" || fail "cannot create the npm client cache $CLIENT_CACHE"
    log=$CLIENT_CACHE/npm-install.log
    note "installing $shown into $CLIENT_CACHE"
    # One installer at a time (scenarios run by hand in parallel share it).
    # shellcheck disable=SC2086 # one argument per package spec
    if ! flock -w 300 "$CLIENT_CACHE/.install.lock" \
        npm install --prefix "$CLIENT_CACHE" --no-audit --no-fund --save-exact $missing >"$log" 2>&1; then
        fail "npm could not install $shown into $CLIENT_CACHE (is the npm registry reachable?); the end of $log:
$(tail -n 20 "$log")"
    fi
    missing=$(npm_clients_missing)
    [ -z "$missing" ] ||
        fail "after npm install, $CLIENT_CACHE still lacks the exact versions ${missing//$'\n'/ } (see $log)"
}

# xdev ARGS...: the CLI (finds the mount through $XDEV_DIR, like a user's).
xdev() { "$XDEV_BIN" "$@"; }

# bg NAME CMD...: runs CMD in the background with stdout in $SCRATCH/NAME.out
# and stderr in $SCRATCH/NAME.err; its pid is in $BG_PID.
bg() {
    local name=$1
    shift
    scratch
    "$@" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" </dev/null &
    BG_PID=$!
    BG_PIDS+=("$BG_PID")
}

# start_policy_daemon: start_own_daemon with `--policy`, the rules (JSON)
# read from stdin into $SCRATCH/policy.json (mode 0600: the daemon refuses
# rules others could change, which $RULES names); XDEV_DIR is the mount.
start_policy_daemon() {
    scratch
    RULES=$SCRATCH/policy.json
    cat >"$RULES"
    chmod 600 "$RULES"
    start_own_daemon --policy "$RULES"
    export XDEV_DIR=$OWN_DIR
}

# bash_event NAME COMMAND: the recorded Claude Code PreToolUse Bash event
# (examples/hooks/claude-pretooluse-bash.json) asking for COMMAND, written
# to $SCRATCH/NAME.json.
bash_event() {
    scratch
    "$PYTHON" -c 'import json, sys
e = json.load(open(sys.argv[1]))
e["tool_input"]["command"] = sys.argv[2]
print(json.dumps(e))' "$LIB_ROOT/examples/hooks/claude-pretooluse-bash.json" "$2" >"$SCRATCH/$1.json"
}

# agent_hook_bg NAME EVENT-FILE: `xdev hook` in the background (see bg)
# with the event on its stdin, under a shell of its own that stands in for
# the agent, so that this script decides from outside the agent's
# processes, as a person in another terminal does (an agent's own processes
# may not decide its calls). The stand-in's exit status is the hook's; its
# pid is in $BG_PID.
agent_hook_bg() {
    # The hook is started in the background of the stand-in so that the
    # redirection is the hook's own: the stand-in's stdin stays another
    # file, as an agent's does.
    # shellcheck disable=SC2016 # expanded by the stand-in
    bg "$1" sh -c '"$0" hook <"$1" & wait $!' "$XDEV_BIN" "$2"
}

# stage_bg NAME STAGE-ARGS... -- CMD...: `xdev stage` in the background
# (see bg), then waits for the id it prints: the stager's pid is in $BG_PID,
# the preview's id in $ID.
stage_bg() {
    local name=$1
    shift
    need_xdev
    bg "$name" "$XDEV_BIN" stage "$@"
    wait_line "$SCRATCH/$name.out" 30000 "the id printed by xdev stage ($name)" "$BG_PID"
    ID=$(head -n 1 "$SCRATCH/$name.out")
    case "$ID" in
    pending-action:*:*) ;;
    *) fail "xdev stage ($name) printed $(printf '%q' "$ID") as its id" ;;
    esac
}

# stage_gated NAME GATE STAGE-ARGS...: stage_bg a preview whose CMD waits
# until the file GATE exists and then prints `slow done`: a scenario holds
# its apply under way for as long as it needs (gated, not timed, so a busy
# machine cannot end it early).
stage_gated() {
    local name=$1 gate=$2
    shift 2
    stage_bg "$name" "$@" -- sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; echo slow done' sh "$gate"
}

# stage_marked NAME STAGE-ARGS...: stage_bg a preview whose CMD only
# creates $MARKER ($SCRATCH/applied), so a scenario can tell whether any
# CMD ran.
stage_marked() {
    local name=$1
    shift
    scratch
    MARKER=$SCRATCH/applied
    stage_bg "$name" "$@" -- sh -c 'echo ran >"$1"' sh "$MARKER"
}

# stage_counted NAME LABEL: stage_bg a preview labelled LABEL whose CMD
# appends its id to $SCRATCH/runs and prints `applied: <reason>` (so the
# resolve's result, and `last`, is that line).
stage_counted() {
    stage_bg "$1" --label "$2" -- sh -c 'echo "$XDEV_ID" >>"$1"; echo "applied: $XDEV_REASON"' sh "$SCRATCH/runs"
}

# runs_of ID: how many times a stage_counted CMD ran for ID ("all": for any).
runs_of() {
    if [ ! -e "$SCRATCH/runs" ]; then
        echo 0
    elif [ "$1" = all ]; then
        grep -c . "$SCRATCH/runs"
    else
        grep -cxF -- "$1" "$SCRATCH/runs"
    fi
}

# assert_no_drafts WHAT: the mount root lists only the mount's own names
# (no scratch file of a writer is left behind), and no pending/<id>/ holds
# anything but its own four entries.
assert_no_drafts() {
    assert_listing "$1"
    local item entry extra
    for item in "$D"/pending/*/; do
        [ -d "$item" ] || continue
        extra=""
        for entry in "$item"* "$item".*; do
            case ${entry##*/} in
            label | source | resolve | reject | . | .. | '*' | '.*') ;;
            *) extra+=" ${entry##*/}" ;;
            esac
        done
        [ -z "$extra" ] || fail "$1: ${item#"$D"/} also holds:$extra"
    done
}

# wait_line FILE MS WHAT [PID]: waits until FILE has a complete first line
# (and fails at once if PID, the process writing it, exits first).
wait_line() {
    local deadline=$(($(now_ms) + $2))
    until [ -s "$1" ] && [ "$(head -n 1 "$1" | wc -l)" -ge 1 ]; do
        if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
            [ -s "$1" ] && [ "$(head -n 1 "$1" | wc -l)" -ge 1 ] && break
            wait "$4" 2>/dev/null
            fail "no $3: it exited with status $? (stderr: $(cat "${1%.out}.err" 2>/dev/null))"
        fi
        [ "$(now_ms)" -lt "$deadline" ] || fail "no $3 within $2 ms (stderr: $(cat "${1%.out}.err" 2>/dev/null))"
        sleep 0.02
    done
}

# wait_until MS WHAT CMD...: polls CMD until it succeeds, or fails after MS.
wait_until() {
    local ms=$1 what=$2
    shift 2
    local deadline=$(($(now_ms) + ms))
    until "$@"; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "$what: not within $ms ms"
        sleep 0.02
    done
}

# wait_exit PID MS WHAT: waits for background PID to exit within MS; its exit
# status is then in $EXIT_CODE.
wait_exit() {
    local pid=$1 ms=$2 what=$3
    local deadline=$(($(now_ms) + ms))
    while kill -0 "$pid" 2>/dev/null; do
        [ "$(now_ms)" -lt "$deadline" ] || fail "$what is still running after $ms ms"
        sleep 0.02
    done
    wait "$pid" 2>/dev/null
    EXIT_CODE=$?
}

# still_running PID WHAT: fail if PID has exited.
still_running() {
    kill -0 "$1" 2>/dev/null || fail "$2 exited early (it should still be waiting)"
}

# pending_is N: whether status.json shows N pending and none in progress.
pending_is() {
    [ "$(status_json 's["pending"], s.get("inProgress", 0)')" = "($1, 0)" ]
}

# in_progress_is N: whether status.json shows N decisions under way.
in_progress_is() {
    [ "$(status_json 's.get("inProgress", 0)')" = "$1" ]
}

# log_records PY-FILTER: the journal records (parsed) for which the Python
# expression over `r` holds, one JSON object per line.
log_records() {
    "$PYTHON" -c '
import json, sys
with open(sys.argv[1]) as f:
    for line in f:
        if line.strip():
            r = json.loads(line)
            if eval(sys.argv[2]):
                print(json.dumps(r, sort_keys=True))' "$D/log" "$1" || fail "cannot read the journal at $D/log"
}

# has_log_record PYEXPR: the journal has a record for which PYEXPR holds.
# A condition for wait_until, which runs it anew each time (a
# `test -n "$(log_records ...)"` there would be read once, before waiting).
has_log_record() {
    [ -n "$(log_records "$1")" ]
}

# assert_decision REASON EVENT OUTCOME ERRNO PID PROCESS: the journal has
# exactly one record with REASON, and it is an EVENT (resolve|reject) with
# that outcome (ok|error) and errno (`-` for none), made by process PID
# named PROCESS.
assert_decision() {
    py '
reason, event, outcome, err, pid, process = sys.argv[1:7]
with open(D + "/log") as f:
    found = [r for r in map(json.loads, filter(str.strip, f)) if r.get("reason") == reason]
if len(found) != 1:
    sys.exit("journal: %d records with reason %r, expected exactly 1: %r" % (len(found), reason, found))
r = found[0]
want = {"event": event, "outcome": outcome, "errno": None if err == "-" else err,
        "pid": int(pid), "process": process}
wrong = ["%s is %r (expected %r)" % (k, r.get(k), v) for k, v in want.items() if r.get(k) != v]
if wrong:
    sys.exit("journal record with reason %r: %s; the record: %r" % (reason, ", ".join(wrong), r))
' "$@"
}

# start_own_daemon ARGS...: a second daemon of this scenario's own, mounted
# on a fresh temp dir with `xdev mount DIR ARGS...`; sets OWN_DIR and
# OWN_PID. It is stopped (SIGTERM) and unmounted at exit.
start_own_daemon() {
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/xdev-$SCENARIO-mount.XXXXXX") || fail "mktemp failed"
    start_own_daemon_at "$dir" "$@"
}

# start_own_daemon_at DIR ARGS...: the same on DIR (which xdev creates, and
# removes again, when it is missing).
start_own_daemon_at() {
    need_xdev
    scratch
    OWN_DIR=$1
    shift
    "$XDEV_BIN" mount "$OWN_DIR" "$@" >"$SCRATCH/own-daemon.out" 2>"$SCRATCH/own-daemon.err" </dev/null &
    OWN_PID=$!
    OWN_DAEMONS+=("$OWN_PID $OWN_DIR")
    local deadline=$(($(now_ms) + 30000))
    until grep -qxF "xdev: mounted $OWN_DIR" "$SCRATCH/own-daemon.out"; do
        kill -0 "$OWN_PID" 2>/dev/null ||
            fail "xdev mount $OWN_DIR $* exited before it was ready: $(cat "$SCRATCH/own-daemon.err")"
        [ "$(now_ms)" -lt "$deadline" ] || fail "xdev mount $OWN_DIR $* was not ready within 30 s"
        sleep 0.02
    done
}

# stop_own_daemon: SIGTERM; it must exit 0 within 2 s and leave nothing mounted.
stop_own_daemon() {
    kill -TERM "$OWN_PID" 2>/dev/null
    wait_exit "$OWN_PID" 10000 "the scenario's own daemon (after SIGTERM)"
    assert_eq "$EXIT_CODE" 0 "exit status of the own daemon after SIGTERM"
    ! is_mounted "$OWN_DIR" || fail "$OWN_DIR is still mounted after its daemon exited"
}

# holds_open PATH: whether some process has PATH open now (per /proc/*/fd),
# e.g. a reader started with bg has got as far as its open.
holds_open() {
    # (not a pipe into grep: under pipefail, find's complaints about
    # processes that exit meanwhile would make it fail)
    [ -n "$(find /proc/[0-9]*/fd -maxdepth 1 -lname "$1" -print -quit 2>/dev/null)" ]
}

# is_mounted DIR: whether DIR is a mount point now.
is_mounted() {
    grep -qF " $1 " /proc/self/mounts
}

# mounts_at DIR: how many mounts are at DIR now (stacked ones count each).
mounts_at() {
    awk -v dir="$1" '$5 == dir { n++ } END { print n + 0 }' /proc/self/mountinfo
}

# is_stale DIR: whether DIR is a stale mount: the kernel answers "Transport
# endpoint is not connected".
is_stale() {
    local error
    error=$(stat -f -- "$1" 2>&1 >/dev/null)
    [[ "$error" == *"not connected"* ]]
}

lib_cleanup() {
    local status=$? pid entry dir waited=0
    for pid in "${BG_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            disown "$pid" 2>/dev/null # no "Killed" notice from bash
            kill -KILL "$pid" 2>/dev/null
            waited=1
        fi
    done
    for entry in "${OWN_DAEMONS[@]}"; do
        pid=${entry%% *}
        dir=${entry#* }
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
            for _ in $(seq 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.02
            done
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
        if is_mounted "$dir"; then
            fusermount3 -u "$dir" 2>/dev/null || fusermount3 -uz "$dir" 2>/dev/null
        fi
        rmdir "$dir" 2>/dev/null
    done
    # Killed stagers withdraw their previews: let the mount settle, so the
    # next scenario finds it idle.
    if [ "$waited" = 1 ]; then
        for _ in $(seq 100); do
            pending_is 0 2>/dev/null && break
            sleep 0.02
        done
    fi
    [ -n "$SCRATCH" ] && rm -rf "$SCRATCH"
    exit "$status"
}
trap lib_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

require_idle
