//! The FUSE layer, in two halves. [`XdevFuse`] is the adapter fuser
//! drives: each method decodes a kernel request, asks the core, and
//! encodes the answer as the reply. [`XdevFs`] is the core: the mount's
//! state and every decision (plain data in, the answer or a refusal that
//! names its rule out), testable without a kernel. Behaviour lives in the
//! core and below it, in the session (or the journal, a producer, the plan
//! desk); the adapter only knows requests and replies.
//!
//! | module | holds |
//! |---|---|
//! | [`fuse`] | the adapter: decode, ask the core, reply; a refusal logged in one place; unsupported operations, one method each |
//! | [`state`] | the core's state and constructor, and what every decision asks of it |
//! | [`refusal`] | how a decision says no: its errno and the rule that fired |
//! | [`requests`] | one decision per request family: lookup, getattr, setattr, open, read, write, directories, drafts, poll, release |
//! | [`answers`] | the replies that wait (a decision's outcome, a stream's next bytes, a busy device) without holding a request thread |
//! | [`tree`] | the tree of nodes: what each is, the inode table, the status files, where a device-like file's message goes |
//! | [`handles`] | what each open descriptor holds: a device's one message, a `stage` conversation, drafts, the sizes writers just delivered |
//! | [`policy_control`] | what the mount's `policy` file asks of whoever keeps the rules |
//! | [`kernel`] | mechanics facing the kernel: busy device inodes, waiters' signals, names to forget, pollers to wake, stopping a mount |
//!
//! Imports go one way: `kernel`, `tree` and `handles` (in that order) hold
//! state and know nothing of requests; `requests` decide and `answers`
//! wait on the core's state; `fuse` is on top.

mod answers;
mod fuse;
mod handles;
mod kernel;
mod policy_control;
mod refusal;
mod requests;
mod state;
#[cfg(test)]
mod testing;
mod tree;

pub(crate) use fuse::XdevFuse;
pub(crate) use kernel::control::Control;
pub use policy_control::PolicyControl;
pub(crate) use state::XdevFs;
pub(crate) use tree::node::Owner;
