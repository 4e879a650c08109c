//! The `xdev mount` daemon as a user runs it.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{eventually, is_mounted, require_fuse, KillOnDrop};

fn xdev() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xdev"))
}

/// Starts `xdev mount dir` and waits for its ready line.
fn start_daemon(dir: &Path) -> (KillOnDrop, String) {
    let mut child = xdev()
        .arg("mount")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xdev mount");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("ready line");
    (KillOnDrop(child), line)
}

fn wait_exit(child: &mut KillOnDrop, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.0.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn sigterm(child: &KillOnDrop) {
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
}

#[test]
fn prints_the_ready_line_serves_and_exits_0_on_sigterm() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("xdev");
    std::fs::create_dir(&dir).expect("mkdir");
    let (mut child, line) = start_daemon(&dir);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    let reject = Command::new("bash")
        .arg("-c")
        .arg("echo why > \"$D/reject\" && cat \"$D/last\" && echo x > \"$D/resolve\"")
        .env("D", &dir)
        .output()
        .expect("sh");
    assert_eq!(
        String::from_utf8_lossy(&reject.stdout),
        "Nothing to reject; no pending action remains.\n"
    );
    assert!(String::from_utf8_lossy(&reject.stderr).contains("No such file or directory"));
    let started = Instant::now();
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(2)), Some(0));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!is_mounted(&dir), "mount removed");
}

#[test]
fn sigint_also_unmounts_and_exits_0_even_with_an_open_descriptor() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("xdev");
    std::fs::create_dir(&dir).expect("mkdir");
    let (mut child, _) = start_daemon(&dir);
    // Holding a descriptor keeps the mount busy: unmount must go lazy.
    let held = std::fs::File::open(dir.join("status")).expect("open status");
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert_eq!(wait_exit(&mut child, Duration::from_secs(2)), Some(0));
    assert!(!is_mounted(&dir), "no stale mount left behind");
    drop(held);
}

#[test]
fn a_stale_mount_from_a_killed_daemon_is_cleared_on_the_next_start() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("xdev");
    std::fs::create_dir(&dir).expect("mkdir");
    let (mut killed, _) = start_daemon(&dir);
    killed.0.kill().expect("SIGKILL");
    killed.0.wait().expect("reap");
    assert!(
        eventually(Duration::from_secs(2), || xdev::is_stale_mount(&dir)),
        "left stale"
    );
    let (mut child, line) = start_daemon(&dir);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    assert!(std::fs::read_to_string(dir.join("status"))
        .expect("status")
        .contains("pending: 0"));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(2)), Some(0));
    assert!(!is_mounted(&dir));
}

#[test]
fn bad_mount_points_fail_with_one_line_naming_the_problem() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").expect("file");
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).expect("mkdir");
    std::fs::write(full.join("inside"), "x").expect("file");
    let missing = tmp.path().join("missing");
    for (dir, problem) in [
        (&missing, "does not exist"),
        (&file, "is not a directory"),
        (&full, "is not empty"),
    ] {
        let out = xdev().arg("mount").arg(dir).output().expect("xdev");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr,
            format!("xdev: mount point {} {problem}\n", dir.display())
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_journal_that_is_not_a_regular_file_is_a_startup_error_naming_it() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let mount = tmp.path().join("mnt");
    std::fs::create_dir(&mount).expect("mkdir");
    let link = tmp.path().join("link.jsonl");
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &link).expect("symlink");
    let fifo = tmp.path().join("fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    for (journal, problem) in [
        (&link, "is a symbolic link; give the journal's real path"),
        (&fifo, "is not a regular file (a FIFO or socket)"),
        (&tmp.path().to_path_buf(), "is a directory"),
    ] {
        let out = xdev()
            .arg("mount")
            .arg(&mount)
            .arg("--journal")
            .arg(journal)
            .output()
            .expect("xdev");
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "xdev: cannot use the journal file: {} {problem}\n",
                journal.display()
            )
        );
        assert!(!is_mounted(&mount));
    }
}
