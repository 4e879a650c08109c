//! Finalizing previews: the three devices, per-item decisions and the
//! resolve tool, each raced against the session's abort signal.
//!
//! Every callback runs in its own tokio task, so a caller that stops
//! waiting (an abort, a writer's signal) never cancels it: the preview's
//! eventual outcome (consumed, or requeued after a failure) is still recorded.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use serde::Serialize;
use serde_json::Value;

use crate::device::Device;
use crate::error::{CallbackError, Error};
use crate::session::directives::QueueInvoker;
use crate::session::events::EventKind;
use crate::session::plan::{proposal_from_body, PlanApprovalDetails};
use crate::session::preview::{BoxFuture, Preview, ToolResult};
use crate::session::request::{Action, ResolveRequest};
use crate::session::{Next, Scope, Session};
use crate::texts;

/// The details every result carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// `apply` or `discard`.
    pub action: Action,
    /// The reason given.
    pub reason: String,
    /// The caller's extra, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    /// The tool that staged the preview.
    pub source_tool_name: String,
    /// The preview's label.
    pub label: String,
    /// The callback's own details, only when it returned some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_result_details: Option<Value>,
    /// The agent call the preview answers, for the journal only: it is not
    /// one of the result details a caller sees, so it is not serialized.
    #[serde(skip)]
    pub origin: Option<crate::session::preview::Origin>,
}

/// The answer to a dispatch: its text, its details, and the error if it failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// What the user sees (the error's message when it failed).
    pub text: String,
    /// The details of the decided preview, when one was decided.
    pub details: Option<Details>,
    /// Why it failed; `None` on success.
    pub error: Option<Error>,
    /// The id of the preview this dispatch decided (or tried to), if any.
    pub id: Option<String>,
    /// The plan a `propose` was about, when its handler named it.
    pub plan: Option<PlanApprovalDetails>,
}

impl Resolution {
    /// A success with this text.
    pub fn ok(text: impl Into<String>, details: Option<Details>) -> Self {
        Resolution {
            text: text.into(),
            details,
            error: None,
            id: None,
            plan: None,
        }
    }

    /// A failure; its text is the error's message.
    pub fn failed(error: Error, details: Option<Details>) -> Self {
        Resolution {
            text: error.to_string(),
            details,
            error: Some(error),
            id: None,
            plan: None,
        }
    }

    /// Whether the handler succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// 0 on success, else the errno the device write fails with.
    pub fn errno(&self) -> i32 {
        self.error.as_ref().map_or(0, Error::errno)
    }

    fn from_handler(result: Result<ToolResult, Error>, details: Option<Details>) -> Self {
        match result {
            Ok(result) if result.is_error => {
                Resolution::failed(Error::ErrorResult(result.text), details)
            }
            Ok(result) => Resolution::ok(result.text, details),
            Err(error) => Resolution::failed(error, details),
        }
    }
}

/// Something that, when it completes, stops the caller waiting with this
/// error (a writer's signal, a deadline). The handler itself keeps running.
pub type Cancel = BoxFuture<Error>;

/// Runs once a preview is claimed for a decision, before its callback runs,
/// with the preview's id and the decision's details. An error refuses the
/// decision: the preview is released where it stood, nothing runs, and the
/// error is the result. (The mount writes its journal's intent record here,
/// and waits for it to be on disk without holding any thread.)
pub type BeforeDecision = Box<dyn FnOnce(&str, &Details) -> BoxFuture<Result<(), Error>> + Send>;

/// Told the id of the preview a dispatch decides, once its decision runs:
/// a caller that may stop waiting learns which preview it leaves deciding.
pub type OnClaim = Box<dyn FnOnce(&str) + Send>;

/// What a dispatch is raced against and checked with.
#[derive(Default)]
pub struct DispatchHooks {
    /// Stops the caller waiting (see [`Cancel`]).
    pub cancel: Option<Cancel>,
    /// May refuse a decision once its preview is claimed (see
    /// [`BeforeDecision`]).
    pub before_decision: Option<BeforeDecision>,
    /// Told which preview the decision decides (see [`OnClaim`]).
    pub on_claim: Option<OnClaim>,
}

impl std::fmt::Debug for DispatchHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchHooks")
            .field("cancel", &self.cancel.is_some())
            .field("before_decision", &self.before_decision.is_some())
            .field("on_claim", &self.on_claim.is_some())
            .finish()
    }
}

impl DispatchHooks {
    /// Only a cancel signal.
    pub fn cancel(cancel: Option<Cancel>) -> Self {
        DispatchHooks {
            cancel,
            ..DispatchHooks::default()
        }
    }

    /// The error of a cancel that has fired already. Checked before a
    /// dispatch takes anything (a claim, a queue invoker), so a caller that
    /// gave up before it began uses up nothing and holds nobody up.
    fn fired(&mut self) -> Option<Error> {
        let cancel = self.cancel.as_mut()?;
        futures::FutureExt::now_or_never(cancel.as_mut())
    }
}

/// What a dispatch runs: the handler's future, the preview it decides and
/// how (if any), and whether it must finish even when nobody waits for it
/// any more.
struct Work {
    future: BoxFuture<Resolution>,
    decides: Option<(Arc<Preview>, Arc<ResolveRequest>)>,
    must_finish: bool,
}

impl Work {
    /// A preview's callback: it always runs to the end, so the preview's
    /// outcome (consumed, or requeued after a failure) is recorded.
    fn preview(session: &Session, preview: Arc<Preview>, request: ResolveRequest) -> Self {
        let request = Arc::new(request);
        Work {
            future: Box::pin(invoke(
                session.clone(),
                Arc::clone(&preview),
                Arc::clone(&request),
            )),
            decides: Some((preview, request)),
            must_finish: true,
        }
    }

    /// A handler with no preview behind it (a queue invoker, the standing
    /// handler): it also runs to the end.
    fn handler(future: BoxFuture<Resolution>) -> Self {
        Work {
            future,
            decides: None,
            must_finish: true,
        }
    }

    /// A plan proposal: nothing is staged, so a writer that gives up
    /// withdraws it (dropping the handler's future cancels a review).
    fn proposal(future: BoxFuture<Resolution>) -> Self {
        Work {
            future,
            decides: None,
            must_finish: false,
        }
    }
}

/// Work in progress. If dropped unfinished (its caller stopped waiting, or
/// the caller's own future was dropped), work that must finish is moved onto
/// the tokio runtime to finish there, its preview marked abandoned so that
/// its outcome is reported; other work is dropped with it.
struct Detached<'a> {
    work: Option<BoxFuture<Resolution>>,
    must_finish: bool,
    session: &'a Session,
    preview: Option<&'a Preview>,
}

impl Drop for Detached<'_> {
    fn drop(&mut self) {
        let Some(work) = self.work.take() else { return };
        if !self.must_finish {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                if let Some(preview) = self.preview {
                    // Before the work can run on: its outcome event says so.
                    self.session.abandon(preview);
                }
                drop(runtime.spawn(work));
            }
            Err(_) => {
                tracing::error!("a preview callback was dropped unfinished outside a tokio runtime")
            }
        }
    }
}

/// Drives `work` until it finishes, unless the session aborts or `cancel`
/// fires first; then the caller gets the abort at once and work that must
/// finish runs on in the background. A `cancel` that has fired before the
/// dispatch began starts nothing: the work is never polled and its preview
/// stays pending. Polling `work` here (rather than
/// spawning it up front) lets a callback that finishes at once answer with
/// no thread hop.
async fn race(session: &Session, work: Work, hooks: DispatchHooks) -> Resolution {
    let Work {
        future,
        decides,
        must_finish,
    } = work;
    let mut cancel = hooks
        .cancel
        .unwrap_or_else(|| Box::pin(std::future::pending()));
    // The callers checked the cancel before taking anything; one that fired
    // since (while the claim was made) still runs nothing, and the claimed
    // preview goes back unrun.
    if let Some(error) = futures::FutureExt::now_or_never(cancel.as_mut()) {
        drop(future);
        let Some((preview, request)) = decides else {
            return Resolution::failed(error, None);
        };
        session.release_claim(&preview);
        let mut resolution = Resolution::failed(error, Some(details_for(&preview, &request, None)));
        resolution.id = Some(preview.id.to_string());
        return resolution;
    }
    if let (Some((preview, request)), Some(before)) = (&decides, hooks.before_decision) {
        // The callback has not been polled yet: refusing drops it unrun.
        let details = details_for(preview, request, None);
        // A dispatch dropped while it waits (a runtime shutting down) must
        // not leave the preview claimed for good.
        let claim = ClaimHeld {
            session,
            preview: Some(preview),
        };
        let checked = before(&preview.id, &details).await;
        claim.keep();
        if let Err(refused) = checked {
            session.release_claim(preview);
            let mut resolution = Resolution::failed(refused, Some(details));
            resolution.id = Some(preview.id.to_string());
            return resolution;
        }
    }
    if let (Some((preview, _)), Some(on_claim)) = (&decides, hooks.on_claim) {
        on_claim(&preview.id);
    }
    let mut aborted = std::pin::pin!(session.abort_waiter().aborted());
    let mut running = Detached {
        work: Some(future),
        must_finish,
        session,
        preview: decides.as_ref().map(|(preview, _)| &**preview),
    };
    // A caller that stops waiting still learns which preview it was
    // deciding, and how.
    let unfinished = |error: Error| {
        let details = decides
            .as_ref()
            .map(|(preview, request)| details_for(preview, request, None));
        Resolution::failed(error, details)
    };
    let mut resolution = std::future::poll_fn(|cx| {
        if let Some(future) = running.work.as_mut() {
            if let Poll::Ready(resolution) = future.as_mut().poll(cx) {
                running.work = None;
                return Poll::Ready(resolution);
            }
        }
        if let Poll::Ready(why) = aborted.as_mut().poll(cx) {
            return Poll::Ready(unfinished(Error::Aborted(why)));
        }
        if let Poll::Ready(error) = cancel.as_mut().poll(cx) {
            return Poll::Ready(unfinished(error));
        }
        Poll::Pending
    })
    .await;
    drop(running);
    let id = decides.map(|(preview, _)| preview.id.to_string());
    resolution.id = resolution.id.or(id);
    resolution
}

/// A claim made for a decision that has not started: released if dropped
/// before [`ClaimHeld::keep`].
struct ClaimHeld<'a> {
    session: &'a Session,
    preview: Option<&'a Preview>,
}

impl ClaimHeld<'_> {
    fn keep(mut self) {
        self.preview = None;
    }
}

impl Drop for ClaimHeld<'_> {
    fn drop(&mut self) {
        if let Some(preview) = self.preview {
            self.session.release_claim(preview);
        }
    }
}

fn details_for(preview: &Preview, request: &ResolveRequest, source: Option<Value>) -> Details {
    Details {
        action: request.action,
        reason: request.reason.clone(),
        extra: request.extra.clone(),
        source_tool_name: preview.source_tool.clone(),
        label: preview.label.clone(),
        source_result_details: source,
        origin: preview.origin(),
    }
}

/// The error of a failed apply: a tool error's message passes as is, any
/// other failure is `Apply failed: <message>`.
fn apply_failure(error: CallbackError) -> Error {
    match error {
        CallbackError::Failed(message) => Error::CallbackFailed(texts::apply_failed(&message)),
        other => callback_error(other),
    }
}

/// The error of a failed callback as the callback gave it: a reject
/// failure propagates as its own error (only an apply failure is phrased
/// `Apply failed: ...`).
fn callback_error(error: CallbackError) -> Error {
    match error {
        CallbackError::Tool(message) | CallbackError::Failed(message) => {
            Error::CallbackFailed(message)
        }
        CallbackError::OutcomeUnknown(message) => Error::OutcomeUnknown(message),
    }
}

/// Runs a claimed preview's apply or reject callback and records the
/// outcome in the session: consumed on success or on a returned error
/// result; requeued at the head (before returning) after a failed apply;
/// left where it was after a failed reject.
async fn invoke(
    session: Session,
    preview: Arc<Preview>,
    request: Arc<ResolveRequest>,
) -> Resolution {
    match request.action {
        Action::Apply => apply(&session, &preview, &request).await,
        Action::Discard => discard(&session, &preview, &request).await,
    }
}

/// Runs a preview callback, turning a panic into a failure, so that the
/// claimed preview is requeued (apply) or kept (reject) rather than left
/// claimed forever, and the panic does not reach the dispatching caller.
async fn catch_panic<T>(
    callback: impl Future<Output = Result<T, CallbackError>>,
) -> Result<T, CallbackError> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(callback)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|message| message.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| texts::CALLBACK_PANICKED.to_string());
            Err(CallbackError::Failed(message))
        })
}

/// The result a callback answered with, for `preview` decided by `request`.
fn answered(preview: &Preview, request: &ResolveRequest, result: ToolResult) -> Resolution {
    let details = details_for(preview, request, result.details.clone());
    Resolution::from_handler(Ok(result), Some(details))
}

/// A callback that failed, for `preview` decided by `request`.
fn failed(preview: &Preview, request: &ResolveRequest, error: Error) -> Resolution {
    Resolution::failed(error, Some(details_for(preview, request, None)))
}

async fn apply(session: &Session, preview: &Preview, request: &ResolveRequest) -> Resolution {
    let reason = &request.reason;
    let applying = async { (preview.apply)(reason.clone(), request.extra.clone()).await };
    match catch_panic(applying).await {
        Ok(result) => {
            let ok = !result.is_error;
            session.consume(preview, EventKind::Applied, reason, &result.text, ok);
            answered(preview, request, result)
        }
        Err(error) => {
            let error = apply_failure(error);
            session.requeue_after_failure(preview, reason, &error.to_string());
            failed(preview, request, error)
        }
    }
}

async fn discard(session: &Session, preview: &Preview, request: &ResolveRequest) -> Resolution {
    let reason = &request.reason;
    let outcome = match &preview.reject {
        Some(reject) => {
            catch_panic(async { reject(reason.clone(), request.extra.clone()).await }).await
        }
        None => Ok(None),
    };
    match outcome {
        Ok(result) => {
            let result =
                result.unwrap_or_else(|| ToolResult::ok(texts::discarded(&preview.label, reason)));
            session.consume(
                preview,
                EventKind::Discarded,
                reason,
                &result.text,
                !result.is_error,
            );
            answered(preview, request, result)
        }
        Err(error) => {
            let error = callback_error(error);
            session.keep_after_failure(preview, reason, &error.to_string());
            failed(preview, request, error)
        }
    }
}

/// Calls a queue invoker (or the standing handler) with this request; the
/// details name the handler as it names itself, else after `tool_name`.
fn invoke_queue(
    invoker: QueueInvoker,
    tool_name: String,
    request: ResolveRequest,
) -> BoxFuture<Resolution> {
    Box::pin(async move {
        let details = Details {
            action: request.action,
            reason: request.reason.clone(),
            extra: request.extra.clone(),
            source_tool_name: tool_name.clone(),
            label: tool_name,
            source_result_details: None,
            origin: None,
        };
        let result = invoker(request).await;
        // A handler may name itself; otherwise it goes by its tool's name.
        let details = match &result {
            Ok(result) => Details {
                source_result_details: result.details.clone(),
                label: result.label.clone().unwrap_or(details.label),
                source_tool_name: result
                    .source_tool_name
                    .clone()
                    .unwrap_or(details.source_tool_name),
                ..details
            },
            Err(_) => details,
        };
        Resolution::from_handler(result, Some(details))
    })
}

/// The work for a resolve/reject: queue invoker first, then the head of the
/// pending stack. `None` when neither can dispatch.
fn queue_or_pending(session: &Session, request: ResolveRequest) -> Option<Work> {
    Some(match session.take_next()? {
        Next::Invoker(invoker, tool_name) => {
            Work::handler(invoke_queue(invoker, tool_name, request))
        }
        Next::Preview(preview) => Work::preview(session, preview, request),
    })
}

/// [`queue_or_pending`] within `scope`: the root devices refuse with
/// `EBUSY` while previews of several agent sessions wait (see
/// [`Session::take_next_in`]), naming them and where to decide each.
fn queue_or_pending_in(
    session: &Session,
    scope: Scope<'_>,
    device: Device,
    request: ResolveRequest,
) -> Result<Option<Work>, Error> {
    let next = session.take_next_in(scope).map_err(|several| {
        let text = texts::several_sessions_pending(
            &session.mount_dir(),
            device.name(),
            &several.0,
            crate::safe_text::is_path_safe_session_id,
        );
        Error::Busy(text)
    })?;
    Ok(next.map(|next| match next {
        Next::Invoker(invoker, tool_name) => {
            Work::handler(invoke_queue(invoker, tool_name, request))
        }
        Next::Preview(preview) => Work::preview(session, preview, request),
    }))
}

/// The "nothing pending" answer of a device, with the propose hint while
/// a plan handler is set.
fn nothing_pending(session: &Session, device: Device) -> Resolution {
    let hint = if session.plan_mode() {
        texts::propose_hint(&session.mount_dir())
    } else {
        String::new()
    };
    match device {
        Device::Resolve => Resolution::failed(
            Error::NothingToResolve(format!("{}{hint}", texts::NOTHING_TO_RESOLVE)),
            None,
        ),
        _ => Resolution::ok(format!("{}{hint}", texts::NOTHING_TO_REJECT), None),
    }
}

/// The work of a `propose`, or the refusal (an [`Error`]) when there is
/// no plan handler or the title is invalid.
fn propose(session: &Session, body: &str) -> Result<Work, Error> {
    let Some(handler) = session.plan_proposal_handler() else {
        let dir = session.mount_dir();
        return Err(Error::NotInPlanMode(texts::not_in_plan_mode(&dir)));
    };
    let proposal = proposal_from_body(body)?;
    let (session, body) = (session.clone(), body.to_string());
    Ok(Work::proposal(Box::pin(async move {
        let reply = handler(proposal).await;
        let plan = reply.as_ref().ok().and_then(|reply| reply.details.clone());
        let mut resolution = Resolution::from_handler(reply.map(|reply| reply.result), None);
        resolution.plan = plan;
        session.proposed(
            &body,
            &resolution.text,
            resolution.is_ok(),
            resolution.plan.clone(),
        );
        resolution
    })))
}

/// Writes `text` to a device: resolve/reject consult the queue invoker, then
/// the head of the pending stack (never the standing handler); propose
/// consults only the plan proposal handler.
pub async fn dispatch_resolution_device(
    session: &Session,
    device: Device,
    text: &str,
) -> Resolution {
    dispatch_resolution_device_until(session, device, text, None).await
}

/// [`dispatch_resolution_device`], also giving up when `cancel` fires.
pub async fn dispatch_resolution_device_until(
    session: &Session,
    device: Device,
    text: &str,
    cancel: Option<Cancel>,
) -> Resolution {
    dispatch_device_with(session, device, text, DispatchHooks::cancel(cancel)).await
}

/// [`dispatch_resolution_device`] with `hooks`.
pub async fn dispatch_device_with(
    session: &Session,
    device: Device,
    text: &str,
    hooks: DispatchHooks,
) -> Resolution {
    dispatch_device_in(session, Scope::Mount, device, text, hooks).await
}

/// [`dispatch_device_with`] within `scope`: the root devices
/// ([`Scope::Mount`]) or one agent session's `sessions/<id>/` devices,
/// which decide that session's newest preview under the same rules and
/// texts. The root `resolve` and `reject` refuse with [`Error::Busy`]
/// while previews of more than one agent session wait (previews of no
/// session count as one more), so that one agent's message never decides
/// another agent's call. `propose` is the same in every scope.
pub async fn dispatch_device_in(
    session: &Session,
    scope: Scope<'_>,
    device: Device,
    text: &str,
    mut hooks: DispatchHooks,
) -> Resolution {
    if let Some(error) = hooks.fired() {
        return Resolution::failed(error, None);
    }
    let reason = text.trim();
    let taken = match device {
        Device::Resolve => {
            queue_or_pending_in(session, scope, device, ResolveRequest::apply(reason))
        }
        Device::Reject => {
            queue_or_pending_in(session, scope, device, ResolveRequest::discard(reason))
        }
        Device::Propose => propose(session, reason).map(Some),
    };
    let work = match taken {
        Ok(work) => work,
        Err(refused) => return Resolution::failed(refused, None),
    };
    match work {
        Some(work) => race(session, work, hooks).await,
        None => nothing_pending(session, device),
    }
}

/// Decides one pending preview by id, head or not. `ENOENT` if the id is
/// not pending (already decided, or being decided right now).
pub async fn decide_pending(
    session: &Session,
    id: &str,
    request: ResolveRequest,
    cancel: Option<Cancel>,
) -> Resolution {
    decide_pending_with(session, id, request, DispatchHooks::cancel(cancel)).await
}

/// [`decide_pending`] with `hooks`.
pub async fn decide_pending_with(
    session: &Session,
    id: &str,
    request: ResolveRequest,
    mut hooks: DispatchHooks,
) -> Resolution {
    if let Some(error) = hooks.fired() {
        let mut resolution = Resolution::failed(error, None);
        resolution.id = Some(id.to_string());
        return resolution;
    }
    let Some(preview) = session.claim(id) else {
        let text = texts::no_pending_action_with_id(id);
        let mut resolution = Resolution::failed(Error::NothingToResolve(text), None);
        resolution.id = Some(id.to_string());
        return resolution;
    };
    let work = Work::preview(session, preview, request);
    race(session, work, hooks).await
}

/// The resolve tool: queue invoker, then the head of the pending stack,
/// then the standing resolve handler.
pub async fn run_resolve_tool(session: &Session, request: ResolveRequest) -> Resolution {
    run_resolve_tool_until(session, request, None).await
}

/// [`run_resolve_tool`], also giving up when `cancel` fires (a harness
/// passes its turn's abort signal here). A cancel that has fired already
/// starts nothing.
pub async fn run_resolve_tool_until(
    session: &Session,
    request: ResolveRequest,
    cancel: Option<Cancel>,
) -> Resolution {
    let action = request.action;
    let mut hooks = DispatchHooks::cancel(cancel);
    if let Some(error) = hooks.fired() {
        return Resolution::failed(error, None);
    }
    if let Some(work) = queue_or_pending(session, request.clone()) {
        return race(session, work, hooks).await;
    }
    if let Some(handler) = session.standing_handler() {
        let work = Work::handler(invoke_queue(handler, "resolve".to_string(), request));
        return race(session, work, hooks).await;
    }
    match action {
        Action::Apply => Resolution::failed(
            Error::NothingToResolve(texts::NOTHING_TO_RESOLVE.into()),
            None,
        ),
        Action::Discard => Resolution::ok(texts::NOTHING_TO_DISCARD, None),
    }
}

/// Runs one pending preview's invoker with this request (the core of every
/// dispatch): claims it, runs its callback, and records the outcome. Same as
/// [`decide_pending`] without a cancel signal.
pub async fn run_resolve_invocation(
    session: &Session,
    id: &str,
    request: ResolveRequest,
) -> Resolution {
    decide_pending(session, id, request, None).await
}

/// The most recent device result, as the status files show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceResult {
    /// Which device was written (`resolve`, `reject`, `propose`, or a
    /// per-item path).
    pub device: String,
    /// Whether the handler succeeded.
    pub ok: bool,
    /// The result text.
    pub text: String,
    /// The errno name on failure (`ENOENT`), else `None`.
    pub errno: Option<String>,
    /// The plan a `propose` was about, when its handler named it (what a
    /// review UI reading `status.json` needs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanApprovalDetails>,
}

impl DeviceResult {
    /// The result of `resolution` on `device`.
    #[cfg(any(test, feature = "mount"))]
    pub(crate) fn new(device: String, resolution: &Resolution) -> Self {
        DeviceResult {
            device,
            ok: resolution.is_ok(),
            text: resolution.text.clone(),
            errno: (!resolution.is_ok()).then(|| crate::error::errno_name(resolution.errno())),
            plan: resolution.plan.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::plan::PlanOutcome;

    #[test]
    fn a_device_result_shows_the_plan_of_a_propose() {
        let mut resolution = Resolution::ok("Plan ready for review.", None);
        resolution.plan = Some(PlanApprovalDetails {
            title: "auth".into(),
            plan_path: "/plans/auth-plan.md".into(),
            outcome: PlanOutcome::PendingReview,
        });
        let last = DeviceResult::new("propose".into(), &resolution);
        assert_eq!(
            serde_json::to_value(&last).ok(),
            Some(serde_json::json!({
                "device": "propose",
                "ok": true,
                "text": "Plan ready for review.",
                "errno": null,
                "plan": {"title": "auth", "planPath": "/plans/auth-plan.md", "outcome": "pending-review"},
            }))
        );
        let plain = DeviceResult::new("resolve".into(), &Resolution::ok("done", None));
        let plain = serde_json::to_value(&plain).ok();
        assert_eq!(plain.and_then(|value| value.get("plan").cloned()), None);
    }
}
