//! Open file handles: what each descriptor of the mount is in the middle of.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use fuser::FileHandle;
use parking_lot::Mutex;

use crate::dispatch::Device;
use crate::fs::message::{Message, WriteStep};

/// The state of one open descriptor.
#[derive(Debug)]
pub(crate) enum Handle {
    /// A device: the message being written, then that message's result.
    /// Reads keep their own cursor: the descriptor's offset moved with the
    /// write, but the answer is read from its start (as from a ctl file).
    Device {
        device: Device,
        message: Message,
        result: Option<String>,
        read_from: usize,
    },
    /// A status file: its content as of the open, so reads at any offset
    /// agree with each other.
    Snapshot(Vec<u8>),
}

/// Every open descriptor of a mount.
#[derive(Debug, Default)]
pub(crate) struct Handles {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Handle>>,
}

impl Handles {
    pub(crate) fn insert(&self, handle: Handle) -> FileHandle {
        let fh = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.open.lock().insert(fh, handle);
        FileHandle(fh)
    }

    pub(crate) fn remove(&self, fh: FileHandle) -> Option<Handle> {
        self.open.lock().remove(&fh.0)
    }

    /// Feeds a write to a device handle; `None` if `fh` is not one.
    pub(crate) fn write(&self, fh: FileHandle, data: &[u8]) -> Option<(Device, WriteStep)> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Device {
                device, message, ..
            } => Some((*device, message.write(data))),
            Handle::Snapshot(_) => None,
        }
    }

    /// Records the result of the message written on `fh`, for reading back
    /// on the same descriptor.
    pub(crate) fn set_result(&self, fh: FileHandle, text: &str) {
        if let Some(Handle::Device {
            result, read_from, ..
        }) = self.open.lock().get_mut(&fh.0)
        {
            *result = Some(text.to_string());
            *read_from = 0;
        }
    }

    /// What a read of `fh` returns: a snapshot's bytes at `offset`; for a
    /// device, the next part of its result (else of its usage line, made by
    /// `usage`), whatever the offset.
    pub(crate) fn read(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
        usage: impl FnOnce(Device) -> String,
    ) -> Option<Vec<u8>> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Snapshot(bytes) => Some(slice_at(bytes, offset, size).to_vec()),
            Handle::Device {
                device,
                result,
                read_from,
                ..
            } => {
                let text = match result {
                    Some(text) => format!("{text}\n"),
                    None => format!("{}\n", usage(*device)),
                };
                let part = slice_at(text.as_bytes(), *read_from as u64, size).to_vec();
                *read_from += part.len();
                Some(part)
            }
        }
    }
}

/// The part of `bytes` a read at `offset` of at most `size` bytes returns.
pub(crate) fn slice_at(bytes: &[u8], offset: u64, size: u32) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let end = start.saturating_add(size as usize).min(bytes.len());
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_respect_offset_and_size() {
        assert_eq!(slice_at(b"hello", 0, 3), b"hel");
        assert_eq!(slice_at(b"hello", 3, 10), b"lo");
        assert_eq!(slice_at(b"hello", 9, 10), b"");
    }

    #[test]
    fn device_reads_usage_then_result() {
        let handles = Handles::default();
        let fh = handles.insert(Handle::Device {
            device: Device::Resolve,
            message: Message::default(),
            result: None,
            read_from: 0,
        });
        let usage = |device: Device| format!("usage of {}", device.name());
        assert_eq!(handles.read(fh, 0, 6, usage), Some(b"usage ".to_vec()));
        assert_eq!(
            handles.read(fh, 6, 100, usage),
            Some(b"of resolve\n".to_vec())
        );
        assert_eq!(
            handles.read(fh, 17, 100, usage),
            Some(Vec::new()),
            "then end of file"
        );
        handles.set_result(fh, "applied");
        assert_eq!(
            handles.read(fh, 4096, 100, usage),
            Some(b"applied\n".to_vec()),
            "the result reads from its start whatever the offset"
        );
        assert!(handles.remove(fh).is_some());
        assert_eq!(handles.read(fh, 0, 100, usage), None);
    }
}
