//! What the mount's owner keeps to stop a mount: cancelling blocked
//! writers and counting them.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use crate::dispatch::Cancel;
use crate::error::Error;
use crate::fs::signals;

/// Why blocked writers are cancelled when their mount goes away.
const CLOSING: &str = "the xdev mount is shutting down";

/// Lets the mount's owner cancel blocked writers and see how many remain.
#[derive(Debug)]
pub(crate) struct Control {
    closing: watch::Sender<bool>,
    in_flight: AtomicUsize,
}

impl Control {
    pub(crate) fn new() -> Self {
        Control {
            closing: watch::Sender::new(false),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// Every writer blocked now or later gets `ECANCELED`.
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Requests still waiting for their answer.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Fires with `Aborted` once the mount is closing.
    fn closed(&self) -> impl Future<Output = Error> + Send + 'static {
        let mut closing = self.closing.subscribe();
        async move {
            // An error means the sender is gone: the mount is gone too.
            let _ = closing.wait_for(|closing| *closing).await;
            Error::Aborted(CLOSING.to_string())
        }
    }

    /// What cancels a waiting request: its thread's signal, or the mount
    /// closing.
    pub(crate) fn cancel_for(&self, tid: u32) -> Cancel {
        let closed = self.closed();
        match signals::interrupted(tid) {
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
pub(crate) struct InFlight(Arc<Control>);

impl InFlight {
    pub(crate) fn start(control: &Arc<Control>) -> Self {
        control.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(control))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}
