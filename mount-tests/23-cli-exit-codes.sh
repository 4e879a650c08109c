#!/usr/bin/env bash
# (w) The CLI's exit codes and messages, and how it finds the mount:
#   - `xdev resolve` with nothing pending: exit 1, nothing on stdout, stderr
#     exactly `xdev: ENOENT: No pending action to resolve. ...`;
#   - `xdev reject`: exit 0, the result text on stdout; TEXT or stdin;
#   - `xdev propose` outside plan mode: exit 1, `xdev: EPERM: ...`;
#   - `xdev status [--json]` prints `status` / `status.json`;
#   - `xdev plan enter` on a mount without a plan desk: exit 1, ENOENT;
#   - `xdev stage` refused (bad --source-tool): exit 1, `xdev: EINVAL: ...`
#     ending with the rule it broke;
#   - the mount comes from --mount, else $XDEV_DIR; no mount there: exit 1
#     and `xdev: no xdev mount at DIR: it is not a FUSE mount ...` (or `it
#     does not exist ...`, creating nothing);
#   - `xdev run` of a command that is missing exits 127, of one that cannot
#     be run 126, as shells say;
#   - `xdev hook` with a flag it does not know exits 1 (a non-blocking error
#     to an agent), and 2 (blocking) only when `--strict` asks to fail
#     closed; other commands keep the usual 2 for a bad command line;
#   - `xdev stage --help` names every exit code;
#   - a `--session` or `--id` that no directory of the mount could have
#     (`..`, `.`, `a/b`, empty, 256 bytes, a control character), and an
#     XDEV_DIR that leaves a session through `..`, exit 2 and decide
#     nothing, while an agent's hook waits in session "other"; `--session
#     other` then decides it;
#   - flags are checked by their own rules before any mount is looked for:
#     `--deadline 10d` and `wait --pid 0` exit 2 in the flag's words;
#   - output into a closed pipe ends quietly with exit 0;
#   - a mount the system refuses (root without CAP_SYS_ADMIN, as in a
#     container started without it) says what it needs and leaves no
#     directory behind.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

# run_cli ARGS...: sets OUT, ERR and RC.
run_cli() {
    "$XDEV_BIN" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
    RC=$?
    OUT=$(cat "$SCRATCH/out")
    ERR=$(cat "$SCRATCH/err")
}

run_cli resolve "tests pass"
assert_eq "$RC" 1 "exit status of xdev resolve with nothing pending"
assert_eq "$OUT" "" "stdout of xdev resolve with nothing pending"
assert_eq "$ERR" "xdev: ENOENT: $NOTHING_TO_RESOLVE" "stderr of xdev resolve with nothing pending"

run_cli reject "not needed"
assert_eq "$RC:$OUT:$ERR" "0:$NOTHING_TO_REJECT:" "xdev reject with nothing pending (status:stdout:stderr)"
token="stdin-$$-$RANDOM"
out=$(echo "$token" | "$XDEV_BIN" reject) || fail "xdev reject reading stdin failed"
assert_eq "$out" "$NOTHING_TO_REJECT" "xdev reject with the reason on stdin"
assert_eq "$(log_records "r.get('reason') == '$token'" | wc -l)" 1 "journal records with the reason read from stdin"

run_cli propose my-plan
assert_eq "$RC:$OUT" "1:" "xdev propose outside plan mode (status:stdout)"
assert_eq "$ERR" "xdev: EPERM: $NO_PLAN" "stderr of xdev propose outside plan mode"

run_cli status
assert_eq "$RC" 0 "exit status of xdev status"
assert_eq "$OUT" "$(cat "$D/status")" "xdev status prints the status file"
assert_contains "$OUT" "pending: 0" "xdev status"
assert_contains "$OUT" "plan mode: off" "xdev status"
run_cli status --json
assert_eq "$RC" 0 "exit status of xdev status --json"
py '
s = json.loads(sys.argv[1])
if s["stack"] != [] or s["pending"] != 0 or (s["last"]["device"], s["last"]["errno"]) != ("propose", "EPERM"):
    sys.exit("xdev status --json: %r" % s)' "$OUT"

run_cli plan enter
assert_eq "$RC:$OUT" "1:" "xdev plan enter on a mount without a plan desk (status:stdout)"
assert_contains "$ERR" "xdev: ENOENT: this mount has no plan desk" "stderr of xdev plan enter without a plan desk"

run_cli stage --label x --source-tool "a:b" -- true
assert_eq "$RC:$OUT" "1:" "xdev stage with a bad --source-tool (status:stdout)"
assert_contains "$ERR" "xdev: EINVAL: " "stderr of xdev stage with a bad --source-tool"
case "$ERR" in
*"Bad stage request: sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -; it contains ':'.") ;;
*) fail "stderr of xdev stage with a bad --source-tool does not end with the rule: $(printf '%q' "$ERR")" ;;
esac
pending_is 0 || fail "a refused stage left something pending"

# Mount discovery: --mount beats XDEV_DIR; XDEV_DIR is used without it.
nowhere=$SCRATCH/not-a-mount
mkdir "$nowhere"
XDEV_DIR=$nowhere run_cli status --mount "$D"
assert_eq "$RC" 0 "xdev status --mount MOUNT with XDEV_DIR elsewhere"
XDEV_DIR=$nowhere run_cli status
assert_eq "$RC:$OUT" "1:" "xdev status with XDEV_DIR not a mount (status:stdout)"
assert_eq "$ERR" "xdev: no xdev mount at $nowhere: it is not a FUSE mount (use --mount DIR or set XDEV_DIR, or start one with \`xdev mount DIR\`)" \
    "stderr of xdev status with XDEV_DIR not a mount"
run_cli resolve --mount "$nowhere" x
assert_eq "$RC" 1 "exit status of xdev resolve --mount NOT-A-MOUNT"
assert_contains "$ERR" "xdev: no xdev mount at $nowhere: " "stderr of xdev resolve --mount NOT-A-MOUNT"
run_cli stage --mount "$nowhere" --label x -- true
assert_eq "$RC" 1 "exit status of xdev stage --mount NOT-A-MOUNT"
assert_contains "$ERR" "xdev: no xdev mount at $nowhere: " "stderr of xdev stage --mount NOT-A-MOUNT"
missing=$SCRATCH/nothing-here
run_cli status --mount "$missing"
assert_eq "$RC:$OUT" "1:" "xdev status --mount MISSING-DIR (status:stdout)"
assert_eq "$ERR" "xdev: no xdev mount at $missing: it does not exist (use --mount DIR or set XDEV_DIR, or start one with \`xdev mount DIR\`)" \
    "stderr of xdev status --mount MISSING-DIR"
XDEV_DIR=$missing run_cli stage --label x -- true
assert_eq "$RC" 1 "exit status of xdev stage with XDEV_DIR missing"
assert_contains "$ERR" "xdev: no xdev mount at $missing: " "stderr of xdev stage with XDEV_DIR missing"
[ ! -e "$missing" ] || fail "a client created $missing"
run_cli resolve --id pending-action:nope:999 x
assert_eq "$RC" 1 "exit status of xdev resolve --id UNKNOWN"
assert_contains "$ERR" "xdev: ENOENT: no such pending preview" "stderr of xdev resolve --id UNKNOWN"

run_cli run -- "$SCRATCH/no-such-command"
assert_eq "$RC" 127 "exit status of xdev run with a missing command"
assert_contains "$ERR" "No such file or directory" "stderr of xdev run with a missing command"
printf '#!/bin/sh\n' >"$SCRATCH/not-executable"
run_cli run -- "$SCRATCH/not-executable"
assert_eq "$RC" 126 "exit status of xdev run with a command it cannot run"

run_cli hook --bogus
assert_eq "$RC:$OUT" "1:" "xdev hook with an unknown flag (status:stdout)"
assert_contains "$ERR" "unexpected argument '--bogus'" "stderr of xdev hook with an unknown flag"
run_cli hook --strict --bogus
assert_eq "$RC" 2 "exit status of xdev hook --strict with an unknown flag (fails closed)"
run_cli resolve --bogus
assert_eq "$RC" 2 "exit status of xdev resolve with an unknown flag"

# Names the mount never lists decide nothing: an agent's hook waits in
# session "other", and nothing else does.
"$PYTHON" -c '
import json, sys
event = json.load(open(sys.argv[1]))
event["session_id"] = "other"
event["tool_input"] = {"command": "rm -rf build", "description": "Clean"}
json.dump(event, open(sys.argv[2], "w"))' "$LIB_ROOT/examples/hooks/cargo-test.json" "$SCRATCH/other.json" ||
    fail "cannot write the hook event"
agent_hook_bg hook "$SCRATCH/other.json"
hook=$BG_PID
wait_until 10000 "the hook's preview staged" pending_is 1
ID=$(ls "$D/pending")
long=$(printf 's%.0s' $(seq 256))
for name in .. . a/b "" "$long" $'a\x01b'; do
    for device in resolve reject; do
        # (bounded: a writer that got through would wait on the hook)
        timeout 10 "$XDEV_BIN" "$device" --session "$name" "meant for session $name" >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
        assert_eq "$?" 2 "exit status of xdev $device --session $(printf '%q' "$name")"
        assert_contains "$(cat "$SCRATCH/err")" "\`xdev resolve --id <id>\`" "stderr of xdev $device --session $(printf '%q' "$name")"
        timeout 10 "$XDEV_BIN" "$device" --id "$name" "meant for one item" >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
        assert_eq "$?" 2 "exit status of xdev $device --id $(printf '%q' "$name")"
        assert_contains "$(cat "$SCRATCH/err")" "no pending id is" "stderr of xdev $device --id $(printf '%q' "$name")"
    done
done
XDEV_DIR=$D/sessions/.. timeout 10 "$XDEV_BIN" resolve "meant for session .." >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
assert_eq "$?" 2 "exit status of xdev resolve with XDEV_DIR=\$D/sessions/.."
assert_contains "$(cat "$SCRATCH/err")" "goes through '..' below the xdev mount $D" "stderr of xdev resolve with XDEV_DIR=\$D/sessions/.."
pending_is 1 || fail "a refused name decided the hook's preview"
assert_eq "$(log_records "r.get('id') == '$ID' and r['event'] != 'staged'" | wc -l)" 0 "journal records of decisions after refused names"
still_running "$hook" "xdev hook (its call is undecided)"
run_cli resolve --session other "clean it"
assert_eq "$RC" 0 "exit status of xdev resolve --session other ($ERR)"
wait_exit "$hook" 10000 "xdev hook after resolve --session other"
assert_contains "$(cat "$SCRATCH/hook.out")" '"permissionDecision":"allow","permissionDecisionReason":"clean it"' "the hook's answer"

# Flags are checked by their own rules, with no mount needed.
XDEV_DIR=$SCRATCH/nothing-here run_cli stage --label x --deadline 10d -- true
assert_eq "$RC" 2 "exit status of xdev stage --deadline 10d"
assert_contains "$ERR" "invalid value '10d' for '--deadline <DURATION>': a deadline is from 1ms to 7days" "stderr of xdev stage --deadline 10d"
run_cli wait "$SCRATCH/nothing-here" --pid 0
assert_eq "$RC" 2 "exit status of xdev wait --pid 0"
assert_contains "$ERR" "a process id is a number from 1 to" "stderr of xdev wait --pid 0"

# Output into a closed pipe ends quietly.
for args in "completions zsh" "man" "status"; do
    # shellcheck disable=SC2086 # the words are the arguments
    "$XDEV_BIN" $args 2>"$SCRATCH/err" | true
    assert_eq "${PIPESTATUS[0]}:$(cat "$SCRATCH/err")" "0:" "xdev $args | true (status:stderr)"
done
"$XDEV_BIN" man 2>"$SCRATCH/err" | head -c1 >/dev/null
assert_eq "$(cat "$SCRATCH/err")" "" "stderr of xdev man | head -c1"

run_cli stage --help
for code in 0 1 3 4 5; do
    assert_contains "$OUT" "$code " "the exit codes in xdev stage --help"
done
assert_contains "$OUT" "5 the mount" "xdev stage --help"
if [ "$(id -u)" -eq 0 ]; then
    run_cli_without_sys_admin() {
        setpriv --bounding-set -sys_admin --inh-caps -sys_admin "$XDEV_BIN" "$@" \
            >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
        RC=$?
        ERR=$(cat "$SCRATCH/err")
    }
    run_cli_without_sys_admin mount "$SCRATCH/no-cap"
    assert_eq "$RC" 1 "exit status of xdev mount without CAP_SYS_ADMIN"
    assert_contains "$ERR" "mounting needs root with CAP_SYS_ADMIN" "stderr of xdev mount without CAP_SYS_ADMIN"
    assert_contains "$ERR" "--cap-add SYS_ADMIN" "stderr of xdev mount without CAP_SYS_ADMIN"
    [ ! -e "$SCRATCH/no-cap" ] || fail "xdev mount left $SCRATCH/no-cap behind"
else
    note "not root: the CAP_SYS_ADMIN check needs root to drop the capability"
fi
note "CLI: resolve exit 1 ENOENT, reject 0, propose 1 EPERM, stage 1 EINVAL, --mount/XDEV_DIR, run 127/126, hook bad flag 1 (2 with --strict), unlisted names 2, closed pipes 0"
