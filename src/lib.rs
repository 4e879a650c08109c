//! # xdev
//!
//! A FUSE device layer that lets anything on a Linux machine finalize an AI
//! coding agent's staged work by writing a file. An agent harness owns a
//! [`Session`], stages previews with apply/reject callbacks, and mounts the
//! devices; `echo "tests pass" > /xdev/resolve` then applies the newest
//! pending preview, and the handler's answer is the result of that
//! `write(2)`: its byte count, or an errno (`ENOENT` when nothing is
//! pending, `EIO` when the apply failed, ...).
//!
//! ## Embedding: mount a session
//!
//! ```no_run
//! use xdev::{apply_fn, mount, MountOptions, Session, ToolResult};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let session = Session::new();
//!     session.queue_resolve_handler(
//!         "edit src/main.rs",
//!         "edit",
//!         apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) }),
//!         None,
//!     );
//!     // Serves in the background until unmounted or dropped.
//!     let devices = mount(&session, "/xdev", MountOptions::default())?;
//!     // A shell now runs `echo "tests pass" > /xdev/resolve`: the write
//!     // returns once the edit is applied, and `cat /xdev/last` reads
//!     // `applied: tests pass`.
//!     devices.unmount()?;
//!     Ok(())
//! }
//! ```
//!
//! The session queue works without FUSE, which is how the core is tested:
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
//!
//! ## Features
//!
//! Both are on by default; with `default-features = false` the crate is the
//! session core (every layer below the journal in the table that follows)
//! on tokio, parking_lot, thiserror, serde and serde_json.
//!
//! - `mount`: `mount()`, `Mount` and the mount point checks, the FUSE
//!   adapter, the `journal` and `who` modules (fuser, nix).
//! - `cli`: the `xdev` binary and the `client`, `daemon` and `hook` modules
//!   (clap, tracing-subscriber, humantime, tempfile); implies `mount`.
//!
//! ## The layers, bottom up
//!
//! Each layer imports only from the layers below it.
//!
//! | layer | modules | what lives there |
//! |---|---|---|
//! | texts and rules | `texts`, `error`, `safe_text`, `device` | every user-facing text; the one error type and its errno; what a label or source tool may hold; the three devices and a message's rules (64 KiB of UTF-8) |
//! | session core | `session/` | the pending stack, claims, requests, plan proposal handler slot, directives, events, abort; no FUSE, no files |
//! | decisions | `dispatch`, `soft_requirement` | resolve / reject / propose and the resolve tool, raced against cancels; the soft requirement a harness enforces on the model |
//! | plan review, producers | `plan_desk`, `stage_protocol`, `producer`, `plan_command` | the daemon's plan desk (yolo / review / async); the stage protocol's messages and the session side of an external producer; `plan/ctl` commands |
//! | journal | `journal/`, `who` | the JSON Lines record of every staging and decision, and who wrote |
//! | FUSE adapter | `fs/` (private) | inodes, handles, and one decision function per file operation; knows nothing of how previews are applied |
//! | mount lifecycle | `mount`, `mount_point` | mounting, stale-mount recovery, unmounting with a grace period |
//! | programs | `daemon`, `client/`, `hook`, `bin/xdev.rs` | the `xdev` daemon; the client side (device I/O, commands, the stager); `xdev hook` for Claude Code and Codex; the thin CLI |
//!
//! The embedding API (session, dispatch, plan handlers, mount) is
//! re-exported here at the crate root; the modules of the programs
//! ([`producer`], [`stage_protocol`], [`plan_command`], [`texts`],
//! [`safe_text`]; with `mount` also `journal` and `who`, with `cli` also
//! `client`, `daemon` and `hook`) are public under their own names.

#[cfg(feature = "cli")]
pub mod client;
#[cfg(feature = "cli")]
pub mod daemon;
mod device;
mod dispatch;
mod error;
#[cfg(feature = "mount")]
mod fs;
#[cfg(feature = "cli")]
pub mod hook;
#[cfg(feature = "mount")]
pub mod journal;
mod maps;
#[cfg(feature = "mount")]
mod mount;
#[cfg(feature = "mount")]
mod mount_point;
pub mod plan_command;
mod plan_desk;
pub mod producer;
pub mod safe_text;
mod session;
mod soft_requirement;
pub mod stage_protocol;
#[cfg(feature = "cli")]
mod supervised;
pub mod texts;
#[cfg(feature = "mount")]
pub mod who;

pub use device::{message_text, Device, MAX_MESSAGE};
pub use dispatch::{
    decide_pending, decide_pending_with, dispatch_device_in, dispatch_device_with,
    dispatch_resolution_device, dispatch_resolution_device_until, run_resolve_invocation,
    run_resolve_tool, run_resolve_tool_until, BeforeDecision, Cancel, Details, DeviceResult,
    DispatchHooks, OnClaim, Resolution,
};
pub use error::{errno_name, CallbackError, Error};
#[cfg(feature = "mount")]
pub use mount::{mount, use_one_heap, Mount, MountError, MountOptions, DEFAULT_THREADS};
#[cfg(feature = "mount")]
pub use mount_point::{is_stale_mount, probe_mount_point, MountPointState};
pub use plan_desk::{
    ContinueMode, PlanDesk, PlanHandlerKind, PlanStatus, PlanUnderReview, UnknownPlanHandler,
};
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
pub use session::{
    Scope, Session, SessionSummary, SeveralSessions, StandingHandler, DEFAULT_MOUNT_DIR,
};
pub use soft_requirement::{
    ModelCallPlan, SoftRequirement, SoftRequirementTracker, ToolCall, ToolChoiceDirective,
    TurnVerdict, MAX_FORCED_TURNS,
};

// The Rust code of the README and of every page under docs/ is compiled
// and run as doctests, so what they show stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctest {}

#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
mod embedding_doctest {}
