# shellcheck shell=bash
# Shared by scripts/claude-code-e2e.sh, scripts/claude-code-write-e2e.sh,
# scripts/claude-code-plan-e2e.sh, scripts/claude-code-plugin-e2e.sh,
# scripts/claude-code-self-approve-e2e.sh, scripts/codex-e2e.sh and
# scripts/policy-e2e.sh (sourced first). It sets what they all use; the
# caller sets E2E_NAME (what say and die print first) and W (the work
# directory, empty until there is one) before calling the functions.

# The pinned Claude Code, and where things are.
CLAUDE_CODE_VERSION=2.1.332
# The pinned Codex CLI (npm @openai/codex; its platform package ships a static binary).
CODEX_VERSION=0.171.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
E2E=$ROOT/scripts/e2e
CACHE=${XDEV_CLIENT_CACHE:-$ROOT/target/client-cache}
XDEV_BIN=${XDEV_BIN:-$ROOT/target/debug/xdev}
TIMEOUT=${E2E_TIMEOUT:-180}
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=$(command -v python3); fi
export CLAUDE_CODE_VERSION CODEX_VERSION ROOT E2E CACHE XDEV_BIN TIMEOUT PYTHON

# say: prints a line of progress.
say() { printf '%s: %s\n' "$E2E_NAME" "$*"; }
e2e_say() { say "$@"; }

# shellcheck disable=SC2034 # keep is the caller's (its EXIT trap reads it)
# die: prints why the run failed, keeps the work directory (when there is
# one), and exits 1.
die() {
    printf '%s: FAIL: %s\n' "$E2E_NAME" "$*" >&2
    [ -n "${W:-}" ] && keep=1
    exit 1
}

# e2e_claude_bin: prints the path of a Claude Code binary in $CACHE whose
# --version is the pinned one. The npm package's bin/claude.exe is replaced by
# the native binary in its postinstall; if that did not run, the platform
# package's binary is used directly.
e2e_claude_bin() {
    local arch candidate
    case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) arch=$(uname -m) ;;
    esac
    for candidate in \
        "$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe" \
        "$CACHE/node_modules/@anthropic-ai/claude-code-linux-$arch/claude" \
        "$CACHE/node_modules/@anthropic-ai/claude-code-linux-$arch-musl/claude"; do
        if [ -x "$candidate" ] &&
            [ "$(timeout 30 "$candidate" --version 2>/dev/null)" = "$CLAUDE_CODE_VERSION (Claude Code)" ]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# shellcheck disable=SC2034 # CLAUDE is the caller's
# e2e_claude: sets CLAUDE to the pinned Claude Code binary, installing it into
# $CACHE first when it is not there (npm; the registry must be reachable).
e2e_claude() {
    local log
    CLAUDE=$(e2e_claude_bin) && return 0
    e2e_say "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION into $CACHE"
    mkdir -p "$CACHE" || die "cannot create $CACHE"
    log=$CACHE/npm-install-claude-code.log
    # The same lock as mount-tests/lib.sh: one npm at a time in the cache.
    flock -w 600 "$CACHE/.install.lock" \
        npm install --prefix "$CACHE" --no-audit --no-fund --save-exact \
        "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >"$log" 2>&1 ||
        die "npm could not install @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION (is the registry reachable?); the end of $log:
$(tail -n 20 "$log")"
    CLAUDE=$(e2e_claude_bin) || die "after npm install, no Claude Code $CLAUDE_CODE_VERSION binary runs from $CACHE (see $log)"
}

# e2e_claude_offline HOME DIR ARGS...: runs the pinned Claude Code ($CLAUDE)
# with ARGS in DIR, as a fresh user whose home is HOME: a clean environment
# (nothing of the caller's) and no network (`unshare --net`), as the
# `claude plugin ...` commands need neither.
e2e_claude_offline() {
    local home=$1 dir=$2
    shift 2
    (cd "$dir" && unshare --net -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER=root LOGNAME=root \
        SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
        DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 timeout --kill-after=5 60 "$CLAUDE" "$@" </dev/null)
}

# e2e_codex_bin: prints the path of a Codex binary in $CACHE whose --version
# is the pinned one (the platform package's static binary).
e2e_codex_bin() {
    local triple candidate
    case "$(uname -m)" in
    x86_64) triple=x64/vendor/x86_64-unknown-linux-musl ;;
    aarch64) triple=arm64/vendor/aarch64-unknown-linux-musl ;;
    *) return 1 ;;
    esac
    candidate=$CACHE/node_modules/@openai/codex-linux-${triple%%/*}/${triple#*/}/bin/codex
    if [ -x "$candidate" ] && [ "$(timeout 30 "$candidate" --version 2>/dev/null)" = "codex-cli $CODEX_VERSION" ]; then
        printf '%s\n' "$candidate"
        return 0
    fi
    return 1
}

# shellcheck disable=SC2034 # CODEX is the caller's
# e2e_codex: sets CODEX to the pinned Codex binary, installing it into $CACHE
# first when it is not there (npm; the registry must be reachable).
e2e_codex() {
    local log
    CODEX=$(e2e_codex_bin) && return 0
    e2e_say "installing @openai/codex@$CODEX_VERSION into $CACHE"
    mkdir -p "$CACHE" || die "cannot create $CACHE"
    log=$CACHE/npm-install-codex.log
    flock -w 600 "$CACHE/.install.lock" \
        npm install --prefix "$CACHE" --no-audit --no-fund --save-exact \
        "@openai/codex@$CODEX_VERSION" >"$log" 2>&1 ||
        die "npm could not install @openai/codex@$CODEX_VERSION (is the registry reachable?); the end of $log:
$(tail -n 20 "$log")"
    CODEX=$(e2e_codex_bin) || die "after npm install, no Codex $CODEX_VERSION binary runs from $CACHE (see $log)"
}

# e2e_codex_home DIR EVENT APPROVAL SANDBOX COMMAND: makes DIR a fresh
# CODEX_HOME: config.toml points the provider `e2e` (wire_api "responses",
# key from XDEV_E2E_API_KEY) at the scripted server (in_netns.sh gives the
# port) with approval_policy APPROVAL and sandbox_mode SANDBOX, and
# hooks.json runs COMMAND on the hook EVENT (matcher Bash, timeout 600 s).
e2e_codex_home() {
    mkdir -p "$1" || die "cannot create $1"
    "$PYTHON" - "$@" <<'PY' || die "cannot write the Codex home $1"
import json, os, sys
home, event, approval, sandbox, command = sys.argv[1:6]
config = f"""model = "gpt-e2e-scripted"
model_provider = "e2e"
approval_policy = "{approval}"
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.e2e]
name = "xdev e2e scripted server"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "XDEV_E2E_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""
with open(os.path.join(home, "config.toml"), "w") as f:
    f.write(config)
hooks = {"hooks": {event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 600}]}]}}
with open(os.path.join(home, "hooks.json"), "w") as f:
    json.dump(hooks, f, indent=2)
    f.write("\n")
PY
}

# e2e_xdev: builds xdev (and xdev-hook beside it) when either is missing.
e2e_xdev() {
    if [ ! -x "$XDEV_BIN" ] || [ ! -x "$(dirname "$XDEV_BIN")/xdev-hook" ]; then
        e2e_say "building xdev (cargo build)"
        (cd "$ROOT" && cargo build --quiet) || die "cargo build failed"
        [ -x "$XDEV_BIN" ] || die "no xdev binary at $XDEV_BIN after cargo build"
    fi
}

# e2e_mount MNT LOGPREFIX [OPTION...]: serves a fresh mount at MNT in the
# background (`xdev mount MNT OPTION...`, stdout and stderr to LOGPREFIX.out
# and .err), sets xdev_pid, and waits for it to report its mount.
e2e_mount() {
    local mnt=$1 logs=$2
    shift 2
    "$XDEV_BIN" mount "$mnt" "$@" >"$logs.out" 2>"$logs.err" </dev/null &
    xdev_pid=$!
    for _ in $(seq 100); do
        grep -q '^xdev: mounted' "$logs.out" 2>/dev/null && return 0
        kill -0 "$xdev_pid" 2>/dev/null || die "xdev mount exited: $(cat "$logs.err")"
        sleep 0.1
    done
    die "xdev mount did not report its mount within 10 s"
}

# e2e_unmount MNT: stops the mount started by e2e_mount (by its pid) and makes
# sure MNT is no longer mounted.
e2e_unmount() {
    local mnt=$1
    if [ -n "${xdev_pid:-}" ]; then
        kill -TERM "$xdev_pid" 2>/dev/null
        wait "$xdev_pid" 2>/dev/null
        xdev_pid=
    fi
    if [ -n "$mnt" ] && mountpoint -q "$mnt" 2>/dev/null; then
        fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
    fi
}

# e2e_require_tools: dies unless this is root with every tool both scripts
# need (the caller sets PYTHON).
e2e_require_tools() {
    local tool
    [ "$(id -u)" = 0 ] || die "run as root (unshare --net and the FUSE mount need it)"
    for tool in unshare ip npm node timeout flock mountpoint fusermount3; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (scripts/setup.sh installs what xdev needs; iproute2 gives ip)"
    done
    [ -n "$PYTHON" ] || die "python3 is missing"
}

# e2e_leave_work_dir DIR KEEP STATUS: removes the work directory DIR, unless
# KEEP is 1 or the run failed (STATUS not 0): then it says where it is.
e2e_leave_work_dir() {
    [ -n "$1" ] || return 0
    if [ "$2" = 1 ] || [ "$3" != 0 ]; then
        say "work directory kept: $1"
    else
        rm -rf "$1"
    fi
}

# e2e_decide_two RUNDIR MARK1: the decider of the gate runs: resolves the
# first preview that appears under $MNT/pending with $RESOLVE_REASON and
# rejects the second with $REJECT_REASON, saving each one's detail as
# RUNDIR/detail.N. One line per decision into RUNDIR/decider.tsv: n, id,
# device, write status, whether MARK1 existed before the write, label.
e2e_decide_two() {
    local rd=$1 mark1=$2 n=0 seen=" " ids id label device reason rc before count
    while [ "$n" -lt 2 ]; do
        ids=$(ls -U "$MNT/pending" 2>/dev/null) || ids=
        count=$(printf '%s' "$ids" | grep -c .)
        id=$(printf '%s\n' "$ids" | head -n 1)
        if [ -n "$id" ] && [[ "$seen" != *" $id "* ]]; then
            [ "$count" = 1 ] || echo "decider: $count previews pending at once: $ids" >&2
            label=$(cat "$MNT/pending/$id/label" 2>/dev/null) || label="(unreadable)"
            cat "$MNT/pending/$id/detail" >"$rd/detail.$n" 2>/dev/null || rm -f "$rd/detail.$n"
            if [ "$n" = 0 ]; then device=resolve reason=$RESOLVE_REASON; else device=reject reason=$REJECT_REASON; fi
            if [ -e "$mark1" ]; then before=present; else before=absent; fi
            echo "decider: $id ($label): $device \"$reason\"" >&2
            echo "$reason" >"$MNT/$device"
            # shellcheck disable=SC2320 # echo's status is the device write's: 0 once the hook answered
            rc=$?
            echo "decider: write status $rc; last: $(cat "$MNT/last" 2>/dev/null)" >&2
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$id" "$device" "$rc" "$before" "$label" >>"$rd/decider.tsv"
            seen="$seen$id "
            n=$((n + 1))
        fi
        sleep 0.05
    done
}

# e2e_finish_decider: once the agent is done, gives the decider
# ($decider_pid) up to 2 s to finish its last write, then stops it.
e2e_finish_decider() {
    for _ in $(seq 20); do kill -0 "$decider_pid" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$decider_pid" 2>/dev/null
    wait "$decider_pid" 2>/dev/null
    decider_pid=
}

# e2e_stop_run: stops a run: the agent's network namespace ($netns_pid),
# the decider ($decider_pid) or stager ($stage_pid: killing a waiting
# stager withdraws its preview) that answers it, then unmounts $MNT.
# Between runs and at exit.
e2e_stop_run() {
    local pid
    for pid in "${netns_pid:-}" "${decider_pid:-}" "${stage_pid:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    netns_pid='' decider_pid='' stage_pid=''
    e2e_unmount "${MNT:-}"
    MNT=
}

# e2e_common_arg NAME ARG: the options every e2e script takes: --keep (keep
# the work directory), -h/--help (the script's header); anything else is a
# usage error (exit 2).
e2e_common_arg() {
    case "$2" in
    --keep) keep=1 ;;
    -h | --help)
        sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "$1: unknown argument: $2 (see --help)" >&2
        exit 2
        ;;
    esac
}

# e2e_begin NAME: starts the run NAME: nothing of it started yet, stopped and
# cleaned up at exit whatever happens, the tools checked, the xdev binary
# found ($XDEV_BIN).
# shellcheck disable=SC2034 # xdev_pid is the caller's
e2e_begin() {
    E2E_NAME=$1
    W='' MNT='' xdev_pid='' decider_pid='' stage_pid='' netns_pid=''
    e2e_clean_up_on_exit
    e2e_require_tools
    e2e_xdev
}

# e2e_work_dir: makes the run's work directory, $W.
e2e_work_dir() {
    W=$(mktemp -d "${TMPDIR:-/tmp}/xdev-$E2E_NAME.XXXXXX") || die "mktemp failed"
}

# e2e_need_subcommand SUB [HINT]: dies unless $XDEV_BIN has the subcommand
# SUB (HINT, when given, says what to do then).
e2e_need_subcommand() {
    "$XDEV_BIN" "$1" --help >/dev/null 2>&1 || die "$XDEV_BIN has no \`$1\` subcommand${2:+ ($2)}"
}

# shellcheck disable=SC2034 # the variables are the caller's
# e2e_claude_dirs: the work directory $W of one Claude Code run: MNT (the
# mount point, not mounted yet), PROJECT (with .claude/), HOME_DIR (a fresh
# home), and MARK1 and MARK2 under $W/marks. The marks live outside the
# project: Claude Code must not be able to treat a write there as a harmless
# in-project edit; only the hook lets them happen.
e2e_claude_dirs() {
    e2e_work_dir
    MNT=$W/mnt PROJECT=$W/project HOME_DIR=$W/home
    MARK1=$W/marks/MARK1 MARK2=$W/marks/MARK2
    mkdir -p "$W/marks" "$PROJECT/.claude" "$HOME_DIR" || die "cannot create $W"
}

# e2e_say_versions AGENT VERSION [WHAT]: the run's first line: the agent and
# xdev versions, WHAT (when given), and the work directory.
e2e_say_versions() {
    say "$1 $2, xdev $("$XDEV_BIN" --version 2>/dev/null | head -n 1), ${3:+$3, }work dir $W"
}

# e2e_hook_settings PATH COMMAND: writes a Claude Code settings.json at PATH
# whose one PreToolUse hook (matcher Bash) runs COMMAND, in the permission
# mode `default` with bypassing disabled, so the hook is the only way a Bash
# call runs.
e2e_hook_settings() {
    "$PYTHON" - "$1" "$2" <<'PY' || die "cannot write the settings"
import json, sys
path, command = sys.argv[1:3]
settings = {
    "permissions": {"defaultMode": "default", "disableBypassPermissionsMode": "disable"},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]},
}
with open(path, "w") as f:
    json.dump(settings, f, indent=2)
    f.write("\n")
PY
}

# e2e_show_run: prints, indented, what the decider said ($W/decider.err)
# and the requests the model server answered, then "checks:".
e2e_show_run() {
    say "decider:"
    sed 's/^/  /' "$W/decider.err"
    say "server requests:"
    e2e_print_requests "$W/requests.jsonl" model
    say "checks:"
}

# e2e_checks_failed: keeps the work directory and dies with how many of
# $W/check.out's checks failed and the end of Claude Code's stderr.
e2e_checks_failed() {
    keep=1
    die "$(grep -c '^FAIL' "$W/check.out") check(s) failed; Claude Code's stderr: $(tail -n 5 "$W/claude.err" 2>/dev/null)"
}

# e2e_runs_failed N: keeps the work directory and dies with how many checks
# failed in the N failed runs (each run's $W/*/check.out).
e2e_runs_failed() {
    keep=1
    die "$(cat "$W"/*/check.out | grep -c '^FAIL') check(s) failed in $1 run(s); see $W"
}

# e2e_clean_up_on_exit: at exit (INT and TERM exit too), stops the run and
# leaves the work directory $W (kept with --keep, $keep, or after a failure).
e2e_clean_up_on_exit() {
    trap e2e_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# shellcheck disable=SC2317 # run by the EXIT trap
e2e_exit() {
    local status=$?
    e2e_stop_run
    e2e_leave_work_dir "${W:-}" "${keep:-0}" "$status"
}

# shellcheck disable=SC2034 # netns_status and elapsed are the caller's
# e2e_run_in_netns: runs $E2E/in_netns.sh (with the E2E_* variables the
# caller exported) in a network namespace of its own and waits for it. Sets
# netns_pid while it runs (for the caller's EXIT trap), then netns_status and
# elapsed (the seconds it took, to a tenth).
e2e_run_in_netns() {
    local started=$EPOCHREALTIME
    unshare --net -- bash "$E2E/in_netns.sh" &
    netns_pid=$!
    wait "$netns_pid"
    netns_status=$?
    netns_pid=
    elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
}

# e2e_run_agent RUN_DIR [NAME]: e2e_run_in_netns, then stops the script if
# the namespace run failed (RUN_DIR holds its files; NAME starts the message).
e2e_run_agent() {
    e2e_run_in_netns
    [ "$netns_status" = 0 ] || die "${2:+$2: }the namespace run failed (status $netns_status); see $1"
}

# e2e_save_journal DEST: copies the mount's journal ($MNT/log) to DEST.
e2e_save_journal() {
    cat "$MNT/log" >"$1" 2>/dev/null || die "cannot read $MNT/log"
}

# e2e_print_requests REQUESTS [model]: prints, indented, a line for each
# request the scripted model server answered (its requests.jsonl), with the
# model asked for when the second argument is "model".
e2e_print_requests() {
    "$PYTHON" - "$1" "${2:-}" <<'PY'
import json, sys
show_model = sys.argv[2] == "model"
for line in open(sys.argv[1]):
    r = json.loads(line)
    b = r.get("body")
    what = ""
    if isinstance(b, dict):
        model = f" model={b.get('model')}" if show_model else ""
        what = f"{model} stream={b.get('stream')} messages={len(b.get('messages') or [])} tools={len(b.get('tools') or [])}"
    print(f"  {r['method']} {r['path']} -> {r['status']} {r['answer']}{what}")
PY
}
