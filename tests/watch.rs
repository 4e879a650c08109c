//! `xdev watch --exec` against a real mount: the real binary follows
//! `events` and runs a real shell script for each staged preview (and again
//! with `--after`), which appends what it was given to a file.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{eventually, stage_recording, wait_exit, wait_until_opened, Fixture, KillOnDrop};
use serde_json::Value;
use xdev::session::Origin;
use xdev::{apply_fn, StageOptions, ToolResult};

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// A command that appends one JSON line per run to `$OUT`: its environment
/// and its stdin.
const RECORD: &str = r#"python3 -c '
import json, os, sys
keys = ["XDEV_ID", "XDEV_LABEL", "XDEV_SESSION", "XDEV_TOOL", "XDEV_DIR", "XDEV_WAITED"]
run = {key: os.environ.get(key) for key in keys}
run["stdin"] = sys.stdin.read()
with open(os.environ["OUT"], "a") as out:
    out.write(json.dumps(run) + "\n")
'"#;

/// `xdev watch ARGS DIR`, with `OUT` set, once it has opened `events`.
fn spawn_watch(dir: &Path, out: &Path, args: &[&str]) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_xdev"))
        .arg("watch")
        .args(args)
        .arg(dir)
        .env("OUT", out)
        .env_remove("XDEV_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xdev watch");
    wait_until_opened(&dir.join("events"));
    KillOnDrop(child)
}

/// The runs `RECORD` wrote so far.
fn runs(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a run is JSON"))
        .collect()
}

fn stderr_of(watch: &mut KillOnDrop) -> String {
    let mut text = String::new();
    if let Some(mut stderr) = watch.0.stderr.take() {
        use std::io::Read;
        let _ = stderr.read_to_string(&mut text);
    }
    text
}

#[test]
fn each_staged_preview_runs_the_command_with_its_record_and_environment() {
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("runs");
    let mut watch = spawn_watch(&fx.dir, &out, &["--exec", RECORD]);

    let options = StageOptions {
        origin: Some(Origin {
            session_id: Some("agent-1".into()),
            tool_use_id: None,
        }),
        ..StageOptions::default()
    };
    let apply = apply_fn(|_, _| async { Ok(ToolResult::ok("done")) });
    let id = fx
        .session
        .stage("Bash: ls\nrm -rf /", "Bash", apply, None, options);
    let (second, _) = stage_recording(&fx.session, "edit b.rs");
    assert!(
        eventually(PATIENCE, || runs(&out).len() == 2),
        "{:?}",
        runs(&out)
    );
    let seen = runs(&out);
    assert_eq!(seen[0]["XDEV_ID"], id.as_str());
    assert_eq!(seen[0]["XDEV_LABEL"], "Bash: ls\\nrm -rf /", "one line");
    assert_eq!(seen[0]["XDEV_SESSION"], "agent-1");
    assert_eq!(seen[0]["XDEV_TOOL"], "Bash");
    assert_eq!(seen[0]["XDEV_DIR"], fx.dir.display().to_string().as_str());
    assert_eq!(seen[0]["XDEV_WAITED"], Value::Null);
    let record: Value =
        serde_json::from_str(seen[0]["stdin"].as_str().expect("stdin")).expect("one JSON line");
    assert_eq!(record["event"], "staged");
    assert_eq!(record["id"], id.as_str());
    assert_eq!(seen[1]["XDEV_ID"], second.as_str());
    assert_eq!(seen[1]["XDEV_SESSION"], "");

    // Decisions run nothing.
    let item = format!("pending/{second}/reject");
    assert!(common::write_once(&fx.path(&item), b"no").is_ok());
    // SIGTERM ends it with 0.
    let pid = nix::unistd::Pid::from_raw(watch.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(wait_exit(&mut watch.0, PATIENCE), Some(0));
    assert_eq!(runs(&out).len(), 2, "a decision runs no command");
}

#[test]
fn after_runs_again_once_for_a_preview_still_pending_and_a_failing_command_is_survived() {
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("runs");
    // The first run of each preview fails; watching goes on.
    let command = format!("{RECORD}; test -n \"$XDEV_WAITED\"");
    let mut watch = spawn_watch(&fx.dir, &out, &["--exec", &command, "--after", "2s"]);

    // Staged first, so due first: by the time the other's second run
    // shows, this one's time has come and gone.
    let (decided, _) = stage_recording(&fx.session, "edit b.rs");
    let (waits, _) = stage_recording(&fx.session, "edit a.rs");
    // Decided long before its time comes: no second run.
    let item = format!("pending/{decided}/reject");
    assert!(common::write_once(&fx.path(&item), b"no").is_ok());
    let waited = |seen: &[Value]| {
        seen.iter()
            .filter(|run| !run["XDEV_WAITED"].is_null())
            .cloned()
            .collect::<Vec<Value>>()
    };
    assert!(
        eventually(PATIENCE, || !waited(&runs(&out)).is_empty()),
        "{:?}",
        runs(&out)
    );
    let seen = runs(&out);
    let again = waited(&seen);
    assert_eq!(again.len(), 1, "{seen:?}");
    assert_eq!(again[0]["XDEV_ID"], waits.as_str());
    assert_eq!(again[0]["XDEV_WAITED"], "2s");
    assert_eq!(seen.len(), 3, "{seen:?}");

    // The mount goes away: watch says so and exits 0.
    drop(fx);
    assert_eq!(wait_exit(&mut watch.0, PATIENCE), Some(0));
    let stderr = stderr_of(&mut watch);
    assert!(stderr.contains("went away; watch ends"), "{stderr}");
    assert!(stderr.contains("the watch command failed"), "{stderr}");
}

#[test]
fn after_covers_the_previews_already_pending_when_watching_starts() {
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("runs");
    let (waits, _) = stage_recording(&fx.session, "edit a.rs");
    let (decided, _) = stage_recording(&fx.session, "edit b.rs");
    let _watch = spawn_watch(&fx.dir, &out, &["--exec", RECORD, "--after", "2s"]);
    // Decided long before its time comes: no run.
    let item = format!("pending/{decided}/reject");
    assert!(common::write_once(&fx.path(&item), b"no").is_ok());
    assert!(
        eventually(PATIENCE, || !runs(&out).is_empty()),
        "no run for a preview pending before watch started"
    );
    let seen = runs(&out);
    assert_eq!(seen.len(), 1, "one run, of --after only: {seen:?}");
    assert_eq!(seen[0]["XDEV_ID"], waits.as_str());
    assert_eq!(seen[0]["XDEV_WAITED"], "2s");
    assert_eq!(seen[0]["XDEV_LABEL"], "edit a.rs");
    let record: Value =
        serde_json::from_str(seen[0]["stdin"].as_str().expect("stdin")).expect("one JSON line");
    assert_eq!(record["event"], "staged", "its staged record from log");
    assert_eq!(record["id"], waits.as_str());
}

#[test]
fn a_directory_that_is_no_mount_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_xdev"))
        .args(["watch", "--exec", "true"])
        .arg(tmp.path())
        .output()
        .expect("run xdev watch");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no xdev mount at"));
}
