//! Waking the kernel's pollers (`poll`/`select`/`epoll` on the mount's
//! files) once a descriptor is ready: at most one waiter per open
//! descriptor, however often it is polled. Whether a descriptor is ready is
//! the poll decision's (`requests/poll.rs`).
//!
//! The kernel asks once per poll whether a file is ready; when it is not,
//! the filesystem owes it a wakeup once it is. A waiter task per poll call
//! would pile up under a `poll(0)` loop, so each descriptor keeps a single
//! waiter, and a new poll only refreshes the handle it wakes.

use crate::maps::HashMap;
use std::sync::Arc;

use fuser::{FileHandle, PollNotifier};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::task::AbortHandle;

use crate::maps::remove_and_shrink;

/// The waiters of one mount, by descriptor.
#[derive(Debug, Default)]
pub(crate) struct Pollers {
    waiting: Mutex<HashMap<u64, Poller>>,
}

#[derive(Debug)]
struct Poller {
    notifier: PollNotifier,
    task: AbortHandle,
}

impl Pollers {
    /// Wakes the poller of `fh` through `notifier` once `ready` completes;
    /// if `fh` already has a waiter, only its notifier is refreshed.
    pub(crate) fn wake_when(
        self: &Arc<Self>,
        fh: FileHandle,
        notifier: PollNotifier,
        ready: BoxFuture<'static, ()>,
        runtime: &tokio::runtime::Handle,
    ) {
        // The lock is held across the spawn: a waiter that finds its
        // descriptor ready at once still finds itself registered.
        let mut waiting = self.waiting.lock();
        if let Some(poller) = waiting.get_mut(&fh.0) {
            poller.notifier = notifier;
            return;
        }
        let pollers = Arc::clone(self);
        let task = runtime.spawn(async move {
            ready.await;
            pollers.wake(fh);
        });
        waiting.insert(
            fh.0,
            Poller {
                notifier,
                task: task.abort_handle(),
            },
        );
    }

    /// The descriptor is closed: its waiter goes too.
    pub(crate) fn forget(&self, fh: FileHandle) {
        if let Some(poller) = remove_and_shrink(&mut self.waiting.lock(), &fh.0) {
            poller.task.abort();
        }
    }

    fn wake(&self, fh: FileHandle) {
        let poller = remove_and_shrink(&mut self.waiting.lock(), &fh.0);
        if let Some(poller) = poller {
            // A waiter runs on the runtime, never on a request loop.
            if let Err(err) = poller.notifier.notify() {
                tracing::debug!(%err, "poll notification not delivered");
            }
        }
    }
}
