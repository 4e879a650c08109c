//! The file semantics of `docs/semantics.md`, operation by operation,
//! each against a real mount with real syscalls (from Python, which makes
//! every call and its errno plain). Behaviours the other suites already
//! cover are not repeated here.

mod common;

use std::thread;
use std::time::Duration;

use common::*;

/// Runs a Python snippet that prints one result per line, and returns the
/// lines; fails the test with its stderr if it crashes. `os`, `errno`,
/// `sys`, `D` (the mount dir) and `E(call)` (`ok <value>` or the errno's
/// name) are defined.
fn py(fx: &Fixture, code: &str) -> Vec<String> {
    let prelude = "import os, errno, sys\nD = os.environ['D']\n\
        def E(call):\n\
        \x20   try:\n\
        \x20       return 'ok %s' % (call(),)\n\
        \x20   except OSError as e:\n\
        \x20       return errno.errorcode[e.errno]\n";
    fx.python_lines(&format!("{prelude}{code}"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

// ----- files at a glance -----------------------------------------------------

#[test]
fn every_file_kind_has_its_mode_size_block_size_and_links() {
    let (fx, _desk, _plans) = Fixture::with_plan(xdev::PlanHandlerKind::Yolo);
    let (id, _) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        &format!(
            "item = 'pending/{id}'\n\
             for name in ['resolve', 'reject', 'propose', 'plan/ctl', item + '/resolve',\n\
             \x20           item + '/reject', 'sessions/agent/resolve', 'stage', 'events',\n\
             \x20           'status', 'status.json', 'last', 'reminder', 'log', 'plan/status',\n\
             \x20           item + '/label', item + '/source', 'sessions/agent/status',\n\
             \x20           '.', 'pending', 'sessions', 'plan', item, 'sessions/agent',\n\
             \x20           'sessions/agent/pending']:\n\
             \x20   st = os.stat(D + '/' + name)\n\
             \x20   size = st.st_size\n\
             \x20   if os.path.isfile(D + '/' + name) and size not in (0, 65536):\n\
             \x20       size = 'content' if size == len(open(D + '/' + name, 'rb').read()) else size\n\
             \x20   owned = st.st_uid == os.getuid() and st.st_gid == os.getgid()\n\
             \x20   print(name.replace(item, 'ITEM'), oct(st.st_mode), size, st.st_blksize, st.st_nlink, owned)\n"
        ),
    );
    assert_eq!(
        out,
        [
            "resolve 0o100600 65536 8192 1 True",
            "reject 0o100600 65536 8192 1 True",
            "propose 0o100600 65536 8192 1 True",
            "plan/ctl 0o100600 65536 8192 1 True",
            "ITEM/resolve 0o100600 65536 8192 1 True",
            "ITEM/reject 0o100600 65536 8192 1 True",
            "sessions/agent/resolve 0o100600 65536 8192 1 True",
            "stage 0o100600 0 4096 1 True",
            "events 0o100400 0 4096 1 True",
            "status 0o100400 content 4096 1 True",
            "status.json 0o100400 content 4096 1 True",
            "last 0o100400 0 4096 1 True",
            "reminder 0o100400 content 4096 1 True",
            "log 0o100400 content 4096 1 True",
            "plan/status 0o100400 content 4096 1 True",
            "ITEM/label 0o100400 content 4096 1 True",
            "ITEM/source 0o100400 content 4096 1 True",
            "sessions/agent/status 0o100400 content 4096 1 True",
            ". 0o40755 0 4096 2 True",
            "pending 0o40755 0 4096 2 True",
            "sessions 0o40755 0 4096 2 True",
            "plan 0o40755 0 4096 2 True",
            "ITEM 0o40755 0 4096 2 True",
            "sessions/agent 0o40755 0 4096 2 True",
            "sessions/agent/pending 0o40755 0 4096 2 True",
        ]
    );
}

#[test]
fn with_share_journal_the_sessions_files_are_0444_and_devices_stay_0600() {
    let fx = Fixture::with_options(xdev::MountOptions {
        share_journal: true,
        ..xdev::MountOptions::default()
    });
    let (id, _) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        &format!(
            "for name in ['resolve', 'stage', 'pending/{id}/reject', 'status', 'status.json',\n\
             \x20           'last', 'reminder', 'log', 'events', 'pending/{id}/label',\n\
             \x20           'sessions/agent/status', 'pending']:\n\
             \x20   print(oct(os.stat(D + '/' + name).st_mode & 0o777))\n"
        ),
    );
    let expected = [
        "0o600", "0o600", "0o600", "0o444", "0o444", "0o444", "0o444", "0o444", "0o444", "0o444",
        "0o444", "0o755",
    ];
    assert_eq!(out, expected);
}

#[test]
fn the_mounts_files_keep_the_mount_start_as_their_times() {
    let fx = Fixture::new();
    let times = || {
        py(
            &fx,
            "for name in ['.', 'resolve', 'status', 'log', 'pending']:\n\
             \x20   st = os.stat(D + '/' + name)\n\
             \x20   print(st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)\n",
        )
    };
    let before = times();
    stage_recording(&fx.session, "edit");
    assert_eq!(write_once(&fx.path("resolve"), b"go\n"), Ok(3));
    let after = times();
    assert_eq!(before, after, "nothing the session does moves a time");
    assert!(
        before.iter().all(|line| line == &before[0]),
        "one time for all: {before:?}"
    );
}

#[test]
fn a_directory_lists_the_mounts_files_in_a_fixed_order_then_the_callers_drafts() {
    let (fx, _desk, _plans) = Fixture::with_plan(xdev::PlanHandlerKind::Yolo);
    let (id, _) = stage_recording(&fx.session, "edit");
    for name in ["zz.tmp", "aa.tmp"] {
        std::fs::write(fx.path(name), "draft").expect("a draft");
    }
    std::fs::write(fx.path(&format!("pending/{id}/resolve.tmp")), "x").expect("a draft");
    assert_eq!(
        dir_names(&fx.dir),
        [
            "resolve",
            "reject",
            "propose",
            "status",
            "status.json",
            "last",
            "reminder",
            "log",
            "events",
            "stage",
            "pending",
            "sessions",
            "plan",
            "aa.tmp",
            "zz.tmp",
        ]
    );
    assert_eq!(
        dir_names(&fx.path(&format!("pending/{id}"))),
        ["label", "source", "resolve", "reject", "resolve.tmp"]
    );
}

// ----- opening -----------------------------------------------------------------

#[test]
fn o_direct_reads_and_writes_a_device_as_usual_and_o_tmpfile_is_eopnotsupp() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "p = D + '/resolve'\n\
         fd = os.open(p, os.O_RDWR | os.O_DIRECT)\n\
         print(os.read(fd, 9))\n\
         print(os.write(fd, b'direct\\n'))\n\
         print(os.pread(fd, 100, 0))\n\
         print(E(lambda: os.open(D, os.O_TMPFILE | os.O_WRONLY, 0o600)))\n",
    );
    assert_eq!(
        out,
        [
            "b'Write a o'",
            "7",
            "b'applied: edit\\n'",
            // Python names EOPNOTSUPP by its other name (one number on Linux).
            "ENOTSUP"
        ]
    );
    assert_eq!(calls.reasons(), ["direct"]);
}

#[test]
fn o_path_descriptors_open_nothing_and_dispatch_nothing() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "fd = os.open(D + '/resolve', os.O_PATH)\n\
         print(os.fstat(fd).st_size)\n\
         print(E(lambda: os.write(fd, b'go')))\n\
         print(E(lambda: os.read(fd, 10)))\n\
         os.close(fd)\n",
    );
    assert_eq!(out, ["65536", "EBADF", "EBADF"]);
    assert_eq!(calls.applied(), 0);
    assert!(fx.session.is_pending(&id));
    assert_eq!(fx.read("last"), "", "nothing was dispatched");
}

#[test]
fn o_trunc_of_a_read_only_file_needs_write_permission_and_changes_nothing() {
    let fx = Fixture::new();
    let before = fx.read("status");
    let out = py(
        &fx,
        "print(E(lambda: os.open(D + '/status', os.O_RDONLY | os.O_TRUNC)))\n",
    );
    // The kernel asks for write permission for O_TRUNC; root passes it.
    let expected = if is_root() { "ok" } else { "EACCES" };
    assert!(out[0].starts_with(expected), "{out:?}");
    assert_eq!(fx.read("status"), before);
}

#[test]
fn a_mistyped_device_name_creates_a_draft_and_decides_nothing() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    let out = fx.sh("echo 'tests pass' > \"$D/reslove\" && cat \"$D/reslove\"");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "tests pass\n");
    assert_eq!(calls.applied(), 0);
    assert!(fx.session.is_pending(&id));
    assert!(dir_names(&fx.dir).contains(&"reslove".to_string()));
}

#[test]
fn only_drafts_can_be_created_and_only_where_drafts_may_be() {
    let fx = Fixture::new();
    let (id, _) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        &format!(
            "def create(path):\n\
             \x20   return E(lambda: os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)))\n\
             print(create(D + '/pending/new'))\n\
             print(create(D + '/sessions/agent/new'))\n\
             print(create(D + '/sessions/new'))\n\
             print(create(D + '/pending/{id}/detail'))\n\
             print(create(D + '/plan'))\n\
             print(E(lambda: os.mknod(D + '/regular', 0o600 | 0o100000)))\n\
             print(E(lambda: os.mknod(D + '/fifo', 0o600 | 0o010000)))\n\
             print(E(lambda: os.close(os.open(D.encode() + b'/\\xff', os.O_CREAT | os.O_WRONLY, 0o600))))\n\
             print(E(lambda: os.stat(D.encode() + b'/\\xff')))\n\
             print(create(D + '/pending/{id}/note.tmp'))\n\
             os.unlink(D + '/pending/{id}/note.tmp')\n"
        ),
    );
    assert_eq!(
        out,
        [
            "EPERM", "EPERM", "EISDIR", "EPERM", "EPERM", "EPERM", "EPERM", "EINVAL", "ENOENT",
            "ok None",
        ]
    );
}

#[test]
fn directories_and_files_are_not_opened_as_each_other() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "print(E(lambda: os.read(os.open(D + '/pending', os.O_RDONLY), 10)))\n\
         print(E(lambda: os.open(D + '/pending', os.O_WRONLY)))\n\
         print(E(lambda: os.open(D + '/resolve', os.O_RDONLY | os.O_DIRECTORY)))\n\
         print(E(lambda: os.listdir(D + '/status')))\n\
         print(E(lambda: os.unlink(D + '/pending')))\n\
         print(E(lambda: os.rmdir(D + '/pending')))\n\
         print(E(lambda: os.truncate(D + '/pending', 0)))\n\
         print(E(lambda: os.chmod(D + '/pending', 0o700)))\n\
         print(E(lambda: os.chmod(D, 0o700)))\n",
    );
    assert_eq!(
        out,
        ["EISDIR", "EISDIR", "ENOTDIR", "ENOTDIR", "EISDIR", "EPERM", "EISDIR", "EPERM", "EPERM"]
    );
}

// ----- reading -----------------------------------------------------------------

#[test]
fn streams_refuse_lseek_and_pread_with_espipe_and_other_files_seek() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "for name, flags in [('events', os.O_RDONLY), ('stage', os.O_RDWR)]:\n\
         \x20   fd = os.open(D + '/' + name, flags | os.O_NONBLOCK)\n\
         \x20   print(name, E(lambda: os.lseek(fd, 0, os.SEEK_SET)), E(lambda: os.pread(fd, 10, 0)))\n\
         fd = os.open(D + '/resolve', os.O_RDONLY)\n\
         print(os.lseek(fd, 0, os.SEEK_END), os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE))\n\
         os.lseek(fd, 6, os.SEEK_SET)\n\
         print(os.read(fd, 5))\n\
         fd = os.open(D + '/status', os.O_RDONLY)\n\
         print(os.lseek(fd, 0, os.SEEK_END) == len(open(D + '/status', 'rb').read()))\n",
    );
    assert_eq!(
        out,
        [
            "events ESPIPE ESPIPE",
            "stage ESPIPE ESPIPE",
            "65536 0 65536",
            "b'a one'",
            "True"
        ]
    );
}

#[test]
fn an_item_file_reads_empty_once_its_preview_is_decided() {
    let fx = Fixture::new();
    let (id, _) = stage_recording(&fx.session, "edit");
    let label = Fd::open(&fx.path(&format!("pending/{id}/label")), libc::O_RDONLY).expect("open");
    let mut buf = [0u8; 64];
    // SAFETY: buf is a valid writable buffer of buf.len() bytes.
    let n = unsafe { libc::pread(label.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
    assert_eq!(&buf[..n as usize], b"edit\n");
    assert_eq!(
        write_once(&fx.path(&format!("pending/{id}/resolve")), b"go"),
        Ok(2)
    );
    // SAFETY: as above.
    let n = unsafe { libc::pread(label.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
    assert_eq!(n, 0, "decided: nothing to read");
    assert_eq!(
        Fd::open(&fx.path(&format!("pending/{id}/label")), libc::O_RDONLY).err(),
        Some(libc::ENOENT)
    );
}

// ----- writing -----------------------------------------------------------------

#[test]
fn a_zero_byte_write_dispatches_nothing_and_the_next_write_is_the_message() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let fd = Fd::open(&fx.path("resolve"), libc::O_WRONLY).expect("open");
    assert_eq!(fd.write(b""), Ok(0));
    assert_eq!(calls.applied(), 0);
    assert_eq!(fx.read("last"), "", "nothing dispatched");
    assert_eq!(fd.write(b"the real reason\n"), Ok(16));
    assert_eq!(calls.reasons(), ["the real reason"]);
}

#[test]
fn o_nonblock_does_not_make_a_device_write_return_before_its_outcome() {
    let fx = Fixture::new();
    let (id, calls, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = thread::spawn(move || {
        let fd = Fd::open(&path, libc::O_WRONLY | libc::O_NONBLOCK).expect("open");
        fd.write(b"go")
    });
    fx.wait_until_deciding(&id);
    assert!(
        !writer.is_finished(),
        "the write waits for its handler, O_NONBLOCK or not"
    );
    open_gate(&fx.session, &id, &calls, &gate);
    assert_eq!(writer.join().expect("writer"), Ok(2));
}

// ----- drafts ------------------------------------------------------------------

#[test]
fn o_append_on_a_draft_appends() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "p = D + '/notes.tmp'\n\
         fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)\n\
         os.write(fd, b'one ')\n\
         os.pwrite(fd, b'two ', 0)\n\
         os.close(fd)\n\
         fd = os.open(p, os.O_WRONLY | os.O_APPEND)\n\
         os.write(fd, b'three')\n\
         os.close(fd)\n\
         print(open(p, 'rb').read())\n\
         os.unlink(p)\n",
    );
    // Linux's pwrite on an O_APPEND descriptor appends too.
    assert_eq!(out, ["b'one two three'"]);
}

#[test]
fn an_unlinked_draft_still_open_reads_nothing_and_refuses_writes_with_enoent() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "fd = os.open(D + '/gone.tmp', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)\n\
         os.write(fd, b'hello')\n\
         os.unlink(D + '/gone.tmp')\n\
         st = os.fstat(fd)\n\
         print(st.st_size, st.st_nlink)\n\
         print(os.pread(fd, 10, 0))\n\
         print(E(lambda: os.write(fd, b'more')))\n\
         print(E(lambda: os.ftruncate(fd, 2)))\n\
         print(E(lambda: os.stat(D + '/gone.tmp')))\n",
    );
    assert_eq!(out, ["0 0", "b''", "ENOENT", "ENOENT", "ENOENT"]);
}

#[test]
fn rename_flags_and_places_on_drafts() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().expect("a dir outside the mount");
    let out = py(
        &fx,
        &format!(
            "import ctypes\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def renameat2(a, b, flags):\n\
             \x20   rc = libc.renameat2(-100, (D + '/' + a).encode(), -100, (D + '/' + b).encode(), flags)\n\
             \x20   return 'ok' if rc == 0 else errno.errorcode[ctypes.get_errno()]\n\
             for name in ['a.tmp', 'b.tmp']:\n\
             \x20   fd = os.open(D + '/' + name, os.O_WRONLY | os.O_CREAT, 0o600)\n\
             \x20   os.write(fd, b'not now')\n\
             \x20   os.close(fd)\n\
             print(renameat2('a.tmp', 'reject', 1))\n\
             print(renameat2('a.tmp', 'b.tmp', 1))\n\
             print(renameat2('a.tmp', 'reject', 2))\n\
             print(renameat2('a.tmp', 'b.tmp', 2))\n\
             print(renameat2('a.tmp', 'c.tmp', 1))\n\
             print(E(lambda: os.rename(D + '/c.tmp', D + '/pending/c.tmp')))\n\
             print(E(lambda: os.rename((D + '/c.tmp').encode(), D.encode() + b'/\\xff')))\n\
             print(E(lambda: os.rename(D + '/c.tmp', '{outside}/c.tmp')))\n\
             print(E(lambda: os.rename(D + '/c.tmp', D + '/b.tmp')))\n\
             print(sorted(n for n in os.listdir(D) if n.endswith('.tmp')))\n\
             print(E(lambda: os.rename(D + '/b.tmp', D + '/sessions/agent/reject')))\n\
             print(sorted(n for n in os.listdir(D) if n.endswith('.tmp')))\n",
            outside = outside.path().display()
        ),
    );
    assert_eq!(
        out,
        [
            "EEXIST",
            "EEXIST",
            "EPERM",
            "EPERM",
            "ok",
            "EPERM",
            "EPERM",
            "EXDEV",
            "ok None",
            "['b.tmp']",
            "ok None",
            "[]",
        ]
    );
    assert_eq!(
        fx.read("last"),
        format!("{}\n", expected("nothing-to-reject", &fx.dir))
    );
}

#[test]
fn a_draft_renamed_onto_plan_ctl_is_one_command() {
    let (fx, _desk, _plans) = Fixture::with_plan(xdev::PlanHandlerKind::Yolo);
    let out = py(
        &fx,
        "for body in [b'enter\\n', b'dance']:\n\
         \x20   fd = os.open(D + '/cmd.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n\
         \x20   os.write(fd, body)\n\
         \x20   os.close(fd)\n\
         \x20   print(E(lambda: os.rename(D + '/cmd.tmp', D + '/plan/ctl')))\n",
    );
    assert_eq!(out, ["ok None", "EINVAL"]);
    assert!(
        fx.session.plan_mode(),
        "the first command entered plan mode"
    );
    assert!(fx.read("status").contains("plan mode: on"));
}

// ----- attributes --------------------------------------------------------------

#[test]
fn only_truncates_of_writable_files_change_attributes() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "print(E(lambda: os.truncate(D + '/stage', 0)))\n\
         print(E(lambda: os.truncate(D + '/stage', 3)))\n\
         print(E(lambda: os.truncate(D + '/reject', 0)))\n\
         print(E(lambda: os.truncate(D + '/reject', 1)))\n\
         print(E(lambda: os.truncate(D + '/status', 0)))\n\
         print(E(lambda: os.truncate(D + '/log', 5)))\n\
         print(E(lambda: os.utime(D + '/status', (1, 1))))\n\
         print(E(lambda: os.chmod(D + '/stage', 0o644)))\n",
    );
    // The owner who is not root is refused a read-only file's truncate by
    // the kernel's permission check first.
    let read_only = if is_root() { "EPERM" } else { "EACCES" };
    assert_eq!(
        out,
        ["ok None", "EINVAL", "ok None", "EINVAL", read_only, read_only, "EPERM", "EPERM"]
    );
    assert_eq!(fx.read("last"), "", "no truncate decides anything");
}

// ----- other operations ----------------------------------------------------------

#[test]
fn mmap_shared_is_enodev_and_private_reads_the_content() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "import mmap\n\
         fd = os.open(D + '/status', os.O_RDONLY)\n\
         print(E(lambda: mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)))\n\
         m = mmap.mmap(fd, 0, mmap.MAP_PRIVATE, mmap.PROT_READ)\n\
         print(m[:11])\n\
         fd = os.open(D + '/resolve', os.O_RDWR)\n\
         print(E(lambda: mmap.mmap(fd, 10, mmap.MAP_SHARED)))\n",
    );
    assert_eq!(out, ["ENODEV", "b'pending: 0\\n'", "ENODEV"]);
}

#[test]
fn flock_and_fcntl_locks_are_kept_by_the_kernel_and_decide_nothing() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "import fcntl\n\
         a = os.open(D + '/resolve', os.O_RDONLY)\n\
         b = os.open(D + '/resolve', os.O_RDONLY)\n\
         print(E(lambda: fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)))\n\
         print(E(lambda: fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)))\n\
         fcntl.flock(a, fcntl.LOCK_UN)\n\
         print(E(lambda: fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)))\n\
         w = os.open(D + '/resolve', os.O_WRONLY)\n\
         print(E(lambda: fcntl.lockf(w, fcntl.LOCK_EX | fcntl.LOCK_NB)))\n",
    );
    assert_eq!(out, ["ok None", "EAGAIN", "ok None", "ok None"]);
    assert_eq!(calls.applied(), 0);
    assert!(fx.session.is_pending(&id));
}

#[test]
fn xattrs_cannot_be_read_or_set_and_ioctl_is_enotty() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "import fcntl, termios\n\
         p = D + '/resolve'\n\
         print(E(lambda: os.getxattr(p, 'user.x')))\n\
         print(E(lambda: os.listxattr(p)))\n\
         print(E(lambda: os.setxattr(p, 'user.x', b'1')))\n\
         print(E(lambda: os.removexattr(p, 'user.x')))\n\
         print(E(lambda: os.getxattr(D, 'user.x')))\n\
         fd = os.open(p, os.O_RDONLY)\n\
         print(E(lambda: fcntl.ioctl(fd, termios.TCGETS, bytes(64))))\n\
         print(os.isatty(fd))\n\
         print(E(lambda: os.readlink(p)))\n",
    );
    assert_eq!(
        out,
        // ENOTSUP: Python's name for EOPNOTSUPP (one number on Linux).
        ["ENOTSUP", "ENOTSUP", "EPERM", "EPERM", "ENOTSUP", "ENOTTY", "False", "EINVAL"]
    );
}

#[test]
fn statfs_reports_nothing_stored_512_byte_blocks_and_a_nosuid_nodev_noexec_mount() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "s = os.statvfs(D)\n\
         print(s.f_bsize, s.f_blocks, s.f_bfree, s.f_bavail, s.f_files, s.f_ffree, s.f_namemax)\n\
         print(bool(s.f_flag & os.ST_NOSUID), bool(s.f_flag & os.ST_NODEV), bool(s.f_flag & os.ST_NOEXEC))\n",
    );
    assert_eq!(out, ["512 0 0 0 0 0 255", "True True True"]);
}

#[test]
fn fsync_and_fdatasync_succeed_and_decide_nothing() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "fd = os.open(D + '/resolve', os.O_WRONLY)\n\
         print(E(lambda: os.fsync(fd)), E(lambda: os.fdatasync(fd)))\n\
         os.close(fd)\n",
    );
    assert_eq!(out, ["ok None ok None"]);
    assert_eq!(calls.applied(), 0);
}

#[test]
fn poll_finds_every_file_but_events_ready_at_once() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "import select\n\
         for name, flags in [('status', os.O_RDONLY), ('resolve', os.O_RDWR), ('log', os.O_RDONLY),\n\
         \x20                   ('stage', os.O_RDWR), ('events', os.O_RDONLY)]:\n\
         \x20   fd = os.open(D + '/' + name, flags)\n\
         \x20   p = select.poll()\n\
         \x20   p.register(fd, select.POLLIN | select.POLLOUT)\n\
         \x20   ready = p.poll(0)\n\
         \x20   print(name, [bool(ev & select.POLLIN) for _, ev in ready], [bool(ev & select.POLLOUT) for _, ev in ready])\n",
    );
    assert_eq!(
        out,
        [
            "status [True] [True]",
            "resolve [True] [True]",
            "log [True] [True]",
            "stage [True] [True]",
            "events [] []",
        ]
    );
}

#[test]
fn inotify_never_sees_what_the_mount_changes_itself() {
    let fx = Fixture::new();
    let mut watcher = fx
        .command(
            "python3",
            "import ctypes, os, struct, sys\n\
             D = os.environ['D']\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             fd = libc.inotify_init()\n\
             mask = 0x2 | 0x4 | 0x100 | 0x200 | 0x40 | 0x80\n\
             names = {}\n\
             for path in [D, D + '/pending', D + '/status']:\n\
             \x20   names[libc.inotify_add_watch(fd, path.encode(), mask)] = path\n\
             print('watching', flush=True)\n\
             sys.stdin.readline()\n\
             while True:\n\
             \x20   data = os.read(fd, 4096)\n\
             \x20   at = 0\n\
             \x20   while at < len(data):\n\
             \x20       wd, m, _, n = struct.unpack_from('iIII', data, at)\n\
             \x20       name = data[at + 16:at + 16 + n].rstrip(b'\\0').decode()\n\
             \x20       at += 16 + n\n\
             \x20       print(os.path.basename(names[wd]), hex(m), name, flush=True)\n\
             \x20       if name == 'marker.tmp':\n\
             \x20           sys.exit(0)\n",
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut lines = std::io::BufReader::new(watcher.stdout.take().expect("stdout"));
    assert_eq!(next_line(&mut lines), "watching\n");
    // The session changes: pending/ gains an entry, status another text.
    let (id, _) = stage_recording(&fx.session, "edit");
    assert!(dir_names(&fx.path("pending")).contains(&id));
    assert!(fx.read("status").contains("pending: 1"));
    // A process creates a draft: that the kernel reports.
    std::fs::write(fx.path("marker.tmp"), "x").expect("a draft");
    std::io::Write::write_all(&mut watcher.stdin.take().expect("stdin"), b"\n").expect("go on");
    let exited = wait_exit(&mut watcher, Duration::from_secs(30));
    let mut seen = String::new();
    std::io::Read::read_to_string(&mut lines, &mut seen).expect("watcher output");
    assert_eq!(exited, Some(0), "{seen}");
    let mnt = fx.dir.file_name().expect("name").to_string_lossy();
    assert_eq!(seen, format!("{mnt} 0x100 marker.tmp\n"), "only the draft");
}

// ----- signals -------------------------------------------------------------------

#[test]
fn a_handled_signal_ends_a_blocked_events_read_with_eintr() {
    let fx = Fixture::new();
    let mut reader = fx
        .command(
            "python3",
            "import ctypes, errno, os, signal, sys\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             signal.signal(signal.SIGUSR1, lambda *_: None)\n\
             fd = os.open(os.environ['D'] + '/events', os.O_RDONLY)\n\
             print('reading', flush=True)\n\
             buf = ctypes.create_string_buffer(4096)\n\
             n = libc.read(fd, buf, 4096)\n\
             print(n, errno.errorcode.get(ctypes.get_errno()), flush=True)\n",
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut lines = std::io::BufReader::new(reader.stdout.take().expect("stdout"));
    assert_eq!(next_line(&mut lines), "reading\n");
    // The read is blocked once the signal watch knows its thread; signal
    // until it ends (a signal before the read began is simply handled).
    let ended = eventually(Duration::from_secs(30), || {
        // SAFETY: signalling a child this test spawned and has not reaped.
        unsafe { libc::kill(reader.id() as i32, libc::SIGUSR1) };
        thread::sleep(Duration::from_millis(100));
        matches!(reader.try_wait(), Ok(Some(_)))
    });
    assert!(ended, "the events read never ended");
    assert_eq!(next_line(&mut lines), "-1 EINTR\n");
}
