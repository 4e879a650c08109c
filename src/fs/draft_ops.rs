//! What each file operation on a draft decides: who may create one where,
//! what a rename does (move a draft, or deliver it to a device), and what
//! an unlink or a setattr may change. Each returns an errno for the
//! adapter to answer with; the store itself is [`super::drafts`].

use std::ffi::OsStr;
use std::sync::Arc;

use fuser::{Errno, FileAttr, FileHandle, INodeNo, RenameFlags};

use crate::error::Error;

use super::drafts::{Created, Creator, Draft, Place};
use super::handles::Handle;
use super::lookup::name_fits;
use super::nodes::{Inodes, Node};
use super::setattr::AttrChange;
use super::target::Target;
use super::Shared;
use crate::device::message_text;

/// What a rename of a draft does.
#[derive(Debug)]
pub(super) enum Renaming {
    /// It moved to another draft name.
    Moved,
    /// It is a message for `target`: `text`, from a draft of `bytes` bytes.
    Deliver {
        target: Target,
        text: String,
        bytes: u64,
    },
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
pub(super) struct Caller {
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) tid: u32,
}

impl Shared {
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
    pub(super) fn draft_at(
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
    pub(super) fn create(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
    ) -> Result<(FileAttr, FileHandle), Errno> {
        name_fits(name)?;
        let dir = self.node(parent).ok_or(Errno::ENOENT)?;
        let name = name.to_str().ok_or(Errno::EINVAL)?;
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
    ) -> Result<Arc<Draft>, Errno> {
        let (dir_ino, dir) = parent;
        if Inodes::is_reserved(dir, name) {
            return Err(Errno::EPERM);
        }
        let place = self
            .place(dir_ino, dir, caller.uid, name)
            .ok_or(Errno::EPERM)?;
        if caller.uid != self.owner.uid && caller.uid != 0 {
            return Err(Errno::EACCES);
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

    /// Changes a draft's size, mode, owner or times, as setattr asks.
    pub(super) fn change_draft(&self, draft: &Draft, change: &AttrChange) -> Result<(), Errno> {
        if let Some(size) = change.size {
            self.drafts.set_len(draft, size)?;
        }
        draft.change(change);
        Ok(())
    }

    /// Unlinks `name` in directory `parent` for `uid`: only a draft goes.
    pub(super) fn unlink(&self, uid: u32, parent: INodeNo, name: &OsStr) -> Result<(), Errno> {
        let (Some(dir), Some(name)) = (self.node(parent), name.to_str()) else {
            return Err(Errno::EPERM);
        };
        self.unlink_draft(uid, (parent, &dir), name)
    }

    /// Removes the caller's draft `name`; the mount's own names stay.
    fn unlink_draft(&self, uid: u32, parent: (INodeNo, &Node), name: &str) -> Result<(), Errno> {
        let (dir_ino, dir) = parent;
        let place = self.place(dir_ino, dir, uid, name).ok_or(Errno::EPERM)?;
        match self.drafts.remove(&place) {
            Some(_) => Ok(()),
            None if self.is_own_name(dir, name) => Err(Errno::EPERM),
            None => Err(Errno::ENOENT),
        }
    }

    /// Whether `name` in `dir` is one of the mount's files.
    fn is_own_name(&self, dir: &Node, name: &str) -> bool {
        self.inodes
            .peek(dir, name, |id| self.session.is_pending(id))
            .is_some()
    }

    /// What renaming `name` in `parent` to `newname` in `newparent` does
    /// for `uid` (see [`Shared::plan_rename`]): a directory that is gone
    /// is `ENOENT`, a name that is not UTF-8 `EPERM`.
    pub(super) fn rename(
        &self,
        uid: u32,
        (parent, name): (INodeNo, &OsStr),
        (newparent, newname): (INodeNo, &OsStr),
        flags: RenameFlags,
    ) -> Result<Renaming, Errno> {
        name_fits(name)?;
        name_fits(newname)?;
        let (Some(from_dir), Some(to_dir)) = (self.node(parent), self.node(newparent)) else {
            return Err(Errno::ENOENT);
        };
        let (Some(name), Some(newname)) = (name.to_str(), newname.to_str()) else {
            return Err(Errno::EPERM);
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
    /// that is not UTF-8 is kept (`EINVAL`) and nothing is dispatched. A draft to be delivered is taken away here,
    /// so it is gone whatever the outcome. Onto any other file of the
    /// mount, `EPERM`, and the draft is kept.
    fn plan_rename(
        &self,
        uid: u32,
        from: (INodeNo, &Node, &str),
        to: (INodeNo, &Node, &str),
        flags: RenameFlags,
    ) -> Result<Renaming, Errno> {
        let (from_ino, from_dir, from_name) = from;
        let (to_ino, to_dir, to_name) = to;
        if flags.contains(RenameFlags::RENAME_EXCHANGE)
            || flags.contains(RenameFlags::RENAME_WHITEOUT)
        {
            return Err(Errno::EPERM);
        }
        let source = self
            .place(from_ino, from_dir, uid, from_name)
            .ok_or(Errno::EPERM)?;
        let Some(draft) = self.drafts.find(&source) else {
            return Err(if self.is_own_name(from_dir, from_name) {
                Errno::EPERM
            } else {
                Errno::ENOENT
            });
        };
        let is_pending = |id: &str| self.session.is_pending(id);
        match self.inodes.peek(to_dir, to_name, is_pending) {
            Some(_) if flags.contains(RenameFlags::RENAME_NOREPLACE) => Err(Errno::EEXIST),
            Some((_, node)) => match node.target() {
                Some(target) => self.take_for_delivery(&source, &draft, target),
                None => Err(Errno::EPERM),
            },
            None => {
                let dest = self
                    .place(to_ino, to_dir, uid, to_name)
                    .ok_or(Errno::EPERM)?;
                if Inodes::is_reserved(to_dir, to_name) {
                    return Err(Errno::EPERM);
                }
                if flags.contains(RenameFlags::RENAME_NOREPLACE)
                    && self.drafts.find(&dest).is_some()
                {
                    return Err(Errno::EEXIST);
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
    ) -> Result<Renaming, Errno> {
        if let Target::Item { id, .. } = &target {
            if self.session.is_in_progress(id) {
                // As for an open of that file: another decision of this
                // preview is under way.
                return Err(Errno::EBUSY);
            }
        }
        let bytes = draft.bytes();
        let text = match message_text(&bytes) {
            Ok(text) => text,
            Err(error) => return Ok(Renaming::Refused { target, error }),
        };
        self.drafts.remove(source);
        Ok(Renaming::Deliver {
            target,
            text,
            bytes: bytes.len() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_file_gets_its_mode_less_the_umask() {
        assert_eq!(created_perm(0o100666, 0o022), 0o644);
        assert_eq!(created_perm(0o100600, 0o077), 0o600);
    }
}
