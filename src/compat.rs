//! The 0.1 names that 0.2 renamed, replaced or moved off the crate root,
//! kept as deprecated forwards so that a 0.1 program compiles on 0.2 and
//! each warning names what to write instead.
//!
//! Every function, type and constant here is also at the crate root, where
//! 0.1 had it, and the 0.1 methods are on their types again (`Session`,
//! `DispatchHooks`, `StageRequest`); each does exactly what its replacement
//! does (the behaviour, texts and errnos
//! are 0.2's, which are 0.1's). Where 0.2 changed a type's shape the
//! forward takes the 0.2 type: [`Resolution`] is [`Decision`], read with
//! its methods (`text()`, `error()`, `id()`, `details()`, `plan()` or the
//! owned `into_parts()`) instead of 0.1's public fields. What has no
//! forward: `DeviceResult` is no longer public (the status files show it),
//! and a moved tuple struct ([`SeveralSessions`], [`UnknownPlanHandler`])
//! cannot be built or matched through its old name, only named and read.
//!
//! ```
//! #![allow(deprecated)]
//! use xdev::{apply_fn, dispatch_resolution_device_until, Device, Session, ToolResult};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let session = Session::new();
//! let apply = apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) });
//! session.register_pending("edit-1", "edit a.rs", "edit", apply, None);
//! let resolution: xdev::Resolution =
//!     dispatch_resolution_device_until(&session, Device::Resolve, "tests pass", None).await;
//! assert_eq!(resolution.text(), "applied: tests pass");
//! assert_eq!(resolution.id(), Some("edit-1"));
//! # }
//! ```

// The forwards name each other and their own deprecated types.
#![allow(deprecated)]

use std::future::Future;

// Many names this module forwards are also declared here (as deprecated
// aliases of the moved types), so those are named by their full paths.
use crate::device::Device;
use crate::dispatch::{self, Decision, Dispatch};
use crate::error::Error;
use crate::session::{self, ApplyFn, RejectFn, ResolveRequest, Session, StageOptions, ToolResult};
use crate::stage_protocol::StageRequest;

// ----- renamed or replaced ------------------------------------------------

/// 0.1's answer to a dispatch; 0.2 builds a [`Decision`].
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Decision: read it with text(), error(), id(), details(), plan(), or into_parts()"
)]
pub type Resolution = Decision;

/// A `Dispatch`, run with an optional cancel.
async fn run_until(
    session: &Session,
    dispatch: Dispatch<'_>,
    cancel: Option<dispatch::Cancel>,
) -> Decision {
    match cancel {
        Some(cancel) => dispatch.cancel(cancel).run(session).await,
        None => dispatch.run(session).await,
    }
}

/// A device write, also giving up when `cancel` fires.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::device(device, text).cancel(cancel).run(&session)"
)]
pub async fn dispatch_resolution_device_until(
    session: &Session,
    device: Device,
    text: &str,
    cancel: Option<dispatch::Cancel>,
) -> Decision {
    run_until(session, Dispatch::device(device, text), cancel).await
}

/// A device write with these hooks.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::device(device, text).hooks(hooks).run(&session)"
)]
pub async fn dispatch_device_with(
    session: &Session,
    device: Device,
    text: &str,
    hooks: dispatch::DispatchHooks,
) -> Decision {
    Dispatch::device(device, text)
        .hooks(hooks)
        .run(session)
        .await
}

/// A device write within `scope`, with these hooks.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::device_in(scope, device, text).hooks(hooks).run(&session)"
)]
pub async fn dispatch_device_in(
    session: &Session,
    scope: session::Scope<'_>,
    device: Device,
    text: &str,
    hooks: dispatch::DispatchHooks,
) -> Decision {
    Dispatch::device_in(scope, device, text)
        .hooks(hooks)
        .run(session)
        .await
}

/// Decides one pending preview by id, also giving up when `cancel` fires.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::by_id(id, request).cancel(cancel).run(&session)"
)]
pub async fn decide_pending(
    session: &Session,
    id: &str,
    request: ResolveRequest,
    cancel: Option<dispatch::Cancel>,
) -> Decision {
    run_until(session, Dispatch::by_id(id, request), cancel).await
}

/// Decides one pending preview by id, with these hooks.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::by_id(id, request).hooks(hooks).run(&session)"
)]
pub async fn decide_pending_with(
    session: &Session,
    id: &str,
    request: ResolveRequest,
    hooks: dispatch::DispatchHooks,
) -> Decision {
    Dispatch::by_id(id, request).hooks(hooks).run(session).await
}

/// Decides one pending preview by id.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::by_id(id, request).run(&session)"
)]
pub async fn run_resolve_invocation(
    session: &Session,
    id: &str,
    request: ResolveRequest,
) -> Decision {
    Dispatch::by_id(id, request).run(session).await
}

/// The resolve tool.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::resolve_tool(request).run(&session)"
)]
pub async fn run_resolve_tool(session: &Session, request: ResolveRequest) -> Decision {
    Dispatch::resolve_tool(request).run(session).await
}

/// The resolve tool, also giving up when `cancel` fires.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::Dispatch::resolve_tool(request).cancel(cancel).run(&session)"
)]
pub async fn run_resolve_tool_until(
    session: &Session,
    request: ResolveRequest,
    cancel: Option<dispatch::Cancel>,
) -> Decision {
    run_until(session, Dispatch::resolve_tool(request), cancel).await
}

impl dispatch::DispatchHooks {
    /// Hooks holding only a cancel signal.
    #[deprecated(
        since = "0.2.0",
        note = "use xdev::Dispatch::cancel(cancel), or DispatchHooks { cancel, ..DispatchHooks::default() }"
    )]
    pub fn cancel(cancel: Option<dispatch::Cancel>) -> Self {
        dispatch::DispatchHooks {
            cancel,
            ..dispatch::DispatchHooks::default()
        }
    }
}

/// 0.1's extras of a preview registered under an explicit id; 0.2 stages
/// with [`StageOptions`], which holds the id too.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::StageOptions { id, detail, origin } with Session::stage"
)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviewExtras {
    /// The full request, as the text of the `detail` file (pretty JSON).
    pub detail: Option<String>,
    /// The agent call it answers.
    pub origin: Option<session::Origin>,
}

impl PreviewExtras {
    /// Whether it carries nothing.
    pub fn is_empty(&self) -> bool {
        self.detail.is_none() && self.origin.as_ref().is_none_or(session::Origin::is_empty)
    }
}

impl From<PreviewExtras> for StageOptions {
    fn from(extras: PreviewExtras) -> Self {
        StageOptions {
            id: None,
            detail: extras.detail,
            diff: None,
            cwd: None,
            origin: extras.origin,
        }
    }
}

impl StageRequest {
    /// The detail and origin the staged preview carries.
    #[deprecated(since = "0.2.0", note = "use StageRequest::stage_options()")]
    pub fn extras(&self) -> PreviewExtras {
        let StageOptions { detail, origin, .. } = self.stage_options();
        PreviewExtras { detail, origin }
    }
}

impl Session {
    /// Stages a preview under an explicit id.
    #[deprecated(
        since = "0.2.0",
        note = "use Session::stage(label, source_tool, apply, reject, StageOptions { id: Some(id), ..Default::default() })"
    )]
    pub fn register_pending(
        &self,
        id: &str,
        label: impl Into<String>,
        source_tool: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
    ) {
        self.register_pending_with(
            id,
            label,
            source_tool,
            apply,
            reject,
            PreviewExtras::default(),
        );
    }

    /// Stages a preview under an explicit id, with its detail and origin.
    #[deprecated(
        since = "0.2.0",
        note = "use Session::stage(label, source_tool, apply, reject, StageOptions { id: Some(id), detail, origin })"
    )]
    pub fn register_pending_with(
        &self,
        id: &str,
        label: impl Into<String>,
        source_tool: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
        extras: PreviewExtras,
    ) {
        let options = StageOptions {
            id: Some(id.to_string()),
            ..StageOptions::from(extras)
        };
        self.stage(label, source_tool, apply, reject, options);
    }

    /// A session boundary: a new agent session starts.
    #[deprecated(since = "0.2.0", note = "use Session::clear()")]
    pub fn new_session(&self) {
        self.clear();
    }

    /// A session boundary: the agent switches to another session.
    #[deprecated(since = "0.2.0", note = "use Session::clear()")]
    pub fn switch_session(&self) {
        self.clear();
    }

    /// A session boundary: the agent branches the session.
    #[deprecated(since = "0.2.0", note = "use Session::clear()")]
    pub fn branch_session(&self) {
        self.clear();
    }
}

/// 0.1's plan handler answer: a result and the plan it is about. 0.2's
/// [`ToolResult`] carries the plan itself ([`ToolResult::with_plan`]).
#[deprecated(
    since = "0.2.0",
    note = "use xdev::ToolResult, with result.with_plan(details)"
)]
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReply {
    /// The text (and the error flag) of the answer.
    pub result: ToolResult,
    /// The plan the answer is about.
    pub details: Option<session::PlanApprovalDetails>,
}

impl PlanReply {
    /// An answer about this plan.
    #[deprecated(since = "0.2.0", note = "use result.with_plan(details)")]
    pub fn new(result: ToolResult, details: session::PlanApprovalDetails) -> Self {
        PlanReply {
            result,
            details: Some(details),
        }
    }
}

impl From<ToolResult> for PlanReply {
    fn from(result: ToolResult) -> Self {
        PlanReply {
            result,
            details: None,
        }
    }
}

impl From<PlanReply> for ToolResult {
    fn from(reply: PlanReply) -> Self {
        match reply.details {
            Some(details) => reply.result.with_plan(details),
            None => reply.result,
        }
    }
}

/// Wraps an async closure that answers a [`PlanReply`] as a plan handler.
#[deprecated(
    since = "0.2.0",
    note = "use xdev::session::plan_handler with a closure answering result.with_plan(details)"
)]
pub fn plan_reply_handler<F, Fut>(f: F) -> session::PlanHandler
where
    F: Fn(session::PlanProposal) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PlanReply, Error>> + Send + 'static,
{
    session::plan_handler(move |proposal| {
        let answering = f(proposal);
        async move { answering.await.map(ToolResult::from) }
    })
}

// ----- moved off the crate root -------------------------------------------

/// Deprecated aliases of types that moved off the crate root, one a line:
/// `module::Name => "warning"`. The doc links the new home; the warning is
/// spelled out because `deprecated` takes only a literal.
macro_rules! moved_types {
    ($($module:ident :: $name:ident $(<$($param:tt),+>)? => $note:literal;)+) => {$(
        #[doc = concat!(
            "Moved: [`xdev::", stringify!($module), "::", stringify!($name),
            "`](crate::", stringify!($module), "::", stringify!($name), ")."
        )]
        #[deprecated(since = "0.2.0", note = $note)]
        pub type $name $(<$($param),+>)? = crate::$module::$name $(<$($param),+>)?;
    )+};
}

/// Deprecated copies of constants that moved off the crate root, one a
/// line: `module::NAME: Type => "warning"`, as `moved_types!` does for types.
macro_rules! moved_consts {
    ($($module:ident :: $name:ident : $ty:ty => $note:literal;)+) => {$(
        #[doc = concat!(
            "Moved: [`xdev::", stringify!($module), "::", stringify!($name),
            "`](crate::", stringify!($module), "::", stringify!($name), ")."
        )]
        #[deprecated(since = "0.2.0", note = $note)]
        pub const $name: $ty = crate::$module::$name;
    )+};
}

moved_types! {
    session::Origin => "moved: use xdev::session::Origin (also in xdev::prelude)";
    session::Scope<'a> => "moved: use xdev::session::Scope (also in xdev::prelude)";
    session::Action => "moved: use xdev::session::Action (also in xdev::prelude)";
    session::Event => "moved: use xdev::session::Event (also in xdev::prelude)";
    session::EventKind => "moved: use xdev::session::EventKind (also in xdev::prelude)";
    session::EventStream => "moved: use xdev::session::EventStream (also in xdev::prelude)";
    session::PreviewInfo => "moved: use xdev::session::PreviewInfo (also in xdev::prelude)";
    session::BoxFuture<T> => "moved: use xdev::session::BoxFuture (also in xdev::prelude)";
    session::SessionSummary => "moved: use xdev::session::SessionSummary (also in xdev::prelude)";
    session::SeveralSessions => "moved: use xdev::session::SeveralSessions";
    session::StandingHandler => "moved: use xdev::session::StandingHandler (also in xdev::prelude)";
    session::PlanHandler => "moved: use xdev::session::PlanHandler (also in xdev::prelude)";
    session::PlanProposal => "moved: use xdev::session::PlanProposal (also in xdev::prelude)";
    session::PlanTitle => "moved: use xdev::session::PlanTitle (also in xdev::prelude)";
    session::PlanOutcome => "moved: use xdev::session::PlanOutcome (also in xdev::prelude)";
    session::PlanApprovalDetails => "moved: use xdev::session::PlanApprovalDetails (also in xdev::prelude)";
    dispatch::Details => "moved: use xdev::dispatch::Details (also in xdev::prelude)";
    dispatch::Cancel => "moved: use xdev::dispatch::Cancel (also in xdev::prelude)";
    dispatch::BeforeDecision => "moved: use xdev::dispatch::BeforeDecision (also in xdev::prelude)";
    dispatch::OnClaim => "moved: use xdev::dispatch::OnClaim (also in xdev::prelude)";
    dispatch::DispatchHooks => "moved: use xdev::dispatch::DispatchHooks (also in xdev::prelude)";
    harness::QueueInvoker => "moved: use xdev::harness::QueueInvoker (also in xdev::prelude)";
    harness::Directive => "moved: use xdev::harness::Directive (also in xdev::prelude)";
    harness::DirectiveId => "moved: use xdev::harness::DirectiveId (also in xdev::prelude)";
    harness::RejectAction => "moved: use xdev::harness::RejectAction (also in xdev::prelude)";
    harness::RejectReason => "moved: use xdev::harness::RejectReason (also in xdev::prelude)";
    harness::ToolChoice => "moved: use xdev::harness::ToolChoice (also in xdev::prelude)";
    harness::TurnEnd => "moved: use xdev::harness::TurnEnd (also in xdev::prelude)";
    harness::ModelCallPlan => "moved: use xdev::harness::ModelCallPlan";
    harness::SoftRequirement => "moved: use xdev::harness::SoftRequirement (also in xdev::prelude)";
    harness::SoftRequirementTracker => "moved: use xdev::harness::SoftRequirementTracker";
    harness::ToolCall => "moved: use xdev::harness::ToolCall";
    harness::ToolChoiceDirective => "moved: use xdev::harness::ToolChoiceDirective (also in xdev::prelude)";
    harness::TurnVerdict => "moved: use xdev::harness::TurnVerdict";
    plan_desk::PlanStatus => "moved: use xdev::plan_desk::PlanStatus (also in xdev::prelude)";
    plan_desk::PlanUnderReview => "moved: use xdev::plan_desk::PlanUnderReview (also in xdev::prelude)";
    plan_desk::ContinueMode => "moved: use xdev::plan_desk::ContinueMode (also in xdev::prelude)";
    plan_desk::UnknownPlanHandler => "moved: use xdev::plan_desk::UnknownPlanHandler";
}

moved_consts! {
    session::CUSTOM_TOOL: &str => "moved: use xdev::session::CUSTOM_TOOL";
    session::DEFAULT_MOUNT_DIR: &str => "moved: use xdev::session::DEFAULT_MOUNT_DIR";
    harness::MAX_FORCED_TURNS: u32 => "moved: use xdev::harness::MAX_FORCED_TURNS";
    device::MAX_MESSAGE: usize => "moved: use xdev::device::MAX_MESSAGE";
}

/// Moved: [`xdev::session::plan_handler`](crate::session::plan_handler).
#[deprecated(
    since = "0.2.0",
    note = "moved: use xdev::session::plan_handler (also in xdev::prelude)"
)]
pub fn plan_handler<F, Fut>(f: F) -> session::PlanHandler
where
    F: Fn(session::PlanProposal) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResult, Error>> + Send + 'static,
{
    session::plan_handler(f)
}

/// Moved: [`xdev::harness::queue_invoker`](crate::harness::queue_invoker).
#[deprecated(
    since = "0.2.0",
    note = "moved: use xdev::harness::queue_invoker (also in xdev::prelude)"
)]
pub fn queue_invoker<F, Fut>(f: F) -> crate::harness::QueueInvoker
where
    F: Fn(ResolveRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResult, Error>> + Send + 'static,
{
    crate::harness::queue_invoker(f)
}

/// Moved: [`xdev::error::errno_name`](crate::error::errno_name).
#[deprecated(since = "0.2.0", note = "moved: use xdev::error::errno_name")]
pub fn errno_name(errno: i32) -> String {
    crate::error::errno_name(errno)
}

/// Moved: [`xdev::device::message_text`](crate::device::message_text).
#[deprecated(since = "0.2.0", note = "moved: use xdev::device::message_text")]
pub fn message_text(data: &[u8]) -> Result<String, Error> {
    crate::device::message_text(data)
}

#[cfg(feature = "mount")]
pub use self::moved_to_mount::*;

/// The names that moved to `xdev::mount` (with the `mount` feature only).
#[cfg(feature = "mount")]
mod moved_to_mount {
    #![allow(deprecated)]

    use std::path::Path;

    moved_types! {
        mount::MountPointState => "moved: use xdev::mount::MountPointState";
    }

    moved_consts! {
        mount::DEFAULT_THREADS: usize => "moved: use xdev::mount::DEFAULT_THREADS";
    }

    /// Moved: [`xdev::mount::is_stale_mount`](crate::mount::is_stale_mount).
    #[deprecated(since = "0.2.0", note = "moved: use xdev::mount::is_stale_mount")]
    pub fn is_stale_mount(dir: &Path) -> bool {
        crate::mount::is_stale_mount(dir)
    }

    /// Moved: [`xdev::mount::probe_mount_point`](crate::mount::probe_mount_point).
    #[deprecated(since = "0.2.0", note = "moved: use xdev::mount::probe_mount_point")]
    pub fn probe_mount_point(dir: &Path) -> crate::mount::MountPointState {
        crate::mount::probe_mount_point(dir)
    }

    /// Moved: [`xdev::mount::use_one_heap`](crate::mount::use_one_heap).
    #[deprecated(since = "0.2.0", note = "moved: use xdev::mount::use_one_heap")]
    pub fn use_one_heap() {
        crate::mount::use_one_heap()
    }
}
