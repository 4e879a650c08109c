//! Drafts: writers create a scratch file beside the devices, write it, and
//! rename it onto a device, as atomic-write libraries and agents' file
//! tools do. The rename is one message; it blocks and returns the outcome.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use xdev::CallbackError;

/// Runs a Python snippet that prints one result per line; fails the test
/// with its stderr if it crashes. `os`, `errno`, `sys` and `D` are defined.
fn py(fx: &Fixture, code: &str) -> Vec<String> {
    let prelude = "import os, errno, sys\nD = os.environ['D']\n\
        def err(e): return errno.errorcode[e.errno]\n\
        def draft(name, body, flags=os.O_WRONLY | os.O_CREAT | os.O_EXCL):\n\
        \x20   fd = os.open(D + '/' + name, flags, 0o600)\n\
        \x20   os.write(fd, body)\n\
        \x20   os.close(fd)\n\
        def rename(a, b):\n\
        \x20   try:\n\
        \x20       os.rename(D + '/' + a, D + '/' + b)\n\
        \x20       return 'ok'\n\
        \x20   except OSError as e:\n\
        \x20       return err(e)\n";
    fx.python_lines(&format!("{prelude}{code}"))
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names = dir_names(dir);
    names.sort();
    names
}

fn own_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "events",
        "last",
        "log",
        "pending",
        "propose",
        "reject",
        "reminder",
        "resolve",
        "sessions",
        "stage",
        "status",
        "status.json",
    ]
    .map(String::from)
    .to_vec();
    names.sort();
    names
}

#[test]
fn a_draft_renamed_onto_resolve_applies_the_head_once_and_is_gone() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "draft('resolve.1a2b.tmp', b'  tests pass\\n')\n\
         print(rename('resolve.1a2b.tmp', 'resolve'))\n\
         print(os.path.exists(D + '/resolve.1a2b.tmp'))\n\
         print(os.stat(D + '/resolve').st_size)\n",
    );
    assert_eq!(out, ["ok", "False", "13"], "rename, draft gone, own size");
    assert_eq!(calls.applied(), 1);
    assert_eq!(calls.reasons(), ["tests pass"], "trimmed, as a write is");
    assert!(!fx.session.is_pending(&id));
    assert_eq!(fx.read("last"), "applied: edit\n");
    assert_eq!(listing(&fx.dir), own_names());
    let record = fx.log_records().pop().expect("a decision record");
    assert_eq!(record["event"], "resolve");
    assert_eq!(record["id"], id.as_str());
    assert_eq!(record["reason"], "tests pass");
    assert_eq!(record["process"], "python3", "names the renaming process");
}

#[test]
fn a_rename_returns_the_outcome_errno_and_consumes_the_draft_whatever_it_is() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "draft('a', b'go')\nprint(rename('a', 'resolve'))\n\
         print(os.path.exists(D + '/a'))\n\
         draft('b', b'no')\nprint(rename('b', 'reject'))\n\
         draft('c', b'plan')\nprint(rename('c', 'propose'))\n",
    );
    assert_eq!(out, ["ENOENT", "False", "ok", "EPERM"]);
    assert_eq!(fx.read("last").trim_end(), expected("no-plan", &fx.dir));
    assert_eq!(
        listing(&fx.dir),
        own_names(),
        "no draft left: {:?}",
        listing(&fx.dir)
    );
    let (_, calls) = stage_recording(&fx.session, "edit");
    assert_eq!(
        py(&fx, "draft('r', b'nope')\nprint(rename('r', 'reject'))\n"),
        ["ok"]
    );
    assert_eq!(calls.rejected(), 1);
    assert_eq!(fx.read("last"), "rejected: edit\n");
}

#[test]
fn an_apply_failure_is_eio_and_a_retry_by_rename_applies() {
    let fx = Fixture::new();
    let (id, flaky) = stage_failing_first(
        &fx.session,
        "flaky",
        1,
        CallbackError::Failed("disk full".into()),
    );
    let out = py(
        &fx,
        "draft('x', b'try')\nprint(rename('x', 'resolve'))\n\
         draft('y', b'again')\nprint(rename('y', 'resolve'))\n",
    );
    assert_eq!(out, ["EIO", "ok"]);
    assert_eq!(flaky.applied(), 2);
    assert!(!fx.session.is_pending(&id));
}

#[test]
fn bad_drafts_are_refused_before_dispatch_and_kept() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "draft('bin', b'\\xff\\xfe')\nprint(rename('bin', 'resolve'))\n\
         print(os.path.exists(D + '/bin'))\n\
         draft('s', b'x')\n\
         for name in ['status', 'status.json', 'last', 'log', 'stage', 'events']:\n\
         \x20   print(name, rename('s', name))\n\
         print(rename('s', 'pending'))\n\
         print(os.path.exists(D + '/s'))\n\
         fd = os.open(D + '/big', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)\n\
         print(os.write(fd, b'a' * 65536))\n\
         try:\n\
         \x20   os.write(fd, b'a')\n\
         except OSError as e:\n\
         \x20   print(err(e))\n\
         try:\n\
         \x20   os.ftruncate(fd, 70000)\n\
         except OSError as e:\n\
         \x20   print(err(e))\n\
         print(os.fstat(fd).st_size)\n\
         os.close(fd)\n\
         for name in ['bin', 's', 'big']:\n\
         \x20   os.unlink(D + '/' + name)\n",
    );
    assert_eq!(
        out,
        [
            "EINVAL",
            "True",
            "status EPERM",
            "status.json EPERM",
            "last EPERM",
            "log EPERM",
            "stage EPERM",
            "events EPERM",
            "EISDIR",
            "True",
            "65536",
            "EFBIG",
            "EFBIG",
            "65536",
        ]
    );
    assert_eq!(calls.applied() + calls.rejected(), 0, "nothing dispatched");
    assert_eq!(
        fx.read("last"),
        "The message must be UTF-8 text.\n",
        "the refusal's message, as for a write"
    );
    assert!(fx.session.is_pending(&id));
    assert_eq!(listing(&fx.dir), own_names());
}

#[test]
fn a_full_size_draft_is_one_message_and_the_mounts_own_files_stay_put() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "draft('full', b'r' * 65536)\nprint(rename('full', 'resolve'))\n\
         print(rename('resolve', 'x'), rename('status', 'x'), rename('pending', 'x'))\n\
         for name in ['resolve', 'status']:\n\
         \x20   try:\n\
         \x20       os.unlink(D + '/' + name)\n\
         \x20   except OSError as e:\n\
         \x20       print(name, err(e))\n\
         try:\n\
         \x20   os.open(D + '/pending/new', os.O_WRONLY | os.O_CREAT, 0o600)\n\
         except OSError as e:\n\
         \x20   print('pending/new', err(e))\n",
    );
    assert_eq!(
        out,
        [
            "ok",
            "EPERM EPERM EPERM",
            "resolve EPERM",
            "status EPERM",
            "pending/new EPERM"
        ]
    );
    assert_eq!(calls.reasons().first().map(String::len), Some(65536));
}

#[test]
fn a_draft_behaves_as_a_small_ordinary_file() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "p = D + '/notes.tmp'\n\
         fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)\n\
         os.write(fd, b'hello world')\n\
         os.pwrite(fd, b'W', 6)\n\
         print(os.pread(fd, 100, 0))\n\
         os.fsync(fd)\n\
         os.ftruncate(fd, 5)\n\
         print(os.fstat(fd).st_size, oct(os.fstat(fd).st_mode & 0o777))\n\
         os.fchmod(fd, 0o600)\n\
         os.fchown(fd, os.getuid(), os.getgid())\n\
         os.utime(p, (1000000000, 1000000000))\n\
         st = os.stat(p)\n\
         print(oct(st.st_mode & 0o777), int(st.st_mtime))\n\
         os.close(fd)\n\
         try:\n\
         \x20   os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n\
         except OSError as e:\n\
         \x20   print(err(e))\n\
         fd = os.open(p, os.O_WRONLY | os.O_TRUNC)\n\
         print(os.fstat(fd).st_size)\n\
         os.write(fd, b'again')\n\
         os.close(fd)\n\
         os.rename(p, D + '/other.tmp')\n\
         print(sorted(n for n in os.listdir(D) if n.endswith('.tmp')))\n\
         print(open(D + '/other.tmp').read())\n\
         draft('third.tmp', b'3')\n\
         os.rename(D + '/third.tmp', D + '/other.tmp')\n\
         print(open(D + '/other.tmp').read())\n\
         os.unlink(D + '/other.tmp')\n\
         print(os.path.exists(D + '/other.tmp'))\n\
         dirfd = os.open(D, os.O_PATH | os.O_DIRECTORY)\n\
         fd = os.open('resolve.tmp.1.ab', os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dirfd)\n\
         os.write(fd, b'via a directory descriptor')\n\
         os.close(fd)\n\
         print(os.stat('resolve.tmp.1.ab', dir_fd=dirfd).st_size)\n\
         os.unlink('resolve.tmp.1.ab', dir_fd=dirfd)\n",
    );
    assert_eq!(
        out,
        [
            "b'hello World'",
            "5 0o644",
            "0o600 1000000000",
            "EEXIST",
            "0",
            "['other.tmp']",
            "again",
            "3",
            "False",
            "26",
        ]
    );
    let status = fx.status_json();
    assert_eq!(status["pending"], 0, "drafts are no previews: {status}");
}

#[test]
fn drafts_in_an_items_directory_decide_that_item() {
    let fx = Fixture::new();
    let (older, older_calls) = stage_recording(&fx.session, "older");
    let (_newer, newer_calls) = stage_recording(&fx.session, "newer");
    let out = py(
        &fx,
        &format!(
            "item = 'pending/{older}'\n\
             draft(item + '/resolve.tmp', b'the old one')\n\
             print(sorted(os.listdir(D + '/' + item)))\n\
             print(rename(item + '/resolve.tmp', item + '/resolve'))\n"
        ),
    );
    assert_eq!(
        out,
        [
            "['label', 'reject', 'resolve', 'resolve.tmp', 'source']",
            "ok"
        ]
    );
    assert_eq!(older_calls.applied(), 1);
    assert_eq!(newer_calls.applied(), 0, "not the head");
    let (third, third_calls) = stage_recording(&fx.session, "third");
    let out = py(
        &fx,
        &format!(
            "draft('from-root.tmp', b'no thanks')\n\
             print(rename('from-root.tmp', 'pending/{third}/reject'))\n\
             print(rename('from-root.tmp', 'pending/{third}/reject'))\n"
        ),
    );
    assert_eq!(out, ["ok", "ENOENT"], "consumed; then the item is gone too");
    assert_eq!(third_calls.rejected(), 1);
    assert_eq!(listing(&fx.dir), own_names());
}

#[test]
fn drafts_are_bounded_per_uid() {
    let fx = Fixture::new();
    let out = py(
        &fx,
        "made = 0\n\
         try:\n\
         \x20   for i in range(100):\n\
         \x20       fd = os.open(D + '/d%d' % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n\
         \x20       os.close(fd)\n\
         \x20       made += 1\n\
         except OSError as e:\n\
         \x20   print(made, err(e))\n\
         for i in range(made):\n\
         \x20   os.unlink(D + '/d%d' % i)\n\
         full = 0\n\
         try:\n\
         \x20   for i in range(64):\n\
         \x20       fd = os.open(D + '/f%d' % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n\
         \x20       try:\n\
         \x20           os.write(fd, b'x' * 65536)\n\
         \x20       finally:\n\
         \x20           os.close(fd)\n\
         \x20       full += 1\n\
         except OSError as e:\n\
         \x20   print(full, err(e))\n\
         for name in os.listdir(D):\n\
         \x20   if name.startswith('f'):\n\
         \x20       os.unlink(D + '/' + name)\n",
    );
    assert_eq!(out, ["64 EDQUOT", "32 EDQUOT"], "64 drafts, 2 MiB");
    // A draft removed while open lets go of its bytes: descriptors of
    // nameless drafts cannot hold memory past the bounds.
    let out = py(
        &fx,
        "fd = os.open(D + '/gone.tmp', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)\n\
         os.write(fd, b'x' * 65536)\n\
         os.unlink(D + '/gone.tmp')\n\
         st = os.fstat(fd)\n\
         print(st.st_size, st.st_nlink, os.pread(fd, 10, 0))\n\
         try:\n\
         \x20   os.write(fd, b'more')\n\
         except OSError as e:\n\
         \x20   print(err(e))\n\
         os.close(fd)\n",
    );
    assert_eq!(out, ["0 0 b''", "ENOENT"]);
    assert_eq!(listing(&fx.dir), own_names());
}

#[test]
fn an_orphaned_draft_survives_until_its_uids_quota_needs_the_room() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    // Three processes: each draft's creator has exited before the rename.
    let out = fx.sh("echo go > \"$D/../r\" && cp \"$D/../r\" \"$D/d1\" && cp \"$D/../r\" \"$D/d2\" && mv \"$D/d1\" \"$D/resolve\"");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(calls.applied(), 1);
    assert!(
        fx.path("d2").exists(),
        "an orphan is kept while there is room"
    );
    // Fill the uid's quota with orphans (d2 is the oldest), then make one
    // more: the oldest orphan makes room, the others stay.
    let fill: String = (0..xdev_max_drafts() - 1)
        .map(|index| format!("draft('o{index:02}.tmp', b'x')\n"))
        .collect();
    py(&fx, &fill);
    py(&fx, "draft('new.tmp', b'y')\n");
    assert!(!fx.path("d2").exists(), "the oldest orphan made room");
    assert!(fx.path("o00.tmp").exists() && fx.path("new.tmp").exists());
}

/// How many drafts one uid may hold (the mount's documented limit).
fn xdev_max_drafts() -> usize {
    64
}

#[test]
fn only_the_creators_uid_sees_its_drafts_and_others_cannot_create() {
    let fx = Fixture::with_options(xdev::MountOptions {
        allow_other: true,
        ..xdev::MountOptions::default()
    });
    let parent = fx.dir.parent().expect("parent");
    std::fs::set_permissions(parent, PermissionsExt::from_mode(0o755)).expect("chmod");
    let fd = Fd::open(
        &fx.path("mine.tmp"),
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
    )
    .expect("create a draft");
    assert_eq!(fd.write(b"secret"), Ok(6));
    let code = "import os, errno\nD = os.environ['D']\n\
        print(sorted(n for n in os.listdir(D) if n.endswith('.tmp')))\n\
        for how in ['stat', 'open', 'create']:\n\
        \x20   try:\n\
        \x20       if how == 'stat': os.stat(D + '/mine.tmp')\n\
        \x20       if how == 'open': os.open(D + '/mine.tmp', os.O_RDONLY)\n\
        \x20       if how == 'create': os.open(D + '/theirs.tmp', os.O_WRONLY | os.O_CREAT, 0o600)\n\
        \x20       print(how, 'ok')\n\
        \x20   except OSError as e:\n\
        \x20       print(how, errno.errorcode[e.errno])\n";
    let output = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-c", code])
        .env("D", &fx.dir)
        .output()
        .expect("setpriv");
    assert_eq!(
        stdout(&output),
        "[]\nstat ENOENT\nopen ENOENT\ncreate EACCES\n",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    drop(fd);
    assert!(fx.path("mine.tmp").exists(), "still there for its creator");
}

#[test]
fn a_rename_blocks_until_the_handler_answers() {
    let fx = Fixture::new();
    let (id, calls) = stage_slow(&fx.session, "slow", Duration::from_millis(600));
    let started = Instant::now();
    let out = py(
        &fx,
        "draft('s.tmp', b'wait for it')\nprint(rename('s.tmp', 'resolve'))\n",
    );
    assert_eq!(out, ["ok"]);
    assert!(started.elapsed() >= Duration::from_millis(600), "it waited");
    assert_eq!(calls.applied(), 1);
    assert!(!fx.session.is_pending(&id));
}

#[test]
fn a_waiting_renamer_dies_promptly_on_sigint_and_sigkill_and_leaves_no_draft() {
    let _quiet = quiet();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let fx = Fixture::new();
        let (id, calls, gate) = stage_gated(&fx.session, "slow");
        let mut renamer = fx
            .command(
                "python3",
                "import os, errno, signal\nD = os.environ['D']\n\
                 signal.signal(signal.SIGINT, lambda *a: None)\n\
                 fd = os.open(D + '/k.tmp', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n\
                 os.write(fd, b'go'); os.close(fd)\n\
                 try:\n\
                 \x20   os.rename(D + '/k.tmp', D + '/resolve'); print('ok')\n\
                 except OSError as e:\n\
                 \x20   print(errno.errorcode[e.errno])\n",
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("renamer");
        assert!(eventually(Duration::from_secs(10), || fx
            .session
            .is_in_progress(&id)));
        signal_and_see_it_go(&mut renamer, signal, "renamer");
        let mut printed = String::new();
        std::io::Read::read_to_string(renamer.stdout.as_mut().expect("stdout"), &mut printed)
            .expect("read");
        let expected = if signal == libc::SIGINT {
            "EINTR\n"
        } else {
            ""
        };
        assert_eq!(printed, expected, "signal {signal}");
        assert_eq!(listing(&fx.dir), own_names(), "no draft left");
        assert!(
            fx.log_records()
                .iter()
                .any(|record| record["errno"] == "EINTR" && record["process"] == "python3"),
            "journaled as an interrupted writer, signal {signal}"
        );
        open_gate(&fx.session, &id, &calls, &gate);
    }
}

#[test]
fn drafts_and_echo_writers_of_one_device_each_apply_once() {
    let fx = Fixture::new();
    let previews: Vec<_> = (0..40)
        .map(|n| stage_recording(&fx.session, &format!("p{n}")))
        .collect();
    let renamers: Vec<_> = (0..4)
        .map(|n| {
            let dir = fx.dir.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                for round in 0..5 {
                    let draft = dir.join(format!("r{n}-{round}.tmp"));
                    std::fs::write(&draft, b"by rename").expect("write a draft");
                    if std::fs::rename(&draft, dir.join("resolve")).is_ok() {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let path = fx.path("resolve");
            std::thread::spawn(move || {
                (0..5)
                    .filter(|_| write_once(&path, b"by write").is_ok())
                    .count()
            })
        })
        .collect();
    let renamed: usize = renamers
        .into_iter()
        .map(|t| t.join().expect("renamer"))
        .sum();
    let written: usize = writers.into_iter().map(|t| t.join().expect("writer")).sum();
    assert_eq!(renamed + written, 40, "every success applied one preview");
    let applied: usize = previews.iter().map(|(_, calls)| calls.applied()).sum();
    assert_eq!(applied, 40);
    assert!(previews.iter().all(|(_, calls)| calls.applied() == 1));
    assert_eq!(listing(&fx.dir), own_names());
}

#[test]
fn in_place_writers_see_their_own_size_and_others_see_the_devices() {
    let fx = Fixture::new();
    stage_recording(&fx.session, "edit");
    let out = py(
        &fx,
        "fd = os.open(D + '/resolve', os.O_WRONLY | os.O_TRUNC)\n\
         os.write(fd, b'done, 23 bytes written\\n')\n\
         print(os.fstat(fd).st_size)\n\
         os.close(fd)\n\
         print(os.stat(D + '/resolve').st_size)\n",
    );
    assert_eq!(out, ["23", "23"]);
    stage_recording(&fx.session, "again");
    let out = py(
        &fx,
        "draft('n.tmp', b'eleven byte')\nprint(rename('n.tmp', 'resolve'))\n\
         print(os.stat(D + '/resolve').st_size)\n\
         with open(D + '/resolve', 'rb') as f:\n\
         \x20   usage = 'Write a one-sentence reason as plain text to %s/resolve to APPLY' % D\n\
         \x20   print(os.fstat(f.fileno()).st_size, f.read().decode().startswith(usage))\n\
         print(os.stat(D + '/resolve').st_size)\n",
    );
    assert_eq!(
        out,
        ["ok", "11", "65536 True", "65536"],
        "its own size until it opens the device to read (Node's readFile reads st_size bytes)"
    );
    let other = fx.sh("stat -c %s \"$D/resolve\"");
    assert_eq!(stdout(&other), "65536\n", "another process");
}

#[test]
fn unmount_tells_a_waiting_rename_whose_apply_runs_that_its_outcome_is_unknown() {
    let mut fx = Fixture::with_options(xdev::MountOptions {
        grace: Duration::from_millis(100),
        ..xdev::MountOptions::default()
    });
    // Gated: the apply outlasts the grace period however slow the machine.
    let (id, _, _gate) = stage_gated(&fx.session, "slow");
    let dir = fx.dir.clone();
    let renamer = std::thread::spawn(move || {
        std::fs::write(dir.join("u.tmp"), b"go").expect("draft");
        std::fs::rename(dir.join("u.tmp"), dir.join("resolve"))
            .map_err(|error| error.raw_os_error())
    });
    assert!(eventually(Duration::from_secs(10), || fx
        .session
        .is_in_progress(&id)));
    let mount = fx.mount.take().expect("mounted");
    mount.unmount().expect("unmount");
    // The apply had begun when the grace period ended: not "cancelled".
    assert_eq!(renamer.join().expect("renamer"), Err(Some(libc::EIO)));
}
