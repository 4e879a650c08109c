//! What a read gets: bytes now, or a wait (`events` before its next
//! record, `stage` before the producer's next message). A non-blocking
//! reader that would wait gets `EAGAIN`; a descriptor the mount does not
//! know, `EBADF`.

use std::sync::Arc;

use fuser::{Errno, FileHandle};
use futures::future::BoxFuture;
use futures::FutureExt;

use super::handles::Handle;
use super::nodes::{ItemFile, Node, SessionFile};
use super::status::render_session_status;
use super::Shared;
use crate::journal::EventsAt;
use crate::safe_text::one_line;

/// What a read is answered with.
pub(super) enum Read {
    /// These bytes, now.
    Data(Vec<u8>),
    /// Nothing yet: the answer comes once this is ready.
    Wait(Waiting),
}

/// A read that has to wait.
pub(super) enum Waiting {
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

impl Shared {
    /// Decides a read of `size` bytes at `offset` through `fh` by `uid`.
    /// A user other than the owner who reads a status file afresh gets the
    /// rendering other users share while it is recent (see
    /// [`Renders::for_others`](super::status::Renders::for_others)); a new
    /// one is made off the request loop, so a large render never holds up
    /// the owner.
    pub(super) fn read(
        &self,
        fh: FileHandle,
        offset: u64,
        size: u32,
        nonblocking: bool,
        uid: u32,
    ) -> Result<Read, Errno> {
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
            Some(ReadKind::Events(_)) if nonblocking => Err(Errno::EAGAIN),
            Some(ReadKind::Events(at)) => Ok(Read::Wait(Waiting::Events(at))),
            Some(ReadKind::Stage(mut read)) if nonblocking => match read.as_mut().now_or_never() {
                Some(bytes) => Ok(Read::Data(bytes)),
                None => Err(Errno::EAGAIN),
            },
            Some(ReadKind::Stage(read)) => Ok(Read::Wait(Waiting::Stage(read))),
            Some(ReadKind::Refusal(text)) => Ok(Read::Data(text)),
            None => Err(Errno::EBADF),
        }
    }

    /// A read of a status file (rendered anew if `offset` asks for it, see
    /// [`Handles::refresh_snapshot`](super::handles::Handles::refresh_snapshot)),
    /// or of a device's usage line or result; `None` for other handles.
    pub(super) fn read_rendered(
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
        self.handles
            .read(fh, offset, size, |target| target.usage(&dir))
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

    /// The content of a read-only text node right now.
    pub(super) fn text(&self, node: &Node) -> Option<String> {
        match node {
            Node::Text(file) => {
                Some(file.render(&self.session, &self.last, self.plan.as_ref(), &self.journal))
            }
            // One line each, escaped: these are line-oriented files.
            Node::Item(id, ItemFile::Label) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", one_line(&info.label))),
            Node::Item(id, ItemFile::Source) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", one_line(&info.source_tool))),
            // Pretty JSON, many lines by design: JSON escapes every control
            // character inside its strings, so nothing in it can forge a line.
            Node::Item(id, ItemFile::Detail) => self.session.detail(id),
            Node::AgentSession(session, SessionFile::Status) => {
                Some(render_session_status(&self.session, session))
            }
            _ => None,
        }
    }

    /// What the reader of `fh`, at `at`, reads in `size` bytes, moving it
    /// past them.
    pub(super) fn take_events(&self, fh: FileHandle, at: EventsAt, size: u32) -> Vec<u8> {
        let (bytes, after) = self.journal.lines_from(at, size as usize);
        self.handles.with(fh, |handle| {
            if let Handle::Events { at } = handle {
                *at = after;
            }
        });
        bytes
    }
}
