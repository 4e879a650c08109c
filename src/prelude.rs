//! Everything an embedder's code names, in one glob import:
//!
//! ```
//! use xdev::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let session = Session::new();
//! let mut events: EventStream = session.subscribe();
//! let apply = apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) });
//! session.stage("edit a.rs", "edit", apply, None, StageOptions::default());
//!
//! let (_turn_goes_on, turn_ended) = tokio::sync::oneshot::channel::<()>();
//! let decision = Dispatch::device_in(Scope::Mount, Device::Resolve, "tests pass")
//!     .cancel(cancel_when(turn_ended, Error::Aborted("turn ended".into())))
//!     .run(&session)
//!     .await;
//! let details: Option<&Details> = decision.details();
//! assert_eq!(details.map(|details| details.action), Some(Action::Apply));
//! let staged: Event = events.recv().await.unwrap();
//! assert_eq!(staged.kind, EventKind::Staged);
//! # }
//! ```
//!
//! It holds the crate root's names and every type, alias and constructor
//! that their signatures take or return: a [`Session`]'s previews, events,
//! directives and handler slots, a [`Dispatch`]'s scope and cancel, a
//! [`Decision`]'s parts, a [`PlanDesk`]'s status, a [`Mount`]'s journal.
//! Each lives in the module its name is documented in; the prelude only
//! gathers them. It holds no module and none of the deprecated 0.1 names
//! that the crate root still forwards, so import it rather than `xdev::*`.

pub use crate::device::Device;
pub use crate::dispatch::{
    cancel_when, dispatch_resolution_device, BeforeDecision, Cancel, Decision, DecisionParts,
    Details, Dispatch, DispatchHooks, OnClaim,
};
pub use crate::error::{CallbackError, Error};
pub use crate::harness::{
    queue_invoker, Directive, DirectiveId, QueueInvoker, RejectAction, RejectReason,
    SoftRequirement, ToolChoice, ToolChoiceDirective, TurnEnd,
};
#[cfg(feature = "mount")]
pub use crate::journal::Journal;
#[cfg(feature = "mount")]
pub use crate::mount::{mount, Mount, MountError, MountOptions};
pub use crate::plan_desk::{ContinueMode, PlanDesk, PlanHandlerKind, PlanStatus, PlanUnderReview};
pub use crate::session::{
    apply_fn, plan_handler, reject_fn, Action, ApplyFn, BoxFuture, Event, EventKind, EventStream,
    Origin, PlanApprovalDetails, PlanHandler, PlanOutcome, PlanProposal, PlanTitle, PreviewInfo,
    RejectFn, ResolveRequest, Scope, Session, SessionSummary, StageOptions, StandingHandler,
    ToolResult,
};
