#!/usr/bin/env bash
# End-to-end: a rules file decides the real agents' calls. Claude Code and
# Codex, gated by `xdev-hook` on a mount served with `--policy`, against the
# scripted model server on 127.0.0.1, each in a network namespace of its own.
#
#   scripts/policy-e2e.sh [--keep] [claude-code] [codex]
#
# (both agents when none is named). What happens, for each agent:
#   1. The agent (npm, pinned in scripts/e2e/lib.sh) is installed once into
#      ${XDEV_CLIENT_CACHE:-target/client-cache}; the xdev binary is built
#      when missing (or taken from $XDEV_BIN).
#   2. The run's rules file allows `Bash(touch *)` (and changes in the
#      run's marks directory, which `touch` writes) and denies `Bash(rm *)`
#      with the reason "xdev policy: deleting files needs a person"; `xdev
#      mount <mnt> --policy <rules> --journal <journal>` serves a fresh mount.
#      The agent's hook runs `xdev-hook` (the shipped configurations'
#      command, `xdev hook` in a small binary) on it, as scripts/claude-code-e2e.sh
#      and scripts/codex-e2e.sh set it up: Claude Code with a PreToolUse hook
#      (matcher Bash) in permission mode `default`, so the hook is the only
#      way a call runs; Codex with a PreToolUse hook trusted by
#      --dangerously-bypass-hook-trust, approval "never", sandbox
#      danger-full-access (so its own sandbox stops nothing).
#   3. Inside `unshare --net` the model asks for three shell calls, one after
#      the other: `touch <marks>/ALLOWED` (allowed), `rm <marks>/KEEP`
#      (denied; KEEP exists), `mkdir <marks>/ASKED` (no rule: ask).
#   4. A person here, outside the agent's process tree, watches pending/ and
#      decides only the asked call: once it is listed, it saves `status`,
#      checks ASKED is absent, waits $HOLD s, checks that the call is still
#      pending and ASKED still absent, then writes pending/<id>/resolve.
#   5. scripts/e2e/check_policy.py asserts: the allowed call ran, decided by
#      the policy (the journal's record: the daemon's write, decider
#      "policy", the rule); the denied call did not run, the journal has the
#      policy's reject with the rule's reason, and the model read that reason
#      (Claude Code's tool_result, Codex's function_call_output); the asked
#      call waited, pending and not run, and ran once the person resolved it,
#      the journal naming the person's process and reason; nobody else
#      decided anything. One `ok:` or `FAIL:` line per check.
#
# Not part of CI (scripts/test.sh, mount-tests/run.sh do not run it). Needs
# root (unshare --net, FUSE), node/npm with the npm registry reachable for the
# first install, python3, and iproute2.
#
# Environment: XDEV_BIN (default target/debug/xdev, built when missing;
# the xdev-hook beside it is the hook), XDEV_CLIENT_CACHE, E2E_TIMEOUT
# (seconds for each agent run, default 180).
set -uo pipefail

ALLOW_RULE="Bash(touch *)"
DENY_RULE="Bash(rm *)"
DENY_REASON="xdev policy: deleting files needs a person"
PERSON_REASON="a person read it: fine"
PROMPT="Run the three scripted shell commands, one after the other."
# How long the person leaves the asked call pending before resolving it,
# to see that it waits with nobody answering.
HOLD=2

# shellcheck source=scripts/e2e/lib.sh
. "$(dirname "$0")/e2e/lib.sh"

keep=0
agents=
for arg in "$@"; do
    case "$arg" in
    claude-code | codex) agents="$agents $arg" ;;
    *) e2e_common_arg policy-e2e "$arg" ;;
    esac
done
agents=${agents# }
agents=${agents:-claude-code codex}

e2e_begin policy-e2e
e2e_need_subcommand hook
XDEV_HOOK=$(dirname "$XDEV_BIN")/xdev-hook
[ -x "$XDEV_HOOK" ] || die "no xdev-hook beside $XDEV_BIN"
"$XDEV_BIN" mount --help 2>/dev/null | grep -q -- --policy || die "$XDEV_BIN mount has no --policy"
e2e_work_dir

# write_rules PATH MARKS: the run's rules file (JSON; mode 0600, as the
# daemon refuses a file others could change). `touch` writes the file it
# names, so the marks directory is allowed to be changed too.
write_rules() {
    "$PYTHON" - "$1" "$ALLOW_RULE" "$DENY_RULE" "$DENY_REASON" "$2" <<'PY' || die "cannot write the rules file"
import json, os, sys
path, allow, deny, reason, marks = sys.argv[1:6]
rules = {"permissions": {
    "allow": [allow, "Edit(/" + marks + "/**)"],
    "deny": [{"rule": deny, "reason": reason}],
}}
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with os.fdopen(fd, "w") as f:
    json.dump(rules, f, indent=2)
    f.write("\n")
PY
}

# call_state ID MARK: "pending" or "gone" (ID listed in pending/ or not),
# then "present" or "absent" (MARK).
call_state() {
    local listed=gone mark=absent
    [ -d "$MNT/pending/$1" ] && listed=pending
    [ -e "$2" ] && mark=present
    printf '%s,%s' "$listed" "$mark"
}

# person RD LABEL MARK: what a person at another terminal does: watches
# pending/, notes each call listed there (RD/person.tsv), and decides only
# the one labelled LABEL, by its id, after a look at it (see the header).
person() {
    local rd=$1 want=$2 mark=$3 seen=" " id label before after rc
    while :; do
        for id in $(ls -U "$MNT/pending" 2>/dev/null); do
            [[ "$seen" == *" $id "* ]] && continue
            seen="$seen$id "
            label=$(cat "$MNT/pending/$id/label" 2>/dev/null) || label="(decided before it was read)"
            printf 'seen\t%s\t%s\n' "$id" "$label" >>"$rd/person.tsv"
            [ "$label" = "$want" ] || continue
            cat "$MNT/status" >"$rd/status.pending" 2>/dev/null
            before=$(call_state "$id" "$mark")
            sleep "$HOLD"
            after=$(call_state "$id" "$mark")
            echo "person: $id ($label): $before, after ${HOLD}s $after; pending/$id/resolve \"$PERSON_REASON\"" >&2
            echo "$PERSON_REASON" >"$MNT/pending/$id/resolve"
            # shellcheck disable=SC2320 # echo's status is the device write's
            rc=$?
            printf 'resolve\t%s\t%s\t%s\t%s\t%s\n' "$id" "$rc" "$before" "$after" "$BASHPID" >>"$rd/person.tsv"
            return 0
        done
        sleep 0.05
    done
}

# run_agent AGENT: one agent's run in $W/AGENT; its checks in check.out.
run_agent() {
    local agent=$1 rd=$W/$1 hook_command allowed keep asked daemon
    mkdir -p "$rd/marks" "$rd/project/.claude" "$rd/home" || die "cannot create $rd"
    allowed=$rd/marks/ALLOWED keep=$rd/marks/KEEP asked=$rd/marks/ASKED
    : >"$keep"
    : >"$rd/person.tsv"
    write_rules "$rd/policy.json" "$rd/marks"
    MNT=$rd/mnt
    e2e_mount "$MNT" "$rd/xdev" --policy "$rd/policy.json" --journal "$rd/journal.jsonl"
    export E2E_WORK=$rd E2E_PROJECT=$rd/project E2E_HOME=$rd/home E2E_PROMPT=$PROMPT E2E_TIMEOUT=$TIMEOUT \
        E2E_PYTHON=$PYTHON E2E_SERVER=$E2E/model_server.py \
        E2E_COMMANDS="touch $allowed"$'\n'"rm $keep"$'\n'"mkdir $asked"
    if [ "$agent" = claude-code ]; then
        hook_command="$(printf '%q --mount %q' "$XDEV_HOOK" "$MNT")"
        e2e_hook_settings "$rd/project/.claude/settings.json" "$hook_command"
        export E2E_SCRIPT=bash E2E_CLAUDE=$CLAUDE
        say "Claude Code $CLAUDE_CODE_VERSION: PreToolUse hook, permission mode default"
    else
        hook_command="$(printf '%q --agent codex --mount %q' "$XDEV_HOOK" "$MNT")"
        e2e_codex_home "$rd/codex-home" PreToolUse never danger-full-access "$hook_command"
        export E2E_SCRIPT=codex E2E_CODEX=$CODEX E2E_CODEX_HOME=$rd/codex-home \
            E2E_CODEX_ARGS=--dangerously-bypass-hook-trust E2E_ESCALATE=
        say "Codex $CODEX_VERSION: PreToolUse hook, approval never, sandbox danger-full-access"
    fi
    person "$rd" "Bash: mkdir $asked" "$asked" 2>"$rd/person.err" &
    decider_pid=$!
    e2e_run_agent "$rd" "$agent"
    e2e_finish_decider
    daemon=$xdev_pid
    e2e_unmount "$MNT"
    MNT=
    sed 's/^/  /' "$rd/person.err"
    e2e_print_requests "$rd/requests.jsonl"
    "$PYTHON" "$E2E/check_policy.py" "$agent" "$rd" "$allowed" "$keep" "$asked" \
        "$ALLOW_RULE" "$DENY_RULE" "$DENY_REASON" "$PERSON_REASON" "$daemon" >"$rd/check.out"
    local status=$?
    sed 's/^/  /' "$rd/check.out"
    return "$status"
}

e2e_say_versions "Claude Code $CLAUDE_CODE_VERSION, Codex" "$CODEX_VERSION" "agents: $agents"
failed=0
summary=
for agent in $agents; do
    case "$agent" in
    claude-code) e2e_claude ;;
    codex) e2e_codex ;;
    esac
    if run_agent "$agent"; then
        summary="$summary $agent: pass (${elapsed}s);"
    else
        failed=$((failed + 1))
        summary="$summary $agent: FAIL (${elapsed}s);"
    fi
done
[ "$failed" = 0 ] || e2e_runs_failed "$failed"
say "PASS:$summary the allowed call ran with nobody answering, the denied one did not and the model read the rule's reason, the asked one waited for a person's pending/<id>/resolve"
