//! The FUSE adapter: decodes each kernel request, calls the session, and
//! encodes the reply. Behaviour lives in the session and in `dispatch`;
//! this module only knows files.

mod handles;
mod message;
mod nodes;
mod signals;
pub mod status;

use std::ffi::OsStr;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use tokio::sync::watch;

use fuser::{
    BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, Notifier, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};
use futures::FutureExt;

use crate::dispatch::{dispatch_resolution_device_until, Cancel, Device, Resolution};
use crate::error::Error;
use crate::session::Session;
use handles::{Handle, Handles};
use message::{Message, WriteStep};
use nodes::{Inodes, Node, Owner, STATIC_TTL};
use status::{DeviceResult, LastResult};

pub use message::MAX_MESSAGE;

/// Turns a domain error into the errno of the reply.
fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}

/// Why blocked writers are cancelled when their mount goes away.
const CLOSING: &str = "the xdev mount is shutting down";

/// Lets the mount's owner cancel blocked writers and see how many remain.
#[derive(Debug)]
pub(crate) struct Control {
    closing: watch::Sender<bool>,
    in_flight: AtomicUsize,
    notifier: OnceLock<Notifier>,
}

impl Control {
    fn new() -> Self {
        Control {
            closing: watch::Sender::new(false),
            in_flight: AtomicUsize::new(0),
            notifier: OnceLock::new(),
        }
    }

    /// Lets the filesystem ask the kernel to drop cached names.
    pub(crate) fn set_notifier(&self, notifier: Notifier) {
        let _ = self.notifier.set(notifier);
    }

    /// Every writer blocked now or later gets `ECANCELED`.
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Device writes still waiting for their answer.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Fires with `Aborted` once the mount is closing.
    fn closed(&self) -> impl Future<Output = Error> + Send + 'static {
        let mut closing = self.closing.subscribe();
        async move {
            // An error means the sender is gone: the mount is gone too.
            let _ = closing.wait_for(|closing| *closing).await;
            Error::Aborted(CLOSING.to_string())
        }
    }

    /// What cancels a writer's wait: its own signal, or the mount closing.
    fn cancel_for(&self, tid: u32) -> Cancel {
        let closed = self.closed();
        match signals::interrupted(tid) {
            Some(signalled) => Box::pin(async move {
                tokio::select! {
                    error = signalled => error,
                    error = closed => error,
                }
            }),
            None => Box::pin(closed),
        }
    }
}

/// Counts one device write from its arrival until its reply is sent.
struct InFlight(Arc<Control>);

impl InFlight {
    fn start(control: &Arc<Control>) -> Self {
        control.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(control))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// State shared by the request loop and the tasks that answer blocked writes.
struct Shared {
    control: Arc<Control>,
    session: Session,
    runtime: tokio::runtime::Handle,
    handles: Handles,
    inodes: Inodes,
    last: LastResult,
    owner: Owner,
}

/// The xdev filesystem, as fuser drives it.
pub(crate) struct XdevFs {
    shared: Arc<Shared>,
}

impl XdevFs {
    pub(crate) fn new(session: Session, runtime: tokio::runtime::Handle) -> Self {
        XdevFs {
            shared: Arc::new(Shared {
                control: Arc::new(Control::new()),
                session,
                runtime,
                handles: Handles::default(),
                inodes: Inodes::default(),
                last: LastResult::default(),
                owner: Owner::current(),
            }),
        }
    }

    /// The handle the mount's owner keeps to cancel blocked writers.
    pub(crate) fn control(&self) -> Arc<Control> {
        Arc::clone(&self.shared.control)
    }

    fn attr(&self, ino: INodeNo, node: Node) -> fuser::FileAttr {
        let size = match node {
            Node::Status(file) => file.render(&self.shared.session, &self.shared.last).len() as u64,
            // A device "holds" up to one message. The kernel serialises
            // every direct write that extends a file; with this size no
            // message write on a freshly looked-up device extends it.
            Node::Device(_) => MAX_MESSAGE as u64,
            Node::Root => 0,
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

    /// A write on `device` is waiting: later opens get a fresh inode so they
    /// do not queue behind it in the kernel (see [`Inodes::renew`]).
    fn move_opens_off(&self, device: Device) {
        self.shared.inodes.renew(device);
        if let Some(notifier) = self.shared.control.notifier.get() {
            if let Err(err) = notifier.inval_entry(INodeNo::ROOT, OsStr::new(device.name())) {
                tracing::debug!(%err, device = device.name(), "could not invalidate the device name");
            }
        }
    }
}

impl Shared {
    /// Dispatches one complete device message and records its result for
    /// the status files (and, with `fh`, for reading back on that descriptor).
    async fn dispatch(
        self: Arc<Self>,
        device: Device,
        text: String,
        fh: Option<FileHandle>,
        tid: u32,
    ) -> Resolution {
        let cancel = self.control.cancel_for(tid);
        let resolution =
            dispatch_resolution_device_until(&self.session, device, &text, Some(cancel)).await;
        self.record(device, fh, &resolution);
        resolution
    }

    fn record(&self, device: Device, fh: Option<FileHandle>, resolution: &Resolution) {
        if let Some(fh) = fh {
            self.handles.set_result(fh, &resolution.text);
        }
        self.last.record(DeviceResult::new(device, resolution));
        tracing::debug!(device = device.name(), ok = resolution.is_ok(), text = %resolution.text, "device result");
    }

    /// A write refused before dispatch still counts as the device's
    /// result, except that a second write must not hide the first one's
    /// result on its own descriptor.
    fn refuse(&self, device: Device, fh: FileHandle, error: Error) -> Errno {
        let errno = errno_of(&error);
        let own_result = (error != Error::AlreadyDispatched).then_some(fh);
        self.record(device, own_result, &Resolution::failed(error, None));
        errno
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
        let found = (parent == INodeNo::ROOT)
            .then(|| {
                name.to_str()
                    .and_then(|name| self.shared.inodes.lookup(name))
            })
            .flatten();
        match found {
            Some((ino, node)) => {
                let attr = self.attr(ino, node);
                reply.entry_with_ttls(&node.attr_ttl(), &STATIC_TTL, &attr, Generation(0));
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.shared.inodes.node(ino) {
            Some(node) => reply.attr(&node.attr_ttl(), &self.attr(ino, node)),
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
        let Some(node) = self.shared.inodes.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        // A truncate carries times of its own; only a truncate to 0 of a
        // device is allowed (that is what `>` does), nothing else changes.
        let refusal = match (node, size) {
            (Node::Device(_), Some(0)) => None,
            (Node::Device(_), Some(_)) => Some(Errno::EINVAL),
            (_, Some(_)) => Some(Errno::EPERM),
            _ if mode.is_some() || uid.is_some() || gid.is_some() => Some(Errno::EPERM),
            _ if atime.is_some() || mtime.is_some() => Some(Errno::EPERM),
            _ => None,
        };
        match refusal {
            Some(errno) => reply.error(errno),
            None => reply.attr(&node.attr_ttl(), &self.attr(ino, node)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let writing = flags.acc_mode() != OpenAccMode::O_RDONLY;
        let handle = match self.shared.inodes.node(ino) {
            None => return reply.error(Errno::ENOENT),
            Some(Node::Root) => return reply.error(Errno::EISDIR),
            Some(Node::Status(_)) if writing => return reply.error(Errno::EACCES),
            Some(Node::Status(file)) => Handle::Snapshot(
                file.render(&self.shared.session, &self.shared.last)
                    .into_bytes(),
            ),
            Some(Node::Device(device)) => Handle::Device {
                device,
                message: Message::default(),
                result: None,
                read_from: 0,
            },
        };
        let fh = self.shared.handles.insert(handle);
        // Direct I/O: every read and write reaches us (never a stale page
        // cache); parallel direct writes: writers of one device do not queue
        // behind each other in the kernel; no flush: close costs no round trip.
        let open_flags = FopenFlags::FOPEN_DIRECT_IO
            | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
            | FopenFlags::FOPEN_NOFLUSH;
        reply.opened(fh, open_flags);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let dir = self.shared.session.mount_dir();
        match self
            .shared
            .handles
            .read(fh, offset, size, |device| device.usage(&dir))
        {
            Some(bytes) => reply.data(&bytes),
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
        let Some((device, step)) = self.shared.handles.write(fh, data) else {
            return reply.error(Errno::EBADF);
        };
        let written = data.len() as u32;
        match step {
            WriteStep::Hold => reply.written(written),
            WriteStep::Refuse(error) => reply.error(self.shared.refuse(device, fh, error)),
            WriteStep::Dispatch(text) => {
                let shared = Arc::clone(&self.shared);
                let tid = req.pid();
                let waiting = InFlight::start(&self.shared.control);
                let waits = self.answer_soon(async move {
                    let _waiting = waiting;
                    let resolution = shared.dispatch(device, text, Some(fh), tid).await;
                    match &resolution.error {
                        None => reply.written(written),
                        Some(error) => reply.error(errno_of(error)),
                    }
                });
                if waits {
                    self.move_opens_off(device);
                }
            }
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
        // its result lands in the status files only.
        if let Some(Handle::Device {
            device,
            mut message,
            ..
        }) = handle
        {
            match message.release() {
                Some(WriteStep::Dispatch(text)) => {
                    let shared = Arc::clone(&self.shared);
                    let _ = self.answer_soon(async move {
                        shared.dispatch(device, text, None, 0).await;
                    });
                }
                Some(WriteStep::Refuse(error)) => {
                    self.shared
                        .record(device, None, &Resolution::failed(error, None));
                }
                Some(WriteStep::Hold) | None => {}
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
        match self.shared.inodes.node(ino) {
            Some(Node::Root) => reply.opened(FileHandle(0), FopenFlags::empty()),
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
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let dots = [
            (INodeNo::ROOT, ".", Node::Root),
            (INodeNo::ROOT, "..", Node::Root),
        ];
        let listing = dots.into_iter().chain(self.shared.inodes.entries());
        for (index, (entry_ino, name, node)) in listing.enumerate().skip(offset as usize) {
            if reply.add(entry_ino, index as u64 + 1, node.kind(), name) {
                break;
            }
        }
        reply.ok();
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
        reply: fuser::ReplyXattr,
    ) {
        // ENOSYS tells the kernel to stop asking (one round trip, once).
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: fuser::ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }
}
