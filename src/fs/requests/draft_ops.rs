//! What create, unlink and rename decide: only drafts are made, removed
//! and moved here. Who may create one where, what a rename does (move a
//! draft, or deliver it to a device), and what an unlink may remove; each
//! refusal names its rule. The store itself is
//! [`crate::fs::handles::drafts`]; a draft's setattr is `setattr.rs`'s.

use std::ffi::OsStr;
use std::sync::Arc;

use fuser::{FileAttr, FileHandle, INodeNo, RenameFlags};

use super::lookup::{name_fits, DIR_GONE};
use super::open::IN_PROGRESS;
use super::write::Delivery;
use crate::device::message_text;
use crate::error::Error;
use crate::fs::handles::drafts::{Created, Creator, Draft, Place};
use crate::fs::handles::table::Handle;
use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::inodes::Inodes;
use crate::fs::tree::node::Node;
use crate::fs::tree::target::Target;

/// What a rename of a draft does.
#[derive(Debug)]
pub(crate) enum Renaming {
    /// It moved to another draft name.
    Moved,
    /// It is a message for a device-like file (no descriptor carries it).
    Deliver(Delivery),
    /// It breaks a message's rules (`error`): nothing is dispatched, the
    /// draft is kept, and `target`'s result says why, as for a write.
    Refused { target: Target, error: Error },
}

/// The file-type and permission bits a create asks for, less the umask.
fn created_perm(mode: u32, umask: u32) -> u16 {
    (mode & !umask & 0o7777) as u16
}

/// Who asks for a draft: thread `tid` of `uid` (primary group `gid`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) tid: u32,
}

/// A draft may not take a name the mount keeps for its own files (in
/// `pending/` and `sessions/`, every name).
const RESERVED: Refusal = refuse!(EPERM, "the mount keeps this name for its own files");

/// The caller has no draft of that name.
const NO_DRAFT: Refusal = refuse!(ENOENT, "no such draft");

/// `RENAME_NOREPLACE` onto a name that is there.
const NAME_TAKEN: Refusal = refuse!(EEXIST, "the name is taken (RENAME_NOREPLACE)");

impl XdevFs {
    /// Where a draft named `name` in directory `dir` (inode `dir_ino`)
    /// would be for `uid`, if drafts may be there at all.
    fn place(&self, dir_ino: INodeNo, dir: &Node, uid: u32, name: &str) -> Option<Place> {
        dir.holds_drafts().then(|| Place {
            dir: dir_ino,
            uid,
            name: name.to_string(),
        })
    }

    /// The draft `uid` has at `name` in directory `dir_ino`.
    pub(crate) fn draft_at(
        &self,
        dir_ino: INodeNo,
        dir: &Node,
        uid: u32,
        name: &str,
    ) -> Option<Arc<Draft>> {
        self.drafts.find(&self.place(dir_ino, dir, uid, name)?)
    }

    /// Whether directory `dir_ino` still exists (a decided item's
    /// directory does not): the drafts in it go.
    fn dir_exists(&self, dir_ino: INodeNo) -> bool {
        match self.inodes.node(dir_ino) {
            Some(Node::Root) => true,
            Some(Node::Item(id, _)) => self.session.is_pending(&id),
            _ => false,
        }
    }

    /// Creates (or, without `O_EXCL`, opens) the caller's draft `name` in
    /// directory `parent` with `mode` less `umask`, and opens it: its
    /// attributes and descriptor. A directory that is gone is `ENOENT`; a
    /// name that is not UTF-8, `EINVAL`.
    pub(crate) fn create(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
    ) -> Result<(FileAttr, FileHandle), Refusal> {
        name_fits(name)?;
        let dir = self.node(parent).ok_or(DIR_GONE)?;
        let name = name
            .to_str()
            .ok_or(refuse!(EINVAL, "a draft's name is UTF-8"))?;
        let draft = self.create_draft(caller, (parent, &dir), name, mode, umask, flags)?;
        let attr = draft.attr();
        Ok((attr, self.handles.insert(Handle::Draft(draft))))
    }

    /// Creates (or, without `O_EXCL`, opens) the caller's draft `name` in
    /// directory `parent`. Creating one takes what writing a device takes:
    /// being the mount's owner (or root).
    fn create_draft(
        &self,
        caller: Caller,
        parent: (INodeNo, &Node),
        name: &str,
        mode: u32,
        umask: u32,
        flags: i32,
    ) -> Result<Arc<Draft>, Refusal> {
        let (dir_ino, dir) = parent;
        if Inodes::is_reserved(dir, name) {
            return Err(RESERVED);
        }
        let place = self.place(dir_ino, dir, caller.uid, name).ok_or(refuse!(
            EPERM,
            "drafts are made only in the root and in a pending item's directory"
        ))?;
        if caller.uid != self.owner.uid && caller.uid != 0 {
            return Err(refuse!(
                EACCES,
                "only the mount's owner (or root) makes drafts"
            ));
        }
        let pid = self.who.pid(caller.tid);
        let creator = Creator::new(caller.uid, caller.gid, pid);
        let exclusive = flags & libc::O_EXCL != 0;
        let created = self.drafts.create(
            place,
            creator,
            created_perm(mode, umask),
            exclusive,
            || self.inodes.fresh_ino(),
            |dir| self.dir_exists(dir),
        )?;
        match created {
            Created::New(draft) => Ok(draft),
            Created::Existing(draft) => {
                if flags & libc::O_TRUNC != 0 {
                    self.drafts.set_len(&draft, 0)?;
                }
                Ok(draft)
            }
        }
    }

    /// Unlinks `name` in directory `parent` for `uid`: only a draft goes.
    pub(crate) fn unlink(&self, uid: u32, parent: INodeNo, name: &OsStr) -> Result<(), Refusal> {
        let dir = self.node(parent).ok_or(refuse!(
            EPERM,
            "only drafts are removed, and the directory is gone"
        ))?;
        let name = name.to_str().ok_or(refuse!(
            EPERM,
            "only drafts are removed, and a draft's name is UTF-8"
        ))?;
        self.unlink_draft(uid, (parent, &dir), name)
    }

    /// Removes the caller's draft `name`; the mount's own names stay.
    fn unlink_draft(&self, uid: u32, parent: (INodeNo, &Node), name: &str) -> Result<(), Refusal> {
        let (dir_ino, dir) = parent;
        let place = self.place(dir_ino, dir, uid, name).ok_or(refuse!(
            EPERM,
            "only drafts are removed, and this directory holds none"
        ))?;
        match self.drafts.remove(&place) {
            Some(_) => Ok(()),
            None if self.is_own_name(dir, name) => {
                Err(refuse!(EPERM, "the mount's own files are never removed"))
            }
            None => Err(NO_DRAFT),
        }
    }

    /// Whether `name` in `dir` is one of the mount's files.
    fn is_own_name(&self, dir: &Node, name: &str) -> bool {
        self.inodes
            .peek(dir, name, |id| self.session.is_pending(id))
            .is_some()
    }

    /// What renaming `name` in `parent` to `newname` in `newparent` does
    /// for `uid` (see [`XdevFs::plan_rename`]): a directory that is gone
    /// is `ENOENT`, a name that is not UTF-8 `EPERM`.
    pub(crate) fn rename(
        &self,
        uid: u32,
        (parent, name): (INodeNo, &OsStr),
        (newparent, newname): (INodeNo, &OsStr),
        flags: RenameFlags,
    ) -> Result<Renaming, Refusal> {
        name_fits(name)?;
        name_fits(newname)?;
        let (Some(from_dir), Some(to_dir)) = (self.node(parent), self.node(newparent)) else {
            return Err(DIR_GONE);
        };
        let (Some(name), Some(newname)) = (name.to_str(), newname.to_str()) else {
            return Err(refuse!(
                EPERM,
                "only drafts are renamed, and a draft's name is UTF-8"
            ));
        };
        self.plan_rename(
            uid,
            (parent, &from_dir, name),
            (newparent, &to_dir, newname),
            flags,
        )
    }

    /// What renaming `from` (in `from_dir`) to `to` (in `to_dir`) does.
    ///
    /// Only the caller's drafts move. Onto a device-like file, the draft's
    /// bytes are one message under the rules of a write (UTF-8; a draft
    /// never grows past 64 KiB, its writes stop there with `EFBIG`); a draft
    /// that is not UTF-8 is kept (`EINVAL`) and nothing is dispatched. A
    /// draft to be delivered is taken away here, so it is gone whatever the
    /// outcome. Onto any other file of the mount, `EPERM`, and the draft is
    /// kept.
    fn plan_rename(
        &self,
        uid: u32,
        from: (INodeNo, &Node, &str),
        to: (INodeNo, &Node, &str),
        flags: RenameFlags,
    ) -> Result<Renaming, Refusal> {
        let (from_ino, from_dir, from_name) = from;
        let (to_ino, to_dir, to_name) = to;
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            return Err(refuse!(
                EPERM,
                "a draft is renamed plainly: no exchange, no whiteout"
            ));
        }
        let source = self
            .place(from_ino, from_dir, uid, from_name)
            .ok_or(refuse!(
                EPERM,
                "only drafts are renamed, and this directory holds none"
            ))?;
        let Some(draft) = self.drafts.find(&source) else {
            return Err(if self.is_own_name(from_dir, from_name) {
                refuse!(EPERM, "the mount's own files are never renamed")
            } else {
                NO_DRAFT
            });
        };
        let is_pending = |id: &str| self.session.is_pending(id);
        match self.inodes.peek(to_dir, to_name, is_pending) {
            Some(_) if flags.contains(RenameFlags::RENAME_NOREPLACE) => Err(NAME_TAKEN),
            Some((_, node)) => match node.target() {
                Some(target) => self.take_for_delivery(&source, &draft, target),
                None => Err(refuse!(
                    EPERM,
                    "a draft replaces only a device-like file of the mount"
                )),
            },
            None => {
                let dest = self.place(to_ino, to_dir, uid, to_name).ok_or(refuse!(
                    EPERM,
                    "drafts move only to the root or a pending item's directory"
                ))?;
                if Inodes::is_reserved(to_dir, to_name) {
                    return Err(RESERVED);
                }
                if flags.contains(RenameFlags::RENAME_NOREPLACE)
                    && self.drafts.find(&dest).is_some()
                {
                    return Err(NAME_TAKEN);
                }
                self.drafts.rename(&source, dest)?;
                Ok(Renaming::Moved)
            }
        }
    }

    /// Takes the draft at `source` away as a message for `target`, if it
    /// is a valid one.
    fn take_for_delivery(
        &self,
        source: &Place,
        draft: &Draft,
        target: Target,
    ) -> Result<Renaming, Refusal> {
        if let Target::Item { id, .. } = &target {
            if self.session.is_in_progress(id) {
                // As for an open of that file: another decision of this
                // preview is under way.
                return Err(IN_PROGRESS);
            }
        }
        let bytes = draft.bytes();
        let text = match message_text(&bytes) {
            Ok(text) => text,
            Err(error) => return Ok(Renaming::Refused { target, error }),
        };
        self.drafts.remove(source);
        Ok(Renaming::Deliver(Delivery {
            target,
            text,
            bytes: bytes.len() as u64,
            fh: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;
    use crate::fs::testing::{
        assert_refusals, draft, ino_at, ino_of, owner, stage, Mount, RefusalCase, OWNER_UID,
    };

    const ROOT: INodeNo = INodeNo::ROOT;
    const GONE: INodeNo = INodeNo(9_999_999);
    /// A rename with no flag.
    const PLAIN: RenameFlags = RenameFlags::empty();

    /// A name that is not UTF-8.
    fn not_utf8() -> &'static OsStr {
        OsStr::from_bytes(b"\xff")
    }

    /// The owner's create of `name` in `dir`, refused or not.
    fn create(fs: &XdevFs, dir: INodeNo, name: &OsStr) -> Option<Refusal> {
        fs.create(owner(), dir, name, 0o100600, 0, 0).err()
    }

    /// The owner's rename of `from` to `to`, refused or not.
    fn rename(
        fs: &XdevFs,
        from: (INodeNo, &str),
        to: (INodeNo, &str),
        flags: RenameFlags,
    ) -> Option<Refusal> {
        let from = (from.0, OsStr::new(from.1));
        let to = (to.0, OsStr::new(to.1));
        fs.rename(OWNER_UID, from, to, flags).err()
    }

    /// A fresh draft `a.tmp` in the root, renamed by the owner to `to`.
    fn rename_draft(fs: &XdevFs, to: (INodeNo, &str), flags: RenameFlags) -> Option<Refusal> {
        draft(fs, ROOT, "a.tmp");
        rename(fs, (ROOT, "a.tmp"), to, flags)
    }

    /// Each refusal of a create, an unlink or a rename, on a fresh mount:
    /// its errno and its rule.
    #[test]
    fn each_refusal_of_a_draft_operation_names_its_rule() {
        let cases: &[RefusalCase<XdevFs>] = &[
            // create
            (
                "create of a name that is not UTF-8",
                |fs| create(fs, ROOT, not_utf8()),
                refuse!(EINVAL, "a draft's name is UTF-8"),
            ),
            (
                "create of a name of the root's own",
                |fs| create(fs, ROOT, OsStr::new("status")),
                refuse!(EPERM, "the mount keeps this name for its own files"),
            ),
            (
                "create in pending/, whose every name is the mount's",
                |fs| create(fs, ino_of(fs, "pending"), OsStr::new("note.tmp")),
                refuse!(EPERM, "the mount keeps this name for its own files"),
            ),
            (
                "create in an item's directory as its agent session lists it",
                |fs| {
                    let id = stage(fs, Some("s1"));
                    let scoped = ino_at(fs, &["sessions", "s1", "pending", &id]);
                    create(fs, scoped, OsStr::new("note.tmp"))
                },
                refuse!(
                    EPERM,
                    "drafts are made only in the root and in a pending item's directory"
                ),
            ),
            (
                "create by a uid that does not own the mount",
                |fs| {
                    let other = Caller {
                        uid: OWNER_UID + 1,
                        ..owner()
                    };
                    fs.create(other, ROOT, OsStr::new("note.tmp"), 0o100600, 0, 0)
                        .err()
                },
                refuse!(EACCES, "only the mount's owner (or root) makes drafts"),
            ),
            (
                "create in a directory that is gone (the lookup's rule)",
                |fs| create(fs, GONE, OsStr::new("note.tmp")),
                refuse!(ENOENT, "the directory is gone"),
            ),
            // unlink
            (
                "unlink in a directory that is gone",
                |fs| fs.unlink(OWNER_UID, GONE, OsStr::new("note.tmp")).err(),
                refuse!(EPERM, "only drafts are removed, and the directory is gone"),
            ),
            (
                "unlink of a name that is not UTF-8",
                |fs| fs.unlink(OWNER_UID, ROOT, not_utf8()).err(),
                refuse!(
                    EPERM,
                    "only drafts are removed, and a draft's name is UTF-8"
                ),
            ),
            (
                "unlink in pending/",
                |fs| {
                    let pending = ino_of(fs, "pending");
                    fs.unlink(OWNER_UID, pending, OsStr::new("x")).err()
                },
                refuse!(
                    EPERM,
                    "only drafts are removed, and this directory holds none"
                ),
            ),
            (
                "unlink of status",
                |fs| fs.unlink(OWNER_UID, ROOT, OsStr::new("status")).err(),
                refuse!(EPERM, "the mount's own files are never removed"),
            ),
            (
                "unlink of a draft that is not there",
                |fs| fs.unlink(OWNER_UID, ROOT, OsStr::new("note.tmp")).err(),
                refuse!(ENOENT, "no such draft"),
            ),
            // rename
            (
                "rename of a name that is not UTF-8",
                |fs| {
                    let to = (ROOT, OsStr::new("note.tmp"));
                    let renamed = fs.rename(OWNER_UID, (ROOT, not_utf8()), to, PLAIN);
                    renamed.err()
                },
                refuse!(
                    EPERM,
                    "only drafts are renamed, and a draft's name is UTF-8"
                ),
            ),
            (
                "rename exchanging two names",
                |fs| {
                    draft(fs, ROOT, "b.tmp");
                    rename_draft(fs, (ROOT, "b.tmp"), RenameFlags::RENAME_EXCHANGE)
                },
                refuse!(
                    EPERM,
                    "a draft is renamed plainly: no exchange, no whiteout"
                ),
            ),
            (
                "rename leaving a whiteout",
                |fs| rename_draft(fs, (ROOT, "b.tmp"), RenameFlags::RENAME_WHITEOUT),
                refuse!(
                    EPERM,
                    "a draft is renamed plainly: no exchange, no whiteout"
                ),
            ),
            (
                "rename out of pending/",
                |fs| {
                    let pending = ino_of(fs, "pending");
                    rename(fs, (pending, "x"), (ROOT, "note.tmp"), PLAIN)
                },
                refuse!(
                    EPERM,
                    "only drafts are renamed, and this directory holds none"
                ),
            ),
            (
                "rename of status",
                |fs| rename(fs, (ROOT, "status"), (ROOT, "elsewhere"), PLAIN),
                refuse!(EPERM, "the mount's own files are never renamed"),
            ),
            (
                "rename of a draft that is not there",
                |fs| rename(fs, (ROOT, "note.tmp"), (ROOT, "other.tmp"), PLAIN),
                refuse!(ENOENT, "no such draft"),
            ),
            (
                "rename onto resolve, not replacing",
                |fs| rename_draft(fs, (ROOT, "resolve"), RenameFlags::RENAME_NOREPLACE),
                refuse!(EEXIST, "the name is taken (RENAME_NOREPLACE)"),
            ),
            (
                "rename onto another draft, not replacing",
                |fs| {
                    draft(fs, ROOT, "b.tmp");
                    rename_draft(fs, (ROOT, "b.tmp"), RenameFlags::RENAME_NOREPLACE)
                },
                refuse!(EEXIST, "the name is taken (RENAME_NOREPLACE)"),
            ),
            (
                "rename onto status",
                |fs| rename_draft(fs, (ROOT, "status"), PLAIN),
                refuse!(
                    EPERM,
                    "a draft replaces only a device-like file of the mount"
                ),
            ),
            (
                "rename into pending/",
                |fs| rename_draft(fs, (ino_of(fs, "pending"), "a.tmp"), PLAIN),
                refuse!(
                    EPERM,
                    "drafts move only to the root or a pending item's directory"
                ),
            ),
            (
                "rename onto plan, hidden on a mount without a plan desk",
                |fs| rename_draft(fs, (ROOT, "plan"), PLAIN),
                refuse!(EPERM, "the mount keeps this name for its own files"),
            ),
            (
                "rename onto an item's resolve while its decision is under way",
                |fs| {
                    let id = stage(fs, None);
                    let item = ino_at(fs, &["pending", &id]);
                    let _claimed = fs.session.claim(&id);
                    rename_draft(fs, (item, "resolve"), PLAIN)
                },
                refuse!(EBUSY, "a decision of this preview is under way"),
            ),
            (
                "rename in a directory that is gone (the lookup's rule)",
                |fs| rename(fs, (GONE, "a.tmp"), (ROOT, "b.tmp"), PLAIN),
                refuse!(ENOENT, "the directory is gone"),
            ),
        ];
        assert_refusals(include_str!("draft_ops.rs"), cases, |trigger| {
            trigger(&Mount::new().fs)
        });
    }

    #[test]
    fn a_created_file_gets_its_mode_less_the_umask() {
        assert_eq!(created_perm(0o100666, 0o022), 0o644);
        assert_eq!(created_perm(0o100600, 0o077), 0o600);
    }
}
