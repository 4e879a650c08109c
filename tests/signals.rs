//! Signals are ordinary: a writer waiting on a device that gets a signal it
//! handles (a background job's SIGCHLD, SIGWINCH, a timer's SIGALRM) is
//! told the real outcome, once. `EINTR` comes only when nothing was
//! decided, or when a signal stops the writer (then the decision goes on,
//! the journal says the writer left, and a retry on the same descriptor
//! joins it). Every writer here is a real process.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use xdev::PlanHandlerKind;

/// How long the slow applies here take: long enough for a signal to arrive
/// while the writer waits.
const SLOW_APPLY: Duration = Duration::from_millis(1500);

/// Builds `tests/fixtures/retry_write.c` into `dir` with the system's C
/// compiler.
fn retry_write(dir: &std::path::Path) -> PathBuf {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/retry_write.c");
    let binary = dir.join("retry_write");
    let built = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&binary)
        .arg(source)
        .output()
        .expect("cc is installed (scripts/setup.sh)");
    assert!(built.status.success(), "{built:?}");
    binary
}

/// The journal's records of how preview `id` was decided: (event, outcome,
/// errno); its staging and notes of ignored bytes left out.
fn about(fx: &Fixture, id: &str) -> Vec<(String, String, String)> {
    let field = |record: &serde_json::Value, key: &str| {
        record[key].as_str().unwrap_or_default().to_string()
    };
    fx.log_records()
        .iter()
        .filter(|record| record["id"] == id)
        .filter(|record| record["event"] != "staged" && record["event"] != "ignored")
        .map(|record| {
            (
                field(record, "event"),
                field(record, "outcome"),
                field(record, "errno"),
            )
        })
        .collect()
}

fn record(event: &str, outcome: &str, errno: &str) -> (String, String, String) {
    (event.into(), outcome.into(), errno.into())
}

/// Waits until the journal holds `wanted` about `id`, and returns it all.
fn journal_until(
    fx: &Fixture,
    id: &str,
    wanted: &(String, String, String),
) -> Vec<(String, String, String)> {
    let found = eventually(Duration::from_secs(10), || about(fx, id).contains(wanted));
    let records = about(fx, id);
    assert!(found, "no {wanted:?} about {id}: {records:?}");
    records
}

fn stdout_of(child: Child) -> String {
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_bash_echo_whose_background_job_ends_during_the_apply_succeeds_once() {
    let fx = Fixture::new();
    let (id, calls) = stage_slow(&fx.session, "slow", SLOW_APPLY);
    let out = fx.bash("sleep 0.3 & echo go > \"$D/resolve\" && echo applied; wait");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "applied\n");
    assert_eq!(calls.applied(), 1);
    assert_eq!(about(&fx, &id), [record("resolve", "ok", "")]);
}

#[test]
fn a_c_writer_with_a_restarting_alarm_handler_writes_once_without_eintr() {
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("temp dir");
    let writer = retry_write(tmp.path());
    let (id, calls) = stage_slow(&fx.session, "slow", SLOW_APPLY);
    let out = Command::new(&writer)
        .arg(fx.path("resolve"))
        .arg("go")
        .arg("alarm")
        .output()
        .expect("run the writer");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ready\nwrote 2 eintr 0\n"
    );
    assert_eq!(calls.applied(), 1);
    assert_eq!(about(&fx, &id), [record("resolve", "ok", "")]);
}

/// Python retries EINTR by itself; with any of these handlers its write
/// must return once, with the byte count.
#[test]
fn python_writers_handling_sigchld_sigwinch_and_sigalrm_write_once() {
    let arrange = [
        ("SIGCHLD", "subprocess.Popen(['sleep', '0.3'])"),
        (
            "SIGWINCH",
            "subprocess.Popen(['sh', '-c', 'sleep 0.3; kill -WINCH %d' % os.getpid()])",
        ),
        ("SIGALRM", "signal.setitimer(signal.ITIMER_REAL, 0.3)"),
    ];
    for (signal, arrange) in arrange {
        let fx = Fixture::new();
        let (id, calls) = stage_slow(&fx.session, "slow", SLOW_APPLY);
        let code = format!(
            r#"
import os, signal, subprocess
seen = []
signal.signal(signal.{signal}, lambda *_: seen.append(1))
fd = os.open(os.environ["D"] + "/resolve", os.O_WRONLY)
{arrange}
print(os.write(fd, b"go"), len(seen) > 0)
"#
        );
        let out = fx.python(&code);
        assert!(out.status.success(), "{signal}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "2 True\n", "{signal}");
        assert_eq!(calls.applied(), 1, "{signal}");
        assert_eq!(about(&fx, &id), [record("resolve", "ok", "")], "{signal}");
    }
}

#[test]
fn a_rename_onto_resolve_is_not_failed_by_a_handled_signal() {
    let fx = Fixture::new();
    let (id, calls) = stage_slow(&fx.session, "slow", SLOW_APPLY);
    let out = fx.python(
        r#"
import os, signal, subprocess
signal.signal(signal.SIGCHLD, lambda *_: None)
draft = os.environ["D"] + "/draft"
with open(draft, "w") as f:
    f.write("go")
subprocess.Popen(["sleep", "0.3"])
os.rename(draft, os.environ["D"] + "/resolve")
print("renamed")
"#,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "renamed\n");
    assert_eq!(calls.applied(), 1);
    assert_eq!(about(&fx, &id), [record("resolve", "ok", "")]);
}

/// `timeout -s INT` ends a writer whose apply has started: the writer goes
/// at once, the apply stands, once, and the journal says both.
#[test]
fn timeout_int_after_the_apply_started_lets_the_writer_go_and_the_apply_stand() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (id, calls, gate) = stage_gated(&fx.session, "slow");
    let mut timeout = Command::new("timeout")
        .args(["-s", "INT", "120", "sh", "-c", "echo go > \"$D/resolve\""])
        .env("D", &fx.dir)
        .spawn()
        .expect("timeout");
    fx.wait_until_deciding(&id);
    // timeout's own timer is SIGALRM: fire it now rather than after a
    // guess of how long the writer takes to start.
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(timeout.id() as i32, libc::SIGALRM) };
    let status = wait_exit(&mut timeout, Duration::from_secs(10));
    assert_eq!(
        status,
        Some(124),
        "timeout reports that it ended the writer"
    );
    assert_eq!(calls.applied(), 0, "the apply is still running");
    open_gate(&fx.session, &id, &calls, &gate);
    let records = journal_until(&fx, &id, &record("resolve", "ok", ""));
    assert_eq!(
        records,
        [
            record("writer-left", "left", "EINTR"),
            record("resolve", "ok", "")
        ]
    );
}

/// A program that handles SIGINT, and retries its write after the EINTR,
/// joins the decision still under way and gets its real outcome.
#[test]
fn a_retry_after_a_handled_sigint_joins_the_decision_under_way() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("temp dir");
    let writer = retry_write(tmp.path());
    let (id, calls, gate) = stage_gated(&fx.session, "slow");
    let mut child = Command::new(&writer)
        .arg(fx.path("resolve"))
        .arg("go")
        .arg("int")
        .stdout(Stdio::piped())
        .spawn()
        .expect("writer");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    assert_eq!(next_line(&mut lines), "ready\n");
    fx.wait_until_deciding(&id);
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    journal_until(&fx, &id, &record("writer-left", "left", "EINTR"));
    open_gate(&fx.session, &id, &calls, &gate);
    let mut rest = String::new();
    lines.read_line(&mut rest).expect("the writer's result");
    assert_eq!(rest, "wrote 2 eintr 1\n");
    assert_eq!(stdout_of(child), "");
    assert_eq!(calls.applied(), 1);
    assert_eq!(
        journal_until(&fx, &id, &record("resolve", "ok", "")),
        [
            record("writer-left", "left", "EINTR"),
            record("resolve", "ok", "")
        ]
    );
}

/// A proposal waiting for its review is withdrawn when its writer is
/// stopped: `EINTR` is true, and the retry (Python makes it by itself)
/// proposes again, and gets the review's real answer.
#[test]
fn a_withdrawn_proposal_is_proposed_again_by_the_retry() {
    let _quiet = quiet();
    let (fx, desk, plans) = Fixture::with_plan(PlanHandlerKind::Review);
    desk.enter();
    std::fs::write(plans.path().join("auth-plan.md"), "# plan").expect("plan file");
    let child = fx
        .command(
            "python3",
            r#"
import os, signal
signal.signal(signal.SIGINT, lambda *_: None)
fd = os.open(os.environ["D"] + "/propose", os.O_WRONLY)
print(os.write(fd, b"auth"))
"#,
        )
        .stdout(Stdio::piped())
        .spawn()
        .expect("proposer");
    let under_review = || fx.read("plan/status").contains("auth-plan.md");
    assert!(eventually(Duration::from_secs(10), under_review));
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let withdrawn = |records: Vec<serde_json::Value>| {
        records
            .iter()
            .any(|record| record["event"] == "propose" && record["errno"] == "EINTR")
    };
    assert!(eventually(Duration::from_secs(10), || withdrawn(
        fx.log_records()
    )));
    assert!(eventually(Duration::from_secs(10), under_review));
    assert_eq!(
        write_once(&fx.path("plan/ctl"), b"approve looks good"),
        Ok(18)
    );
    let out = child.wait_with_output().expect("proposer");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4\n");
    let proposals: Vec<String> = fx
        .log_records()
        .iter()
        .filter(|record| record["event"] == "propose")
        .map(|record| record["errno"].as_str().unwrap_or("ok").to_string())
        .collect();
    assert_eq!(proposals, ["EINTR", "ok"]);
}
