//! Open file handles: what each descriptor of the mount is in the middle of.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use fuser::FileHandle;
use parking_lot::Mutex;

use crate::fs::message::{Message, WriteStep};
use crate::fs::nodes::Node;
use crate::fs::stage::StageChannel;
use crate::fs::target::Target;
use crate::journal::{LogReader, Who};

/// The state of one open descriptor.
#[derive(Debug)]
pub(crate) enum Handle {
    /// A device-like file: the message being written, then that message's
    /// result. Reads keep their own cursor: the descriptor's offset moved
    /// with the write, but the answer is read from its start (as from a ctl
    /// file). `writer` made the last write, for the journal of a message
    /// dispatched when the descriptor is released.
    Target {
        target: Target,
        message: Message,
        result: Option<String>,
        read_from: usize,
        writer: Option<Who>,
    },
    /// A status file: its content as of the last read at offset 0 (as
    /// sysfs does), so one sequential read is consistent and every read
    /// from the start is fresh. Rendered on the first read, not at open.
    Snapshot(Node, Option<Vec<u8>>),
    /// `log`: read live at any offset (see [`LogReader`]).
    Log(LogReader),
    /// `events`: the next journal record this reader has not seen.
    Events { next: usize },
    /// `stage`: an external producer's conversation.
    Stage(StageChannel),
}

impl Handle {
    /// A fresh handle for a device-like file.
    pub(crate) fn target(target: Target) -> Self {
        Handle::Target {
            target,
            message: Message::default(),
            result: None,
            read_from: 0,
            writer: None,
        }
    }
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

    /// Feeds a write to a device-like handle; `None` if `fh` is not one.
    pub(crate) fn write(&self, fh: FileHandle, data: &[u8]) -> Option<(Target, WriteStep)> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Target {
                target, message, ..
            } => Some((target.clone(), message.write(data))),
            _ => None,
        }
    }

    /// Notes who wrote last on a device-like handle.
    pub(crate) fn note_writer(&self, fh: FileHandle, who: &Who) {
        if let Some(Handle::Target { writer, .. }) = self.open.lock().get_mut(&fh.0) {
            *writer = Some(who.clone());
        }
    }

    /// Renders a snapshot handle with `render` on a read from offset 0 or
    /// on its first read. Returns whether it rendered.
    pub(crate) fn refresh_snapshot(
        &self,
        fh: FileHandle,
        offset: u64,
        render: impl FnOnce(&Node) -> Option<String>,
    ) -> bool {
        match self.open.lock().get_mut(&fh.0) {
            Some(Handle::Snapshot(node, bytes)) if offset == 0 || bytes.is_none() => {
                *bytes = Some(render(node).unwrap_or_default().into_bytes());
                true
            }
            _ => false,
        }
    }

    /// Drops the rendered content of a snapshot handle, so that its next
    /// read renders afresh whatever its offset.
    pub(crate) fn discard_snapshot(&self, fh: FileHandle) {
        if let Some(Handle::Snapshot(_, bytes)) = self.open.lock().get_mut(&fh.0) {
            *bytes = None;
        }
    }

    /// Runs `f` on the handle of `fh`, if it is open.
    pub(crate) fn with<T>(&self, fh: FileHandle, f: impl FnOnce(&mut Handle) -> T) -> Option<T> {
        self.open.lock().get_mut(&fh.0).map(f)
    }

    /// Records the result of the message written on `fh`, for reading back
    /// on the same descriptor. One message per open, so the first result
    /// stays: a refused second write does not hide it.
    pub(crate) fn set_result(&self, fh: FileHandle, text: &str) {
        if let Some(Handle::Target {
            result: result @ None,
            read_from,
            ..
        }) = self.open.lock().get_mut(&fh.0)
        {
            *result = Some(text.to_string());
            *read_from = 0;
        }
    }

    /// What a read of `fh` returns right now: a snapshot's bytes at
    /// `offset`; for a device-like file, the next part of its result (else
    /// of its usage line, made by `usage`), whatever the offset. `None` for
    /// handles whose reads are served elsewhere (log, events, stage) or
    /// that are not open.
    pub(crate) fn read(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
        usage: impl FnOnce(&Target) -> String,
    ) -> Option<Vec<u8>> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Snapshot(_, bytes) => {
                Some(slice_at(bytes.as_deref().unwrap_or_default(), offset, size).to_vec())
            }
            Handle::Target {
                target,
                result,
                read_from,
                ..
            } => {
                let text = match result {
                    Some(text) => format!("{text}\n"),
                    None => format!("{}\n", usage(target)),
                };
                let part = slice_at(text.as_bytes(), *read_from as u64, size).to_vec();
                *read_from += part.len();
                Some(part)
            }
            _ => None,
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
        let fh = handles.insert(Handle::target(Target::Device(
            crate::dispatch::Device::Resolve,
        )));
        let usage = |target: &Target| format!("usage of {}", target.name());
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
