//! What a getattr decides: the attributes a process sees of a node, and
//! how long the kernel may keep them. A status file's size is its
//! content's, a device's is the most one message holds, and a process that
//! has just delivered a message sees the device's size as the bytes it
//! wrote (see [`crate::fs::handles::writer_sizes`]).

use std::time::Duration;

use fuser::{FileAttr, INodeNo};

use super::lookup::INODE_GONE;
use crate::device::MAX_MESSAGE;
use crate::fs::refusal::Refusal;
use crate::fs::state::XdevFs;
use crate::fs::tree::node::{ItemFile, Node, SessionFile, FRESH_TTL};
use crate::fs::tree::target::Target;

impl XdevFs {
    /// A node's attributes as user `uid` sees them. A status file's size
    /// is that of its content now for the owner; other users get the size
    /// of the rendering they share (see [`XdevFs::read`]), and never make
    /// one here: a `stat` loop over a large `status.json` must not render
    /// it on the request loop.
    pub(super) fn attr(&self, ino: INodeNo, node: &Node, uid: u32) -> FileAttr {
        if *node == Node::Draft {
            if let Some(draft) = self.drafts.get(ino) {
                return draft.attr();
            }
        }
        let size = match node {
            Node::Text(file) if uid != self.owner.uid => self.renders.others_len(*file),
            Node::Text(_)
            | Node::Item(
                _,
                ItemFile::Label
                | ItemFile::Source
                | ItemFile::Detail
                | ItemFile::Diff
                | ItemFile::Cwd,
            )
            | Node::AgentSession(_, SessionFile::Status) => {
                self.text(node).map_or(0, |text| text.len() as u64)
            }
            Node::Log => self.journal.byte_len() as u64,
            // A device "holds" up to one message. The kernel serialises
            // every direct write that extends a file; with this size a
            // plain O_WRONLY writer's message never does. (`>` resets the
            // kernel's size to 0, so O_TRUNC writers of one inode still
            // take turns; `busy` keeps them off a slow one.)
            _ if node.target().is_some() => MAX_MESSAGE as u64,
            _ => 0,
        };
        node.attr(ino, size, self.owner)
    }

    /// A node's attributes as thread `tid` should see them, and
    /// how long the kernel may keep them. A process that has just delivered
    /// a message to a device sees the device's size as the bytes it wrote,
    /// as an ordinary file would show, uncached.
    pub(super) fn attr_for(
        &self,
        (uid, tid): (u32, u32),
        ino: INodeNo,
        node: &Node,
    ) -> (FileAttr, Duration) {
        let mut attr = self.attr(ino, node, uid);
        let ttl = node.attr_ttl();
        // Most of the time nobody has delivered anything lately: no lookup
        // of the process then.
        let Some(target) = node.target().filter(|_| !self.writer_sizes.is_empty()) else {
            return (attr, ttl);
        };
        let pid = self.who.pid(tid);
        match self.writer_sizes.size_for(&target, pid) {
            Some(size) => {
                attr.size = size;
                attr.blocks = size.div_ceil(512);
                (attr, FRESH_TTL)
            }
            None => (attr, ttl),
        }
    }

    /// The attributes of `ino` for a getattr: a node that exists, or a
    /// draft whose name is gone but which is still open (an `fstat`).
    pub(crate) fn getattr(
        &self,
        ino: INodeNo,
        (uid, tid): (u32, u32),
    ) -> Result<(FileAttr, Duration), Refusal> {
        match self.node(ino) {
            Some(node) => Ok(self.attr_for((uid, tid), ino, &node)),
            None => match self.handles.draft_by_ino(ino) {
                Some(draft) => Ok((draft.attr(), FRESH_TTL)),
                None => Err(INODE_GONE),
            },
        }
    }

    /// Thread `tid` reads `target` now: it no longer sees the
    /// size of what it delivered there.
    pub(super) fn forget_delivery(&self, tid: u32, target: &Target) {
        if !self.writer_sizes.is_empty() {
            let pid = self.who.pid(tid);
            self.writer_sizes.forget(target, pid);
        }
    }
}
