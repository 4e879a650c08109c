//! Device inodes with a write in flight, and the openers sent away from them.
//!
//! While a write waits for its answer the kernel holds the file's inode
//! lock, and truncating (`>`) or extending that file needs the same lock: a
//! second `echo ... > resolve` on that inode would wait behind a slow
//! handler, out of reach of signals. So an open for writing of an inode with
//! a write in flight (a root device, or a session's `resolve` or `reject`)
//! is refused with `ESTALE`: the kernel then walks the path again, and the
//! lookup of a busy device hands out a fresh inode (see
//! [`crate::fs::tree::inodes::Inodes::lookup`]). The kernel retries only
//! once; should the retry meet another busy inode (another writer got there
//! first), that open waits here, where a signal still reaches it, until the
//! inode is free. A retry that looked nothing up (a reopen through
//! `/proc/<pid>/fd/N`, which no path walk can lead elsewhere) fails with
//! `ESTALE`.
//!
//! Nothing here asks the kernel to forget a name: such a notification waits
//! for the directory's lock, which a lookup may hold while it waits for the
//! very request loop that would send it.

use crate::maps::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuser::INodeNo;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// How long an opener sent away counts as retrying: the kernel's retry
/// follows at once, unless the machine is very busy.
const RETRY_WINDOW: Duration = Duration::from_secs(5);

/// Past this many remembered openers, the ones outside the window go.
const REDIRECTED_PRUNE_AT: usize = 1024;

/// Writes in flight per device inode.
#[derive(Debug, Default)]
pub(crate) struct Busy {
    writes: Mutex<HashMap<u64, usize>>,
    /// Threads sent away with `ESTALE`, by thread id.
    redirected: Mutex<HashMap<u32, Redirected>>,
    redirected_count: AtomicUsize,
    /// Woken whenever a write ends.
    freed: Notify,
}

/// A thread sent away with `ESTALE`.
#[derive(Debug)]
struct Redirected {
    when: Instant,
    /// It looked a device up since: its next open is the kernel's retry.
    looked_up: bool,
}

/// What an open for writing of a device inode should do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum OpenWrite {
    /// The inode is free: open it.
    Open,
    /// First attempt on a busy inode (or a retry that looked nothing up):
    /// `ESTALE`, so the kernel looks again.
    Redirect,
    /// The kernel's retry met a busy inode again: wait until it is free.
    Wait,
}

impl Busy {
    /// A write on `ino` has reached the mount; it is in flight until the
    /// guard drops (after its reply).
    pub(crate) fn begin(self: &Arc<Self>, ino: INodeNo) -> Writing {
        *self.writes.lock().entry(ino.0).or_default() += 1;
        Writing {
            busy: Arc::clone(self),
            ino,
        }
    }

    /// Whether a write on `ino` is in flight.
    pub(crate) fn is_writing(&self, ino: INodeNo) -> bool {
        self.writes.lock().contains_key(&ino.0)
    }

    /// Decides an open for writing of device inode `ino` by thread `tid`.
    pub(crate) fn open_write(&self, ino: INodeNo, tid: u32) -> OpenWrite {
        let retrying = self.take_redirect(tid);
        if !self.is_writing(ino) {
            return OpenWrite::Open;
        }
        if retrying {
            return OpenWrite::Wait;
        }
        self.remember_redirect(tid);
        OpenWrite::Redirect
    }

    /// Thread `tid` looked a name up where devices live (the root, a
    /// session's directory): if it was sent away, its next open is the
    /// kernel's retry.
    pub(crate) fn looked_up(&self, tid: u32) {
        if self.redirected_count.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(redirected) = self.redirected.lock().get_mut(&tid) {
            redirected.looked_up = true;
        }
    }

    /// Waits until no write is in flight on `ino`.
    pub(crate) async fn until_free(&self, ino: INodeNo) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if !self.is_writing(ino) {
                return;
            }
            freed.await;
        }
    }

    /// Whether this open of `tid` is the kernel's retry after a redirect
    /// (the redirect is forgotten either way).
    fn take_redirect(&self, tid: u32) -> bool {
        if self.redirected_count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut redirected = self.redirected.lock();
        let taken = redirected.remove(&tid);
        self.redirected_count
            .store(redirected.len(), Ordering::Release);
        taken.is_some_and(|taken| taken.looked_up && taken.when.elapsed() < RETRY_WINDOW)
    }

    fn remember_redirect(&self, tid: u32) {
        let mut redirected = self.redirected.lock();
        if redirected.len() >= REDIRECTED_PRUNE_AT {
            redirected.retain(|_, taken| taken.when.elapsed() < RETRY_WINDOW);
        }
        let taken = Redirected {
            when: Instant::now(),
            looked_up: false,
        };
        redirected.insert(tid, taken);
        self.redirected_count
            .store(redirected.len(), Ordering::Release);
    }

    fn end(&self, ino: INodeNo) {
        let mut writes = self.writes.lock();
        if let Some(count) = writes.get_mut(&ino.0) {
            *count -= 1;
            if *count == 0 {
                writes.remove(&ino.0);
            }
        }
        drop(writes);
        self.freed.notify_waiters();
    }
}

/// A write in flight; dropping it ends it.
#[derive(Debug)]
pub(crate) struct Writing {
    busy: Arc<Busy>,
    ino: INodeNo,
}

impl Drop for Writing {
    fn drop(&mut self) {
        self.busy.end(self.ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_inode_redirects_and_the_retry_after_a_lookup_waits() {
        let busy = Arc::new(Busy::default());
        let (ino, fresh) = (INodeNo(7), INodeNo(8));
        assert_eq!(busy.open_write(ino, 1), OpenWrite::Open);
        let writing = busy.begin(ino);
        let _also = busy.begin(fresh);
        assert_eq!(busy.open_write(ino, 1), OpenWrite::Redirect);
        busy.looked_up(1);
        assert_eq!(busy.open_write(fresh, 1), OpenWrite::Wait, "the retry");
        assert_eq!(
            busy.open_write(fresh, 1),
            OpenWrite::Redirect,
            "a later open is a first attempt again"
        );
        assert_eq!(
            busy.open_write(fresh, 1),
            OpenWrite::Redirect,
            "a retry that looked nothing up (a /proc reopen) is sent away again"
        );
        assert_eq!(busy.open_write(ino, 2), OpenWrite::Redirect);
        drop(writing);
        assert!(!busy.is_writing(ino));
        busy.looked_up(2);
        assert_eq!(busy.open_write(ino, 2), OpenWrite::Open);
        assert_eq!(
            busy.open_write(ino, 2),
            OpenWrite::Open,
            "an open of a free inode forgets the redirect"
        );
    }

    #[tokio::test]
    async fn until_free_waits_for_every_write_on_the_inode() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(3);
        let first = busy.begin(ino);
        let second = busy.begin(ino);
        let other = busy.begin(INodeNo(4));
        let waiter = tokio::spawn({
            let busy = Arc::clone(&busy);
            async move { busy.until_free(ino).await }
        });
        drop(first);
        drop(other);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one write is still in flight");
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("free once both ended")
            .expect("waiter");
    }
}
