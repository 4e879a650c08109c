//! A mount's state without a kernel, for the decisions' unit tests.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::INodeNo;

use super::nodes::Owner;
use super::{Shared, XdevFs};
use crate::journal::Journal;
use crate::session::Session;

/// The uid that owns the test mount's files.
pub(super) const OWNER_UID: u32 = 4242;

/// The state of one mount, and the runtime its waits would run on.
pub(super) struct Mount {
    pub(super) shared: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

impl Mount {
    /// A mount with nothing pending and no plan desk.
    pub(super) fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a test runtime");
        let owner = Owner {
            uid: OWNER_UID,
            gid: OWNER_UID,
            since: SystemTime::UNIX_EPOCH,
            share_journal: false,
        };
        let journal = Journal::new(None).expect("an in-memory journal");
        let fs = XdevFs::new(
            Session::new(),
            journal,
            None,
            runtime.handle().clone(),
            owner,
        );
        Mount {
            shared: fs.shared,
            _runtime: runtime,
        }
    }
}

/// The inode of the root's file `name`.
pub(super) fn ino_of(shared: &Shared, name: &str) -> INodeNo {
    let entry = shared.lookup(INodeNo::ROOT, OsStr::new(name), OWNER_UID, 1);
    entry.expect("a file of the root").attr.ino
}

/// The decisions of a mount's operations, through [`Shared`] as the
/// adapter calls them: each errno they answer with.
#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use fuser::{Errno, FileHandle, RenameFlags};

    use super::*;
    use crate::fs::draft_ops::{Caller, Renaming};
    use crate::fs::message::WriteStep;
    use crate::fs::read::Read;
    use crate::fs::setattr::AttrChange;
    use crate::fs::write::Written;

    const GONE: INodeNo = INodeNo(9_999_999);
    const NOT_OPEN: FileHandle = FileHandle(9_999_999);

    fn owner() -> Caller {
        Caller {
            uid: OWNER_UID,
            gid: OWNER_UID,
            tid: 1,
        }
    }

    fn truncate(size: u64) -> AttrChange {
        AttrChange {
            size: Some(size),
            ..AttrChange::default()
        }
    }

    #[test]
    fn lookups_and_getattrs_of_what_is_not_there_are_enoent() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let missing = shared.lookup(INodeNo::ROOT, OsStr::new("nope"), OWNER_UID, 1);
        assert!(matches!(missing, Err(Errno::ENOENT)));
        let bad = OsStr::from_bytes(b"\xff");
        let bad = shared.lookup(INodeNo::ROOT, bad, OWNER_UID, 1);
        assert!(matches!(bad, Err(Errno::ENOENT)));
        assert!(matches!(shared.getattr(GONE, (0, 1)), Err(Errno::ENOENT)));
        let status = ino_of(shared, "status");
        assert!(shared.getattr(status, (0, 1)).is_ok());
    }

    #[test]
    fn setattr_of_the_mounts_files_follows_the_truncate_rule() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let resolve = ino_of(shared, "resolve");
        let (attr, _) = shared.setattr(resolve, &truncate(0), None).expect("to 0");
        assert_eq!(attr.size, 0);
        let refused = shared.setattr(resolve, &truncate(3), None);
        assert!(matches!(refused, Err(Errno::EINVAL)));
        let status = ino_of(shared, "status");
        let refused = shared.setattr(status, &truncate(0), None);
        assert!(matches!(refused, Err(Errno::EPERM)));
        let refused = shared.setattr(GONE, &truncate(0), None);
        assert!(matches!(refused, Err(Errno::ENOENT)));
    }

    #[test]
    fn reads_and_writes_of_unknown_descriptors_are_ebadf() {
        let mount = Mount::new();
        let shared = &mount.shared;
        assert!(matches!(
            shared.read(NOT_OPEN, 0, 10, false, 0),
            Err(Errno::EBADF)
        ));
        let written = shared.write(NOT_OPEN, 0, b"x", OWNER_UID, 1);
        assert!(matches!(written, Err(Errno::EBADF)));
    }

    #[test]
    fn a_nonblocking_read_of_events_with_nothing_new_is_eagain() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let events = ino_of(shared, "events");
        let opened = shared.open(events, OWNER_UID, 1, fuser::OpenFlags(libc::O_RDONLY));
        let fh = shared.handles.insert(opened.expect("events opens").handle);
        assert!(matches!(
            shared.read(fh, 0, 10, true, 0),
            Err(Errno::EAGAIN)
        ));
        assert!(matches!(
            shared.read(fh, 0, 10, false, 0),
            Ok(Read::Wait(_))
        ));
    }

    #[test]
    fn a_device_write_is_its_message() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let resolve = ino_of(shared, "resolve");
        let opened = shared.open(resolve, OWNER_UID, 1, fuser::OpenFlags(libc::O_WRONLY));
        let fh = shared.handles.insert(opened.expect("resolve opens").handle);
        let first = shared.write(fh, 0, b"done\n", OWNER_UID, 1);
        assert!(matches!(
            first,
            Ok(Written::Message(_, WriteStep::Dispatch(_)))
        ));
        let second = shared.write(fh, 5, b"more\n", OWNER_UID, 1);
        assert!(matches!(second, Ok(Written::Message(_, WriteStep::Repeat))));
    }

    #[test]
    fn opendir_of_a_file_is_enotdir() {
        let mount = Mount::new();
        let shared = &mount.shared;
        assert!(shared.opendir(INodeNo::ROOT).is_ok());
        let status = ino_of(shared, "status");
        assert!(matches!(shared.opendir(status), Err(Errno::ENOTDIR)));
        assert!(matches!(shared.opendir(GONE), Err(Errno::ENOENT)));
    }

    #[test]
    fn only_the_owner_creates_drafts_and_only_where_they_may_be() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let name = OsStr::new("note.tmp");
        let other = Caller {
            uid: OWNER_UID + 1,
            ..owner()
        };
        let refused = shared.create(other, INodeNo::ROOT, name, 0o100644, 0o022, 0);
        assert!(matches!(refused, Err(Errno::EACCES)));
        let bad = OsStr::from_bytes(b"\xff");
        let refused = shared.create(owner(), INodeNo::ROOT, bad, 0o100644, 0o022, 0);
        assert!(matches!(refused, Err(Errno::EINVAL)));
        let refused = shared.create(owner(), GONE, name, 0o100644, 0o022, 0);
        assert!(matches!(refused, Err(Errno::ENOENT)));
        let pending = ino_of(shared, "pending");
        let refused = shared.create(owner(), pending, name, 0o100644, 0o022, 0);
        assert!(matches!(refused, Err(Errno::EPERM)));
        let reserved = shared.create(owner(), INodeNo::ROOT, OsStr::new("status"), 0o100644, 0, 0);
        assert!(matches!(reserved, Err(Errno::EPERM)));
        let (attr, _) = shared
            .create(owner(), INodeNo::ROOT, name, 0o100666, 0o022, 0)
            .expect("the owner's draft");
        assert_eq!(attr.perm, 0o644);
    }

    #[test]
    fn the_mounts_own_files_are_neither_removed_nor_renamed() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let root = INodeNo::ROOT;
        let unlinked = shared.unlink(OWNER_UID, root, OsStr::new("status"));
        assert!(matches!(unlinked, Err(Errno::EPERM)));
        let unlinked = shared.unlink(OWNER_UID, root, OsStr::new("nope"));
        assert!(matches!(unlinked, Err(Errno::ENOENT)));
        let from = (root, OsStr::new("status"));
        let to = (root, OsStr::new("other"));
        let renamed = shared.rename(OWNER_UID, from, to, RenameFlags::empty());
        assert!(matches!(renamed, Err(Errno::EPERM)));
        let renamed = shared.rename(OWNER_UID, (GONE, OsStr::new("a")), to, RenameFlags::empty());
        assert!(matches!(renamed, Err(Errno::ENOENT)));
    }

    #[test]
    fn a_draft_renamed_onto_a_device_is_delivered() {
        let mount = Mount::new();
        let shared = &mount.shared;
        let root = INodeNo::ROOT;
        let name = OsStr::new("note.tmp");
        let (_, fh) = shared
            .create(owner(), root, name, 0o100644, 0o022, 0)
            .expect("a draft");
        assert!(matches!(
            shared.write(fh, 0, b"done\n", OWNER_UID, 1),
            Ok(Written::Taken)
        ));
        let renaming = shared.rename(
            OWNER_UID,
            (root, name),
            (root, OsStr::new("reject")),
            RenameFlags::empty(),
        );
        match renaming {
            Ok(Renaming::Deliver { text, bytes, .. }) => {
                assert_eq!((text.as_str(), bytes), ("done\n", 5));
            }
            other => panic!("not delivered: {other:?}"),
        }
    }
}
