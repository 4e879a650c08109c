#!/usr/bin/env bash
# End-to-end: packaging/xdev@.service started for real, by a real systemd
# (PID 1 of a systemd-nspawn container), not only checked with
# `systemd-analyze verify`.
#
#   scripts/systemd-e2e.sh [--keep-going]
#
# What happens:
#   1. A minimal Debian rootfs (debootstrap --variant=minbase, suite
#      bookworm, plus systemd, dbus, fuse3, man-db and libpam-systemd) is
#      made once and cached in
#      ${XDEV_SYSTEMD_CACHE:-target/systemd-e2e}/rootfs-bookworm; later
#      runs reuse it. The suite is pinned by name (never "stable"); the
#      package versions are printed each run. Seen when this was written:
#      systemd 252.39-1~deb12u2, dbus 1.14.10-1~deb12u1, fuse3 3.14.0-4,
#      man-db 2.11.2-2, libpam-systemd 252.39-1~deb12u2,
#      libc6 2.36-9+deb12u14, libseccomp2 2.5.4-1+deb12u1.
#   2. scripts/install.sh (a release build) installs xdev and the unit with
#      DESTDIR into a staging directory; its /usr/local is bound read-only
#      over the container's /usr/local, so the container holds exactly
#      what install.sh installs (/usr/local/bin/xdev,
#      /usr/local/lib/systemd/system/xdev@.service, the user unit in
#      /usr/local/lib/systemd/user/, ...). A second install under /opt/xdev,
#      a PREFIX systemd does not read, is bound at /opt/xdev.
#   3. `systemd-nspawn --boot` starts the container: rootfs read-only under
#      a throwaway overlay (--volatile=overlay, so the cache stays clean),
#      /dev/fuse bound in (replaced by a node of the container's own,
#      crw-rw-rw- as udev makes it, when the host's is private), a network namespace of its own, the unified
#      cgroup hierarchy, and bpf(2) allowed so that the container's systemd
#      can load the BPF programs of DevicePolicy=/DeviceAllow= (checked)
#      and IPAddressDeny= (with nspawn's default system call filter it
#      cannot, and drops those settings silently). No systemd-machined is needed
#      on the host (--register=no --keep-unit): commands run inside through
#      nsenter into the container's namespaces.
#   4. The checks, each printing a PASS or FAIL line: systemd boots; the
#      device cgroup is enforced (control); `systemctl start xdev@xdev`
#      returns after READY=1 with /xdev served and `resolve` refusing with
#      ENOENT and the exact text; the daemon runs with the unit's
#      hardening; xdev@ci-1 (with a drop-in adding a --journal file, as the
#      unit's header shows) serves /run/xdev/ci-1 at the same time; the
#      journal holds the daemon's lines; `systemctl stop` sends SIGTERM,
#      gets STOPPING=1, leaves no mount and no mount point, and the unit is
#      inactive, not failed; `systemctl reload` is refused (the unit has no
#      ExecReload=), SIGUSR1 reopens the journal file after it was moved
#      away, and SIGHUP stops the daemon cleanly; after SIGKILL,
#      Restart=on-failure brings it back and the stale mount is cleared;
#      `systemd-analyze verify` of both installed units finds nothing;
#      with two users made in the container, alice and bob: xdev@dev with
#      a drop-in adding `--owner alice` serves files that are alice's, her
#      `echo ... > resolve` applies a staged command and her `xdev hook`
#      is allowed by her `xdev resolve`, while bob's write and hook get
#      EACCES and he can neither list nor read the mount; alice's own
#      manager (lingering) runs the user unit xdev@main through
#      fusermount3, where the same holds for her and for bob, and stops
#      it cleanly; what install.sh /opt/xdev says to do next (link the
#      unit first) makes xdev@xdev serve from /opt/xdev; the container
#      powers off cleanly.
#
# The container (and with it every mount made inside it) is stopped on
# exit, failure and Ctrl-C included. Exits 0 when every check passed, 1 when
# one failed, 2 when systemd cannot be run here at all (said loudly, with
# the reason). --keep-going runs the remaining checks after a failed one
# (the default stops at the first failed check).
#
# Needs root, /dev/fuse, cargo; installs systemd-container (systemd-nspawn)
# and debootstrap with apt-get when missing; deb.debian.org must be
# reachable for the first run. Timings on a 2-core VM: cold 1.5-3.5 min
# (debootstrap 75-180 s, as fast as the mirror; a release build of xdev
# already made), warm ~15 s. Not part of CI
# (scripts/test.sh): a cold run on a fresh machine (apt-get, debootstrap,
# a release build) takes minutes.
set -uo pipefail

say() { printf 'systemd-e2e: %s\n' "$*"; }
die() {
    printf 'systemd-e2e: error: %s\n' "$*" >&2
    exit 1
}
# cannot_run REASON...: systemd cannot be run here; never a silent success.
cannot_run() {
    {
        printf '\nsystemd-e2e: ************************************************************\n'
        printf 'systemd-e2e: CANNOT RUN SYSTEMD HERE: nothing was tested.\n'
        printf 'systemd-e2e: %s\n' "$@"
        printf 'systemd-e2e: ************************************************************\n'
    } >&2
    exit 2
}

keep_going=0
for arg in "$@"; do
    case $arg in
    --keep-going) keep_going=1 ;;
    -h | --help)
        sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument '$arg' (try --help)" ;;
    esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$SECONDS

# The pinned recipe of the rootfs; a cached rootfs made from another
# recipe is made again.
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
# man-db: `systemd-analyze verify` runs `man` for the units' Documentation=;
# libpam-systemd: a user's manager gets its $XDG_RUNTIME_DIR (the user unit).
PACKAGES=systemd,dbus,fuse3,man-db,libpam-systemd
RECIPE="debootstrap --variant=minbase --include=$PACKAGES $SUITE $MIRROR"
cache=${XDEV_SYSTEMD_CACHE:-$root/target/systemd-e2e}
rootfs=$cache/rootfs-$SUITE
stage=$cache/stage
machine=xdev-e2e-$$

# --- the host -------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || cannot_run "needs root (systemd-nspawn boots a container), run it as root"
[ -c /dev/fuse ] || cannot_run "/dev/fuse is missing: load the fuse module ('modprobe fuse'), or start this container with --device /dev/fuse"
for tool in systemd-nspawn:systemd-container debootstrap:debootstrap nsenter:util-linux; do
    if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
        command -v apt-get >/dev/null 2>&1 || cannot_run "${tool%%:*} is missing and apt-get is not available to install ${tool#*:}"
        say "installing ${tool#*:} (for ${tool%%:*})"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${tool#*:}"; } >/dev/null ||
            cannot_run "apt-get install ${tool#*:} failed"
    fi
done
say "host: $(systemd-nspawn --version | head -n 1), $(debootstrap --version)"

# --- the rootfs (cached) -----------------------------------------------------------
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9 # one run at a time makes or reads the cache
if [ ! -x "$rootfs/usr/lib/systemd/systemd" ] || [ "$(cat "$rootfs.recipe" 2>/dev/null)" != "$RECIPE" ]; then
    say "making the rootfs: $RECIPE (about a minute; cached afterwards)"
    rm -rf -- "$rootfs" "$rootfs.partial" "$rootfs.recipe"
    made=$SECONDS
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs.partial" "$MIRROR" >"$cache/debootstrap.log" 2>&1; then
        tail -n 20 "$cache/debootstrap.log" >&2
        cannot_run "debootstrap of $SUITE from $MIRROR failed (log: $cache/debootstrap.log)"
    fi
    # A container of its own name, not the host's.
    echo xdev-e2e >"$rootfs.partial/etc/hostname"
    mv -- "$rootfs.partial" "$rootfs"
    printf '%s\n' "$RECIPE" >"$rootfs.recipe"
    say "rootfs made in $((SECONDS - made)) s"
else
    say "rootfs cached: $rootfs"
fi
# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
say "rootfs packages: $(chroot "$rootfs" dpkg-query -W -f '${Package} ${Version}, ' systemd dbus fuse3 man-db libpam-systemd libc6 libseccomp2 | sed 's/, $//')"

# --- xdev, installed as scripts/install.sh installs it -------------------------------
rm -rf -- "$stage"
if ! DESTDIR=$stage bash "$root/scripts/install.sh" /usr/local >"$cache/install.log" 2>&1; then
    tail -n 20 "$cache/install.log" >&2
    die "scripts/install.sh failed (log: $cache/install.log)"
fi
grep -q '^ExecStart=/usr/local/bin/xdev mount --instance %i$' "$stage/usr/local/lib/systemd/system/xdev@.service" ||
    die "the staged unit does not run /usr/local/bin/xdev"
say "installed: $(sed -n 's/^install: built //p' "$cache/install.log")"
# The same under /opt/xdev, a PREFIX systemd never reads: what install.sh
# says to do next is run in the container as it says it.
opt_stage=$cache/stage-opt
rm -rf -- "$opt_stage"
if ! DESTDIR=$opt_stage bash "$root/scripts/install.sh" /opt/xdev >"$cache/install-opt.log" 2>&1; then
    tail -n 20 "$cache/install-opt.log" >&2
    die "scripts/install.sh /opt/xdev failed (log: $cache/install-opt.log)"
fi
opt_next=$(sed -n 's/^install:   \(systemctl link [^&]*xdev@.service\) && .*(serves \/xdev)$/\1/p' "$cache/install-opt.log")

# --- the container ------------------------------------------------------------------
nspawn_pid=
leader=
# shellcheck disable=SC2317 # run by the EXIT trap
stop_container() {
    [ -n "$nspawn_pid" ] || return 0
    if kill -0 "$nspawn_pid" 2>/dev/null; then
        # The first SIGTERM asks the container's systemd to power off; a
        # second one terminates it at once; SIGKILL is the last resort.
        kill -TERM "$nspawn_pid" 2>/dev/null
        wait_gone "$nspawn_pid" 60 || { kill -TERM "$nspawn_pid" 2>/dev/null; wait_gone "$nspawn_pid" 10; } ||
            kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null
    nspawn_pid=
    # Mounts made inside went with the container's mount namespace; a
    # mount left under the rootfs on the host would be a bug: say so and
    # remove it.
    local leftover
    while read -r leftover; do
        [ -n "$leftover" ] || continue
        say "warning: a mount was left on the host: $leftover (unmounting it)"
        umount -l -- "$leftover" 2>/dev/null
    done < <(awk -v r="$rootfs" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}
# wait_gone PID SECONDS: true once PID has exited, false after SECONDS.
# shellcheck disable=SC2317 # run by the EXIT trap
wait_gone() {
    local pid=$1 tries=$(($2 * 10))
    while kill -0 "$pid" 2>/dev/null; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
    done
}
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
    local status=$?
    [ -z "$nspawn_pid" ] || say "stopped early (exit $status): stopping the container"
    stop_container
    rm -rf -- "/run/systemd/nspawn/propagate/$machine"
    exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

nspawn_args=(
    --quiet --boot --directory="$rootfs" --machine="$machine"
    # The cache stays as debootstrap made it: every write of the boot goes
    # to a tmpfs overlay that vanishes with the container.
    --volatile=overlay
    # No systemd-machined (nor any systemd) on the host.
    --register=no --keep-unit
    --private-network
    --bind=/dev/fuse
    --bind-ro="$stage/usr/local:/usr/local"
    --bind-ro="$opt_stage/opt/xdev:/opt/xdev"
    # Lets the container's systemd load the BPF programs of DevicePolicy=,
    # DeviceAllow= and IPAddressDeny= (bpf(2) fails EPERM under nspawn's
    # default filter, and systemd then drops those settings silently).
    --system-call-filter=bpf
    --console=pipe
)
# The unified hierarchy when the host has cgroup2 mounted at all (also on a
# hybrid host): systemd enforces device access through BPF only there.
if grep -q ' - cgroup2 ' /proc/self/mountinfo; then
    export SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1
fi
say "booting: systemd-nspawn ${nspawn_args[*]}"
systemd-nspawn "${nspawn_args[@]}" </dev/null >"$cache/boot.log" 2>&1 &
nspawn_pid=$!
booted=$SECONDS

# in_container CMD...: runs CMD in the container's namespaces (its root,
# mounts, PIDs, cgroups), bounded to 2 minutes.
in_container() {
    timeout 120 nsenter --target "$leader" --all -- "$@"
}

# The container's PID 1 is nspawn's child; wait for it, then for systemd
# to answer and finish booting (bounded: 60 s each).
for _ in $(seq 600); do
    kill -0 "$nspawn_pid" 2>/dev/null || break
    leader=$(pgrep -P "$nspawn_pid" | head -n 1)
    [ -n "$leader" ] && [ "$(cat "/proc/$leader/comm" 2>/dev/null)" = systemd ] && break
    leader=
    sleep 0.1
done
if [ -z "$leader" ]; then
    cat "$cache/boot.log" >&2
    cannot_run "systemd-nspawn did not start systemd in the container (log above, $cache/boot.log)"
fi
state=
for _ in $(seq 600); do
    state=$(in_container systemctl is-system-running 2>/dev/null)
    case $state in running | degraded) break ;; esac
    kill -0 "$nspawn_pid" 2>/dev/null || break
    sleep 0.1
done

# --- checks ---------------------------------------------------------------------------
passed=0
failed=0
pass() {
    passed=$((passed + 1))
    printf 'PASS  %s\n' "$1"
}
# fail WHAT [DETAIL...]: one failed check; stops the run unless --keep-going.
fail() {
    failed=$((failed + 1))
    printf 'FAIL  %s\n' "$1"
    shift
    [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/      /'
    [ "$keep_going" -eq 1 ] || finish
}
# check WHAT CMD...: PASS when CMD succeeds.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
    trap - EXIT
    stop_container
    rm -rf -- "/run/systemd/nspawn/propagate/$machine"
    say "$passed passed, $failed failed ($((SECONDS - started)) s in all)"
    if [ "$failed" -eq 0 ]; then
        say "PASS: xdev@.service works under systemd"
        exit 0
    fi
    say "FAIL: see the FAIL lines above"
    exit 1
}
# eventually SECONDS CMD...: true once CMD succeeds, false after SECONDS.
eventually() {
    local tries=$(($1 * 10))
    shift
    until "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
    done
}
# unit_is UNIT PROPERTY VALUE: `systemctl show` says so.
unit_is() {
    [ "$(in_container systemctl show --property="$2" --value "$1")" = "$3" ]
}
# is_fuse_mount DIR: DIR is a FUSE mount of xdev in the container.
is_fuse_mount() {
    [ "$(in_container findmnt --noheadings --raw --output FSTYPE,SOURCE --mountpoint "$1")" = "fuse xdev" ]
}
not_there() {
    ! in_container test -e "$1"
}
# journal UNIT: the unit's journal lines of this boot, message text only.
journal() {
    in_container journalctl --boot --unit="$1" --output=cat --no-pager
}
# journal_has UNIT LINE: the journal of UNIT holds the line LINE;
# journal_mentions UNIT TEXT: a line holding TEXT. (journald takes what
# services and systemd log asynchronously: callers wait for it.)
# shellcheck disable=SC2317 # run through eventually
journal_has() {
    journal "$1" | grep -q -x -F -- "$2"
}
# shellcheck disable=SC2317 # run through eventually
journal_mentions() {
    journal "$1" | grep -q -F -- "$2"
}
# last_line_of TEXT UNIT: number of the last journal line of UNIT holding TEXT.
last_line_of() {
    journal "$2" | grep -n -F -- "$1" | tail -n 1 | cut -d: -f1
}

case $state in
running) pass "systemd boots in the container ($((SECONDS - booted)) s, $(in_container systemctl --version | head -n 1))" ;;
degraded)
    pass "systemd boots in the container (degraded: $(in_container systemctl --failed --plain --no-legend | awk '{ printf "%s ", $1 }'))"
    ;;
*)
    cat "$cache/boot.log" >&2
    cannot_run "systemd in the container did not finish booting within 60 s (state '${state:-no answer}')"
    ;;
esac

# A user's own mount needs a /dev/fuse that every user may open, as udev
# makes it on a real system (crw-rw-rw-). The host's may be private (0600
# in a CI container): the container then gets a node of its own instead of
# the bound one, and the host's is left as it is.
if [ "$(in_container stat -c %a /dev/fuse)" != 666 ]; then
    in_container umount /dev/fuse && in_container rm -f /dev/fuse &&
        in_container mknod -m 0666 /dev/fuse c 10 229 ||
        fail "the container gets a /dev/fuse every user may open" "$(in_container ls -l /dev/fuse 2>&1)"
fi

# Control: the device cgroup is enforced here, so the unit's DeviceAllow=
# is really what lets xdev open /dev/fuse.
opens_fuse() {
    in_container systemd-run --quiet --wait --pipe --collect "$@" \
        bash -c 'exec 3<>/dev/fuse' </dev/null 2>/dev/null
}
if opens_fuse -p DevicePolicy=closed; then
    fail "the device cgroup is enforced (a DevicePolicy=closed unit opened /dev/fuse)" \
        "DevicePolicy= is not enforced in this container, so the unit's device settings go untested"
elif ! opens_fuse -p DevicePolicy=closed -p DeviceAllow="/dev/fuse rw"; then
    fail "the device cgroup is enforced (DeviceAllow=/dev/fuse rw did not open it either)"
else
    pass "the device cgroup is enforced (DevicePolicy=closed refuses /dev/fuse, DeviceAllow=/dev/fuse opens it)"
fi

unit_file=$(in_container systemctl show --property=FragmentPath --value xdev@xdev)
check "the unit is found where install.sh put it ($unit_file)" \
    test "$unit_file" = /usr/local/lib/systemd/system/xdev@.service

# -- xdev@xdev: start
if in_container systemctl start xdev@xdev; then
    # Right after `systemctl start` returns: no waiting for the mount.
    if unit_is xdev@xdev ActiveState active && is_fuse_mount /xdev; then
        pass "systemctl start xdev@xdev returns with the unit active and /xdev mounted"
    else
        fail "systemctl start xdev@xdev returns with the unit active and /xdev mounted" \
            "$(in_container systemctl status --no-pager xdev@xdev 2>&1)"
    fi
else
    fail "systemctl start xdev@xdev" "$(in_container systemctl status --no-pager xdev@xdev 2>&1)"
fi
# xdev sends STATUS= in the datagram that carries READY=1.
status_text=$(in_container systemctl show --property=StatusText --value xdev@xdev)
if [ "$status_text" = "Serving /xdev" ]; then
    pass "READY=1 came with the start (systemctl show: StatusText=$status_text)"
else
    fail "READY=1 came with the start" "StatusText=$status_text"
fi
main_pid=$(in_container systemctl show --property=MainPID --value xdev@xdev)
hardening=$(in_container grep -E '^(CapBnd|NoNewPrivs|Seccomp):' "/proc/$main_pid/status" | tr -s '\t\n' '  ')
if [[ $hardening == *"CapBnd: 0000000000200000"*"NoNewPrivs: 1"*"Seccomp: 2"* ]]; then
    pass "the daemon serves under the unit's hardening (only CAP_SYS_ADMIN, no new privileges, seccomp filter)"
else
    fail "the daemon serves under the unit's hardening" "/proc/$main_pid/status: $hardening"
fi
status=$(in_container cat /xdev/status)
if [[ $status == "pending: 0"* ]]; then
    pass "cat /xdev/status is served by the daemon (${status%%$'\n'*})"
else
    fail "cat /xdev/status is served by the daemon" "$status"
fi
nothing=$(awk -F '\t' '$1 == "nothing-to-resolve" { print $2 }' "$root/mount-tests/expected-texts")
shell_error=$(in_container bash -c 'echo ok >/xdev/resolve' 2>&1)
shell_status=$?
# shellcheck disable=SC2016 # Perl's variables
errno=$(in_container perl -MErrno -e 'open(my $f, ">", "/xdev/resolve") or die "open: $!";
    syswrite($f, "ok\n") and print "written"; print $!{ENOENT} ? "ENOENT" : "$!"')
last=$(in_container cat /xdev/last)
if [ "$shell_status" -ne 0 ] && [[ $shell_error == *"No such file or directory"* ]] &&
    [ "$errno" = ENOENT ] && [ "$last" = "$nothing" ]; then
    pass "echo ok > /xdev/resolve fails ENOENT: $last"
else
    fail "echo ok > /xdev/resolve fails ENOENT with the nothing-pending text" \
        "shell: status $shell_status, $shell_error" "write(2): $errno" "last: $last"
fi

# -- xdev@ci-1 alongside, with the drop-in the unit's header shows (a
# --journal file for one instance)
in_container mkdir -p /etc/systemd/system/xdev@ci-1.service.d
in_container tee /etc/systemd/system/xdev@ci-1.service.d/journal.conf >/dev/null <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/local/bin/xdev mount --instance %i --journal /var/log/xdev-%i.jsonl
EOF
in_container systemctl daemon-reload
if in_container systemctl start xdev@ci-1 && is_fuse_mount /run/xdev/ci-1 && is_fuse_mount /xdev &&
    [[ $(in_container cat /run/xdev/ci-1/status) == "pending: 0"* ]]; then
    pass "systemctl start xdev@ci-1 serves /run/xdev/ci-1 while /xdev is served"
    journal_mode=$(in_container stat -c %a /var/log/xdev-ci-1.jsonl 2>&1)
    if [ "$journal_mode" = 600 ]; then
        pass "the drop-in's --journal file is there, mode 0600 under UMask=0022"
    else
        fail "the drop-in's --journal file is there, mode 0600 under UMask=0022" "$journal_mode"
    fi
else
    fail "systemctl start xdev@ci-1 serves /run/xdev/ci-1 while /xdev is served" \
        "$(in_container systemctl status --no-pager xdev@ci-1 2>&1)"
fi
if eventually 60 journal_has xdev@xdev "xdev: mounted /xdev" &&
    eventually 60 journal_has xdev@ci-1 "xdev: mounted /run/xdev/ci-1"; then
    pass "journalctl -u shows the daemon's own lines (xdev: mounted ...)"
else
    fail "journalctl -u shows the daemon's own lines" "$(in_container journalctl --boot --output=short --no-pager | grep -F 'xdev[' | tail -n 5)"
fi

# -- systemd-analyze verify, as docs/install.md shows it (after install:
# it checks that ExecStart='s binary and the man page exist)
if verified=$(in_container systemd-analyze verify /usr/local/lib/systemd/system/xdev@.service 2>&1) &&
    [ -z "$verified" ]; then
    pass "systemd-analyze verify /usr/local/lib/systemd/system/xdev@.service finds nothing to say"
else
    fail "systemd-analyze verify /usr/local/lib/systemd/system/xdev@.service finds nothing to say" "$verified"
fi

# -- the devices handed to a user: xdev@dev with --owner alice, through a
# drop-in as the unit's header shows. alice (a user of her own) decides
# with a shell's echo and through `xdev hook`; bob gets EACCES.
in_container useradd --create-home alice
in_container useradd --create-home bob
alice_uid=$(in_container id -u alice)
# as USER CMD...: CMD run by USER (no login shell, no session).
as() {
    local user=$1
    shift
    in_container runuser -u "$user" -- "$@"
}
# The owner's round: a staged command applied by `echo ... > DIR/resolve`,
# and an `xdev hook` call allowed by `xdev resolve`. Prints what happened.
in_container tee /tmp/event.json >/dev/null <"$root/examples/hooks/claude-pretooluse-bash.json"
in_container tee /tmp/decide-as-owner.sh >/dev/null <<'EOF'
#!/bin/bash
# decide-as-owner.sh DIR MARK: run by the mount's owner.
dir=$1 mark=$2
wait_pending() {
    for _ in $(seq 400); do
        grep -qx "pending: $1" "$dir/status" && return 0
        sleep 0.05
    done
    echo "nothing pending in $dir after 20 s"
    exit 1
}
xdev stage --mount "$dir" --label "touch $mark" -- touch "$mark" >/dev/null &
stager=$!
wait_pending 1
echo "tests pass" >"$dir/resolve" && echo "echo resolve: written"
wait "$stager"
echo "stage: exit $?"
[ -e "$mark" ] && echo "stage: $mark made"
hook_out=$(mktemp /tmp/hook.XXXXXX)
xdev hook --mount "$dir" </tmp/event.json >"$hook_out" &
hook=$!
wait_pending 1
xdev resolve --mount "$dir" "hook ok" >/dev/null && echo "xdev resolve: exit 0"
wait "$hook"
echo "hook: exit $?"
cat "$hook_out"
EOF
owner_round() {
    printf '%s\n' "echo resolve: written" "stage: exit 0" "stage: $1 made" "xdev resolve: exit 0" "hook: exit 0" \
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"hook ok"}}'
}
# another_round USER DIR: what another user's `echo ... > DIR/resolve` and
# `xdev hook` do (the hook prints nothing: the agent asks as usual).
another_round() {
    as "$1" bash -c "echo no >$2/resolve" 2>&1 | sed 's/^.*: //'
    local printed
    printed=$(as "$1" bash -c "xdev hook --mount $2 </tmp/event.json 2>/dev/null")
    echo "hook: [$printed] exit $?"
}
in_container mkdir -p /etc/systemd/system/xdev@dev.service.d
in_container tee /etc/systemd/system/xdev@dev.service.d/owner.conf >/dev/null <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/local/bin/xdev mount --instance %i --owner alice
EOF
in_container systemctl daemon-reload
if in_container systemctl start xdev@dev && is_fuse_mount /run/xdev/dev; then
    modes=$(in_container stat -c '%n %a %U:%G' /run/xdev/dev /run/xdev/dev/resolve /run/xdev/dev/status | tr '\n' ' ')
    if [ "$modes" = "/run/xdev/dev 711 alice:alice /run/xdev/dev/resolve 600 alice:alice /run/xdev/dev/status 400 alice:alice " ]; then
        pass "xdev@dev with --owner alice: the files are alice's ($modes)"
    else
        fail "xdev@dev with --owner alice: the files are alice's" "$modes"
    fi
    seen=$(as alice bash /tmp/decide-as-owner.sh /run/xdev/dev /tmp/alice-mark 2>&1)
    if [ "$seen" = "$(owner_round /tmp/alice-mark)" ]; then
        pass "alice's echo > /run/xdev/dev/resolve applies her staged command, and her xdev hook is allowed by her xdev resolve"
    else
        fail "alice's echo > resolve applies, and her xdev hook is allowed by her xdev resolve" "$seen"
    fi
    seen=$(another_round bob /run/xdev/dev)
    if [ "$seen" = "$(printf '%s\n' "Permission denied" "hook: [] exit 0")" ] &&
        [[ $(as bob bash -c "xdev hook --mount /run/xdev/dev </tmp/event.json" 2>&1) == *"this mount belongs to alice (uid $alice_uid)"* ]] &&
        [[ $(as bob cat /run/xdev/dev/status 2>&1) == *"Permission denied"* ]] &&
        [[ $(as bob ls /run/xdev/dev 2>&1) == *"Permission denied"* ]]; then
        pass "bob's echo > /run/xdev/dev/resolve and xdev hook get EACCES (the hook names alice), and he can neither list nor read the mount"
    else
        fail "bob gets EACCES from /run/xdev/dev" "$seen" "$(as bob ls /run/xdev/dev 2>&1)"
    fi
    in_container systemctl stop xdev@dev
else
    fail "systemctl start xdev@dev (--owner alice) serves /run/xdev/dev" \
        "$(in_container systemctl status --no-pager xdev@dev 2>&1)"
fi

# -- the user unit: alice's own manager serves $XDG_RUNTIME_DIR/xdev-main
# with no root at all (fusermount3, no user_allow_other needed).
alice_runtime=/run/user/$alice_uid
# What a user does for their units to run without a login session:
# lingering starts their manager (user@UID.service) now and at every boot.
in_container loginctl enable-linger alice
eventually 60 unit_is "user@$alice_uid.service" ActiveState active
as_alice_manager() {
    as alice env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$alice_runtime" "$@"
}
if verified=$(as_alice_manager systemd-analyze --user verify /usr/local/lib/systemd/user/xdev@.service 2>&1) &&
    [ -z "$verified" ]; then
    pass "systemd-analyze --user verify /usr/local/lib/systemd/user/xdev@.service finds nothing to say"
else
    fail "systemd-analyze --user verify /usr/local/lib/systemd/user/xdev@.service finds nothing to say" "$verified"
fi
user_mount=$alice_runtime/xdev-main
if as_alice_manager systemctl --user start xdev@main &&
    [ "$(in_container findmnt --noheadings --raw --output FSTYPE,SOURCE --mountpoint "$user_mount")" = "fuse.xdev xdev" ]; then
    pass "alice's systemctl --user start xdev@main returns with $user_mount served (through fusermount3)"
    seen=$(as alice bash /tmp/decide-as-owner.sh "$user_mount" /tmp/alice-user-mark 2>&1)
    if [ "$seen" = "$(owner_round /tmp/alice-user-mark)" ]; then
        pass "on her user unit's mount, alice's echo > resolve applies and her xdev hook is allowed"
    else
        fail "on her user unit's mount, alice's echo > resolve applies and her xdev hook is allowed" "$seen"
    fi
    seen=$(another_round bob "$user_mount")
    if [ "$seen" = "$(printf '%s\n' "Permission denied" "hook: [] exit 0")" ]; then
        pass "bob's echo > resolve and xdev hook get EACCES on alice's user mount"
    else
        fail "bob's echo > resolve and xdev hook get EACCES on alice's user mount" "$seen"
    fi
    if as_alice_manager systemctl --user stop xdev@main && ! in_container findmnt --mountpoint "$user_mount" >/dev/null &&
        not_there "$user_mount"; then
        pass "systemctl --user stop xdev@main leaves no mount and no mount point"
    else
        fail "systemctl --user stop xdev@main leaves no mount and no mount point" "$(in_container findmnt -t fuse.xdev 2>&1)"
    fi
else
    fail "alice's systemctl --user start xdev@main serves $user_mount" \
        "$(as_alice_manager systemctl --user status --no-pager xdev@main 2>&1)" \
        "$(in_container journalctl --boot --no-pager --output=cat _UID="$alice_uid" 2>&1 | tail -n 10)"
fi

# From here on systemd's debug log names every notification a service
# sends. (Not before: at debug level, journald may take a service's first
# output lines for init.scope's, and `journalctl -u` misses them.)
in_container systemd-analyze log-level debug

# -- xdev@xdev: stop
if in_container systemctl stop xdev@xdev; then
    if unit_is xdev@xdev ActiveState inactive && unit_is xdev@xdev Result success &&
        ! in_container systemctl is-failed --quiet xdev@xdev; then
        pass "systemctl stop xdev@xdev leaves the unit inactive, not failed"
    else
        fail "systemctl stop xdev@xdev leaves the unit inactive, not failed" \
            "$(in_container systemctl status --no-pager xdev@xdev 2>&1)"
    fi
else
    fail "systemctl stop xdev@xdev" "$(in_container systemctl status --no-pager xdev@xdev 2>&1)"
fi
if eventually 60 journal_mentions xdev@xdev "(STOPPING=1, STATUS=Stopping on SIGTERM)"; then
    pass "the daemon sent STOPPING=1 on SIGTERM"
else
    fail "the daemon sent STOPPING=1 on SIGTERM" "$(journal xdev@xdev | grep notification || true)"
fi
if ! in_container findmnt --mountpoint /xdev >/dev/null && not_there /xdev && is_fuse_mount /run/xdev/ci-1; then
    pass "the mount is gone cleanly: no mount and no mount point left at /xdev (ci-1 still served)"
else
    fail "the mount is gone cleanly" "$(in_container findmnt -t fuse 2>&1)" "$(in_container ls -ld /xdev 2>&1)"
fi

# -- reload and SIGHUP (the unit has no ExecReload=; SIGHUP stops xdev)
if reload_error=$(in_container systemctl reload xdev@ci-1 2>&1); then
    fail "systemctl reload xdev@ci-1 is refused (the unit has no ExecReload=)" "it succeeded"
elif [[ $reload_error == *"not applicable"* ]] && unit_is xdev@ci-1 ActiveState active; then
    pass "systemctl reload xdev@ci-1 is refused, the unit has no ExecReload= (still serving)"
else
    fail "systemctl reload xdev@ci-1 is refused and the unit keeps serving" "$reload_error"
fi
# What logrotate does: move the --journal file away, then SIGUSR1.
ci1_pid=$(in_container systemctl show --property=MainPID --value xdev@ci-1)
in_container mv /var/log/xdev-ci-1.jsonl /var/log/xdev-ci-1.jsonl.1
in_container systemctl kill --kill-whom=main --signal=SIGUSR1 xdev@ci-1
if eventually 60 in_container test -e /var/log/xdev-ci-1.jsonl && unit_is xdev@ci-1 ActiveState active &&
    unit_is xdev@ci-1 MainPID "$ci1_pid" && [[ $(in_container cat /run/xdev/ci-1/status) == "pending: 0"* ]]; then
    pass "systemctl kill -s SIGUSR1 xdev@ci-1 reopens the --journal file and keeps serving"
else
    fail "systemctl kill -s SIGUSR1 xdev@ci-1 reopens the --journal file and keeps serving" \
        "$(in_container ls -l /var/log/ 2>&1)" "$(in_container systemctl status --no-pager xdev@ci-1 2>&1)"
fi
in_container systemctl kill --signal=SIGHUP xdev@ci-1
if eventually 60 unit_is xdev@ci-1 ActiveState inactive && unit_is xdev@ci-1 Result success &&
    unit_is xdev@ci-1 NRestarts 0 && not_there /run/xdev/ci-1 &&
    eventually 60 journal_mentions xdev@ci-1 "(STOPPING=1, STATUS=Stopping on SIGHUP)"; then
    pass "systemctl kill -s SIGHUP xdev@ci-1 stops it cleanly (STOPPING=1, exit 0, inactive, not restarted)"
else
    fail "systemctl kill -s SIGHUP xdev@ci-1 stops it cleanly" "$(in_container systemctl status --no-pager xdev@ci-1 2>&1)"
fi

# -- SIGKILL: Restart=on-failure, and the stale mount is cleared
in_container systemctl start xdev@xdev
in_container systemctl kill --signal=SIGKILL xdev@xdev
# shellcheck disable=SC2317 # run through eventually
restarted() {
    [ "$(in_container systemctl show --property=NRestarts --value xdev@xdev)" -ge 1 ] &&
        unit_is xdev@xdev ActiveState active
}
if eventually 60 restarted && [[ $(in_container cat /xdev/status) == "pending: 0"* ]] &&
    [ "$(in_container findmnt --noheadings --mountpoint /xdev | wc -l)" -eq 1 ]; then
    pass "after SIGKILL, Restart=on-failure serves /xdev again (the stale mount cleared)"
else
    fail "after SIGKILL, Restart=on-failure serves /xdev again" \
        "$(in_container systemctl status --no-pager xdev@xdev 2>&1)" "$(in_container findmnt -t fuse 2>&1)"
fi
eventually 60 journal_mentions xdev@xdev "(READY=1, STATUS=Serving /xdev)"
ready=$(last_line_of "(READY=1, STATUS=Serving /xdev)" xdev@xdev)
started_line=$(last_line_of "Started xdev@xdev.service" xdev@xdev)
if [ -n "$ready" ] && [ -n "$started_line" ] && [ "$ready" -lt "$started_line" ]; then
    pass "the restart's READY=1 reached systemd before the unit counted as started"
else
    fail "the restart's READY=1 reached systemd before the unit counted as started" \
        "$(journal xdev@xdev | grep -E 'READY=1|Started' || true)"
fi
in_container systemctl stop xdev@xdev

# -- install.sh /opt/xdev: systemd reads no unit there, and install.sh says
# to link it first; done as it says, the linked unit serves /xdev.
# shellcheck disable=SC2086 # the command line install.sh printed
if [ -n "$opt_next" ] && in_container $opt_next >/dev/null 2>&1 && in_container systemctl enable --now xdev@xdev 2>/dev/null &&
    [[ $(in_container systemctl show --property=ExecStart --value xdev@xdev) == *"path=/opt/xdev/bin/xdev "* ]] &&
    [[ $(in_container cat /xdev/status) == "pending: 0"* ]]; then
    pass "install.sh /opt/xdev says \`$opt_next\` first; then systemctl enable --now xdev@xdev serves /xdev from /opt/xdev"
else
    fail "install.sh /opt/xdev says to link the unit first, and the linked unit serves /xdev" \
        "install.sh said: $(grep -F 'next' "$cache/install-opt.log")" "$(in_container systemctl status --no-pager xdev@xdev 2>&1)"
fi
in_container systemctl disable --now xdev@xdev >/dev/null 2>&1

if [ -z "$(in_container findmnt --noheadings --types fuse)" ] && not_there /xdev && not_there /run/xdev/ci-1; then
    pass "no FUSE mount and no mount point left in the container"
else
    fail "no FUSE mount and no mount point left in the container" "$(in_container findmnt -t fuse 2>&1)"
fi

# -- the container powers off
kill -TERM "$nspawn_pid"
if wait_gone "$nspawn_pid" 60; then
    wait "$nspawn_pid"
    nspawn_status=$?
    nspawn_pid=
    if [ "$nspawn_status" -eq 0 ]; then
        pass "the container powers off cleanly"
    else
        fail "the container powers off cleanly" "systemd-nspawn exited $nspawn_status" "$(tail -n 5 "$cache/boot.log")"
    fi
else
    fail "the container powers off within 60 s"
fi
finish
