//! A mount's core without a kernel, for the decisions' unit tests.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{FileHandle, INodeNo};

use super::refusal::Refusal;
use super::requests::draft_ops::Caller;
use super::state::XdevFs;
use super::tree::node::Owner;
use crate::journal::Journal;
use crate::session::{apply_fn, Origin, Session, StageOptions, ToolResult};

/// The uid that owns the test mount's files.
pub(super) const OWNER_UID: u32 = 4242;

/// The core of one mount, and the runtime its waits would run on.
pub(super) struct Mount {
    pub(super) fs: Arc<XdevFs>,
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
            group_reads: false,
            others_list: true,
        };
        let journal = Journal::new(None).expect("an in-memory journal");
        let fs = XdevFs::new(
            Session::new(),
            journal,
            None,
            None,
            runtime.handle().clone(),
            owner,
        );
        Mount {
            fs: Arc::new(fs),
            _runtime: runtime,
        }
    }
}

/// The inode of the root's file `name`.
pub(super) fn ino_of(fs: &XdevFs, name: &str) -> INodeNo {
    ino_at(fs, &[name])
}

/// The inode at `path` under the root, each name looked up in turn as the
/// kernel walks a path.
pub(super) fn ino_at(fs: &XdevFs, path: &[&str]) -> INodeNo {
    path.iter().fold(INodeNo::ROOT, |dir, name| {
        let entry = fs.lookup(dir, OsStr::new(name), OWNER_UID, 1);
        entry
            .unwrap_or_else(|_| panic!("{name} of {path:?}"))
            .attr
            .ino
    })
}

/// The mount's owner, asking from thread 1.
pub(super) fn owner() -> Caller {
    Caller {
        uid: OWNER_UID,
        gid: OWNER_UID,
        tid: 1,
    }
}

/// Stages a preview that applies nothing (under agent session `session`,
/// if given): its id, the name of its directory under `pending/`.
pub(super) fn stage(fs: &XdevFs, session: Option<&str>) -> String {
    let apply = apply_fn(|_, _| async { Ok(ToolResult::ok("applied")) });
    let origin = session.map(|session| Origin {
        session_id: Some(session.to_string()),
        tool_use_id: None,
    });
    let options = StageOptions {
        origin,
        ..StageOptions::default()
    };
    fs.session.stage("edit a.rs", "edit", apply, None, options)
}

/// Creates the owner's draft `name` in directory `dir`: its inode and the
/// descriptor the create opened.
pub(super) fn draft(fs: &XdevFs, dir: INodeNo, name: &str) -> (INodeNo, FileHandle) {
    let created = fs.create(owner(), dir, OsStr::new(name), 0o100600, 0, 0);
    let (attr, fh) = created.unwrap_or_else(|refusal| panic!("draft {name}: {refusal:?}"));
    (attr.ino, fh)
}

/// One refusal a decision must make: what the case is, how to trigger it
/// on a fresh `T` (a mount's core, a store), and the refusal expected (its
/// errno and rule).
pub(super) type RefusalCase<T> = (&'static str, fn(&T) -> Option<Refusal>, Refusal);

/// Checks each case on a fresh `T` (made for it by `fresh`) refuses as
/// expected, and that each rule `source` (a module's text) refuses with
/// is one a case expects: a new refusal site needs a case.
pub(super) fn assert_refusals<T>(
    source: &str,
    cases: &[RefusalCase<T>],
    fresh: impl Fn(fn(&T) -> Option<Refusal>) -> Option<Refusal>,
) {
    let mut failed = Vec::new();
    for (case, trigger, expected) in cases {
        let got = fresh(*trigger);
        if got != Some(*expected) {
            failed.push(format!("{case}: expected {expected:?}, got {got:?}"));
        }
    }
    for why in whys_in(source) {
        if !cases.iter().any(|(_, _, expected)| expected.why == why) {
            failed.push(format!("no case refuses with {why:?}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The rules a module's text refuses with: the text of each `refuse!`
/// before its tests.
fn whys_in(source: &str) -> Vec<&str> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    code.split("refuse!(")
        .skip(1)
        .filter_map(|site| site.split('"').nth(1))
        .collect()
}

/// The decisions of a mount's operations, through [`XdevFs`] as the
/// adapter calls them: each errno they answer with.
#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use fuser::{Errno, RenameFlags};

    use super::*;
    use crate::fs::handles::message::WriteStep;
    use crate::fs::refusal::Refusal;
    use crate::fs::requests::draft_ops::Renaming;
    use crate::fs::requests::read::Read;
    use crate::fs::requests::setattr::AttrChange;
    use crate::fs::requests::write::{Delivery, Written};

    const GONE: INodeNo = INodeNo(9_999_999);
    const NOT_OPEN: FileHandle = FileHandle(9_999_999);

    /// The errno a decision refused with (`None`: it was allowed).
    fn errno<T>(decided: Result<T, Refusal>) -> Option<Errno> {
        decided.err().map(|refusal| refusal.errno)
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
        let fs = &mount.fs;
        let missing = fs.lookup(INodeNo::ROOT, OsStr::new("nope"), OWNER_UID, 1);
        assert_eq!(errno(missing), Some(Errno::ENOENT));
        let bad = OsStr::from_bytes(b"\xff");
        let bad = fs.lookup(INodeNo::ROOT, bad, OWNER_UID, 1);
        assert_eq!(errno(bad), Some(Errno::ENOENT));
        assert_eq!(errno(fs.getattr(GONE, (0, 1))), Some(Errno::ENOENT));
        let status = ino_of(fs, "status");
        assert!(fs.getattr(status, (0, 1)).is_ok());
    }

    #[test]
    fn setattr_of_the_mounts_files_follows_the_truncate_rule() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let resolve = ino_of(fs, "resolve");
        let (attr, _) = fs.setattr(resolve, &truncate(0), None).expect("to 0");
        assert_eq!(attr.size, 0);
        let refused = fs.setattr(resolve, &truncate(3), None);
        assert_eq!(errno(refused), Some(Errno::EINVAL));
        let status = ino_of(fs, "status");
        let refused = fs.setattr(status, &truncate(0), None);
        assert_eq!(errno(refused), Some(Errno::EPERM));
        let refused = fs.setattr(GONE, &truncate(0), None);
        assert_eq!(errno(refused), Some(Errno::ENOENT));
    }

    #[test]
    fn reads_and_writes_of_unknown_descriptors_are_ebadf() {
        let mount = Mount::new();
        let fs = &mount.fs;
        assert_eq!(
            errno(fs.read(NOT_OPEN, 0, 10, false, 0)),
            Some(Errno::EBADF)
        );
        let written = fs.write(NOT_OPEN, 0, b"x", OWNER_UID, 1);
        assert_eq!(errno(written), Some(Errno::EBADF));
    }

    #[test]
    fn a_nonblocking_read_of_events_with_nothing_new_is_eagain() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let events = ino_of(fs, "events");
        let opened = fs.open(events, OWNER_UID, 1, fuser::OpenFlags(libc::O_RDONLY));
        let fh = fs.handles.insert(opened.expect("events opens").handle);
        assert_eq!(errno(fs.read(fh, 0, 10, true, 0)), Some(Errno::EAGAIN));
        assert!(matches!(fs.read(fh, 0, 10, false, 0), Ok(Read::Wait(_))));
    }

    #[test]
    fn a_device_write_is_its_message() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let resolve = ino_of(fs, "resolve");
        let opened = fs.open(resolve, OWNER_UID, 1, fuser::OpenFlags(libc::O_WRONLY));
        let fh = fs.handles.insert(opened.expect("resolve opens").handle);
        let first = fs.write(fh, 0, b"done\n", OWNER_UID, 1);
        assert!(matches!(
            first,
            Ok(Written::Message(_, WriteStep::Dispatch(_), _))
        ));
        let second = fs.write(fh, 5, b"more\n", OWNER_UID, 1);
        assert!(matches!(
            second,
            Ok(Written::Message(_, WriteStep::Repeat, _))
        ));
    }

    #[test]
    fn opendir_of_a_file_is_enotdir() {
        let mount = Mount::new();
        let fs = &mount.fs;
        assert!(fs.opendir(INodeNo::ROOT).is_ok());
        let status = ino_of(fs, "status");
        assert_eq!(errno(fs.opendir(status)), Some(Errno::ENOTDIR));
        assert_eq!(errno(fs.opendir(GONE)), Some(Errno::ENOENT));
    }

    #[test]
    fn only_the_owner_creates_drafts_and_only_where_they_may_be() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let name = OsStr::new("note.tmp");
        let other = Caller {
            uid: OWNER_UID + 1,
            ..owner()
        };
        let refused = fs.create(other, INodeNo::ROOT, name, 0o100644, 0o022, 0);
        assert_eq!(errno(refused), Some(Errno::EACCES));
        let bad = OsStr::from_bytes(b"\xff");
        let refused = fs.create(owner(), INodeNo::ROOT, bad, 0o100644, 0o022, 0);
        assert_eq!(errno(refused), Some(Errno::EINVAL));
        let refused = fs.create(owner(), GONE, name, 0o100644, 0o022, 0);
        assert_eq!(errno(refused), Some(Errno::ENOENT));
        let pending = ino_of(fs, "pending");
        let refused = fs.create(owner(), pending, name, 0o100644, 0o022, 0);
        assert_eq!(errno(refused), Some(Errno::EPERM));
        let reserved = fs.create(owner(), INodeNo::ROOT, OsStr::new("status"), 0o100644, 0, 0);
        assert_eq!(errno(reserved), Some(Errno::EPERM));
        let (attr, _) = fs
            .create(owner(), INodeNo::ROOT, name, 0o100666, 0o022, 0)
            .expect("the owner's draft");
        assert_eq!(attr.perm, 0o644);
    }

    #[test]
    fn the_mounts_own_files_are_neither_removed_nor_renamed() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let root = INodeNo::ROOT;
        let unlinked = fs.unlink(OWNER_UID, root, OsStr::new("status"));
        assert_eq!(errno(unlinked), Some(Errno::EPERM));
        let unlinked = fs.unlink(OWNER_UID, root, OsStr::new("nope"));
        assert_eq!(errno(unlinked), Some(Errno::ENOENT));
        let from = (root, OsStr::new("status"));
        let to = (root, OsStr::new("other"));
        let renamed = fs.rename(OWNER_UID, from, to, RenameFlags::empty());
        assert_eq!(errno(renamed), Some(Errno::EPERM));
        let renamed = fs.rename(OWNER_UID, (GONE, OsStr::new("a")), to, RenameFlags::empty());
        assert_eq!(errno(renamed), Some(Errno::ENOENT));
    }

    #[test]
    fn a_refusal_names_the_rule_that_fired() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let root = INodeNo::ROOT;
        let why = |refused: Option<Refusal>| refused.map(|refusal| refusal.why);
        let unlinked = fs.unlink(OWNER_UID, root, OsStr::new("status"));
        assert_eq!(
            why(unlinked.err()),
            Some("the mount's own files are never removed")
        );
        let unlinked = fs.unlink(OWNER_UID, root, OsStr::new("nope"));
        assert_eq!(why(unlinked.err()), Some("no such draft"));
        let to = (root, OsStr::new("other"));
        let renamed = fs.rename(
            OWNER_UID,
            (root, OsStr::new("status")),
            to,
            RenameFlags::empty(),
        );
        assert_eq!(
            why(renamed.err()),
            Some("the mount's own files are never renamed")
        );
        let pending = ino_of(fs, "pending");
        let created = fs.create(owner(), pending, OsStr::new("d"), 0o100644, 0, 0);
        assert_eq!(
            why(created.err()),
            Some("the mount keeps this name for its own files")
        );
    }

    #[test]
    fn a_draft_renamed_onto_a_device_is_delivered() {
        let mount = Mount::new();
        let fs = &mount.fs;
        let root = INodeNo::ROOT;
        let name = OsStr::new("note.tmp");
        let (_, fh) = fs
            .create(owner(), root, name, 0o100644, 0o022, 0)
            .expect("a draft");
        assert!(matches!(
            fs.write(fh, 0, b"done\n", OWNER_UID, 1),
            Ok(Written::Taken)
        ));
        let renaming = fs.rename(
            OWNER_UID,
            (root, name),
            (root, OsStr::new("reject")),
            RenameFlags::empty(),
        );
        match renaming {
            Ok(Renaming::Deliver(Delivery { text, bytes, .. })) => {
                assert_eq!((text.as_str(), bytes), ("done\n", 5));
            }
            other => panic!("not delivered: {other:?}"),
        }
    }
}
