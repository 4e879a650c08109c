#!/usr/bin/env bash
# 40: the mount point's life. `xdev mount DIR` creates a missing DIR and
# removes it again on SIGTERM, and after a SIGKILL when the next daemon there
# exits; with no daemon, `echo x > DIR/resolve` then fails with ENOENT instead
# of creating a file. Regular files named like the devices in DIR (left by
# writes while nothing was mounted) are refused by name and kept. Every
# client command refuses a plain directory and a stale mount, in one line
# naming it, without writing anything.
. "$(dirname "$0")/lib.sh"
need_xdev
scratch

dir=$SCRATCH/mnt

# Every client command, one per line.
CLIENT_COMMANDS=("resolve looks-right" "reject no" "propose auth" "status" "status --json"
    "stage --label x -- true" "plan enter" "plan status")

# each_client_says TEXT: every client command, run on $dir, exits 1 with
# nothing on stdout and exactly TEXT on stderr.
each_client_says() {
    local command
    for command in "${CLIENT_COMMANDS[@]}"; do
        # shellcheck disable=SC2086 # one word per argument
        XDEV_DIR=$dir "$XDEV_BIN" $command >"$SCRATCH/client.out" 2>"$SCRATCH/client.err" </dev/null
        assert_eq "$?:$(cat "$SCRATCH/client.out")" "1:" "xdev $command on $dir (status:stdout)"
        assert_eq "$(cat "$SCRATCH/client.err")" "$1" "stderr of xdev $command on $dir"
    done
}

note "a missing DIR is created, then removed on SIGTERM"
start_own_daemon_at "$dir"
[ -d "$dir" ] || fail "xdev mount did not create $dir"
is_mounted "$dir" || fail "$dir is not mounted"
stop_own_daemon
[ ! -e "$dir" ] || fail "$dir is still there after SIGTERM"
if out=$(bash -c 'echo x > "$1/resolve"' _ "$dir" 2>&1); then
    fail "echo x > $dir/resolve succeeded with no daemon"
fi
assert_contains "$out" "No such file or directory" "a write with no daemon"
[ ! -e "$dir" ] || fail "the write with no daemon created $dir"

note "after a SIGKILL, clients name the stale mount; the next daemon removes DIR"
start_own_daemon_at "$dir"
kill -KILL "$OWN_PID"
wait "$OWN_PID" 2>/dev/null
# The connection ends once no process holds the daemon's /dev/fuse any more;
# should that not happen, say what statfs sees and who holds /dev/fuse.
deadline=$(($(now_ms) + 30000))
until is_stale "$dir"; do
    [ "$(now_ms)" -lt "$deadline" ] ||
        fail "the killed daemon's mount is not stale after 30 s: stat -f says $(stat -f -c %T -- "$dir" 2>&1);" \
            "/dev/fuse is open in: $(find /proc/[0-9]*/fd -maxdepth 1 -lname /dev/fuse 2>/dev/null | cut -d/ -f3 | sort -u | xargs -r ps -o pid=,comm= -p | tr '\n' ' ')"
    sleep 0.02
done
each_client_says "xdev: ENOTCONN: the xdev mount at $dir is stale (its daemon is gone); run \`xdev mount $dir\` to clear it and serve again"
start_own_daemon_at "$dir"
stop_own_daemon
[ ! -e "$dir" ] || fail "$dir is still there after the next daemon exited"

note "device-named leftovers are refused by name and kept"
mkdir "$dir"
echo "looks right" >"$dir/resolve"
out=$(timeout 10 "$XDEV_BIN" mount "$dir" 2>&1 </dev/null)
assert_eq "$?" 1 "exit status of xdev mount over a leftover resolve file"
assert_eq "$out" "xdev: mount point $dir holds a file named like a device (resolve) left by writes while nothing was mounted there; check them, remove them (rm -- '$dir/resolve'), then mount again" "the refusal"
assert_content "$dir/resolve" "looks right"

note "clients refuse a plain directory and leave its files alone"
each_client_says "xdev: no xdev mount at $dir: it is not a FUSE mount (use --mount DIR or set XDEV_DIR, or start one with \`xdev mount DIR\`)"
assert_content "$dir/resolve" "looks right"
assert_eq "$(ls -A "$dir")" "resolve" "what $dir holds after the clients ran"
rm -- "$dir/resolve"
rmdir -- "$dir"
