#!/usr/bin/env bash
# 43: one daemon per mount point. Twenty times, two `xdev mount DIR` start at
# the same moment on one DIR (missing in half the rounds, so both would create
# it): exactly one prints `xdev: mounted DIR` and serves, the other exits 1
# with nothing on stdout and the "already served" line on stderr, and DIR
# holds exactly one mount; SIGTERM to the server leaves nothing mounted. Then
# five times after a SIGKILL left DIR a stale mount: one of two new daemons
# clears it and serves, and the other neither clears that live mount nor
# stacks one of its own.
# time limit: 180 s
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

dir=$SCRATCH/mnt
SERVED=$(expected already-served dir "$dir") || exit 1

# start_two: two `xdev mount $dir` at once; their pids in $PID_A and $PID_B.
start_two() {
    "$XDEV_BIN" mount "$dir" >"$SCRATCH/a.out" 2>"$SCRATCH/a.err" </dev/null &
    PID_A=$!
    "$XDEV_BIN" mount "$dir" >"$SCRATCH/b.out" 2>"$SCRATCH/b.err" </dev/null &
    PID_B=$!
    OWN_DAEMONS+=("$PID_A $dir" "$PID_B $dir")
}

# ready NAME: whether daemon NAME (a or b) has printed its ready line.
ready() { grep -qxF "xdev: mounted $dir" "$SCRATCH/$1.out"; }

# settled: one daemon is ready and the other has exited (or both are ready,
# which one_serves then reports).
settled() {
    { ready a && ready b; } ||
        { ready a && ! kill -0 "$PID_B" 2>/dev/null; } || { ready b && ! kill -0 "$PID_A" 2>/dev/null; }
}

# one_serves ROUND [LOG]: of the two daemons just started, exactly one serves
# $dir; the other refused, saying why; SIGTERM to the server unmounts. The
# server's stderr is empty, or one line containing LOG when given.
one_serves() {
    local round=$1 log=${2:-} server loser server_pid loser_pid err
    wait_until 30000 "round $round: one daemon ready and the other gone" settled
    if ready a && ready b; then
        fail "round $round: both daemons say they mounted $dir ($(mounts_at "$dir") mounts there)"
    fi
    if ready a; then
        server=a server_pid=$PID_A loser=b loser_pid=$PID_B
    else
        server=b server_pid=$PID_B loser=a loser_pid=$PID_A
    fi
    wait_exit "$loser_pid" 10000 "round $round: the daemon that did not serve"
    assert_eq "$EXIT_CODE" 1 "round $round: exit status of the daemon that did not serve"
    assert_eq "$(cat "$SCRATCH/$loser.out")" "" "round $round: its stdout"
    assert_eq "$(cat "$SCRATCH/$loser.err")" "xdev: $SERVED" "round $round: its stderr"
    assert_eq "$(mounts_at "$dir")" 1 "round $round: mounts at $dir"
    [ -n "$(cat "$dir/status")" ] || fail "round $round: the server does not answer"
    kill -TERM "$server_pid"
    wait_exit "$server_pid" 10000 "round $round: the server after SIGTERM"
    assert_eq "$EXIT_CODE" 0 "round $round: exit status of the server after SIGTERM"
    assert_eq "$(mounts_at "$dir")" 0 "round $round: mounts at $dir after SIGTERM"
    err=$(cat "$SCRATCH/$server.err")
    if [ -z "$log" ]; then
        assert_eq "$err" "" "round $round: the server's stderr"
    else
        assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "round $round: lines of the server's stderr ($err)"
        assert_contains "$err" "$log" "round $round: the server's stderr"
    fi
}

for round in $(seq 20); do
    [ $((round % 2)) = 0 ] && mkdir "$dir"
    start_two
    one_serves "$round"
    if [ $((round % 2)) = 0 ]; then
        rmdir "$dir" || fail "round $round: $dir, made by hand, is not an empty directory any more"
    else
        [ ! -e "$dir" ] || fail "round $round: the directory xdev made is still there"
    fi
done
note "20 rounds of two daemons started at once: one served, one refused"

for round in $(seq 21 25); do
    start_own_daemon_at "$dir"
    kill -KILL "$OWN_PID"
    wait "$OWN_PID" 2>/dev/null
    wait_until 30000 "round $round: the killed daemon's mount stale" is_stale "$dir"
    start_two
    # The server cleared the stale mount (and said so); the other only refused.
    one_serves "$round" "clearing a stale mount"
    [ ! -e "$dir" ] || fail "round $round: the directory the killed daemon made is still there"
done
note "5 rounds after a SIGKILL: one new daemon cleared the stale mount and served, the other refused"
