//! Device writes that are still settling: dispatched, but not yet known to
//! finish at once or moved off their inode (see `XdevFs::move_opens_off`).
//!
//! A write that waits (a plan under review, a slow apply) can become visible
//! in the status files during its first poll, a moment before later opens
//! are moved to a fresh inode. A reader who saw it there and opened the
//! device at once would queue in the kernel behind the waiting write's
//! inode lock, uninterruptibly. So status reads rendered while a write was
//! settling are rendered again once every such write has settled.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The count of settling writes, and a wakeup when it drops.
#[derive(Debug, Default)]
pub(crate) struct Settling {
    writes: AtomicUsize,
    settled: Notify,
}

impl Settling {
    /// One write starts settling; it has settled when the guard drops.
    pub(crate) fn start(&self) -> Settle<'_> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        Settle(self)
    }

    /// Whether no write is settling. A render is trustworthy if this holds
    /// right after it: a write it saw started settling before it and, had
    /// it not settled yet, would still count here.
    pub(crate) fn is_quiet(&self) -> bool {
        self.writes.load(Ordering::SeqCst) == 0
    }

    /// Waits until no write is settling.
    pub(crate) async fn quiet(&self) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if self.is_quiet() {
                return;
            }
            settled.await;
        }
    }
}

/// A settling write; dropping it marks it settled.
pub(crate) struct Settle<'a>(&'a Settling);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        if self.0.writes.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn quiet_waits_for_every_settling_write() {
        let settling = Arc::new(Settling::default());
        assert!(settling.is_quiet());
        let first = settling.start();
        let second = settling.start();
        let waiter = tokio::spawn({
            let settling = Arc::clone(&settling);
            async move { settling.quiet().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one write is still settling");
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("quiet once both settled")
            .expect("waiter");
        assert!(settling.is_quiet());
    }
}
