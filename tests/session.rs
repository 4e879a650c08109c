//! The session queue through the public API only (SPEC sections 2, 3 and 6,
//! issue 2). No FUSE: every device write goes through
//! `dispatch_resolution_device`, exactly as the mount does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;
use xdev::{
    apply_fn, dispatch_resolution_device, plan_handler, queue_invoker, reject_fn,
    run_resolve_invocation, run_resolve_tool, Action, ApplyFn, CallbackError, Details, Device,
    Directive, Error, Event, EventKind, EventStream, PlanProposal, PlanTitle, RejectAction,
    RejectReason, Resolution, ResolveRequest, Session, SoftRequirement, SoftRequirementTracker,
    ToolCall, ToolChoice, ToolChoiceDirective, ToolResult, TurnEnd, TurnVerdict,
};

// ----- exact texts of SPEC section 3, written out in full -----------------

const NOTHING_TO_RESOLVE: &str = "No pending action to resolve. Nothing to apply or discard.";
const NOTHING_TO_REJECT: &str = "Nothing to reject; no pending action remains.";
const NOTHING_TO_DISCARD: &str = "Nothing to discard; no pending action remains.";
const DETOUR: &str =
    "Not executed: call the `write` tool to resolve the pending action before using other tools.";
const FORCE_LOOP: &str = "Soft tool requirement 'write' was not satisfied after 3 forced turns; aborting to avoid an unbounded force loop.";

/// How long a test waits for something that should happen at once.
const PROMPTLY: Duration = Duration::from_secs(5);

// ----- helpers --------------------------------------------------------------

/// An apply that answers `applied <label>: <reason>`.
fn echo_apply(label: &str) -> ApplyFn {
    let label = label.to_string();
    apply_fn(move |reason, _extra| {
        let text = format!("applied {label}: {reason}");
        async move { Ok(ToolResult::ok(text)) }
    })
}

/// An apply that counts its calls and answers `text`.
fn counted_apply(calls: &Arc<AtomicUsize>, text: &str) -> ApplyFn {
    let calls = Arc::clone(calls);
    let text = text.to_string();
    apply_fn(move |_reason, _extra| {
        calls.fetch_add(1, Ordering::SeqCst);
        let text = text.clone();
        async move { Ok(ToolResult::ok(text)) }
    })
}

/// An apply that fails its first `failures` calls with `error`, then
/// answers `applied on attempt <n>`. Counts every call.
fn flaky_apply(failures: usize, error: CallbackError, calls: &Arc<AtomicUsize>) -> ApplyFn {
    let calls = Arc::clone(calls);
    apply_fn(move |_reason, _extra| {
        let attempt = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let error = error.clone();
        async move {
            if attempt <= failures {
                Err(error)
            } else {
                Ok(ToolResult::ok(format!("applied on attempt {attempt}")))
            }
        }
    })
}

fn stage(session: &Session, label: &str, tool: &str) -> String {
    session.queue_resolve_handler(label, tool, echo_apply(label), None)
}

fn pending_ids(session: &Session) -> Vec<String> {
    session.pending().into_iter().map(|info| info.id).collect()
}

async fn write(session: &Session, device: Device, body: &str) -> Resolution {
    dispatch_resolution_device(session, device, body).await
}

fn drain(events: &mut EventStream) -> Vec<Event> {
    std::iter::from_fn(|| events.try_recv()).collect()
}

fn kinds(events: &[Event]) -> Vec<(EventKind, String)> {
    events
        .iter()
        .map(|event| (event.kind, event.id.clone()))
        .collect()
}

/// Waits (briefly) for the next event of this kind, skipping others.
async fn next_event(events: &mut EventStream, kind: EventKind) -> Event {
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

/// The `<seq>` of `pending-action:<tool>:<seq>`, checking the shape.
fn seq_of(id: &str, tool: &str) -> u64 {
    let prefix = format!("pending-action:{tool}:");
    let seq = id
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{id:?} should start with {prefix:?}"));
    seq.parse()
        .unwrap_or_else(|_| panic!("{id:?} should end in a decimal seq"))
}

fn soft(session: &Session) -> SoftRequirement {
    match session.next_tool_choice_directive() {
        Some(ToolChoiceDirective::Soft(requirement)) => requirement,
        other => panic!("expected a soft requirement, got {other:?}"),
    }
}

fn reminder(tool: &str, dir: &str) -> String {
    format!(
        "<system-reminder>\n`{tool}` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `{dir}/resolve` to APPLY, or `{dir}/reject` to DISCARD.\n</system-reminder>"
    )
}

type Outcome = Result<ToolResult, CallbackError>;

/// An apply that reports when it starts and then waits for the test to
/// release it with an outcome. Later calls succeed at once.
struct Gate {
    started: mpsc::UnboundedReceiver<()>,
    release: Option<oneshot::Sender<Outcome>>,
}

impl Gate {
    fn new() -> (ApplyFn, Gate) {
        let (started_tx, started) = mpsc::unbounded_channel();
        let (release, release_rx) = oneshot::channel::<Outcome>();
        let slot = Arc::new(Mutex::new(Some(release_rx)));
        let apply = apply_fn(move |_reason, _extra| {
            let waiting = slot.lock().take();
            let started_tx = started_tx.clone();
            async move {
                let Some(release_rx) = waiting else {
                    return Ok(ToolResult::ok("applied on retry"));
                };
                started_tx.send(()).expect("test is listening");
                release_rx
                    .await
                    .unwrap_or_else(|_| Err(CallbackError::Failed("gate dropped".into())))
            }
        });
        let gate = Gate {
            started,
            release: Some(release),
        };
        (apply, gate)
    }

    async fn wait_started(&mut self) {
        timeout(PROMPTLY, self.started.recv())
            .await
            .expect("the apply should start promptly")
            .expect("gate alive");
    }

    fn release(&mut self, outcome: Outcome) {
        self.release
            .take()
            .expect("released once")
            .send(outcome)
            .expect("apply still waiting");
    }
}

fn spawn_write(
    session: &Session,
    device: Device,
    body: &'static str,
) -> tokio::task::JoinHandle<Resolution> {
    let session = session.clone();
    tokio::spawn(async move { dispatch_resolution_device(&session, device, body).await })
}

/// Stages a preview whose apply waits on a [`Gate`], starts resolving it,
/// and returns once its apply has started.
async fn resolving_gated(
    session: &Session,
    label: &str,
    reason: &'static str,
) -> (String, Gate, tokio::task::JoinHandle<Resolution>) {
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler(label, "edit", apply, None);
    let resolving = spawn_write(session, Device::Resolve, reason);
    gate.wait_started().await;
    (id, gate, resolving)
}

// ----- the stack ------------------------------------------------------------

#[tokio::test]
async fn resolve_applies_newest_first_over_three_previews() {
    let session = Session::new();
    let a = stage(&session, "edit a.rs", "edit");
    let b = stage(&session, "edit b.rs", "edit");
    let c = stage(&session, "write c.rs", "write");
    assert_eq!(pending_ids(&session), [&*c, &*b, &*a]);
    assert_eq!(session.pending_head().map(|head| head.id), Some(c.clone()));

    let mut texts = Vec::new();
    for _ in 0..3 {
        let answer = write(&session, Device::Resolve, "tests pass\n").await;
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(answer.errno(), 0);
        texts.push(answer.text);
    }
    assert_eq!(
        texts,
        [
            "applied write c.rs: tests pass",
            "applied edit b.rs: tests pass",
            "applied edit a.rs: tests pass"
        ]
    );
    assert_eq!(session.pending_count(), 0);

    let none = write(&session, Device::Resolve, "again").await;
    assert_eq!(none.text, NOTHING_TO_RESOLVE);
    assert_eq!(none.errno(), libc::ENOENT);
    assert_eq!(
        none.error,
        Some(Error::NothingToResolve(NOTHING_TO_RESOLVE.into()))
    );
}

#[tokio::test]
async fn reject_discards_newest_first() {
    let session = Session::new();
    let a = stage(&session, "edit a.rs", "edit");
    let b = stage(&session, "edit b.rs", "edit");
    let answer = write(&session, Device::Reject, "wrong file").await;
    assert_eq!(answer.text, "Discarded: edit b.rs. Reason: wrong file");
    assert_eq!(pending_ids(&session), [&*a]);
    assert!(!session.is_pending(&b));
    let answer = write(&session, Device::Reject, "also wrong").await;
    assert_eq!(answer.text, "Discarded: edit a.rs. Reason: also wrong");
    let none = write(&session, Device::Reject, "nothing").await;
    assert!(none.is_ok());
    assert_eq!(none.text, NOTHING_TO_REJECT);
}

#[tokio::test]
async fn ids_have_the_documented_shape_and_a_growing_process_wide_seq() {
    let one = Session::new();
    let other = Session::new();
    let first = stage(&one, "a", "edit");
    let second = stage(&other, "b", "bash");
    let third = one.push_pending_action("c", echo_apply("c"), None, None);
    let fourth = one.push_pending_action("d", echo_apply("d"), None, Some("my_tool"));
    let seqs = [
        seq_of(&first, "edit"),
        seq_of(&second, "bash"),
        seq_of(&third, "custom_tool"),
        seq_of(&fourth, "my_tool"),
    ];
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "seq grows across sessions and tools: {seqs:?}"
    );

    // A seq is never reused, not even after the preview is decided.
    let decided = stage(&one, "e", "edit");
    write(&one, Device::Resolve, "ok").await;
    let next = stage(&one, "f", "edit");
    assert!(seq_of(&next, "edit") > seq_of(&decided, "edit"));
}

#[tokio::test]
async fn staging_never_forces_anything() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let rejects = Arc::new(AtomicUsize::new(0));
    let counted_rejects = Arc::clone(&rejects);
    let mut events = session.subscribe();
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        counted_apply(&calls, "applied"),
        Some(reject_fn(move |_reason, _extra| {
            counted_rejects.fetch_add(1, Ordering::SeqCst);
            async { Ok(None) }
        })),
    );
    tokio::task::yield_now().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(rejects.load(Ordering::SeqCst), 0);
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Staged, id.clone())]
    );
    // What a harness is told is a *soft* requirement, never a hard one.
    assert!(matches!(
        session.next_tool_choice_directive(),
        Some(ToolChoiceDirective::Soft(_))
    ));
    assert_eq!(session.serve_tool_choice().map(|c| c.tool_name), None);
    assert_eq!(pending_ids(&session), [id]);
}

#[tokio::test]
async fn registering_an_existing_id_moves_it_to_the_head() {
    let session = Session::new();
    let a = stage(&session, "edit a.rs", "edit");
    let b = stage(&session, "edit b.rs", "edit");
    let c = stage(&session, "edit c.rs", "edit");

    assert!(session.restage(&a));
    assert_eq!(pending_ids(&session), [&*a, &*c, &*b]);
    assert!(!session.restage("pending-action:edit:no-such-id"));
    assert_eq!(pending_ids(&session), [&*a, &*c, &*b]);

    // register_pending with an existing id: moves, and the new invoker wins.
    session.register_pending(&b, "edit b.rs again", "edit", echo_apply("b2"), None);
    assert_eq!(pending_ids(&session), [&*b, &*a, &*c]);
    assert_eq!(session.pending_count(), 3);
    assert_eq!(
        session.pending_head().map(|head| head.label),
        Some("edit b.rs again".to_string())
    );
    let answer = write(&session, Device::Resolve, "r").await;
    assert_eq!(answer.text, "applied b2: r");
    assert_eq!(pending_ids(&session), [&*a, &*c]);

    // An explicit new id is staged at the head like any other.
    session.register_pending(
        "pending-action:ext:custom-1",
        "x",
        "ext",
        echo_apply("x"),
        None,
    );
    assert_eq!(
        pending_ids(&session),
        ["pending-action:ext:custom-1", &*a, &*c]
    );
}

#[tokio::test]
async fn dispatch_peeks_and_previews_staged_meanwhile_are_untouched() {
    let session = Session::new();
    let old = stage(&session, "old", "edit");
    let (apply, mut gate) = Gate::new();
    let slow = session.queue_resolve_handler("slow", "edit", apply, None);

    let resolving = spawn_write(&session, Device::Resolve, "go");
    gate.wait_started().await;
    // While the head is being applied it is claimed, not popped for good.
    assert!(session.is_pending(&slow));
    assert_eq!(session.in_progress_count(), 1);
    let newer = stage(&session, "newer", "edit");
    assert_eq!(pending_ids(&session), [&*newer, &*old]);

    gate.release(Ok(ToolResult::ok("slow applied")));
    let answer = resolving.await.expect("join");
    assert_eq!(answer.text, "slow applied");
    // Only the applied preview left the stack; the next newest is the head.
    assert!(!session.is_pending(&slow));
    assert_eq!(pending_ids(&session), [&*newer, &*old]);
    assert_eq!(session.in_progress_count(), 0);
}

#[tokio::test]
async fn a_claimed_preview_is_skipped_by_a_concurrent_dispatch() {
    let session = Session::new();
    let older = Arc::new(AtomicUsize::new(0));
    let a = session.queue_resolve_handler("a", "edit", counted_apply(&older, "a applied"), None);
    let (apply, mut gate) = Gate::new();
    let b = session.queue_resolve_handler("b", "edit", apply, None);

    let first = spawn_write(&session, Device::Resolve, "first");
    gate.wait_started().await;
    assert_eq!(session.pending_head().map(|head| head.id), Some(a.clone()));
    // A second writer takes the next newest instead of b.
    let second = write(&session, Device::Resolve, "second").await;
    assert_eq!(second.text, "a applied");
    assert_eq!(older.load(Ordering::SeqCst), 1);
    // A third finds nothing it may take.
    let third = write(&session, Device::Resolve, "third").await;
    assert_eq!(third.text, NOTHING_TO_RESOLVE);
    let reject = write(&session, Device::Reject, "fourth").await;
    assert_eq!(reject.text, NOTHING_TO_REJECT);

    gate.release(Ok(ToolResult::ok("b applied")));
    assert_eq!(first.await.expect("join").text, "b applied");
    assert!(!session.is_pending(&a) && !session.is_pending(&b));
}

// ----- apply failure, error results, reject failure --------------------------

#[tokio::test]
async fn apply_failure_requeues_the_same_id_at_the_head_before_returning() {
    let session = Session::new();
    let other = stage(&session, "other", "edit");
    let calls = Arc::new(AtomicUsize::new(0));
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        flaky_apply(1, CallbackError::Failed("disk full".into()), &calls),
        None,
    );
    let mut events = session.subscribe();

    let answer = write(&session, Device::Resolve, "try").await;
    // By the time the error is returned the preview is back at the head.
    assert_eq!(pending_ids(&session), [&*id, &*other]);
    assert_eq!(session.in_progress_count(), 0);
    let seen = drain(&mut events);
    assert_eq!(
        kinds(&seen),
        [
            (EventKind::Failed, id.clone()),
            (EventKind::Requeued, id.clone())
        ]
    );
    assert_eq!(answer.text, "Apply failed: disk full");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(
        answer.error,
        Some(Error::CallbackFailed("Apply failed: disk full".into()))
    );

    // A later resolve retries the same invoker.
    let retry = write(&session, Device::Resolve, "retry").await;
    assert_eq!(retry.text, "applied on attempt 2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(pending_ids(&session), [&*other]);
}

#[tokio::test]
async fn apply_failure_of_a_lower_preview_moves_it_to_the_head() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let low = session.queue_resolve_handler(
        "low",
        "edit",
        flaky_apply(1, CallbackError::Failed("locked".into()), &calls),
        None,
    );
    let high = stage(&session, "high", "edit");
    let answer = run_resolve_invocation(&session, &low, ResolveRequest::apply("by id")).await;
    assert_eq!(answer.text, "Apply failed: locked");
    assert_eq!(pending_ids(&session), [&*low, &*high]);
}

#[tokio::test]
async fn apply_failure_then_reject_discards() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        flaky_apply(5, CallbackError::Failed("boom".into()), &calls),
        None,
    );
    assert_eq!(
        write(&session, Device::Resolve, "x").await.text,
        "Apply failed: boom"
    );
    let answer = write(&session, Device::Reject, "give up").await;
    assert_eq!(answer.text, "Discarded: edit a.rs. Reason: give up");
    assert!(!session.is_pending(&id));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn tool_errors_pass_unchanged_and_other_failures_are_wrapped() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    session.queue_resolve_handler(
        "edit",
        "edit",
        flaky_apply(
            1,
            CallbackError::Tool("Edit conflict: a.rs changed on disk".into()),
            &calls,
        ),
        None,
    );
    let answer = write(&session, Device::Resolve, "x").await;
    assert_eq!(answer.text, "Edit conflict: a.rs changed on disk");
    assert_eq!(answer.errno(), libc::EIO);

    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "read-only file");
    let from_io: CallbackError = io.into();
    session.queue_resolve_handler(
        "io",
        "edit",
        flaky_apply(1, from_io, &Arc::new(AtomicUsize::new(0))),
        None,
    );
    let answer = write(&session, Device::Resolve, "x").await;
    assert_eq!(answer.text, "Apply failed: read-only file");
}

#[tokio::test]
async fn an_apply_that_returns_an_error_result_consumes_the_preview() {
    let session = Session::new();
    let below = stage(&session, "below", "edit");
    let id = session.queue_resolve_handler(
        "stale edit",
        "edit",
        apply_fn(|_reason, _extra| async {
            Ok(ToolResult::error("Preview is stale: a.rs changed")
                .with_details(json!({"stale": true})))
        }),
        None,
    );
    let mut events = session.subscribe();
    let answer = write(&session, Device::Resolve, "apply").await;
    assert!(!answer.is_ok());
    assert_eq!(answer.text, "Preview is stale: a.rs changed");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(
        answer.error,
        Some(Error::ErrorResult("Preview is stale: a.rs changed".into()))
    );
    assert_eq!(
        answer
            .details
            .and_then(|details| details.source_result_details),
        Some(json!({"stale": true}))
    );
    assert!(!session.is_pending(&id));
    assert_eq!(pending_ids(&session), [&*below]);
    let seen = drain(&mut events);
    assert_eq!(kinds(&seen), [(EventKind::Applied, id)]);
    assert!(!seen[0].ok);
}

#[tokio::test]
async fn a_failing_reject_leaves_the_preview_pending_where_it_was() {
    let session = Session::new();
    let below = stage(&session, "below", "edit");
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&attempts);
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        echo_apply("edit a.rs"),
        Some(reject_fn(move |_reason, _extra| {
            let attempt = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if attempt == 1 {
                    Err(CallbackError::Tool("Could not restore a.rs".into()))
                } else {
                    Ok(None)
                }
            }
        })),
    );
    let mut events = session.subscribe();
    let answer = write(&session, Device::Reject, "no").await;
    assert!(!answer.is_ok());
    assert_eq!(answer.text, "Could not restore a.rs");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(pending_ids(&session), [&*id, &*below]);
    assert_eq!(session.in_progress_count(), 0);
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Failed, id.clone())]
    );

    // Still there: a second reject discards it, a resolve would apply it.
    let answer = write(&session, Device::Reject, "no").await;
    assert_eq!(answer.text, "Discarded: edit a.rs. Reason: no");
    assert_eq!(pending_ids(&session), [&*below]);
}

#[tokio::test]
async fn a_reject_failure_that_is_not_a_tool_error_is_an_eio_error() {
    let session = Session::new();
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        echo_apply("edit a.rs"),
        Some(reject_fn(|_reason, _extra| async {
            Err(CallbackError::Failed("backup missing".into()))
        })),
    );
    let answer = write(&session, Device::Reject, "no").await;
    assert_eq!(answer.errno(), libc::EIO);
    assert!(answer.text.contains("backup missing"), "{}", answer.text);
    assert!(session.is_pending(&id));
}

#[tokio::test]
async fn discard_text_defaults_unless_the_reject_callback_answers() {
    let session = Session::new();
    // No reject callback.
    session.queue_resolve_handler("edit a.rs", "edit", echo_apply("a"), None);
    let answer = write(&session, Device::Reject, "  not needed \n").await;
    assert_eq!(answer.text, "Discarded: edit a.rs. Reason: not needed");
    // A reject callback that returns nothing.
    session.queue_resolve_handler(
        "edit b.rs",
        "edit",
        echo_apply("b"),
        Some(reject_fn(|_reason, _extra| async { Ok(None) })),
    );
    let answer = write(&session, Device::Reject, "dup").await;
    assert_eq!(answer.text, "Discarded: edit b.rs. Reason: dup");
    // A reject callback with its own answer.
    session.queue_resolve_handler(
        "edit c.rs",
        "edit",
        echo_apply("c"),
        Some(reject_fn(|reason, _extra| async move {
            Ok(Some(ToolResult::ok(format!("restored c.rs ({reason})"))))
        })),
    );
    let answer = write(&session, Device::Reject, "dup").await;
    assert_eq!(answer.text, "restored c.rs (dup)");
    // The resolve tool's discard uses the same default.
    session.queue_resolve_handler("edit d.rs", "edit", echo_apply("d"), None);
    let answer = run_resolve_tool(&session, ResolveRequest::discard("wrong")).await;
    assert_eq!(answer.text, "Discarded: edit d.rs. Reason: wrong");
}

// ----- details -----------------------------------------------------------------

#[tokio::test]
async fn details_carry_every_field_and_source_details_only_when_returned() {
    let session = Session::new();
    let seen = Arc::new(Mutex::new(Vec::<(String, Option<Value>)>::new()));
    let record = Arc::clone(&seen);
    session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        apply_fn(move |reason, extra| {
            record.lock().push((reason, extra));
            async { Ok(ToolResult::ok("done").with_details(json!({"diff": "+1 -0"}))) }
        }),
        None,
    );
    let request = ResolveRequest {
        action: Action::Apply,
        reason: "ship it".into(),
        extra: Some(json!({"force": true})),
    };
    let answer = run_resolve_tool(&session, request).await;
    assert_eq!(answer.text, "done");
    assert_eq!(
        seen.lock().clone(),
        [("ship it".to_string(), Some(json!({"force": true})))]
    );
    let details = answer.details.expect("a decided preview has details");
    assert_eq!(
        details,
        Details {
            action: Action::Apply,
            reason: "ship it".into(),
            extra: Some(json!({"force": true})),
            source_tool_name: "edit".into(),
            label: "edit a.rs".into(),
            source_result_details: Some(json!({"diff": "+1 -0"})),
            origin: None,
        }
    );
    assert_eq!(
        serde_json::to_value(&details).expect("serializes"),
        json!({
            "action": "apply",
            "reason": "ship it",
            "extra": {"force": true},
            "sourceToolName": "edit",
            "label": "edit a.rs",
            "sourceResultDetails": {"diff": "+1 -0"},
        })
    );

    // No extra given, no details returned: both keys are absent.
    session.queue_resolve_handler("write b.rs", "write", echo_apply("b"), None);
    let answer = write(&session, Device::Reject, "nope").await;
    let details = answer.details.expect("details");
    assert_eq!(details.extra, None);
    assert_eq!(details.source_result_details, None);
    assert_eq!(
        serde_json::to_value(&details).expect("serializes"),
        json!({
            "action": "discard",
            "reason": "nope",
            "sourceToolName": "write",
            "label": "write b.rs",
        })
    );
}

#[tokio::test]
async fn a_failed_apply_still_carries_details_without_source_details() {
    let session = Session::new();
    session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        flaky_apply(
            1,
            CallbackError::Failed("x".into()),
            &Arc::new(AtomicUsize::new(0)),
        ),
        None,
    );
    let answer = write(&session, Device::Resolve, "why").await;
    let details = answer.details.expect("details");
    assert_eq!(
        serde_json::to_value(&details).expect("serializes"),
        json!({"action": "apply", "reason": "why", "sourceToolName": "edit", "label": "edit a.rs"})
    );
}

#[tokio::test]
async fn run_resolve_invocation_decides_one_id_and_refuses_unknown_ones() {
    let session = Session::new();
    let low = stage(&session, "low", "edit");
    let high = stage(&session, "high", "edit");
    let answer = run_resolve_invocation(&session, &low, ResolveRequest::apply("by id")).await;
    assert_eq!(answer.text, "applied low: by id");
    assert_eq!(
        answer.details.map(|details| details.label),
        Some("low".to_string())
    );
    assert_eq!(pending_ids(&session), [&*high]);
    let again = run_resolve_invocation(&session, &low, ResolveRequest::apply("twice")).await;
    assert_eq!(again.errno(), libc::ENOENT);
    assert_eq!(pending_ids(&session), [&*high]);
    let discard = run_resolve_invocation(&session, &high, ResolveRequest::discard("no")).await;
    assert_eq!(discard.text, "Discarded: high. Reason: no");
}

// ----- custom tools ----------------------------------------------------------------

#[tokio::test]
async fn custom_tools_stage_into_the_same_stack_and_forward_their_details() {
    let session = Session::new();
    let builtin = stage(&session, "edit a.rs", "edit");
    let custom = session.push_pending_action(
        "deploy staging",
        apply_fn(|reason, _extra| async move {
            Ok(ToolResult::ok(format!("deployed: {reason}")).with_details(json!({"secret": 1})))
        }),
        Some(reject_fn(|_reason, _extra| async {
            Ok(Some(
                ToolResult::ok("deploy cancelled").with_details(json!({"secret": 2})),
            ))
        })),
        None,
    );
    seq_of(&custom, "custom_tool");
    assert_eq!(pending_ids(&session), [&*custom, &*builtin]);
    let head = session.pending_head().expect("head");
    assert_eq!(head.source_tool, "custom_tool");
    assert_eq!(head.label, "deploy staging");

    let answer = write(&session, Device::Resolve, "go").await;
    assert_eq!(answer.text, "deployed: go");
    let details = answer.details.expect("details");
    assert_eq!(details.source_tool_name, "custom_tool");
    assert_eq!(details.source_result_details, Some(json!({"secret": 1})));

    let named = session.push_pending_action(
        "rollback",
        echo_apply("rollback"),
        Some(reject_fn(|_reason, _extra| async {
            Ok(Some(
                ToolResult::ok("kept").with_details(json!({"secret": 3})),
            ))
        })),
        Some("rollback_tool"),
    );
    seq_of(&named, "rollback_tool");
    let answer = write(&session, Device::Reject, "no").await;
    assert_eq!(answer.text, "kept");
    let details = answer.details.expect("details");
    assert_eq!(details.source_tool_name, "rollback_tool");
    assert_eq!(details.source_result_details, Some(json!({"secret": 3})));
    assert_eq!(pending_ids(&session), [&*builtin]);
}

// ----- plan handler, propose ---------------------------------------------------------

#[tokio::test]
async fn nothing_pending_texts_carry_the_propose_hint_only_in_plan_mode() {
    let session = Session::new();
    session.set_mount_dir("/mnt/agent");
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text, NOTHING_TO_RESOLVE);
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text, NOTHING_TO_REJECT);
    assert!(reject.is_ok());

    session.set_plan_proposal_handler(plan_handler(|_proposal| async {
        Ok(ToolResult::ok("submitted"))
    }));
    assert!(session.plan_mode());
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(
        resolve.text,
        "No pending action to resolve. Nothing to apply or discard. To submit the plan for approval, write its title to /mnt/agent/propose instead."
    );
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(
        reject.text,
        "Nothing to reject; no pending action remains. To submit the plan for approval, write its title to /mnt/agent/propose instead."
    );
    assert!(reject.is_ok());

    session.clear_plan_proposal_handler();
    assert!(!session.plan_mode());
    assert_eq!(
        write(&session, Device::Resolve, "x").await.text,
        NOTHING_TO_RESOLVE
    );
    assert_eq!(
        write(&session, Device::Reject, "x").await.text,
        NOTHING_TO_REJECT
    );
}

#[tokio::test]
async fn propose_outside_plan_mode_is_eperm_with_the_exact_text() {
    let session = Session::new();
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text,
        "No plan is awaiting approval — /xdev/propose only accepts a plan title while plan mode is active."
    );
    assert_eq!(answer.errno(), libc::EPERM);
    session.set_mount_dir("/run/xd");
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text,
        "No plan is awaiting approval — /run/xd/propose only accepts a plan title while plan mode is active."
    );
}

fn recording_plan_handler(session: &Session) -> Arc<Mutex<Vec<PlanProposal>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    session.set_plan_proposal_handler(plan_handler(move |proposal: PlanProposal| {
        record.lock().push(proposal.clone());
        async move {
            let title = proposal.require_title()?;
            Ok(ToolResult::ok(format!(
                "Plan {} submitted ({})",
                title.slug,
                title.file_name()
            )))
        }
    }));
    seen
}

#[tokio::test]
async fn propose_normalizes_the_title_before_calling_the_handler() {
    let session = Session::new();
    let staged = stage(&session, "edit a.rs", "edit");
    let seen = recording_plan_handler(&session);

    let answer = write(&session, Device::Propose, "  plan: v1.0 (draft)\n").await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(
        answer.text,
        "Plan plan-v10-draft submitted (plan-v10-draft-plan.md)"
    );
    let answer = write(&session, Device::Propose, "auth-plan.md").await;
    assert_eq!(answer.text, "Plan auth submitted (auth-plan.md)");
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text,
        "Plan auth-refactor submitted (auth-refactor-plan.md)"
    );
    assert_eq!(
        seen.lock().clone(),
        [
            PlanProposal {
                title: Some(PlanTitle {
                    title: "plan-v10-draft".into(),
                    slug: "plan-v10-draft".into()
                })
            },
            PlanProposal {
                title: Some(PlanTitle {
                    title: "auth-plan".into(),
                    slug: "auth".into()
                })
            },
            PlanProposal {
                title: Some(PlanTitle {
                    title: "auth-refactor".into(),
                    slug: "auth-refactor".into()
                })
            },
        ]
    );
    // Propose never touches the pending stack.
    assert_eq!(pending_ids(&session), [staged]);
}

#[tokio::test]
async fn propose_refuses_bad_titles_with_einval_before_the_handler() {
    let session = Session::new();
    let seen = recording_plan_handler(&session);
    for (body, text) in [
        ("a/b", "Plan title must not contain path separators or '..'."),
        ("a\\b", "Plan title must not contain path separators or '..'."),
        ("../up", "Plan title must not contain path separators or '..'."),
        (
            "!!! ???",
            "Plan title must contain at least one letter, number, underscore, or hyphen after sanitization.",
        ),
    ] {
        let answer = write(&session, Device::Propose, body).await;
        assert_eq!(answer.text, text, "{body:?}");
        assert_eq!(answer.errno(), libc::EINVAL, "{body:?}");
    }
    assert!(seen.lock().is_empty(), "handler must not see bad titles");

    // An empty body reaches the handler without a title; this one insists.
    let answer = write(&session, Device::Propose, " \n").await;
    assert_eq!(answer.text, "Plan title is required and must not be empty.");
    assert_eq!(answer.errno(), libc::EINVAL);
    assert_eq!(seen.lock().clone(), [PlanProposal { title: None }]);
}

#[tokio::test]
async fn propose_passes_the_handlers_errors_through() {
    let session = Session::new();
    session.set_plan_proposal_handler(plan_handler(|proposal: PlanProposal| async move {
        match proposal.title.map(|title| title.slug) {
            Some(slug) if slug == "busy" => {
                Err(Error::Busy("Another plan is under review.".into()))
            }
            Some(slug) if slug == "missing" => {
                Err(Error::PlanNotFound("No plan file missing-plan.md.".into()))
            }
            _ => Ok(ToolResult::error("Plan rejected by reviewer.")),
        }
    }));
    let busy = write(&session, Device::Propose, "busy").await;
    assert_eq!(busy.text, "Another plan is under review.");
    assert_eq!(busy.errno(), libc::EBUSY);
    let missing = write(&session, Device::Propose, "missing").await;
    assert_eq!(missing.errno(), libc::ENOENT);
    let rejected = write(&session, Device::Propose, "other").await;
    assert_eq!(rejected.text, "Plan rejected by reviewer.");
    assert_eq!(rejected.errno(), libc::EIO);
    assert!(session.plan_proposal_handler().is_some());
}

// ----- standing handler, queue invoker ----------------------------------------------

fn recording_invoker(
    answer: &'static str,
) -> (xdev::QueueInvoker, Arc<Mutex<Vec<ResolveRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let invoker = queue_invoker(move |request: ResolveRequest| {
        record.lock().push(request);
        async move { Ok(ToolResult::ok(answer).with_details(json!({"from": answer}))) }
    });
    (invoker, seen)
}

#[tokio::test]
async fn the_standing_handler_serves_the_tool_but_never_the_devices() {
    let session = Session::new();
    let (handler, seen) = recording_invoker("standing handled");
    session.set_standing_resolve_handler(handler);

    // Devices ignore it.
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text, NOTHING_TO_RESOLVE);
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text, NOTHING_TO_REJECT);
    assert!(seen.lock().is_empty());

    // The tool falls back to it when nothing is pending.
    let tool = run_resolve_tool(&session, ResolveRequest::apply("approve")).await;
    assert_eq!(tool.text, "standing handled");
    assert_eq!(
        tool.details.and_then(|d| d.source_result_details),
        Some(json!({"from": "standing handled"}))
    );
    let tool = run_resolve_tool(&session, ResolveRequest::discard("deny")).await;
    assert_eq!(tool.text, "standing handled");
    assert_eq!(
        seen.lock().clone(),
        [
            ResolveRequest::apply("approve"),
            ResolveRequest::discard("deny")
        ]
    );

    // A pending preview comes before it.
    stage(&session, "edit a.rs", "edit");
    let tool = run_resolve_tool(&session, ResolveRequest::apply("pending first")).await;
    assert_eq!(tool.text, "applied edit a.rs: pending first");
    assert_eq!(seen.lock().len(), 2);

    // Cleared: the tool has the section 3 texts again.
    session.clear_standing_resolve_handler();
    let tool = run_resolve_tool(&session, ResolveRequest::apply("x")).await;
    assert_eq!(tool.text, NOTHING_TO_RESOLVE);
    assert_eq!(tool.errno(), libc::ENOENT);
    let tool = run_resolve_tool(&session, ResolveRequest::discard("x")).await;
    assert_eq!(tool.text, NOTHING_TO_DISCARD);
    assert!(tool.is_ok());
}

#[tokio::test]
async fn an_in_flight_queue_invoker_is_consulted_before_the_pending_stack() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let staged = session.queue_resolve_handler("edit", "edit", counted_apply(&calls, "p"), None);
    let (invoker, seen) = recording_invoker("queue handled");
    let (standing, standing_seen) = recording_invoker("standing");
    session.set_standing_resolve_handler(standing);
    session.enqueue_directive(Directive::new([
        ToolChoice::new("exit_plan_mode").with_invoker(invoker)
    ]));

    // Queued but not yet in flight: not consulted.
    let before = write(&session, Device::Reject, "not yet").await;
    assert_eq!(before.text, "Discarded: edit. Reason: not yet");
    assert!(seen.lock().is_empty());
    let staged_again =
        session.queue_resolve_handler("edit", "edit", counted_apply(&calls, "p"), None);

    let served = session.serve_tool_choice().expect("served");
    assert_eq!(served.tool_name, "exit_plan_mode");
    assert!(served.invoker.is_some());

    let resolve = write(&session, Device::Resolve, "approve\n").await;
    assert_eq!(resolve.text, "queue handled");
    let details = resolve.details.expect("details");
    assert_eq!(details.action, Action::Apply);
    assert_eq!(details.reason, "approve");
    assert_eq!(
        details.source_result_details,
        Some(json!({"from": "queue handled"}))
    );
    let reject = write(&session, Device::Reject, "deny").await;
    assert_eq!(reject.text, "queue handled");
    let tool = run_resolve_tool(&session, ResolveRequest::apply("tool")).await;
    assert_eq!(tool.text, "queue handled");
    assert_eq!(
        seen.lock().clone(),
        [
            ResolveRequest::apply("approve"),
            ResolveRequest::discard("deny"),
            ResolveRequest::apply("tool")
        ]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(standing_seen.lock().is_empty());
    assert_eq!(pending_ids(&session), [&*staged_again]);
    assert!(!session.is_pending(&staged));

    // Once its turn ends (invoked, so resolved), the pending stack answers.
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    let resolve = write(&session, Device::Resolve, "now").await;
    assert_eq!(resolve.text, "p");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_queue_invoker_error_surfaces_with_its_errno() {
    let session = Session::new();
    session.enqueue_directive(Directive::new([ToolChoice::new("ask").with_invoker(
        queue_invoker(|request: ResolveRequest| async move {
            match request.action {
                Action::Apply => Err(Error::Busy("Reviewer is busy.".into())),
                Action::Discard => Ok(ToolResult::error("Could not decline.")),
            }
        }),
    )]));
    session.serve_tool_choice().expect("served");
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text, "Reviewer is busy.");
    assert_eq!(resolve.errno(), libc::EBUSY);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text, "Could not decline.");
    assert_eq!(reject.errno(), libc::EIO);
}

// ----- directives --------------------------------------------------------------------

type ReasonLog = Arc<Mutex<Vec<(String, RejectReason)>>>;

fn directive(tools: &[&str], action: RejectAction) -> (Directive, ReasonLog) {
    let log: ReasonLog = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    let directive = Directive::new(tools.iter().map(|tool| ToolChoice::new(*tool))).on_reject(
        move |choice, reason| {
            record.lock().push((choice.tool_name.clone(), reason));
            action
        },
    );
    (directive, log)
}

fn served(session: &Session) -> Option<String> {
    session.serve_tool_choice().map(|choice| choice.tool_name)
}

fn hard(session: &Session) -> Option<String> {
    match session.next_tool_choice_directive() {
        Some(ToolChoiceDirective::Hard { tool_name }) => Some(tool_name),
        _ => None,
    }
}

#[test]
fn directives_yield_their_choices_in_order_one_per_turn() {
    let session = Session::new();
    let (first, log) = directive(&["read", "edit"], RejectAction::Drop);
    let (second, _) = directive(&["bash"], RejectAction::Drop);
    session.enqueue_directive(first);
    session.enqueue_directive(second);
    assert_eq!(hard(&session).as_deref(), Some("read"));
    assert_eq!(served(&session).as_deref(), Some("read"));
    // Serving again in the same turn returns the choice in flight.
    assert_eq!(served(&session).as_deref(), Some("read"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session).as_deref(), Some("edit"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session).as_deref(), Some("bash"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session), None);
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert!(log.lock().is_empty());
}

#[test]
fn a_rejected_choice_is_dropped_by_default() {
    let session = Session::new();
    session.enqueue_directive(Directive::new([ToolChoice::new("a"), ToolChoice::new("b")]));
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert_eq!(
        session.finish_turn(TurnEnd::Rejected(RejectReason::Error)),
        Some(RejectReason::Error)
    );
    assert_eq!(served(&session).as_deref(), Some("b"));
}

#[test]
fn reject_callback_requeue_puts_the_choice_back_at_the_head() {
    let session = Session::new();
    let (first, log) = directive(&["a", "b"], RejectAction::Requeue);
    let (second, _) = directive(&["z"], RejectAction::Drop);
    session.enqueue_directive(first);
    session.enqueue_directive(second);
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert_eq!(
        session.finish_turn(TurnEnd::Rejected(RejectReason::Unavailable)),
        Some(RejectReason::Unavailable)
    );
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("b"));
    // The last choice of a directive also comes back at the head.
    session.finish_turn(TurnEnd::Rejected(RejectReason::Aborted));
    assert_eq!(hard(&session).as_deref(), Some("b"));
    assert_eq!(served(&session).as_deref(), Some("b"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("z"));
    assert_eq!(
        log.lock().clone(),
        [
            ("a".to_string(), RejectReason::Unavailable),
            ("b".to_string(), RejectReason::Aborted)
        ]
    );
}

#[test]
fn reject_callback_drop_keeps_the_rest_and_drop_sequence_drops_it() {
    let session = Session::new();
    let (dropping, _) = directive(&["a", "b"], RejectAction::Drop);
    let (dropping_all, log) = directive(&["c", "d", "e"], RejectAction::DropSequence);
    let (last, _) = directive(&["z"], RejectAction::Drop);
    session.enqueue_directive(dropping);
    session.enqueue_directive(dropping_all);
    session.enqueue_directive(last);
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.finish_turn(TurnEnd::Rejected(RejectReason::Error));
    assert_eq!(served(&session).as_deref(), Some("b"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("c"));
    session.finish_turn(TurnEnd::Rejected(RejectReason::Error));
    assert_eq!(served(&session).as_deref(), Some("z"));
    assert_eq!(log.lock().clone(), [("c".to_string(), RejectReason::Error)]);
}

#[test]
fn an_invoker_never_invoked_is_rejected_not_invoked() {
    let session = Session::new();
    let log: ReasonLog = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    let (invoker, _) = recording_invoker("x");
    session.enqueue_directive(
        Directive::new([ToolChoice::new("approve").with_invoker(invoker)]).on_reject(
            move |choice, reason| {
                record.lock().push((choice.tool_name.clone(), reason));
                RejectAction::Requeue
            },
        ),
    );
    assert_eq!(served(&session).as_deref(), Some("approve"));
    assert_eq!(
        session.finish_turn(TurnEnd::Resolved),
        Some(RejectReason::NotInvoked)
    );
    assert_eq!(
        log.lock().clone(),
        [("approve".to_string(), RejectReason::NotInvoked)]
    );
    // The callback asked to requeue it.
    assert_eq!(served(&session).as_deref(), Some("approve"));
}

#[tokio::test]
async fn an_invoked_invoker_resolves_normally() {
    let session = Session::new();
    let (invoker, _) = recording_invoker("x");
    let log: ReasonLog = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    session.enqueue_directive(
        Directive::new([ToolChoice::new("approve").with_invoker(invoker)]).on_reject(
            move |choice, reason| {
                record.lock().push((choice.tool_name.clone(), reason));
                RejectAction::Requeue
            },
        ),
    );
    session.serve_tool_choice();
    write(&session, Device::Resolve, "yes").await;
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert!(log.lock().is_empty());
    assert_eq!(session.next_tool_choice_directive(), None);
}

#[test]
fn clearing_rejects_the_in_flight_choice_cleared_whatever_the_callback_says() {
    let session = Session::new();
    let (first, log) = directive(&["a", "b"], RejectAction::Requeue);
    let (second, _) = directive(&["c"], RejectAction::Requeue);
    session.enqueue_directive(first);
    session.enqueue_directive(second);
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.clear_directives();
    assert_eq!(
        log.lock().clone(),
        [("a".to_string(), RejectReason::Cleared)]
    );
    assert_eq!(session.next_tool_choice_directive(), None);
    assert_eq!(served(&session), None);
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
}

#[test]
fn removing_a_directive_rejects_its_in_flight_choice_removed() {
    let session = Session::new();
    let (first, log) = directive(&["a", "b"], RejectAction::Requeue);
    let (second, _) = directive(&["c"], RejectAction::Drop);
    let first_id = session.enqueue_directive(first);
    let second_id = session.enqueue_directive(second);
    assert_ne!(first_id, second_id);
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert!(session.remove_directive(first_id));
    assert_eq!(
        log.lock().clone(),
        [("a".to_string(), RejectReason::Removed)]
    );
    // Nothing of the removed directive comes back, requeue or not.
    assert_eq!(served(&session).as_deref(), Some("c"));
    assert!(session.remove_directive(second_id));
    assert_eq!(served(&session), None);
    assert!(!session.remove_directive(first_id));

    // A queued (not in-flight) directive is simply removed.
    let (third, third_log) = directive(&["d"], RejectAction::Drop);
    let third_id = session.enqueue_directive(third);
    assert!(session.remove_directive(third_id));
    assert!(third_log.lock().is_empty());
    assert_eq!(session.next_tool_choice_directive(), None);
}

// ----- next tool-choice directive ------------------------------------------------------

#[test]
fn hard_directives_come_first_then_the_soft_requirement() {
    let session = Session::new();
    assert_eq!(session.next_tool_choice_directive(), None);
    let id = session.queue_resolve_handler("edit a.rs", "edit", echo_apply("a"), None);
    session.enqueue_directive(Directive::new([ToolChoice::new("todo_write")]));

    // Asking consumes nothing.
    for _ in 0..3 {
        assert_eq!(
            session.next_tool_choice_directive(),
            Some(ToolChoiceDirective::Hard {
                tool_name: "todo_write".into()
            })
        );
    }
    assert_eq!(served(&session).as_deref(), Some("todo_write"));
    assert_eq!(hard(&session).as_deref(), Some("todo_write"));
    session.finish_turn(TurnEnd::Resolved);

    for _ in 0..3 {
        let requirement = soft(&session);
        assert_eq!(requirement.id, id);
        assert_eq!(requirement.tool_name, "write");
        assert_eq!(requirement.reminder, reminder("edit", "/xdev"));
    }
    assert_eq!(session.pending_count(), 1);
}

#[test]
fn the_soft_requirement_follows_the_head_and_the_mount_dir() {
    let session = Session::new();
    session.set_mount_dir("/mnt/agent");
    let first = stage(&session, "a", "edit");
    let second = stage(&session, "b", "apply_patch");
    let requirement = soft(&session);
    assert_eq!(requirement.id, second);
    assert_eq!(
        requirement.reminder,
        "<system-reminder>\n`apply_patch` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `/mnt/agent/resolve` to APPLY, or `/mnt/agent/reject` to DISCARD.\n</system-reminder>"
    );
    assert!(requirement.accepts("write", Some("/mnt/agent/resolve")));
    assert!(!requirement.accepts("write", Some("/xdev/resolve")));
    assert!(session.withdraw(&second, "producer exited"));
    assert_eq!(soft(&session).id, first);
}

#[test]
fn the_predicate_accepts_only_writes_to_resolve_or_reject() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let requirement = soft(&session);
    for path in [
        "/xdev/resolve",
        "/xdev/reject",
        "xd://resolve",
        "xd://reject",
    ] {
        assert!(requirement.accepts("write", Some(path)), "{path}");
        assert!(
            session.is_preview_resolution_tool_call("write", Some(path)),
            "{path}"
        );
    }
    for (tool, path) in [
        ("write", Some("/xdev/propose")),
        ("write", Some("xd://propose")),
        ("write", Some("/tmp/resolve")),
        ("write", Some("/xdev/resolve.txt")),
        ("write", Some("resolve")),
        ("write", None),
        ("edit", Some("/xdev/resolve")),
        ("bash", Some("xd://reject")),
        ("read", Some("/xdev/reject")),
    ] {
        assert!(!requirement.accepts(tool, path), "{tool} {path:?}");
        assert!(
            !session.is_preview_resolution_tool_call(tool, path),
            "{tool} {path:?}"
        );
    }
}

// ----- soft-requirement tracker ----------------------------------------------------------

fn write_call(path: &str) -> ToolCall {
    ToolCall::new("write", Some(path))
}

#[test]
fn tracker_compliant_turns_run_and_the_reminder_is_injected_once() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let requirement = soft(&session);
    let mut tracker = SoftRequirementTracker::new();

    let plan = tracker.before_model_call(Some(&requirement));
    assert_eq!(plan.reminder, Some(reminder("edit", "/xdev")));
    assert_eq!(plan.force_tool, None);
    assert_eq!(
        tracker.after_model_turn(Some(&requirement), &[write_call("/xdev/resolve")]),
        TurnVerdict::Run
    );
    assert_eq!(
        tracker.after_model_turn(
            Some(&requirement),
            &[write_call("xd://reject"), write_call("/xdev/resolve")]
        ),
        TurnVerdict::Run
    );
    let plan = tracker.before_model_call(Some(&requirement));
    assert_eq!(plan.reminder, None);
    assert_eq!(plan.force_tool, None);
    assert_eq!(tracker.forced_turns(), 0);

    // Without a requirement nothing is injected, forced or blocked.
    let plan = tracker.before_model_call(None);
    assert_eq!((plan.reminder, plan.force_tool), (None, None));
    assert_eq!(
        tracker.after_model_turn(None, &[ToolCall::new("bash", None)]),
        TurnVerdict::Run
    );
}

#[test]
fn tracker_detours_bare_text_other_tools_and_mixed_batches() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let requirement = soft(&session);
    let cases: [(&str, Vec<ToolCall>); 4] = [
        ("bare text", vec![]),
        ("other tool", vec![ToolCall::new("bash", None)]),
        ("write elsewhere", vec![write_call("/tmp/notes.md")]),
        (
            "mixed batch",
            vec![
                write_call("/xdev/resolve"),
                ToolCall::new("read", Some("/a")),
            ],
        ),
    ];
    for (name, calls) in cases {
        let mut tracker = SoftRequirementTracker::new();
        tracker.before_model_call(Some(&requirement));
        let verdict = tracker.after_model_turn(Some(&requirement), &calls);
        assert_eq!(
            verdict,
            TurnVerdict::Detour {
                results: vec![DETOUR.to_string(); calls.len()]
            },
            "{name}"
        );
        // Exactly the next model call is forced to `write`.
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool.as_deref(), Some("write"), "{name}");
        assert_eq!(plan.reminder, None, "{name}");
        assert_eq!(tracker.forced_turns(), 1, "{name}");
        assert_eq!(
            tracker.after_model_turn(Some(&requirement), &[write_call("/xdev/reject")]),
            TurnVerdict::Run,
            "{name}"
        );
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool, None, "{name}");
    }
}

#[test]
fn tracker_stops_after_three_forced_turns_for_the_same_head() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let requirement = soft(&session);
    let mut tracker = SoftRequirementTracker::new();
    tracker.before_model_call(Some(&requirement));
    let bash = [ToolCall::new("bash", Some("/xdev/resolve"))];
    for forced in 1..=3 {
        assert!(matches!(
            tracker.after_model_turn(Some(&requirement), &bash),
            TurnVerdict::Detour { .. }
        ));
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool.as_deref(), Some("write"));
        assert_eq!(tracker.forced_turns(), forced);
    }
    assert_eq!(
        tracker.after_model_turn(Some(&requirement), &bash),
        TurnVerdict::Stop(FORCE_LOOP.to_string())
    );
}

#[tokio::test]
async fn tracker_resets_and_reinjects_on_a_new_head_id() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let first = soft(&session);
    let mut tracker = SoftRequirementTracker::new();
    assert!(tracker.before_model_call(Some(&first)).reminder.is_some());
    for _ in 0..2 {
        tracker.after_model_turn(Some(&first), &[]);
        tracker.before_model_call(Some(&first));
    }
    assert_eq!(tracker.forced_turns(), 2);
    tracker.after_model_turn(Some(&first), &[]);

    // A newer preview becomes the head: count reset, reminder re-injected.
    stage(&session, "b", "apply_patch");
    let second = soft(&session);
    assert_ne!(second.id, first.id);
    let plan = tracker.before_model_call(Some(&second));
    assert_eq!(plan.reminder, Some(reminder("apply_patch", "/xdev")));
    assert_eq!(plan.force_tool, None);
    assert_eq!(tracker.forced_turns(), 0);
    // It gets its own three forced turns.
    for forced in 1..=3 {
        assert!(matches!(
            tracker.after_model_turn(Some(&second), &[]),
            TurnVerdict::Detour { .. }
        ));
        tracker.before_model_call(Some(&second));
        assert_eq!(tracker.forced_turns(), forced);
    }
    assert_eq!(
        tracker.after_model_turn(Some(&second), &[]),
        TurnVerdict::Stop(FORCE_LOOP.to_string())
    );

    // Resolving the new head brings the old one back as a new head id.
    write(&session, Device::Resolve, "ok").await;
    let back = soft(&session);
    assert_eq!(back.id, first.id);
    let plan = tracker.before_model_call(Some(&back));
    assert_eq!(plan.reminder, Some(reminder("edit", "/xdev")));
    assert_eq!(tracker.forced_turns(), 0);
}

// ----- abort -------------------------------------------------------------------------

#[tokio::test]
async fn abort_returns_at_once_and_the_late_apply_is_still_recorded() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow edit", "go").await;
    session.abort("user pressed stop");
    let answer = timeout(PROMPTLY, resolving)
        .await
        .expect("abort must answer at once, not wait for the apply")
        .expect("join");
    assert_eq!(answer.text, "Aborted: user pressed stop");
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert_eq!(
        answer.error,
        Some(Error::Aborted("user pressed stop".into()))
    );
    // The apply is still running: the preview is claimed, not decided.
    assert!(session.is_pending(&id));
    assert_eq!(session.in_progress_count(), 1);
    assert_eq!(session.pending_count(), 0);

    gate.release(Ok(ToolResult::ok("applied late")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(applied.id, id);
    assert_eq!(applied.text.as_deref(), Some("applied late"));
    assert_eq!(applied.reason.as_deref(), Some("go"));
    assert!(applied.abandoned, "nobody waited for this outcome");
    assert!(!session.is_pending(&id));
    assert_eq!(session.in_progress_count(), 0);

    // Later dispatches are not affected by the earlier abort, and their
    // callers got the outcome themselves.
    stage(&session, "next", "edit");
    let answer = write(&session, Device::Resolve, "fine").await;
    assert_eq!(answer.text, "applied next: fine");
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert!(!applied.abandoned);
}

#[tokio::test]
async fn abort_then_a_late_failure_requeues_the_preview() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow edit", "go").await;
    session.abort("shutdown");
    let answer = timeout(PROMPTLY, resolving)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.text, "Aborted: shutdown");

    gate.release(Err(CallbackError::Failed("disk full".into())));
    let failed = next_event(&mut events, EventKind::Failed).await;
    assert_eq!(failed.text.as_deref(), Some("Apply failed: disk full"));
    assert!(failed.abandoned);
    let requeued = next_event(&mut events, EventKind::Requeued).await;
    assert_eq!(requeued.id, id);
    assert_eq!(pending_ids(&session), [&*id]);

    // The requeued preview can be retried.
    let retry = write(&session, Device::Resolve, "retry").await;
    assert_eq!(retry.text, "applied on retry");
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn abort_also_releases_a_waiting_reject_and_tool() {
    let session = Session::new();
    let (release, released) = oneshot::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let id = session.queue_resolve_handler(
        "edit",
        "edit",
        echo_apply("edit"),
        Some(reject_fn(move |_reason, _extra| {
            let waiting = released.lock().take();
            let started_tx = started_tx.clone();
            async move {
                started_tx.send(()).expect("listening");
                if let Some(waiting) = waiting {
                    waiting.await.ok();
                }
                Ok(None)
            }
        })),
    );
    let rejecting = spawn_write(&session, Device::Reject, "no");
    timeout(PROMPTLY, started.recv()).await.expect("started");
    session.abort("esc");
    let answer = timeout(PROMPTLY, rejecting)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.text, "Aborted: esc");
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(session.is_pending(&id));
    let mut events = session.subscribe();
    release.send(()).expect("reject waiting");
    let discarded = next_event(&mut events, EventKind::Discarded).await;
    assert_eq!(
        discarded.text.as_deref(),
        Some("Discarded: edit. Reason: no")
    );
    assert!(!session.is_pending(&id));

    // The resolve tool races the abort signal too.
    let (gated, mut gate) = Gate::new();
    session.queue_resolve_handler("tool edit", "edit", gated, None);
    let tool_session = session.clone();
    let tool = tokio::spawn(async move {
        run_resolve_tool(&tool_session, ResolveRequest::apply("via tool")).await
    });
    gate.wait_started().await;
    session.abort("tool aborted");
    let answer = timeout(PROMPTLY, tool)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.text, "Aborted: tool aborted");
    gate.release(Ok(ToolResult::ok("late")));
    next_event(&mut events, EventKind::Applied).await;
}

// ----- session boundaries ------------------------------------------------------------------

#[tokio::test]
async fn session_boundaries_clear_pending_previews_and_directives() {
    type Boundary = fn(&Session);
    let boundaries: [(&str, Boundary); 3] = [
        ("new", Session::new_session),
        ("switch", Session::switch_session),
        ("branch", Session::branch_session),
    ];
    for (name, boundary) in boundaries {
        let session = Session::new();
        let a = stage(&session, "a", "edit");
        let b = stage(&session, "b", "edit");
        let (hard_directive, log) = directive(&["x", "y"], RejectAction::Requeue);
        session.enqueue_directive(hard_directive);
        session.enqueue_directive(Directive::new([ToolChoice::new("z")]));
        assert_eq!(served(&session).as_deref(), Some("x"));
        let mut events = session.subscribe();

        boundary(&session);

        assert_eq!(session.pending_count(), 0, "{name}");
        assert!(pending_ids(&session).is_empty(), "{name}");
        assert_eq!(session.next_tool_choice_directive(), None, "{name}");
        assert_eq!(served(&session), None, "{name}");
        assert_eq!(
            log.lock().clone(),
            [("x".to_string(), RejectReason::Cleared)],
            "{name}"
        );
        let seen = drain(&mut events);
        assert_eq!(
            kinds(&seen),
            [(EventKind::Cleared, b), (EventKind::Cleared, a)],
            "{name}"
        );
        assert!(seen.iter().all(|event| event.ok), "{name}");
        assert_eq!(
            write(&session, Device::Resolve, "x").await.text,
            NOTHING_TO_RESOLVE,
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_failing_apply_across_a_boundary_does_not_bring_the_preview_back() {
    let session = Session::new();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "go").await;
    let mut events = session.subscribe();
    session.new_session();
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Cleared, id.clone())]
    );
    gate.release(Err(CallbackError::Failed("late failure".into())));
    let answer = resolving.await.expect("join");
    assert_eq!(answer.text, "Apply failed: late failure");
    assert!(!session.is_pending(&id));
    assert_eq!(session.pending_count(), 0);
    assert_eq!(session.in_progress_count(), 0);
    assert!(drain(&mut events)
        .iter()
        .all(|event| event.kind != EventKind::Requeued));
}

// ----- events --------------------------------------------------------------------------------

#[tokio::test]
async fn events_report_every_change_with_its_id_label_tool_reason_and_text() {
    let session = Session::new();
    let mut events = session.subscribe();

    let applied = stage(&session, "edit a.rs", "edit");
    write(&session, Device::Resolve, "tests pass").await;

    let discarded = stage(&session, "edit b.rs", "edit");
    write(&session, Device::Reject, "wrong").await;

    let flaky = session.queue_resolve_handler(
        "edit c.rs",
        "apply_patch",
        flaky_apply(
            1,
            CallbackError::Failed("EROFS".into()),
            &Arc::new(AtomicUsize::new(0)),
        ),
        None,
    );
    write(&session, Device::Resolve, "try").await;
    assert!(session.withdraw(&flaky, "producer exited"));
    assert!(!session.withdraw(&flaky, "twice"));

    let cleared = stage(&session, "edit d.rs", "edit");
    session.clear_pending();

    let seen = drain(&mut events);
    let summary: Vec<_> = seen
        .iter()
        .map(|event| {
            (
                event.kind,
                event.id.as_str(),
                event.label.as_str(),
                event.source_tool.as_str(),
                event.reason.as_deref(),
                event.text.as_deref(),
                event.ok,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                EventKind::Staged,
                applied.as_str(),
                "edit a.rs",
                "edit",
                None,
                None,
                true
            ),
            (
                EventKind::Applied,
                applied.as_str(),
                "edit a.rs",
                "edit",
                Some("tests pass"),
                Some("applied edit a.rs: tests pass"),
                true
            ),
            (
                EventKind::Staged,
                discarded.as_str(),
                "edit b.rs",
                "edit",
                None,
                None,
                true
            ),
            (
                EventKind::Discarded,
                discarded.as_str(),
                "edit b.rs",
                "edit",
                Some("wrong"),
                Some("Discarded: edit b.rs. Reason: wrong"),
                true
            ),
            (
                EventKind::Staged,
                flaky.as_str(),
                "edit c.rs",
                "apply_patch",
                None,
                None,
                true
            ),
            (
                EventKind::Failed,
                flaky.as_str(),
                "edit c.rs",
                "apply_patch",
                Some("try"),
                Some("Apply failed: EROFS"),
                false
            ),
            (
                EventKind::Requeued,
                flaky.as_str(),
                "edit c.rs",
                "apply_patch",
                Some("try"),
                Some("Apply failed: EROFS"),
                false
            ),
            (
                EventKind::Withdrawn,
                flaky.as_str(),
                "edit c.rs",
                "apply_patch",
                Some("producer exited"),
                None,
                true
            ),
            (
                EventKind::Staged,
                cleared.as_str(),
                "edit d.rs",
                "edit",
                None,
                None,
                true
            ),
            (
                EventKind::Cleared,
                cleared.as_str(),
                "edit d.rs",
                "edit",
                None,
                None,
                true
            ),
        ]
    );
    assert_eq!(
        serde_json::to_value(&seen[1]).expect("serializes"),
        json!({
            "kind": "applied",
            "id": applied,
            "label": "edit a.rs",
            "sourceTool": "edit",
            "reason": "tests pass",
            "text": "applied edit a.rs: tests pass",
            "ok": true,
        })
    );
    // Every subscriber sees every event.
    let mut late = session.subscribe();
    stage(&session, "e", "edit");
    assert_eq!(drain(&mut late).len(), 1);
    assert_eq!(drain(&mut events).len(), 1);
}

// ----- exact texts ---------------------------------------------------------------------------

#[test]
fn device_usage_lines_are_exact() {
    assert_eq!(
        Device::Resolve.usage("/xdev"),
        "Write a one-sentence reason as plain text to /xdev/resolve to APPLY the pending staged action (e.g. a tool preview)."
    );
    assert_eq!(
        Device::Reject.usage("/xdev"),
        "Write a one-sentence reason as plain text to /xdev/reject to DISCARD the pending staged action (e.g. a tool preview)."
    );
    assert_eq!(
        Device::Propose.usage("/mnt/x"),
        "Write your plan's <slug> (matching <slug>-plan.md) as plain text to /mnt/x/propose to submit the plan for approval. Valid only while plan mode is active."
    );
    assert_eq!(
        [Device::Resolve, Device::Reject, Device::Propose].map(Device::name),
        ["resolve", "reject", "propose"]
    );
}

#[test]
fn the_mount_dir_defaults_to_xdev() {
    let session = Session::new();
    assert_eq!(session.mount_dir(), "/xdev");
    assert_eq!(xdev::DEFAULT_MOUNT_DIR, "/xdev");
}

#[test]
fn error_kinds_know_their_errno() {
    assert_eq!(Error::Aborted("why".into()).to_string(), "Aborted: why");
    assert_eq!(Error::Aborted("why".into()).errno(), libc::ECANCELED);
    assert_eq!(Error::NothingToResolve(String::new()).errno(), libc::ENOENT);
    assert_eq!(Error::NotInPlanMode(String::new()).errno(), libc::EPERM);
    assert_eq!(Error::InvalidPlanTitle(String::new()).errno(), libc::EINVAL);
    assert_eq!(Error::CallbackFailed(String::new()).errno(), libc::EIO);
    assert_eq!(Error::ErrorResult(String::new()).errno(), libc::EIO);
}

// ----- exactly once, the corners ---------------------------------------------------------

#[tokio::test]
async fn restaging_a_preview_being_applied_does_not_let_it_apply_twice() {
    let session = Session::new();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "first").await;
    session.restage(&id);
    let second = write(&session, Device::Resolve, "second").await;
    assert_eq!(
        second.text, NOTHING_TO_RESOLVE,
        "claimed preview applied twice"
    );
    gate.release(Ok(ToolResult::ok("applied once")));
    assert_eq!(resolving.await.expect("join").text, "applied once");
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn a_panicking_apply_counts_as_a_failure_and_requeues() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        apply_fn(move |_reason, _extra| {
            let attempt = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if attempt == 1 {
                    panic!("apply callback bug");
                }
                Ok(ToolResult::ok("applied after panic"))
            }
        }),
        None,
    );
    let answer = write(&session, Device::Resolve, "x").await;
    assert_eq!(answer.errno(), libc::EIO);
    assert!(answer.text.starts_with("Apply failed: "), "{}", answer.text);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
    let retry = write(&session, Device::Resolve, "x").await;
    assert_eq!(retry.text, "applied after panic");
}

#[tokio::test]
async fn a_panicking_reject_leaves_the_preview_pending() {
    let session = Session::new();
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        echo_apply("edit a.rs"),
        Some(reject_fn(|_reason, _extra| async {
            panic!("reject callback bug")
        })),
    );
    let answer = write(&session, Device::Reject, "x").await;
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
}

#[tokio::test]
async fn a_cancelled_wait_returns_its_error_and_the_apply_still_completes() {
    let session = Session::new();
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler("slow", "edit", apply, None);
    let mut events = session.subscribe();
    let (signal, signalled) = oneshot::channel::<()>();
    let cancel: xdev::Cancel = Box::pin(async move {
        signalled.await.ok();
        Error::Interrupted
    });
    let waiting = session.clone();
    let writer = tokio::spawn(async move {
        xdev::dispatch_resolution_device_until(&waiting, Device::Resolve, "go", Some(cancel)).await
    });
    gate.wait_started().await;
    signal.send(()).expect("writer waiting");
    let answer = timeout(PROMPTLY, writer)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.error, Some(Error::Interrupted));
    assert_eq!(answer.errno(), libc::EINTR);
    assert!(session.is_pending(&id));
    gate.release(Ok(ToolResult::ok("applied after the writer left")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(
        applied.text.as_deref(),
        Some("applied after the writer left")
    );
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn a_refused_decision_runs_nothing_and_leaves_the_preview_where_it_stood() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let older = session.queue_resolve_handler("older", "edit", counted_apply(&calls, "a"), None);
    let newer = session.queue_resolve_handler("newer", "edit", counted_apply(&calls, "b"), None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let refuse = |seen: &Arc<Mutex<Vec<String>>>| {
        let seen = Arc::clone(seen);
        xdev::DispatchHooks {
            cancel: None,
            before_decision: Some(Box::new(move |id: &str, details: &Details| {
                seen.lock()
                    .push(format!("{id} {:?} {}", details.action, details.reason));
                Err(Error::JournalUnwritable {
                    errno: libc::ENOSPC,
                    cause: "No space left on device".into(),
                })
            })),
        }
    };
    let answer = xdev::dispatch_device_with(&session, Device::Resolve, "go", refuse(&seen)).await;
    assert_eq!(answer.errno(), libc::ENOSPC);
    assert_eq!(answer.id.as_deref(), Some(newer.as_str()));
    let request = ResolveRequest::discard("no");
    let answer = xdev::decide_pending_with(&session, &older, request, refuse(&seen)).await;
    assert_eq!(answer.errno(), libc::ENOSPC);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no callback ran");
    assert_eq!(pending_ids(&session), [newer.clone(), older.clone()]);
    assert_eq!(session.in_progress_count(), 0);
    assert_eq!(
        *seen.lock(),
        [format!("{newer} Apply go"), format!("{older} Discard no")]
    );
    // Nothing pending: no decision, so the check is not asked.
    let empty = Session::new();
    let answer = xdev::dispatch_device_with(&empty, Device::Reject, "x", refuse(&seen)).await;
    assert!(answer.is_ok());
    assert_eq!(seen.lock().len(), 2);
}

// ----- issue 9 --------------------------------------------------------------------

/// A cancel signal that has fired already (the user pressed Ctrl-C before
/// the dispatch began).
fn fired_cancel(why: &str) -> xdev::Cancel {
    let error = Error::Aborted(why.to_string());
    Box::pin(async move { error })
}

#[tokio::test]
async fn a_cancel_that_has_already_fired_never_starts_the_work() {
    let session = Session::new();
    let mut events = session.subscribe();
    let calls = Arc::new(AtomicUsize::new(0));
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        counted_apply(&calls, "ran anyway"),
        None,
    );
    drain(&mut events);

    let answer = xdev::dispatch_resolution_device_until(
        &session,
        Device::Resolve,
        "go",
        Some(fired_cancel("ctrl-c")),
    )
    .await;
    assert_eq!(answer.text, "Aborted: ctrl-c");
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert_eq!(answer.id.as_deref(), Some(&*id));
    // Nothing ran, nothing was recorded, and the preview waits where it was.
    tokio::task::yield_now().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
    assert!(drain(&mut events).is_empty());

    // The resolve tool takes a per-call cancel too.
    let answer = xdev::run_resolve_tool_until(
        &session,
        ResolveRequest::apply("go"),
        Some(fired_cancel("turn aborted")),
    )
    .await;
    assert_eq!(answer.text, "Aborted: turn aborted");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(pending_ids(&session), [&*id]);

    // A cancel that never fires lets the next resolve apply it once.
    let answer = write(&session, Device::Resolve, "now").await;
    assert_eq!(answer.text, "ran anyway");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(session.pending_count(), 0);
}

#[tokio::test]
async fn a_fired_cancel_never_calls_a_queue_invoker_or_the_standing_handler() {
    let session = Session::new();
    let (handler, seen) = recording_invoker("standing handled");
    session.set_standing_resolve_handler(handler);
    let answer = xdev::run_resolve_tool_until(
        &session,
        ResolveRequest::apply("go"),
        Some(fired_cancel("turn aborted")),
    )
    .await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn the_resolve_tool_gives_up_when_its_cancel_fires_and_the_apply_runs_on() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler("slow edit", "edit", apply, None);
    let (fire, fired) = oneshot::channel::<()>();
    let cancel: xdev::Cancel = Box::pin(async move {
        let _ = fired.await;
        Error::Aborted("turn aborted".into())
    });
    let tool = {
        let session = session.clone();
        tokio::spawn(async move {
            xdev::run_resolve_tool_until(&session, ResolveRequest::apply("go"), Some(cancel)).await
        })
    };
    gate.wait_started().await;
    fire.send(()).expect("cancel waiting");
    let answer = timeout(PROMPTLY, tool)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.text, "Aborted: turn aborted");
    gate.release(Ok(ToolResult::ok("applied late")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(applied.id, id);
    assert!(applied.abandoned);
}

#[tokio::test]
async fn custom_tools_keep_their_result_details() {
    let session = Session::new();
    session.push_pending_action(
        "deploy staging",
        apply_fn(|reason, _extra| async move {
            Ok(ToolResult::ok(format!("deployed: {reason}")).with_details(json!({"run": 1})))
        }),
        None,
        None,
    );
    let answer = write(&session, Device::Resolve, "go").await;
    let details = answer.details.expect("details");
    assert_eq!(details.source_result_details, Some(json!({"run": 1})));
}

#[tokio::test]
async fn queue_invokers_and_the_standing_handler_name_themselves() {
    let session = Session::new();
    session.set_standing_resolve_handler(queue_invoker(|_request| async {
        Ok(ToolResult::ok("plan approved").named("approve plan", "plan_approval"))
    }));
    let tool = run_resolve_tool(&session, ResolveRequest::apply("ok")).await;
    let details = tool.details.expect("details");
    assert_eq!(details.label, "approve plan");
    assert_eq!(details.source_tool_name, "plan_approval");

    session.enqueue_directive(Directive::new([ToolChoice::new("ask").with_invoker(
        queue_invoker(|_request| async {
            Ok(ToolResult::ok("asked").named("ask the user", "ask_tool"))
        }),
    )]));
    session.serve_tool_choice();
    let answer = write(&session, Device::Resolve, "x").await;
    let details = answer.details.expect("details");
    assert_eq!(details.label, "ask the user");
    assert_eq!(details.source_tool_name, "ask_tool");
    session.finish_turn(TurnEnd::Resolved);

    // Unnamed, a handler is named after its tool.
    session.set_standing_resolve_handler(queue_invoker(|_request| async {
        Ok(ToolResult::ok("handled"))
    }));
    let tool = run_resolve_tool(&session, ResolveRequest::apply("ok")).await;
    let details = tool.details.expect("details");
    assert_eq!(
        (&*details.label, &*details.source_tool_name),
        ("resolve", "resolve")
    );
}

#[test]
fn the_predicate_accepts_the_xd_prefix_in_any_case() {
    let session = Session::new();
    stage(&session, "a", "edit");
    let requirement = soft(&session);
    for path in ["XD://resolve", "Xd://reject", "xD://resolve"] {
        assert!(requirement.accepts("write", Some(path)), "{path}");
        assert!(
            session.is_preview_resolution_tool_call("write", Some(path)),
            "{path}"
        );
    }
    for path in ["XD://propose", "XD:/resolve", "XDresolve"] {
        assert!(!requirement.accepts("write", Some(path)), "{path}");
    }
}

#[tokio::test]
async fn propose_returns_the_plan_handlers_details_and_reports_them_in_an_event() {
    let session = Session::new();
    let mut events = session.subscribe();
    let details = xdev::PlanApprovalDetails {
        title: "auth".into(),
        plan_path: "/plans/auth-plan.md".into(),
        outcome: xdev::PlanOutcome::Approved,
    };
    let given = details.clone();
    session.set_plan_proposal_handler(xdev::plan_reply_handler(move |_proposal| {
        let details = given.clone();
        async move {
            Ok(xdev::PlanReply::new(
                ToolResult::ok("Plan approved."),
                details,
            ))
        }
    }));
    let answer = write(&session, Device::Propose, "auth").await;
    assert_eq!(answer.text, "Plan approved.");
    assert_eq!(answer.plan, Some(details.clone()));

    let event = next_event(&mut events, EventKind::Proposed).await;
    assert_eq!(event.plan, Some(details));
    assert_eq!(event.text.as_deref(), Some("Plan approved."));
    assert!(event.ok);
    assert_eq!(
        serde_json::to_value(&event)
            .ok()
            .and_then(|v| v.get("plan").cloned()),
        Some(json!({"title": "auth", "planPath": "/plans/auth-plan.md", "outcome": "approved"}))
    );
}
