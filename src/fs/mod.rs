//! The FUSE adapter: decodes each kernel request, calls the session (or the
//! journal, a producer, the plan desk), and encodes the reply. Behaviour
//! lives in those; this module only knows files.

mod busy;
mod control;
mod delivered;
mod draft_ops;
mod drafts;
mod handles;
mod message;
mod nodes;
mod notify;
mod poll;
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
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyPoll, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use futures::FutureExt;

use crate::device::MAX_MESSAGE;
use crate::dispatch::DeviceResult;
use crate::dispatch::{DispatchHooks, Resolution};
use crate::error::Error;
use crate::journal::{EventsAt, Journal, LogReader, Record, Who, WhoCache};
use crate::plan_desk::PlanDesk;
use crate::session::events::EventKind;
use crate::session::Session;
use busy::{Busy, OpenWrite, Writing};
pub(crate) use control::Control;
use control::InFlight;
use delivered::Delivered;
use draft_ops::Renaming;
use drafts::Drafts;
use handles::{Handle, Handles, Listing, Outcome};
use message::WriteStep;
pub(crate) use nodes::Owner;
use nodes::{Inodes, ItemFile, Node, FRESH_TTL};
use poll::Pollers;
use status::{LastResult, Renders};
use target::Target;

/// Turns a domain error into the errno of the reply.
fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}

/// Every open file is direct I/O (reads and writes always reach us, so no
/// stale page cache), allows parallel writes, and needs no flush on close.
const OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO
    .union(FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES)
    .union(FopenFlags::FOPEN_NOFLUSH);

/// `events` and `stage` are streams, read in order whatever the offset: a
/// reader must not be able to seek, or a shell's `read` loop (which reads a
/// block, keeps one line and seeks back over the rest) would lose records.
/// With no seeking, `read` takes one byte at a time, which `events` serves.
const STREAM_OPEN_FLAGS: FopenFlags = OPEN_FLAGS
    .union(FopenFlags::FOPEN_STREAM)
    .union(FopenFlags::FOPEN_NONSEEKABLE);

/// A draft's descriptor: direct I/O (no stale page cache) and no flush.
const DRAFT_OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO.union(FopenFlags::FOPEN_NOFLUSH);

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
    busy: Arc<Busy>,
    pollers: Arc<Pollers>,
    renders: Renders,
    drafts: Drafts,
    delivered: Delivered,
}

/// The xdev filesystem, as fuser drives it.
pub(crate) struct XdevFs {
    shared: Arc<Shared>,
}

/// One message on its way to a handler: by a write (on descriptor `fh`)
/// or by renaming a draft of `bytes` bytes onto the device.
struct Delivery {
    target: Target,
    text: String,
    bytes: u64,
    fh: Option<FileHandle>,
}

/// How a read of a handle that is not answered from the handle itself is served.
enum ReadKind {
    /// `log` or a draft: what the read at the offset gets, right now.
    Ready(Vec<u8>),
    /// `events`: the records after this one, waiting for one if none.
    Events(EventsAt),
    /// `stage`: the producer's next message.
    Stage(futures::future::BoxFuture<'static, Vec<u8>>),
    /// `stage` before anything is staged: why the request was refused.
    Refusal(Vec<u8>),
}

/// A read that has to wait.
enum Waiting {
    Events(EventsAt),
    Stage(futures::future::BoxFuture<'static, Vec<u8>>),
}

impl XdevFs {
    pub(crate) fn new(
        session: Session,
        journal: Journal,
        plan: Option<PlanDesk>,
        runtime: tokio::runtime::Handle,
        owner: Owner,
    ) -> Self {
        let shared = Arc::new(Shared {
            control: Arc::new(Control::new(&runtime)),
            inodes: Inodes::new(plan.is_some()),
            session,
            journal,
            plan,
            runtime,
            handles: Handles::default(),
            last: LastResult::default(),
            owner,
            who: WhoCache::default(),
            busy: Arc::default(),
            pollers: Arc::default(),
            renders: Renders::default(),
            drafts: Drafts::default(),
            delivered: Delivered::default(),
        });
        forget_decided_items(&shared);
        XdevFs { shared }
    }

    /// The handle the mount's owner keeps to cancel blocked writers.
    pub(crate) fn control(&self) -> Arc<Control> {
        Arc::clone(&self.shared.control)
    }

    /// What `ino` is, if it (still) exists: a decided item is gone, and so
    /// is a draft once renamed onto a device or removed.
    fn node(&self, ino: INodeNo) -> Option<Node> {
        let Some(node) = self.shared.inodes.node(ino) else {
            return self.shared.drafts.get(ino).map(|_| Node::Draft);
        };
        self.shared.exists(&node).then_some(node)
    }

    fn attr(&self, ino: INodeNo, node: &Node) -> fuser::FileAttr {
        if *node == Node::Draft {
            if let Some(draft) = self.shared.drafts.get(ino) {
                return draft.attr();
            }
        }
        let size = match node {
            Node::Text(_)
            | Node::Item(_, ItemFile::Label | ItemFile::Source | ItemFile::Detail) => {
                self.shared.text(node).map_or(0, |text| text.len() as u64)
            }
            Node::Log => self.shared.journal.byte_len() as u64,
            // A device "holds" up to one message. The kernel serialises
            // every direct write that extends a file; with this size a
            // plain O_WRONLY writer's message never does. (`>` resets the
            // kernel's size to 0, so O_TRUNC writers of one inode still
            // take turns; `busy` keeps them off a slow one.)
            _ if node.target().is_some() => MAX_MESSAGE as u64,
            _ => 0,
        };
        node.attr(ino, size, self.shared.owner)
    }

    /// A node's attributes as the process asking should see them, and how
    /// long the kernel may keep them. A process that has just delivered a
    /// message to a device sees the device's size as the bytes it wrote,
    /// as an ordinary file would show (see [`delivered`]), uncached.
    fn attr_for(
        &self,
        req: &Request,
        ino: INodeNo,
        node: &Node,
    ) -> (fuser::FileAttr, std::time::Duration) {
        let mut attr = self.attr(ino, node);
        let ttl = node.attr_ttl();
        let Some(target) = node.target().filter(|_| !self.shared.delivered.is_empty()) else {
            return (attr, ttl);
        };
        let pid = self.shared.who.who(req.uid(), req.pid()).pid;
        match self.shared.delivered.size_for(&target, pid) {
            Some(size) => {
                attr.size = size;
                attr.blocks = size.div_ceil(512);
                (attr, FRESH_TTL)
            }
            None => (attr, ttl),
        }
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

    #[allow(clippy::too_many_arguments)]
    fn write_target(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        target: Target,
        step: WriteStep,
        written: u32,
        reply: ReplyWrite,
    ) {
        let who = self.shared.who.who(req.uid(), req.pid());
        // A mount that is stopping takes no new decisions.
        let step = match (step, self.shared.control.refusal()) {
            (WriteStep::Dispatch(_), Some(refusal)) => WriteStep::Refuse(refusal),
            (step, _) => step,
        };
        match step {
            WriteStep::Repeat => self.repeat_outcome(fh, &who, written, reply),
            WriteStep::Refuse(error) => {
                reply.error(self.shared.refuse(&target, Some(fh), error, who))
            }
            WriteStep::Dispatch(text) => {
                // The kernel holds the inode's lock until this is answered:
                // from now on, openers are sent elsewhere (see `busy`).
                let writing =
                    matches!(target, Target::Device(_)).then(|| self.shared.busy.begin(ino));
                let delivery = Delivery {
                    target,
                    text,
                    bytes: u64::from(written),
                    fh: Some(fh),
                };
                self.decide(
                    req.pid(),
                    who,
                    delivery,
                    writing,
                    move |errno| match errno {
                        None => reply.written(written),
                        Some(errno) => reply.error(errno),
                    },
                );
            }
        }
    }

    /// Dispatches `delivery` for thread `tid` of `who` and hands the outcome
    /// (`None` for success, else the errno) to `answer`, at once when the
    /// handler answers at once. `writing` is the device inode a write keeps
    /// busy while it waits.
    fn decide(
        &self,
        tid: u32,
        who: Who,
        delivery: Delivery,
        writing: Option<Writing>,
        answer: impl FnOnce(Option<Errno>) + Send + 'static,
    ) {
        let shared = Arc::clone(&self.shared);
        let waiting = InFlight::decision(&self.shared.control);
        self.answer_soon(async move {
            let _waiting = waiting;
            let Delivery {
                target,
                text,
                bytes,
                fh,
            } = delivery;
            let (device, pid) = (target.clone(), who.pid);
            let resolution = Arc::clone(&shared)
                .dispatch(target, text, fh, tid, Some(who))
                .await;
            // Free before the answer: the writer's next open may
            // come at once, and must not be sent elsewhere.
            drop(writing);
            let errno = resolution.error.as_ref().map(errno_of);
            if errno.is_none() {
                shared.delivered.record(device, pid, bytes);
            }
            answer(errno);
        });
    }

    /// Answers a later write on a device descriptor with the first write's
    /// outcome (its own byte count on success, the same errno otherwise),
    /// waiting for it if the first is still being decided.
    fn repeat_outcome(&self, fh: FileHandle, who: &Who, written: u32, reply: ReplyWrite) {
        let Some(mut first) = self.shared.handles.first_outcome(fh, who) else {
            return reply.error(Errno::EBADF);
        };
        let answer = move |outcome: Option<Outcome>, reply: ReplyWrite| match outcome {
            Some(Ok(())) => reply.written(written),
            Some(Err(errno)) => reply.error(errno),
            None => reply.error(Errno::EBADF),
        };
        let known = *first.borrow();
        if known.is_some() {
            return answer(known, reply);
        }
        self.answer_soon(async move {
            let outcome = first.wait_for(Option::is_some).await.ok().and_then(|o| *o);
            answer(outcome, reply);
        });
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
                Waiting::Events(at) => {
                    tokio::select! {
                        () = shared.journal.wait_beyond(at.record) => Ok(shared.take_events(fh, at, size)),
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

    /// The listing directory `ino` reads through `fh` from `offset`: one
    /// per pass (taken at offset 0, as a rewind does), so that a long
    /// directory is listed in O(n), in a stable order.
    fn pass_listing(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        uid: u32,
    ) -> Result<Arc<Listing>, Errno> {
        let dir = self.node(ino).ok_or(Errno::ENOENT)?;
        self.shared
            .handles
            .listing(fh, offset, || Arc::new(self.shared.listing(ino, &dir, uid)))
            .ok_or(Errno::EBADF)
    }

    /// Opens the caller's draft `ino` (`O_TRUNC` empties it); another
    /// uid's draft does not exist for it.
    fn open_draft(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let Some(draft) = self.shared.drafts.get(ino) else {
            return reply.error(Errno::ENOENT);
        };
        if !draft.is_visible_to(req.uid()) {
            return reply.error(Errno::ENOENT);
        }
        if flags.0 & libc::O_TRUNC != 0 {
            if let Err(errno) = self.shared.drafts.set_len(&draft, 0) {
                return reply.error(errno);
            }
        }
        let fh = self.shared.handles.insert(Handle::Draft(draft));
        reply.opened(fh, DRAFT_OPEN_FLAGS)
    }

    /// Delivers a renamed draft's text to `target` as one message: the
    /// rename is answered with the outcome, as a write would be, and the
    /// journal names the renaming process.
    fn deliver_draft(
        &self,
        req: &Request,
        target: Target,
        text: String,
        bytes: u64,
        reply: ReplyEmpty,
    ) {
        let who = self.shared.who.who(req.uid(), req.pid());
        if let Some(refusal) = self.shared.control.refusal() {
            // A mount that is stopping takes no new decisions.
            return reply.error(self.shared.refuse(&target, None, refusal, who));
        }
        let delivery = Delivery {
            target,
            text,
            bytes,
            fh: None,
        };
        self.decide(req.pid(), who, delivery, None, move |errno| match errno {
            None => reply.ok(),
            Some(errno) => reply.error(errno),
        });
    }

    /// Opens a device inode for writing once no write on it is in flight,
    /// cancelled by the opener's signal or the mount closing.
    fn open_when_free(&self, req: &Request, ino: INodeNo, handle: Handle, reply: ReplyOpen) {
        let shared = Arc::clone(&self.shared);
        let cancel = self.shared.control.cancel_for(req.pid());
        let in_flight = InFlight::start(&self.shared.control);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            tokio::select! {
                () = shared.busy.until_free(ino) => {
                    reply.opened(shared.handles.insert(handle), OPEN_FLAGS)
                }
                error = cancel => reply.error(errno_of(&error)),
            }
        });
    }
}

/// Once a preview leaves the stack, the kernel forgets its directory's
/// name, which a listing may have let it cache (see [`notify`]).
fn forget_decided_items(shared: &Arc<Shared>) {
    let weak = Arc::downgrade(shared);
    shared.session.on_event(move |event| {
        let Some(shared) = weak.upgrade() else {
            return false;
        };
        let gone = matches!(
            event.kind,
            EventKind::Applied | EventKind::Discarded | EventKind::Withdrawn | EventKind::Cleared
        );
        if gone && shared.inodes.item_may_be_cached(&event.id) {
            if let Some(pending) = shared.inodes.pending_dir() {
                shared.control.forget(pending, &event.id);
            }
        }
        true
    });
}

/// Answers a readdir from `offset` with as much of `listing` as fits.
fn fill_directory(listing: &Listing, offset: u64, mut reply: ReplyDirectory) {
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    for (index, (ino, name, node)) in listing.iter().enumerate().skip(start) {
        if reply.add(*ino, index as u64 + 1, node.kind(), name) {
            break;
        }
    }
    reply.ok();
}

impl Shared {
    /// What directory `dir` (inode `ino`) lists right now to `uid`: its
    /// files, and that uid's drafts.
    fn listing(&self, ino: INodeNo, dir: &Node, uid: u32) -> Listing {
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
        let drafts = self
            .drafts
            .listed(ino, uid)
            .into_iter()
            .map(|(draft, name)| (draft, name, Node::Draft));
        dots.into_iter()
            .chain(
                self.inodes
                    .entries(dir, pending_ids)
                    .into_iter()
                    .filter(|(_, _, node)| self.exists(node)),
            )
            .chain(drafts)
            .collect()
    }

    /// Whether a node of the table exists right now: a pending item's files
    /// while it is pending, and its `detail` only when it carries one.
    fn exists(&self, node: &Node) -> bool {
        match node {
            Node::Item(id, ItemFile::Detail) => self.session.has_detail(id),
            Node::Item(id, _) => self.session.is_pending(id),
            _ => true,
        }
    }

    /// The process of `req` reads `target` now: it no longer sees the size
    /// of what it delivered there (see [`delivered`]).
    fn forget_delivery(&self, req: &Request, target: &Target) {
        if !self.delivered.is_empty() {
            let pid = self.who.who(req.uid(), req.pid()).pid;
            self.delivered.forget(target, pid);
        }
    }

    /// The bytes a read of `fh` gets from the handle itself (a snapshot, a
    /// device's usage line or result), if that is where they come from.
    fn read_handle(&self, fh: FileHandle, offset: u64, size: u32) -> Option<Vec<u8>> {
        let dir = self.session.mount_dir();
        self.handles
            .read(fh, offset, size, |target| target.usage(&dir))
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
            before_decision: self.journal.before_decision(|| target.name(), who.as_ref()),
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
            let outcome = resolution
                .error
                .as_ref()
                .map_or(Ok(()), |error| Err(errno_of(error)));
            let id = resolution.id.as_deref();
            self.handles.set_result(fh, outcome, &resolution.text, id);
        }
        let name = target.name();
        let record = Record::decision(&name, reason.trim(), resolution, who);
        // The writer gets its outcome even if the journal file fails: the
        // status files say so, and the next record written names the loss.
        let _ = self.journal.append(&record);
        let withhold = self.owner.withholds_reasons();
        self.last
            .record(DeviceResult::new(name, resolution, withhold));
        tracing::debug!(target = %target.name(), ok = resolution.is_ok(), text = %resolution.text, "device result");
    }

    /// A write refused before dispatch still counts as the device's result.
    fn refuse(&self, target: &Target, fh: Option<FileHandle>, error: Error, who: Who) -> Errno {
        let errno = errno_of(&error);
        let refused = Resolution::failed(error, None);
        self.record(target, fh, "", &refused, Some(who));
        errno
    }

    /// The content of a read-only text node right now, shared with other
    /// descriptors that read the same.
    fn snapshot(&self, node: &Node) -> Arc<[u8]> {
        let bytes = self.text(node).unwrap_or_default().into_bytes();
        match node {
            Node::Text(file) => self.renders.share(*file, bytes),
            _ => Arc::from(bytes),
        }
    }

    /// The content of a read-only text node right now.
    fn text(&self, node: &Node) -> Option<String> {
        match node {
            Node::Text(file) => {
                Some(file.render(&self.session, &self.last, self.plan.as_ref(), &self.journal))
            }
            // One line each, escaped: these are line-oriented files.
            Node::Item(id, ItemFile::Label) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", crate::safe_text::one_line(&info.label))),
            Node::Item(id, ItemFile::Source) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", crate::safe_text::one_line(&info.source_tool))),
            // Pretty JSON, many lines by design: JSON escapes every control
            // character inside its strings, so nothing in it can forge a line.
            Node::Item(id, ItemFile::Detail) => self.session.detail(id),
            _ => None,
        }
    }

    /// What the reader of `fh`, at `at`, reads in `size` bytes, moving it
    /// past them.
    fn take_events(&self, fh: FileHandle, at: EventsAt, size: u32) -> Vec<u8> {
        let (bytes, after) = self.journal.lines_from(at, size as usize);
        self.handles.with(fh, |handle| {
            if let Handle::Events { at } = handle {
                *at = after;
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
        // `ls -l pending` with thousands of previews: one READDIRPLUS per
        // page of entries instead of one LOOKUP per entry. Always, not
        // "auto": `ls` reads every page before it looks at one entry.
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS) {
            tracing::debug!(?missing, "kernel lacks readdirplus");
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let shared = &self.shared;
        if parent == INodeNo::ROOT {
            shared.busy.looked_up(req.pid());
        }
        let (Some(dir), Some(name)) = (self.node(parent), name.to_str()) else {
            return reply.error(Errno::ENOENT);
        };
        // Asked before the table counts a lookup the kernel would never forget.
        if let Node::Item(id, ItemFile::Dir) = &dir {
            if name == "detail" && !shared.session.has_detail(id) {
                return reply.error(Errno::ENOENT);
            }
        }
        let found = shared
            .inodes
            .lookup(
                &dir,
                name,
                |id| shared.session.is_pending(id),
                |ino| shared.busy.is_writing(ino),
            )
            .or_else(|| {
                let draft = shared.draft_at(parent, &dir, req.uid(), name)?;
                Some((draft.ino(), Node::Draft))
            });
        match found {
            Some((ino, node)) => {
                let (attr, attr_ttl) = self.attr_for(req, ino, &node);
                reply.entry_with_ttls(&attr_ttl, &node.entry_ttl(), &attr, Generation(0));
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let session = &self.shared.session;
        self.shared
            .inodes
            .forget(ino, nlookup, |id| session.is_pending(id));
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.node(ino) {
            Some(node) => {
                let (attr, ttl) = self.attr_for(req, ino, &node);
                reply.attr(&ttl, &attr)
            }
            // A draft whose name is gone, still open (an `fstat`).
            None => match self.shared.handles.draft_by_ino(ino) {
                Some(draft) => reply.attr(&FRESH_TTL, &draft.attr()),
                None => reply.error(Errno::ENOENT),
            },
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
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let node = self.node(ino);
        // A draft, named or (through its descriptor) not.
        let draft = match node {
            Some(Node::Draft) | None => fh
                .and_then(|fh| self.shared.handles.draft(fh))
                .or_else(|| self.shared.drafts.get(ino)),
            Some(_) => None,
        };
        if let Some(draft) = draft {
            let changed = self
                .shared
                .change_draft(&draft, size, mode, uid, gid, atime, mtime);
            return match changed {
                Ok(()) => reply.attr(&FRESH_TTL, &draft.attr()),
                Err(errno) => reply.error(errno),
            };
        }
        let Some(node) = node else {
            return reply.error(Errno::ENOENT);
        };
        // A truncate carries times of its own; only a truncate to 0 of a
        // writable file is allowed (that is what `>` does), or of a device
        // descriptor to what was written on it (an in-place writer tidying
        // up after itself); nothing else changes.
        let writable = node.target().is_some() || node == Node::Stage;
        let written = fh.and_then(|fh| self.shared.handles.written(fh));
        let refusal = match size {
            Some(0) if writable => None,
            Some(size) if writable && written.is_some_and(|n| n as u64 == size) => None,
            Some(_) if writable => Some(Errno::EINVAL),
            Some(_) => Some(Errno::EPERM),
            None if mode.is_some() || uid.is_some() || gid.is_some() => Some(Errno::EPERM),
            None if atime.is_some() || mtime.is_some() => Some(Errno::EPERM),
            None => None,
        };
        let mut attr = self.attr(ino, &node);
        // As on an ordinary file, the size is what the truncate asked for.
        attr.size = size.unwrap_or(attr.size);
        match refusal {
            Some(errno) => reply.error(errno),
            None => reply.attr(&node.attr_ttl(), &attr),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let Some(node) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let writing = flags.acc_mode() != OpenAccMode::O_RDONLY;
        if flags.acc_mode() != OpenAccMode::O_WRONLY {
            if let Some(target) = node.target() {
                self.shared.forget_delivery(req, &target);
            }
        }
        let open_write = match node {
            Node::Device(_) if writing => self.shared.busy.open_write(ino, req.pid()),
            _ => OpenWrite::Open,
        };
        if open_write == OpenWrite::Redirect {
            // A write on this inode waits, holding its lock: the kernel
            // walks the path again and finds a fresh inode.
            return reply.error(Errno::ESTALE);
        }
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
            Node::Draft => return self.open_draft(req, ino, flags, reply),
            _ if node.target().is_some() => node.target().map(Handle::target),
            Node::Stage => Some(Handle::Stage(stage::StageChannel::default())),
            _ if writing => return reply.error(Errno::EACCES),
            Node::Log => Some(Handle::Log(LogReader::default())),
            Node::Events => Some(Handle::Events {
                at: EventsAt::record(self.shared.journal.len()),
            }),
            // The rest are text nodes; `node()` already refused a decided item.
            _ => Some(Handle::Snapshot(node.clone(), None)),
        };
        match handle {
            Some(handle) if open_write == OpenWrite::Wait => {
                self.open_when_free(req, ino, handle, reply)
            }
            Some(handle) => {
                let flags = match node {
                    Node::Events | Node::Stage => STREAM_OPEN_FLAGS,
                    _ => OPEN_FLAGS,
                };
                reply.opened(self.shared.handles.insert(handle), flags)
            }
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
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let nonblocking = flags.0 & libc::O_NONBLOCK != 0;
        self.shared
            .handles
            .refresh_snapshot(fh, offset, |node| self.shared.snapshot(node));
        if let Some(bytes) = self.shared.read_handle(fh, offset, size) {
            return reply.data(&bytes);
        }
        let kind = self.shared.handles.with(fh, |handle| match handle {
            Handle::Log(reader) => Some(ReadKind::Ready(
                self.shared.journal.read_log(reader, offset, size),
            )),
            Handle::Draft(draft) => Some(ReadKind::Ready(draft.read(offset, size))),
            Handle::Events { at } => Some(ReadKind::Events(*at)),
            Handle::Stage(channel) => Some(match channel.read(size as usize) {
                Some(read) => ReadKind::Stage(read.boxed()),
                None => ReadKind::Refusal(channel.take_refusal(size as usize)),
            }),
            _ => None,
        });
        match kind.flatten() {
            Some(ReadKind::Ready(bytes)) => reply.data(&bytes),
            Some(ReadKind::Events(at)) if self.shared.journal.len() > at.record => {
                reply.data(&self.shared.take_events(fh, at, size))
            }
            Some(ReadKind::Events(_)) if nonblocking => reply.error(Errno::EAGAIN),
            Some(ReadKind::Events(at)) => {
                self.read_when_ready(req, fh, size, Waiting::Events(at), reply)
            }
            Some(ReadKind::Stage(mut read)) if nonblocking => match read.as_mut().now_or_never() {
                Some(bytes) => reply.data(&bytes),
                None => reply.error(Errno::EAGAIN),
            },
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
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let written = data.len() as u32;
        if let Some((target, step)) = self.shared.handles.write(fh, offset, data) {
            return self.write_target(req, ino, fh, target, step, written, reply);
        }
        if let Some(draft) = self.shared.handles.draft(fh) {
            return match self.shared.drafts.write(&draft, offset, data) {
                Ok(()) => reply.written(written),
                Err(errno) => reply.error(errno),
            };
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
        self.shared.pollers.forget(fh);
        reply.ok();
        // Nothing is dispatched here, where nobody would be told the
        // outcome: bytes written after the message are only noted. (A stage
        // handle dropped here withdraws its preview.)
        if let Some(Handle::Target {
            target,
            message,
            decided,
            writer,
            ..
        }) = handle
        {
            if message.ignored() > 0 {
                let note = Record::ignored(&target.name(), decided, message.ignored(), writer);
                // A note the file cannot take is counted as lost there.
                let _ = self.shared.journal.append(&note);
            }
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
                let fh = self.shared.handles.insert(Handle::Directory(None));
                reply.opened(fh, FopenFlags::empty())
            }
            Some(_) => reply.error(Errno::ENOTDIR),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        match self.pass_listing(ino, fh, offset, req.uid()) {
            Ok(listing) => fill_directory(&listing, offset, reply),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let listing = match self.pass_listing(ino, fh, offset, req.uid()) {
            Ok(listing) => listing,
            Err(errno) => return reply.error(errno),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (ino, name, node)) in listing.iter().enumerate().skip(start) {
            let attr = self.attr(*ino, node);
            let ttl = node.listed_ttl();
            if reply.add(*ino, index as u64 + 1, name, &ttl, &attr, Generation(0)) {
                break;
            }
            // The kernel counts every entry but the dots as a lookup
            // (drafts keep no count: they go when removed).
            if name != "." && name != ".." && *node != Node::Draft {
                self.shared.inodes.count_lookup(*ino);
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.shared.handles.remove(fh);
        reply.ok();
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
        let writable = PollEvents::POLLOUT | PollEvents::POLLWRNORM;
        let journal = &self.shared.journal;
        // What the file always is, and what it waits for to be readable.
        let waits = self.shared.handles.with(fh, |handle| match handle {
            Handle::Events { at } => {
                let (journal, next) = (journal.clone(), at.record);
                let ready = async move { journal.wait_beyond(next).await };
                Some((PollEvents::empty(), ready.boxed()))
            }
            Handle::Stage(channel) => channel.readable().map(|ready| (writable, ready.boxed())),
            _ => None,
        });
        let Some((always, mut ready)) = waits.flatten() else {
            return reply.poll(readable | writable);
        };
        if ready.as_mut().now_or_never().is_some() {
            return reply.poll(always | readable);
        }
        // Not ready: the kernel is told once it is.
        self.shared
            .pollers
            .wake_when(fh, ph, ready, &self.shared.runtime);
        reply.poll(always);
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

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let (Some(dir), Some(name)) = (self.node(parent), name.to_str()) else {
            return reply.error(Errno::EPERM);
        };
        match self.shared.unlink_draft(req.uid(), (parent, &dir), name) {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
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
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (Some(from_dir), Some(to_dir)) = (self.node(parent), self.node(newparent)) else {
            return reply.error(Errno::ENOENT);
        };
        let (Some(name), Some(newname)) = (name.to_str(), newname.to_str()) else {
            return reply.error(Errno::EPERM);
        };
        let renaming = self.shared.plan_rename(
            req.uid(),
            (parent, &from_dir, name),
            (newparent, &to_dir, newname),
            flags,
        );
        match renaming {
            Ok(Renaming::Moved) => reply.ok(),
            Ok(Renaming::Deliver {
                target,
                text,
                bytes,
            }) => self.deliver_draft(req, target, text, bytes, reply),
            Ok(Renaming::Refused { target, error }) => {
                let who = self.shared.who.who(req.uid(), req.pid());
                reply.error(self.shared.refuse(&target, None, error, who))
            }
            Err(errno) => reply.error(errno),
        }
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
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let Some(dir) = self.node(parent) else {
            return reply.error(Errno::ENOENT);
        };
        let Some(name) = name.to_str() else {
            return reply.error(Errno::EINVAL);
        };
        match self
            .shared
            .create_draft(req, (parent, &dir), name, mode, umask, flags)
        {
            Ok(draft) => {
                let attr = draft.attr();
                let fh = self.shared.handles.insert(Handle::Draft(draft));
                reply.created(&FRESH_TTL, &attr, Generation(0), fh, DRAFT_OPEN_FLAGS)
            }
            Err(errno) => reply.error(errno),
        }
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
