//! `xdev review`'s reading and writing against a real mount (an `xdev
//! mount` daemon): previews staged through `stage` are seen grouped by
//! session, head first; `events` brings what is staged and decided
//! afterwards; a decision written by id decides that preview (not the
//! head) and the journal names it, its reason and this process.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, require_fuse, KillOnDrop};
use serde_json::{json, Value};
use xdev::client::{plan_control, write_device, PreviewRequest, StagedPreview};
use xdev::plan_command::PlanCommand;
use xdev::review::app::{Decider, DecisionRequest, Msg, RowKey, SourceEvent};
use xdev::review::{decide, source};
use xdev::stage_protocol::ProducerMessage;

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// An `xdev mount` daemon on a fresh directory, unmounted when dropped.
struct Daemon {
    dir: PathBuf,
    _child: KillOnDrop,
    _tmp: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        Daemon::start_with(|_| Vec::new())
    }

    /// With the extra arguments `args` makes from the temp dir.
    fn start_with(args: impl FnOnce(&Path) -> Vec<std::ffi::OsString>) -> Daemon {
        require_fuse();
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("xdev");
        let mut child = Command::new(env!("CARGO_BIN_EXE_xdev"))
            .arg("mount")
            .arg(&dir)
            .args(args(tmp.path()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn xdev mount");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        assert!(line.starts_with("xdev: mounted"), "{line}");
        Daemon {
            dir,
            _child: KillOnDrop(child),
            _tmp: tmp,
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SIGTERM so that it unmounts (KillOnDrop's SIGKILL would not).
        let _ = Command::new("kill")
            .arg(self._child.0.id().to_string())
            .status();
        let _ = eventually(PATIENCE, || !common::is_mounted(&self.dir));
    }
}

fn stage(
    dir: &Path,
    label: &str,
    tool: &str,
    session: Option<&str>,
    detail: Value,
) -> StagedPreview {
    let request = PreviewRequest {
        label: label.to_string(),
        source_tool: Some(tool.to_string()),
        detail: Some(detail),
        session_id: session.map(str::to_string),
        ..PreviewRequest::default()
    };
    StagedPreview::stage(dir, &request).expect("stage through the mount")
}

/// Answers the mount's decision for `staged` on a thread: applies (or
/// takes the discard) and reports; returns what the mount sent.
fn answer(mut staged: StagedPreview) -> std::thread::JoinHandle<ProducerMessage> {
    std::thread::spawn(move || {
        let decision = staged.next_decision().expect("a decision");
        if matches!(decision, ProducerMessage::Apply { .. }) {
            staged
                .report(true, "applied by the producer")
                .expect("report");
        }
        decision
    })
}

/// The next source event that `want` accepts, skipping others.
fn next_event(inbox: &Receiver<Msg>, want: impl Fn(&SourceEvent) -> bool) -> SourceEvent {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match inbox.recv_timeout(left) {
            Ok(Msg::Source(event)) if want(&event) => return event,
            Ok(_) => {}
            Err(err) => panic!("no such event within {PATIENCE:?}: {err}"),
        }
    }
}

#[test]
fn the_source_groups_previews_by_session_head_first_and_a_decision_by_id_is_journaled() {
    let daemon = Daemon::start();
    let dir = &daemon.dir;
    let me = std::process::id();
    let root = stage(dir, "fix typo", "external", None, json!({"note": "docs"}));
    let one_old = stage(
        dir,
        "Edit: a.rs",
        "Edit",
        Some("s-one"),
        json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"}),
    );
    // Staged with the agent's cwd (as `xdev hook` stages it), which the
    // tool input does not name.
    let one_new = StagedPreview::stage(
        dir,
        &PreviewRequest {
            label: "Bash: cargo test".into(),
            source_tool: Some("Bash".into()),
            detail: Some(json!({"command": "cargo test"})),
            session_id: Some("s-one".into()),
            cwd: Some("/work/app".into()),
            ..PreviewRequest::default()
        },
    )
    .expect("stage through the mount");
    let two = stage(
        dir,
        "Write: b.rs (1 lines)",
        "Write",
        Some("s-two"),
        json!({"file_path": "b.rs", "content": "b\n"}),
    );

    let reading = source::read_mount(dir, me).expect("read the mount");
    let SourceEvent::Snapshot { items, plan, .. } = reading.snapshot else {
        panic!("a snapshot first");
    };
    assert_eq!(plan, None);
    let seen: Vec<(String, Option<String>, String)> = items
        .iter()
        .map(|item| {
            (
                item.id.to_string(),
                item.session.as_deref().map(str::to_string),
                item.tool.clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                two.id().to_string(),
                Some("s-two".to_string()),
                "Write".to_string()
            ),
            (
                one_new.id().to_string(),
                Some("s-one".to_string()),
                "Bash".to_string()
            ),
            (
                one_old.id().to_string(),
                Some("s-one".to_string()),
                "Edit".to_string()
            ),
            (root.id().to_string(), None, "external".to_string()),
        ],
        "head first, each with its session"
    );
    assert!(
        items.iter().all(|item| item.staged_at.is_some()),
        "aged from the journal"
    );

    // The detail pane's view comes from the item's own files.
    let view = source::load_detail(dir, one_new.id(), "Bash: cargo test", "Bash");
    assert_eq!(view.body, "cargo test");
    assert_eq!(view.meta, ["cwd: /work/app"], "from pending/<id>/cwd");
    // A Write whose diff is a refusal: the refusal, then what it writes.
    let refused = StagedPreview::stage(
        dir,
        &PreviewRequest {
            label: "Write: link.txt (1 line)".into(),
            source_tool: Some("Write".into()),
            detail: Some(json!({"file_path": "/work/app/link.txt", "content": "new text\n"})),
            diff: Some("No diff: link.txt is not read: it is a symbolic link.\n".into()),
            ..PreviewRequest::default()
        },
    )
    .expect("stage through the mount");
    let view = source::load_detail(dir, refused.id(), "Write: link.txt (1 line)", "Write");
    assert_eq!(
        (view.meta.as_slice(), view.body.as_str()),
        (
            [
                "file: /work/app/link.txt".to_string(),
                "No diff: link.txt is not read: it is a symbolic link.".to_string(),
                xdev::texts::REVIEW_WRITE_CONTENT.to_string(),
            ]
            .as_slice(),
            "new text\n"
        )
    );
    let refused_id = refused.id().to_string();
    let refused_producer = answer(refused);
    let outcome = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Item(Arc::from(refused_id.as_str())),
            approve: false,
            reason: "seen".into(),
        },
    );
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    refused_producer.join().expect("producer");

    // Following `events`: a preview staged now is seen, and a decision by
    // id leaves the list with this process named as its decider.
    let (messages, inbox) = mpsc::channel();
    let follower = source::follow(dir, me, messages).expect("follow");
    assert!(matches!(
        next_event(&inbox, |_| true),
        SourceEvent::Snapshot { .. }
    ));
    let late = stage(
        dir,
        "Bash: ls",
        "Bash",
        Some("s-two"),
        json!({"command": "ls"}),
    );
    let late_id = late.id().to_string();
    let staged = next_event(&inbox, |event| matches!(event, SourceEvent::Staged(_)));
    let SourceEvent::Staged(item) = staged else {
        unreachable!()
    };
    assert_eq!(
        (item.id.to_string(), item.session.as_deref()),
        (late_id.clone(), Some("s-two"))
    );

    // Decide the older preview of s-one by its id: not its session's head.
    let old_id = one_old.id().to_string();
    let producer = answer(one_old);
    let outcome = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Item(Arc::from(old_id.as_str())),
            approve: true,
            reason: "reviewed the edit".into(),
        },
    );
    assert_eq!(outcome.result, Ok("applied by the producer".to_string()));
    assert!(
        matches!(producer.join().expect("producer"), ProducerMessage::Apply { reason, .. } if reason == "reviewed the edit")
    );
    let SourceEvent::Decided(entry) =
        next_event(&inbox, |event| matches!(event, SourceEvent::Decided(_)))
    else {
        unreachable!()
    };
    assert_eq!(
        (entry.verdict.as_str(), &entry.decider),
        ("applied", &Decider::ThisReview)
    );
    // The trail's entry comes first, then the item leaves.
    let gone = next_event(&inbox, |event| matches!(event, SourceEvent::Gone(_)));
    assert_eq!(gone, SourceEvent::Gone(old_id.clone()));

    // A rejection carries its reason to the producer and the journal.
    let late_producer = answer(late);
    let outcome = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Item(Arc::from(late_id.as_str())),
            approve: false,
            reason: "not in this session".into(),
        },
    );
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert!(
        matches!(late_producer.join().expect("producer"), ProducerMessage::Discard { reason } if reason == "not in this session")
    );

    let log = std::fs::read_to_string(dir.join("log")).expect("log");
    let records: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    let resolve = records
        .iter()
        .find(|r| r["event"] == format!("pending/{old_id}/resolve"))
        .expect("the decision's record");
    assert_eq!(resolve["id"], old_id.as_str());
    assert_eq!(resolve["reason"], "reviewed the edit");
    assert_eq!(resolve["outcome"], "ok");
    assert_eq!(resolve["pid"], me);
    let reject = records
        .iter()
        .find(|r| r["event"] == format!("pending/{late_id}/reject"))
        .expect("the rejection's record");
    assert_eq!(reject["reason"], "not in this session");
    let pending: Vec<String> = std::fs::read_dir(dir.join("pending"))
        .expect("pending")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        pending.contains(&one_new.id().to_string()),
        "the session's head was not decided"
    );
    assert_eq!(pending.len(), 3);

    // A decision of an item already gone fails with the mount's own errno.
    let again = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Item(Arc::from(old_id.as_str())),
            approve: true,
            reason: "again".into(),
        },
    );
    let error = again.result.expect_err("gone");
    assert!(error.starts_with("ENOENT: "), "{error}");
    drop(follower);
    drop((root, one_new, two));
}

#[test]
fn a_plan_under_review_is_read_and_approved_or_sent_back_as_xdev_plan_does() {
    let daemon = Daemon::start_with(|tmp| {
        let plans = tmp.join("plans");
        std::fs::create_dir(&plans).expect("plan dir");
        std::fs::write(
            plans.join("auth-plan.md"),
            "# Auth\n\n1. Add a login endpoint\n",
        )
        .expect("plan");
        [
            "--plan-dir".into(),
            plans.into_os_string(),
            "--plan-handler".into(),
            "async".into(),
        ]
        .to_vec()
    });
    let dir = &daemon.dir;
    assert_eq!(source::read_plan(dir), (None, false));
    let propose = || {
        plan_control(dir, &PlanCommand::Enter).expect("plan mode");
        write_device(&dir.join("propose"), b"auth").expect("propose")
    };
    assert_eq!(propose(), "Plan ready for review.");
    let (plan, plan_mode) = source::read_plan(dir);
    let plan = plan.expect("a plan under review");
    assert!(plan_mode);
    assert_eq!(plan.slug, "auth");
    assert_eq!(
        plan.markdown.as_deref(),
        Ok("# Auth\n\n1. Add a login endpoint\n")
    );

    let refine = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Plan,
            approve: false,
            reason: "split step 1".into(),
        },
    );
    let answer = refine.result.expect("refined");
    assert!(answer.contains("split step 1"), "{answer}");
    assert_eq!(
        source::read_plan(dir).0,
        None,
        "decided: no longer under review"
    );

    assert_eq!(propose(), "Plan ready for review.");
    let approve = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Plan,
            approve: true,
            reason: "ship it".into(),
        },
    );
    let answer = approve.result.expect("approved");
    assert!(answer.starts_with("Plan approved"), "{answer}");
    assert!(answer.contains("ship it"), "{answer}");
    let (plan, plan_mode) = source::read_plan(dir);
    assert_eq!(
        (plan, plan_mode),
        (None, false),
        "an approval ends plan mode"
    );

    // Nothing under review: the desk's own refusal, with its errno.
    let again = decide::decide(
        dir,
        &DecisionRequest {
            target: RowKey::Plan,
            approve: true,
            reason: String::new(),
        },
    );
    let error = again.result.expect_err("nothing to approve");
    assert!(error.starts_with('E'), "{error}");
}
