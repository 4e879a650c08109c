#!/usr/bin/env bash
# The CI recipe of docs/ci-and-containers.md, its exact lines (the block after `<!-- ci-recipe
# -->`), run as a CI job would with /xdev replaced by a scratch directory:
#   - on a free directory: the daemon mounts it, `xdev wait` returns, the
#     agent runs with XDEV_DIR set and decides through it, SIGTERM stops the
#     daemon (exit 0), the journal is in the job's directory, and no mount
#     point is left behind;
#   - on a directory another daemon already serves: the new daemon exits,
#     `xdev wait` fails at once naming that (not at its timeout), `set -e`
#     stops the job with an error before the agent runs.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

recipe=$(awk '/<!-- ci-recipe -->/ { found = 1; next } found && /^```sh/ { inside = 1; next } inside && /^```/ { exit } inside { print }' "$LIB_ROOT/docs/ci-and-containers.md")
[ -n "$recipe" ] || fail "no CI recipe in docs/ci-and-containers.md"
assert_contains "$recipe" "xdev wait /xdev --pid" "the CI recipe"

# A job's world: `xdev` on PATH, and the agent the recipe runs.
mkdir -p "$SCRATCH/bin" "$SCRATCH/job"
ln -s "$XDEV_BIN" "$SCRATCH/bin/xdev"
cat >"$SCRATCH/job/run-the-agent.sh" <<'AGENT'
#!/bin/sh
echo "the agent ran" >"$XDEV_DIR/reject"
touch agent-ran
AGENT
chmod +x "$SCRATCH/job/run-the-agent.sh"

# run_job DIR NAME: the recipe with /xdev as DIR, in the job's directory;
# sets RC, and leaves stdout/stderr in $SCRATCH/NAME.out/.err.
run_job() {
    local script=${recipe//\/xdev /$1 }
    (cd "$SCRATCH/job" && PATH="$SCRATCH/bin:$PATH" timeout 60 bash -c "$script") \
        >"$SCRATCH/$2.out" 2>"$SCRATCH/$2.err" </dev/null
    RC=$?
}

run_job "$SCRATCH/ci-mnt" ok
assert_eq "$RC" 0 "exit status of the CI recipe (stderr: $(cat "$SCRATCH/ok.err"))"
[ -e "$SCRATCH/job/agent-ran" ] || fail "the agent did not run"
[ -s "$SCRATCH/job/xdev-journal.jsonl" ] || fail "no journal in the job's directory"
grep -q '"reason":"the agent ran"' "$SCRATCH/job/xdev-journal.jsonl" || fail "the agent's decision is not in the journal"
[ ! -e "$SCRATCH/ci-mnt" ] || fail "the recipe left $SCRATCH/ci-mnt behind"
rm -f "$SCRATCH/job/agent-ran"

# The directory is already served (by this scenario's daemon).
run_job "$D" served
[ "$RC" -ne 0 ] || fail "the CI recipe succeeded on a directory already served"
[ "$RC" -ne 124 ] || fail "the CI recipe hung until timeout killed it"
assert_contains "$(cat "$SCRATCH/served.err")" "already served by a running xdev" "the daemon's error"
assert_contains "$(cat "$SCRATCH/served.err")" "$D is an xdev mount, but served by pid $(status_json 's["serverPid"]'), not by pid" "xdev wait's error"
assert_contains "$(cat "$SCRATCH/served.err")" "(which has exited; its own error says why)" "xdev wait's error"
[ ! -e "$SCRATCH/job/agent-ran" ] || fail "the agent ran although the mount failed"
note "CI recipe: served, agent decided, journal kept, no mount point left; on a served directory it stops at once (exit $RC)"
