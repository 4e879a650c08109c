//! What a directory lists, and to whom: the mount's files that exist right
//! now, and the asking uid's own drafts.

use std::sync::Arc;

use fuser::{Errno, FileHandle, INodeNo};

use super::handles::{Handle, Listing};
use super::nodes::{Node, SessionFile};
use super::Shared;

/// Whether listing `name` (`node`) by readdirplus counts as a lookup of
/// it: the kernel counts every entry but the dots, and drafts keep no
/// count (they go when removed).
pub(super) fn counts_as_lookup(name: &str, node: &Node) -> bool {
    name != "." && name != ".." && *node != Node::Draft
}

impl Shared {
    /// Opens directory `ino`: `ENOTDIR` for a file, `ENOENT` if gone.
    pub(super) fn opendir(&self, ino: INodeNo) -> Result<FileHandle, Errno> {
        match self.node(ino) {
            Some(node) if node.kind() == fuser::FileType::Directory => {
                Ok(self.handles.insert(Handle::Directory(None)))
            }
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    /// The listing directory `ino` reads through `fh` from `offset`: one
    /// per pass (taken at offset 0, as a rewind does), so that a long
    /// directory is listed in O(n), in a stable order.
    pub(super) fn pass_listing(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        uid: u32,
    ) -> Result<Arc<Listing>, Errno> {
        let dir = self.node(ino).ok_or(Errno::ENOENT)?;
        self.handles
            .listing(fh, offset, || Arc::new(self.listing(ino, &dir, uid)))
            .ok_or(Errno::EBADF)
    }

    /// What directory `dir` (inode `ino`) lists right now to `uid`: its
    /// files, and that uid's drafts.
    fn listing(&self, ino: INodeNo, dir: &Node, uid: u32) -> Listing {
        // What `dir` lists of the session: its agent sessions, one
        // session's previews, or every preview.
        let pending_ids = || match dir {
            Node::SessionsDir => self
                .session
                .pending_sessions()
                .into_iter()
                .map(|summary| summary.id)
                .collect(),
            Node::AgentSession(session, SessionFile::Pending) => self
                .session
                .pending_in(session)
                .into_iter()
                .map(|info| info.id)
                .collect(),
            _ => self
                .session
                .pending()
                .into_iter()
                .map(|info| info.id)
                .collect(),
        };
        let dots = [
            (ino, ".".to_string(), dir.clone()),
            (INodeNo::ROOT, "..".to_string(), Node::Root),
        ];
        let drafts = self
            .drafts
            .listed(ino, uid)
            .into_iter()
            .map(|(draft, name)| (draft, name, Node::Draft));
        dots.into_iter()
            .chain(
                self.inodes
                    .entries(dir, pending_ids)
                    .into_iter()
                    .filter(|(_, _, node)| self.exists(node)),
            )
            .chain(drafts)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_counts_lookups_of_the_mounts_files_only() {
        assert!(counts_as_lookup("status", &Node::Root));
        assert!(!counts_as_lookup(".", &Node::Root));
        assert!(!counts_as_lookup("..", &Node::Root));
        assert!(!counts_as_lookup("note.tmp", &Node::Draft));
    }
}
