//! What each process just delivered to a device, so that its own `stat`
//! of the device right afterwards sees what an ordinary file would show:
//! the size it wrote.
//!
//! A device reports one message's worth of size to everyone else (see the
//! adapter's `attr`): that keeps the kernel from serialising writers of one
//! inode. But a writer that checks its work, as Claude Code's file tools
//! do (`st_size` of the target after a rename must equal the bytes
//! written), must find its own n bytes. So for a few seconds after a
//! delivery, that process (thread group) alone is told n, uncached, until
//! it opens the device to read it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a delivery's size is shown to its writer.
const SHOWN_FOR: Duration = Duration::from_secs(10);

/// Past this many remembered deliveries, the expired ones go.
const PRUNE_AT: usize = 256;

/// Recent deliveries: (device path, thread group) → (bytes, when).
#[derive(Debug, Default)]
pub(crate) struct Delivered {
    recent: Mutex<HashMap<(String, u32), (u64, Instant)>>,
    /// When the newest delivery was: none is shown once it is old.
    newest: Mutex<Option<Instant>>,
}

impl Delivered {
    /// Process `pid` just delivered `bytes` bytes to the device at `device`.
    pub(crate) fn record(&self, device: String, pid: u32, bytes: u64) {
        let now = Instant::now();
        let mut recent = self.recent.lock();
        if recent.len() >= PRUNE_AT {
            recent.retain(|_, (_, when)| now.duration_since(*when) < SHOWN_FOR);
        }
        if recent.len() >= PRUNE_AT {
            recent.clear();
        }
        recent.insert((device, pid), (bytes, now));
        *self.newest.lock() = Some(now);
    }

    /// Process `pid` opened `device` to read it: from now on it sees the
    /// device as everyone does (a reader sized by `fstat`, such as Node's
    /// `readFile`, must get the whole usage line or result).
    pub(crate) fn forget(&self, device: &str, pid: u32) {
        self.recent.lock().remove(&(device.to_string(), pid));
    }

    /// Whether no delivery is shown any more (a cheap check before finding
    /// out who asks, which reads `/proc`).
    pub(crate) fn is_empty(&self) -> bool {
        self.newest
            .lock()
            .is_none_or(|newest| newest.elapsed() >= SHOWN_FOR)
    }

    /// The size process `pid` delivered to `device` lately, if it did.
    pub(crate) fn size_for(&self, device: &str, pid: u32) -> Option<u64> {
        let recent = self.recent.lock();
        let (bytes, when) = recent.get(&(device.to_string(), pid))?;
        (when.elapsed() < SHOWN_FOR).then_some(*bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_is_shown_to_its_process_only() {
        let delivered = Delivered::default();
        assert!(delivered.is_empty());
        delivered.record("resolve".into(), 7, 42);
        assert_eq!(delivered.size_for("resolve", 7), Some(42));
        assert_eq!(delivered.size_for("resolve", 8), None);
        assert_eq!(delivered.size_for("reject", 7), None);
        delivered.record("resolve".into(), 7, 5);
        assert_eq!(delivered.size_for("resolve", 7), Some(5), "the latest");
        delivered.forget("resolve", 7);
        assert_eq!(delivered.size_for("resolve", 7), None, "read since");
    }

    #[test]
    fn the_memory_stays_bounded() {
        let delivered = Delivered::default();
        for pid in 0..10 * PRUNE_AT as u32 {
            delivered.record("resolve".into(), pid, 1);
        }
        assert!(delivered.recent.lock().len() <= PRUNE_AT);
    }
}
