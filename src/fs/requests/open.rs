//! What an open decides: which handle a descriptor gets (and its open
//! flags), whether it must wait for a busy device, or why it is refused:
//! each refusal names its rule.

use fuser::{FopenFlags, INodeNo, OpenAccMode, OpenFlags};

use super::lookup::INODE_GONE;
use crate::fs::handles::stage::StageChannel;
use crate::fs::handles::table::Handle;
use crate::fs::kernel::busy::OpenWrite;
use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::{ItemFile, Node, SessionFile};
use crate::fs::tree::target::Target;
use crate::journal::{EventsAt, LogReader};

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
pub(crate) const DRAFT_OPEN_FLAGS: FopenFlags =
    FopenFlags::FOPEN_DIRECT_IO.union(FopenFlags::FOPEN_NOFLUSH);

/// What a descriptor of a node is for, before its handle is made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OpenAs {
    /// A device-like file: one message, then its result.
    Target(Target),
    /// `stage`: a producer's conversation.
    Stage,
    /// `log`, read live.
    Log,
    /// `events`, from the journal's end at open.
    Events,
    /// A read-only text file, read as a snapshot.
    Snapshot,
    /// A writer's draft.
    Draft,
}

impl OpenAs {
    /// The open flags of such a descriptor.
    fn flags(&self) -> FopenFlags {
        match self {
            OpenAs::Events | OpenAs::Stage => STREAM_OPEN_FLAGS,
            OpenAs::Draft => DRAFT_OPEN_FLAGS,
            _ => OPEN_FLAGS,
        }
    }
}

/// Decides what an open of `node` gets: `writing` is whether it may write,
/// `redirect` whether [`crate::fs::kernel::busy`] sends a writer of a
/// device elsewhere,
/// and `in_progress` tells whether a preview's decision is under way
/// (asked only of a writer of an item's `resolve` or `reject`).
///
/// The refusals, in the order they are checked:
/// - `ESTALE`: a device held by another writer; the kernel looks the path
///   up again and finds a fresh inode.
/// - `EBUSY`: an item's decision is under way: a second one could only
///   fail, and had the first come through this very file, the opener
///   would wait in the kernel behind its inode lock, out of reach of
///   signals.
/// - `EISDIR`: a directory is not opened as a file.
/// - `EACCES`: a read-only file opened for writing.
fn open_as(
    node: &Node,
    writing: bool,
    redirect: bool,
    in_progress: impl FnOnce(&str) -> bool,
) -> Result<OpenAs, Refusal> {
    if redirect {
        return Err(refuse!(
            ESTALE,
            "another writer holds this device inode: look the name up again"
        ));
    }
    if let Node::Item(id, ItemFile::Resolve | ItemFile::Reject) = node {
        if writing && in_progress(id) {
            return Err(IN_PROGRESS);
        }
    }
    if node.kind() == fuser::FileType::Directory {
        return Err(refuse!(EISDIR, "a directory is not opened as a file"));
    }
    if let Some(target) = node.target() {
        return Ok(OpenAs::Target(target));
    }
    match node {
        Node::Draft => Ok(OpenAs::Draft),
        Node::Stage => Ok(OpenAs::Stage),
        _ if writing => Err(refuse!(
            EACCES,
            "a read-only file is not opened for writing"
        )),
        Node::Log => Ok(OpenAs::Log),
        Node::Events => Ok(OpenAs::Events),
        // The rest are text nodes; a decided item no longer exists.
        _ => Ok(OpenAs::Snapshot),
    }
}

/// A writer of an item's device while a decision of that preview is under
/// way: a second one could only fail (an open, a rename onto it).
pub(crate) const IN_PROGRESS: Refusal = refuse!(EBUSY, "a decision of this preview is under way");

/// An open that is allowed.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) handle: Handle,
    pub(crate) flags: FopenFlags,
    /// The kernel's retry met a busy device again: the open is answered
    /// once no write on it is in flight.
    pub(crate) when_free: bool,
}

impl XdevFs {
    /// Decides an open of `ino` with `flags` by thread `tid` of `uid`.
    pub(crate) fn open(
        &self,
        ino: INodeNo,
        uid: u32,
        tid: u32,
        flags: OpenFlags,
    ) -> Result<Opened, Refusal> {
        let node = self.node(ino).ok_or(INODE_GONE)?;
        let writing = flags.acc_mode() != OpenAccMode::O_RDONLY;
        if flags.acc_mode() != OpenAccMode::O_WRONLY {
            if let Some(target) = node.target() {
                self.forget_delivery(tid, &target);
            }
        }
        let open_write = match node {
            Node::Device(_) | Node::AgentSession(_, SessionFile::Resolve | SessionFile::Reject)
                if writing =>
            {
                Some(self.busy.open_write(ino, tid))
            }
            _ => None,
        };
        let redirect = open_write.as_ref().is_some_and(OpenWrite::is_redirect);
        let open_as = open_as(&node, writing, redirect, |id| {
            self.session.is_in_progress(id)
        })?;
        let (held, when_free) = match open_write {
            Some(OpenWrite::Open(held)) => (Some(held), false),
            Some(OpenWrite::Wait) => (None, true),
            _ => (None, false),
        };
        let flags_out = open_as.flags();
        let handle = match open_as {
            OpenAs::Target(target) => Handle::target(target, held),
            OpenAs::Stage => Handle::Stage(StageChannel::default()),
            OpenAs::Log => Handle::Log(LogReader::default()),
            OpenAs::Events => Handle::Events {
                at: EventsAt::record(self.journal.len()),
            },
            OpenAs::Snapshot => Handle::Snapshot(node, None),
            OpenAs::Draft => self.open_draft(ino, uid, flags)?,
        };
        Ok(Opened {
            handle,
            flags: flags_out,
            when_free,
        })
    }

    /// Opens the caller's draft `ino` (`O_TRUNC` empties it); another
    /// uid's draft does not exist for it. Its node was just found: the
    /// draft is missing only if it went in between (an unlink, a delivery).
    fn open_draft(&self, ino: INodeNo, uid: u32, flags: OpenFlags) -> Result<Handle, Refusal> {
        let draft = self
            .drafts
            .get(ino)
            .ok_or(refuse!(ENOENT, "the draft went while it was being opened"))?;
        if !draft.is_visible_to(uid) {
            return Err(refuse!(ENOENT, "a draft is its own uid's only"));
        }
        if flags.0 & libc::O_TRUNC != 0 {
            self.drafts.set_len(&draft, 0)?;
        }
        Ok(Handle::Draft(draft))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::sync::Arc;

    use fuser::Errno;

    use super::*;
    use crate::device::Device;
    use crate::fs::testing::{
        assert_refusals, draft, ino_at, ino_of, stage, Mount, RefusalCase, OWNER_UID,
    };
    use crate::fs::tree::status::TextFile;

    fn decide(node: &Node, writing: bool, redirect: bool) -> Result<OpenAs, Errno> {
        open_as(node, writing, redirect, |_| false).map_err(|refusal| refusal.errno)
    }

    #[test]
    fn a_busy_device_sends_its_opener_elsewhere_with_estale() {
        let device = Node::Device(Device::Resolve);
        assert_eq!(decide(&device, true, true), Err(Errno::ESTALE));
        let target = Target::Device(Device::Resolve);
        assert_eq!(decide(&device, true, false), Ok(OpenAs::Target(target)));
    }

    #[test]
    fn an_item_being_decided_refuses_writers_with_ebusy() {
        let id: Arc<str> = Arc::from("p1");
        for file in [ItemFile::Resolve, ItemFile::Reject] {
            let node = Node::Item(Arc::clone(&id), file);
            let asked = open_as(&node, true, false, |asked| asked == "p1");
            assert_eq!(asked, Err(IN_PROGRESS), "{file:?}");
            assert_eq!(IN_PROGRESS.errno, Errno::EBUSY);
            // Readers still read its usage line.
            let read = open_as(&node, false, false, |_| true);
            assert!(matches!(read, Ok(OpenAs::Target(_))), "{file:?}");
        }
        let label = Node::Item(id, ItemFile::Label);
        let asked = open_as(&label, false, false, |_| true);
        assert_eq!(asked, Ok(OpenAs::Snapshot));
    }

    #[test]
    fn a_directory_is_not_opened_as_a_file() {
        let dirs = [
            Node::Root,
            Node::PendingDir,
            Node::PlanDir,
            Node::Item(Arc::from("p1"), ItemFile::Dir),
        ];
        for dir in dirs {
            assert_eq!(decide(&dir, false, false), Err(Errno::EISDIR));
            assert_eq!(decide(&dir, true, false), Err(Errno::EISDIR));
        }
    }

    #[test]
    fn a_read_only_file_refuses_writers_with_eacces() {
        let read_only = [
            Node::Text(TextFile::Status),
            Node::Text(TextFile::PlanStatus),
            Node::Log,
            Node::Events,
            Node::Item(Arc::from("p1"), ItemFile::Detail),
            Node::Item(Arc::from("p1"), ItemFile::Diff),
        ];
        for node in read_only {
            assert_eq!(decide(&node, true, false), Err(Errno::EACCES));
        }
    }

    #[test]
    fn each_file_opens_as_what_it_is() {
        let cases = [
            (Node::Log, OpenAs::Log),
            (Node::Events, OpenAs::Events),
            (Node::Stage, OpenAs::Stage),
            (Node::Draft, OpenAs::Draft),
            (Node::Text(TextFile::Last), OpenAs::Snapshot),
            (Node::PlanCtl, OpenAs::Target(Target::PlanCtl)),
        ];
        for (node, expected) in cases {
            assert_eq!(decide(&node, false, false), Ok(expected));
        }
        assert_eq!(decide(&Node::Stage, true, false), Ok(OpenAs::Stage));
        assert_eq!(decide(&Node::Draft, true, false), Ok(OpenAs::Draft));
    }

    #[test]
    fn streams_cannot_seek_and_drafts_are_not_parallel() {
        assert!(OpenAs::Events
            .flags()
            .contains(FopenFlags::FOPEN_NONSEEKABLE));
        assert!(OpenAs::Stage.flags().contains(FopenFlags::FOPEN_STREAM));
        assert_eq!(OpenAs::Log.flags(), OPEN_FLAGS);
        assert_eq!(OpenAs::Target(Target::PlanCtl).flags(), OPEN_FLAGS);
        assert_eq!(OpenAs::Draft.flags(), DRAFT_OPEN_FLAGS);
    }

    #[test]
    fn a_mount_opens_by_inode_with_the_same_rules() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let (uid, tid) = (OWNER_UID, 1);
        let write = OpenFlags(libc::O_WRONLY);
        let read = OpenFlags(libc::O_RDONLY);
        let open = |ino, flags| {
            fs.open(ino, uid, tid, flags)
                .map(|o| o.flags)
                .map_err(|refusal| refusal.errno)
        };
        assert_eq!(open(INodeNo::ROOT, read).err(), Some(Errno::EISDIR));
        let status = ino_of(fs, "status");
        assert_eq!(open(status, write).err(), Some(Errno::EACCES));
        assert_eq!(open(status, read), Ok(OPEN_FLAGS));
        let events = ino_of(fs, "events");
        assert_eq!(open(events, read), Ok(STREAM_OPEN_FLAGS));
        assert_eq!(open(INodeNo(9_999_999), read).err(), Some(Errno::ENOENT));
    }

    #[test]
    fn a_mount_sends_a_writer_of_a_busy_device_elsewhere_then_waits() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let resolve = ino_of(fs, "resolve");
        let write = OpenFlags(libc::O_WRONLY | libc::O_TRUNC);
        let writing = fs.busy.begin(resolve);
        let first = fs.open(resolve, OWNER_UID, 7, write);
        assert_eq!(
            first.err().map(|refusal| refusal.errno),
            Some(Errno::ESTALE)
        );
        // The kernel's retry walks the path again (a lookup), then opens.
        let _ = fs.lookup(INodeNo::ROOT, OsStr::new("resolve"), OWNER_UID, 7);
        let retry = fs.open(resolve, OWNER_UID, 7, write);
        assert!(retry.is_ok_and(|opened| opened.when_free));
        drop(writing);
        let free = fs.open(resolve, OWNER_UID, 7, write);
        assert!(free.is_ok_and(|opened| !opened.when_free));
    }

    const READ: OpenFlags = OpenFlags(libc::O_RDONLY);
    const WRITE: OpenFlags = OpenFlags(libc::O_WRONLY);

    /// Each refusal of an open, on a fresh mount: its errno and its rule.
    #[test]
    fn each_refusal_of_an_open_names_its_rule() {
        let cases: &[RefusalCase<XdevFs>] = &[
            (
                "a writer of a device another writer holds",
                |fs| {
                    let resolve = ino_of(fs, "resolve");
                    let _writing = fs.busy.begin(resolve);
                    fs.open(resolve, OWNER_UID, 7, WRITE).err()
                },
                refuse!(
                    ESTALE,
                    "another writer holds this device inode: look the name up again"
                ),
            ),
            (
                "a writer of an item whose decision is under way",
                |fs| {
                    let id = stage(fs, None);
                    let resolve = ino_at(fs, &["pending", &id, "resolve"]);
                    let _claimed = fs.session.claim(&id);
                    fs.open(resolve, OWNER_UID, 1, WRITE).err()
                },
                refuse!(EBUSY, "a decision of this preview is under way"),
            ),
            (
                "the root opened as a file",
                |fs| fs.open(INodeNo::ROOT, OWNER_UID, 1, READ).err(),
                refuse!(EISDIR, "a directory is not opened as a file"),
            ),
            (
                "status opened for writing",
                |fs| fs.open(ino_of(fs, "status"), OWNER_UID, 1, WRITE).err(),
                refuse!(EACCES, "a read-only file is not opened for writing"),
            ),
            (
                "another uid's draft",
                |fs| {
                    let (ino, _) = draft(fs, INodeNo::ROOT, "note.tmp");
                    fs.open(ino, OWNER_UID + 1, 1, READ).err()
                },
                refuse!(ENOENT, "a draft is its own uid's only"),
            ),
            (
                // Through `open`, only a draft removed between its node and
                // its open gets here (a race): asked of `open_draft` itself.
                "a draft gone by the time it is opened",
                |fs| fs.open_draft(INodeNo(9_999_999), OWNER_UID, READ).err(),
                refuse!(ENOENT, "the draft went while it was being opened"),
            ),
            (
                "an inode that is gone (the lookup's rule)",
                |fs| fs.open(INodeNo(9_999_999), OWNER_UID, 1, READ).err(),
                refuse!(ENOENT, "the inode is gone"),
            ),
        ];
        assert_refusals(include_str!("open.rs"), cases, |trigger| {
            trigger(&Mount::new().fs)
        });
    }
}
