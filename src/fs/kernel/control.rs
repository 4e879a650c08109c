//! What the mount's owner keeps to stop a mount: refusing new decisions,
//! letting running ones finish, cancelling what is left, and counting; and
//! how it learns that the mount was removed from outside.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use super::notify::Forgetter;
use super::signals::{SignalWatch, Signalled};
use crate::dispatch::Cancel;
use crate::error::Error;
use crate::texts::{ABANDONED_AT_SHUTDOWN, MOUNT_STOPPING};

/// Lets the mount's owner stop a mount and see what is still running.
#[derive(Debug)]
pub(crate) struct Control {
    stopping: AtomicBool,
    closing: watch::Sender<bool>,
    removed: watch::Sender<bool>,
    in_flight: AtomicUsize,
    deciding: AtomicUsize,
    forgetter: Forgetter,
    signals: Arc<SignalWatch>,
}

impl Control {
    /// A control whose signal watch runs on `runtime`.
    pub(crate) fn new(runtime: &tokio::runtime::Handle) -> Self {
        let signals = Arc::new(SignalWatch::default());
        runtime.spawn(Arc::clone(&signals).run());
        Control {
            stopping: AtomicBool::new(false),
            closing: watch::Sender::new(false),
            removed: watch::Sender::new(false),
            in_flight: AtomicUsize::new(0),
            deciding: AtomicUsize::new(0),
            forgetter: Forgetter::default(),
            signals,
        }
    }

    /// From now on new decisions (and stagings) are refused with
    /// `ECANCELED`; those already running go on.
    pub(crate) fn stop_new(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Why a new decision is refused, if the mount is stopping.
    pub(crate) fn refusal(&self) -> Option<Error> {
        self.stopping
            .load(Ordering::Acquire)
            .then(|| Error::Aborted(MOUNT_STOPPING.to_string()))
    }

    /// Every request waiting now or later gets `ECANCELED`.
    pub(crate) fn close(&self) {
        self.stop_new();
        self.closing.send_replace(true);
        self.forgetter.stop();
    }

    /// Whether the mount is closing: the grace period of its shutdown is
    /// over.
    pub(crate) fn is_closed(&self) -> bool {
        *self.closing.borrow()
    }

    /// The mount was removed by someone else (unmounted, or its FUSE
    /// session ended): wakes [`Control::removed`]. Not once the owner has
    /// begun to stop the mount: its own unmount is no news.
    pub(crate) fn mark_removed(&self) {
        if !self.stopping.load(Ordering::Acquire) {
            self.removed.send_replace(true);
        }
    }

    /// Completes once the mount was removed by someone else (or this
    /// control is gone, and the mount with it).
    pub(crate) fn removed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut removed = self.removed.subscribe();
        async move {
            let _ = removed.wait_for(|removed| *removed).await;
        }
    }

    /// Whether the mount was removed by someone else.
    pub(crate) fn is_removed(&self) -> bool {
        *self.removed.borrow()
    }

    /// Lets the filesystem have the kernel forget names (from a thread of
    /// their own, see [`Forgetter`]).
    pub(crate) fn start_forgetting(&self, notifier: fuser::Notifier) -> std::io::Result<()> {
        self.forgetter.start(notifier)
    }

    /// Has the kernel forget `name` in directory `parent`, soon.
    pub(crate) fn forget(&self, parent: fuser::INodeNo, name: &str) {
        self.forgetter.forget(parent, name);
    }

    /// Requests still waiting for their answer.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Device writes still waiting for their decision.
    pub(crate) fn deciding(&self) -> usize {
        self.deciding.load(Ordering::Acquire)
    }

    /// Fires with `Aborted` once the mount is closing.
    fn closed(&self) -> impl Future<Output = Error> + Send + 'static {
        let mut closing = self.closing.subscribe();
        async move {
            // An error means the sender is gone: the mount is gone too.
            let _ = closing.wait_for(|closing| *closing).await;
            Error::Aborted(ABANDONED_AT_SHUTDOWN.to_string())
        }
    }

    /// What cancels a wait in which nothing is decided (a read of a
    /// stream, an open of a busy device): any signal of its thread, or the
    /// mount closing. `EINTR` is then true, and asking again is safe.
    pub(crate) fn cancel_for(&self, tid: u32) -> Cancel {
        self.cancelled_by(tid, Signalled::Handled)
    }

    /// What lets the writer of a decision go: a signal that stops its
    /// thread (never one it merely handles), or the mount closing.
    pub(crate) fn stop_for(&self, tid: u32) -> Cancel {
        self.cancelled_by(tid, Signalled::Stop)
    }

    fn cancelled_by(&self, tid: u32, strength: Signalled) -> Cancel {
        let closed = self.closed();
        match self.signals.interrupted(tid, strength) {
            Some(signalled) => Box::pin(async move {
                tokio::select! {
                    error = signalled => error,
                    error = closed => error,
                }
            }),
            None => Box::pin(closed),
        }
    }
}

/// Counts one waiting request from its arrival until its reply is sent.
pub(crate) struct InFlight {
    control: Arc<Control>,
    decision: bool,
}

impl InFlight {
    pub(crate) fn start(control: &Arc<Control>) -> Self {
        InFlight::counted(control, false)
    }

    /// A device write: also counted as a decision under way.
    pub(crate) fn decision(control: &Arc<Control>) -> Self {
        InFlight::counted(control, true)
    }

    fn counted(control: &Arc<Control>, decision: bool) -> Self {
        control.in_flight.fetch_add(1, Ordering::AcqRel);
        if decision {
            control.deciding.fetch_add(1, Ordering::AcqRel);
        }
        InFlight {
            control: Arc::clone(control),
            decision,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.control.in_flight.fetch_sub(1, Ordering::AcqRel);
        if self.decision {
            self.control.deciding.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
