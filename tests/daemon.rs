//! The `xdev mount` daemon as a user runs it.

mod common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{eventually, expected, is_mounted, require_fuse, unmount_leftover, KillOnDrop};

fn xdev() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xdev"))
}

/// A mount point `xdev` in a fresh temp dir (not created), once FUSE is
/// known to be there.
fn mount_point_in_temp_dir() -> (tempfile::TempDir, PathBuf) {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("xdev");
    (tmp, dir)
}

/// Starts `xdev mount dir` and waits for its ready line.
fn start_daemon(dir: &Path) -> (KillOnDrop, String) {
    start_daemon_with(dir, &[])
}

/// Starts `xdev mount dir args...` and waits for its ready line.
fn start_daemon_with(dir: &Path, args: &[&OsStr]) -> (KillOnDrop, String) {
    let mut mount = xdev();
    mount.arg("mount").arg(dir).args(args);
    start_serving(mount)
}

/// Starts `mount` (an `xdev mount` command line) and waits for its ready
/// line.
fn start_serving(mut mount: Command) -> (KillOnDrop, String) {
    let mut child = mount
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

/// What a daemon that has exited wrote to stderr.
fn stderr_of(child: &mut KillOnDrop) -> String {
    let mut stderr = String::new();
    if let Some(mut pipe) = child.0.stderr.take() {
        pipe.read_to_string(&mut stderr).expect("stderr");
    }
    stderr
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
    send(child, libc::SIGTERM);
}

fn send(child: &KillOnDrop, signal: i32) {
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.0.id() as i32, signal) };
}

/// Waiting for a daemon to do something it should do soon, on a loaded
/// machine.
const PATIENCE: Duration = Duration::from_secs(20);

#[test]
fn prints_the_ready_line_serves_and_exits_0_on_sigterm() {
    let (_tmp, dir) = mount_point_in_temp_dir();
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
        format!("{}\n", expected("nothing-to-reject", &dir))
    );
    assert!(String::from_utf8_lossy(&reject.stderr).contains("No such file or directory"));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
    assert!(!is_mounted(&dir), "mount removed");
}

#[test]
fn sigint_also_unmounts_and_exits_0_even_with_an_open_descriptor() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    std::fs::create_dir(&dir).expect("mkdir");
    let (mut child, _) = start_daemon(&dir);
    // Holding a descriptor keeps the mount busy: unmount must go lazy.
    let held = std::fs::File::open(dir.join("status")).expect("open status");
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
    assert!(!is_mounted(&dir), "no stale mount left behind");
    drop(held);
}

/// Starts `xdev mount dir`, kills it with SIGKILL and waits until the mount
/// it leaves is stale.
fn leave_stale_mount(dir: &Path) {
    let (mut killed, _) = start_daemon(dir);
    killed.0.kill().expect("SIGKILL");
    killed.0.wait().expect("reap");
    assert!(
        eventually(PATIENCE, || xdev::mount::is_stale_mount(dir)),
        "left stale"
    );
}

#[test]
fn a_stale_mount_from_a_killed_daemon_is_cleared_on_the_next_start() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    std::fs::create_dir(&dir).expect("mkdir");
    leave_stale_mount(&dir);
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
    let crowded = tmp.path().join("crowded");
    std::fs::create_dir(&crowded).expect("mkdir");
    for name in ["src", ".git", "notes\nmore", "Cargo.toml", "target"] {
        std::fs::create_dir(crowded.join(name)).expect("entry");
    }
    for (dir, problem) in [
        (&file, "is not a directory"),
        (
            &full,
            "is not empty: it holds 1 entry (inside); mount on an empty directory, or move it out first",
        ),
        (
            &crowded,
            "is not empty: it holds 5 entries (.git, Cargo.toml, notes\\nmore and 2 more); mount on an empty directory, or move them out first",
        ),
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

/// `xdev mount dir` with output piped, not waiting for anything.
fn mount_command(dir: &Path) -> Command {
    let mut command = xdev();
    command
        .arg("mount")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// What `echo x > dir/resolve` does in bash: its exit code and stderr.
fn shell_write_resolve(dir: &Path) -> (i32, String) {
    let out = Command::new("bash")
        .arg("-c")
        .arg("echo x > \"$D/resolve\"")
        .env("D", dir)
        .output()
        .expect("sh");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_mount_point_is_created_and_removed_on_sigterm_and_sigint() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tmp.path().join(format!("xdev-{signal}"));
        let (mut child, line) = start_daemon(&dir);
        assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
        assert!(is_mounted(&dir), "mounted on the directory it created");
        // SAFETY: signalling a child this test spawned and has not reaped.
        unsafe { libc::kill(child.0.id() as i32, signal) };
        assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), Some(0));
        assert!(!dir.exists(), "the directory xdev created is gone");
        // No daemon: a write finds nothing instead of creating a file.
        let (code, stderr) = shell_write_resolve(&dir);
        assert_ne!(code, 0);
        assert!(stderr.contains("No such file or directory"), "{stderr}");
        assert!(!dir.exists(), "the write created nothing");
    }
}

#[test]
fn a_mount_point_left_by_sigkill_is_removed_when_the_next_daemon_there_exits() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    leave_stale_mount(&dir);
    let (mut child, line) = start_daemon(&dir);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), Some(0));
    assert!(!is_mounted(&dir));
    assert!(
        !dir.exists(),
        "the next daemon removed what the killed one created"
    );
}

#[test]
fn a_directory_xdev_did_not_create_stays() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    std::fs::create_dir(&dir).expect("mkdir");
    let (mut child, _) = start_daemon(&dir);
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), Some(0));
    assert!(dir.is_dir(), "the user's directory is kept");
}

#[test]
fn device_named_leftovers_are_refused_by_name_and_never_deleted() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    std::fs::create_dir(&dir).expect("mkdir");
    let (code, _) = shell_write_resolve(&dir);
    assert_eq!(code, 0, "a write into the bare directory makes a file");
    std::fs::write(dir.join("reject"), "mine\n").expect("reject file");
    let out = mount_command(&dir).output().expect("xdev mount");
    let shown = dir.display();
    assert_eq!(
        refusal(&out),
        format!(
            "xdev: mount point {shown} holds 2 files named like devices (reject, resolve) left by writes while nothing was mounted there; check them, remove them (rm -- '{shown}/reject' '{shown}/resolve'), then mount again\n"
        )
    );
    assert!(!is_mounted(&dir));
    assert_eq!(
        std::fs::read_to_string(dir.join("resolve")).expect("kept"),
        "x\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("reject")).expect("kept"),
        "mine\n"
    );
}

#[test]
fn a_directory_served_by_a_live_xdev_says_so() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    let (mut child, _) = start_daemon(&dir);
    let out = mount_command(&dir).output().expect("second xdev mount");
    assert_eq!(refusal(&out), already_served(&dir));
    assert!(std::fs::read_to_string(dir.join("status"))
        .expect("the first daemon still serves")
        .starts_with("pending: 0"));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), Some(0));
}

#[test]
fn a_bad_journal_or_plan_dir_is_named_instead_of_the_mount_point() {
    let (tmp, dir) = mount_point_in_temp_dir();
    let journal = tmp.path().join("no-such-dir").join("journal.jsonl");
    let plans = tmp.path().join("plans");
    let missing_parent = tmp.path().join("none").join("xdev");
    for (mount_point, args, expected) in [
        (
            &dir,
            vec![OsStr::new("--journal"), journal.as_os_str()],
            format!(
                "xdev: cannot use the journal file: {}: No such file or directory\n",
                journal.display()
            ),
        ),
        (
            &dir,
            vec![OsStr::new("--plan-dir"), plans.as_os_str()],
            format!("xdev: plan directory {} does not exist\n", plans.display()),
        ),
        (
            &missing_parent,
            vec![],
            format!(
                "xdev: cannot create mount point {}: its parent directory {parent} does not exist (create it first: mkdir -p -- '{parent}')\n",
                missing_parent.display(),
                parent = tmp.path().join("none").display()
            ),
        ),
    ] {
        let out = mount_command(mount_point)
            .args(&args)
            .output()
            .expect("xdev mount");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected);
        assert!(!dir.exists(), "nothing was created for a mount that failed");
    }
}

#[test]
fn logs_carry_no_colours_when_stderr_is_not_a_terminal() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    let mut child = xdev()
        .arg("mount")
        .arg(&dir)
        .env("XDEV_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xdev mount");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let stderr = child.stderr.take();
    let mut child = KillOnDrop(child);
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(5)), Some(0));
    let mut logs = String::new();
    if let Some(mut stderr) = stderr {
        stderr.read_to_string(&mut logs).expect("stderr");
    }
    assert!(logs.contains("mounted"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "no ANSI escapes: {logs:?}");
}

/// Each refused request the test below makes, by what it calls: the
/// operation the log names, the errno, and the rule that fired.
const REFUSALS: [(&str, &str, &str, &str); 4] = [
    ("mkdir", "mkdir", "EPERM", "no directory is made here"),
    (
        "rename",
        "rename",
        "EPERM",
        "the mount's own files are never renamed",
    ),
    ("open", "open", "ENOENT", "the inode is gone"),
    (
        "truncate",
        "setattr",
        "EINVAL",
        "a writable file truncates only to 0, or to what its descriptor wrote",
    ),
];

/// A directory, a rename of `status`, a reopen (through `/proc`) of a
/// draft whose name is gone, and a truncate of `resolve` to 3 bytes: what
/// each call got, one `call errno` line each.
const REFUSED_CALLS: &str = r#"
import errno, os
D = os.environ["D"]
def attempt(call, run):
    try:
        run()
        print(call, "ok")
    except OSError as error:
        print(call, errno.errorcode[error.errno])
attempt("mkdir", lambda: os.mkdir(D + "/newdir"))
attempt("rename", lambda: os.rename(D + "/status", D + "/elsewhere"))
fd = os.open(D + "/draft.tmp", os.O_CREAT | os.O_WRONLY, 0o600)
os.unlink(D + "/draft.tmp")
attempt("open", lambda: os.close(os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)))
os.close(fd)
attempt("truncate", lambda: os.truncate(D + "/resolve", 3))
"#;

/// A daemon serving `dir` that logs every refusal (at debug) to its stderr.
fn start_logging_refusals(dir: &Path) -> KillOnDrop {
    let mut mount = mount_command(dir);
    mount.env("XDEV_LOG", "warn,fuser=off,xdev::fs=debug");
    start_serving(mount).0
}

#[test]
fn each_refusal_is_logged_at_debug_with_its_operation_errno_and_rule() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    let mut child = start_logging_refusals(&dir);
    let calls = Command::new("python3")
        .arg("-c")
        .arg(REFUSED_CALLS)
        .env("D", &dir)
        .output()
        .expect("python3");
    let got = String::from_utf8_lossy(&calls.stdout);
    let expected: String = REFUSALS
        .iter()
        .map(|(call, _, errno, _)| format!("{call} {errno}\n"))
        .collect();
    assert_eq!(got, expected, "{}", String::from_utf8_lossy(&calls.stderr));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
    let logs = stderr_of(&mut child);
    for (_, op, errno, why) in REFUSALS {
        let named = |line: &&str| {
            line.contains("refused")
                && line.contains(&format!("op=\"{op}\""))
                && line.contains(&format!("errno={errno}"))
                && line.contains(why)
        };
        assert!(
            logs.lines().any(|line| named(&line)),
            "no refusal of {op} ({errno}: {why}) in the log:\n{logs}"
        );
    }
}

/// A daemon whose stderr nobody reads (a full pipe, a paused `less`) keeps
/// serving: a log line that cannot be written is dropped, and no request
/// waits for it.
#[test]
fn a_daemon_whose_stderr_nobody_reads_keeps_serving() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    // Every refusal is logged: far more lines than a pipe holds (64 KiB).
    let mut child = start_logging_refusals(&dir);
    let refusals = std::thread::spawn({
        let dir = dir.clone();
        move || {
            (0..3000)
                .filter(|n| std::fs::create_dir(dir.join(format!("d{n}"))).is_err())
                .count()
        }
    });
    let answered = eventually(PATIENCE, || refusals.is_finished());
    if !answered {
        // The requests wait on the log: end the daemon so they fail.
        send(&child, libc::SIGKILL);
        let _ = wait_exit(&mut child, PATIENCE);
        unmount_leftover(&dir);
    }
    assert!(
        answered,
        "the mount's requests waited for stderr to be read"
    );
    assert_eq!(refusals.join().expect("mkdir loop"), 3000);
    assert!(std::fs::read_to_string(dir.join("status")).is_ok());
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
}

/// Runs `xdev mount dir` in a private mount namespace after `setup` (a
/// shell snippet run there as root), as `user` when given; its stderr.
fn mount_in_namespace(dir: &Path, setup: &str, user: Option<&str>) -> String {
    let as_user = user
        .map(|user| format!("setpriv --reuid={user} --regid={user} --clear-groups "))
        .unwrap_or_default();
    let script = format!("{setup} && exec {as_user}\"$XDEV\" mount \"$D\"");
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("XDEV", env!("CARGO_BIN_EXE_xdev"))
        .env("D", dir)
        .output()
        .expect("unshare (util-linux)");
    refusal(&out)
}

/// What a command that refused (exit 1) said on stderr.
fn refusal(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_hidden_dev_fuse_is_named_in_the_error() {
    require_fuse();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (a private mount namespace hides /dev/fuse)"
    );
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("xdev");
    let stderr = mount_in_namespace(&dir, "mount -t tmpfs none /dev", None);
    assert_eq!(
        stderr,
        "xdev: FUSE is not available: /dev/fuse is missing (load the module with `modprobe fuse`; in a container, pass the device in, e.g. `--device /dev/fuse`)\n"
    );
    let stderr = mount_in_namespace(&dir, "mount --bind /dev/null /dev/fuse", None);
    assert_eq!(
        stderr,
        "xdev: FUSE is not available: /dev/fuse: it is not the FUSE character device (10, 229)\n"
    );
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let stderr = mount_in_namespace(&dir, "mount -t tmpfs none /dev", Some("65534"));
    assert!(
        stderr.contains("/dev/fuse is missing")
            && stderr.contains("fusermount3")
            && stderr.contains("that everyone may read and write"),
        "{stderr}"
    );
    assert!(!dir.exists());
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
        assert_eq!(
            refusal(&out),
            format!(
                "xdev: cannot use the journal file: {} {problem}\n",
                journal.display()
            )
        );
        assert!(!is_mounted(&mount));
    }
}

// ----- signals ------------------------------------------------------------------

#[test]
fn sighup_sigquit_and_unused_signals_unmount_and_exit_0_like_sigterm() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    for signal in [libc::SIGHUP, libc::SIGQUIT, libc::SIGPWR] {
        let dir = tmp.path().join(format!("xdev-{signal}"));
        let (mut child, line) = start_daemon(&dir);
        assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
        send(&child, signal);
        assert_eq!(wait_exit(&mut child, PATIENCE), Some(0), "signal {signal}");
        assert!(!is_mounted(&dir), "signal {signal}: mount removed");
        assert!(
            !dir.exists(),
            "signal {signal}: the directory xdev created is gone"
        );
    }
}

#[test]
fn sigusr1_sigusr2_sigalrm_and_sigpipe_leave_the_daemon_serving() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    let (mut child, _) = start_daemon(&dir);
    for signal in [
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGPIPE,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGXFSZ,
    ] {
        send(&child, signal);
        std::fs::write(dir.join("reject"), "still there?").expect("a write to reject");
        assert_eq!(
            std::fs::read_to_string(dir.join("last")).expect("read last"),
            format!("{}\n", expected("nothing-to-reject", &dir)),
            "signal {signal}"
        );
        assert!(
            std::fs::read_to_string(dir.join("status"))
                .expect("read status")
                .starts_with("pending: 0"),
            "signal {signal}"
        );
        assert!(matches!(child.0.try_wait(), Ok(None)), "signal {signal}");
    }
    // A fatal signal still pending would be taken before SIGTERM (a lower
    // number): exit 0 tells that none was.
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
    assert!(!is_mounted(&dir));
}

#[test]
fn xdev_run_outlives_signals_until_its_command_ends_and_passes_sighup_on() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("run");
    let ready = tmp.path().join("ready");
    let script = r#"trap 'exit 5' HUP; touch "$READY"; while :; do sleep 0.05; done"#;
    let mut child = KillOnDrop(
        xdev()
            .arg("run")
            .arg("--mount")
            .arg(&dir)
            .args(["--", "sh", "-c", script])
            .env("READY", &ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn xdev run"),
    );
    assert!(
        eventually(PATIENCE, || ready.exists()),
        "the command started"
    );
    // SIGINT and SIGQUIT are left to the command (a terminal sends them to
    // it as well); the others are not for it.
    for signal in [
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGPIPE,
        libc::SIGINT,
        libc::SIGQUIT,
    ] {
        send(&child, signal);
        assert!(
            std::fs::read_to_string(dir.join("status"))
                .expect("read status")
                .starts_with("pending: 0"),
            "signal {signal}"
        );
        assert!(matches!(child.0.try_wait(), Ok(None)), "signal {signal}");
    }
    send(&child, libc::SIGHUP);
    assert_eq!(
        wait_exit(&mut child, PATIENCE),
        Some(5),
        "the command's exit code"
    );
    assert!(!is_mounted(&dir));
    assert!(!dir.exists(), "the directory xdev run created is gone");
}

/// The `reason` of every record in a journal file.
fn journal_reasons(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read the journal file")
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            record["reason"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[test]
fn sigusr1_reopens_a_journal_file_that_logrotate_renamed_away() {
    let (tmp, dir) = mount_point_in_temp_dir();
    let journal = tmp.path().join("journal.jsonl");
    let rotated = tmp.path().join("journal.jsonl.1");
    let (mut child, _) = start_daemon_with(&dir, &[OsStr::new("--journal"), journal.as_os_str()]);
    std::fs::write(dir.join("reject"), "before rotation").expect("reject");
    std::fs::rename(&journal, &rotated).expect("rotate");
    std::fs::write(dir.join("reject"), "while rotating").expect("reject");
    send(&child, libc::SIGUSR1);
    assert!(
        eventually(PATIENCE, || journal.exists()),
        "a new journal file at the original path"
    );
    std::fs::write(dir.join("reject"), "after rotation").expect("reject");
    assert_eq!(
        journal_reasons(&rotated),
        ["before rotation", "while rotating"]
    );
    assert_eq!(journal_reasons(&journal), ["after rotation"]);
    let mode = std::fs::metadata(&journal)
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "created like the first one");
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
}

#[test]
fn a_journal_file_that_cannot_be_reopened_is_logged_and_the_old_one_kept() {
    let (tmp, dir) = mount_point_in_temp_dir();
    let journal = tmp.path().join("journal.jsonl");
    let rotated = tmp.path().join("journal.jsonl.1");
    let (mut child, _) = start_daemon_with(&dir, &[OsStr::new("--journal"), journal.as_os_str()]);
    let (lines, logged) = std::sync::mpsc::channel();
    let stderr = child.0.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    std::fs::rename(&journal, &rotated).expect("rotate");
    // What takes the old path is refused, as it would be at startup.
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &journal).expect("symlink");
    send(&child, libc::SIGUSR1);
    let line = logged
        .recv_timeout(PATIENCE)
        .expect("the failure is logged");
    assert!(
        line.contains(&format!("{} is a symbolic link", journal.display())),
        "{line}"
    );
    std::fs::write(dir.join("reject"), "after the failed reopen").expect("reject");
    assert_eq!(journal_reasons(&rotated), ["after the failed reopen"]);
    assert!(
        !tmp.path().join("elsewhere").exists(),
        "nothing written through the link"
    );
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
}

// ----- whose journal file -----------------------------------------------------------

#[test]
fn a_journal_file_others_could_write_is_refused_naming_it_and_the_fix() {
    let (tmp, dir) = mount_point_in_temp_dir();
    for (mode, writable_by) in [
        (0o606, "writable by everyone (mode 0606)"),
        (0o660, "writable by its group (mode 0660)"),
    ] {
        let journal = tmp.path().join(format!("journal-{mode:o}.jsonl"));
        std::fs::write(&journal, "").expect("journal file");
        std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let out = mount_command(&dir)
            .arg("--journal")
            .arg(&journal)
            .output()
            .expect("xdev mount");
        let shown = journal.display();
        assert_eq!(
            refusal(&out),
            format!(
                "xdev: cannot use the journal file: {shown} is {writable_by}, who could forge or erase records; run `chmod go-w '{shown}'` or choose a file only you can write\n"
            )
        );
        assert!(!dir.exists(), "nothing was mounted");
        assert_eq!(
            std::fs::read(&journal).expect("kept"),
            b"",
            "left as it was"
        );
    }
}

#[test]
fn a_journal_file_owned_by_another_user_is_refused_naming_it() {
    let (tmp, dir) = mount_point_in_temp_dir();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (it gives the journal file to uid 65534)"
    );
    let journal = tmp.path().join("journal.jsonl");
    std::fs::write(&journal, "").expect("journal file");
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::os::unix::fs::chown(&journal, Some(65534), Some(65534)).expect("chown");
    let out = mount_command(&dir)
        .arg("--journal")
        .arg(&journal)
        .output()
        .expect("xdev mount");
    assert_eq!(
        refusal(&out),
        format!(
            "xdev: cannot use the journal file: {} belongs to uid 65534, not to uid 0 that xdev runs as, and its owner could forge or erase records; choose a file you own\n",
            journal.display()
        )
    );
    assert!(!dir.exists(), "nothing was mounted");
    // Root's own files are fine for a daemon run as root.
    std::os::unix::fs::chown(&journal, Some(0), Some(0)).expect("chown back");
    let (mut child, line) =
        start_daemon_with(&dir, &[OsStr::new("--journal"), journal.as_os_str()]);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    sigterm(&child);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
}

// ----- a service manager (systemd Type=notify) ----------------------------------------

/// A service manager's end of `$NOTIFY_SOCKET`: a bound datagram socket.
struct Manager {
    socket: std::os::unix::net::UnixDatagram,
    /// What to put in `$NOTIFY_SOCKET`: the path, or `@name`.
    address: std::ffi::OsString,
}

impl Manager {
    /// A manager listening on a socket file in `tmp`.
    fn at_path(tmp: &Path) -> Manager {
        let path = tmp.join("notify.sock");
        let socket = std::os::unix::net::UnixDatagram::bind(&path).expect("bind notify socket");
        Manager::new(socket, path.into_os_string())
    }

    /// A manager listening on an abstract socket (`@name`).
    fn abstract_socket() -> Manager {
        use std::os::linux::net::SocketAddrExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let name = format!("xdev-test-notify-{}-{nanos}", std::process::id());
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .expect("abstract address");
        let socket =
            std::os::unix::net::UnixDatagram::bind_addr(&address).expect("bind abstract socket");
        Manager::new(socket, format!("@{name}").into())
    }

    fn new(socket: std::os::unix::net::UnixDatagram, address: std::ffi::OsString) -> Manager {
        // A bound, not a measurement: a daemon that never says anything
        // fails the test instead of hanging it.
        socket
            .set_read_timeout(Some(PATIENCE))
            .expect("read timeout");
        Manager { socket, address }
    }

    /// The next datagram's lines.
    fn receive(&self) -> Vec<String> {
        let mut buffer = [0u8; 4096];
        let length = self
            .socket
            .recv(&mut buffer)
            .expect("a notification from the daemon");
        String::from_utf8_lossy(&buffer[..length])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `xdev mount dir` with `$NOTIFY_SOCKET` naming this manager.
    fn start(&self, dir: &Path) -> KillOnDrop {
        let child = xdev()
            .arg("mount")
            .arg(dir)
            .env("NOTIFY_SOCKET", &self.address)
            // Its stderr must stay empty: no log level from the caller.
            .env_remove("XDEV_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn xdev mount");
        KillOnDrop(child)
    }
}

/// Ready, serving, stopping, gone, as a `Type=notify` unit sees it.
fn notifies_ready_once_the_mount_answers_then_stopping(manager: &Manager, dir: &Path) {
    let mut child = manager.start(dir);
    let ready = manager.receive();
    assert_eq!(ready[0], "READY=1", "{ready:?}");
    assert_eq!(ready[1], format!("STATUS=Serving {}", dir.display()));
    // READY=1 promises a mount that answers, with no waiting.
    let status = std::fs::read_to_string(dir.join("status")).expect("status answers at READY=1");
    assert!(status.starts_with("pending: 0\n"), "{status}");
    sigterm(&child);
    let stopping = manager.receive();
    assert_eq!(stopping, ["STOPPING=1", "STATUS=Stopping on SIGTERM"]);
    assert_eq!(wait_exit(&mut child, PATIENCE), Some(0));
    assert!(!is_mounted(dir), "mount removed");
    assert_eq!(stderr_of(&mut child), "", "nothing went wrong");
}

#[test]
fn tells_a_service_manager_ready_when_the_mount_answers_and_stopping_on_sigterm() {
    let (tmp, dir) = mount_point_in_temp_dir();
    let manager = Manager::at_path(tmp.path());
    notifies_ready_once_the_mount_answers_then_stopping(&manager, &dir);
}

#[test]
fn an_at_sign_in_notify_socket_names_an_abstract_socket() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    let manager = Manager::abstract_socket();
    notifies_ready_once_the_mount_answers_then_stopping(&manager, &dir);
}

#[test]
fn a_service_manager_that_cannot_be_told_does_not_stop_the_daemon() {
    let (tmp, dir) = mount_point_in_temp_dir();
    let mut mount = xdev();
    mount
        .arg("mount")
        .arg(&dir)
        .env("NOTIFY_SOCKET", tmp.path().join("nobody-listens"));
    let (mut child, line) = start_serving(mount);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    serves_then_stops_on_sigterm(&mut child, &dir);
    let stderr = stderr_of(&mut child);
    assert!(
        stderr.contains("cannot notify the service manager"),
        "the failure is logged: {stderr}"
    );
}

/// `dir` answers as a fresh mount of `child`, which SIGTERM then stops
/// with exit 0.
fn serves_then_stops_on_sigterm(child: &mut KillOnDrop, dir: &Path) {
    assert!(std::fs::read_to_string(dir.join("status"))
        .expect("serves")
        .starts_with("pending: 0\n"));
    sigterm(child);
    assert_eq!(wait_exit(child, PATIENCE), Some(0));
}

// ----- instances (the systemd unit xdev@NAME) -----------------------------------------

#[test]
fn an_instance_is_served_under_run_xdev_and_removed_on_exit() {
    require_fuse();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (instances live in /run/xdev)"
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let name = format!("test-{}-{nanos}", std::process::id());
    let dir = Path::new("/run/xdev").join(&name);
    let mut mount = xdev();
    mount.args(["mount", "--instance", &name]);
    let (mut child, line) = start_serving(mount);
    assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
    serves_then_stops_on_sigterm(&mut child, &dir);
    assert!(!is_mounted(&dir), "mount removed");
    assert!(!dir.exists(), "the mount point xdev made is gone");
}

#[test]
fn an_instance_name_must_be_one_plain_path_component() {
    for name in ["", "..", ".hidden", "a/b", "a\\x2db"] {
        let out = xdev()
            .args(["mount", "--instance", name])
            .output()
            .expect("xdev mount --instance");
        assert_eq!(out.status.code(), Some(2), "{name:?}: a usage error");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--instance <NAME>"), "{name:?}: {stderr}");
    }
    let both = xdev()
        .args(["mount", "/tmp/somewhere", "--instance", "a"])
        .output()
        .expect("xdev mount DIR --instance");
    assert_eq!(both.status.code(), Some(2), "DIR or --instance, not both");
}

// ----- one daemon per mount point ------------------------------------------------------

/// How many mounts `/proc/self/mountinfo` shows at `dir` (stacked ones
/// count each).
fn mounts_at(dir: &Path) -> usize {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let dir = dir.display().to_string();
    mountinfo
        .lines()
        .filter(|line| line.split(' ').nth(4) == Some(dir.as_str()))
        .count()
}

/// The refusal of an `xdev mount dir` that found another xdev there.
fn already_served(dir: &Path) -> String {
    format!("xdev: {}\n", expected("already-served", dir))
}

/// Starts `mount` twice at once (two `xdev mount` command lines for one
/// directory) and waits until each has either printed its ready line or
/// closed its stdout; returns the children and their first lines.
fn start_two_at_once(mount: impl Fn() -> Command) -> Vec<(KillOnDrop, String)> {
    let mut children: Vec<KillOnDrop> = (0..2)
        .map(|_| {
            KillOnDrop(
                mount()
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn xdev mount"),
            )
        })
        .collect();
    let (told, lines) = std::sync::mpsc::channel();
    for (index, child) in children.iter_mut().enumerate() {
        let stdout = child.0.stdout.take().expect("stdout");
        let told = told.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = told.send((index, line));
        });
    }
    let mut first_lines = [String::new(), String::new()];
    for _ in 0..2 {
        let (index, line) = lines
            .recv_timeout(PATIENCE)
            .expect("each daemon either serves or exits");
        first_lines[index] = line;
    }
    children.into_iter().zip(first_lines).collect()
}

/// One round of two `xdev mount dir` started at once: exactly one serves
/// (one mount there, and it answers), the other exits 1 saying so; SIGTERM
/// to the server leaves nothing mounted.
fn one_of_two_serves(dir: &Path, mount: impl Fn() -> Command, round: usize) {
    let started = start_two_at_once(mount);
    let ready = format!("xdev: mounted {}\n", dir.display());
    let (mut servers, mut others): (Vec<_>, Vec<_>) =
        started.into_iter().partition(|(_, line)| *line == ready);
    assert_eq!(servers.len(), 1, "round {round}: exactly one serves");
    let (other, other_line) = &mut others[0];
    assert_eq!(
        other_line.as_str(),
        "",
        "round {round}: the other prints nothing"
    );
    assert_eq!(wait_exit(other, PATIENCE), Some(1), "round {round}");
    assert_eq!(stderr_of(other), already_served(dir), "round {round}");
    assert_eq!(mounts_at(dir), 1, "round {round}: one mount");
    let server = &mut servers[0].0;
    serves_then_stops_on_sigterm(server, dir);
    assert_eq!(
        mounts_at(dir),
        0,
        "round {round}: nothing mounted after SIGTERM"
    );
}

#[test]
fn of_two_daemons_started_together_on_one_directory_exactly_one_serves() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    for round in 0..20 {
        // Half the rounds on a directory xdev creates, half on one that is there.
        if round % 2 == 1 {
            std::fs::create_dir(&dir).expect("mkdir");
        }
        one_of_two_serves(&dir, || mount_command(&dir), round);
        assert_eq!(
            dir.exists(),
            round % 2 == 1,
            "round {round}: only xdev's own directory goes"
        );
        let _ = std::fs::remove_dir(&dir);
    }
    assert_eq!(
        lock_files_naming(Path::new("/run/xdev"), &dir),
        Vec::<PathBuf>::new()
    );
}

/// The files of `runtime` (where xdev keeps its locks and markers) that
/// name `dir`.
fn lock_files_naming(runtime: &Path, dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(runtime) else {
        return Vec::new();
    };
    let needle = dir.display().to_string();
    entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(|line| line == needle))
        })
        .collect()
}

#[test]
fn of_two_starters_after_a_sigkill_one_clears_the_stale_mount_and_serves() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    for round in 0..5 {
        leave_stale_mount(&dir);
        // The second starter must neither stack a mount nor clear the one
        // the first has just made (it would then be stale, or gone).
        one_of_two_serves(&dir, || mount_command(&dir), round);
        assert!(
            !dir.exists(),
            "round {round}: the directory the killed daemon made is gone"
        );
    }
}

/// The shell a user other than root races two daemons in: a private mount
/// namespace whose `/dev/fuse` everyone may use (the host's may be root's
/// only), and `$H` (the user's) holding the mount point `$H/m`, their
/// runtime dir `$H/run` and the daemons' output. It prints the two exit
/// codes, each daemon's first stdout line and stderr, and the mounts at
/// `$H/m` while one serves and after SIGTERM.
const RACE_AS_USER: &str = r#"
{ [ -c "$H/fuse" ] || mknod -m 666 "$H/fuse" c 10 229; } && mount --bind "$H/fuse" /dev/fuse || exit 99
exec setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
export XDG_RUNTIME_DIR="$H/run"
mounts() { grep -c " $H/m " /proc/self/mountinfo; }
"$XDEV" mount "$H/m" >"$H/a.out" 2>"$H/a.err" & a=$!
"$XDEV" mount "$H/m" >"$H/b.out" 2>"$H/b.err" & b=$!
tries=0
until { [ -s "$H/a.out" ] || [ -s "$H/b.out" ]; } && { ! kill -0 $a 2>/dev/null || ! kill -0 $b 2>/dev/null; }; do
    tries=$((tries + 1)); [ $tries -lt 1000 ] || break; sleep 0.02
done
echo "mounted: $(mounts)"
kill -TERM $a $b 2>/dev/null
wait $a; echo "a: $? $(cat "$H/a.out" "$H/a.err")"
wait $b; echo "b: $? $(cat "$H/b.out" "$H/b.err")"
echo "after: $(mounts)"
'
"#;

#[test]
fn as_a_user_other_than_root_too_exactly_one_of_two_daemons_serves() {
    require_fuse();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (it sets up a user's FUSE in a private mount namespace)"
    );
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let home = tmp.path().join("home");
    for (path, mode) in [(&home, 0o755), (&home.join("run"), 0o700)] {
        std::fs::create_dir(path).expect("mkdir");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        std::os::unix::fs::chown(path, Some(65534), Some(65534)).expect("chown");
    }
    // The user runs a copy of the binary: the build's own may lie in a
    // directory only root may enter (a checkout in a `mktemp -d`).
    let xdev = tmp.path().join("xdev");
    std::fs::copy(env!("CARGO_BIN_EXE_xdev"), &xdev).expect("copy the binary");
    std::fs::set_permissions(&xdev, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let dir = home.join("m");
    for round in 0..5 {
        let out = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                RACE_AS_USER,
            ])
            .env("XDEV", &xdev)
            .env("H", &home)
            .output()
            .expect("unshare (util-linux)");
        let report = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = report.lines().collect();
        let served = format!("0 xdev: mounted {}", dir.display());
        let refused = format!("1 {}", already_served(&dir).trim_end());
        let mut outcomes = [lines.get(1), lines.get(2)].map(|line| {
            line.and_then(|line| line.split_once(": "))
                .map_or("", |(_, rest)| rest)
                .to_string()
        });
        outcomes.sort();
        assert_eq!(
            (
                lines.first().copied(),
                outcomes.to_vec(),
                lines.get(3).copied()
            ),
            (Some("mounted: 1"), vec![served, refused], Some("after: 0")),
            "round {round}: {report}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !dir.exists(),
            "round {round}: the directory xdev made is gone"
        );
    }
    assert_eq!(
        lock_files_naming(&home.join("run/xdev"), &dir),
        Vec::<PathBuf>::new()
    );
}

// ----- a mount removed from outside -----------------------------------------------------

#[test]
fn a_mount_removed_from_outside_ends_the_daemon_with_exit_5_and_one_line() {
    let (_tmp, dir) = mount_point_in_temp_dir();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (umount -l)"
    );
    for unmount in [&["fusermount3", "-u"][..], &["umount", "-l"]] {
        let (mut child, line) = start_daemon(&dir);
        assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
        let status = Command::new(unmount[0])
            .args(&unmount[1..])
            .arg(&dir)
            .status()
            .expect("unmount from outside");
        assert!(status.success(), "{unmount:?}");
        assert_eq!(
            wait_exit(&mut child, PATIENCE),
            Some(5),
            "{unmount:?}: exit 5"
        );
        assert_eq!(
            stderr_of(&mut child),
            format!("xdev: {}\n", expected("unmounted-from-outside", &dir)),
            "{unmount:?}"
        );
        assert!(
            !dir.exists(),
            "{unmount:?}: the directory xdev made is gone"
        );
        assert_eq!(
            lock_files_naming(Path::new("/run/xdev"), &dir),
            Vec::<PathBuf>::new()
        );
        // Nothing was left to clear: the next daemon there starts afresh.
        let (mut next, line) = start_daemon(&dir);
        assert_eq!(line, format!("xdev: mounted {}\n", dir.display()));
        serves_then_stops_on_sigterm(&mut next, &dir);
    }
}
