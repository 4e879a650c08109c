//! The adapter fuser drives, [`XdevFuse`]: a thin layer over the core
//! ([`XdevFs`]). Each method decodes a kernel request, asks the core for
//! its decision, and encodes the answer as the reply; a reply that must
//! wait goes to the core as a closure that replies. A refused request is
//! logged here, in one place ([`refused`]): the operation, the inode, the
//! asking thread, the errno and the rule that fired. Operations xdev does
//! not support are written out at the end, one method each.

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

use super::answers::decision::MessageWrite;
use super::handles::stage::StageWrite;
use super::handles::table::Listing;
use super::refusal::{refuse, Refusal};
use super::requests::draft_ops::Caller;
use super::requests::lookup::NAME_MAX;
use super::requests::open::DRAFT_OPEN_FLAGS;
use super::requests::poll::Readiness;
use super::requests::read::Read;
use super::requests::setattr::AttrChange;
use super::requests::write::Written;
use super::state::XdevFs;
use super::tree::node::FRESH_TTL;
use crate::error::errno_name;

/// The xdev filesystem as fuser drives it: the adapter over the core.
pub(crate) struct XdevFuse {
    fs: Arc<XdevFs>,
}

impl XdevFuse {
    /// The adapter over `fs`.
    pub(crate) fn new(fs: XdevFs) -> Self {
        XdevFuse { fs: Arc::new(fs) }
    }
}

/// The errno a refused request is answered with, once logged at debug:
/// operation `op` on inode `ino` by the asking thread, the errno, and the
/// rule that refused it. The one place a refusal is logged; with debug off,
/// tracing's level check is all it costs (nothing is formatted).
fn refused(op: &'static str, ino: INodeNo, req: &Request, refusal: Refusal) -> Errno {
    tracing::debug!(
        op,
        ino = ino.0,
        pid = req.pid(),
        errno = %errno_name(refusal.errno.code()),
        why = refusal.why,
        "refused"
    );
    refusal.errno
}

/// Setting or removing an extended attribute: none is kept.
const NO_XATTR: Refusal = refuse!(EPERM, "no extended attribute is kept");

/// Reading extended attributes: `ENOSYS` tells the kernel to stop asking
/// (one round trip, once).
const NO_XATTR_TO_READ: Refusal = refuse!(ENOSYS, "no extended attribute is kept: ask no more");

/// A hard or symbolic link.
const NO_LINK: Refusal = refuse!(EPERM, "no link is made here");

/// `mknod`: the only node made here is a draft, by `create`.
const NO_NODE: Refusal = refuse!(EPERM, "no node is made here but a draft, by create");

/// `mkdir`.
const NO_NEW_DIRECTORY: Refusal = refuse!(EPERM, "no directory is made here");

/// `rmdir`.
const NO_DIRECTORY_REMOVED: Refusal = refuse!(EPERM, "the mount's directories are never removed");

/// `fallocate` (see the unsupported operations below).
const NO_ALLOCATION: Refusal = refuse!(EOPNOTSUPP, "nothing is allocated here");

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

impl Filesystem for XdevFuse {
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

    fn destroy(&mut self) {
        // The session ended: the kernel let go of the mount (it was
        // unmounted, or its connection aborted). Unless the mount's owner
        // is stopping it, that is news for the owner.
        self.fs.control().mark_removed();
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.fs.lookup(parent, name, req.uid(), req.pid()) {
            Ok(entry) => reply.entry_with_ttls(
                &entry.attr_ttl,
                &entry.entry_ttl,
                &entry.attr,
                Generation(0),
            ),
            Err(refusal) => reply.error(refused("lookup", parent, req, refusal)),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.fs.forget(ino, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.fs.getattr(ino, (req.uid(), req.pid())) {
            Ok((attr, ttl)) => reply.attr(&ttl, &attr),
            Err(refusal) => reply.error(refused("getattr", ino, req, refusal)),
        }
    }

    fn setattr(
        &self,
        req: &Request,
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
        match self.fs.setattr(ino, &change, fh) {
            Ok((attr, ttl)) => reply.attr(&ttl, &attr),
            Err(refusal) => reply.error(refused("setattr", ino, req, refusal)),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.fs.open(ino, req.uid(), req.pid(), flags) {
            Ok(opened) => self
                .fs
                .answer_open(req.pid(), ino, opened, |opened| match opened {
                    Ok((fh, flags)) => reply.opened(fh, flags),
                    Err(errno) => reply.error(errno),
                }),
            Err(refusal) => reply.error(refused("open", ino, req, refusal)),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let nonblocking = flags.0 & libc::O_NONBLOCK != 0;
        match self.fs.read(fh, offset, size, nonblocking, req.uid()) {
            Ok(Read::Data(bytes)) => reply.data(&bytes),
            Ok(Read::Wait(waiting)) => {
                let asker = (req.uid(), req.pid());
                self.fs
                    .answer_read(asker, (fh, size), waiting, |read| match read {
                        Ok(bytes) => reply.data(&bytes),
                        Err(errno) => reply.error(errno),
                    })
            }
            Err(refusal) => reply.error(refused("read", ino, req, refusal)),
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
        match self.fs.write(fh, offset, data, req.uid(), req.pid()) {
            Ok(Written::Message(target, step, held)) => {
                let write = MessageWrite {
                    uid: req.uid(),
                    tid: req.pid(),
                    ino,
                    fh,
                    target,
                    step,
                    held,
                    bytes: written,
                };
                self.fs.answer_write(write, move |outcome| match outcome {
                    Ok(()) => reply.written(written),
                    Err(errno) => reply.error(errno),
                });
            }
            Ok(Written::Taken | Written::Staged(StageWrite::Unrecorded)) => reply.written(written),
            // A result report's decision records its own outcome, and that
            // decision's writer waits for it; the producer does not.
            Ok(Written::Staged(StageWrite::Staged)) => {
                self.fs.answer_when_flushed(move || reply.written(written));
            }
            Err(refusal) => reply.error(refused("write", ino, req, refusal)),
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
        let handle = self.fs.release(fh);
        // The closer need not wait for the journal's note.
        reply.ok();
        self.fs.note_released(handle);
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.fs.opendir(ino) {
            Ok(fh) => reply.opened(fh, FopenFlags::empty()),
            Err(refusal) => reply.error(refused("opendir", ino, req, refusal)),
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
        match self.fs.pass_listing(ino, fh, offset, req.uid()) {
            Ok(listing) => fill_directory(&listing, offset, reply),
            Err(refusal) => reply.error(refused("readdir", ino, req, refusal)),
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
        let listing = match self.fs.pass_listing(ino, fh, offset, req.uid()) {
            Ok(listing) => listing,
            Err(refusal) => return reply.error(refused("readdirplus", ino, req, refusal)),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (ino, name, node)) in listing.iter().enumerate().skip(start) {
            let (attr, ttl) = self.fs.listed_attr(*ino, node, req.uid());
            if reply.add(*ino, index as u64 + 1, name, &ttl, &attr, Generation(0)) {
                break;
            }
            self.fs.note_listed(*ino, name, node);
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
        self.fs.releasedir(fh);
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
        match self.fs.readiness(fh) {
            Readiness::Now(events) => reply.poll(events),
            Readiness::Later(events, ready) => {
                // The kernel is told once it is ready.
                self.fs.wake_when(fh, ph, ready);
                reply.poll(events)
            }
        }
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.fs.unlink(req.uid(), parent, name) {
            Ok(()) => reply.ok(),
            Err(refusal) => reply.error(refused("unlink", parent, req, refusal)),
        }
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
            .fs
            .rename(req.uid(), (parent, name), (newparent, newname), flags);
        match renaming {
            Ok(renaming) => {
                let asker = (req.uid(), req.pid());
                self.fs
                    .answer_rename(asker, renaming, |outcome| match outcome {
                        Ok(()) => reply.ok(),
                        Err(errno) => reply.error(errno),
                    })
            }
            Err(refusal) => reply.error(refused("rename", parent, req, refusal)),
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
        match self.fs.create(caller, parent, name, mode, umask, flags) {
            Ok((attr, fh)) => reply.created(&FRESH_TTL, &attr, Generation(0), fh, DRAFT_OPEN_FLAGS),
            Err(refusal) => reply.error(refused("create", parent, req, refusal)),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Nothing is stored: no blocks, no inodes to spare; names as long
        // as lookups, creates and renames accept.
        reply.statfs(0, 0, 0, 0, 0, 512, NAME_MAX as u32, 0);
    }

    // What xdev does not support. Every file is direct I/O with nothing
    // cached, so flush and fsync have nothing to do. Nothing can be made,
    // linked or removed here but a draft (`EPERM`), and no extended
    // attribute is kept (`EPERM` to set or remove one; `ENOSYS` to read
    // them tells the kernel to stop asking: one round trip, once). Nothing
    // can be allocated (`EOPNOTSUPP`; glibc's `posix_fallocate` then writes
    // NUL bytes, which a device refuses as a message).

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        _: &OsStr,
        _: u32,
        _: u32,
        _: u32,
        reply: ReplyEntry,
    ) {
        reply.error(refused("mknod", parent, req, NO_NODE));
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, _: &OsStr, _: u32, _: u32, reply: ReplyEntry) {
        reply.error(refused("mkdir", parent, req, NO_NEW_DIRECTORY));
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(refused("rmdir", parent, req, NO_DIRECTORY_REMOVED));
    }

    fn symlink(&self, req: &Request, parent: INodeNo, _: &OsStr, _: &Path, reply: ReplyEntry) {
        reply.error(refused("symlink", parent, req, NO_LINK));
    }

    fn link(&self, req: &Request, ino: INodeNo, _: INodeNo, _: &OsStr, reply: ReplyEntry) {
        reply.error(refused("link", ino, req, NO_LINK));
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        _: &OsStr,
        _: &[u8],
        _: i32,
        _: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(refused("setxattr", ino, req, NO_XATTR));
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(refused("removexattr", ino, req, NO_XATTR));
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, _: &OsStr, _: u32, reply: ReplyXattr) {
        reply.error(refused("getxattr", ino, req, NO_XATTR_TO_READ));
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, _: u32, reply: ReplyXattr) {
        reply.error(refused("listxattr", ino, req, NO_XATTR_TO_READ));
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        _: FileHandle,
        _: u64,
        _: u64,
        _: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(refused("fallocate", ino, req, NO_ALLOCATION));
    }
}
