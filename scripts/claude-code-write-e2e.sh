#!/usr/bin/env bash
# End-to-end: the real Claude Code binary's Write tool on an xdev device, against
# a scripted model server on 127.0.0.1, in a network namespace of its own.
#
#   scripts/claude-code-write-e2e.sh [--keep] [--strace] [--permissions rules|accept-edits]
#
# Two runs, each on a fresh mount in a temporary directory, with a fresh HOME
# and project directory:
#
#   pending  `xdev stage --mount <mnt> --label "edit README" -- sh -c 'echo
#            applied; touch <marker>'` stages a preview first. The scripted
#            model asks for Read of <mnt>/resolve (Claude Code writes only a
#            file it has read; the read returns the device's usage line), then
#            Write of <mnt>/resolve with "tests pass, ship it\n", then ends
#            with text. Claude Code writes a draft beside the devices and
#            renames it onto resolve, which applies the preview; it then checks
#            the file's size, which for it is the bytes it delivered.
#   none     the same with nothing pending: the rename fails with ENOENT.
#
# scripts/e2e/check.py (`write`) asserts, for `pending`: the stager exited 0
# and the marker exists; the journal (<mnt>/log) has one staged and exactly
# one decision, a resolve with reason "tests pass, ship it", outcome ok, naming
# the claude process (its pid); the Write's tool_result is a success; for
# `none`: the Write's tool_result is an error naming ENOENT, no marker, no
# successful decision; for both: claude -p exited 0 with no permission denial,
# the Read returned the usage line, `ls -A <mnt>` is the same before and after
# (no draft left), nothing pending afterwards, and the agent's namespace has
# only lo.
#
# Permissions, so that Read and Write run without a prompt (which `-p` cannot
# show). Claude Code 2.1.332 refuses a Read outside the project ("Claude
# requested permissions to read from <mnt>/resolve, but you haven't granted it
# yet.") and, once the mount is an added directory, a Write in default mode
# ("Claude requested permissions to write to ..."); allow rules in the
# project's .claude/settings.json are ignored in an untrusted workspace
# ("Ignoring 2 permissions.allow entries from .claude/settings.json: this
# workspace has not been trusted"). So:
#   --permissions rules         (default) --permission-mode default
#                               --allowedTools "Read(/<mnt>/resolve)" "Edit(/<mnt>/resolve)":
#                               only that one device (`//` starts an absolute
#                               path in a rule; Edit rules cover Write)
#   --permissions accept-edits  --permission-mode acceptEdits --add-dir <mnt>
# No hook is involved.
#
# Not part of CI. Needs root (unshare --net, FUSE), node/npm with the npm
# registry reachable for the first install, python3, iproute2, and strace for
# --strace.
#
# Options:
#   --keep         keep the work directory (it is always kept on failure)
#   --strace       run Claude Code under `strace -f -e trace=openat,rename,
#                  renameat2,statx,newfstatat,unlink,ftruncate,write`, print the
#                  calls that touch resolve or a draft, and also assert: one
#                  O_EXCL draft, one write of it, one rename onto resolve (0,
#                  or ENOENT with nothing pending), no in-place fallback, and
#                  Claude Code's stat of resolve after the rename shows the
#                  bytes it delivered
#   --permissions  see above
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing),
# XDEV_CLIENT_CACHE, E2E_TIMEOUT (seconds for each claude run, default 180).
set -uo pipefail

CONTENT=$'tests pass, ship it\n'
LABEL="edit README"
PROMPT="Write the scripted reason to the xdev device."

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
trace=0
permissions=rules
while [ $# -gt 0 ]; do
    case "$1" in
    --strace) trace=1 ;;
    --permissions)
        [ $# -ge 2 ] || { echo "claude-code-write-e2e: --permissions needs rules or accept-edits" >&2; exit 2; }
        permissions=$2
        shift
        ;;
    --permissions=*) permissions=${1#--permissions=} ;;
    *) e2e_common_arg claude-code-write-e2e "$1" ;;
    esac
    shift
done
case "$permissions" in
rules | accept-edits) ;;
*)
    echo "claude-code-write-e2e: --permissions is rules or accept-edits, not $permissions" >&2
    exit 2
    ;;
esac

e2e_begin claude-code-write-e2e
[ "$trace" = 0 ] || command -v strace >/dev/null 2>&1 || die "--strace needs strace"
e2e_claude
e2e_work_dir
e2e_say_versions "Claude Code" "$CLAUDE_CODE_VERSION" "permissions: $permissions"

# run_variant NAME: one run (pending or none) in $W/NAME; its checks go to
# $W/NAME/check.out. Returns check.py's status.
run_variant() {
    local name=$1 R elapsed netns_status
    R=$W/$name
    MNT=$R/mnt
    local marker=$R/marker
    mkdir -p "$R/project" "$R/home" || die "cannot create $R"
    e2e_mount "$MNT" "$R/xdev"
    ls -A "$MNT" >"$R/ls.before" || die "cannot list $MNT"

    if [ "$name" = pending ]; then
        "$XDEV_BIN" stage --mount "$MNT" --label "$LABEL" -- sh -c "echo applied; touch '$marker'" \
            >"$R/stage.out" 2>"$R/stage.err" </dev/null &
        stage_pid=$!
        for _ in $(seq 100); do
            [ -n "$(ls -A "$MNT/pending" 2>/dev/null)" ] && break
            kill -0 "$stage_pid" 2>/dev/null || die "xdev stage exited early: $(cat "$R/stage.err")"
            sleep 0.1
        done
        [ -n "$(ls -A "$MNT/pending")" ] || die "the preview was not pending within 10 s"
        say "$name: staged $(head -n 1 "$R/stage.out") ($LABEL)"
    else
        say "$name: nothing pending"
    fi

    E2E_STRACE=
    [ "$trace" = 1 ] && E2E_STRACE=$R/strace.txt
    export E2E_WORK=$R E2E_PROJECT=$R/project E2E_HOME=$R/home E2E_CLAUDE=$CLAUDE E2E_PROMPT=$PROMPT \
        E2E_TIMEOUT=$TIMEOUT E2E_PYTHON=$PYTHON E2E_SERVER=$E2E/model_server.py E2E_SCRIPT=write \
        E2E_FILE=$MNT/resolve E2E_CONTENT=$CONTENT E2E_PERMISSIONS=$permissions E2E_STRACE
    e2e_run_agent "$R" "$name"

    if [ -n "$stage_pid" ]; then
        # An applied stager exits at once; one still waiting is withdrawn.
        for _ in $(seq 50); do kill -0 "$stage_pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$stage_pid" 2>/dev/null; then
            echo "still waiting after the run (killed)" >"$R/stage.rc"
            kill -TERM "$stage_pid" 2>/dev/null
            wait "$stage_pid" 2>/dev/null
        else
            wait "$stage_pid"
            echo $? >"$R/stage.rc"
        fi
        stage_pid=
    fi
    ls -A "$MNT" >"$R/ls.after"
    e2e_save_journal "$R/journal.jsonl"
    cat "$MNT/status.json" >"$R/status.json" 2>/dev/null
    cat "$MNT/last" >"$R/last.txt" 2>/dev/null
    local mnt=$MNT
    e2e_unmount "$MNT"
    MNT=

    say "$name: server requests (${elapsed}s in the namespace):"
    e2e_print_requests "$R/requests.jsonl"
    say "$name: journal:"
    sed 's/^/  /' "$R/journal.jsonl"
    say "$name: last: $(cat "$R/last.txt")"
    if [ "$trace" = 1 ]; then
        say "$name: Claude Code's syscalls on resolve and its draft (strace; <mnt> is $mnt):"
        "$PYTHON" "$E2E/check.py" trace "$R" "$mnt" | sed 's/^/  /'
    fi
    say "$name: checks:"
    "$PYTHON" "$E2E/check.py" write "$R" "$name" "$mnt" "$CONTENT" "$marker" >"$R/check.out"
    local status=$?
    sed 's/^/  /' "$R/check.out"
    return "$status"
}

failed=0
run_variant pending || failed=$((failed + 1))
run_variant none || failed=$((failed + 1))
if [ "$failed" = 0 ]; then
    say "PASS: Claude Code $CLAUDE_CODE_VERSION's Write onto <mnt>/resolve applied the pending preview once (tool_result success), and with nothing pending its tool_result names ENOENT; no draft left"
    exit 0
fi
e2e_runs_failed "$failed"
