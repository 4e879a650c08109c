//! The mount's inodes: a root directory holding three devices and four
//! status files.
//!
//! Status files have fixed inode numbers. A device gets a fresh inode number
//! whenever a write on it has to wait for its handler (see
//! [`Inodes::renew`]); numbers are never reused while mounted.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileType, INodeNo};
use parking_lot::Mutex;

use crate::dispatch::Device;
use crate::fs::status::StatusFile;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    Root,
    Device(Device),
    Status(StatusFile),
}

/// The root's entries, in listing order.
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

/// The inode table of one mount.
#[derive(Debug)]
pub(crate) struct Inodes {
    inner: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    by_ino: HashMap<u64, Node>,
    current: HashMap<&'static str, u64>,
    next: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        let mut table = Table {
            by_ino: HashMap::from([(INodeNo::ROOT.0, Node::Root)]),
            current: HashMap::new(),
            next: INodeNo::ROOT.0 + 1,
        };
        for (name, node) in ENTRIES {
            table.assign(name, node);
        }
        Inodes {
            inner: Mutex::new(table),
        }
    }
}

impl Table {
    fn assign(&mut self, name: &'static str, node: Node) -> INodeNo {
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(ino, node);
        self.current.insert(name, ino);
        INodeNo(ino)
    }
}

impl Inodes {
    /// What `ino` is (an older inode of a device still answers).
    pub(crate) fn node(&self, ino: INodeNo) -> Option<Node> {
        self.inner.lock().by_ino.get(&ino.0).copied()
    }

    /// The current inode of a root entry.
    pub(crate) fn lookup(&self, name: &str) -> Option<(INodeNo, Node)> {
        let table = self.inner.lock();
        let ino = *table.current.get(name)?;
        table.by_ino.get(&ino).map(|node| (INodeNo(ino), *node))
    }

    /// The root's entries with their current inodes, in listing order.
    pub(crate) fn entries(&self) -> Vec<(INodeNo, &'static str, Node)> {
        let table = self.inner.lock();
        ENTRIES
            .iter()
            .filter_map(|(name, node)| {
                table
                    .current
                    .get(name)
                    .map(|ino| (INodeNo(*ino), *name, *node))
            })
            .collect()
    }

    /// Gives `device` a fresh inode for opens from now on.
    ///
    /// The kernel holds a file's inode lock while a write on it waits for
    /// its answer, and truncating (`>`) or extending that file needs the
    /// same lock: a second `echo ... > resolve` would queue behind a slow
    /// handler, uninterruptibly. Once a write has to wait, new opens get a
    /// new inode (after the caller invalidates the name), so they never
    /// queue behind it.
    pub(crate) fn renew(&self, device: Device) -> INodeNo {
        self.inner
            .lock()
            .assign(device.name(), Node::Device(device))
    }
}

impl Node {
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
        let inodes = Inodes::default();
        for (ino, name, node) in inodes.entries() {
            assert_eq!(inodes.lookup(name), Some((ino, node)));
            assert_eq!(inodes.node(ino), Some(node));
        }
        assert_eq!(inodes.node(INodeNo::ROOT), Some(Node::Root));
        assert_eq!(inodes.node(INodeNo(99)), None);
        assert_eq!(inodes.lookup("nope"), None);
    }

    #[test]
    fn a_renewed_device_keeps_its_old_inode_answering() {
        let inodes = Inodes::default();
        let (old, node) = inodes.lookup("resolve").expect("resolve");
        let new = inodes.renew(Device::Resolve);
        assert_ne!(old, new);
        assert_eq!(inodes.lookup("resolve"), Some((new, node)));
        assert_eq!(inodes.node(old), Some(node));
        let all: Vec<u64> = inodes.entries().iter().map(|(ino, _, _)| ino.0).collect();
        assert!(all.contains(&new.0) && !all.contains(&old.0));
    }
}
