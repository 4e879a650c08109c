//! The `xdev` command line against real daemon processes: what the shell
//! scenarios of `mount-tests/` (run by tests/scenarios.rs) do not check:
//! help and usage errors, an item another writer is deciding, commands that
//! cannot be found, the `async` plan handler, and a mount that goes away
//! under a stager or a blocked writer.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    eventually, expected, expected_text, is_mounted, require_fuse, temp_mount_point,
    unmount_leftover, wait_exit,
};
use serde_json::Value;

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

fn xdev_bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xdev"));
    command.env_remove("XDEV_DIR").stdin(Stdio::null());
    command
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
        let (tmp, dir) = temp_mount_point("xdev-cli-");
        let plans = tmp.path().join("plans");
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

    fn log(&self) -> Vec<Value> {
        self.read("log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("log line is JSON"))
            .collect()
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
        unmount_leftover(&self.dir);
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

// ----- stage and the command line --------------------------------------------

#[test]
fn deciding_an_item_another_writer_is_deciding_says_so() {
    let daemon = Daemon::plain();
    let cmd = sh("sleep 2; echo slow done");
    let mut stager = daemon.stage(&["--label", "slow"], &refs(&cmd));
    let mut first = daemon.spawn(&["resolve", "--id", &stager.id, "first"]);
    let deadline = Instant::now() + Duration::from_secs(20);
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
fn usage_errors_exit_2_as_the_cli_reference_says() {
    let out = ran(xdev_bin()
        .args(["resolve", "--no-such-flag"])
        .output()
        .expect("xdev"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("Usage: xdev"), "{}", out.stderr);
    let reference = include_str!("../docs/cli.md");
    assert!(
        reference.contains("| 2 | usage error"),
        "docs/cli.md lists exit code 2"
    );
}

/// The peak resident memory of process `pid` (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM line")
}

#[test]
fn stage_keeps_only_the_end_of_a_huge_output_and_the_apply_succeeds() {
    let daemon = Daemon::plain();
    let printed = daemon.tmp_path("printed");
    let go_on = daemon.tmp_path("go-on");
    // 300 MB of output, then the command waits (its stager still alive)
    // until the test has taken the stager's peak memory.
    let script = format!(
        "yes | head -c 300000000 && touch '{}' && while [ ! -e '{}' ]; do sleep 0.05; done",
        printed.display(),
        go_on.display()
    );
    let mut stager = daemon.stage(&["--label", "huge output"], &refs(&sh(&script)));
    let writer = daemon.spawn(&["resolve", "go"]);
    assert!(
        eventually(Duration::from_secs(300), || printed.exists()
            || !stager.is_running()),
        "the command printed its output"
    );
    assert!(stager.is_running(), "{}", stager.stderr());
    let peak = peak_rss_kib(stager.child.id());
    std::fs::write(&go_on, "").expect("let the command finish");
    assert!(peak < 50 * 1024, "the stager's peak RSS was {peak} KiB");
    let written = finish(writer);
    assert_eq!(written.code, 0, "{}", written.stderr);
    // The result is the output's end, marked as cut, in one message.
    let text = written
        .stdout
        .strip_prefix(xdev::texts::STAGE_RESULT_CUT)
        .expect("marked as the end of a longer output");
    // Each newline takes two bytes in the message (`\n`).
    assert!(
        text.len() > 40_000 && text.len() < 64 * 1024,
        "{}",
        text.len()
    );
    assert!(text.lines().all(|line| line == "y"), "only y lines");
    assert_eq!(stager.wait(), Some(0), "applied");
}

// ----- plan -------------------------------------------------------------------

fn write_plan(daemon: &Daemon, slug: &str) -> PathBuf {
    let path = daemon.plans.join(format!("{slug}-plan.md"));
    std::fs::write(&path, "# Plan\n\n1. Do it.\n").expect("plan file");
    path
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
fn plan_async_answers_at_once_and_a_second_propose_is_ebusy() {
    let daemon = Daemon::plan("async", &["--plan-mode"]);
    let plan = write_plan(&daemon, "auth");
    let first = daemon.run(&["propose", "auth"]);
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (
            0,
            format!("{}\n", expected("plan-ready", &daemon.dir)).as_str()
        )
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
            "{}\n",
            expected_text(
                "plan-approved-review",
                &daemon.dir,
                &[("path", &plan.display().to_string())]
            )
        )
    );
    assert_eq!(daemon.status_json()["planMode"], false);
}

/// The `plan under review:` line of `status`, if it has one.
fn plan_line(daemon: &Daemon) -> Option<String> {
    daemon
        .read("status")
        .lines()
        .find(|line| line.starts_with("plan under review:"))
        .map(str::to_string)
}

#[test]
fn status_shows_the_plan_under_review_while_it_waits() {
    let daemon = Daemon::plan("review", &["--plan-mode"]);
    let plan = write_plan(&daemon, "auth");
    assert_eq!(plan_line(&daemon), None, "nothing proposed yet");
    assert_eq!(daemon.status_json()["planUnderReview"], Value::Null);

    // A `review` propose waits for the reviewer: meanwhile status shows it.
    let proposer = daemon.spawn(&["propose", "auth"]);
    assert!(
        eventually(PATIENCE, || plan_line(&daemon).is_some()),
        "status shows the plan while it waits; status:\n{}",
        daemon.read("status")
    );
    assert_eq!(
        plan_line(&daemon).as_deref(),
        Some(format!("plan under review: auth ({})", plan.display()).as_str())
    );
    let status = daemon.read("status");
    let lines: Vec<&str> = status.lines().collect();
    let mode = lines.iter().position(|line| *line == "plan mode: on");
    let shown = lines
        .iter()
        .position(|line| line.starts_with("plan under review:"));
    assert_eq!(
        shown,
        mode.map(|mode| mode + 1),
        "the plan line follows `plan mode: on`:\n{status}"
    );
    let json = daemon.status_json();
    assert_eq!(
        json["planUnderReview"],
        serde_json::json!({"slug": "auth", "path": plan.display().to_string()})
    );
    assert_eq!(json["planMode"], true);
    assert_eq!(json["pending"], 0, "a plan is not a preview");

    // Refined: the proposer has its answer, plan mode stays on, the line goes.
    let refine = daemon.run(&["plan", "refine", "split it in two"]);
    assert_eq!(refine.code, 0, "{}", refine.stderr);
    let proposed = finish(proposer);
    assert_eq!(proposed.code, 0, "{}", proposed.stderr);
    assert_eq!(plan_line(&daemon), None);
    assert_eq!(daemon.status_json()["planUnderReview"], Value::Null);
    assert_eq!(daemon.status_json()["planMode"], true);

    // An `async` desk's proposal waits the same way, until approved.
    let daemon = Daemon::plan("async", &["--plan-mode"]);
    let plan = write_plan(&daemon, "cache");
    assert_eq!(daemon.run(&["propose", "cache"]).code, 0);
    assert_eq!(
        plan_line(&daemon).as_deref(),
        Some(format!("plan under review: cache ({})", plan.display()).as_str())
    );
    assert_eq!(daemon.status_json()["planUnderReview"]["slug"], "cache");
    assert_eq!(daemon.run(&["plan", "approve"]).code, 0);
    assert_eq!(plan_line(&daemon), None);
    assert_eq!(daemon.status_json()["planUnderReview"], Value::Null);
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

/// The records the `--journal` file (`JOURNAL`) holds of preview `id`
/// after its staging, each as its event, outcome, errno and text (a
/// withdrawal's reason) joined by `|`, absent fields left out.
fn journaled(daemon: &Daemon, id: &str) -> Vec<String> {
    let journal = std::fs::read_to_string(daemon.tmp_path("journal.jsonl")).expect("journal");
    journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a record is JSON"))
        .filter(|record| record["id"] == id && record["event"] != "staged")
        .map(|record| {
            let text = match record["event"].as_str() {
                Some("withdrawn") => "reason",
                _ => "text",
            };
            let fields = ["event", "outcome", "errno", text].map(|name| record[name].as_str());
            fields.into_iter().flatten().collect::<Vec<_>>().join("|")
        })
        .collect()
}

/// Whether process `pid` is stopped (state `T` in /proc).
fn is_stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").map(|(_, rest)| rest);
    state.is_some_and(|state| state.starts_with('T'))
}

#[test]
fn sigterm_during_an_apply_its_stager_runs_tells_the_writer_the_outcome_is_unknown() {
    let mut daemon = Daemon::start(&["--grace", "300ms", "--journal", "JOURNAL"]);
    let [started, gate, ran] = ["started", "gate", "ran"].map(|name| daemon.tmp_path(name));
    let script =
        "touch \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05; done; touch \"$3\"; echo done";
    let paths = [&started, &gate, &ran].map(|path| path.to_str().expect("utf-8 path"));
    let (mut stager, writer) = resolve_a_slow_apply(
        &daemon,
        &["sh", "-c", script, "sh", paths[0], paths[1], paths[2]],
    );
    assert!(
        eventually(PATIENCE, || started.exists()),
        "the command runs"
    );
    let dir = daemon.dir.clone();
    assert_eq!(daemon.terminate(PATIENCE), Some(0));
    assert!(!is_mounted(&dir), "the mount is gone");
    // Its command had begun: the writer is not told "cancelled".
    let written = finish(writer);
    assert_eq!(written.code, 1);
    let unknown = expected("outcome-unknown-at-shutdown", &dir);
    assert_eq!(written.stderr, format!("xdev: EIO: {unknown}\n"));
    // A command already started runs to its end: what "unknown" warned of.
    std::fs::write(&gate, "").expect("open the gate");
    assert_eq!(stager.wait(), Some(0), "the command ran and succeeded");
    assert!(ran.exists());
    assert_eq!(
        journaled(&daemon, &stager.id),
        [
            "intent|started".to_string(),
            format!("writer-left|unknown|EIO|{unknown}")
        ]
    );
}

#[test]
fn sigterm_before_the_stager_reads_its_apply_takes_the_apply_back() {
    let mut daemon = Daemon::start(&["--grace", "300ms", "--journal", "JOURNAL"]);
    let ran = daemon.tmp_path("ran");
    let mut stager = daemon.stage(
        &["--label", "stopped"],
        &["touch", ran.to_str().expect("utf-8 path")],
    );
    // A stopped stager reads nothing: the mount lets its waiting read go
    // (EINTR), and it stops; the apply line will wait unread.
    signal(stager.child.id(), libc::SIGSTOP);
    assert!(
        eventually(PATIENCE, || is_stopped(stager.child.id())),
        "the stager stopped"
    );
    let writer = daemon.spawn(&["resolve", "go"]);
    assert!(
        eventually(PATIENCE, || daemon.status_json()["inProgress"] == 1),
        "the apply is asked for"
    );
    let dir = daemon.dir.clone();
    assert_eq!(daemon.terminate(PATIENCE), Some(0));
    let written = finish(writer);
    assert_eq!(written.code, 1);
    let taken_back = expected("apply-taken-back-at-shutdown", &dir);
    assert_eq!(written.stderr, format!("xdev: ECANCELED: {taken_back}\n"));
    signal(stager.child.id(), libc::SIGCONT);
    assert_eq!(stager.wait(), Some(5), "the mount went away first");
    assert!(!ran.exists(), "the command never ran");
    assert_eq!(
        journaled(&daemon, &stager.id),
        [
            "intent|started".to_string(),
            "withdrawn|ok|mount stopped".to_string(),
            format!("resolve|error|ECANCELED|{taken_back}"),
        ]
    );
}

/// A Claude Code `PreToolUse` event asking to run `ls`.
const BASH_EVENT: &str = r#"{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}"#;

/// A mount that answers nothing (its daemon is stopped; wake it with
/// SIGCONT before asserting, so that it can be taken down), its daemon's
/// pid, and `xdev hook ARGS` started on it with a Bash event.
fn hook_on_a_hung_mount(args: &[&str]) -> (Daemon, u32, Child) {
    let daemon = Daemon::plain();
    let server = daemon.child.as_ref().expect("the daemon runs").id();
    signal(server, libc::SIGSTOP);
    let mut hook = daemon
        .xdev(&[&["hook"], args].concat())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start xdev hook");
    if let Some(mut stdin) = hook.stdin.take() {
        stdin
            .write_all(BASH_EVENT.as_bytes())
            .expect("write the event");
    }
    (daemon, server, hook)
}

/// A mount that answers nothing cannot hold an agent: with `--on-timeout
/// deny`, the hook's watchdog denies at the deadline plus a second's grace
/// while the hook's own request still waits on the mount.
#[test]
fn a_hook_whose_mount_hangs_denies_at_its_deadline() {
    let (_daemon, server, mut hook) =
        hook_on_a_hung_mount(&["--deadline", "300ms", "--on-timeout", "deny"]);
    let code = wait_exit(&mut hook, PATIENCE);
    signal(server, libc::SIGCONT);
    assert_eq!(code, Some(0), "the hook answered while its mount hung");
    let denied = "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"No decision came through xdev within 300ms; denied.\"}}\n";
    assert_eq!(read_pipe(hook.stdout.take()), denied);
    let stderr = read_pipe(hook.stderr.take());
    assert!(stderr.contains("300ms"), "stderr says why: {stderr}");
}

/// Asking as usual (the default), a hook on a mount that answers nothing
/// waits until the agent's own hook timeout ends it, and has printed
/// nothing: the agent then asks as usual.
#[test]
fn a_hook_whose_mount_hangs_asking_as_usual_waits_for_the_agents_timeout() {
    let (_daemon, server, mut hook) = hook_on_a_hung_mount(&["--deadline", "300ms"]);
    // Past the deadline and the grace a watchdog would have waited.
    std::thread::sleep(Duration::from_millis(2500));
    let still_waiting = hook.try_wait().expect("look at the hook").is_none();
    signal(hook.id(), libc::SIGKILL);
    let _ = hook.wait();
    signal(server, libc::SIGCONT);
    assert!(still_waiting, "the hook stopped waiting by itself");
    assert_eq!(read_pipe(hook.stdout.take()), "");
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
        "SIGHUP, SIGINT, SIGQUIT, SIGTERM",
        "SIGUSR1",
        "SIGUSR2, SIGALRM, SIGPIPE",
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
        "Exit codes: 0 applied, 3 discarded, 4 deadline passed, 5 the mount went away while waiting (nothing was applied), 1 any other error.",
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

// ----- version, completions, man page ---------------------------------------------

/// The short commit of this checkout's HEAD, as build.rs finds it: only
/// when the package is the top of a git work tree.
fn checkout_commit() -> Option<String> {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&manifest_dir)
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != manifest_dir.canonicalize().ok()? {
        return None;
    }
    git(&["rev-parse", "--short", "HEAD"])
}

#[test]
fn version_names_the_release_and_the_commit_it_was_built_from() {
    let version = env!("CARGO_PKG_VERSION");
    let expected = match checkout_commit() {
        Some(commit) => format!("xdev {version} ({commit})\n"),
        None => format!("xdev {version}\n"),
    };
    for flag in ["--version", "-V"] {
        let out = ran(xdev_bin().arg(flag).output().expect("xdev"));
        assert_eq!(out.code, 0, "{flag}: {}", out.stderr);
        assert_eq!(out.stdout, expected, "{flag}");
    }
}

#[test]
fn completions_for_bash_zsh_and_fish_know_the_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = ran(xdev_bin()
            .args(["completions", shell])
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        assert!(!out.stdout.is_empty(), "{shell}");
        for word in ["mount", "resolve", "stage", "plan-dir", "completions"] {
            assert!(out.stdout.contains(word), "{shell} completes {word}");
        }
    }
    // The bash script at least parses.
    let script = ran(xdev_bin()
        .args(["completions", "bash"])
        .output()
        .expect("xdev"));
    let check = Command::new("bash")
        .args(["-n", "-c", &script.stdout])
        .output()
        .expect("bash -n");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let unknown = ran(xdev_bin()
        .args(["completions", "tcsh"])
        .output()
        .expect("xdev"));
    assert_eq!(unknown.code, 2, "an unknown shell is a usage error");
    assert!(unknown.stderr.contains("bash"), "{}", unknown.stderr);
}

#[test]
fn man_prints_a_roff_page_of_the_commands() {
    let out = ran(xdev_bin().arg("man").output().expect("xdev"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let title = out
        .stdout
        .lines()
        .find(|line| line.starts_with(".TH "))
        .expect("a .TH title line");
    assert!(title.starts_with(".TH xdev 1"), "{title}");
    assert!(title.contains(env!("CARGO_PKG_VERSION")), "{title}");
    // One page for everything: each command is a subsection of it, not a
    // page of its own that nobody installs.
    for part in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH COMMANDS",
        ".SS \"xdev mount\"",
        "\\-\\-instance",
        ".SS \"xdev stage\"",
        ".SS \"xdev plan approve\"",
        ".SS \"xdev hook\"",
        ".SH FILES",
    ] {
        assert!(out.stdout.contains(part), "the page has {part}");
    }
    assert!(!out.stdout.contains("xdev-mount(1)"), "no page of its own");
}

// ----- names the mount never lists ----------------------------------------------

/// A producer that staged one preview in agent session `session` through
/// the mount's `stage` file, as an agent's producer does; its preview is
/// withdrawn when this is dropped (the file closes).
struct SessionProducer {
    stage: std::fs::File,
    id: String,
}

impl SessionProducer {
    fn stage(daemon: &Daemon, session: &str, label: &str) -> SessionProducer {
        use std::io::Write;
        let mut stage = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(daemon.dir.join("stage"))
            .expect("open stage");
        let request =
            serde_json::json!({"label": label, "sourceTool": "agent", "sessionId": session});
        stage
            .write_all(format!("{request}\n").as_bytes())
            .expect("write the stage request");
        let staged = SessionProducer::next(&stage);
        assert_eq!(staged["event"], "staged", "{staged}");
        let id = staged["id"].as_str().expect("an id").to_string();
        SessionProducer { stage, id }
    }

    /// The producer's next message from the mount (blocks until there is one).
    fn next(stage: &std::fs::File) -> Value {
        let mut line = String::new();
        BufReader::new(stage)
            .read_line(&mut line)
            .expect("read stage");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("a JSON line: {line:?}"))
    }

    /// Answers the apply the mount hands it with `text`; the apply's reason.
    fn apply(&mut self, text: &str) -> String {
        use std::io::Write;
        let apply = SessionProducer::next(&self.stage);
        assert_eq!(apply["event"], "apply", "{apply}");
        let result = serde_json::json!({"ok": true, "text": text});
        self.stage
            .write_all(format!("{result}\n").as_bytes())
            .expect("write the result");
        apply["reason"].as_str().unwrap_or_default().to_string()
    }
}

/// Runs `command` to its end, but kills it (and fails) if it has not ended
/// within [`PATIENCE`]: a writer that got through to a device would wait
/// on the test's producer for ever.
fn run_bounded(command: &mut Command) -> Ran {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xdev");
    if wait_exit(&mut child, PATIENCE).is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{command:?} was still waiting (on a decision?) after {PATIENCE:?}");
    }
    finish(child)
}

/// The journal's records of anything but staging: decisions, or attempts.
fn decisions(daemon: &Daemon) -> Vec<Value> {
    daemon
        .log()
        .into_iter()
        .filter(|record| record["event"] != "staged")
        .collect()
}

/// The names the mount never lists under `pending/` or `sessions/`.
fn unlisted_names() -> Vec<String> {
    vec![
        "..".into(),
        ".".into(),
        "a/b".into(),
        String::new(),
        "s".repeat(256),
        "a\u{1}b".into(),
    ]
}

#[test]
fn a_session_or_id_the_mount_never_lists_is_refused_and_decides_nothing() {
    let daemon = Daemon::plain();
    let producer = SessionProducer::stage(&daemon, "other", "rm -rf build");
    for name in unlisted_names() {
        for device in ["resolve", "reject"] {
            let by_session =
                run_bounded(&mut daemon.xdev(&[device, "--session", &name, "meant for session"]));
            assert_eq!(
                by_session.code, 2,
                "{device} --session {name:?}: {by_session:?}"
            );
            assert_eq!(by_session.stdout, "");
            assert!(
                by_session.stderr.contains("for '--session <SESSION>'")
                    && by_session.stderr.contains("`xdev resolve --id <id>`")
                    && by_session.stderr.contains("pending/<id>/"),
                "{device} --session {name:?}: {}",
                by_session.stderr
            );
            let by_id =
                run_bounded(&mut daemon.xdev(&[device, "--id", &name, "meant for one item"]));
            assert_eq!(by_id.code, 2, "{device} --id {name:?}: {by_id:?}");
            assert!(
                by_id.stderr.contains("for '--id <ID>'")
                    && by_id.stderr.contains("no pending id is"),
                "{device} --id {name:?}: {}",
                by_id.stderr
            );
        }
    }
    assert_eq!(daemon.pending(), 1, "the preview is still pending");
    assert_eq!(
        decisions(&daemon),
        Vec::<Value>::new(),
        "nothing was decided"
    );
    assert_eq!(daemon.status_json()["head"]["id"], producer.id.as_str());
}

#[test]
fn a_mount_dir_that_leaves_a_session_through_dot_dot_is_refused() {
    let daemon = Daemon::plain();
    let mut producer = SessionProducer::stage(&daemon, "other", "rm -rf build");
    let root = daemon.dir.display().to_string();
    for dir in [
        format!("{root}/sessions/.."),
        format!("{root}/sessions/other/.."),
        format!("{root}/sessions/other/../.."),
    ] {
        let by_env = run_bounded(
            xdev_bin()
                .args(["resolve", "meant for one session"])
                .env("XDEV_DIR", &dir),
        );
        assert_eq!(by_env.code, 2, "XDEV_DIR={dir}: {by_env:?}");
        assert!(
            by_env.stderr.starts_with(&format!(
                "xdev: the mount directory {dir} goes through '..' below the xdev mount {root}"
            )),
            "{}",
            by_env.stderr
        );
        assert!(
            by_env.stderr.contains(&format!("--mount {root}")),
            "{}",
            by_env.stderr
        );
        let by_flag =
            run_bounded(xdev_bin().args(["reject", "--mount", &dir, "meant for one session"]));
        assert_eq!(by_flag.code, 2, "--mount {dir}: {by_flag:?}");
    }
    assert_eq!(daemon.pending(), 1);
    assert_eq!(
        decisions(&daemon),
        Vec::<Value>::new(),
        "nothing was decided"
    );

    // A session's own directory is a mount dir like any: it decides that
    // session's previews.
    let session_dir = format!("{root}/sessions/other");
    let mut writer = xdev_bin();
    writer
        .args(["resolve", "--mount", &session_dir, "ship it"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let writer = writer.spawn().expect("xdev resolve");
    assert_eq!(producer.apply("built anew"), "ship it");
    let written = finish(writer);
    assert_eq!(
        (written.code, written.stdout.as_str()),
        (0, "built anew\n"),
        "{}",
        written.stderr
    );
}

#[test]
fn a_session_with_an_unlisted_id_is_decided_by_id() {
    let daemon = Daemon::plain();
    let mut producer = SessionProducer::stage(&daemon, "..", "rm -rf build");
    let refused =
        run_bounded(&mut daemon.xdev(&["resolve", "--session", "..", "meant for session .."]));
    assert_eq!(refused.code, 2, "{refused:?}");
    let writer = daemon.spawn(&["resolve", "--id", &producer.id, "this one"]);
    assert_eq!(producer.apply("done"), "this one");
    let written = finish(writer);
    assert_eq!(
        (written.code, written.stdout.as_str()),
        (0, "done\n"),
        "{}",
        written.stderr
    );
}

#[test]
fn a_plan_slug_with_a_path_is_refused_before_any_mount() {
    for slug in ["../secrets", "a/b", "..", "-"] {
        let out = ran(xdev_bin()
            .args(["propose", slug])
            .env("XDEV_DIR", "/nonexistent/xdev")
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 2, "{slug}: {out:?}");
        assert!(
            out.stderr
                .starts_with(&format!("xdev: cannot propose '{slug}': Plan title must")),
            "{}",
            out.stderr
        );
    }
}

// ----- flags checked by their own rules ------------------------------------------

#[test]
fn a_deadline_over_seven_days_is_a_usage_error_without_a_mount() {
    let stage = ran(xdev_bin()
        .args(["stage", "--label", "x", "--deadline", "10d", "--", "true"])
        .env("XDEV_DIR", "/nonexistent/xdev")
        .output()
        .expect("xdev"));
    assert_eq!(stage.code, 2, "{stage:?}");
    assert!(
        stage.stderr.starts_with(
            "error: invalid value '10d' for '--deadline <DURATION>': a deadline is from 1ms to 7days"
        ),
        "{}",
        stage.stderr
    );
    assert!(!stage.stderr.contains("no xdev mount"), "{}", stage.stderr);
    for bad in ["0s", "soon"] {
        let out = ran(xdev_bin()
            .args(["stage", "--label", "x", "--deadline", bad, "--", "true"])
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 2, "--deadline {bad}: {out:?}");
    }
    // A hook's command line it cannot parse is a non-blocking error (1).
    let hook = ran(xdev_bin()
        .args(["hook", "--deadline", "10d"])
        .output()
        .expect("xdev"));
    assert_eq!(hook.code, 1, "{hook:?}");
    assert!(
        hook.stderr.contains("a deadline is from 1ms to 7days"),
        "{}",
        hook.stderr
    );
}

#[test]
fn a_reason_given_as_a_flag_gets_a_usage_that_requires_nothing() {
    for device in ["resolve", "reject"] {
        let out = ran(xdev_bin()
            .args([device, "--reason", "x"])
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains(&format!("the reason is TEXT, after the options or on stdin, as in `xdev {device} 'tests pass'`")),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains(&format!(
                "Usage: xdev {device} [--id <ID> | --session <SESSION>] [--mount <DIR>] [TEXT]..."
            )),
            "{}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("--session <SESSION> [TEXT]"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn wait_refuses_pids_that_name_no_process() {
    for pid in ["0", "-1", "abc", "99999999999"] {
        let out = ran(xdev_bin()
            .args(["wait", "/nonexistent/xdev", "--pid", pid, "--timeout", "1s"])
            .output()
            .expect("xdev"));
        assert_eq!(out.code, 2, "--pid {pid}: {out:?}");
        assert!(
            out.stderr
                .contains("for '--pid <PID>': a process id is a number from 1 to"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("exited"), "{}", out.stderr);
    }
}

#[test]
fn wait_says_which_process_serves_a_mount_it_did_not_wait_for() {
    let daemon = Daemon::plain();
    let server = daemon
        .child
        .as_ref()
        .map(|child| child.id())
        .expect("daemon");
    let dir = daemon.dir.display().to_string();
    let mut other = Command::new("sleep").arg("60").spawn().expect("sleep");
    let waited = daemon.run(&[
        "wait",
        &dir,
        "--pid",
        &other.id().to_string(),
        "--timeout",
        "200ms",
    ]);
    assert_eq!(waited.code, 1, "{waited:?}");
    assert_eq!(
        waited.stderr,
        format!(
            "xdev: {dir} is an xdev mount, but served by pid {server}, not by pid {} (which still runs)\n",
            other.id()
        )
    );
    let _ = other.kill();
    let _ = other.wait();
    // A process that has exited: at once, however long the timeout.
    let gone = daemon.run(&[
        "wait",
        &dir,
        "--pid",
        &other.id().to_string(),
        "--timeout",
        "1h",
    ]);
    assert_eq!(gone.code, 1, "{gone:?}");
    assert!(
        gone.stderr.contains(&format!(
            "served by pid {server}, not by pid {} (which has exited",
            other.id()
        )),
        "{}",
        gone.stderr
    );
    let own = daemon.run(&["wait", &dir, "--pid", &server.to_string()]);
    assert_eq!(own.code, 0, "{own:?}");
}

// ----- output into a closed pipe ----------------------------------------------------

/// `command` with its stdout a pipe whose read end is already closed: every
/// write to it fails with EPIPE.
fn with_closed_stdout(command: &mut Command) -> Ran {
    let (read_end, write_end) = nix::unistd::pipe().expect("pipe");
    drop(read_end);
    let output = command
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .expect("run xdev");
    ran(output)
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    for args in [
        &["completions", "zsh"][..],
        &["completions", "bash"],
        &["man"],
        &["--version"],
        &["--help"],
    ] {
        let out = with_closed_stdout(xdev_bin().args(args));
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "xdev {args:?}");
    }
    let daemon = Daemon::plain();
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["reject", "not needed"],
    ] {
        let out = with_closed_stdout(&mut daemon.xdev(args));
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "xdev {args:?}");
    }
    // The reject was made: a closed stdout loses only its printed result.
    assert!(
        daemon.read("last").starts_with("Nothing to reject"),
        "{}",
        daemon.read("last")
    );
}

// ----- completion and the man page ----------------------------------------------------

#[test]
fn completion_offers_no_file_names_for_ids_and_sessions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(tmp.path().join("a-file-not-an-id"), "").expect("file");
    let script = ran(xdev_bin()
        .args(["completions", "bash"])
        .output()
        .expect("xdev"));
    let script_path = tmp.path().join("xdev.bash");
    std::fs::write(&script_path, &script.stdout).expect("script");
    for (words, offered_files) in [
        ("xdev resolve --id ", false),
        ("xdev reject --session ", false),
        ("xdev resolve --mount ", true),
    ] {
        let complete = format!(
            ". '{}'; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; read -ra COMP_WORDS <<<\"$COMP_LINE\"; COMP_WORDS+=(''); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _xdev xdev '' \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script_path.display()
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&complete)
            .current_dir(tmp.path())
            .output()
            .expect("bash");
        let offered = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            offered.contains("a-file-not-an-id"),
            offered_files,
            "{words:?} offered {offered:?} ({})",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let fish = ran(xdev_bin()
        .args(["completions", "fish"])
        .output()
        .expect("xdev"));
    for line in fish
        .stdout
        .lines()
        .filter(|line| line.contains("-l id ") || line.contains("-l session "))
    {
        assert!(line.ends_with("-r -f"), "fish offers files: {line}");
    }
    let zsh = ran(xdev_bin()
        .args(["completions", "zsh"])
        .output()
        .expect("xdev"));
    for line in zsh
        .stdout
        .lines()
        .filter(|line| line.contains("--id=[") || line.contains("--session=["))
    {
        assert!(
            line.ends_with(":ID:' \\") || line.ends_with(":SESSION:' \\"),
            "zsh offers files: {line}"
        );
    }
}

#[test]
fn the_man_page_has_files_environment_and_exit_status() {
    let page = ran(xdev_bin().arg("man").output().expect("xdev")).stdout;
    let section = |name: &str| -> String {
        let start = page
            .find(&format!("{name}\n"))
            .unwrap_or_else(|| panic!("no {name}"));
        let rest = &page[start + name.len()..];
        rest[..rest.find("\n.SH ").unwrap_or(rest.len())].to_string()
    };
    let files = section(".SH FILES");
    for (path, _) in xdev::texts::MOUNT_FILES {
        assert!(
            files.contains(&format!("\\fIDIR\\fR/{}\n", path.replace('-', "\\-"))),
            "FILES lists {path}"
        );
    }
    let environment = section(".SH ENVIRONMENT");
    for variable in ["XDEV_DIR", "XDEV_ID", "XDEV_REASON", "XDEV_LOG"] {
        assert!(
            environment.contains(&format!(".TP\n{variable}\n")),
            "ENVIRONMENT has {variable}"
        );
    }
    // Every exit code docs/cli.md lists is in EXIT STATUS.
    let exit_status = section(".SH \"EXIT STATUS\"");
    let reference = include_str!("../docs/cli.md");
    let table = &reference[reference
        .find("| code | meaning |")
        .expect("the exit code table")..];
    let codes: Vec<&str> = table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('|').nth(1).map(str::trim))
        .collect();
    assert!(codes.len() >= 7, "{codes:?}");
    for code in codes {
        assert!(
            exit_status
                .lines()
                .any(|line| line == code || line.split(", ").any(|part| part == code)),
            "EXIT STATUS has {code}:\n{exit_status}"
        );
    }
}

#[test]
fn an_apply_failure_cut_to_its_stderr_tail_says_so_and_where_the_whole_is() {
    let daemon = Daemon::plain();
    // 30 lines on stderr, then a failure: the failure text keeps the last
    // 20, says that it is cut, and the whole went to the stager's stderr.
    let cmd = sh("for n in $(seq 1 30); do echo \"err $n\" >&2; done; exit 3");
    let mut stager = daemon.stage(&["--label", "noisy", "--deadline", "20s"], &refs(&cmd));
    let failed = daemon.run(&["resolve", "--id", &stager.id, "go"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    let last = daemon.read("last");
    let kept = last
        .strip_prefix("Apply failed: ")
        .and_then(|text| text.strip_prefix(xdev::texts::STDERR_TAIL_CUT))
        .unwrap_or_else(|| panic!("says that it is cut: {last}"));
    assert!(
        kept.starts_with("err 11\n") && kept.ends_with("err 30\n"),
        "{last}"
    );
    let rejected = daemon.run(&["reject", "--id", &stager.id, "enough"]);
    assert_eq!(rejected.code, 0, "{}", rejected.stderr);
    assert_eq!(stager.wait(), Some(3));
    let whole = stager.stderr();
    assert!(
        whole.contains("err 1\n") && whole.contains("err 30\n"),
        "{whole}"
    );
}
