//! The table of open descriptors: what each descriptor of the mount is in
//! the middle of, by file handle.

use crate::maps::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fuser::{Errno, FileHandle, INodeNo};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::drafts::Draft;
use super::message::{Message, WriteStep};
use super::slice_at;
use super::stage::StageChannel;
use crate::fs::kernel::busy::Held;
use crate::fs::tree::node::Node;
use crate::fs::tree::target::Target;
use crate::journal::{EventsAt, LogReader};
use crate::maps::remove_and_shrink;
use crate::who::Who;

/// The state of one open descriptor.
#[derive(Debug)]
pub(crate) enum Handle {
    /// A device-like file: its one message (the first write), then that
    /// message's outcome and result. Reads honour their offset; the result
    /// text starts where the descriptor's last write left its offset, so
    /// that write-then-read on one descriptor reads the whole answer (as
    /// from a ctl file), and a read at offset 0 always reads from the start.
    Target {
        target: Target,
        message: Message,
        /// The first write's outcome once known: later writes get the same.
        outcome: watch::Sender<Option<Outcome>>,
        result: Option<String>,
        /// Where the descriptor's last write started, and its length: the
        /// descriptor's offset moved past it if it succeeded.
        last_write: (u64, u64),
        /// The preview the message decided, and who wrote last: for the
        /// journal's note of ignored bytes when the descriptor goes.
        decided: Option<Decided>,
        writer: Option<Who>,
        /// A device opened for writing holds its inode until the first
        /// write takes the hold over (see [`crate::fs::kernel::busy`]).
        held: Option<Held>,
    },
    /// A status file: its content as of the last read at offset 0 (as
    /// sysfs does), so one sequential read is consistent and every read
    /// from the start is fresh. Rendered on the first read, not at open;
    /// descriptors that read the same content share it.
    Snapshot(Node, Option<Arc<[u8]>>),
    /// `log`: read live at any offset (see [`LogReader`]).
    Log(LogReader),
    /// `events`: where this reader is in the journal's records.
    Events { at: EventsAt },
    /// `stage`: an external producer's conversation.
    Stage(StageChannel),
    /// A directory: what it listed at the start of the current pass.
    Directory(Option<Arc<Listing>>),
    /// A draft. Once its name is gone (renamed onto a device, removed) it
    /// holds nothing and refuses writes (see `Drafts::remove`).
    Draft(Arc<Draft>),
}

/// The preview a descriptor's message decided: what the journal's note of
/// later, ignored bytes names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Decided {
    pub(crate) id: Option<Arc<str>>,
    pub(crate) label: Option<String>,
    pub(crate) source_tool: Option<String>,
}

/// What a device write returned: success, or its errno.
pub(crate) type Outcome = Result<(), Errno>;

/// A directory listing: (inode, name, node) per entry, dots first.
pub(crate) type Listing = Vec<(INodeNo, String, Node)>;

impl Handle {
    /// A fresh handle for a device-like file, holding its inode if it is
    /// a device opened for writing.
    pub(crate) fn target(target: Target, held: Option<Held>) -> Self {
        Handle::Target {
            target,
            message: Message::default(),
            outcome: watch::Sender::new(None),
            result: None,
            last_write: (0, 0),
            decided: None,
            writer: None,
            held,
        }
    }

    /// Gives a device-like handle its hold on its inode (taken after a
    /// wait for the inode to be free).
    pub(crate) fn hold(&mut self, taken: Held) {
        if let Handle::Target { held, .. } = self {
            *held = Some(taken);
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
        remove_and_shrink(&mut self.open.lock(), &fh.0)
    }

    /// Feeds a write at `offset` to a device-like handle: what it does with
    /// the target's message, and the descriptor's hold on its inode if the
    /// message goes out now. `None` if `fh` is not one.
    pub(crate) fn write(
        &self,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
    ) -> Option<(Target, WriteStep, Option<Held>)> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Target {
                target,
                message,
                last_write,
                held,
                ..
            } => {
                *last_write = (offset, data.len() as u64);
                let step = message.write(data);
                // The first write ends the hold either way: a message
                // refused at once writes nothing that others could wait for.
                let held = held
                    .take()
                    .filter(|_| matches!(step, WriteStep::Dispatch(_)));
                Some((target.clone(), step, held))
            }
            _ => None,
        }
    }

    /// How many bytes were written on a device-like handle (`None` for
    /// other handles).
    pub(crate) fn written(&self, fh: FileHandle) -> Option<usize> {
        match self.open.lock().get(&fh.0)? {
            Handle::Target { message, .. } => Some(message.written()),
            _ => None,
        }
    }

    /// The first write's outcome on a device-like handle, for a later
    /// write (which notes itself as the last writer): known, or to wait for.
    pub(crate) fn first_outcome(
        &self,
        fh: FileHandle,
        who: &Who,
    ) -> Option<watch::Receiver<Option<Outcome>>> {
        match self.open.lock().get_mut(&fh.0)? {
            Handle::Target {
                outcome, writer, ..
            } => {
                *writer = Some(who.clone());
                Some(outcome.subscribe())
            }
            _ => None,
        }
    }

    /// Renders a snapshot handle with `render` on a read from offset 0 or
    /// on its first read (outside the table's lock: a large status must
    /// not hold up other descriptors).
    pub(crate) fn refresh_snapshot(
        &self,
        fh: FileHandle,
        offset: u64,
        render: impl FnOnce(&Node) -> Arc<[u8]>,
    ) {
        let Some(stale) = self.stale_snapshot(fh, offset) else {
            return;
        };
        let rendered = render(&stale);
        if let Some(Handle::Snapshot(_, bytes)) = self.open.lock().get_mut(&fh.0) {
            *bytes = Some(rendered);
        }
    }

    /// The node of a snapshot handle that a read at `offset` renders anew.
    pub(crate) fn stale_snapshot(&self, fh: FileHandle, offset: u64) -> Option<Node> {
        match self.open.lock().get(&fh.0)? {
            Handle::Snapshot(node, bytes) if offset == 0 || bytes.is_none() => Some(node.clone()),
            _ => None,
        }
    }

    /// The listing a directory descriptor reads from `offset`: taken anew
    /// by `list` at offset 0 (outside the table's lock) or on its first read.
    pub(crate) fn listing(
        &self,
        fh: FileHandle,
        offset: u64,
        list: impl FnOnce() -> Arc<Listing>,
    ) -> Option<Arc<Listing>> {
        match self.open.lock().get(&fh.0)? {
            Handle::Directory(Some(listing)) if offset != 0 => return Some(Arc::clone(listing)),
            Handle::Directory(_) => {}
            _ => return None,
        }
        let listing = list();
        if let Some(Handle::Directory(kept)) = self.open.lock().get_mut(&fh.0) {
            *kept = Some(Arc::clone(&listing));
        }
        Some(listing)
    }

    /// The draft open on `fh`, if `fh` is a draft's descriptor.
    pub(crate) fn draft(&self, fh: FileHandle) -> Option<Arc<Draft>> {
        match self.open.lock().get(&fh.0)? {
            Handle::Draft(draft) => Some(Arc::clone(draft)),
            _ => None,
        }
    }

    /// A draft numbered `ino` that a descriptor still holds open, though
    /// its name may be gone (the kernel asks for the attributes of an open
    /// file by inode). Scans the open descriptors: only asked for an inode
    /// no name leads to.
    pub(crate) fn draft_by_ino(&self, ino: INodeNo) -> Option<Arc<Draft>> {
        self.open.lock().values().find_map(|handle| match handle {
            Handle::Draft(draft) if draft.ino() == ino => Some(Arc::clone(draft)),
            _ => None,
        })
    }

    /// Runs `f` on the handle of `fh`, if it is open.
    pub(crate) fn with<T>(&self, fh: FileHandle, f: impl FnOnce(&mut Handle) -> T) -> Option<T> {
        self.open.lock().get_mut(&fh.0).map(f)
    }

    /// Records the outcome and result of the message written on `fh` (and
    /// the preview it decided), for later writes and for reading back on the
    /// same descriptor.
    pub(crate) fn set_result(
        &self,
        fh: FileHandle,
        outcome: Outcome,
        text: &str,
        preview: Decided,
    ) {
        if let Some(Handle::Target {
            outcome: first,
            result,
            decided,
            ..
        }) = self.open.lock().get_mut(&fh.0)
        {
            first.send_replace(Some(outcome));
            *result = Some(text.to_string());
            *decided = Some(preview);
        }
    }

    /// Forgets the message of a device-like handle whose decision was
    /// withdrawn before it was made: its next write is a message again.
    pub(crate) fn forget_message(&self, fh: FileHandle) {
        if let Some(Handle::Target { message, .. }) = self.open.lock().get_mut(&fh.0) {
            *message = Message::default();
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
                outcome,
                last_write: (at, len),
                ..
            } => {
                let written_to = match *outcome.borrow() {
                    Some(Ok(())) => at.saturating_add(*len),
                    _ => *at,
                };
                let (text, start) = match result {
                    Some(text) if offset >= written_to => {
                        (format!("{text}\n"), offset - written_to)
                    }
                    Some(text) => (format!("{text}\n"), offset),
                    None => (format!("{}\n", usage(target)), offset),
                };
                Some(slice_at(text.as_bytes(), start, size).to_vec())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_write_ends_the_hold_on_the_inode_even_when_refused() {
        use crate::fs::kernel::busy::{Busy, OpenWrite};
        let busy = Arc::new(Busy::default());
        let handles = Handles::default();
        let open = |ino: u64| {
            let OpenWrite::Open(held) = busy.open_write(INodeNo(ino), 1) else {
                panic!("a free inode opens");
            };
            let target = Target::Device(crate::device::Device::Resolve);
            handles.insert(Handle::target(target, Some(held)))
        };
        let (refused, sent) = (open(1), open(2));
        let (_, step, held) = handles
            .write(refused, 0, b"bad\0")
            .expect("a device handle");
        assert!(matches!(step, WriteStep::Refuse(_)) && held.is_none());
        assert!(!busy.is_held(INodeNo(1)), "a refused message holds nothing");
        let (_, step, held) = handles.write(sent, 0, b"go").expect("a device handle");
        assert!(matches!(step, WriteStep::Dispatch(_)));
        assert!(
            held.is_some(),
            "a message that goes out takes the hold along"
        );
        let (_, step, held) = handles.write(sent, 2, b"more").expect("a device handle");
        assert!(matches!(step, WriteStep::Repeat) && held.is_none());
    }

    #[test]
    fn device_reads_usage_then_result() {
        let handles = Handles::default();
        let fh = handles.insert(Handle::target(
            Target::Device(crate::device::Device::Resolve),
            None,
        ));
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
        assert_eq!(
            handles.read(fh, 0, 5, usage),
            Some(b"usage".to_vec()),
            "offset 0 reads from the start again"
        );
        handles.write(fh, 0, b"go\n");
        handles.set_result(fh, Ok(()), "applied", Decided::default());
        assert_eq!(
            handles.read(fh, 3, 4, usage),
            Some(b"appl".to_vec()),
            "after the write, the result starts at the write's end"
        );
        assert_eq!(handles.read(fh, 7, 100, usage), Some(b"ied\n".to_vec()));
        assert_eq!(handles.read(fh, 11, 100, usage), Some(Vec::new()));
        assert_eq!(
            handles.read(fh, 0, 100, usage),
            Some(b"applied\n".to_vec()),
            "pread at 0: from the start"
        );
        assert!(handles.remove(fh).is_some());
        assert_eq!(handles.read(fh, 0, 100, usage), None);
    }
}
