//! What a directory lists, and to whom: the mount's files that exist right
//! now, and the asking uid's own drafts; and what a readdirplus tells the
//! kernel of each entry.

use std::sync::Arc;
use std::time::Duration;

use fuser::{FileAttr, FileHandle, INodeNo};

use super::lookup::DIR_GONE;
use crate::fs::handles::table::{Handle, Listing};
use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::{Node, SessionFile};

/// Whether listing `name` (`node`) by readdirplus counts as a lookup of
/// it: the kernel counts every entry but the dots, and drafts keep no
/// count (they go when removed).
fn counts_as_lookup(name: &str, node: &Node) -> bool {
    name != "." && name != ".." && *node != Node::Draft
}

impl XdevFs {
    /// Opens directory `ino`: `ENOTDIR` for a file, `ENOENT` if gone.
    pub(crate) fn opendir(&self, ino: INodeNo) -> Result<FileHandle, Refusal> {
        match self.node(ino) {
            Some(node) if node.kind() == fuser::FileType::Directory => {
                Ok(self.handles.insert(Handle::Directory(None)))
            }
            Some(_) => Err(refuse!(ENOTDIR, "a file is not opened as a directory")),
            None => Err(DIR_GONE),
        }
    }

    /// Closes directory descriptor `fh`.
    pub(crate) fn releasedir(&self, fh: FileHandle) {
        self.handles.remove(fh);
    }

    /// The listing directory `ino` reads through `fh` from `offset`: one
    /// per pass (taken at offset 0, as a rewind does), so that a long
    /// directory is listed in O(n), in a stable order.
    pub(crate) fn pass_listing(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        uid: u32,
    ) -> Result<Arc<Listing>, Refusal> {
        let dir = self.node(ino).ok_or(DIR_GONE)?;
        self.handles
            .listing(fh, offset, || Arc::new(self.listing(ino, &dir, uid)))
            .ok_or(refuse!(EBADF, "not a directory descriptor of this mount"))
    }

    /// What a readdirplus tells the kernel of entry `ino` (`node`) listed
    /// to `uid`: its attributes, and how long it may keep them and the name.
    pub(crate) fn listed_attr(&self, ino: INodeNo, node: &Node, uid: u32) -> (FileAttr, Duration) {
        (self.attr(ino, node, uid), node.listed_ttl())
    }

    /// Entry `name` (`ino`, `node`) went to the kernel with its attributes:
    /// the kernel counts that as a lookup, and so does the inode table.
    pub(crate) fn note_listed(&self, ino: INodeNo, name: &str, node: &Node) {
        if counts_as_lookup(name, node) {
            self.inodes.count_lookup(ino);
        }
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
