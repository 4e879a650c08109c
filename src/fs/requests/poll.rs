//! What a poll decides: whether a descriptor is ready now, or what it
//! waits for (`events` its next record, `stage` the producer's next
//! message); every other file is always readable and writable. The wakeup
//! the kernel is owed later is [`crate::fs::kernel::pollers`]'s.

use fuser::{FileHandle, PollEvents, PollNotifier};
use futures::future::BoxFuture;
use futures::FutureExt;

use crate::fs::handles::table::Handle;
use crate::fs::state::XdevFs;

/// Whether a descriptor is ready, as a poll asks.
pub(crate) enum Readiness {
    /// Ready now with these events.
    Now(PollEvents),
    /// Ready with these events now, and readable once the future completes.
    Later(PollEvents, BoxFuture<'static, ()>),
}

impl XdevFs {
    /// Decides a poll of `fh`: `events` waits for its next record, `stage`
    /// (once something is staged) for the producer's next message; every
    /// other file is always readable and writable.
    pub(crate) fn readiness(&self, fh: FileHandle) -> Readiness {
        let readable = PollEvents::POLLIN | PollEvents::POLLRDNORM;
        let writable = PollEvents::POLLOUT | PollEvents::POLLWRNORM;
        let journal = &self.journal;
        // What the file always is, and what it waits for to be readable.
        let waits = self.handles.with(fh, |handle| match handle {
            Handle::Events { at } => {
                let (journal, next) = (journal.clone(), at.record);
                let ready = async move { journal.wait_beyond(next).await };
                Some((PollEvents::empty(), ready.boxed()))
            }
            Handle::Stage(channel) => channel.readable().map(|ready| (writable, ready.boxed())),
            _ => None,
        });
        let Some((always, mut ready)) = waits.flatten() else {
            return Readiness::Now(readable | writable);
        };
        if ready.as_mut().now_or_never().is_some() {
            return Readiness::Now(always | readable);
        }
        Readiness::Later(always, ready)
    }

    /// Has the kernel's poller of `fh` woken through `notifier` once
    /// `ready` completes (see [`Readiness::Later`]).
    pub(crate) fn wake_when(
        &self,
        fh: FileHandle,
        notifier: PollNotifier,
        ready: BoxFuture<'static, ()>,
    ) {
        self.pollers.wake_when(fh, notifier, ready, &self.runtime);
    }
}
