//! The mount's inodes: a root directory holding three devices and four
//! status files. All of them are static, so their inode numbers never change.

use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileType, INodeNo};

use crate::dispatch::Device;
use crate::fs::status::StatusFile;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    Root,
    Device(Device),
    Status(StatusFile),
}

/// The root's entries, in listing order; entry `i` has inode `i + 2`.
const ENTRIES: [(&str, Node); 7] = [
    ("resolve", Node::Device(Device::Resolve)),
    ("reject", Node::Device(Device::Reject)),
    ("propose", Node::Device(Device::Propose)),
    ("status", Node::Status(StatusFile::Status)),
    ("status.json", Node::Status(StatusFile::StatusJson)),
    ("last", Node::Status(StatusFile::Last)),
    ("reminder", Node::Status(StatusFile::Reminder)),
];

/// Static names and attributes never change, so the kernel may cache them
/// for as long as the mount lives; this is "long" without overflowing the
/// kernel's time arithmetic.
pub(crate) const STATIC_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Status files change with every decision: their attributes are never cached.
pub(crate) const FRESH_TTL: Duration = Duration::ZERO;

/// Device block size: at least 8192, so `echo` of up to 8 KiB arrives in
/// one write.
const DEVICE_BLOCK_SIZE: u32 = 8192;

impl Node {
    pub(crate) fn by_ino(ino: INodeNo) -> Option<Node> {
        if ino == INodeNo::ROOT {
            return Some(Node::Root);
        }
        let index = usize::try_from(ino.0.checked_sub(2)?).ok()?;
        ENTRIES.get(index).map(|(_, node)| *node)
    }

    pub(crate) fn by_name(name: &str) -> Option<(INodeNo, Node)> {
        ENTRIES
            .iter()
            .position(|(entry, _)| *entry == name)
            .map(|index| (INodeNo(index as u64 + 2), ENTRIES[index].1))
    }

    /// The root's entries with their inode numbers, in listing order.
    pub(crate) fn entries() -> impl Iterator<Item = (INodeNo, &'static str, Node)> {
        ENTRIES
            .iter()
            .enumerate()
            .map(|(index, (name, node))| (INodeNo(index as u64 + 2), *name, *node))
    }

    pub(crate) fn kind(self) -> FileType {
        match self {
            Node::Root => FileType::Directory,
            _ => FileType::RegularFile,
        }
    }

    /// How long the kernel may cache this node's attributes.
    pub(crate) fn attr_ttl(self) -> Duration {
        match self {
            Node::Status(_) => FRESH_TTL,
            _ => STATIC_TTL,
        }
    }

    /// Devices are for the mounting user only; status files for everyone
    /// the mount lets in.
    fn perm(self) -> u16 {
        match self {
            Node::Root => 0o755,
            Node::Device(_) => 0o600,
            Node::Status(_) => 0o444,
        }
    }

    pub(crate) fn attr(self, ino: INodeNo, size: u64, owner: Owner) -> FileAttr {
        let blksize = match self {
            Node::Device(_) => DEVICE_BLOCK_SIZE,
            _ => 4096,
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: owner.since,
            mtime: owner.since,
            ctime: owner.since,
            crtime: owner.since,
            kind: self.kind(),
            perm: self.perm(),
            nlink: if self == Node::Root { 2 } else { 1 },
            uid: owner.uid,
            gid: owner.gid,
            rdev: 0,
            blksize,
            flags: 0,
        }
    }
}

/// Who owns the mount's files, and since when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) since: SystemTime,
}

impl Owner {
    /// The user running this process, from now.
    pub(crate) fn current() -> Self {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Owner {
            uid,
            gid,
            since: SystemTime::now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_inodes_agree() {
        for (ino, name, node) in Node::entries() {
            assert_eq!(Node::by_name(name), Some((ino, node)));
            assert_eq!(Node::by_ino(ino), Some(node));
        }
        assert_eq!(Node::by_ino(INodeNo::ROOT), Some(Node::Root));
        assert_eq!(Node::by_ino(INodeNo(99)), None);
        assert_eq!(Node::by_name("nope"), None);
    }
}
