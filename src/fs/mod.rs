//! The FUSE adapter: each kernel request is decoded, handed to a decision
//! of the modules below (plain data in, `Result<_, Errno>` out, testable
//! without a kernel), and the answer encoded as the reply. Behaviour lives
//! in those modules and in the session (or the journal, a producer, the
//! plan desk); the `Filesystem` methods here only know requests and
//! replies.
//!
//! | module | decides |
//! |---|---|
//! | [`lookup`] | what an inode or a name is right now |
//! | [`attrs`] | the attributes a process sees, and for how long |
//! | [`setattr`] | which attribute changes (truncates) are allowed |
//! | [`open`] | what an open gets, or why it is refused |
//! | [`read`] | what a read gets, now or once ready |
//! | [`write`](mod@write) | where a write goes: a device's message, a draft, `stage` |
//! | [`deliver`] | a message's dispatch, and where its result is recorded |
//! | [`dir`] | what a directory lists |
//! | [`draft_ops`] | creating, renaming (delivering), removing drafts |
//! | [`poll`] | when a descriptor is ready |
//!
//! [`answers`] gives the replies that may wait (a handler's outcome, a
//! read of a stream, an open of a busy device) without blocking the
//! request loop.

mod answers;
mod attrs;
mod busy;
mod control;
mod deliver;
mod delivered;
mod dir;
mod draft_ops;
mod drafts;
mod handles;
mod lookup;
mod message;
mod nodes;
mod notify;
mod open;
mod poll;
mod read;
mod setattr;
mod signals;
mod stage;
pub(crate) mod status;
mod target;
#[cfg(test)]
mod testing;
mod write;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{
    BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, PollEvents, PollFlags, PollNotifier, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyPoll, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::error::Error;
use crate::journal::Journal;
use crate::plan_desk::PlanDesk;
use crate::session::events::EventKind;
use crate::session::Session;
use crate::who::WhoCache;
use busy::Busy;
pub(crate) use control::Control;
use delivered::Delivered;
use draft_ops::{Caller, Renaming};
use drafts::Drafts;
use handles::{Handle, Handles, Listing};
pub(crate) use nodes::Owner;
use open::DRAFT_OPEN_FLAGS;
use poll::{Pollers, Readiness};
use read::Read;
use setattr::AttrChange;
use status::{LastResult, Renders};
use write::Written;

/// Turns a domain error into the errno of the reply.
fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}

/// State shared by the request loop and the tasks that answer waiting
/// requests: everything the decisions of the modules above read or change.
struct Shared {
    control: Arc<Control>,
    session: Session,
    journal: Journal,
    plan: Option<PlanDesk>,
    runtime: tokio::runtime::Handle,
    handles: Handles,
    inodes: Arc<nodes::Inodes>,
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

impl XdevFs {
    pub(crate) fn new(
        session: Session,
        journal: Journal,
        plan: Option<PlanDesk>,
        runtime: tokio::runtime::Handle,
        owner: Owner,
    ) -> Self {
        // A fresh mount: nothing open, nothing looked up.
        let shared = Arc::new(Shared {
            control: Arc::new(Control::new(&runtime)),
            inodes: Arc::new(nodes::Inodes::new(plan.is_some())),
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
}

/// Once a preview leaves the stack, the kernel forgets its directory's
/// name, which a listing may have let it cache (see [`notify`]).
///
/// The hook runs under the session's lock, so it holds only the inode table
/// and the control, never the whole mount state: if its upgrade were the
/// last strong handle, dropping the mount state there (an open `stage`
/// withdraws its preview, which takes the session's lock) would hang.
fn forget_decided_items(shared: &Arc<Shared>) {
    let (inodes, control) = (
        Arc::downgrade(&shared.inodes),
        Arc::downgrade(&shared.control),
    );
    shared.session.on_event(move |event| {
        let (Some(inodes), Some(control)) = (inodes.upgrade(), control.upgrade()) else {
            return false;
        };
        let gone = matches!(
            event.kind,
            EventKind::Applied | EventKind::Discarded | EventKind::Withdrawn | EventKind::Cleared
        );
        if gone && inodes.item_may_be_cached(&event.id) {
            if let Some(pending) = inodes.pending_dir() {
                control.forget(pending, &event.id);
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

/// Answers with `result`: `ok` turns its value into the reply.
macro_rules! answer {
    ($reply:ident, $result:expr, $ok:pat => $answer:expr) => {
        match $result {
            Ok($ok) => $answer,
            Err(errno) => $reply.error(errno),
        }
    };
}

/// Operations answered the same whatever they ask: nothing can be made,
/// linked or removed here but a draft (`EPERM`), and no extended attribute
/// is kept (`EPERM` to set or remove one; `ENOSYS` to read them tells the
/// kernel to stop asking: one round trip, once). Nothing can be allocated
/// (`EOPNOTSUPP`; glibc's `posix_fallocate` then writes NUL bytes, which a
/// device refuses as a message). Every file is direct I/O
/// with nothing cached, so flush and fsync have nothing to do.
macro_rules! answer_all {
    ($($method:ident($($arg:ty),*) -> $reply:ty: $answer:ident $(($errno:ident))?;)*) => {
        $(
            fn $method(&self, _req: &Request, $(_: $arg,)* reply: $reply) {
                reply.$answer($(Errno::$errno)?);
            }
        )*
    };
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
        let found = self.shared.lookup(parent, name, req.uid(), req.pid());
        answer!(reply, found, entry => reply.entry_with_ttls(
            &entry.attr_ttl,
            &entry.entry_ttl,
            &entry.attr,
            Generation(0),
        ))
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let session = &self.shared.session;
        self.shared
            .inodes
            .forget(ino, nlookup, |id| session.is_pending(id));
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let attr = self.shared.getattr(ino, (req.uid(), req.pid()));
        answer!(reply, attr, (attr, ttl) => reply.attr(&ttl, &attr))
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
        let change = AttrChange {
            size,
            mode,
            uid,
            gid,
            atime,
            mtime,
        };
        let attr = self.shared.setattr(ino, &change, fh);
        answer!(reply, attr, (attr, ttl) => reply.attr(&ttl, &attr))
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.shared.open(ino, req.uid(), req.pid(), flags) {
            Ok(opened) if opened.when_free => self.open_when_free(req, ino, opened, reply),
            Ok(opened) => reply.opened(self.shared.handles.insert(opened.handle), opened.flags),
            Err(errno) => reply.error(errno),
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
        match self.shared.read(fh, offset, size, nonblocking, req.uid()) {
            Ok(Read::Data(bytes)) => reply.data(&bytes),
            Ok(Read::Wait(waiting)) => self.read_when_ready(req, fh, size, waiting, reply),
            Err(errno) => reply.error(errno),
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
        match self.shared.write(fh, offset, data, req.uid(), req.pid()) {
            Ok(Written::Message(target, step)) => {
                self.write_target(req, ino, fh, target, step, written, reply)
            }
            Ok(Written::Taken | Written::Staged { recorded: false }) => reply.written(written),
            Ok(Written::Staged { recorded: true }) => {
                let flushed = self.shared.journal.flushed();
                self.answer_after(flushed, move || reply.written(written));
            }
            Err(errno) => reply.error(errno),
        }
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
        let handle = self.shared.release(fh);
        // The closer need not wait for the journal's note.
        reply.ok();
        self.shared.note_released(handle);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let opened = self.shared.opendir(ino);
        answer!(reply, opened, fh => reply.opened(fh, FopenFlags::empty()))
    }

    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        let listing = self.shared.pass_listing(ino, fh, offset, req.uid());
        answer!(reply, listing, listing => fill_directory(&listing, offset, reply))
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let listing = match self.shared.pass_listing(ino, fh, offset, req.uid()) {
            Ok(listing) => listing,
            Err(errno) => return reply.error(errno),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (ino, name, node)) in listing.iter().enumerate().skip(start) {
            let attr = self.shared.attr(*ino, node, req.uid());
            let ttl = node.listed_ttl();
            if reply.add(*ino, index as u64 + 1, name, &ttl, &attr, Generation(0)) {
                break;
            }
            if dir::counts_as_lookup(name, node) {
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
        match self.shared.readiness(fh) {
            Readiness::Now(events) => reply.poll(events),
            Readiness::Later(events, ready) => {
                // The kernel is told once it is ready.
                let shared = &self.shared;
                shared.pollers.wake_when(fh, ph, ready, &shared.runtime);
                reply.poll(events)
            }
        }
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let unlinked = self.shared.unlink(req.uid(), parent, name);
        answer!(reply, unlinked, () => reply.ok())
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
        let renaming = self
            .shared
            .rename(req.uid(), (parent, name), (newparent, newname), flags);
        match renaming {
            Ok(Renaming::Moved) => reply.ok(),
            Ok(Renaming::Deliver {
                target,
                text,
                bytes,
            }) => self.deliver_draft(req, target, text, bytes, reply),
            Ok(Renaming::Refused { target, error }) => {
                let who = self.shared.who.who(req.uid(), req.pid());
                let (errno, commit) = self.shared.refuse(&target, None, error, who, "");
                self.answer_after(commit, move || reply.error(errno));
            }
            Err(errno) => reply.error(errno),
        }
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
        let caller = Caller {
            uid: req.uid(),
            gid: req.gid(),
            tid: req.pid(),
        };
        let created = self.shared.create(caller, parent, name, mode, umask, flags);
        answer!(reply, created, (attr, fh) => reply.created(
            &nodes::FRESH_TTL,
            &attr,
            Generation(0),
            fh,
            DRAFT_OPEN_FLAGS,
        ))
    }

    answer_all! {
        flush(INodeNo, FileHandle, LockOwner) -> ReplyEmpty: ok;
        fsync(INodeNo, FileHandle, bool) -> ReplyEmpty: ok;
        mknod(INodeNo, &OsStr, u32, u32, u32) -> ReplyEntry: error(EPERM);
        mkdir(INodeNo, &OsStr, u32, u32) -> ReplyEntry: error(EPERM);
        rmdir(INodeNo, &OsStr) -> ReplyEmpty: error(EPERM);
        symlink(INodeNo, &OsStr, &Path) -> ReplyEntry: error(EPERM);
        link(INodeNo, INodeNo, &OsStr) -> ReplyEntry: error(EPERM);
        setxattr(INodeNo, &OsStr, &[u8], i32, u32) -> ReplyEmpty: error(EPERM);
        removexattr(INodeNo, &OsStr) -> ReplyEmpty: error(EPERM);
        getxattr(INodeNo, &OsStr, u32) -> ReplyXattr: error(ENOSYS);
        listxattr(INodeNo, u32) -> ReplyXattr: error(ENOSYS);
        fallocate(INodeNo, FileHandle, u64, u64, i32) -> ReplyEmpty: error(EOPNOTSUPP);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Nothing is stored: no blocks, no inodes to spare; names as long
        // as lookups, creates and renames accept.
        reply.statfs(0, 0, 0, 0, 0, 512, lookup::NAME_MAX as u32, 0);
    }
}
