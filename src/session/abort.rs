//! The session's abort signal.
//!
//! An abort reaches every dispatch that is waiting at that moment; later
//! dispatches are not affected. A generation counter tells a waiter whether
//! an abort happened after it started waiting.

use tokio::sync::watch;

#[derive(Clone, Default)]
struct AbortState {
    generation: u64,
    why: String,
}

/// Broadcasts aborts to the dispatches waiting on a session.
pub(crate) struct AbortSignal {
    sender: watch::Sender<AbortState>,
}

impl Default for AbortSignal {
    fn default() -> Self {
        AbortSignal {
            sender: watch::Sender::new(AbortState::default()),
        }
    }
}

impl AbortSignal {
    /// Aborts every dispatch waiting now.
    pub(crate) fn abort(&self, why: &str) {
        self.sender.send_modify(|state| {
            state.generation += 1;
            state.why = why.to_string();
        });
    }

    /// A waiter that fires on the next abort after this call.
    pub(crate) fn waiter(&self) -> AbortWaiter {
        let mut receiver = self.sender.subscribe();
        receiver.mark_unchanged();
        AbortWaiter { receiver }
    }
}

/// Resolves with the reason of the first abort after it was made.
pub(crate) struct AbortWaiter {
    receiver: watch::Receiver<AbortState>,
}

impl AbortWaiter {
    /// Waits for the abort and returns why. Never resolves if the session
    /// is dropped without aborting.
    pub(crate) async fn aborted(mut self) -> String {
        if self.receiver.changed().await.is_ok() {
            return self.receiver.borrow().why.clone();
        }
        std::future::pending().await
    }
}
