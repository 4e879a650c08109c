//! Finalizing previews: the three devices, per-item decisions and the
//! resolve tool, each raced against the session's abort signal.
//!
//! A [`Dispatch`] says what to decide (a device message, one pending
//! preview by id, or the resolve tool's request) and what the decision is
//! raced against; [`Dispatch::run`] decides it and answers one
//! [`Decision`].
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
use crate::session::answer::{PlanApprovalDetails, ToolResult};
use crate::session::directives::QueueInvoker;
use crate::session::events::EventKind;
use crate::session::plan::proposal_from_body;
use crate::session::preview::{BoxFuture, Origin, Preview};
use crate::session::request::{Action, ResolveRequest};
use crate::session::{Next, Scope, Session};
use crate::texts;

/// The details every decision of a preview or handler carries.
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
    pub origin: Option<Origin>,
}

/// What a dispatch decided: the text the writer reads back, the error when
/// it failed, the preview it decided (its id and [`Details`]) and the plan
/// it was about. A dispatch builds it complete; [`Decision::result`] reads
/// it as a `Result`, so `?` works on it.
///
/// ```
/// use xdev::{Device, Dispatch, Error, Session};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let session = Session::new();
/// let decision = Dispatch::device(Device::Resolve, "tests pass").run(&session).await;
/// assert!(matches!(decision.result(), Err(Error::NothingToResolve(_))));
/// assert_eq!(decision.errno(), libc::ENOENT);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a decision says whether anything was applied; read its result"]
pub struct Decision {
    text: String,
    error: Option<Error>,
    details: Option<Details>,
    id: Option<Arc<str>>,
    plan: Option<PlanApprovalDetails>,
}

impl Decision {
    /// A handler's `answer`, for the preview `id` (with its `details`)
    /// when one was decided. An error result fails with
    /// [`Error::ErrorResult`]; the answer's plan is kept either way.
    pub(crate) fn answered(
        answer: Result<ToolResult, Error>,
        id: Option<Arc<str>>,
        details: Option<Details>,
    ) -> Self {
        match answer {
            Ok(ToolResult {
                text,
                is_error,
                plan,
                ..
            }) => Decision {
                error: is_error.then(|| Error::ErrorResult(text.clone())),
                text,
                details,
                id,
                plan,
            },
            Err(error) => Decision::failed(error, id, details),
        }
    }

    /// A failure, for the preview `id` (with its `details`) when one was
    /// concerned; its text is the error's message.
    pub(crate) fn failed(error: Error, id: Option<Arc<str>>, details: Option<Details>) -> Self {
        Decision {
            text: error.to_string(),
            error: Some(error),
            details,
            id,
            plan: None,
        }
    }

    /// A success that decided nothing (nothing was pending to reject).
    fn nothing(text: impl Into<String>) -> Self {
        Decision {
            text: text.into(),
            error: None,
            details: None,
            id: None,
            plan: None,
        }
    }

    /// The text on success, else the error: `decision.result()?`.
    pub fn result(&self) -> Result<&str, &Error> {
        match &self.error {
            None => Ok(&self.text),
            Some(error) => Err(error),
        }
    }

    /// [`Decision::result`], owned: the text on success, else the error.
    pub fn into_result(self) -> Result<String, Error> {
        match self.error {
            None => Ok(self.text),
            Some(error) => Err(error),
        }
    }

    /// What the writer reads back: the handler's text, or the error's
    /// message when it failed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the handler succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Why it failed; `None` on success.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// 0 on success, else the errno the device write fails with.
    pub fn errno(&self) -> i32 {
        self.error.as_ref().map_or(0, Error::errno)
    }

    /// The id of the preview this dispatch decided (or tried to), if any.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// [`Decision::id`], shared rather than copied.
    #[cfg(any(test, feature = "mount"))]
    pub(crate) fn shared_id(&self) -> Option<Arc<str>> {
        self.id.clone()
    }

    /// The details of the decided preview or handler, when one was decided.
    pub fn details(&self) -> Option<&Details> {
        self.details.as_ref()
    }

    /// The plan a `propose` or a reviewer's decision was about, when its
    /// handler named it.
    pub fn plan(&self) -> Option<&PlanApprovalDetails> {
        self.plan.as_ref()
    }

    /// [`Decision::text`], owned: what the writer reads back, whether the
    /// decision succeeded or not.
    pub fn into_text(self) -> String {
        self.text
    }

    /// [`Decision::details`], owned.
    pub fn into_details(self) -> Option<Details> {
        self.details
    }

    /// [`Decision::plan`], owned.
    pub fn into_plan(self) -> Option<PlanApprovalDetails> {
        self.plan
    }

    /// Every part, owned, to move out at once:
    ///
    /// ```
    /// use xdev::dispatch::DecisionParts;
    /// use xdev::{apply_fn, Device, Dispatch, Session, StageOptions, ToolResult};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let session = Session::new();
    /// let apply = apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) });
    /// let id = session.stage("edit a.rs", "edit", apply, None, StageOptions::default());
    /// let decision = Dispatch::device(Device::Resolve, "tests pass").run(&session).await;
    /// let DecisionParts { text, error, id: decided, details, .. } = decision.into_parts();
    /// assert_eq!((text.as_str(), error, decided), ("applied: tests pass", None, Some(id)));
    /// assert_eq!(details.map(|details| details.label), Some("edit a.rs".to_string()));
    /// # }
    /// ```
    pub fn into_parts(self) -> DecisionParts {
        DecisionParts {
            text: self.text,
            error: self.error,
            id: self.id.map(|id| id.to_string()),
            details: self.details,
            plan: self.plan,
        }
    }
}

/// A [`Decision`] taken apart by [`Decision::into_parts`]; each field is
/// what the accessor of the same name borrows.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecisionParts {
    /// What the writer reads back: the handler's text, or the error's
    /// message when it failed.
    pub text: String,
    /// Why it failed; `None` on success.
    pub error: Option<Error>,
    /// The id of the preview the dispatch decided (or tried to), if any.
    pub id: Option<String>,
    /// The details of the decided preview or handler, when one was decided.
    pub details: Option<Details>,
    /// The plan the decision was about, when its handler named it.
    pub plan: Option<PlanApprovalDetails>,
}

/// A [`Decision`] nobody reads is a warning (denied here), as a dropped
/// `Result` is: it is the only word on whether anything was applied.
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// async fn ignores(session: &xdev::Session) {
///     xdev::Dispatch::device(xdev::Device::Resolve, "go").run(session).await;
/// }
/// ```
///
/// ```
/// #![deny(unused_must_use)]
/// async fn reads(session: &xdev::Session) -> bool {
///     xdev::Dispatch::device(xdev::Device::Resolve, "go").run(session).await.is_ok()
/// }
/// ```
#[cfg(doctest)]
mod a_decision_must_be_used {}

/// Something that, when it completes, stops the caller waiting with this
/// error (a writer's signal, a deadline). The handler itself keeps running.
///
/// [`Dispatch::cancel`] takes any such future as it is; a [`DispatchHooks`]
/// holds it boxed. [`cancel_when`] makes one of any future and the error to
/// give up with.
pub type Cancel = BoxFuture<Error>;

/// A [`Cancel`] that fires with `error` once `signal` completes, whatever
/// `signal` yields: a `oneshot` receiver, a `Notify`'s `notified()`, a
/// `watch` receiver's `changed()`, a timer.
///
/// ```
/// use xdev::dispatch::cancel_when;
/// use xdev::{apply_fn, Device, Dispatch, Error, Session, StageOptions, ToolResult};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let session = Session::new();
/// let apply = apply_fn(|_reason, _extra| std::future::pending());
/// session.stage("slow build", "bash", apply, None, StageOptions::default());
///
/// let (turn_over, turn_ended) = tokio::sync::oneshot::channel::<()>();
/// let deciding = Dispatch::device(Device::Resolve, "go")
///     .cancel(cancel_when(turn_ended, Error::Aborted("turn ended".into())))
///     .run(&session);
/// turn_over.send(()).unwrap();
/// let decision = deciding.await;
/// assert_eq!(decision.errno(), libc::ECANCELED);
/// # }
/// ```
pub fn cancel_when<F>(signal: F, error: Error) -> Cancel
where
    F: Future + Send + 'static,
{
    Box::pin(async move {
        signal.await;
        error
    })
}

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
    /// The error of a cancel that has fired already. Checked before a
    /// dispatch takes anything (a claim, a queue invoker), so a caller that
    /// gave up before it began uses up nothing and holds nobody up.
    fn fired(&mut self) -> Option<Error> {
        let cancel = self.cancel.as_mut()?;
        futures::FutureExt::now_or_never(cancel.as_mut())
    }
}

/// One decision to make: what to decide, and what it is raced against.
/// Build it with [`Dispatch::device`], [`Dispatch::device_in`],
/// [`Dispatch::by_id`] or [`Dispatch::resolve_tool`], add a
/// [`Dispatch::cancel`] or [`Dispatch::hooks`] if needed, then
/// [`Dispatch::run`] it on a session.
///
/// ```
/// use xdev::{apply_fn, Device, Dispatch, ResolveRequest, Session, ToolResult};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), xdev::Error> {
/// let session = Session::new();
/// let apply = apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) });
/// let older = session.queue_resolve_handler("edit a.rs", "edit", apply.clone(), None);
/// session.queue_resolve_handler("edit b.rs", "edit", apply, None);
///
/// // The head, as `echo "tests pass" > /xdev/resolve` decides it:
/// let text = Dispatch::device(Device::Resolve, "tests pass\n").run(&session).await.into_result()?;
/// assert_eq!(text, "applied: tests pass");
/// // One preview by id, head or not, as `pending/<id>/resolve` decides it:
/// let decision = Dispatch::by_id(&older, ResolveRequest::apply("by id")).run(&session).await;
/// assert_eq!(decision.id(), Some(older.as_str()));
/// assert_eq!(decision.result(), Ok("applied: by id"));
/// # Ok(())
/// # }
/// ```
#[must_use = "a dispatch decides nothing until it is run"]
pub struct Dispatch<'a> {
    what: What<'a>,
    hooks: DispatchHooks,
}

/// What a [`Dispatch`] decides.
enum What<'a> {
    /// A message written to a device, within a scope.
    Device {
        scope: Scope<'a>,
        device: Device,
        text: &'a str,
    },
    /// One pending preview, by id.
    ById {
        id: &'a str,
        request: ResolveRequest,
    },
    /// The resolve tool's request.
    ResolveTool(ResolveRequest),
}

impl std::fmt::Debug for Dispatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("Dispatch");
        match &self.what {
            What::Device {
                scope,
                device,
                text,
            } => f
                .field("scope", scope)
                .field("device", device)
                .field("text", text),
            What::ById { id, request } => f.field("id", id).field("request", request),
            What::ResolveTool(request) => f.field("resolve_tool", request),
        };
        f.field("hooks", &self.hooks).finish()
    }
}

impl<'a> Dispatch<'a> {
    /// `text` written to one of the mount's root devices: resolve and
    /// reject consult the queue invoker, then the head of the pending stack
    /// (never the standing handler); propose consults only the plan
    /// proposal handler. The text is trimmed (so `echo`'s newline goes).
    pub fn device(device: Device, text: &'a str) -> Self {
        Dispatch::device_in(Scope::Mount, device, text)
    }

    /// [`Dispatch::device`] within `scope`: the root devices
    /// ([`Scope::Mount`]) or one agent session's `sessions/<id>/` devices,
    /// which decide that session's newest preview under the same rules and
    /// texts. The root `resolve` and `reject` refuse with [`Error::Busy`]
    /// while previews of more than one agent session wait (previews of no
    /// session count as one more), so that one agent's message never
    /// decides another agent's call. `propose` is the same in every scope.
    pub fn device_in(scope: Scope<'a>, device: Device, text: &'a str) -> Self {
        Dispatch::new(What::Device {
            scope,
            device,
            text,
        })
    }

    /// Decides one pending preview by id, head or not. `ENOENT` if the id
    /// is not pending (already decided, or being decided right now).
    pub fn by_id(id: &'a str, request: ResolveRequest) -> Self {
        Dispatch::new(What::ById { id, request })
    }

    /// The resolve tool: the queue invoker, then the head of the pending
    /// stack, then the standing resolve handler.
    pub fn resolve_tool(request: ResolveRequest) -> Self {
        Dispatch::new(What::ResolveTool(request))
    }

    fn new(what: What<'a>) -> Self {
        Dispatch {
            what,
            hooks: DispatchHooks::default(),
        }
    }

    /// Also gives up when `cancel` completes, with the error it yields (a
    /// harness passes its turn's abort signal here): any future of an
    /// [`Error`], a [`Cancel`] or one from [`cancel_when`] included. A
    /// cancel that has fired already starts nothing.
    pub fn cancel(mut self, cancel: impl Future<Output = Error> + Send + 'static) -> Self {
        self.hooks.cancel = Some(Box::pin(cancel));
        self
    }

    /// Runs with these hooks, replacing any set before (a
    /// [`Dispatch::cancel`] included).
    pub fn hooks(mut self, hooks: DispatchHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Decides, raced against the session's abort signal and the cancel.
    pub async fn run(self, session: &Session) -> Decision {
        let Dispatch { what, mut hooks } = self;
        if let Some(error) = hooks.fired() {
            let id = match what {
                What::ById { id, .. } => Some(Arc::from(id)),
                _ => None,
            };
            return Decision::failed(error, id, None);
        }
        match what {
            What::Device {
                scope,
                device,
                text,
            } => device_in(session, scope, device, text, hooks).await,
            What::ById { id, request } => by_id(session, id, request, hooks).await,
            What::ResolveTool(request) => resolve_tool(session, request, hooks).await,
        }
    }
}

/// The seed runtime's name for a device write, kept on purpose (agent
/// runtimes ported to xdev call it): `Dispatch::device(device, text).run(session)`.
pub async fn dispatch_resolution_device(session: &Session, device: Device, text: &str) -> Decision {
    Dispatch::device(device, text).run(session).await
}

/// What a dispatch runs: the handler's future, the preview it decides and
/// how (if any), and whether it must finish even when nobody waits for it
/// any more.
struct Work {
    future: BoxFuture<Decision>,
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
    fn handler(future: BoxFuture<Decision>) -> Self {
        Work {
            future,
            decides: None,
            must_finish: true,
        }
    }

    /// A plan proposal: nothing is staged, so a writer that gives up
    /// withdraws it (dropping the handler's future cancels a review).
    fn proposal(future: BoxFuture<Decision>) -> Self {
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
    work: Option<BoxFuture<Decision>>,
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
async fn race(session: &Session, work: Work, hooks: DispatchHooks) -> Decision {
    let Work {
        future,
        decides,
        must_finish,
    } = work;
    let mut cancel = hooks
        .cancel
        .unwrap_or_else(|| Box::pin(std::future::pending()));
    // `Dispatch::run` checked the cancel before taking anything; one that
    // fired since (while the claim was made) still runs nothing, and the
    // claimed preview goes back unrun.
    if let Some(error) = futures::FutureExt::now_or_never(cancel.as_mut()) {
        drop(future);
        let Some((preview, request)) = decides else {
            return Decision::failed(error, None, None);
        };
        session.release_claim(&preview);
        return failed(&preview, &request, error);
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
            return Decision::failed(refused, Some(Arc::clone(&preview.id)), Some(details));
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
    let unfinished = |error: Error| match &decides {
        Some((preview, request)) => failed(preview, request, error),
        None => Decision::failed(error, None, None),
    };
    let decision = std::future::poll_fn(|cx| {
        if let Some(future) = running.work.as_mut() {
            if let Poll::Ready(decision) = future.as_mut().poll(cx) {
                running.work = None;
                return Poll::Ready(decision);
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
    decision
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
        CallbackError::NotDone(error) => error,
    }
}

/// Runs a claimed preview's apply or reject callback and records the
/// outcome in the session: consumed on success or on a returned error
/// result; requeued at the head (before returning) after a failed apply;
/// left where it was after a failed reject.
async fn invoke(session: Session, preview: Arc<Preview>, request: Arc<ResolveRequest>) -> Decision {
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

/// The decision a callback answered, for `preview` decided by `request`.
fn answered(preview: &Preview, request: &ResolveRequest, mut result: ToolResult) -> Decision {
    let details = details_for(preview, request, result.details.take());
    let id = Some(Arc::clone(&preview.id));
    Decision::answered(Ok(result), id, Some(details))
}

/// A decision that failed, for `preview` decided by `request`.
fn failed(preview: &Preview, request: &ResolveRequest, error: Error) -> Decision {
    let details = details_for(preview, request, None);
    Decision::failed(error, Some(Arc::clone(&preview.id)), Some(details))
}

async fn apply(session: &Session, preview: &Preview, request: &ResolveRequest) -> Decision {
    let reason = &request.reason;
    let applying = async { (preview.apply)(reason.clone(), request.extra.clone()).await };
    match catch_panic(applying).await {
        Ok(result) => {
            let ok = !result.is_error;
            session.consume(preview, EventKind::Applied, reason, &result.text, ok);
            answered(preview, request, result)
        }
        Err(CallbackError::NotDone(error)) => not_done(session, preview, request, error),
        Err(error) => {
            let error = apply_failure(error);
            session.requeue_after_failure(preview, reason, &error.to_string());
            failed(preview, request, error)
        }
    }
}

async fn discard(session: &Session, preview: &Preview, request: &ResolveRequest) -> Decision {
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
        Err(CallbackError::NotDone(error)) => not_done(session, preview, request, error),
        Err(error) => {
            let error = callback_error(error);
            session.keep_after_failure(preview, reason, &error.to_string());
            failed(preview, request, error)
        }
    }
}

/// A callback that did nothing (see [`CallbackError::NotDone`]): the
/// preview stays where it stood, unless the callback withdrew it.
fn not_done(
    session: &Session,
    preview: &Preview,
    request: &ResolveRequest,
    error: Error,
) -> Decision {
    session.release_claim(preview);
    failed(preview, request, error)
}

/// Calls a queue invoker (or the standing handler) with this request; the
/// details name the handler as it names itself, else after `tool_name`.
fn invoke_queue(
    invoker: QueueInvoker,
    tool_name: String,
    request: ResolveRequest,
) -> BoxFuture<Decision> {
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
        let mut result = invoker(request).await;
        // A handler may name itself; otherwise it goes by its tool's name.
        let details = match &mut result {
            Ok(result) => Details {
                source_result_details: result.details.take(),
                label: result.label.take().unwrap_or(details.label),
                source_tool_name: result
                    .source_tool_name
                    .take()
                    .unwrap_or(details.source_tool_name),
                ..details
            },
            Err(_) => details,
        };
        Decision::answered(result, None, Some(details))
    })
}

/// The work for what a resolve or reject took (see [`Session::take_next`]).
fn work_for(session: &Session, next: Next, request: ResolveRequest) -> Work {
    match next {
        Next::Invoker(invoker, tool_name) => {
            Work::handler(invoke_queue(invoker, tool_name, request))
        }
        Next::Preview(preview) => Work::preview(session, preview, request),
    }
}

/// The work for a resolve/reject within `scope`: queue invoker first, then
/// the head of the pending stack; `None` when neither can dispatch. The
/// root devices refuse with `EBUSY` while previews of several agent
/// sessions wait (see [`Session::take_next_in`]), naming them and where to
/// decide each.
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
            crate::safe_text::is_path_safe_name,
        );
        Error::Busy(text)
    })?;
    Ok(next.map(|next| work_for(session, next, request)))
}

/// The "nothing pending" answer of a device, with the propose hint while
/// a plan handler is set.
fn nothing_pending(session: &Session, device: Device) -> Decision {
    let hint = if session.plan_mode() {
        texts::propose_hint(&session.mount_dir())
    } else {
        String::new()
    };
    match device {
        Device::Resolve => Decision::failed(
            Error::NothingToResolve(format!("{}{hint}", texts::NOTHING_TO_RESOLVE)),
            None,
            None,
        ),
        _ => Decision::nothing(format!("{}{hint}", texts::NOTHING_TO_REJECT)),
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
        let decision = Decision::answered(handler(proposal).await, None, None);
        session.proposed(
            &body,
            decision.text(),
            decision.is_ok(),
            decision.plan().cloned(),
        );
        decision
    })))
}

/// A device message: see [`Dispatch::device_in`].
async fn device_in(
    session: &Session,
    scope: Scope<'_>,
    device: Device,
    text: &str,
    hooks: DispatchHooks,
) -> Decision {
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
    match taken {
        Ok(Some(work)) => race(session, work, hooks).await,
        Ok(None) => nothing_pending(session, device),
        Err(refused) => Decision::failed(refused, None, None),
    }
}

/// One preview by id: see [`Dispatch::by_id`].
async fn by_id(
    session: &Session,
    id: &str,
    request: ResolveRequest,
    hooks: DispatchHooks,
) -> Decision {
    let Some(preview) = session.claim(id) else {
        let text = texts::no_pending_action_with_id(id);
        return Decision::failed(Error::NothingToResolve(text), Some(Arc::from(id)), None);
    };
    let work = Work::preview(session, preview, request);
    race(session, work, hooks).await
}

/// The resolve tool: see [`Dispatch::resolve_tool`].
async fn resolve_tool(
    session: &Session,
    request: ResolveRequest,
    hooks: DispatchHooks,
) -> Decision {
    let work = match (session.take_next(), request.action) {
        (Some(next), _) => work_for(session, next, request),
        (None, action) => match session.standing_handler() {
            Some(handler) => Work::handler(invoke_queue(handler, "resolve".to_string(), request)),
            None if action == Action::Apply => {
                let nothing = Error::NothingToResolve(texts::NOTHING_TO_RESOLVE.into());
                return Decision::failed(nothing, None, None);
            }
            None => return Decision::nothing(texts::NOTHING_TO_DISCARD),
        },
    };
    race(session, work, hooks).await
}

/// The most recent device result, as the status files show it: the device
/// written and its [`Decision`], seen from outside.
#[cfg(any(test, feature = "mount"))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DeviceResult {
    /// Which device was written (`resolve`, `reject`, `propose`, or a
    /// per-item path).
    pub(crate) device: String,
    /// Whether the handler succeeded.
    pub(crate) ok: bool,
    /// The result text.
    pub(crate) text: String,
    /// The errno name on failure (`ENOENT`), else `None`.
    pub(crate) errno: Option<String>,
    /// The plan a `propose` was about, when its handler named it (what a
    /// review UI reading `status.json` needs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) plan: Option<PlanApprovalDetails>,
}

#[cfg(any(test, feature = "mount"))]
impl DeviceResult {
    /// The result of `decision` on `device`.
    pub(crate) fn new(device: String, decision: &Decision) -> Self {
        DeviceResult {
            device,
            ok: decision.is_ok(),
            text: decision.text.clone(),
            errno: decision.error.as_ref().map(Error::errno_name),
            plan: decision.plan.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::answer::PlanOutcome;

    #[test]
    fn a_device_result_shows_the_plan_of_a_propose() {
        let plan = PlanApprovalDetails {
            title: "auth".into(),
            plan_path: "/plans/auth-plan.md".into(),
            outcome: PlanOutcome::PendingReview,
        };
        let answer = ToolResult::ok("Plan ready for review.").with_plan(plan);
        let decision = Decision::answered(Ok(answer), None, None);
        let last = DeviceResult::new("propose".into(), &decision);
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
        let plain = DeviceResult::new("resolve".into(), &Decision::nothing("done"));
        let plain = serde_json::to_value(&plain).ok();
        assert_eq!(plain.and_then(|value| value.get("plan").cloned()), None);
    }
}
