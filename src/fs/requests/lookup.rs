//! What a lookup finds, and what a forget lets go: a decided item's files
//! are gone, an item's `detail` or `diff` exists only when it carries one, and a
//! draft exists only for its own uid. Each name that finds nothing says
//! why.

use std::ffi::OsStr;

use fuser::{FileAttr, INodeNo};

use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::{ItemFile, Node, SessionFile};

/// What a lookup found: its attributes, and how long the kernel may keep
/// them and the name.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) attr: FileAttr,
    pub(crate) attr_ttl: std::time::Duration,
    pub(crate) entry_ttl: std::time::Duration,
}

/// Whether `name` in `dir` is an item's optional file (`detail`, `diff`)
/// that does not exist, by `has(id, name)`. Asked before the table counts
/// a lookup the kernel would never forget.
fn is_missing_optional(dir: &Node, name: &str, has: impl FnOnce(&str, &str) -> bool) -> bool {
    match dir {
        Node::Item(id, ItemFile::Dir | ItemFile::Scoped) => {
            OPTIONAL_ITEM_FILES.contains(&name) && !has(id, name)
        }
        _ => false,
    }
}

/// The files of an item's directory that only some previews carry.
const OPTIONAL_ITEM_FILES: [&str; 3] = ["detail", "diff", "cwd"];

/// An inode that no longer exists: a decided item's, a removed draft's.
pub(crate) const INODE_GONE: Refusal = refuse!(ENOENT, "the inode is gone");

/// A directory that no longer exists (a decided item's): nothing is in it.
pub(crate) const DIR_GONE: Refusal = refuse!(ENOENT, "the directory is gone");

/// The longest name a directory of the mount holds, in bytes; what `statfs`
/// reports, as on most Linux filesystems.
pub(crate) const NAME_MAX: usize = 255;

/// `ENAMETOOLONG` for a name longer than [`NAME_MAX`] bytes (the kernel
/// lets names up to 1024 bytes through to a FUSE filesystem).
pub(crate) fn name_fits(name: &OsStr) -> Result<(), Refusal> {
    if name.len() > NAME_MAX {
        return Err(refuse!(ENAMETOOLONG, "a name holds at most 255 bytes"));
    }
    Ok(())
}

impl XdevFs {
    /// Looks `name` up in directory `parent` for thread `tid` of `uid`:
    /// the mount's files, then that uid's drafts; anything else (or a name
    /// that is not UTF-8) is `ENOENT`.
    pub(crate) fn lookup(
        &self,
        parent: INodeNo,
        name: &OsStr,
        uid: u32,
        tid: u32,
    ) -> Result<Entry, Refusal> {
        name_fits(name)?;
        let dir = self.node(parent).ok_or(DIR_GONE)?;
        let name = name.to_str().ok_or(refuse!(
            ENOENT,
            "a name that is not UTF-8 names nothing here"
        ))?;
        // A lookup where devices live: the kernel's retry after `ESTALE`.
        if matches!(dir, Node::Root | Node::AgentSession(_, SessionFile::Dir)) {
            self.busy.looked_up(tid);
        }
        let has = |id: &str, name: &str| match name {
            "detail" => self.session.has_detail(id),
            "diff" => self.session.has_diff(id),
            _ => self.session.cwd(id).is_some(),
        };
        if is_missing_optional(&dir, name, has) {
            return Err(refuse!(
                ENOENT,
                "a preview without a detail, diff or cwd has no such file"
            ));
        }
        // Under `sessions/<session-id>/pending/`, only that session's
        // previews are there.
        let is_pending = |id: &str| match &dir {
            Node::AgentSession(session, SessionFile::Pending) => {
                self.session.belongs_to(id, session)
            }
            _ => self.session.is_pending(id),
        };
        let (ino, node) = self
            .inodes
            .lookup(&dir, name, is_pending, |ino| self.busy.is_held(ino))
            .or_else(|| {
                let draft = self.draft_at(parent, &dir, uid, name)?;
                Some((draft.ino(), Node::Draft))
            })
            .ok_or(refuse!(ENOENT, "no such name here"))?;
        let (attr, attr_ttl) = self.attr_for((uid, tid), ino, &node);
        Ok(Entry {
            attr,
            attr_ttl,
            entry_ttl: node.entry_ttl(),
        })
    }

    /// The kernel forgot `nlookup` lookups of `ino`: an inode it no longer
    /// knows may leave the table (see [`crate::fs::tree::inodes::Inodes::forget`]).
    pub(crate) fn forget(&self, ino: INodeNo, nlookup: u64) {
        let session = &self.session;
        self.inodes
            .forget(ino, nlookup, |id| session.is_pending(id));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn an_items_detail_or_diff_is_missing_only_when_it_carries_none() {
        let dir = Node::Item(Arc::from("p1"), ItemFile::Dir);
        for optional in OPTIONAL_ITEM_FILES {
            assert!(is_missing_optional(&dir, optional, |_, _| false));
            assert!(!is_missing_optional(&dir, optional, |_, _| true));
            assert!(!is_missing_optional(&Node::Root, optional, |_, _| false));
        }
        assert!(!is_missing_optional(&dir, "label", |_, _| false));
    }
}
