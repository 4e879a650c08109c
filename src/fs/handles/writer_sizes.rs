//! The sizes writers just delivered: what each process just delivered to
//! a device, so that its own `stat` of the device right afterwards sees
//! what an ordinary file would show: the size it wrote.
//!
//! A device reports one message's worth of size to everyone else (see
//! `requests/attrs.rs`): that keeps the kernel from serialising writers of one
//! inode. But a writer that checks its work, as Claude Code's file tools
//! do (`st_size` of the target after a rename must equal the bytes
//! written), must find its own n bytes. So for a few seconds after a
//! delivery, that process (thread group) alone is told n, uncached, until
//! it opens the device to read it.

use crate::maps::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::fs::tree::target::Target;

/// How long a delivery's size is shown to its writer.
const SHOWN_FOR: Duration = Duration::from_secs(10);

/// Past this many remembered deliveries, the expired ones go.
const PRUNE_AT: usize = 256;

/// The sizes of recent deliveries, by device and writer.
#[derive(Debug, Default)]
pub(crate) struct WriterSizes {
    inner: Mutex<Recent>,
}

#[derive(Debug, Default)]
struct Recent {
    /// (device, thread group) → (bytes, when).
    by_writer: HashMap<(Target, u32), (u64, Instant)>,
    /// When the newest delivery was: none is shown once it is old.
    newest: Option<Instant>,
}

impl WriterSizes {
    /// Process `pid` just delivered `bytes` bytes to `device`.
    pub(crate) fn record(&self, device: Target, pid: u32, bytes: u64) {
        let now = Instant::now();
        let mut recent = self.inner.lock();
        if recent.by_writer.len() >= PRUNE_AT {
            recent
                .by_writer
                .retain(|_, (_, when)| now.duration_since(*when) < SHOWN_FOR);
        }
        if recent.by_writer.len() >= PRUNE_AT {
            recent.by_writer.clear();
        }
        recent.by_writer.insert((device, pid), (bytes, now));
        recent.newest = Some(now);
    }

    /// Process `pid` opened `device` to read it: from now on it sees the
    /// device as everyone does (a reader sized by `fstat`, such as Node's
    /// `readFile`, must get the whole usage line or result).
    pub(crate) fn forget(&self, device: &Target, pid: u32) {
        self.inner.lock().by_writer.remove(&(device.clone(), pid));
    }

    /// Whether no delivery is shown any more (a cheap check before finding
    /// out who asks, which reads `/proc`).
    pub(crate) fn is_empty(&self) -> bool {
        self.inner
            .lock()
            .newest
            .is_none_or(|newest| newest.elapsed() >= SHOWN_FOR)
    }

    /// The size process `pid` delivered to `device` lately, if it did.
    pub(crate) fn size_for(&self, device: &Target, pid: u32) -> Option<u64> {
        let recent = self.inner.lock();
        let (bytes, when) = recent.by_writer.get(&(device.clone(), pid))?;
        (when.elapsed() < SHOWN_FOR).then_some(*bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    const RESOLVE: Target = Target::Device(Device::Resolve);
    const REJECT: Target = Target::Device(Device::Reject);

    #[test]
    fn a_delivery_is_shown_to_its_process_only() {
        let sizes = WriterSizes::default();
        assert!(sizes.is_empty());
        sizes.record(RESOLVE, 7, 42);
        assert_eq!(sizes.size_for(&RESOLVE, 7), Some(42));
        assert_eq!(sizes.size_for(&RESOLVE, 8), None);
        assert_eq!(sizes.size_for(&REJECT, 7), None);
        sizes.record(RESOLVE, 7, 5);
        assert_eq!(sizes.size_for(&RESOLVE, 7), Some(5), "the latest");
        sizes.forget(&RESOLVE, 7);
        assert_eq!(sizes.size_for(&RESOLVE, 7), None, "read since");
    }

    #[test]
    fn the_memory_stays_bounded() {
        let sizes = WriterSizes::default();
        for pid in 0..10 * PRUNE_AT as u32 {
            sizes.record(RESOLVE, pid, 1);
        }
        assert!(sizes.inner.lock().by_writer.len() <= PRUNE_AT);
    }
}
