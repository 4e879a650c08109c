//! Noticing that a writer blocked on a device has been signalled.
//!
//! Once a request reaches the filesystem the kernel waits for its answer even
//! through SIGKILL, and fuser 0.18 ignores FUSE interrupt requests. So the
//! mount watches the waiting threads' pending signal sets under `/proc` and
//! answers `EINTR` itself. One task watches them all, and looks less often
//! the more there are, so that thousands of blocked readers cost a bounded
//! share of a CPU rather than one `/proc` read each every 40 ms.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

use crate::dispatch::Cancel;
use crate::error::Error;
use crate::maps::remove_and_shrink;

/// How often the waiting threads' signal states are checked, at the most.
/// Keeps the answer to a signal well within 200 ms for a few waiters.
const POLL_INTERVAL: Duration = Duration::from_millis(40);

/// Each waiting thread adds this much to the interval: one `/proc` read
/// costs about 10-20 us, so checking takes at most a few percent of a CPU
/// however many wait (a thousand: every 250 ms).
const INTERVAL_PER_WAITER: Duration = Duration::from_micros(250);

/// The time between two checks of `waiters` waiting threads.
fn interval(waiters: usize) -> Duration {
    let waiters = u32::try_from(waiters).unwrap_or(u32::MAX);
    POLL_INTERVAL.max(INTERVAL_PER_WAITER.saturating_mul(waiters))
}

/// SIGKILL's bit in a signal mask; it cannot be blocked.
const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);

/// Parses a hex mask line value (`SigPnd:\t0000000000000100`).
fn mask(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|value| u64::from_str_radix(value.trim(), 16).ok())
        .unwrap_or(0)
}

/// Whether `/proc/<tid>/status` shows a signal that will interrupt the
/// thread: pending (its own or the process's) and not blocked, or SIGKILL.
pub(crate) fn signal_pending_in(status: &str) -> bool {
    let pending = mask(status, "SigPnd:") | mask(status, "ShdPnd:");
    let blocked = mask(status, "SigBlk:");
    pending & !blocked != 0 || pending & SIGKILL_BIT != 0
}

/// Whether the thread `tid` has a deliverable signal pending, or is gone.
/// A status that cannot be read for another reason (out of descriptors,
/// say) does not count: the next check looks again.
fn has_pending_signal(tid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/status")) {
        Ok(status) => signal_pending_in(&status),
        Err(err) => matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)),
    }
}

/// The threads waiting in the mount, watched by one task.
#[derive(Debug, Default)]
pub(crate) struct SignalWatch {
    waiting: Mutex<HashMap<u64, Waiter>>,
    next: AtomicU64,
    /// Wakes the task when the first waiter comes.
    arrived: Notify,
}

#[derive(Debug)]
struct Waiter {
    tid: u32,
    signalled: oneshot::Sender<()>,
}

impl SignalWatch {
    /// A cancel signal that fires with [`Error::Interrupted`] once thread
    /// `tid` has a signal pending. `None` when the thread is not visible
    /// from here (pid 0: another pid namespace).
    pub(crate) fn interrupted(self: &Arc<Self>, tid: u32) -> Option<Cancel> {
        if tid == 0 {
            return None;
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (signalled, fired) = oneshot::channel();
        self.waiting.lock().insert(key, Waiter { tid, signalled });
        self.arrived.notify_one();
        let watched = Watched {
            watch: Arc::clone(self),
            key,
        };
        Some(Box::pin(async move {
            let _watched = watched;
            // The sender goes only with the watch: then nobody answers.
            if fired.await.is_err() {
                std::future::pending::<()>().await;
            }
            Error::Interrupted
        }))
    }

    /// The watching task: checks every waiting thread, then sleeps for an
    /// interval that grows with their number; idle while nobody waits.
    pub(crate) async fn run(self: Arc<Self>) {
        loop {
            let waiting = self.waiting_threads();
            if waiting.is_empty() {
                self.arrived.notified().await;
                continue;
            }
            tokio::time::sleep(interval(waiting.len())).await;
            let signalled: HashSet<u32> = self
                .waiting_threads()
                .into_iter()
                .collect::<HashSet<u32>>()
                .into_iter()
                .filter(|tid| has_pending_signal(*tid))
                .collect();
            if !signalled.is_empty() {
                self.fire(&signalled);
            }
        }
    }

    fn waiting_threads(&self) -> Vec<u32> {
        self.waiting
            .lock()
            .values()
            .map(|waiter| waiter.tid)
            .collect()
    }

    fn fire(&self, signalled: &HashSet<u32>) {
        let mut waiting = self.waiting.lock();
        let keys: Vec<u64> = waiting
            .iter()
            .filter(|(_, waiter)| signalled.contains(&waiter.tid))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            if let Some(waiter) = remove_and_shrink(&mut waiting, &key) {
                let _ = waiter.signalled.send(());
            }
        }
    }
}

/// One waiting request; it stops being watched when dropped (answered).
struct Watched {
    watch: Arc<SignalWatch>,
    key: u64,
}

impl Drop for Watched {
    fn drop(&mut self) {
        remove_and_shrink(&mut self.watch.waiting.lock(), &self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: &str = "Name:\tsh\nSigQ:\t0/1\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n";

    #[test]
    fn quiet_thread_has_nothing_pending() {
        assert!(!signal_pending_in(QUIET));
    }

    #[test]
    fn shared_sigint_counts() {
        let status = QUIET.replace("ShdPnd:\t0000000000000000", "ShdPnd:\t0000000000000002");
        assert!(signal_pending_in(&status));
    }

    #[test]
    fn blocked_signal_does_not_count_but_sigkill_always_does() {
        let blocked = QUIET
            .replace("SigPnd:\t0000000000000000", "SigPnd:\t0000000000000002")
            .replace("SigBlk:\t0000000000000000", "SigBlk:\t0000000000000002");
        assert!(!signal_pending_in(&blocked));
        let killed = blocked.replace("SigPnd:\t0000000000000002", "SigPnd:\t0000000000000100");
        assert!(signal_pending_in(&killed));
    }

    #[test]
    fn a_vanished_thread_counts_as_interrupted() {
        assert!(has_pending_signal(u32::MAX - 1));
    }

    #[test]
    fn the_interval_grows_with_the_waiters_past_a_floor() {
        assert_eq!(interval(1), POLL_INTERVAL);
        assert_eq!(interval(160), POLL_INTERVAL);
        assert_eq!(interval(1000), Duration::from_millis(250));
        assert_eq!(interval(32_000), Duration::from_secs(8));
    }

    #[tokio::test]
    async fn one_task_fires_the_waiters_of_a_vanished_thread_and_forgets_answered_ones() {
        let watch = Arc::new(SignalWatch::default());
        tokio::spawn(Arc::clone(&watch).run());
        let gone = watch.interrupted(u32::MAX - 1).expect("watched");
        let answered = watch.interrupted(u32::MAX - 1).expect("watched");
        drop(answered);
        assert_eq!(
            watch.waiting_threads().len(),
            1,
            "an answered request is not watched"
        );
        let error = tokio::time::timeout(Duration::from_secs(2), gone)
            .await
            .expect("fired within the interval");
        assert!(matches!(error, Error::Interrupted));
        assert!(watch.waiting_threads().is_empty());
        assert!(
            watch.interrupted(0).is_none(),
            "pid 0: not visible from here"
        );
    }
}
