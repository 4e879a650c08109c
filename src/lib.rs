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
//! ## The names at the crate root, in the order an embedder meets them
//!
//! 1. **The session.** A [`Session`] is one agent session's queue: a stack
//!    of pending previews, newest first. Cheap to clone, usable from any
//!    thread.
//! 2. **Staging.** [`Session::stage`] puts a preview at the head: a label,
//!    the tool that made it, an [`ApplyFn`] that makes the change and an
//!    optional [`RejectFn`] that throws it away (wrap async closures with
//!    [`apply_fn`] and [`reject_fn`]), and [`StageOptions`] for the rest
//!    (an explicit id, the agent call it answers, its detail). A callback
//!    answers a [`ToolResult`], or fails with a [`CallbackError`].
//! 3. **Deciding.** A [`Dispatch`] decides: a message written to a
//!    [`Device`] (`resolve`, `reject`, `propose`), one preview by id with a
//!    [`ResolveRequest`], or the resolve tool's request. It answers a
//!    [`Decision`]: the text the writer reads back, and the [`Error`] when
//!    it failed (`decision.result()?` works).
//! 4. **Mounting.** [`mount()`] serves a session's devices at a directory
//!    with [`MountOptions`], until the returned [`Mount`] is unmounted or
//!    dropped; a mount point it cannot use is a [`MountError`]. A
//!    [`MountOwner`] hands the files to another user (root only).
//! 5. **Plan review.** A [`PlanDesk`] owns plan mode for a session: a
//!    `propose` write finds the plan file and a [`PlanHandlerKind`]
//!    (`yolo`, `review`, `async`) decides it.
//! 6. **Errors.** [`Error`] is every failure a user can see, with the errno
//!    its `write(2)` fails with ([`Error::errno`]); [`CallbackError`] is how
//!    a callback fails.
//!
//! ### Mount a session
//!
//! ```no_run
//! use xdev::{apply_fn, mount, MountOptions, Session, StageOptions, ToolResult};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let session = Session::new();
//!     session.stage(
//!         "edit src/main.rs",
//!         "edit",
//!         apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) }),
//!         None,
//!         StageOptions::default(),
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
//! ### Decide in process
//!
//! The session queue works without FUSE, which is how the core is tested:
//!
//! ```
//! use xdev::{apply_fn, Device, Dispatch, Session, StageOptions, ToolResult};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), xdev::Error> {
//! let session = Session::new();
//! let id = session.stage(
//!     "edit src/main.rs",
//!     "edit",
//!     apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) }),
//!     None,
//!     StageOptions::default(),
//! );
//! assert_eq!(id.rsplit_once(':').map(|(kind, _)| kind), Some("pending-action:edit"));
//!
//! // What `echo "tests pass" > /xdev/resolve` does:
//! let decision = Dispatch::device(Device::Resolve, "tests pass\n").run(&session).await;
//! assert_eq!(decision.id(), Some(id.as_str()));
//! assert_eq!(decision.into_result()?, "applied: tests pass");
//! assert_eq!(session.pending_count(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! The plan desk's own example is in [`plan_desk`]. The seed runtime's
//! names stay for code ported from it, as thin wrappers that say so:
//! [`Session::queue_resolve_handler`], [`Session::push_pending_action`] and
//! [`dispatch_resolution_device`].
//!
//! ## The prelude, and code written for 0.1
//!
//! `use xdev::prelude::*;` brings the names above and every type their
//! signatures take or return (a [`Dispatch`]'s [`dispatch::Cancel`] and
//! [`session::Scope`], a [`Decision`]'s [`dispatch::Details`], a
//! [`Session`]'s [`session::Event`]s, ...), each of which lives in the
//! module it is documented in; see [`prelude`].
//!
//! A program written for 0.1 compiles: each name 0.1 had at the crate root
//! that 0.2 renamed, replaced or moved is still there, deprecated, doing
//! what its replacement does; the warning names the replacement. They are
//! listed in [`compat`].
//!
//! ## Features
//!
//! Both are on by default; with `default-features = false` the crate is the
//! session core (every layer below the journal in the table that follows)
//! on tokio, parking_lot, thiserror, serde and serde_json.
//!
//! - `mount`: [`mount()`], [`Mount`] and the mount point checks, the FUSE
//!   adapter, the `journal` and `who` modules (fuser, nix).
//! - `cli`: the `xdev` binary and the `client`, `daemon`, `hook`,
//!   `review`, `safe_file` and `preview_diff` modules (clap,
//!   tracing-subscriber, humantime, tempfile, similar; for `xdev review`
//!   ratatui, crossterm, unicode-width); implies `mount`.
//!
//! ## The modules, bottom up
//!
//! Each layer imports only from the layers below it. Everything beyond the
//! root names lives in a public module named for what it holds.
//!
//! | layer | modules | what lives there |
//! |---|---|---|
//! | texts and rules | [`texts`], [`error`], [`safe_text`], [`device`] | every user-facing text; the one error type and its errno ([`error::errno_name`]); what a label or source tool may hold; the three devices and a message's rules ([`device::MAX_MESSAGE`], [`device::message_text`]) |
//! | session core | [`session`] | the pending stack, claims, requests, the plan proposal handler slot ([`session::plan_handler`]), directives, events ([`session::Event`]), abort; no FUSE, no files |
//! | decisions | [`dispatch`], [`harness`] | resolve / reject / propose and the resolve tool, raced against cancels ([`dispatch::DispatchHooks`], the details of a decision); the hard directives and the soft requirement a harness enforces on the model |
//! | plan review, producers | [`plan_desk`], [`stage_protocol`], [`producer`], [`plan_command`] | the daemon's plan desk (yolo / review / async) and its status; the stage protocol's messages and the session side of an external producer; `plan/ctl` commands |
//! | policy | [`policy`] | allow / ask / deny rules in Claude Code's syntax, loaded from a rules file ([`policy::Policy`]); a call's parts (a shell command's simple commands and redirections) judged by a pure function ([`policy::Policy::evaluate`]), strictest wins |
//! | journal | `journal`, `who` | the JSON Lines record of every staging and decision, and who wrote |
//! | FUSE layer | `fs/` (private) | a thin adapter (`XdevFuse`: decode, call, reply) over the core (`XdevFs`: inodes, handles, one decision per request family, the replies that wait); refusals name their rule in a debug log; knows nothing of how previews are applied |
//! | mount lifecycle | `mount` | mounting, stale-mount recovery, unmounting with a grace period; the mount point checks and request threads |
//! | files from outside | `safe_file`, `preview_diff` | reading a file a hostile event names (regular, bounded, never through a link); the unified diff of a Write / Edit / patch preview (`pending/<id>/diff`) |
//! | programs | `daemon`, `client`, `hook`, `bin/xdev.rs` | the `xdev` daemon; the client side (device I/O, commands, the stager, `xdev watch`); `xdev hook` for Claude Code and Codex; the thin CLI |

#[cfg(feature = "cli")]
pub mod client;
pub mod compat;
#[cfg(feature = "cli")]
pub mod daemon;
pub mod device;
pub mod dispatch;
pub mod error;
#[cfg(feature = "mount")]
mod fs;
pub mod harness;
#[cfg(feature = "cli")]
pub mod hook;
#[cfg(feature = "mount")]
pub mod journal;
mod maps;
#[cfg(feature = "mount")]
pub mod mount;
#[cfg(feature = "mount")]
mod mount_point;
pub mod plan_command;
pub mod plan_desk;
pub mod policy;
pub mod prelude;
#[cfg(feature = "cli")]
pub mod preview_diff;
pub mod producer;
#[cfg(feature = "cli")]
pub mod review;
#[cfg(feature = "cli")]
pub mod safe_file;
pub mod safe_text;
pub mod session;
mod soft_requirement;
pub mod stage_protocol;
#[cfg(feature = "cli")]
mod supervised;
pub mod texts;
#[cfg(feature = "mount")]
pub mod who;

// The session and staging.
pub use session::{apply_fn, reject_fn, ApplyFn, RejectFn, Session, StageOptions, ToolResult};
// Deciding.
pub use device::Device;
pub use dispatch::{dispatch_resolution_device, Decision, Dispatch};
pub use session::ResolveRequest;
// Mounting the devices.
#[cfg(feature = "mount")]
pub use mount::{mount, Mount, MountError, MountOptions, MountOwner};
// Plan review.
pub use plan_desk::{PlanDesk, PlanHandlerKind};
// Errors.
pub use error::{CallbackError, Error};
// The 0.1 names, deprecated: each says what to use instead.
pub use compat::*;

// The Rust code of the README and of every page under docs/ is compiled
// and run as doctests, so what they show stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctest {}

#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
mod embedding_doctest {}
