//! The FUSE adapter: decodes each kernel request, calls the session (or the
//! journal, a producer, the plan desk), and encodes the reply. Behaviour
//! lives in those; this module only knows files.

mod control;
mod handles;
mod message;
mod nodes;
mod settling;
mod signals;
mod stage;
pub mod status;
mod target;

use std::ffi::OsStr;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{
    BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, PollEvents, PollFlags, PollNotifier,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyPoll, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use futures::FutureExt;

use crate::dispatch::{DispatchHooks, Resolution};
use crate::error::Error;
use crate::journal::{Journal, LogReader, Record, Who, WhoCache};
use crate::plan_desk::PlanDesk;
use crate::session::Session;
pub(crate) use control::Control;
use control::InFlight;
use handles::{Handle, Handles};
use message::WriteStep;
use nodes::{Inodes, ItemFile, Node, Owner};
use settling::Settling;
use status::{DeviceResult, LastResult};
use target::Target;

pub use message::MAX_MESSAGE;

/// Turns a domain error into the errno of the reply.
fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}

/// Every open file is direct I/O (reads and writes always reach us, so no
/// stale page cache), allows parallel writes, and needs no flush on close.
const OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO
    .union(FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES)
    .union(FopenFlags::FOPEN_NOFLUSH);

/// State shared by the request loop and the tasks that answer waiting requests.
struct Shared {
    control: Arc<Control>,
    session: Session,
    journal: Journal,
    plan: Option<PlanDesk>,
    runtime: tokio::runtime::Handle,
    handles: Handles,
    inodes: Inodes,
    last: LastResult,
    owner: Owner,
    who: WhoCache,
    settling: Settling,
}

/// The xdev filesystem, as fuser drives it.
pub(crate) struct XdevFs {
    shared: Arc<Shared>,
}

/// How a read of a handle that is not answered from the handle itself is served.
enum ReadKind {
    /// `log`: what the read at the offset gets, right now.
    Log(Vec<u8>),
    /// `events`: the records after this one, waiting for one if none.
    Events(usize),
    /// `stage`: the producer's next message.
    Stage(futures::future::BoxFuture<'static, Vec<u8>>),
    /// `stage` before anything is staged: why the request was refused.
    Refusal(Vec<u8>),
}

/// A read that has to wait.
enum Waiting {
    Events(usize),
    Stage(futures::future::BoxFuture<'static, Vec<u8>>),
}

impl XdevFs {
    pub(crate) fn new(
        session: Session,
        journal: Journal,
        plan: Option<PlanDesk>,
        runtime: tokio::runtime::Handle,
        share_journal: bool,
    ) -> Self {
        XdevFs {
            shared: Arc::new(Shared {
                control: Arc::new(Control::new()),
                inodes: Inodes::new(plan.is_some()),
                session,
                journal,
                plan,
                runtime,
                handles: Handles::default(),
                last: LastResult::default(),
                owner: Owner::current(share_journal),
                who: WhoCache::default(),
                settling: Settling::default(),
            }),
        }
    }

    /// The handle the mount's owner keeps to cancel blocked writers.
    pub(crate) fn control(&self) -> Arc<Control> {
        Arc::clone(&self.shared.control)
    }

    /// What `ino` is, if it (still) exists: a decided item is gone.
    fn node(&self, ino: INodeNo) -> Option<Node> {
        let node = self.shared.inodes.node(ino)?;
        match &node {
            Node::Item(id, _) if !self.shared.session.is_pending(id) => None,
            _ => Some(node),
        }
    }

    fn attr(&self, ino: INodeNo, node: &Node) -> fuser::FileAttr {
        let size = match node {
            Node::Text(_) | Node::Item(_, ItemFile::Label | ItemFile::Source) => {
                self.shared.text(node).map_or(0, |text| text.len() as u64)
            }
            Node::Log => self.shared.journal.byte_len() as u64,
            // A device "holds" up to one message. The kernel serialises
            // every direct write that extends a file; with this size a
            // plain O_WRONLY writer's message never does. (`>` resets the
            // kernel's size to 0, so O_TRUNC writers of one inode still
            // take turns; `move_opens_off` keeps them off a slow one.)
            _ if node.target().is_some() => MAX_MESSAGE as u64,
            _ => 0,
        };
        node.attr(ino, size, self.shared.owner)
    }

    /// Runs `answer` on the runtime: inline if it finishes at once (no
    /// thread hop for a fast handler), else as a task, so a slow handler
    /// never blocks the request loop. Returns whether it had to wait.
    fn answer_soon<F>(&self, answer: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let _entered = self.shared.runtime.enter();
        let mut answer = Box::pin(answer);
        if answer.as_mut().now_or_never().is_some() {
            return false;
        }
        self.shared.runtime.spawn(answer);
        true
    }

    /// A write on a root device is waiting: later opens get a fresh inode
    /// so they do not queue behind it in the kernel (see [`Inodes::renew`]).
    fn move_opens_off(&self, target: &Target) {
        let Target::Device(device) = target else {
            return;
        };
        self.shared.inodes.renew(*device);
        if let Some(notifier) = self.shared.control.notifier() {
            if let Err(err) = notifier.inval_entry(INodeNo::ROOT, OsStr::new(device.name())) {
                tracing::debug!(%err, device = device.name(), "could not invalidate the device name");
            }
        }
    }

    fn write_target(
        &self,
        req: &Request,
        fh: FileHandle,
        target: Target,
        step: WriteStep,
        written: u32,
        reply: ReplyWrite,
    ) {
        let who = self.shared.who.who(req.uid(), req.pid());
        match step {
            WriteStep::Hold => {
                // Only a held message can be dispatched at release: remember
                // who wrote it for the journal.
                self.shared.handles.note_writer(fh, &who);
                reply.written(written)
            }
            WriteStep::Refuse(error) => reply.error(self.shared.refuse(&target, fh, error, who)),
            WriteStep::Dispatch(text) => {
                let settle = self.shared.settling.start();
                let shared = Arc::clone(&self.shared);
                let tid = req.pid();
                let waiting = InFlight::start(&self.shared.control);
                let dispatched = target.clone();
                let waits = self.answer_soon(async move {
                    let _waiting = waiting;
                    let resolution = shared
                        .dispatch(dispatched, text, Some(fh), tid, Some(who))
                        .await;
                    match &resolution.error {
                        None => reply.written(written),
                        Some(error) => reply.error(errno_of(error)),
                    }
                });
                if waits {
                    self.move_opens_off(&target);
                }
                drop(settle);
            }
        }
    }

    /// Answers a read that may have to wait (events, stage), cancelled by
    /// the reader's signal or the mount closing.
    fn read_when_ready(
        &self,
        req: &Request,
        fh: FileHandle,
        size: u32,
        waiting: Waiting,
        reply: ReplyData,
    ) {
        let shared = Arc::clone(&self.shared);
        let cancel = self.shared.control.cancel_for(req.pid());
        let in_flight = InFlight::start(&self.shared.control);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            let bytes = match waiting {
                Waiting::Events(next) => {
                    tokio::select! {
                        () = shared.journal.wait_beyond(next) => Ok(shared.take_events(fh, next, size)),
                        error = cancel => Err(error),
                    }
                }
                Waiting::Stage(read) => {
                    tokio::select! {
                        bytes = read => Ok(bytes),
                        error = cancel => Err(error),
                    }
                }
            };
            match bytes {
                Ok(bytes) => reply.data(&bytes),
                Err(error) => reply.error(errno_of(&error)),
            }
        });
    }

    /// Answers a status read once no device write is settling, rendered
    /// afresh then (see [`Settling`]).
    fn read_once_settled(&self, fh: FileHandle, offset: u64, size: u32, reply: ReplyData) {
        let shared = Arc::clone(&self.shared);
        self.answer_soon(async move {
            loop {
                shared.settling.quiet().await;
                if shared.render_settled(fh, offset) {
                    break;
                }
            }
            match shared.read_handle(fh, offset, size) {
                Some(bytes) => reply.data(&bytes),
                None => reply.error(Errno::EBADF),
            }
        });
    }
}

/// A directory listing: (inode, name, node) per entry, dots first.
type Listing = Vec<(INodeNo, String, Node)>;

/// Answers a readdir from `offset` with as much of `listing` as fits.
fn fill_directory(listing: Listing, offset: u64, mut reply: ReplyDirectory) {
    for (index, (ino, name, node)) in listing.into_iter().enumerate().skip(offset as usize) {
        if reply.add(ino, index as u64 + 1, node.kind(), name) {
            break;
        }
    }
    reply.ok();
}

impl Shared {
    /// What directory `dir` (inode `ino`) lists right now.
    fn listing(&self, ino: INodeNo, dir: &Node) -> Listing {
        let pending_ids = || {
            self.session
                .pending()
                .into_iter()
                .map(|info| info.id)
                .collect()
        };
        let dots = [
            (ino, ".".to_string(), dir.clone()),
            (INodeNo::ROOT, "..".to_string(), Node::Root),
        ];
        dots.into_iter()
            .chain(self.inodes.entries(dir, pending_ids))
            .collect()
    }

    /// The bytes a read of `fh` gets from the handle itself (a snapshot, a
    /// device's usage line or result), if that is where they come from.
    fn read_handle(&self, fh: FileHandle, offset: u64, size: u32) -> Option<Vec<u8>> {
        let dir = self.session.mount_dir();
        self.handles
            .read(fh, offset, size, |target| target.usage(&dir))
    }

    /// Renders a snapshot handle for a read (if the read needs it). False
    /// when a device write was settling meanwhile: the render may show that
    /// write before later opens moved off its inode, so it must be redone.
    fn render_settled(&self, fh: FileHandle, offset: u64) -> bool {
        let rendered = self
            .handles
            .refresh_snapshot(fh, offset, |node| self.text(node));
        if rendered && !self.settling.is_quiet() {
            self.handles.discard_snapshot(fh);
            return false;
        }
        true
    }

    /// Dispatches one complete message and records its result.
    async fn dispatch(
        self: Arc<Self>,
        target: Target,
        text: String,
        fh: Option<FileHandle>,
        tid: u32,
        who: Option<Who>,
    ) -> Resolution {
        let hooks = DispatchHooks {
            cancel: Some(self.control.cancel_for(tid)),
            before_decision: Some(self.journal.before_decision(target.name(), who.clone())),
        };
        let resolution = target
            .dispatch(&self.session, self.plan.as_ref(), &text, hooks)
            .await;
        self.record(&target, fh, &text, &resolution, who);
        resolution
    }

    /// Records a result: on its descriptor (`fh`), in the status files, and
    /// in the journal (before the writer gets its answer).
    fn record(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        reason: &str,
        resolution: &Resolution,
        who: Option<Who>,
    ) {
        if let Some(fh) = fh {
            self.handles.set_result(fh, &resolution.text);
        }
        let name = target.name();
        let record = Record::decision(&name, reason.trim(), resolution, who);
        // The writer gets its outcome even if the journal file fails: the
        // status files say so, and the next record written names the loss.
        let _ = self.journal.append(&record);
        self.last.record(DeviceResult::new(name, resolution));
        tracing::debug!(target = %target.name(), ok = resolution.is_ok(), text = %resolution.text, "device result");
    }

    /// A write refused before dispatch still counts as the device's result.
    fn refuse(&self, target: &Target, fh: FileHandle, error: Error, who: Who) -> Errno {
        let errno = errno_of(&error);
        let refused = Resolution::failed(error, None);
        self.record(target, Some(fh), "", &refused, Some(who));
        errno
    }

    /// The content of a read-only text node right now.
    fn text(&self, node: &Node) -> Option<String> {
        match node {
            Node::Text(file) => {
                Some(file.render(&self.session, &self.last, self.plan.as_ref(), &self.journal))
            }
            Node::Item(id, ItemFile::Label) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", info.label)),
            Node::Item(id, ItemFile::Source) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", info.source_tool)),
            _ => None,
        }
    }

    /// The journal lines after record `next` that fit in `size`, moving the
    /// reader of `fh` past them.
    fn take_events(&self, fh: FileHandle, next: usize, size: u32) -> Vec<u8> {
        let (bytes, after) = self.journal.lines_from(next, size as usize);
        self.handles.with(fh, |handle| {
            if let Handle::Events { next } = handle {
                *next = after;
            }
        });
        bytes
    }
}

impl Filesystem for XdevFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // O_TRUNC arrives with the open instead of as a separate setattr:
        // one round trip fewer for every `echo ... > device`.
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_ATOMIC_O_TRUNC) {
            tracing::debug!(?missing, "kernel lacks atomic O_TRUNC");
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let session = &self.shared.session;
        let found = self
            .node(parent)
            .zip(name.to_str())
            .and_then(|(parent, name)| {
                self.shared
                    .inodes
                    .lookup(&parent, name, |id| session.is_pending(id))
            });
        match found {
            Some((ino, node)) => {
                let attr = self.attr(ino, &node);
                reply.entry_with_ttls(&node.attr_ttl(), &node.entry_ttl(), &attr, Generation(0));
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.node(ino) {
            Some(node) => reply.attr(&node.attr_ttl(), &self.attr(ino, &node)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(node) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        // A truncate carries times of its own; only a truncate to 0 of a
        // writable file is allowed (that is what `>` does), nothing else changes.
        let writable = node.target().is_some() || node == Node::Stage;
        let refusal = match size {
            Some(0) if writable => None,
            Some(_) if writable => Some(Errno::EINVAL),
            Some(_) => Some(Errno::EPERM),
            None if mode.is_some() || uid.is_some() || gid.is_some() => Some(Errno::EPERM),
            None if atime.is_some() || mtime.is_some() => Some(Errno::EPERM),
            None => None,
        };
        match refusal {
            Some(errno) => reply.error(errno),
            None => reply.attr(&node.attr_ttl(), &self.attr(ino, &node)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let Some(node) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        if let Node::Device(device) = node {
            if !self.shared.inodes.is_current(device, ino) {
                // A path walked before the device moved to a fresh inode
                // (see `move_opens_off`): the kernel walks it again and
                // opens the fresh one instead of queueing behind the write
                // that waits on this one.
                return reply.error(Errno::ESTALE);
            }
        }
        let writing = flags.acc_mode() != OpenAccMode::O_RDONLY;
        if let Node::Item(id, ItemFile::Resolve | ItemFile::Reject) = &node {
            if writing && self.shared.session.is_in_progress(id) {
                // Another decision of this preview is under way: a second
                // one could only fail, and had the first come through this
                // very file, the opener would wait in the kernel behind its
                // inode lock, out of reach of signals.
                return reply.error(Errno::EBUSY);
            }
        }
        let handle = match &node {
            _ if node.kind() == fuser::FileType::Directory => return reply.error(Errno::EISDIR),
            _ if node.target().is_some() => node.target().map(Handle::target),
            Node::Stage => Some(Handle::Stage(stage::StageChannel::default())),
            _ if writing => return reply.error(Errno::EACCES),
            Node::Log => Some(Handle::Log(LogReader::default())),
            Node::Events => Some(Handle::Events {
                next: self.shared.journal.len(),
            }),
            // The rest are text nodes; `node()` already refused a decided item.
            _ => Some(Handle::Snapshot(node.clone(), None)),
        };
        match handle {
            Some(handle) => reply.opened(self.shared.handles.insert(handle), OPEN_FLAGS),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if !self.shared.render_settled(fh, offset) {
            return self.read_once_settled(fh, offset, size, reply);
        }
        if let Some(bytes) = self.shared.read_handle(fh, offset, size) {
            return reply.data(&bytes);
        }
        let kind = self.shared.handles.with(fh, |handle| match handle {
            Handle::Log(reader) => Some(ReadKind::Log(
                self.shared.journal.read_log(reader, offset, size),
            )),
            Handle::Events { next } => Some(ReadKind::Events(*next)),
            Handle::Stage(channel) => Some(match channel.read(size as usize) {
                Some(read) => ReadKind::Stage(read.boxed()),
                None => ReadKind::Refusal(channel.take_refusal(size as usize)),
            }),
            _ => None,
        });
        match kind.flatten() {
            Some(ReadKind::Log(bytes)) => reply.data(&bytes),
            Some(ReadKind::Events(next)) if self.shared.journal.len() > next => {
                reply.data(&self.shared.take_events(fh, next, size))
            }
            Some(ReadKind::Events(next)) => {
                self.read_when_ready(req, fh, size, Waiting::Events(next), reply)
            }
            Some(ReadKind::Stage(read)) => {
                self.read_when_ready(req, fh, size, Waiting::Stage(read), reply)
            }
            Some(ReadKind::Refusal(text)) => reply.data(&text),
            None => reply.error(Errno::EBADF),
        }
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let written = data.len() as u32;
        if let Some((target, step)) = self.shared.handles.write(fh, data) {
            return self.write_target(req, fh, target, step, written, reply);
        }
        let who = self.shared.who.who(req.uid(), req.pid());
        let shared = &self.shared;
        let staged = shared.handles.with(fh, |handle| match handle {
            Handle::Stage(channel) => {
                let _entered = shared.runtime.enter();
                Some(channel.write(&shared.session, &shared.journal, &who, data))
            }
            _ => None,
        });
        match staged.flatten() {
            Some(Ok(())) => reply.written(written),
            Some(Err(error)) => reply.error(errno_of(&error)),
            None => reply.error(Errno::EBADF),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let handle = self.shared.handles.remove(fh);
        reply.ok();
        // A message still held when its descriptor goes is dispatched now;
        // its result lands in the status files and journal only. A stage
        // handle dropped here withdraws its preview.
        let Some(Handle::Target {
            target,
            mut message,
            writer,
            ..
        }) = handle
        else {
            return;
        };
        match message.release() {
            Some(WriteStep::Dispatch(text)) => {
                let shared = Arc::clone(&self.shared);
                let _ = self.answer_soon(async move {
                    shared.dispatch(target, text, None, 0, writer).await;
                });
            }
            Some(WriteStep::Refuse(error)) => {
                self.shared
                    .record(&target, None, "", &Resolution::failed(error, None), writer);
            }
            Some(WriteStep::Hold) | None => {}
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.node(ino) {
            Some(node) if node.kind() == fuser::FileType::Directory => {
                reply.opened(FileHandle(0), FopenFlags::empty())
            }
            Some(_) => reply.error(Errno::ENOTDIR),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        let Some(dir) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let listing = self.shared.listing(ino, &dir);
        // `pending/` drops an item as soon as a write claims it: like the
        // status files, it must not show that before a waiting write has
        // settled (see [`Settling`]). Never wait on the root: the reader
        // holds its lock, and settling invalidates names in it.
        if dir != Node::PendingDir || self.shared.settling.is_quiet() {
            return fill_directory(listing, offset, reply);
        }
        let shared = Arc::clone(&self.shared);
        self.answer_soon(async move {
            let listing = loop {
                shared.settling.quiet().await;
                let listing = shared.listing(ino, &dir);
                if shared.settling.is_quiet() {
                    break listing;
                }
            };
            fill_directory(listing, offset, reply);
        });
    }

    fn poll(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        ph: PollNotifier,
        _events: PollEvents,
        _flags: PollFlags,
        reply: ReplyPoll,
    ) {
        let readable = PollEvents::POLLIN | PollEvents::POLLRDNORM;
        let next = self.shared.handles.with(fh, |handle| match handle {
            Handle::Events { next } => Some(*next),
            _ => None,
        });
        let Some(next) = next.flatten() else {
            return reply.poll(readable | PollEvents::POLLOUT | PollEvents::POLLWRNORM);
        };
        if self.shared.journal.len() > next {
            return reply.poll(readable);
        }
        // Not ready: tell the kernel once a record arrives.
        let journal = self.shared.journal.clone();
        self.shared.runtime.spawn(async move {
            journal.wait_beyond(next).await;
            if let Err(err) = ph.notify() {
                tracing::debug!(%err, "poll notification not delivered");
            }
        });
        reply.poll(PollEvents::empty());
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EPERM);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EPERM);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EPERM);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EPERM);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        // ENOSYS tells the kernel to stop asking (one round trip, once).
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }
}
