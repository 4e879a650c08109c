//! The mount's inodes and what each one is.
//!
//! ```text
//! /xdev/resolve reject propose          devices
//!       status status.json last reminder read-only status
//!       log events                       journal, and its live stream
//!       stage                            external producers stage here
//!       pending/<id>/{label,source,resolve,reject}
//!       plan/{ctl,status}                only with a plan desk
//! ```
//!
//! Inode numbers are never reused while mounted: a pending item keeps its
//! numbers after it is decided (lookups of it then fail), and a device that
//! gets a fresh inode (see [`Inodes::renew`]) keeps answering descriptors
//! open on its old one (new opens of the old one are sent to the fresh one).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileType, INodeNo};
use parking_lot::Mutex;

use crate::dispatch::{Action, Device};
use crate::fs::status::TextFile;
use crate::fs::target::Target;

/// One file of a pending item's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemFile {
    Dir,
    Label,
    Source,
    Resolve,
    Reject,
}

/// An item's files in listing order, each at its offset from the item's
/// directory inode.
const ITEM_FILES: [(&str, ItemFile); 4] = [
    ("label", ItemFile::Label),
    ("source", ItemFile::Source),
    ("resolve", ItemFile::Resolve),
    ("reject", ItemFile::Reject),
];

/// What an inode is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Root,
    Device(Device),
    Text(TextFile),
    Log,
    Events,
    Stage,
    PendingDir,
    Item(Arc<str>, ItemFile),
    PlanDir,
    PlanCtl,
}

/// The root's entries, in listing order. `plan` only exists with a plan desk.
const ROOT_ENTRIES: [(&str, Node); 12] = [
    ("resolve", Node::Device(Device::Resolve)),
    ("reject", Node::Device(Device::Reject)),
    ("propose", Node::Device(Device::Propose)),
    ("status", Node::Text(TextFile::Status)),
    ("status.json", Node::Text(TextFile::StatusJson)),
    ("last", Node::Text(TextFile::Last)),
    ("reminder", Node::Text(TextFile::Reminder)),
    ("log", Node::Log),
    ("events", Node::Events),
    ("stage", Node::Stage),
    ("pending", Node::PendingDir),
    ("plan", Node::PlanDir),
];

/// The plan directory's entries.
const PLAN_ENTRIES: [(&str, Node); 2] = [
    ("ctl", Node::PlanCtl),
    ("status", Node::Text(TextFile::PlanStatus)),
];

/// Names and attributes that never change may be cached for as long as the
/// mount lives; this is "long" without overflowing the kernel's arithmetic.
pub(crate) const STATIC_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Anything that changes with every decision is never cached.
pub(crate) const FRESH_TTL: Duration = Duration::ZERO;

/// Device block size: at least 8192, so `echo` of up to 8 KiB arrives in
/// one write.
const DEVICE_BLOCK_SIZE: u32 = 8192;

impl Node {
    pub(crate) fn kind(&self) -> FileType {
        match self {
            Node::Root | Node::PendingDir | Node::PlanDir | Node::Item(_, ItemFile::Dir) => {
                FileType::Directory
            }
            _ => FileType::RegularFile,
        }
    }

    /// The file whose messages this node dispatches, if it is device-like.
    pub(crate) fn target(&self) -> Option<Target> {
        match self {
            Node::Device(device) => Some(Target::Device(*device)),
            Node::Item(id, ItemFile::Resolve) => Some(Target::Item {
                id: Arc::clone(id),
                action: Action::Apply,
            }),
            Node::Item(id, ItemFile::Reject) => Some(Target::Item {
                id: Arc::clone(id),
                action: Action::Discard,
            }),
            Node::PlanCtl => Some(Target::PlanCtl),
            _ => None,
        }
    }

    /// Whether its content (or existence) changes as the session does.
    fn is_fresh(&self) -> bool {
        matches!(
            self,
            Node::Text(_) | Node::Log | Node::Events | Node::PendingDir | Node::Item(..)
        )
    }

    /// How long the kernel may cache this node's attributes.
    pub(crate) fn attr_ttl(&self) -> Duration {
        if self.is_fresh() {
            FRESH_TTL
        } else {
            STATIC_TTL
        }
    }

    /// How long the kernel may cache the name leading to this node.
    pub(crate) fn entry_ttl(&self) -> Duration {
        match self {
            Node::Item(..) => FRESH_TTL,
            _ => STATIC_TTL,
        }
    }

    /// Devices (and the stage file) are for the mounting user only. `log`
    /// and `events` hold the reasons written, which may hold secrets: they
    /// are the owner's too unless the owner shares the journal. The rest is
    /// readable by everyone the mount lets in.
    fn perm(&self, owner: Owner) -> u16 {
        match self.kind() {
            FileType::Directory => 0o755,
            _ if self.target().is_some() || *self == Node::Stage => 0o600,
            _ if matches!(self, Node::Log | Node::Events) && !owner.share_journal => 0o400,
            _ => 0o444,
        }
    }

    pub(crate) fn attr(&self, ino: INodeNo, size: u64, owner: Owner) -> FileAttr {
        let blksize = if self.target().is_some() {
            DEVICE_BLOCK_SIZE
        } else {
            4096
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
            perm: self.perm(owner),
            nlink: if self.kind() == FileType::Directory {
                2
            } else {
                1
            },
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
    /// Whether other users may read `log` and `events`.
    pub(crate) share_journal: bool,
}

impl Owner {
    /// The user running this process, from now.
    pub(crate) fn current(share_journal: bool) -> Self {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Owner {
            uid,
            gid,
            since: SystemTime::now(),
            share_journal,
        }
    }
}

/// The inode table of one mount.
#[derive(Debug)]
pub(crate) struct Inodes {
    table: Mutex<Table>,
    with_plan: bool,
}

#[derive(Debug)]
struct Table {
    by_ino: HashMap<u64, Node>,
    /// The current inode of each fixed name (`resolve`, `plan/ctl`, ...).
    named: HashMap<String, u64>,
    /// The directory inode of each pending item ever seen; its files follow it.
    items: HashMap<Arc<str>, u64>,
    next: u64,
}

impl Table {
    fn allocate(&mut self, node: Node) -> u64 {
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(ino, node);
        ino
    }

    fn name(&mut self, path: String, node: Node) -> u64 {
        let ino = self.allocate(node);
        self.named.insert(path, ino);
        ino
    }

    fn item_dir(&mut self, id: &str) -> u64 {
        if let Some(ino) = self.items.get(id) {
            return *ino;
        }
        let id: Arc<str> = Arc::from(id);
        let dir = self.allocate(Node::Item(Arc::clone(&id), ItemFile::Dir));
        for (_, file) in ITEM_FILES {
            self.allocate(Node::Item(Arc::clone(&id), file));
        }
        self.items.insert(id, dir);
        dir
    }
}

impl Inodes {
    /// The table of a mount; the `plan` directory exists only `with_plan`.
    pub(crate) fn new(with_plan: bool) -> Self {
        let mut table = Table {
            by_ino: HashMap::from([(INodeNo::ROOT.0, Node::Root)]),
            named: HashMap::new(),
            items: HashMap::new(),
            next: INodeNo::ROOT.0 + 1,
        };
        for (name, node) in ROOT_ENTRIES {
            table.name(name.to_string(), node);
        }
        for (name, node) in PLAN_ENTRIES {
            table.name(format!("plan/{name}"), node);
        }
        Inodes {
            table: Mutex::new(table),
            with_plan,
        }
    }

    /// What `ino` is.
    pub(crate) fn node(&self, ino: INodeNo) -> Option<Node> {
        let node = self.table.lock().by_ino.get(&ino.0).cloned()?;
        let hidden = !self.with_plan
            && matches!(
                node,
                Node::PlanDir | Node::PlanCtl | Node::Text(TextFile::PlanStatus)
            );
        (!hidden).then_some(node)
    }

    fn named(&self, path: &str) -> Option<(INodeNo, Node)> {
        let ino = *self.table.lock().named.get(path)?;
        self.node(INodeNo(ino)).map(|node| (INodeNo(ino), node))
    }

    /// Looks `name` up in directory `parent`. Pending items are looked up
    /// through `is_pending`, so a decided id is gone.
    pub(crate) fn lookup(
        &self,
        parent: &Node,
        name: &str,
        is_pending: impl Fn(&str) -> bool,
    ) -> Option<(INodeNo, Node)> {
        match parent {
            Node::Root => self.named(name),
            Node::PlanDir => self.named(&format!("plan/{name}")),
            Node::PendingDir if is_pending(name) => {
                let ino = self.table.lock().item_dir(name);
                self.node(INodeNo(ino)).map(|node| (INodeNo(ino), node))
            }
            Node::Item(id, ItemFile::Dir) if is_pending(id) => {
                let offset = ITEM_FILES.iter().position(|(file, _)| *file == name)? as u64 + 1;
                let dir = self.table.lock().item_dir(id);
                let ino = INodeNo(dir + offset);
                self.node(ino).map(|node| (ino, node))
            }
            _ => None,
        }
    }

    /// The entries of a directory with their inodes, in listing order;
    /// `pending` gives the pending ids, head first.
    pub(crate) fn entries(
        &self,
        dir: &Node,
        pending: impl FnOnce() -> Vec<String>,
    ) -> Vec<(INodeNo, String, Node)> {
        match dir {
            Node::Root => ROOT_ENTRIES
                .iter()
                .filter_map(|(name, _)| {
                    self.named(name)
                        .map(|(ino, node)| (ino, name.to_string(), node))
                })
                .collect(),
            Node::PlanDir => PLAN_ENTRIES
                .iter()
                .filter_map(|(name, _)| {
                    self.named(&format!("plan/{name}"))
                        .map(|(ino, node)| (ino, name.to_string(), node))
                })
                .collect(),
            Node::PendingDir => pending()
                .into_iter()
                .map(|id| {
                    let ino = self.table.lock().item_dir(&id);
                    (
                        INodeNo(ino),
                        id.clone(),
                        Node::Item(Arc::from(id.as_str()), ItemFile::Dir),
                    )
                })
                .collect(),
            Node::Item(id, ItemFile::Dir) => {
                let dir = self.table.lock().item_dir(id);
                ITEM_FILES
                    .iter()
                    .enumerate()
                    .map(|(index, (name, file))| {
                        (
                            INodeNo(dir + index as u64 + 1),
                            name.to_string(),
                            Node::Item(Arc::clone(id), *file),
                        )
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Whether `ino` is the inode that opens of root device `device` get
    /// now (it is not after [`Inodes::renew`]).
    pub(crate) fn is_current(&self, device: Device, ino: INodeNo) -> bool {
        self.table.lock().named.get(device.name()) == Some(&ino.0)
    }

    /// Gives a root device a fresh inode for opens from now on.
    ///
    /// The kernel holds a file's inode lock while a write on it waits for
    /// its answer, and truncating (`>`) or extending that file needs the
    /// same lock: a second `echo ... > resolve` would queue behind a slow
    /// handler, uninterruptibly. Once a write has to wait, new opens get a
    /// new inode (after the caller invalidates the name), so they never
    /// queue behind it.
    pub(crate) fn renew(&self, device: Device) -> INodeNo {
        INodeNo(
            self.table
                .lock()
                .name(device.name().to_string(), Node::Device(device)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Vec<String> {
        Vec::new()
    }

    #[test]
    fn root_names_and_inodes_agree() {
        let inodes = Inodes::new(false);
        let entries = inodes.entries(&Node::Root, none);
        assert_eq!(entries.len(), 11, "no plan directory without a plan desk");
        for (ino, name, node) in entries {
            assert_eq!(
                inodes.lookup(&Node::Root, &name, |_| false),
                Some((ino, node.clone()))
            );
            assert_eq!(inodes.node(ino), Some(node));
        }
        assert_eq!(inodes.node(INodeNo::ROOT), Some(Node::Root));
        assert_eq!(inodes.lookup(&Node::Root, "plan", |_| false), None);
        assert_eq!(inodes.lookup(&Node::Root, "nope", |_| false), None);
        assert_eq!(Inodes::new(true).entries(&Node::Root, none).len(), 12);
    }

    #[test]
    fn a_renewed_device_keeps_its_old_inode_known_but_not_current() {
        let inodes = Inodes::new(false);
        let (old, node) = inodes
            .lookup(&Node::Root, "resolve", |_| false)
            .expect("resolve");
        let new = inodes.renew(Device::Resolve);
        assert_ne!(old, new);
        assert_eq!(
            inodes.lookup(&Node::Root, "resolve", |_| false),
            Some((new, node.clone()))
        );
        assert_eq!(inodes.node(old), Some(node));
        assert!(!inodes.is_current(Device::Resolve, old));
        assert!(inodes.is_current(Device::Resolve, new));
    }

    #[test]
    fn items_exist_while_pending_and_keep_their_numbers() {
        let inodes = Inodes::new(false);
        let pending = |id: &str| id == "pending-action:t:1";
        let (dir, node) = inodes
            .lookup(&Node::PendingDir, "pending-action:t:1", pending)
            .expect("item");
        assert_eq!(
            inodes.lookup(&Node::PendingDir, "pending-action:t:2", pending),
            None
        );
        let (resolve, file) = inodes.lookup(&node, "resolve", pending).expect("resolve");
        assert_eq!(resolve.0, dir.0 + 3);
        assert!(file.target().is_some());
        assert_eq!(
            inodes.lookup(&node, "resolve", |_| false),
            None,
            "gone once decided"
        );
        let listed = inodes.entries(&Node::PendingDir, || vec!["pending-action:t:1".to_string()]);
        assert_eq!(listed[0].0, dir, "numbers are never reallocated");
    }
}
