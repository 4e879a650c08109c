//! What a read gets: bytes now, or a wait (`events` before its next
//! record, `stage` before the producer's next message). A non-blocking
//! reader that would wait gets `EAGAIN`; a descriptor the mount does not
//! know, `EBADF`.

use std::sync::Arc;

use fuser::FileHandle;
use futures::future::BoxFuture;
use futures::FutureExt;

use crate::fs::handles::table::Handle;
use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::Node;
use crate::journal::EventsAt;

/// What a read is answered with.
pub(crate) enum Read {
    /// These bytes, now.
    Data(Vec<u8>),
    /// Nothing yet: the answer comes once this is ready.
    Wait(Waiting),
}

/// A read that has to wait.
pub(crate) enum Waiting {
    /// `events`: the records after this one.
    Events(EventsAt),
    /// `stage`: the producer's next message.
    Stage(BoxFuture<'static, Vec<u8>>),
    /// A status file another user reads afresh when the rendering others
    /// share has expired: rendered (and read at `offset`) off the request
    /// loop.
    Rendering { offset: u64 },
}

/// How a read of a handle that is not answered from the handle itself is served.
enum ReadKind {
    /// `log` or a draft: what the read at the offset gets, right now.
    Ready(Vec<u8>),
    /// `events`: the records after this one, waiting for one if none.
    Events(EventsAt),
    /// `stage`: the producer's next message.
    Stage(BoxFuture<'static, Vec<u8>>),
    /// `stage` before anything is staged: why the request was refused.
    Refusal(Vec<u8>),
}

impl XdevFs {
    /// Decides a read of `size` bytes at `offset` through `fh` by `uid`.
    /// A user other than the owner who reads a status file afresh gets the
    /// rendering other users share while it is recent (see
    /// [`Renders::for_others`](crate::fs::tree::status::Renders::for_others));
    /// a new one is made off the request loop, so a large render never
    /// holds up the owner.
    pub(crate) fn read(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
        nonblocking: bool,
        uid: u32,
    ) -> Result<Read, Refusal> {
        if uid != self.owner.uid {
            if let Some(Node::Text(file)) = self.handles.stale_snapshot(fh, offset) {
                if !self.renders.others_recent(file) {
                    return Ok(Read::Wait(Waiting::Rendering { offset }));
                }
            }
        }
        if let Some(bytes) = self.read_rendered(fh, offset, size, uid) {
            return Ok(Read::Data(bytes));
        }
        let kind = self.handles.with(fh, |handle| match handle {
            Handle::Log(reader) => {
                Some(ReadKind::Ready(self.journal.read_log(reader, offset, size)))
            }
            Handle::Draft(draft) => Some(ReadKind::Ready(draft.read(offset, size))),
            Handle::Events { at } => Some(ReadKind::Events(*at)),
            Handle::Stage(channel) => Some(match channel.read(size as usize) {
                Some(read) => ReadKind::Stage(read.boxed()),
                None => ReadKind::Refusal(channel.take_refusal(size as usize)),
            }),
            _ => None,
        });
        match kind.flatten() {
            Some(ReadKind::Ready(bytes)) => Ok(Read::Data(bytes)),
            Some(ReadKind::Events(at)) if self.journal.len() > at.record => {
                Ok(Read::Data(self.take_events(fh, at, size)))
            }
            Some(ReadKind::Events(_)) if nonblocking => Err(refuse!(
                EAGAIN,
                "no new record yet, and the reader does not wait"
            )),
            Some(ReadKind::Events(at)) => Ok(Read::Wait(Waiting::Events(at))),
            Some(ReadKind::Stage(mut read)) if nonblocking => match read.as_mut().now_or_never() {
                Some(bytes) => Ok(Read::Data(bytes)),
                None => Err(refuse!(
                    EAGAIN,
                    "no message from the producer yet, and the reader does not wait"
                )),
            },
            Some(ReadKind::Stage(read)) => Ok(Read::Wait(Waiting::Stage(read))),
            Some(ReadKind::Refusal(text)) => Ok(Read::Data(text)),
            None => Err(refuse!(EBADF, "not a readable descriptor of this mount")),
        }
    }

    /// A read of a status file (rendered anew if `offset` asks for it, see
    /// [`Handles::refresh_snapshot`](crate::fs::handles::table::Handles::refresh_snapshot)),
    /// or of a device's usage line or result; `None` for other handles.
    pub(crate) fn read_rendered(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
        uid: u32,
    ) -> Option<Vec<u8>> {
        self.handles
            .refresh_snapshot(fh, offset, |node| self.snapshot(node, uid));
        self.read_handle(fh, offset, size)
    }

    /// The bytes a read of `fh` gets from the handle itself (a snapshot, a
    /// device's usage line or result), if that is where they come from.
    fn read_handle(&self, fh: FileHandle, offset: u64, size: u32) -> Option<Vec<u8>> {
        let dir = self.session.mount_dir();
        self.handles.read(fh, offset, size, |target| {
            target.usage(&dir, self.policy.as_deref())
        })
    }

    /// The content of a read-only text node right now, shared with other
    /// descriptors that read the same.
    fn snapshot(&self, node: &Node, uid: u32) -> Arc<[u8]> {
        let render = || self.text(node).unwrap_or_default().into_bytes();
        match node {
            Node::Text(file) if uid != self.owner.uid => self.renders.for_others(*file, render),
            Node::Text(file) => self.renders.share(*file, render()),
            _ => Arc::from(render()),
        }
    }

    /// What the reader of `fh`, at `at`, reads in `size` bytes, moving it
    /// past them.
    pub(crate) fn take_events(&self, fh: FileHandle, at: EventsAt, size: u32) -> Vec<u8> {
        let (bytes, after) = self.journal.lines_from(at, size as usize);
        self.handles.with(fh, |handle| {
            if let Handle::Events { at } = handle {
                *at = after;
            }
        });
        bytes
    }
}
