//! The tree of nodes: what each name of the mount is, the numbers the
//! kernel knows them by, what the read-only status files say, and where a
//! device-like file's message goes.
//!
//! | module | holds |
//! |---|---|
//! | [`node`] | what each node is: its kind, attributes, cache times, target |
//! | [`inodes`] | the inode table: numbers, the kernel's lookup counts, fresh device inodes |
//! | [`status`] | the status files' renderings, shared between readers |
//! | [`target`] | what a message written to a device-like file does |

pub(crate) mod inodes;
pub(crate) mod node;
pub(crate) mod status;
pub(crate) mod target;
