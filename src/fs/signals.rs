//! Noticing that a writer blocked on a device has been signalled.
//!
//! Once a request reaches the filesystem the kernel waits for its answer even
//! through SIGKILL, and fuser 0.18 ignores FUSE interrupt requests. So the
//! mount watches the waiting thread's pending signal sets under `/proc` and
//! answers `EINTR` itself.

use std::time::Duration;

use crate::dispatch::Cancel;
use crate::error::Error;

/// How often a waiting writer's signal state is checked. Keeps the answer
/// to a signal well within 200 ms.
const POLL_INTERVAL: Duration = Duration::from_millis(40);

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
/// say) does not count: the next poll looks again.
fn has_pending_signal(tid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/status")) {
        Ok(status) => signal_pending_in(&status),
        Err(err) => matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)),
    }
}

/// A cancel signal that fires with [`Error::Interrupted`] once the writer
/// thread `tid` has a signal pending. `None` when the writer is not visible
/// from here (pid 0: another pid namespace).
pub(crate) fn interrupted(tid: u32) -> Option<Cancel> {
    if tid == 0 {
        return None;
    }
    Some(Box::pin(async move {
        loop {
            tokio::time::sleep(POLL_INTERVAL).await;
            if has_pending_signal(tid) {
                return Error::Interrupted;
            }
        }
    }))
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
}
