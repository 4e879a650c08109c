//! The plan review desk (plan mode, yolo / review / async handlers) through
//! the public API. No FUSE: every `propose` goes through
//! `dispatch_resolution_device`, exactly as the mount does.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout, Instant};
use xdev::dispatch::{dispatch_resolution_device, Cancel};
use xdev::plan_desk::PlanUnderReview;
use xdev::session::{PlanApprovalDetails, PlanOutcome, PlanProposal, PlanTitle};
use xdev::{Decision, Device, Dispatch, Error, PlanDesk, PlanHandlerKind, Session};

#[path = "common/expected_texts.rs"]
mod expected_texts;
use expected_texts::{expected, expected_text};

/// How long a test waits for something that should happen at once.
const PROMPTLY: Duration = Duration::from_secs(5);
/// How long a test watches for something that must not happen.
const A_WHILE: Duration = Duration::from_millis(100);

/// A plan directory holding these plan files.
fn plan_dir(files: &[&str]) -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in files {
        std::fs::write(dir.path().join(name), "# plan\n").expect("write plan");
    }
    dir
}

/// Writes a plan file whose mtime is `age_secs` in the past.
fn plan_aged(dir: &Path, name: &str, age_secs: u64) {
    let file = File::create(dir.join(name)).expect("create plan");
    file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
        .expect("set mtime");
}

/// A desk of this kind on the session, over the plan directory, not yet
/// entered.
fn new_desk(session: &Session, dir: &TempDir, kind: PlanHandlerKind) -> PlanDesk {
    PlanDesk::new(session.clone(), dir.path().to_path_buf(), kind, None)
}

/// The mount point the sessions of these tests name in their texts.
const DIR: &str = "/mnt/x";

/// A session whose texts name [`DIR`], and a desk in plan mode.
fn desk(dir: &TempDir, kind: PlanHandlerKind, execute_with: Option<&str>) -> (Session, PlanDesk) {
    let session = Session::new();
    session.set_mount_dir(DIR);
    let desk = PlanDesk::new(
        session.clone(),
        dir.path().to_path_buf(),
        kind,
        execute_with.map(str::to_string),
    );
    desk.enter();
    assert!(session.plan_mode());
    (session, desk)
}

/// A plan directory holding `auth-plan.md`, and a desk of this kind in plan
/// mode on it.
fn auth_desk(kind: PlanHandlerKind) -> (TempDir, Session, PlanDesk) {
    let dir = plan_dir(&["auth-plan.md"]);
    let (session, desk) = desk(&dir, kind, None);
    (dir, session, desk)
}

fn path_of(dir: &TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

async fn propose(session: &Session, body: &str) -> Decision {
    timeout(
        PROMPTLY,
        dispatch_resolution_device(session, Device::Propose, body),
    )
    .await
    .expect("propose answers at once")
}

/// A `propose` write that waits (in its own task) for the reviewer.
fn propose_in_background(session: &Session, body: &str) -> JoinHandle<Decision> {
    let session = session.clone();
    let body = body.to_string();
    tokio::spawn(async move { dispatch_resolution_device(&session, Device::Propose, &body).await })
}

/// A `propose` of `title` written in the background, once the desk has it
/// under review.
async fn waiting_for_review(
    session: &Session,
    desk: &PlanDesk,
    title: &str,
) -> JoinHandle<Decision> {
    let write = propose_in_background(session, title);
    under_review(desk).await;
    write
}

/// A proposal of `auth` is taken under review again and can be approved
/// (the earlier review is really gone).
async fn a_new_proposal_is_accepted(session: &Session, desk: &PlanDesk) {
    let write = waiting_for_review(session, desk, "auth").await;
    assert!(desk.approve(None).is_ok());
    assert!(finished(write).await.is_ok());
}

/// Waits until the desk shows a plan under review.
async fn under_review(desk: &PlanDesk) -> PlanUnderReview {
    let deadline = Instant::now() + PROMPTLY;
    loop {
        if let Some(review) = desk.status().under_review {
            return review;
        }
        assert!(Instant::now() < deadline, "no plan came under review");
        sleep(Duration::from_millis(2)).await;
    }
}

async fn finished(write: JoinHandle<Decision>) -> Decision {
    timeout(PROMPTLY, write)
        .await
        .expect("the propose write returns")
        .expect("the propose task did not panic")
}

fn approved_text(dir: &TempDir, name: &str) -> String {
    expected_text(
        "plan-approved-review",
        DIR,
        &[("path", &path_of(dir, name))],
    )
}

fn not_in_plan_mode() -> String {
    expected("no-plan", DIR)
}

/// What the review handler answers a refine of the `auth` plan with.
fn refine_text(feedback: &str) -> String {
    let text = expected_text("plan-refine", DIR, &[("slug", "auth")]);
    format!("{text}\n{feedback}")
}

/// What the yolo handler answers when `target` implements the plan.
fn yolo_text(target: &str) -> String {
    expected_text("plan-approved-yolo", DIR, &[("target", target)])
}

// ----- yolo -----------------------------------------------------------------

#[tokio::test]
async fn yolo_approves_at_once_and_leaves_plan_mode() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Yolo);

    let answer = propose(&session, "auth\n").await;
    let text = yolo_text("the current agent");
    assert_eq!((answer.text(), answer.errno()), (text.as_str(), 0));
    assert!(!session.plan_mode());
    let status = desk.status();
    assert!(!status.plan_mode);
    assert_eq!(status.under_review, None);
    assert_eq!(status.last_decision.as_deref(), Some(text.as_str()));

    let again = propose(&session, "auth").await;
    assert_eq!(again.errno(), libc::EPERM);
    assert_eq!(again.text(), not_in_plan_mode());

    // The same plan approved again reads the same: the count tells them apart.
    assert_eq!(desk.status().decisions, 1);
    desk.enter();
    assert!(propose(&session, "auth").await.is_ok());
    let status = desk.status();
    assert_eq!(
        (status.last_decision.as_deref(), status.decisions),
        (Some(text.as_str()), 2)
    );
}

#[tokio::test]
async fn yolo_names_the_executor() {
    let dir = plan_dir(&["auth-plan.md"]);
    let (session, _desk) = desk(&dir, PlanHandlerKind::Yolo, Some("codex"));
    let answer = propose(&session, "auth-plan.md").await;
    assert_eq!(answer.text(), yolo_text("codex"));
    assert!(answer.is_ok());
}

#[tokio::test]
async fn yolo_still_needs_the_plan_file() {
    let dir = plan_dir(&[]);
    let (session, desk) = desk(&dir, PlanHandlerKind::Yolo, None);
    let answer = propose(&session, "auth").await;
    assert_eq!(answer.errno(), libc::ENOENT);
    assert!(session.plan_mode(), "a refused proposal keeps plan mode on");
    assert_eq!(desk.status().last_decision, None);
}

// ----- review ---------------------------------------------------------------

#[tokio::test]
async fn review_blocks_the_write_until_approved() {
    let (dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    let write = waiting_for_review(&session, &desk, "auth").await;
    assert_eq!(
        desk.status().under_review,
        Some(PlanUnderReview {
            slug: "auth".into(),
            path: path_of(&dir, "auth-plan.md"),
        })
    );
    sleep(A_WHILE).await;
    assert!(!write.is_finished(), "the write waits for the reviewer");
    assert!(session.plan_mode());

    // The reviewer decides from another task.
    let reviewer = desk.clone();
    let decided = tokio::spawn(async move { reviewer.approve(None) })
        .await
        .expect("reviewer task");
    let text = approved_text(&dir, "auth-plan.md");
    assert_eq!(decided, Ok(text.clone()));

    let answer = finished(write).await;
    assert_eq!((answer.text(), answer.errno()), (text.as_str(), 0));
    assert!(!session.plan_mode());
    let status = desk.status();
    assert_eq!(status.under_review, None);
    assert_eq!(status.last_decision, Some(text));
}

#[tokio::test]
async fn review_approval_carries_the_feedback() {
    let (dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    let write = waiting_for_review(&session, &desk, "auth").await;
    let decided = desk.approve(Some("  mind the migration \n"));
    let text = format!(
        "{}\n\nReviewer feedback: mind the migration",
        approved_text(&dir, "auth-plan.md")
    );
    assert_eq!(decided, Ok(text.clone()));
    assert_eq!(finished(write).await.text(), text);
    assert_eq!(desk.status().last_decision, Some(text));
    assert!(!session.plan_mode());
}

#[tokio::test]
async fn review_refine_keeps_plan_mode_and_gives_the_feedback() {
    let (dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    let write = waiting_for_review(&session, &desk, "auth plan").await;
    let decided = desk.refine("Split step 2 into two steps.");
    let text = refine_text("Split step 2 into two steps.");
    assert_eq!(decided.as_deref(), Ok(text.as_str()));

    let answer = finished(write).await;
    assert_eq!((answer.text(), answer.errno()), (text.as_str(), 0));
    assert!(session.plan_mode(), "plan mode stays on after a refine");
    let status = desk.status();
    assert!(status.plan_mode);
    assert_eq!(status.under_review, None);
    assert_eq!(status.last_decision.as_deref(), Some(text.as_str()));

    // The next proposal is accepted and decided.
    let write = waiting_for_review(&session, &desk, "auth").await;
    assert!(desk.approve(None).is_ok());
    assert_eq!(
        finished(write).await.text(),
        approved_text(&dir, "auth-plan.md")
    );
}

#[tokio::test]
async fn review_second_propose_is_busy() {
    let dir = plan_dir(&["auth-plan.md", "db-plan.md"]);
    let (session, desk) = desk(&dir, PlanHandlerKind::Review, None);

    let write = waiting_for_review(&session, &desk, "auth").await;
    let second = propose(&session, "db").await;
    assert_eq!(second.errno(), libc::EBUSY);
    assert!(matches!(second.error(), Some(&Error::Busy(_))));
    assert!(second.text().contains("auth"), "{}", second.text());
    assert!(
        second.text().contains(&path_of(&dir, "auth-plan.md")),
        "{}",
        second.text()
    );
    assert_eq!(
        desk.status().under_review.map(|r| r.slug),
        Some("auth".into())
    );

    assert!(desk.approve(None).is_ok());
    assert!(finished(write).await.is_ok());
}

#[tokio::test]
async fn dropping_the_waiting_handler_cancels_the_review() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    // What the mount does when the writer is killed: it drops the work.
    let handler = session.plan_proposal_handler().expect("plan mode is on");
    let title = PlanTitle::parse("auth").expect("a valid title");
    let mut waiting = handler(PlanProposal { title: Some(title) });
    let early = timeout(A_WHILE, &mut waiting).await;
    assert!(early.is_err(), "the review waits for a decision");
    assert_eq!(
        desk.status().under_review.map(|r| r.slug),
        Some("auth".into())
    );
    drop(waiting);

    assert_eq!(desk.status().under_review, None);
    assert!(session.plan_mode(), "plan mode stays on");
    let nothing = desk.approve(None);
    assert_eq!(
        nothing,
        Err(Error::NothingToResolve("No plan is under review.".into()))
    );
    assert_eq!(desk.status().last_decision, None);

    // A new proposal is accepted.
    a_new_proposal_is_accepted(&session, &desk).await;
}

#[tokio::test]
async fn a_writer_that_gives_up_cancels_the_review() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    // The mount's cancel signal (the writer got a signal while waiting).
    let (give_up, given_up) = tokio::sync::oneshot::channel::<()>();
    let cancel: Cancel = Box::pin(async move {
        let _ = given_up.await;
        Error::Interrupted
    });
    let writer = session.clone();
    let write = tokio::spawn(async move {
        Dispatch::device(Device::Propose, "auth")
            .cancel(cancel)
            .run(&writer)
            .await
    });
    under_review(&desk).await;
    give_up.send(()).expect("the writer waits");
    let answer = finished(write).await;
    assert_eq!(answer.errno(), libc::EINTR);
    assert_eq!(desk.status().under_review, None);

    a_new_proposal_is_accepted(&session, &desk).await;
}

#[tokio::test]
async fn a_session_abort_cancels_the_review() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    let write = waiting_for_review(&session, &desk, "auth").await;
    session.abort("daemon shutdown");
    let answer = finished(write).await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert_eq!(desk.status().under_review, None);
}

#[tokio::test]
async fn exit_cancels_the_review_and_then_propose_is_eperm() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);

    let write = waiting_for_review(&session, &desk, "auth").await;
    desk.exit();

    let answer = finished(write).await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(
        matches!(answer.error(), Some(&Error::Aborted(_))),
        "{answer:?}"
    );
    assert!(!session.plan_mode());
    let status = desk.status();
    assert!(!status.plan_mode);
    assert_eq!(status.under_review, None);
    assert_eq!(status.last_decision, None);

    let refused = propose(&session, "auth").await;
    assert_eq!(refused.errno(), libc::EPERM);
    assert_eq!(refused.text(), not_in_plan_mode());
    assert_eq!(desk.approve(None).map_err(|e| e.errno()), Err(libc::ENOENT));
    assert_eq!(desk.refine("x").map_err(|e| e.errno()), Err(libc::ENOENT));

    // Entering again works as before.
    desk.enter();
    a_new_proposal_is_accepted(&session, &desk).await;
}

// ----- async ----------------------------------------------------------------

#[tokio::test]
async fn async_answers_at_once_then_busy_then_approve() {
    let dir = plan_dir(&["auth-plan.md", "db-plan.md"]);
    let (session, desk) = desk(&dir, PlanHandlerKind::Async, None);

    let answer = propose(&session, "auth").await;
    assert_eq!(
        (answer.text(), answer.errno()),
        (expected("plan-ready", DIR).as_str(), 0)
    );
    assert!(session.plan_mode());
    assert_eq!(
        desk.status().under_review,
        Some(PlanUnderReview {
            slug: "auth".into(),
            path: path_of(&dir, "auth-plan.md"),
        })
    );

    let second = propose(&session, "db").await;
    assert_eq!(second.errno(), libc::EBUSY);

    let text = approved_text(&dir, "auth-plan.md");
    assert_eq!(desk.approve(None), Ok(text.clone()));
    let status = desk.status();
    assert!(!status.plan_mode);
    assert_eq!(status.under_review, None);
    assert_eq!(status.last_decision, Some(text));
    assert_eq!(propose(&session, "db").await.errno(), libc::EPERM);
}

#[tokio::test]
async fn async_refine_frees_the_slot_and_keeps_plan_mode() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Async);

    assert!(propose(&session, "auth").await.is_ok());
    let text = desk.refine("more tests").expect("a plan is under review");
    assert_eq!(text, refine_text("more tests"));
    assert!(session.plan_mode());
    assert_eq!(desk.status().last_decision, Some(text));
    assert_eq!(
        propose(&session, "auth").await.text(),
        expected("plan-ready", DIR)
    );
}

#[tokio::test]
async fn async_review_is_dropped_by_exit() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Async);
    assert!(propose(&session, "auth").await.is_ok());
    desk.exit();
    assert_eq!(desk.status().under_review, None);
    assert_eq!(desk.approve(None).map_err(|e| e.errno()), Err(libc::ENOENT));
}

// ----- finding the plan file ------------------------------------------------

#[tokio::test]
async fn a_missing_plan_file_is_enoent_with_the_exact_text() {
    let dir = plan_dir(&[]);
    let (session, desk) = desk(&dir, PlanHandlerKind::Review, None);

    let answer = propose(&session, "auth").await;
    let path = path_of(&dir, "auth-plan.md");
    assert_eq!(answer.errno(), libc::ENOENT);
    assert!(matches!(answer.error(), Some(&Error::PlanNotFound(_))));
    assert_eq!(
        answer.text(),
        expected_text("plan-not-found", DIR, &[("path", &path)])
    );
    assert_eq!(desk.status().under_review, None);
    assert!(session.plan_mode());
}

#[tokio::test]
async fn a_named_plan_is_never_swapped_for_another() {
    let dir = plan_dir(&["other-plan.md", "plan.md", "auth.md"]);
    let (session, desk) = desk(&dir, PlanHandlerKind::Async, None);

    let answer = propose(&session, "auth").await;
    assert_eq!(answer.errno(), libc::ENOENT);
    assert!(answer.text().contains(&path_of(&dir, "auth-plan.md")));
    assert_eq!(desk.status().under_review, None);
}

#[tokio::test]
async fn an_empty_title_takes_the_newest_plan() {
    let dir = plan_dir(&[]);
    plan_aged(dir.path(), "old-plan.md", 600);
    plan_aged(dir.path(), "new-plan.md", 60);
    plan_aged(dir.path(), "older-plan.md", 6000);
    plan_aged(dir.path(), "notes.md", 0);
    let (session, desk) = desk(&dir, PlanHandlerKind::Review, None);

    let write = propose_in_background(&session, "  \n");
    let review = under_review(&desk).await;
    assert_eq!(
        review,
        PlanUnderReview {
            slug: "new".into(),
            path: path_of(&dir, "new-plan.md"),
        }
    );
    assert_eq!(desk.approve(None), Ok(approved_text(&dir, "new-plan.md")));
    assert!(finished(write).await.is_ok());
}

#[tokio::test]
async fn an_empty_title_with_no_plan_is_enoent() {
    let dir = plan_dir(&["notes.md"]);
    let (session, _desk) = desk(&dir, PlanHandlerKind::Yolo, None);
    let answer = propose(&session, "").await;
    assert_eq!(answer.errno(), libc::ENOENT);
    assert_eq!(
        answer.text(),
        format!(
            "No plan file (*plan.md) found in {}. Write the finalized plan there before requesting approval.",
            dir.path().display()
        )
    );
    assert!(session.plan_mode());
}

#[tokio::test]
async fn a_bad_title_is_einval_before_the_desk_sees_it() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);
    let answer = propose(&session, "../auth").await;
    assert_eq!(answer.errno(), libc::EINVAL);
    assert_eq!(desk.status().under_review, None);
}

// ----- outside plan mode, status --------------------------------------------

#[tokio::test]
async fn nothing_to_decide_is_enoent() {
    let (_dir, _session, desk) = auth_desk(PlanHandlerKind::Review);
    let expected = Err(Error::NothingToResolve("No plan is under review.".into()));
    assert_eq!(desk.approve(Some("ok")), expected);
    assert_eq!(desk.refine("more"), expected);
    assert_eq!(desk.approve(None).map_err(|e| e.errno()), Err(libc::ENOENT));
}

#[tokio::test]
async fn propose_before_enter_is_eperm() {
    let dir = plan_dir(&["auth-plan.md"]);
    let session = Session::new();
    session.set_mount_dir(DIR);
    let desk = new_desk(&session, &dir, PlanHandlerKind::Yolo);
    assert!(!desk.status().plan_mode);
    let answer = propose(&session, "auth").await;
    assert_eq!(answer.errno(), libc::EPERM);
    assert_eq!(answer.text(), not_in_plan_mode());
}

#[tokio::test]
async fn status_serializes_in_camel_case() {
    let (dir, session, desk) = auth_desk(PlanHandlerKind::Async);
    let plan_dir = dir.path().display().to_string();
    let status_with = |under_review: serde_json::Value| {
        json!({
            "planMode": true,
            "handler": "async",
            "planDir": plan_dir,
            "underReview": under_review,
            "lastDecision": null,
            "lastDecided": null,
            "decisions": 0,
        })
    };
    let status = || serde_json::to_value(desk.status()).expect("serializes");

    assert_eq!(status(), status_with(json!(null)));

    assert!(propose(&session, "auth").await.is_ok());
    let auth = json!({"slug": "auth", "path": path_of(&dir, "auth-plan.md")});
    assert_eq!(status(), status_with(auth.clone()));

    // A decision names the plan it was about.
    let approved = desk.approve(None).expect("approve");
    let mut decided = status_with(json!(null));
    decided["planMode"] = json!(false);
    decided["lastDecision"] = json!(approved);
    decided["lastDecided"] = auth;
    decided["decisions"] = json!(1);
    assert_eq!(status(), decided);
}

#[test]
fn handler_kinds_parse_and_print() {
    for (name, kind) in [
        ("yolo", PlanHandlerKind::Yolo),
        ("review", PlanHandlerKind::Review),
        ("async", PlanHandlerKind::Async),
    ] {
        assert_eq!(name.parse::<PlanHandlerKind>(), Ok(kind));
        assert_eq!(kind.to_string(), name);
    }
    assert!("sometimes".parse::<PlanHandlerKind>().is_err());
}

// ----- plan details and the desk's lifetime --------------------------------------

fn plan_details(dir: &TempDir, slug: &str, outcome: PlanOutcome) -> Option<PlanApprovalDetails> {
    Some(PlanApprovalDetails {
        title: slug.into(),
        plan_path: path_of(dir, &format!("{slug}-plan.md")),
        outcome,
    })
}

#[tokio::test]
async fn every_handler_kind_returns_the_plans_details() {
    let (dir, session, _desk) = auth_desk(PlanHandlerKind::Yolo);
    let answer = propose(&session, "auth").await;
    assert_eq!(
        answer.plan().cloned(),
        plan_details(&dir, "auth", PlanOutcome::Approved)
    );

    let (session, desk_async) = desk(&dir, PlanHandlerKind::Async, None);
    let answer = propose(&session, "auth").await;
    assert_eq!(
        answer.plan().cloned(),
        plan_details(&dir, "auth", PlanOutcome::PendingReview)
    );
    assert!(desk_async.approve(None).is_ok());

    let (session, desk_review) = desk(&dir, PlanHandlerKind::Review, None);
    let write = waiting_for_review(&session, &desk_review, "auth").await;
    assert!(desk_review.refine("smaller steps").is_ok());
    let answer = finished(write).await;
    assert_eq!(
        answer.plan().cloned(),
        plan_details(&dir, "auth", PlanOutcome::Refine)
    );
    let write = waiting_for_review(&session, &desk_review, "auth").await;
    assert!(desk_review.approve(None).is_ok());
    let answer = finished(write).await;
    assert_eq!(
        answer.plan().cloned(),
        plan_details(&dir, "auth", PlanOutcome::Approved)
    );
}

#[tokio::test]
async fn dropping_the_desk_leaves_plan_mode() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);
    drop(desk);
    assert!(!session.plan_mode(), "plan mode follows its desk");
    let answer = propose(&session, "auth").await;
    assert_eq!(
        (answer.errno(), answer.text()),
        (libc::EPERM, not_in_plan_mode().as_str())
    );
}

#[tokio::test]
async fn dropping_a_replaced_desk_keeps_the_new_desks_plan_mode() {
    let (dir, session, old) = auth_desk(PlanHandlerKind::Review);
    let new = new_desk(&session, &dir, PlanHandlerKind::Yolo);
    new.enter();
    drop(old);
    assert!(session.plan_mode());
    assert!(propose(&session, "auth").await.is_ok());
}

#[tokio::test]
async fn a_handler_outliving_its_desk_names_the_real_mount() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Yolo);
    let handler = session.plan_proposal_handler().expect("plan mode");
    drop(desk);
    let proposal = PlanProposal {
        title: PlanTitle::parse("auth").ok(),
    };
    let refused = handler(proposal).await.map(|reply| reply.text);
    assert_eq!(refused, Err(Error::NotInPlanMode(not_in_plan_mode())));
}

/// A desk may be held by something the session holds (a harness's standing
/// handler, a preview's callback). Dropping that under the session's own
/// bookkeeping must not wait on the session: the desk going away needs no
/// session lock.
#[test]
fn the_last_desk_may_go_with_a_handler_the_session_drops() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dir = plan_dir(&["auth-plan.md"]);
        let session = Session::new();
        let desk = new_desk(&session, &dir, PlanHandlerKind::Yolo);
        desk.enter();
        let held = desk.clone();
        session.set_standing_resolve_handler(xdev::harness::queue_invoker(move |_request| {
            let _desk = held.clone();
            async { Ok(xdev::ToolResult::ok("standing")) }
        }));
        drop(desk);
        session.clear_standing_resolve_handler();
        let _ = done.send(session.plan_mode());
    });
    let plan_mode = finished.recv_timeout(PROMPTLY);
    assert_eq!(plan_mode, Ok(false), "the session hung, or kept plan mode");
}

/// An old desk exiting (or approving) leaves alone the plan mode a newer
/// desk entered on the same session.
#[tokio::test]
async fn an_old_desk_leaving_keeps_the_new_desks_plan_mode() {
    let (dir, session, old) = auth_desk(PlanHandlerKind::Review);
    let new = new_desk(&session, &dir, PlanHandlerKind::Yolo);
    new.enter();
    old.exit();
    assert!(session.plan_mode(), "the new desk's plan mode stays");
    assert!(propose(&session, "auth").await.is_ok());
}

/// The next event of `kind` on `events`.
async fn next_of(
    events: &mut xdev::session::EventStream,
    kind: xdev::session::EventKind,
) -> xdev::session::Event {
    timeout(PROMPTLY, async {
        loop {
            match events.recv().await {
                Some(event) if event.kind == kind => return event,
                Some(_) => {}
                None => panic!("session gone while waiting for {kind:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {kind:?} event in time"))
}

#[tokio::test]
async fn entering_and_leaving_plan_mode_and_an_async_approval_are_events() {
    let dir = plan_dir(&["auth-plan.md"]);
    let session = Session::new();
    let mut events = session.subscribe();
    let desk = new_desk(&session, &dir, PlanHandlerKind::Async);
    desk.enter();
    let entered = next_of(&mut events, xdev::session::EventKind::PlanModeEntered).await;
    assert_eq!(
        (entered.id.as_str(), entered.source_tool.as_str()),
        ("", "plan")
    );
    assert_eq!(
        propose(&session, "auth").await.text(),
        expected("plan-ready", DIR)
    );
    next_of(&mut events, xdev::session::EventKind::Proposed).await;
    let approved = desk.approve(Some("ship it")).expect("approved");
    // Plan mode is off before the decision is told.
    next_of(&mut events, xdev::session::EventKind::PlanModeLeft).await;
    let decided = next_of(&mut events, xdev::session::EventKind::PlanDecided).await;
    assert_eq!(decided.text.as_deref(), Some(approved.as_str()));
    assert_eq!(
        decided.plan.map(|plan| (plan.title, plan.outcome)),
        Some(("auth".to_string(), PlanOutcome::Approved))
    );
    assert!(!session.plan_mode());
}

#[tokio::test]
async fn a_review_decided_for_a_waiting_writer_is_not_a_second_event() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);
    let mut events = session.subscribe();
    let write = propose_in_background(&session, "auth");
    under_review(&desk).await;
    desk.refine("more tests").expect("refined");
    assert!(finished(write).await.is_ok());
    next_of(&mut events, xdev::session::EventKind::Proposed).await;
    desk.exit();
    next_of(&mut events, xdev::session::EventKind::PlanModeLeft).await;
    while let Ok(Some(event)) = timeout(A_WHILE, events.recv()).await {
        assert_ne!(
            event.kind,
            xdev::session::EventKind::PlanDecided,
            "the write's Proposed says it"
        );
    }
}

#[tokio::test]
async fn dropping_every_desk_handle_ends_a_waiting_review_with_ecanceled() {
    let (_dir, session, desk) = auth_desk(PlanHandlerKind::Review);
    let mut events = session.subscribe();
    let write = propose_in_background(&session, "auth");
    under_review(&desk).await;
    drop(desk);
    let answer = finished(write).await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert_eq!(
        answer.text(),
        "Aborted: the plan desk was closed (its owner let it go); plan mode ended and the review was cancelled"
    );
    assert!(!session.plan_mode());
    next_of(&mut events, xdev::session::EventKind::PlanModeLeft).await;
    let again = propose(&session, "auth").await;
    assert_eq!(
        again.errno(),
        libc::EPERM,
        "plan mode is off: {}",
        again.text()
    );
}
