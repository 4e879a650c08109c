//! Noticing that a writer blocked on a device has been signalled.
//!
//! Once a request reaches the filesystem the kernel waits for its answer even
//! through SIGKILL, and fuser 0.18 ignores FUSE interrupt requests. So the
//! mount watches the waiting threads' pending signal sets under `/proc` and
//! answers itself. One task watches them all, and looks less often the more
//! there are, so that thousands of blocked readers cost a bounded share of a
//! CPU rather than one `/proc` read each every 40 ms.
//!
//! Signals come in two strengths. A signal the process *handles* and does
//! not mean as "stop" (SIGCHLD from a finished background job, SIGWINCH,
//! SIGALRM, SIGUSR1) is ordinary: a decision under way is never given up for
//! it, because the writer would be told `EINTR` for something that went
//! ahead. A signal that ends the process (SIGKILL, any signal left at a
//! deadly default) or asks it to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
//! even when handled) lets the writer go at once.

use crate::maps::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{watch, Notify};

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

/// A signal number's bit in a `/proc` signal mask.
const fn bit(signal: i32) -> u64 {
    1 << (signal - 1)
}

/// Signals that mean "stop" even when the process handles them: a shell's
/// Ctrl-C, `kill`, a closed terminal, Ctrl-\. Python, for one, handles
/// SIGINT (as `KeyboardInterrupt`), and must still be interruptible.
const STOP_SIGNALS: u64 = bit(libc::SIGKILL)
    | bit(libc::SIGINT)
    | bit(libc::SIGTERM)
    | bit(libc::SIGHUP)
    | bit(libc::SIGQUIT);

/// Signals whose default action does not end the process (it ignores,
/// stops or continues it): left at their default, they are not deadly.
const HARMLESS_BY_DEFAULT: u64 = bit(libc::SIGCHLD)
    | bit(libc::SIGWINCH)
    | bit(libc::SIGURG)
    | bit(libc::SIGCONT)
    | bit(libc::SIGSTOP)
    | bit(libc::SIGTSTP)
    | bit(libc::SIGTTIN)
    | bit(libc::SIGTTOU);

/// What a waiting thread's pending signals mean for its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Signalled {
    /// Nothing deliverable is pending.
    #[default]
    No,
    /// Only signals the process handles (or that stop it for a while): the
    /// thread runs its handler once the request is answered.
    Handled,
    /// A signal that ends the process or asks it to stop.
    Stop,
}

/// Parses a hex mask line value (`SigPnd:\t0000000000000100`).
fn mask(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|value| u64::from_str_radix(value.trim(), 16).ok())
        .unwrap_or(0)
}

/// What `/proc/<tid>/status` shows pending for the thread: a deliverable
/// signal (pending, its own or the process's, and not blocked; SIGKILL
/// always) and how strong it is.
pub(crate) fn signalled_in(status: &str) -> Signalled {
    let pending = mask(status, "SigPnd:") | mask(status, "ShdPnd:");
    let blocked = mask(status, "SigBlk:") & !bit(libc::SIGKILL);
    let deliverable = pending & !blocked;
    if deliverable == 0 {
        return Signalled::No;
    }
    let handled_or_ignored = mask(status, "SigCgt:") | mask(status, "SigIgn:");
    let deadly = deliverable & !handled_or_ignored & !HARMLESS_BY_DEFAULT;
    if deliverable & STOP_SIGNALS != 0 || deadly != 0 {
        Signalled::Stop
    } else {
        Signalled::Handled
    }
}

/// What thread `tid` has pending; a thread that is gone counts as stopped.
/// A status that cannot be read for another reason (out of descriptors,
/// say) counts as nothing: the next check looks again.
fn signalled(tid: u32) -> Signalled {
    match std::fs::read_to_string(format!("/proc/{tid}/status")) {
        Ok(status) => signalled_in(&status),
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => {
            Signalled::Stop
        }
        Err(_) => Signalled::No,
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
    /// The strongest signal seen pending so far.
    signalled: watch::Sender<Signalled>,
}

impl SignalWatch {
    /// A cancel signal that fires with [`Error::Interrupted`] once thread
    /// `tid` has a signal pending at least as strong as `strength`. `None`
    /// when the thread is not visible from here (pid 0: another pid
    /// namespace).
    pub(crate) fn interrupted(self: &Arc<Self>, tid: u32, strength: Signalled) -> Option<Cancel> {
        if tid == 0 {
            return None;
        }
        let watch = Arc::clone(self);
        // Watched from the first poll on: a request answered inline (most
        // are) costs no entry in the table and no wakeup of the task.
        Some(Box::pin(async move {
            let (watched, mut seen) = watch.watch(tid);
            let _watched = watched;
            // The sender goes only with the watch: then nobody answers.
            if seen.wait_for(|seen| *seen >= strength).await.is_err() {
                std::future::pending::<()>().await;
            }
            Error::Interrupted
        }))
    }

    /// Starts watching thread `tid`: what it has pending is told through
    /// the receiver until the returned guard is dropped.
    fn watch(self: Arc<Self>, tid: u32) -> (Watched, watch::Receiver<Signalled>) {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let (signalled, seen) = watch::channel(Signalled::No);
        self.waiting.lock().insert(key, Waiter { tid, signalled });
        self.arrived.notify_one();
        (Watched { watch: self, key }, seen)
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
            let seen: HashMap<u32, Signalled> = self
                .waiting_threads()
                .into_iter()
                .collect::<HashSet<u32>>()
                .into_iter()
                .map(|tid| (tid, signalled(tid)))
                .filter(|(_, seen)| *seen != Signalled::No)
                .collect();
            if !seen.is_empty() {
                self.tell(&seen);
            }
        }
    }

    /// The threads still worth a look: none already seen stopping.
    fn waiting_threads(&self) -> Vec<u32> {
        self.waiting
            .lock()
            .values()
            .filter(|waiter| *waiter.signalled.borrow() != Signalled::Stop)
            .map(|waiter| waiter.tid)
            .collect()
    }

    /// Tells each waiter of a signalled thread what it has pending. A
    /// waiter stays watched until its request is answered: one that let a
    /// handled signal pass may still be stopped later.
    fn tell(&self, seen: &HashMap<u32, Signalled>) {
        for waiter in self.waiting.lock().values() {
            if let Some(&now) = seen.get(&waiter.tid) {
                waiter.signalled.send_if_modified(|strongest| {
                    let stronger = now > *strongest;
                    if stronger {
                        *strongest = now;
                    }
                    stronger
                });
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

    const QUIET: &str = "Name:\tsh\nSigQ:\t0/1\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n";

    /// `QUIET` with `key`'s mask holding exactly `signals`.
    fn with(status: &str, key: &str, signals: &[i32]) -> String {
        let value = signals.iter().fold(0, |mask, signal| mask | bit(*signal));
        let old = format!("{key}\t0000000000000000");
        assert!(status.contains(&old), "{key} already set");
        status.replace(&old, &format!("{key}\t{value:016x}"))
    }

    #[test]
    fn quiet_thread_has_nothing_pending() {
        assert_eq!(signalled_in(QUIET), Signalled::No);
    }

    #[test]
    fn a_shared_sigint_stops_even_when_handled() {
        let status = with(QUIET, "ShdPnd:", &[libc::SIGINT]);
        assert_eq!(signalled_in(&status), Signalled::Stop);
        let handled = with(&status, "SigCgt:", &[libc::SIGINT]);
        assert_eq!(signalled_in(&handled), Signalled::Stop);
    }

    #[test]
    fn handled_ordinary_signals_are_not_a_stop() {
        for signal in [libc::SIGCHLD, libc::SIGWINCH, libc::SIGALRM, libc::SIGUSR1] {
            let pending = with(QUIET, "SigPnd:", &[signal]);
            let handled = with(&pending, "SigCgt:", &[signal]);
            assert_eq!(
                signalled_in(&handled),
                Signalled::Handled,
                "signal {signal}"
            );
        }
    }

    #[test]
    fn a_signal_left_at_a_deadly_default_stops() {
        for signal in [libc::SIGALRM, libc::SIGUSR1, libc::SIGPIPE] {
            let pending = with(QUIET, "SigPnd:", &[signal]);
            assert_eq!(signalled_in(&pending), Signalled::Stop, "signal {signal}");
        }
        let stopped = with(QUIET, "SigPnd:", &[libc::SIGTSTP]);
        assert_eq!(signalled_in(&stopped), Signalled::Handled);
    }

    #[test]
    fn blocked_signal_does_not_count_but_sigkill_always_does() {
        let blocked = with(
            &with(QUIET, "SigPnd:", &[libc::SIGINT]),
            "SigBlk:",
            &[libc::SIGINT, libc::SIGKILL],
        );
        assert_eq!(signalled_in(&blocked), Signalled::No);
        let killed = blocked.replace("SigPnd:\t0000000000000002", "SigPnd:\t0000000000000100");
        assert_eq!(signalled_in(&killed), Signalled::Stop);
    }

    #[test]
    fn a_vanished_thread_counts_as_stopped() {
        assert_eq!(signalled(u32::MAX - 1), Signalled::Stop);
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
        let mut gone = watch
            .interrupted(u32::MAX - 1, Signalled::Stop)
            .expect("watched");
        let mut answered = watch
            .interrupted(u32::MAX - 1, Signalled::Handled)
            .expect("watched");
        let inline = watch
            .interrupted(u32::MAX - 1, Signalled::Handled)
            .expect("watched");
        assert!(futures::FutureExt::now_or_never(&mut gone).is_none());
        assert!(futures::FutureExt::now_or_never(&mut answered).is_none());
        assert_eq!(watch.waiting.lock().len(), 2, "watched once polled");
        drop((answered, inline));
        assert_eq!(
            watch.waiting.lock().len(),
            1,
            "an answered request is not watched, one never polled never was"
        );
        let error = tokio::time::timeout(Duration::from_secs(10), gone)
            .await
            .expect("fired within the interval");
        assert!(matches!(error, Error::Interrupted));
        assert!(watch.waiting.lock().is_empty());
        assert!(
            watch.interrupted(0, Signalled::Handled).is_none(),
            "pid 0: not visible from here"
        );
    }
}
