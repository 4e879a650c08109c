//! One decision per request family, each a file of `impl XdevFs`: plain
//! data in, the answer or a [`Refusal`](crate::fs::refusal::Refusal) that
//! names its rule out, testable without a kernel.
//!
//! | module | decides |
//! |---|---|
//! | [`lookup`] | what a name is right now (lookup), and what a forget lets go |
//! | [`attrs`] | the attributes a process sees, and for how long (getattr) |
//! | [`setattr`] | which attribute changes (truncates) are allowed |
//! | [`open`] | what an open gets, or why it is refused |
//! | [`read`] | what a read gets, now or once ready |
//! | [`write`](mod@write) | where a write goes: a device's message, a draft, `stage` |
//! | [`dir`] | what a directory lists (opendir, readdir, readdirplus) |
//! | [`draft_ops`] | creating, renaming (delivering), removing drafts |
//! | [`poll`] | when a descriptor is ready |
//! | [`release`] | what closing a descriptor leaves in the journal |

pub(crate) mod attrs;
pub(crate) mod dir;
pub(crate) mod draft_ops;
pub(crate) mod lookup;
pub(crate) mod open;
pub(crate) mod poll;
pub(crate) mod read;
pub(crate) mod release;
pub(crate) mod setattr;
pub(crate) mod write;
