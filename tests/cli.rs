//! The `xdev` command line against real daemon processes: `stage`,
//! `resolve`/`reject`/`propose`, `plan`, `status`, `run`, and their exit
//! codes and messages.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{dir_names, eventually, is_mounted, require_fuse, Fd};
use serde_json::Value;

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

fn xdev_bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xdev"));
    command.env_remove("XDEV_DIR").stdin(Stdio::null());
    command
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(xdev::client::exit_code_of(status));
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: signalling a process (or process group) this test spawned.
    unsafe { libc::kill(pid as i32, signal) };
}

fn read_pipe(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_string(&mut text);
    }
    text
}

/// What a finished command printed.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn ran(output: std::process::Output) -> Ran {
    Ran {
        code: xdev::client::exit_code_of(output.status),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// An `xdev mount` daemon on a fresh temp dir, with a plan directory
/// beside it. Stopped (SIGTERM, then SIGKILL and a lazy unmount) on drop.
struct Daemon {
    child: Option<Child>,
    dir: PathBuf,
    plans: PathBuf,
    tmp: tempfile::TempDir,
}

impl Daemon {
    fn plain() -> Daemon {
        Daemon::start(&[])
    }

    /// A daemon with `--plan-dir <plans> --plan-handler <handler>` and `extra`.
    fn plan(handler: &str, extra: &[&str]) -> Daemon {
        let mut args = vec!["--plan-dir", "PLANS", "--plan-handler", handler];
        args.extend_from_slice(extra);
        Daemon::start(&args)
    }

    /// `xdev mount <dir> args...`, where `PLANS` stands for the plan
    /// directory; waits for the ready line.
    fn start(args: &[&str]) -> Daemon {
        let mut daemon = Daemon::launch(args);
        let mut line = String::new();
        if let Some(stdout) = daemon.child.as_mut().and_then(|child| child.stdout.take()) {
            BufReader::new(stdout)
                .read_line(&mut line)
                .expect("ready line");
        }
        assert_eq!(
            line,
            format!("xdev: mounted {}\n", daemon.dir.display()),
            "daemon did not come up"
        );
        daemon
    }

    /// `xdev mount <dir> args...` (see [`Daemon::start`]) with stdout and
    /// stderr piped, not waiting for anything.
    fn launch(args: &[&str]) -> Daemon {
        require_fuse();
        let tmp = tempfile::Builder::new()
            .prefix("xdev-cli-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path().join("mnt");
        let plans = tmp.path().join("plans");
        std::fs::create_dir(&dir).expect("mount dir");
        std::fs::create_dir(&plans).expect("plan dir");
        let mut command = xdev_bin();
        command.arg("mount").arg(&dir);
        for arg in args {
            match *arg {
                "PLANS" => command.arg(&plans),
                "JOURNAL" => command.arg(tmp.path().join("journal.jsonl")),
                other => command.arg(other),
            };
        }
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn xdev mount");
        Daemon {
            child: Some(child),
            dir,
            plans,
            tmp,
        }
    }

    fn shown(&self) -> String {
        self.dir.display().to_string()
    }

    fn tmp_path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// An `xdev` command that finds this mount through `XDEV_DIR`.
    fn xdev(&self, args: &[&str]) -> Command {
        let mut command = xdev_bin();
        command.args(args).env("XDEV_DIR", &self.dir);
        command
    }

    fn run(&self, args: &[&str]) -> Ran {
        ran(self.xdev(args).output().expect("run xdev"))
    }

    /// Starts an `xdev` command in the background, output piped.
    fn spawn(&self, args: &[&str]) -> Child {
        self.xdev(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn xdev")
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).expect("read a mount file")
    }

    fn status_json(&self) -> Value {
        serde_json::from_str(&self.read("status.json")).expect("status.json is JSON")
    }

    fn pending(&self) -> u64 {
        self.status_json()["pending"]
            .as_u64()
            .expect("pending count")
    }

    fn head_id(&self) -> Option<String> {
        self.status_json()["head"]["id"].as_str().map(String::from)
    }

    fn log(&self) -> Vec<Value> {
        self.read("log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("log line is JSON"))
            .collect()
    }

    /// The journal record of `event` for `id`, waiting for it (the
    /// journal follows the session's events a moment later).
    fn wait_for_record(&self, event: &str, id: &str) -> Value {
        let mut found = None;
        eventually(PATIENCE, || {
            found = self
                .log()
                .into_iter()
                .find(|record| record["event"] == event && record["id"] == id);
            found.is_some()
        });
        found.unwrap_or_else(|| panic!("no {event} record for {id} in log"))
    }

    fn plan_status(&self) -> Value {
        serde_json::from_str(&self.read("plan/status")).expect("plan/status is JSON")
    }

    /// `xdev stage <args> -- <cmd>` in its own process group; waits for
    /// the id line.
    fn stage(&self, args: &[&str], cmd: &[&str]) -> Stager {
        let mut command = self.xdev(&["stage"]);
        command
            .args(args)
            .arg("--")
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("spawn xdev stage");
        let mut id = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout).read_line(&mut id).expect("id line");
        }
        let mut stager = Stager {
            child,
            id: id.trim_end().to_string(),
        };
        if stager.id.is_empty() {
            let code = wait_exit(&mut stager.child, PATIENCE);
            let stderr = read_pipe(stager.child.stderr.take());
            panic!("xdev stage printed no id (exit {code:?}): {stderr}");
        }
        stager
    }

    /// Where `--journal JOURNAL` puts the journal.
    fn journal_file(&self) -> PathBuf {
        self.tmp.path().join("journal.jsonl")
    }

    /// Sends the daemon SIGTERM without waiting.
    fn sigterm(&self) {
        if let Some(child) = self.child.as_ref() {
            signal(child.id(), libc::SIGTERM);
        }
    }

    /// Stops the daemon with SIGTERM; its exit code, if it exited in time.
    fn terminate(&mut self, limit: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        signal(child.id(), libc::SIGTERM);
        let code = wait_exit(&mut child, limit);
        if code.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        code
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(10));
        if is_mounted(&self.dir) {
            let _ = Command::new("fusermount3")
                .args(["-u", "-z", "-q", "--"])
                .arg(&self.dir)
                .status();
        }
    }
}

/// A running `xdev stage`, killed with its whole process group on drop.
struct Stager {
    child: Child,
    id: String,
}

impl Stager {
    fn wait(&mut self) -> Option<i32> {
        wait_exit(&mut self.child, PATIENCE)
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Its stderr, once it has exited.
    fn stderr(&mut self) -> String {
        read_pipe(self.child.stderr.take())
    }
}

impl Drop for Stager {
    fn drop(&mut self) {
        if self.is_running() {
            // The group: the stager and whatever command it is running.
            // SAFETY: killing the process group this test created.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn file_or_empty(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

// ----- stage ---------------------------------------------------------------

#[test]
fn stage_then_resolve_runs_the_command_once_and_its_stdout_is_the_result() {
    let daemon = Daemon::plain();
    let applied = daemon.tmp_path("applied.txt");
    let cmd = sh(&format!(
        "echo once >> '{}'; echo 'applied: edit a'; echo",
        applied.display()
    ));
    let mut stager = daemon.stage(&["--label", "edit a"], &refs(&cmd));
    assert!(
        stager.id.starts_with("pending-action:external:"),
        "{}",
        stager.id
    );
    assert_eq!(daemon.head_id().as_deref(), Some(stager.id.as_str()));
    assert_eq!(file_or_empty(&applied), "", "staging runs nothing");

    let resolver = daemon.run(&["resolve", "tests", "pass"]);
    assert_eq!(resolver.stdout, "applied: edit a\n", "{}", resolver.stderr);
    assert_eq!(resolver.code, 0);
    assert_eq!(resolver.stderr, "");
    assert_eq!(stager.wait(), Some(0));
    assert_eq!(file_or_empty(&applied), "once\n", "CMD ran exactly once");
    assert_eq!(daemon.pending(), 0);

    // The decided id is gone.
    let item = daemon.dir.join("pending").join(&stager.id).join("resolve");
    assert_eq!(
        Fd::open(&item, libc::O_RDWR).err(),
        Some(libc::ENOENT),
        "a decided id's resolve is gone"
    );
    let again = daemon.run(&["resolve", "--id", &stager.id, "again"]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        format!(
            "xdev: ENOENT: no such pending preview (already decided or withdrawn?); cannot open {}: No such file or directory\n",
            item.display()
        )
    );
    assert_eq!(file_or_empty(&applied), "once\n");

    let decision = daemon
        .log()
        .into_iter()
        .find(|record| record["event"] == "resolve")
        .expect("the resolve is journaled");
    assert_eq!(decision["reason"], "tests pass");
    assert_eq!(decision["text"], "applied: edit a");
}

#[test]
fn a_failing_command_keeps_the_preview_pending_and_the_resolver_gets_eio() {
    let daemon = Daemon::plain();
    let flag = daemon.tmp_path("flag");
    let cmd = sh(&format!(
        "if [ -e '{}' ]; then echo fixed; else echo noise >&2; echo boom >&2; exit 2; fi",
        flag.display()
    ));
    let mut stager = daemon.stage(
        &["--label", "fragile", "--source-tool", "patch"],
        &refs(&cmd),
    );
    assert!(stager.id.starts_with("pending-action:patch:"));

    let failed = daemon.run(&["resolve", "go"]);
    assert_eq!(failed.code, 1);
    assert_eq!(failed.stdout, "");
    assert_eq!(failed.stderr, "xdev: EIO: Apply failed: noise\nboom\n");
    assert!(stager.is_running(), "the stager keeps waiting");
    assert_eq!(daemon.pending(), 1);
    assert_eq!(daemon.head_id().as_deref(), Some(stager.id.as_str()));

    std::fs::write(&flag, "").expect("flag");
    let retried = daemon.run(&["resolve", "go again"]);
    assert_eq!((retried.code, retried.stdout.as_str()), (0, "fixed\n"));
    assert_eq!(stager.wait(), Some(0));
    assert_eq!(daemon.pending(), 0);
}

#[test]
fn a_command_failing_silently_reports_its_exit_status() {
    let daemon = Daemon::plain();
    let mut stager = daemon.stage(&["--label", "quiet"], &["sh", "-c", "exit 5"]);
    let failed = daemon.run(&["resolve", "go"]);
    assert_eq!(failed.code, 1);
    assert_eq!(failed.stderr, "xdev: EIO: Apply failed: exit status 5\n");
    let rejected = daemon.run(&["reject", "give up"]);
    assert_eq!(rejected.stdout, "Discarded: quiet. Reason: give up\n");
    assert_eq!(stager.wait(), Some(3));
}

#[test]
fn discard_exits_3_and_never_runs_the_command() {
    let daemon = Daemon::plain();
    let applied = daemon.tmp_path("applied.txt");
    let cmd = sh(&format!("touch '{}'", applied.display()));
    let mut stager = daemon.stage(&["--label", "edit b"], &refs(&cmd));
    let rejecter = daemon.run(&["reject", "nope"]);
    assert_eq!(rejecter.code, 0, "{}", rejecter.stderr);
    assert_eq!(rejecter.stdout, "Discarded: edit b. Reason: nope\n");
    assert_eq!(stager.wait(), Some(3));
    assert!(!applied.exists(), "CMD never ran");
    assert_eq!(daemon.pending(), 0);
}

#[test]
fn on_reject_output_becomes_the_reject_result() {
    let daemon = Daemon::plain();
    let applied = daemon.tmp_path("applied.txt");
    let cmd = sh(&format!("touch '{}'", applied.display()));
    let mut stager = daemon.stage(
        &[
            "--label",
            "edit c",
            "--on-reject",
            "echo \"reverted: $XDEV_REASON\"",
        ],
        &refs(&cmd),
    );
    let rejecter = daemon.run(&["reject", "too", "risky"]);
    assert_eq!(rejecter.code, 0, "{}", rejecter.stderr);
    assert_eq!(rejecter.stdout, "reverted: too risky\n");
    assert_eq!(stager.wait(), Some(3));
    assert!(!applied.exists());
}

#[test]
fn a_deadline_withdraws_the_preview_and_exits_4() {
    let daemon = Daemon::plain();
    let applied = daemon.tmp_path("applied.txt");
    let cmd = sh(&format!("touch '{}'", applied.display()));
    let mut stager = daemon.stage(&["--label", "slow", "--deadline", "300ms"], &refs(&cmd));
    assert_eq!(stager.wait(), Some(4));
    assert!(stager.stderr().contains("deadline passed"));
    assert_eq!(daemon.pending(), 0, "the preview is gone");
    assert!(!applied.exists(), "a timeout is never an approval");
    let withdrawn = daemon.wait_for_record("withdrawn", &stager.id);
    assert_eq!(withdrawn["outcome"], "timeout");
    let resolver = daemon.run(&["resolve", "late"]);
    assert_eq!(resolver.code, 1);
    assert!(!applied.exists());
}

#[test]
fn sigkill_of_the_stager_withdraws_its_preview_within_a_second() {
    let daemon = Daemon::plain();
    let applied = daemon.tmp_path("applied.txt");
    let cmd = sh(&format!("touch '{}'", applied.display()));
    let mut stager = daemon.stage(&["--label", "doomed"], &refs(&cmd));
    assert_eq!(daemon.pending(), 1);
    let killed = Instant::now();
    signal(stager.child.id(), libc::SIGKILL);
    assert!(
        eventually(Duration::from_secs(1), || daemon.pending() == 0),
        "withdrawn within 1 s"
    );
    assert!(killed.elapsed() < Duration::from_secs(2));
    let _ = stager.wait();
    let withdrawn = daemon.wait_for_record("withdrawn", &stager.id);
    assert_ne!(withdrawn["outcome"], "timeout");
    assert!(!applied.exists());
}

/// Whether any process is left in process group `group`.
fn group_alive(group: i32) -> bool {
    // SAFETY: signal 0 only asks whether the group has a member.
    unsafe { libc::kill(-group, 0) == 0 }
}

#[test]
fn a_stager_killed_during_an_apply_leaves_the_outcome_unknown_and_its_command_ends() {
    let daemon = Daemon::plain();
    let (group_file, marker) = (daemon.tmp_path("group"), daemon.tmp_path("marker"));
    let script = format!(
        "echo $$ > '{}'; sleep 30; touch '{}'",
        group_file.display(),
        marker.display()
    );
    let mut stager = daemon.stage(&["--label", "slow migration"], &refs(&sh(&script)));
    let mut resolver = daemon.spawn(&["resolve", "go"]);
    assert!(
        eventually(PATIENCE, || !file_or_empty(&group_file).trim().is_empty()),
        "the command started"
    );
    let group: i32 = file_or_empty(&group_file)
        .trim()
        .parse()
        .expect("the command's pid");
    assert!(group_alive(group));
    let killed = Instant::now();
    signal(stager.child.id(), libc::SIGKILL);
    let code = wait_exit(&mut resolver, PATIENCE);
    let answered_after = killed.elapsed();
    let stderr = read_pipe(resolver.stderr.take());
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "xdev: EIO: outcome unknown: producer died during apply\n"
    );
    assert!(
        answered_after < Duration::from_millis(1500),
        "the resolver waited {answered_after:?}"
    );
    let decision = daemon.wait_for_record("resolve", &stager.id);
    assert_eq!(decision["outcome"], "unknown");
    assert_eq!(decision["errno"], "EIO");
    assert_eq!(
        decision["text"],
        "outcome unknown: producer died during apply"
    );
    let withdrawn = daemon.wait_for_record("withdrawn", &stager.id);
    assert_eq!(withdrawn["reason"], "producer died during apply");
    assert!(
        eventually(Duration::from_secs(2), || !group_alive(group)),
        "the command's process group (sh and its sleep 30) is gone"
    );
    let _ = stager.wait();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!marker.exists(), "the command never went on to finish");
    assert_eq!(daemon.pending(), 0);
}

#[test]
fn per_item_resolve_applies_exactly_that_preview() {
    let daemon = Daemon::plain();
    let (file_a, file_b) = (daemon.tmp_path("a.txt"), daemon.tmp_path("b.txt"));
    let cmd_a = sh(&format!(
        "echo a >> '{}'; echo 'applied A'",
        file_a.display()
    ));
    let cmd_b = sh(&format!("echo b >> '{}'", file_b.display()));
    let mut stager_a = daemon.stage(&["--label", "a"], &refs(&cmd_a));
    let mut stager_b = daemon.stage(&["--label", "b"], &refs(&cmd_b));
    let listed = dir_names(&daemon.dir.join("pending"));
    assert_eq!(
        listed,
        [stager_b.id.clone(), stager_a.id.clone()],
        "head first"
    );
    assert_eq!(
        daemon.read(&format!("pending/{}/label", stager_a.id)),
        "a\n"
    );

    // Through the CLI ...
    let resolver = daemon.run(&["resolve", "--id", &stager_a.id, "only a"]);
    assert_eq!(
        (resolver.code, resolver.stdout.as_str()),
        (0, "applied A\n")
    );
    assert_eq!(stager_a.wait(), Some(0));
    assert_eq!(file_or_empty(&file_a), "a\n");
    assert!(!file_b.exists(), "the head was not touched");
    assert!(stager_b.is_running());
    assert_eq!(daemon.head_id().as_deref(), Some(stager_b.id.as_str()));

    // ... and with plain file I/O on pending/<id>/reject.
    let reject = daemon.dir.join("pending").join(&stager_b.id).join("reject");
    let fd = Fd::open(&reject, libc::O_RDWR).expect("open item reject");
    assert_eq!(fd.write(b"not now\n"), Ok(8));
    assert_eq!(fd.read_to_string(), "Discarded: b. Reason: not now\n");
    drop(fd);
    assert_eq!(stager_b.wait(), Some(3));
    assert!(!file_b.exists());
    for id in [&stager_a.id, &stager_b.id] {
        let gone = daemon.dir.join("pending").join(id).join("resolve");
        assert_eq!(Fd::open(&gone, libc::O_RDWR).err(), Some(libc::ENOENT));
    }
}

#[test]
fn deciding_an_item_another_writer_is_deciding_says_so() {
    let daemon = Daemon::plain();
    let cmd = sh("sleep 2; echo slow done");
    let mut stager = daemon.stage(&["--label", "slow"], &refs(&cmd));
    let mut first = daemon.spawn(&["resolve", "--id", &stager.id, "first"]);
    let deadline = Instant::now() + Duration::from_secs(3);
    while !daemon.read("status.json").contains("\"inProgress\":1") {
        assert!(Instant::now() < deadline, "the first resolve never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = daemon.run(&["resolve", "--id", &stager.id, "second"]);
    let path = daemon.dir.join("pending").join(&stager.id).join("resolve");
    assert_eq!(
        (second.code, second.stderr),
        (
            1,
            format!(
                "xdev: EBUSY: another writer is deciding this preview right now; cannot open {}: Device or resource busy\n",
                path.display()
            )
        )
    );
    assert_eq!(wait_exit(&mut first, Duration::from_secs(5)), Some(0));
    assert_eq!(stager.wait(), Some(0));
}

// ----- resolve / reject / propose / status ----------------------------------

#[test]
fn devices_without_anything_pending_and_the_mount_lookup() {
    let journal_dir = tempfile::tempdir().expect("tmp");
    let journal = journal_dir.path().join("journal.jsonl");
    let journal_arg = journal.display().to_string();
    let daemon = Daemon::start(&["--journal", &journal_arg]);

    let resolve = daemon.run(&["resolve"]);
    assert_eq!(resolve.code, 1);
    assert_eq!(resolve.stdout, "");
    assert_eq!(
        resolve.stderr,
        "xdev: ENOENT: No pending action to resolve. Nothing to apply or discard.\n"
    );

    // The reason comes from stdin when no TEXT is given; --mount wins over
    // XDEV_DIR.
    let mut reject = daemon.xdev(&["reject", "--mount", &daemon.shown()]);
    reject
        .env("XDEV_DIR", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = reject.spawn().expect("spawn reject");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(b"from stdin\n").expect("stdin");
    }
    let reject = ran(child.wait_with_output().expect("reject"));
    assert_eq!(reject.code, 0, "{}", reject.stderr);
    assert_eq!(
        reject.stdout,
        "Nothing to reject; no pending action remains.\n"
    );
    let last = daemon.log().pop().expect("a record");
    assert_eq!(last["event"], "reject");
    assert_eq!(last["reason"], "from stdin");

    let status = daemon.run(&["status"]);
    assert_eq!(status.code, 0);
    assert!(
        status.stdout.starts_with("pending: 0\n"),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains("plan mode: off"));
    let json = daemon.run(&["status", "--json"]);
    let value: Value = serde_json::from_str(&json.stdout).expect("status --json");
    assert_eq!(value["pending"], 0);
    assert_eq!(value["last"]["device"], "reject");

    let outside = daemon.run(&["propose", "auth"]);
    assert_eq!(outside.code, 1);
    assert_eq!(
        outside.stderr,
        format!(
            "xdev: EPERM: No plan is awaiting approval — {}/propose only accepts a plan title while plan mode is active.\n",
            daemon.shown()
        )
    );
    let no_desk = daemon.run(&["plan", "enter"]);
    assert_eq!(no_desk.code, 1);
    assert!(
        no_desk
            .stderr
            .starts_with("xdev: ENOENT: this mount has no plan desk"),
        "{}",
        no_desk.stderr
    );

    assert_eq!(
        std::fs::read_to_string(&journal).expect("journal file"),
        daemon.read("log"),
        "--journal gets every record of log"
    );
}

#[test]
fn no_mount_is_a_one_line_error() {
    let missing = tempfile::tempdir().expect("tmp");
    let dir = missing.path().join("nothing-here");
    let out = ran(xdev_bin()
        .args(["status", "--mount"])
        .arg(&dir)
        .output()
        .expect("xdev"));
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        format!(
            "xdev: no xdev mount at {}: it does not exist (use --mount DIR or set XDEV_DIR, or start one with `xdev mount DIR`)\n",
            dir.display()
        )
    );
    let stage = ran(xdev_bin()
        .env("XDEV_DIR", &dir)
        .args(["stage", "--label", "x", "--", "true"])
        .output()
        .expect("xdev"));
    assert_eq!(stage.code, 1);
    assert!(stage.stderr.starts_with("xdev: no xdev mount at"));
}

/// Every client command, as `xdev` arguments.
const CLIENT_COMMANDS: [&[&str]; 8] = [
    &["resolve", "looks right"],
    &["reject", "no"],
    &["propose", "auth"],
    &["status"],
    &["status", "--json"],
    &["stage", "--label", "x", "--", "true"],
    &["plan", "enter"],
    &["plan", "status"],
];

#[test]
fn clients_never_write_into_a_plain_directory() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("plain");
    std::fs::create_dir(&dir).expect("mkdir");
    let users_file = dir.join("resolve");
    std::fs::write(&users_file, "the user's notes\n").expect("user's file");
    for args in CLIENT_COMMANDS {
        let out = ran(xdev_bin()
            .args(args)
            .env("XDEV_DIR", &dir)
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(
            out.stderr,
            format!(
                "xdev: no xdev mount at {}: it is not a FUSE mount (use --mount DIR or set XDEV_DIR, or start one with `xdev mount DIR`)\n",
                dir.display()
            ),
            "{args:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&users_file).expect("still there"),
        "the user's notes\n",
        "the user's file is untouched"
    );
    let entries: Vec<_> = std::fs::read_dir(&dir).expect("ls").collect();
    assert_eq!(entries.len(), 1, "nothing was created: {entries:?}");
}

#[test]
fn a_stale_mount_suggests_xdev_mount_to_clear_it() {
    let mut daemon = Daemon::plain();
    if let Some(mut child) = daemon.child.take() {
        child.kill().expect("SIGKILL the daemon");
        child.wait().expect("reap");
    }
    assert!(
        eventually(PATIENCE, || xdev::is_stale_mount(&daemon.dir)),
        "the mount went stale"
    );
    let shown = daemon.shown();
    for args in CLIENT_COMMANDS {
        let out = daemon.run(args);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr,
            format!(
                "xdev: ENOTCONN: the xdev mount at {shown} is stale (its daemon is gone); run `xdev mount {shown}` to clear it and serve again\n"
            ),
            "{args:?}"
        );
    }
}

#[test]
fn stage_fails_at_once_when_its_command_cannot_be_found() {
    let daemon = Daemon::plain();
    let plain_file = daemon.tmp_path("not-executable");
    std::fs::write(&plain_file, "echo hi\n").expect("file");
    std::fs::set_permissions(&plain_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let plain_file = plain_file.display().to_string();
    for (program, why) in [
        ("xdev-no-such-command", "not found on PATH"),
        ("/nonexistent/xdev-cmd", "does not exist"),
        (plain_file.as_str(), "is not an executable file"),
    ] {
        let out = daemon.run(&[
            "stage",
            "--label",
            "x",
            "--deadline",
            "5s",
            "--",
            program,
            "arg",
        ]);
        assert_eq!(out.code, 1, "{program}: {}", out.stderr);
        assert_eq!(out.stdout, "", "no id was printed");
        assert_eq!(
            out.stderr,
            format!("xdev: cannot stage: command {program} {why}; nothing was staged\n")
        );
    }
    assert_eq!(daemon.pending(), 0);
    assert!(
        daemon
            .log()
            .iter()
            .all(|record| record["event"] != "staged"),
        "nothing was staged"
    );
}

#[test]
fn usage_errors_exit_2_as_the_readme_says() {
    let out = ran(xdev_bin()
        .args(["resolve", "--no-such-flag"])
        .output()
        .expect("xdev"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("Usage: xdev"), "{}", out.stderr);
    let readme = include_str!("../README.md");
    assert!(
        readme.contains("| 2 | usage error"),
        "the README lists exit code 2"
    );
}

// ----- plan -------------------------------------------------------------------

fn write_plan(daemon: &Daemon, slug: &str) -> PathBuf {
    let path = daemon.plans.join(format!("{slug}-plan.md"));
    std::fs::write(&path, "# Plan\n\n1. Do it.\n").expect("plan file");
    path
}

#[test]
fn plan_yolo_approves_at_once_with_the_exact_text() {
    let daemon = Daemon::plan("yolo", &["--execute-with", "impl-bot"]);
    let outside = daemon.run(&["propose", "auth"]);
    assert_eq!(outside.code, 1);
    assert!(outside
        .stderr
        .starts_with("xdev: EPERM: No plan is awaiting approval"));

    let enter = daemon.run(&["plan", "enter"]);
    assert_eq!(
        (enter.code, enter.stdout.as_str()),
        (0, "Plan mode entered.\n")
    );
    assert_eq!(daemon.status_json()["planMode"], true);

    let expected = daemon.plans.join("auth-plan.md").display().to_string();
    let missing = daemon.run(&["propose", "auth"]);
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr,
        format!("xdev: ENOENT: Plan file not found at {expected}. Write the finalized plan to {expected} before requesting approval.\n")
    );

    write_plan(&daemon, "auth");
    let approved = daemon.run(&["propose", "auth"]);
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    assert_eq!(
        approved.stdout,
        "Plan approved. Implementing now with impl-bot.\n"
    );
    assert_eq!(daemon.status_json()["planMode"], false);
    let status = daemon.run(&["plan", "status"]);
    let value: Value = serde_json::from_str(&status.stdout).expect("plan status");
    assert_eq!(value["handler"], "yolo");
    assert_eq!(
        value["lastDecision"],
        "Plan approved. Implementing now with impl-bot."
    );
}

/// Starts `xdev propose auth` and waits until the plan is under review.
fn propose_and_wait(daemon: &Daemon) -> Child {
    let mut proposer = daemon.spawn(&["propose", "auth"]);
    let reviewing = eventually(PATIENCE, || {
        daemon.plan_status()["underReview"]["slug"] == "auth"
    });
    if !reviewing {
        let code = wait_exit(&mut proposer, Duration::from_secs(1));
        panic!(
            "the plan never came under review (proposer exit {code:?}: {})",
            read_pipe(proposer.stderr.take())
        );
    }
    proposer
}

fn finish(mut child: Child) -> Ran {
    let code = wait_exit(&mut child, PATIENCE).expect("the command finishes");
    Ran {
        code,
        stdout: read_pipe(child.stdout.take()),
        stderr: read_pipe(child.stderr.take()),
    }
}

#[test]
fn plan_review_blocks_propose_until_approved() {
    let daemon = Daemon::plan("review", &["--plan-mode"]);
    assert_eq!(daemon.status_json()["planMode"], true, "--plan-mode");
    let plan = write_plan(&daemon, "auth");
    let mut proposer = propose_and_wait(&daemon);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        matches!(proposer.try_wait(), Ok(None)),
        "propose blocks until a decision"
    );

    let text = format!(
        "Plan approved at {}. Plan mode exited; proceed with the implementation.\n\nReviewer feedback: looks good\n",
        plan.display()
    );
    let approve = daemon.run(&["plan", "approve", "--feedback", "looks", "good"]);
    assert_eq!(approve.code, 0, "{}", approve.stderr);
    assert_eq!(approve.stdout, text);
    let proposed = finish(proposer);
    assert_eq!(
        (proposed.code, proposed.stdout.as_str()),
        (0, text.as_str())
    );
    assert_eq!(daemon.status_json()["planMode"], false);

    let nothing = daemon.run(&["plan", "approve"]);
    assert_eq!(nothing.code, 1);
    assert_eq!(nothing.stderr, "xdev: ENOENT: No plan is under review.\n");
}

#[test]
fn plan_review_refine_sends_feedback_and_stays_in_plan_mode() {
    let daemon = Daemon::plan("review", &[]);
    assert_eq!(daemon.status_json()["planMode"], false, "off by default");
    let enter = daemon.run(&["plan", "enter"]);
    assert_eq!(enter.code, 0, "{}", enter.stderr);
    write_plan(&daemon, "auth");
    let proposer = propose_and_wait(&daemon);

    let text = format!(
        "Plan refinement requested. Update the plan file, then write auth to {}/propose again when ready.\nadd error handling\n",
        daemon.shown()
    );
    let refine = daemon.run(&["plan", "refine", "add", "error", "handling"]);
    assert_eq!(refine.code, 0, "{}", refine.stderr);
    assert_eq!(refine.stdout, text);
    let proposed = finish(proposer);
    assert_eq!(
        (proposed.code, proposed.stdout.as_str()),
        (0, text.as_str())
    );
    assert_eq!(daemon.status_json()["planMode"], true, "plan mode stays on");

    // Proposing again waits again; exiting plan mode cancels that review.
    let proposer = propose_and_wait(&daemon);
    let exit = daemon.run(&["plan", "exit"]);
    assert_eq!(
        (exit.code, exit.stdout.as_str()),
        (0, "Plan mode exited.\n")
    );
    let cancelled = finish(proposer);
    assert_eq!(cancelled.code, 1);
    assert!(
        cancelled.stderr.starts_with("xdev: ECANCELED: "),
        "{}",
        cancelled.stderr
    );
}

#[test]
fn plan_async_answers_at_once_and_a_second_propose_is_ebusy() {
    let daemon = Daemon::plan("async", &["--plan-mode"]);
    let plan = write_plan(&daemon, "auth");
    let first = daemon.run(&["propose", "auth"]);
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "Plan ready for review.\n")
    );
    let second = daemon.run(&["propose", "auth"]);
    assert_eq!(second.code, 1);
    assert!(
        second.stderr.starts_with("xdev: EBUSY: "),
        "{}",
        second.stderr
    );
    let approve = daemon.run(&["plan", "approve"]);
    assert_eq!(approve.code, 0, "{}", approve.stderr);
    assert_eq!(
        approve.stdout,
        format!(
            "Plan approved at {}. Plan mode exited; proceed with the implementation.\n",
            plan.display()
        )
    );
    assert_eq!(daemon.status_json()["planMode"], false);
}

// ----- run ------------------------------------------------------------------

#[test]
fn run_exports_the_mount_returns_the_exit_code_and_cleans_up() {
    require_fuse();
    let tmp = tempfile::tempdir().expect("tmp");
    let seen = tmp.path().join("seen");
    let script = format!(
        "echo \"$XDEV_DIR\" > '{}'; test -e \"$XDEV_DIR/resolve\" && exit 7",
        seen.display()
    );
    let out = ran(xdev_bin()
        .args(["run", "--", "sh", "-c", &script])
        .output()
        .expect("xdev run"));
    assert_eq!(out.code, 7, "{}", out.stderr);
    let dir = PathBuf::from(file_or_empty(&seen).trim_end());
    assert!(dir.is_absolute(), "{dir:?}");
    assert!(!is_mounted(&dir), "nothing left mounted");
    assert!(!dir.exists(), "the private mount point is removed");

    // A given DIR (created when missing), and a command killed by a signal.
    let given = tmp.path().join("given");
    let out = ran(xdev_bin()
        .args(["run", "--mount"])
        .arg(&given)
        .args([
            "--",
            "sh",
            "-c",
            "xdev_dir=$XDEV_DIR; test -e \"$xdev_dir/status\" && kill -9 $$",
        ])
        .output()
        .expect("xdev run"));
    assert_eq!(out.code, 128 + libc::SIGKILL, "{}", out.stderr);
    assert!(!is_mounted(&given));
    assert!(!given.exists(), "a DIR xdev created is removed again");

    // The mount works for xdev commands inside.
    let out = ran(xdev_bin()
        .args(["run", "--", env!("CARGO_BIN_EXE_xdev"), "reject", "inside"])
        .output()
        .expect("xdev run"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Nothing to reject; no pending action remains.\n"
    );
}

// ----- shutdown -----------------------------------------------------------------

/// Stages a preview whose apply runs `cmd`, and an `xdev resolve` that waits
/// on it: once the apply is under way, the stager and the writer.
fn resolve_a_slow_apply(daemon: &Daemon, cmd: &[&str]) -> (Stager, Child) {
    let stager = daemon.stage(&["--label", "slow"], cmd);
    let writer = daemon.spawn(&["resolve", "go"]);
    assert!(
        eventually(PATIENCE, || daemon.status_json()["inProgress"] == 1),
        "the apply started"
    );
    (stager, writer)
}

#[test]
fn sigterm_cancels_a_writer_still_blocked_after_the_grace_period() {
    let mut daemon = Daemon::start(&["--grace", "300ms"]);
    let (_stager, writer) = resolve_a_slow_apply(&daemon, &["sleep", "30"]);
    let dir = daemon.dir.clone();
    let stopped = Instant::now();
    assert_eq!(daemon.terminate(Duration::from_secs(2)), Some(0));
    assert!(stopped.elapsed() < Duration::from_secs(2));
    assert!(!is_mounted(&dir), "the mount is gone");
    let written = finish(writer);
    assert_eq!(written.code, 1);
    assert!(
        written.stderr.starts_with("xdev: ECANCELED: "),
        "{}",
        written.stderr
    );
}

#[test]
fn a_mount_that_goes_away_while_stage_waits_exits_5_without_running_the_command() {
    let mut daemon = Daemon::plain();
    let marker = daemon.tmp.path().join("ran");
    let marker_arg = marker.to_str().expect("utf-8 path");
    let mut stager = daemon.stage(&["--label", "waits"], &["touch", marker_arg]);
    assert_eq!(daemon.terminate(Duration::from_secs(5)), Some(0));
    assert_eq!(stager.wait(), Some(5), "exit 5: the mount went away");
    let stderr = stager.stderr();
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    assert!(stderr.contains("went away while"), "{stderr}");
    assert!(!marker.exists(), "the command never ran");
}

#[test]
fn a_stager_whose_command_succeeded_exits_0_even_if_the_mount_is_gone_before_the_report() {
    let daemon = Daemon::plain();
    let pid = daemon
        .child
        .as_ref()
        .map(|child| child.id())
        .expect("daemon");
    // The command kills the daemon, then finishes its work: the result can
    // no longer be reported, but the work is done.
    let script = format!("kill -KILL {pid}; sleep 0.3; echo done");
    let mut stager = daemon.stage(&["--label", "outlives"], &["sh", "-c", &script]);
    let writer = daemon.spawn(&["resolve", "go"]);
    let written = finish(writer);
    assert_eq!(written.code, 1, "the resolver lost its mount: {written:?}");
    assert_eq!(stager.wait(), Some(0), "the command ran and succeeded");
    assert!(
        stager
            .stderr()
            .contains("ran and succeeded; the mount went away"),
        "says so on stderr"
    );
}

#[test]
fn sigterm_lets_a_running_apply_finish_and_its_writer_gets_the_real_outcome() {
    let mut daemon = Daemon::start(&["--journal", "JOURNAL"]);
    let journal = daemon.journal_file();
    let (mut stager, writer) =
        resolve_a_slow_apply(&daemon, &["sh", "-c", "sleep 1; echo slow done"]);
    let dir = daemon.dir.clone();
    let stopped = Instant::now();
    daemon.sigterm();
    std::thread::sleep(Duration::from_millis(100));
    let refused = daemon.run(&["reject", "not now"]);
    assert_eq!(
        refused.code, 1,
        "a new decision while stopping: {refused:?}"
    );
    assert!(
        refused.stderr.starts_with("xdev: ECANCELED: "),
        "{}",
        refused.stderr
    );
    let written = finish(writer);
    assert_eq!(
        (written.code, written.stdout.as_str()),
        (0, "slow done\n"),
        "{written:?}"
    );
    assert!(stopped.elapsed() < Duration::from_secs(5));
    assert_eq!(daemon.terminate(Duration::from_secs(5)), Some(0));
    assert!(!is_mounted(&dir), "the mount is gone");
    assert_eq!(
        stager.wait(),
        Some(0),
        "the stager ran its command: {}",
        stager.stderr()
    );
    let records: Vec<Value> = std::fs::read_to_string(&journal)
        .expect("journal")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "resolve" && r["outcome"] == "ok" && r["text"] == "slow done"),
        "{records:?}"
    );
}

// ----- help -----------------------------------------------------------------------

#[test]
fn every_command_has_complete_help() {
    let help = |args: &[&str]| {
        let out = ran(xdev_bin().args(args).arg("--help").output().expect("xdev"));
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(out.stdout.contains("Usage: xdev"), "{args:?}");
        out.stdout
    };
    let root = help(&[]);
    for command in [
        "mount", "status", "resolve", "reject", "propose", "stage", "plan", "run",
    ] {
        assert!(root.contains(command), "root help lists {command}");
    }
    assert!(root.contains("XDEV_DIR"));
    let mount = help(&["mount"]);
    for option in [
        "--allow-other",
        "--journal",
        "--plan-dir",
        "--plan-handler",
        "--execute-with",
        "--plan-mode",
        "yolo",
        "review",
        "async",
    ] {
        assert!(mount.contains(option), "mount help has {option}");
    }
    let stage = help(&["stage"]);
    for part in [
        "--label",
        "--source-tool",
        "--deadline",
        "--on-reject",
        "--mount",
        "Exit codes: 0 applied, 3 discarded, 4 deadline passed, 1 error",
    ] {
        assert!(stage.contains(part), "stage help has {part}");
    }
    for args in [
        &["status"][..],
        &["resolve"],
        &["reject"],
        &["propose"],
        &["plan"],
        &["plan", "enter"],
        &["plan", "approve"],
        &["plan", "refine"],
        &["plan", "status"],
    ] {
        assert!(help(args).contains("--mount"), "{args:?} takes --mount");
    }
    assert!(help(&["plan", "approve"]).contains("--feedback"));
    assert!(help(&["run"]).contains("exit code"));
    let missing_cmd = ran(xdev_bin()
        .args(["stage", "--label", "x"])
        .output()
        .expect("xdev"));
    assert_ne!(missing_cmd.code, 0, "CMD is required");
}

#[test]
fn a_refused_stage_request_says_why() {
    let daemon = Daemon::start(&[]);
    let out = daemon.run(&[
        "stage",
        "--label",
        "x",
        "--source-tool",
        "a:b",
        "--",
        "true",
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .ends_with("Bad stage request: sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -; it contains ':'.\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.starts_with("xdev: EINVAL: "), "{}", out.stderr);
}

// ----- names, deadlines, a closed stdout -------------------------------------------

#[test]
fn stage_refuses_bad_names_and_deadlines_naming_the_rule() {
    let daemon = Daemon::plain();
    let tool_rule = "sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -";
    let label_rule = "label must be one line of printable text";
    let deadline_rule = "deadlineMs must be from 1 to 604800000 (7 days)";
    for (args, rule) in [
        (["--label", "x", "--source-tool", "a/b"], tool_rule),
        (
            ["--label", "esc \u{1b}[2J", "--source-tool", "ok"],
            label_rule,
        ),
        (
            ["--label", "two\nplan mode: on", "--source-tool", "ok"],
            label_rule,
        ),
        (["--label", "x", "--deadline", "8days"], deadline_rule),
        (["--label", "x", "--deadline", "0s"], deadline_rule),
    ] {
        let mut command = vec!["stage"];
        command.extend_from_slice(&args);
        command.extend_from_slice(&["--", "true"]);
        let out = daemon.run(&command);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with("xdev: EINVAL: "), "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!("Bad stage request: {rule}; ")),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(daemon.pending(), 0, "nothing was staged");
    let listing = Command::new("ls")
        .arg(daemon.dir.join("pending"))
        .output()
        .expect("ls");
    assert!(listing.status.success(), "ls pending: {listing:?}");
    assert!(listing.stdout.is_empty());
}

#[test]
fn a_daemon_whose_stdout_is_closed_keeps_serving() {
    // `xdev mount D | true`: the reader of stdout is gone before the ready line.
    let mut daemon = Daemon::launch(&[]);
    let child = daemon.child.as_mut().expect("daemon");
    drop(child.stdout.take());
    let stderr = child.stderr.take();
    let status = daemon.dir.join("status");
    let answered = eventually(PATIENCE, || {
        std::fs::read_to_string(&status).is_ok_and(|text| text.starts_with("pending: 0\n"))
    });
    let running = daemon
        .child
        .as_mut()
        .is_some_and(|child| matches!(child.try_wait(), Ok(None)));
    let code = daemon.terminate(Duration::from_secs(10));
    let stderr = read_pipe(stderr);
    assert!(answered && running, "the daemon stopped serving: {stderr}");
    assert_eq!(code, Some(0), "exit after SIGTERM: {stderr}");
    assert!(!is_mounted(&daemon.dir), "unmounted");
    assert!(
        stderr.contains("cannot print a line; carrying on"),
        "the failed ready line is logged: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
