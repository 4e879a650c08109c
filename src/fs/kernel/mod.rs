//! The mechanics that face the kernel rather than decide a request: device
//! inodes held for writing, the signals of the threads that wait,
//! names the kernel must forget, pollers it must wake, and stopping a
//! mount.
//!
//! | module | holds |
//! |---|---|
//! | [`busy`] | device inodes held for writing, and the openers sent away from them |
//! | [`signals`] | noticing that a waiting thread was signalled (`/proc`) |
//! | [`notify`] | telling the kernel to forget a decided item's name, from a thread of its own |
//! | [`pollers`] | one waiter per polled descriptor, woken once it is ready |
//! | [`control`] | what the mount's owner keeps to stop a mount, and what is still in flight |

pub(crate) mod busy;
pub(crate) mod control;
pub(crate) mod notify;
pub(crate) mod pollers;
pub(crate) mod signals;
