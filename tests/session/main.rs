//! The session queue through the public API only, one module per concern.
//! No FUSE: every device write goes through `dispatch_resolution_device`,
//! exactly as the mount does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;
use xdev::dispatch::{dispatch_resolution_device, Details};
use xdev::harness::{
    queue_invoker, Directive, RejectAction, RejectReason, SoftRequirement, SoftRequirementTracker,
    ToolCall, ToolChoice, ToolChoiceDirective, TurnEnd, TurnVerdict,
};
use xdev::session::{plan_handler, Action, Event, EventKind, EventStream, PlanProposal, PlanTitle};
use xdev::{
    apply_fn, reject_fn, ApplyFn, CallbackError, Decision, Device, Dispatch, Error, RejectFn,
    ResolveRequest, Session, StageOptions, ToolResult,
};

mod abort;
mod boundaries;
mod details;
mod directives;
mod events;
mod exactly_once;
mod failures;
mod handlers;
mod plan;
mod scopes;
mod soft_requirement;
mod stack;
mod texts;

// ----- exact texts, written out in full -----------------------------------

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

/// Stages `label` (tool `edit`, an [`echo_apply`] of the label) with this
/// reject callback.
fn stage_with_reject(session: &Session, label: &str, reject: RejectFn) -> String {
    session.queue_resolve_handler(label, "edit", echo_apply(label), Some(reject))
}

/// Stages `label` (tool `edit`) with a [`flaky_apply`] that fails its first
/// `failures` calls with `error`: the preview's id and the count of the
/// apply's calls.
fn stage_flaky(
    session: &Session,
    label: &str,
    failures: usize,
    error: CallbackError,
) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let id =
        session.queue_resolve_handler(label, "edit", flaky_apply(failures, error, &calls), None);
    (id, calls)
}

/// A session with `edit a.rs` staged with this reject callback, and the
/// preview rejected with `reason`: the session, the preview's id, and the
/// answer.
async fn rejected_through(reject: RejectFn, reason: &str) -> (Session, String, Decision) {
    let session = Session::new();
    let id = stage_with_reject(&session, "edit a.rs", reject);
    let answer = write(&session, Device::Reject, reason).await;
    (session, id, answer)
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

async fn write(session: &Session, device: Device, body: &str) -> Decision {
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
) -> tokio::task::JoinHandle<Decision> {
    let session = session.clone();
    tokio::spawn(async move { dispatch_resolution_device(&session, device, body).await })
}

/// Stages a preview whose apply waits on a [`Gate`], starts resolving it,
/// and returns once its apply has started.
async fn resolving_gated(
    session: &Session,
    label: &str,
    reason: &'static str,
) -> (String, Gate, tokio::task::JoinHandle<Decision>) {
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler(label, "edit", apply, None);
    let resolving = spawn_write(session, Device::Resolve, reason);
    gate.wait_started().await;
    (id, gate, resolving)
}

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

/// Enqueues a [`directive`] of these tools on the session; its reject log.
fn enqueue(session: &Session, tools: &[&str], action: RejectAction) -> ReasonLog {
    let (directive, log) = directive(tools, action);
    session.enqueue_directive(directive);
    log
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

fn recording_invoker(
    answer: &'static str,
) -> (xdev::harness::QueueInvoker, Arc<Mutex<Vec<ResolveRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let invoker = queue_invoker(move |request: ResolveRequest| {
        record.lock().push(request);
        async move { Ok(ToolResult::ok(answer).with_details(json!({"from": answer}))) }
    });
    (invoker, seen)
}

/// What a spawned write or tool answers, which must come at once.
async fn answered_at_once<T>(task: tokio::task::JoinHandle<T>) -> T {
    timeout(PROMPTLY, task)
        .await
        .expect("answers at once")
        .expect("join")
}

/// A resolve of `body` whose cancel signal has fired already with `why`.
async fn resolve_with_fired_cancel(session: &Session, body: &str, why: &str) -> Decision {
    Dispatch::device(Device::Resolve, body)
        .cancel(fired_cancel(why))
        .run(session)
        .await
}

/// A cancel signal that has fired already (the user pressed Ctrl-C before
/// the dispatch began).
fn fired_cancel(why: &str) -> xdev::dispatch::Cancel {
    let error = Error::Aborted(why.to_string());
    Box::pin(async move { error })
}
