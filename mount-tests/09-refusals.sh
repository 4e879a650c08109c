#!/usr/bin/env bash
# (i) None of the mount's own files can be removed, renamed or linked, and
# no directory or special file created (EPERM); device modes cannot be
# changed, and status files cannot be written. (Regular files created in
# the root or an item's directory are drafts, see 33-python-tempfile-replace-onto-devices.sh;
# `pending/` itself takes none.)
. "$(dirname "$0")/lib.sh"

before=$(ls -A "$D")

must_fail() { # must_fail DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@" 2>/dev/null; then
        fail "'$what' succeeded"
    fi
}

must_fail "touch $D/pending/new-file" touch "$D/pending/new-file"
must_fail "mkdir $D/new-dir" mkdir "$D/new-dir"
must_fail "rm -f $D/resolve" rm -f "$D/resolve"
must_fail "mv $D/resolve $D/renamed" mv "$D/resolve" "$D/renamed"
must_fail "mv $D/status $D/reject" mv "$D/status" "$D/reject"
must_fail "ln -s resolve $D/symlink" ln -s resolve "$D/symlink"
must_fail "ln $D/resolve $D/hardlink" ln "$D/resolve" "$D/hardlink"
must_fail "chmod 666 $D/resolve" chmod 666 "$D/resolve"
must_fail "chmod 600 $D/status" chmod 600 "$D/status"
must_fail "echo x > $D/status" sh -c 'echo x > "$1"' sh "$D/status"
must_fail "echo x > $D/status.json" sh -c 'echo x > "$1"' sh "$D/status.json"

py '
expect_errno("EPERM", os.open, D + "/pending/new-file", os.O_WRONLY | os.O_CREAT, 0o600)
expect_errno("EPERM", os.mkdir, D + "/new-dir")
expect_errno("EPERM", os.unlink, D + "/resolve")
expect_errno("EPERM", os.rename, D + "/resolve", D + "/renamed")
expect_errno("EPERM", os.symlink, "resolve", D + "/symlink")
expect_errno("EPERM", os.link, D + "/resolve", D + "/hardlink")
expect_errno("EPERM", os.mknod, D + "/fifo", 0o600 | 0o010000)
for name, call in (("chmod", lambda: os.chmod(D + "/resolve", 0o666)),
                   ("chown", lambda: os.chown(D + "/resolve", 65534, 65534)),
                   ("utime", lambda: os.utime(D + "/resolve", (0, 0)))):
    try:
        call()
    except OSError:
        continue
    sys.exit("%s on a device succeeded" % name)
for name in ("status", "status.json", "last", "reminder"):
    try:
        fd = os.open(D + "/" + name, os.O_WRONLY)
    except OSError:
        continue
    try:
        try:
            os.write(fd, b"x\n")
        except OSError:
            continue
        sys.exit("writing %s succeeded" % name)
    finally:
        os.close(fd)
'

# Nothing changed.
assert_eq "$(ls -A "$D")" "$before" "entries of $D afterwards"
assert_eq "$(stat -c %a "$D/resolve")" "600" "mode of resolve afterwards"
assert_eq "$(stat -c %a "$D/status")" "400" "mode of status afterwards"
note "create, mkdir, rm, mv, ln -s, ln, mknod, chmod, status writes refused"
