//! # xdev
//!
//! A FUSE device layer that lets anything on a Linux machine finalize an AI
//! coding agent's staged work by writing a file. An agent harness owns a
//! [`Session`], stages previews with apply/reject callbacks, and mounts the
//! devices; `echo "tests pass" > /xdev/resolve` then applies the newest
//! pending preview and the handler's answer is the result of that `write(2)`.
//!
//! The session queue works without FUSE:
//!
//! ```
//! use xdev::{apply_fn, dispatch_resolution_device, Device, Session, ToolResult};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let session = Session::new();
//! let id = session.queue_resolve_handler(
//!     "edit src/main.rs",
//!     "edit",
//!     apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) }),
//!     None,
//! );
//! assert_eq!(id.rsplit_once(':').map(|(kind, _)| kind), Some("pending-action:edit"));
//!
//! let answer = dispatch_resolution_device(&session, Device::Resolve, "tests pass\n").await;
//! assert_eq!(answer.text, "applied: tests pass");
//! assert_eq!(session.pending_count(), 0);
//! # }
//! ```

pub mod client;
pub mod daemon;
mod device;
mod dispatch;
mod error;
mod fs;
pub mod hook;
pub mod journal;
mod maps;
mod mount;
mod mount_point;
pub mod plan_command;
mod plan_desk;
pub mod producer;
pub mod safe_text;
mod session;
mod soft_requirement;
pub mod stage_protocol;
mod supervised;
pub mod texts;
pub mod who;

pub use device::{message_text, Device, MAX_MESSAGE};
pub use dispatch::{
    decide_pending, decide_pending_with, dispatch_device_with, dispatch_resolution_device,
    dispatch_resolution_device_until, run_resolve_invocation, run_resolve_tool,
    run_resolve_tool_until, BeforeDecision, Cancel, Details, DeviceResult, DispatchHooks,
    Resolution,
};
pub use error::{errno_name, CallbackError, Error};
pub use mount::{mount, use_one_heap, Mount, MountError, MountOptions};
pub use mount_point::{is_stale_mount, probe_mount_point, MountPointState};
pub use plan_desk::{PlanDesk, PlanHandlerKind, PlanStatus, PlanUnderReview, UnknownPlanHandler};
pub use session::directives::{
    queue_invoker, Directive, DirectiveId, QueueInvoker, RejectAction, RejectReason, ToolChoice,
    TurnEnd,
};
pub use session::events::{Event, EventKind, EventStream};
pub use session::plan::{
    plan_handler, plan_reply_handler, PlanApprovalDetails, PlanHandler, PlanOutcome, PlanProposal,
    PlanReply, PlanTitle,
};
pub use session::preview::{
    apply_fn, reject_fn, ApplyFn, BoxFuture, Origin, PreviewExtras, PreviewInfo, RejectFn,
    ToolResult, CUSTOM_TOOL,
};
pub use session::request::{Action, ResolveRequest};
pub use session::{Session, StandingHandler, DEFAULT_MOUNT_DIR};
pub use soft_requirement::{
    ModelCallPlan, SoftRequirement, SoftRequirementTracker, ToolCall, ToolChoiceDirective,
    TurnVerdict,
};

// The README's Rust example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctest {}
