//! What an inode or a name is right now: a decided item's files are gone,
//! an item's `detail` exists only when it carries one, and a draft exists
//! only for its own uid.

use std::ffi::OsStr;

use fuser::{Errno, FileAttr, INodeNo};

use super::nodes::{ItemFile, Node, SessionFile};
use super::Shared;

/// What a lookup found: its attributes, and how long the kernel may keep
/// them and the name.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) attr: FileAttr,
    pub(super) attr_ttl: std::time::Duration,
    pub(super) entry_ttl: std::time::Duration,
}

/// Whether `name` in `dir` is an item's `detail` that does not exist.
/// Asked before the table counts a lookup the kernel would never forget.
fn is_missing_detail(dir: &Node, name: &str, has_detail: impl FnOnce(&str) -> bool) -> bool {
    match dir {
        Node::Item(id, ItemFile::Dir | ItemFile::Scoped) => name == "detail" && !has_detail(id),
        _ => false,
    }
}

/// The longest name a directory of the mount holds, in bytes; what `statfs`
/// reports, as on most Linux filesystems.
pub(super) const NAME_MAX: usize = 255;

/// `ENAMETOOLONG` for a name longer than [`NAME_MAX`] bytes (the kernel
/// lets names up to 1024 bytes through to a FUSE filesystem).
pub(super) fn name_fits(name: &OsStr) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

impl Shared {
    /// What `ino` is, if it (still) exists: a decided item is gone, and so
    /// is a draft once renamed onto a device or removed.
    pub(super) fn node(&self, ino: INodeNo) -> Option<Node> {
        let Some(node) = self.inodes.node(ino) else {
            return self.drafts.get(ino).map(|_| Node::Draft);
        };
        self.exists(&node).then_some(node)
    }

    /// Whether a node of the table exists right now: a pending item's files
    /// while it is pending, and its `detail` only when it carries one.
    pub(super) fn exists(&self, node: &Node) -> bool {
        match node {
            Node::Item(id, ItemFile::Detail) => self.session.has_detail(id),
            Node::Item(id, _) => self.session.is_pending(id),
            _ => true,
        }
    }

    /// Looks `name` up in directory `parent` for thread `tid` of `uid`:
    /// the mount's files, then that uid's drafts; anything else (or a name
    /// that is not UTF-8) is `ENOENT`.
    pub(super) fn lookup(
        &self,
        parent: INodeNo,
        name: &OsStr,
        uid: u32,
        tid: u32,
    ) -> Result<Entry, Errno> {
        name_fits(name)?;
        let (Some(dir), Some(name)) = (self.node(parent), name.to_str()) else {
            return Err(Errno::ENOENT);
        };
        // A lookup where devices live: the kernel's retry after `ESTALE`.
        if matches!(dir, Node::Root | Node::AgentSession(_, SessionFile::Dir)) {
            self.busy.looked_up(tid);
        }
        if is_missing_detail(&dir, name, |id| self.session.has_detail(id)) {
            return Err(Errno::ENOENT);
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
            .lookup(&dir, name, is_pending, |ino| self.busy.is_writing(ino))
            .or_else(|| {
                let draft = self.draft_at(parent, &dir, uid, name)?;
                Some((draft.ino(), Node::Draft))
            })
            .ok_or(Errno::ENOENT)?;
        let (attr, attr_ttl) = self.attr_for((uid, tid), ino, &node);
        Ok(Entry {
            attr,
            attr_ttl,
            entry_ttl: node.entry_ttl(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn an_items_detail_is_missing_only_when_it_carries_none() {
        let dir = Node::Item(Arc::from("p1"), ItemFile::Dir);
        assert!(is_missing_detail(&dir, "detail", |_| false));
        assert!(!is_missing_detail(&dir, "detail", |_| true));
        assert!(!is_missing_detail(&dir, "label", |_| false));
        assert!(!is_missing_detail(&Node::Root, "detail", |_| false));
    }
}
