//! The inode table of a mount: which number each node has, and which
//! numbers the kernel may still know.
//!
//! Inode numbers are never reused while mounted: a pending item keeps its
//! numbers after it is decided (lookups of it then fail), and a device that
//! gets a fresh inode (see [`Inodes::renew`]) keeps answering descriptors
//! open on its old one. The table counts the kernel's lookups of each inode
//! (as FUSE asks) and lets an old device inode, a decided item's inodes or
//! a gone session's go once the kernel has forgotten them, so it shrinks as
//! previews go.

use crate::maps::{HashMap, HashSet};
use std::sync::Arc;

use fuser::INodeNo;
use parking_lot::Mutex;

use super::node::{
    ItemFile, Node, SessionFile, ITEM_FILES, ITEM_INODES, PLAN_ENTRIES, ROOT_ENTRIES, SESSION_FILES,
};
use crate::device::Device;
use crate::maps::{remove_and_shrink, shrink_when_sparse};
use crate::safe_text::is_path_safe_name;

/// The inode table of one mount.
#[derive(Debug)]
pub(crate) struct Inodes {
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    by_ino: HashMap<u64, Node>,
    /// The current inode of each fixed name (`resolve`, `plan/ctl`, ...).
    named: HashMap<String, u64>,
    /// The directory inode of each item the kernel may still know; its
    /// files follow it.
    items: HashMap<Arc<str>, u64>,
    /// The directory inode of each agent session the kernel may still
    /// know; its files follow it.
    sessions: HashMap<Arc<str>, u64>,
    /// A session's `resolve` or `reject` handed a fresh inode while a write
    /// waited on the one before: its inode in the session's block -> the
    /// current one.
    renewed: HashMap<u64, u64>,
    /// How many lookups of each inode the kernel has not forgotten yet.
    lookups: HashMap<u64, u64>,
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

    /// Counts one lookup of `ino` by the kernel.
    fn looked_up(&mut self, ino: u64) -> u64 {
        *self.lookups.entry(ino).or_default() += 1;
        ino
    }

    /// Whether the kernel may still know an inode of the item at `dir`.
    fn item_known(&self, dir: u64) -> bool {
        (dir..dir + ITEM_INODES).any(|ino| self.lookups.contains_key(&ino))
    }

    fn drop_item(&mut self, id: &str) {
        if let Some(dir) = remove_and_shrink(&mut self.items, id) {
            for ino in dir..dir + ITEM_INODES {
                self.by_ino.remove(&ino);
            }
        }
    }

    /// Whether the kernel may still know an inode of the session at `dir`
    /// (its block, or a device's current fresh inode).
    fn session_known(&self, dir: u64) -> bool {
        (dir..=dir + SESSION_FILES.len() as u64).any(|ino| {
            self.lookups.contains_key(&ino)
                || self
                    .renewed
                    .get(&ino)
                    .is_some_and(|current| self.lookups.contains_key(current))
        })
    }

    fn drop_session(&mut self, session: &str) {
        if let Some(dir) = remove_and_shrink(&mut self.sessions, session) {
            for ino in dir..=dir + SESSION_FILES.len() as u64 {
                self.by_ino.remove(&ino);
                if let Some(current) = self.renewed.remove(&ino) {
                    self.by_ino.remove(&current);
                }
            }
            shrink_when_sparse(&mut self.renewed);
        }
    }

    /// The current inode of the file at `offset` in the session block at
    /// `dir`: the block's own, or the fresh one a busy device was given.
    fn session_file(&self, dir: u64, offset: u64) -> u64 {
        let fixed = dir + offset;
        self.renewed.get(&fixed).copied().unwrap_or(fixed)
    }

    /// The kernel forgot session inode `ino` of `node`: a device's inode
    /// that a fresh one replaced goes; otherwise the whole session goes
    /// once the kernel knows none of its inodes.
    fn forget_session_inode(&mut self, ino: u64, session: &str, file: SessionFile) {
        let dir = self.sessions.get(session).copied();
        let replaced = dir.is_some_and(|dir| {
            let offset = SESSION_FILES.iter().position(|(_, own)| *own == file);
            offset.is_some_and(|offset| {
                let fixed = dir + offset as u64 + 1;
                ino != fixed && self.session_file(dir, offset as u64 + 1) != ino
            })
        });
        if replaced || dir.is_none() {
            self.by_ino.remove(&ino);
            return;
        }
        // Any path-safe id names a session directory on lookup, so it can
        // always come back with new numbers.
        if !dir.is_some_and(|dir| self.session_known(dir)) {
            self.drop_session(session);
        }
    }

    /// The directory inode of each block of this kind.
    fn dirs(&self, block: Block) -> &HashMap<Arc<str>, u64> {
        match block {
            Block::Item => &self.items,
            Block::Session => &self.sessions,
        }
    }

    /// Whether the kernel may still know an inode of the block at `dir`.
    fn block_known(&self, block: Block, dir: u64) -> bool {
        match block {
            Block::Item => self.item_known(dir),
            Block::Session => self.session_known(dir),
        }
    }

    /// Drops the blocks not `listed` (items no longer pending, sessions
    /// with nothing pending) that the kernel does not know: listed once,
    /// never looked up.
    fn forget_unlisted(&mut self, block: Block, listed: &[String]) {
        if self.dirs(block).len() <= listed.len() {
            return;
        }
        let gone =
            unlisted_and_unknown(self.dirs(block), listed, |dir| self.block_known(block, dir));
        for name in gone {
            match block {
                Block::Item => self.drop_item(&name),
                Block::Session => self.drop_session(&name),
            }
        }
    }

    /// The directory inode of the block `name`, its inodes allocated when
    /// it has none yet.
    fn dir_of(&mut self, block: Block, name: &str) -> u64 {
        if let Some(ino) = self.dirs(block).get(name) {
            return *ino;
        }
        let name: Arc<str> = Arc::from(name);
        let dir = self.allocate(block.dir_node(Arc::clone(&name)));
        for file in block.files(&name) {
            self.allocate(file);
        }
        match block {
            Block::Item => self.items.insert(name, dir),
            Block::Session => self.sessions.insert(name, dir),
        };
        dir
    }

    /// The entries of `pending/` or `sessions/`: a directory for each of
    /// `ids` that can name one, after dropping the blocks of the others the
    /// kernel does not know.
    fn list_dirs(&mut self, block: Block, ids: Vec<String>) -> Vec<(INodeNo, String, Node)> {
        self.forget_unlisted(block, &ids);
        ids.into_iter()
            .filter(|id| block.can_name(id))
            .map(|id| {
                let ino = self.dir_of(block, &id);
                let node = block.dir_node(Arc::from(id.as_str()));
                (INodeNo(ino), id, node)
            })
            .collect()
    }
}

/// A directory whose inodes come as one block, the directory's first and
/// its files after it: a pending item's, or an agent session's. The table
/// keeps a block while the kernel may know one of its inodes.
#[derive(Debug, Clone, Copy)]
enum Block {
    Item,
    Session,
}

impl Block {
    /// The node of the directory `name` of this kind.
    fn dir_node(self, name: Arc<str>) -> Node {
        match self {
            Block::Item => Node::Item(name, ItemFile::Dir),
            Block::Session => Node::AgentSession(name, SessionFile::Dir),
        }
    }

    /// The nodes that follow the directory `name` in its block, in inode
    /// order (an item's end with its directory as its session lists it).
    fn files(self, name: &Arc<str>) -> Vec<Node> {
        match self {
            Block::Item => ITEM_FILES
                .iter()
                .map(|(_, file)| *file)
                .chain([ItemFile::Scoped])
                .map(|file| Node::Item(Arc::clone(name), file))
                .collect(),
            Block::Session => SESSION_FILES
                .iter()
                .map(|(_, file)| Node::AgentSession(Arc::clone(name), *file))
                .collect(),
        }
    }

    /// Whether a listed `id` names a directory of this kind: a session's
    /// any path-safe id, an item's one that is a file name too.
    fn can_name(self, id: &str) -> bool {
        match self {
            Block::Item => is_file_name(id),
            Block::Session => is_path_safe_name(id),
        }
    }
}

impl Inodes {
    /// The table of a mount. The `plan` directory and its files get
    /// inodes only `with_plan` (a mount with a plan desk), the `policy`
    /// file only `with_policy`: without them, no lookup, listing or open
    /// can lead to them.
    pub(crate) fn new(with_plan: bool, with_policy: bool) -> Self {
        let mut table = Table {
            by_ino: [(INodeNo::ROOT.0, Node::Root)].into_iter().collect(),
            named: HashMap::default(),
            items: HashMap::default(),
            sessions: HashMap::default(),
            renewed: HashMap::default(),
            lookups: HashMap::default(),
            next: INodeNo::ROOT.0 + 1,
        };
        for (name, node) in ROOT_ENTRIES {
            let hidden =
                (node == Node::PlanDir && !with_plan) || (node == Node::PolicyCtl && !with_policy);
            if !hidden {
                table.name(name.to_string(), node);
            }
        }
        if with_plan {
            for (name, node) in PLAN_ENTRIES {
                table.name(format!("plan/{name}"), node);
            }
        }
        Inodes {
            table: Mutex::new(table),
        }
    }

    /// What `ino` is.
    pub(crate) fn node(&self, ino: INodeNo) -> Option<Node> {
        self.table.lock().by_ino.get(&ino.0).cloned()
    }

    fn named(&self, path: &str) -> Option<(INodeNo, Node)> {
        let ino = *self.table.lock().named.get(path)?;
        self.node(INodeNo(ino)).map(|node| (INodeNo(ino), node))
    }

    /// Looks `name` up in directory `parent`, counting a lookup of what it
    /// finds (the caller answers the kernel with it). Pending items are
    /// looked up through `is_pending`, so a decided id is gone. A device
    /// (the root's, or a session's `resolve` or `reject`) whose inode
    /// `is_busy` (another writer holds it) is given a fresh inode first
    /// (see [`Inodes::renew`]).
    pub(crate) fn lookup(
        &self,
        parent: &Node,
        name: &str,
        is_pending: impl Fn(&str) -> bool,
        is_busy: impl Fn(INodeNo) -> bool,
    ) -> Option<(INodeNo, Node)> {
        let found = self.find(parent, name, is_pending, is_busy)?;
        self.table.lock().looked_up(found.0 .0);
        Some(found)
    }

    /// The inode of `pending/`.
    pub(crate) fn pending_dir(&self) -> Option<INodeNo> {
        self.named("pending").map(|(ino, _)| ino)
    }

    /// Whether the kernel may hold the directory of item `id` (it looked
    /// it up, or it was listed with its attributes).
    pub(crate) fn item_may_be_cached(&self, id: &str) -> bool {
        let table = self.table.lock();
        table
            .items
            .get(id)
            .is_some_and(|dir| table.lookups.contains_key(dir))
    }

    /// Counts a lookup of `ino` that the kernel made through a listing.
    pub(crate) fn count_lookup(&self, ino: INodeNo) {
        self.table.lock().looked_up(ino.0);
    }

    /// The kernel forgot `count` lookups of `ino`. An inode it no longer
    /// knows goes if it is an old device inode or belongs to a decided item.
    pub(crate) fn forget(&self, ino: INodeNo, count: u64, is_pending: impl Fn(&str) -> bool) {
        let item = {
            let mut table = self.table.lock();
            let Some(left) = table.lookups.get_mut(&ino.0) else {
                return;
            };
            *left = left.saturating_sub(count);
            if *left > 0 {
                return;
            }
            table.lookups.remove(&ino.0);
            shrink_when_sparse(&mut table.lookups);
            shrink_when_sparse(&mut table.by_ino);
            match table.by_ino.get(&ino.0).cloned() {
                Some(Node::Device(device)) if table.named.get(device.name()) != Some(&ino.0) => {
                    table.by_ino.remove(&ino.0);
                    return;
                }
                Some(Node::Item(id, _)) => id,
                Some(Node::AgentSession(session, file)) => {
                    table.forget_session_inode(ino.0, &session, file);
                    return;
                }
                _ => return,
            }
        };
        // Asked without the table's lock: the session calls into the table
        // (under its own lock) when a preview goes.
        if is_pending(&item) {
            return;
        }
        let mut table = self.table.lock();
        let known = table
            .items
            .get(&item)
            .is_some_and(|dir| table.item_known(*dir));
        if !known {
            table.drop_item(&item);
        }
    }

    /// Inodes in the table (for tests of its shrinking).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().by_ino.len()
    }

    /// What `name` in directory `parent` is, without counting a lookup and
    /// without renewing a busy device (see [`Inodes::lookup`]).
    pub(crate) fn peek(
        &self,
        parent: &Node,
        name: &str,
        is_pending: impl Fn(&str) -> bool,
    ) -> Option<(INodeNo, Node)> {
        self.find(parent, name, is_pending, |_| false)
    }

    /// Whether `name` in `parent` is one of the mount's own names (even
    /// one hidden on this mount, such as `plan` without a plan desk), which
    /// no draft may take.
    pub(crate) fn is_reserved(parent: &Node, name: &str) -> bool {
        match parent {
            Node::Root => ROOT_ENTRIES.iter().any(|(own, _)| *own == name),
            Node::Item(_, ItemFile::Dir | ItemFile::Scoped) => {
                ITEM_FILES.iter().any(|(own, _)| *own == name)
            }
            _ => true,
        }
    }

    /// A fresh inode number, never used before on this mount, for a node
    /// kept elsewhere (a draft).
    pub(crate) fn fresh_ino(&self) -> INodeNo {
        let mut table = self.table.lock();
        let ino = table.next;
        table.next += 1;
        INodeNo(ino)
    }

    fn find(
        &self,
        parent: &Node,
        name: &str,
        is_pending: impl Fn(&str) -> bool,
        is_busy: impl Fn(INodeNo) -> bool,
    ) -> Option<(INodeNo, Node)> {
        match parent {
            Node::Root => {
                let found = self.named(name)?;
                match found {
                    (ino, Node::Device(device)) if is_busy(ino) => {
                        Some((self.renew(device), Node::Device(device)))
                    }
                    found => Some(found),
                }
            }
            Node::PlanDir => self.named(&format!("plan/{name}")),
            // A name is found only where it could be listed (the one rule).
            Node::PendingDir if is_path_safe_name(name) && is_pending(name) => {
                let ino = self.table.lock().dir_of(Block::Item, name);
                self.node(INodeNo(ino)).map(|node| (INodeNo(ino), node))
            }
            Node::Item(id, ItemFile::Dir | ItemFile::Scoped) if is_pending(id) => {
                let offset = ITEM_FILES.iter().position(|(file, _)| *file == name)? as u64 + 1;
                let dir = self.table.lock().dir_of(Block::Item, id);
                let ino = INodeNo(dir + offset);
                self.node(ino).map(|node| (ino, node))
            }
            // Every path-safe id names a session (with nothing pending, its
            // devices answer as the root's do then); `sessions/` lists only
            // those with previews waiting.
            Node::SessionsDir if is_path_safe_name(name) => {
                let ino = self.table.lock().dir_of(Block::Session, name);
                self.node(INodeNo(ino)).map(|node| (INodeNo(ino), node))
            }
            Node::AgentSession(session, SessionFile::Dir) => {
                let offset = SESSION_FILES.iter().position(|(file, _)| *file == name)? as u64 + 1;
                let (dir, ino) = {
                    let mut table = self.table.lock();
                    let dir = table.dir_of(Block::Session, session);
                    (dir, INodeNo(table.session_file(dir, offset)))
                };
                match self.node(ino)? {
                    // As the root's: a busy device's name leads to a fresh
                    // inode (see `renew`).
                    node @ Node::AgentSession(_, SessionFile::Resolve | SessionFile::Reject)
                        if is_busy(ino) =>
                    {
                        Some((self.renew_session_file(dir + offset, node.clone()), node))
                    }
                    node => Some((ino, node)),
                }
            }
            // `is_pending` answers for this session's previews here.
            Node::AgentSession(_, SessionFile::Pending)
                if is_path_safe_name(name) && is_pending(name) =>
            {
                let ino = INodeNo(self.table.lock().dir_of(Block::Item, name) + ITEM_INODES - 1);
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
            // `pending` is asked without the table's lock (see `forget`).
            Node::PendingDir => {
                let ids = pending();
                self.table.lock().list_dirs(Block::Item, ids)
            }
            Node::SessionsDir => {
                let ids = pending();
                self.table.lock().list_dirs(Block::Session, ids)
            }
            Node::AgentSession(session, SessionFile::Dir) => {
                let mut table = self.table.lock();
                let dir = table.dir_of(Block::Session, session);
                SESSION_FILES
                    .iter()
                    .enumerate()
                    .map(|(index, (name, file))| {
                        (
                            INodeNo(table.session_file(dir, index as u64 + 1)),
                            name.to_string(),
                            Node::AgentSession(Arc::clone(session), *file),
                        )
                    })
                    .collect()
            }
            // `pending` gives this session's previews here.
            Node::AgentSession(_, SessionFile::Pending) => {
                let ids = pending();
                let mut table = self.table.lock();
                ids.into_iter()
                    .filter(|id| is_file_name(id))
                    .map(|id| {
                        let ino = table.dir_of(Block::Item, &id) + ITEM_INODES - 1;
                        let node = Node::Item(Arc::from(id.as_str()), ItemFile::Scoped);
                        (INodeNo(ino), id, node)
                    })
                    .collect()
            }
            Node::Item(id, ItemFile::Dir | ItemFile::Scoped) => {
                let dir = self.table.lock().dir_of(Block::Item, id);
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

    /// Gives a root device a fresh inode for lookups from now on.
    ///
    /// The kernel holds a file's inode lock while a write on it waits for
    /// its answer, and truncating (`>`) or extending that file needs the
    /// same lock: a second `echo ... > resolve` would queue behind a slow
    /// handler, uninterruptibly. Openers of a busy inode are sent to look
    /// the name up again (see `fs::kernel::busy`), and find this fresh one.
    fn renew(&self, device: Device) -> INodeNo {
        INodeNo(
            self.table
                .lock()
                .name(device.name().to_string(), Node::Device(device)),
        )
    }

    /// A fresh inode for a session's device `node` (`renew`, for the file
    /// whose inode in its session's block is `fixed`).
    fn renew_session_file(&self, fixed: u64, node: Node) -> INodeNo {
        let mut table = self.table.lock();
        let ino = table.allocate(node);
        table.renewed.insert(fixed, ino);
        INodeNo(ino)
    }
}

/// Whether pending `id` is listed: by the one rule for the names the mount
/// lists ([`is_path_safe_name`]). Ids the crate forms always are; one
/// registered by hand with a `/` or NUL would make the kernel fail the
/// whole listing (`EIO`) for every reader, and one with a control
/// character would reach a terminal through `ls`, so it is left out (and
/// decided through the head, or its session's devices).
fn is_file_name(id: &str) -> bool {
    let fits = is_path_safe_name(id);
    if !fits {
        tracing::warn!(id = %id.escape_debug(), "a pending id that is no file name is not listed");
    }
    fits
}

/// The names in `dirs` that are not `listed` and whose directory the kernel
/// does not know (`known`): their inodes can go.
fn unlisted_and_unknown(
    dirs: &HashMap<Arc<str>, u64>,
    listed: &[String],
    known: impl Fn(u64) -> bool,
) -> Vec<Arc<str>> {
    let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
    dirs.iter()
        .filter(|(name, dir)| !listed.contains(&***name) && !known(**dir))
        .map(|(name, _)| Arc::clone(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tree::status::TextFile;

    fn none() -> Vec<String> {
        Vec::new()
    }

    fn free(_: INodeNo) -> bool {
        false
    }

    /// Looks device `name` up in `parent`, then again while its inode is
    /// busy: the second lookup gives a fresh inode, which stays the name's.
    /// Gives the old inode, the fresh one and the device's node.
    fn renewed(inodes: &Inodes, parent: &Node, name: &str) -> (INodeNo, INodeNo, Node) {
        let (old, node) = inodes.lookup(parent, name, |_| false, free).expect(name);
        let busy = |ino: INodeNo| ino == old;
        let (new, renewed) = inodes.lookup(parent, name, |_| false, busy).expect(name);
        assert_ne!(old, new);
        assert_eq!(renewed, node);
        assert_eq!(
            inodes.lookup(parent, name, |_| false, busy),
            Some((new, node.clone())),
            "the fresh inode is the name's from now on"
        );
        (old, new, node)
    }

    /// `name` in `parent` is `node` and keeps its inode even when busy
    /// (only devices are renewed); gives that inode.
    fn never_renewed(inodes: &Inodes, parent: &Node, name: &str, node: Node) -> INodeNo {
        let (ino, _) = inodes.lookup(parent, name, |_| false, free).expect(name);
        assert_eq!(
            inodes.lookup(parent, name, |_| false, |_| true),
            Some((ino, node)),
            "only devices are renewed"
        );
        ino
    }

    #[test]
    fn root_names_and_inodes_agree() {
        let inodes = Inodes::new(false, false);
        let entries = inodes.entries(&Node::Root, none);
        assert_eq!(entries.len(), 12, "no plan directory without a plan desk");
        for (ino, name, node) in entries {
            assert_eq!(
                inodes.lookup(&Node::Root, &name, |_| false, free),
                Some((ino, node.clone()))
            );
            assert_eq!(inodes.node(ino), Some(node));
        }
        assert_eq!(inodes.node(INodeNo::ROOT), Some(Node::Root));
        assert_eq!(inodes.lookup(&Node::Root, "plan", |_| false, free), None);
        assert_eq!(inodes.lookup(&Node::Root, "nope", |_| false, free), None);
        assert_eq!(
            Inodes::new(true, false).entries(&Node::Root, none).len(),
            13
        );
    }

    #[test]
    fn the_plan_files_have_inodes_only_with_a_plan_desk() {
        let is_plan = |node: &Node| {
            matches!(
                node,
                Node::PlanDir | Node::PlanCtl | Node::Text(TextFile::PlanStatus)
            )
        };
        let without = Inodes::new(false, false);
        assert!(!without.table.lock().by_ino.values().any(is_plan));
        let with = Inodes::new(true, false);
        assert_eq!(
            with.table
                .lock()
                .by_ino
                .values()
                .filter(|n| is_plan(n))
                .count(),
            3
        );
    }

    #[test]
    fn a_busy_device_is_looked_up_as_a_fresh_inode_and_the_old_one_stays_known() {
        let inodes = Inodes::new(false, false);
        let (old, _, node) = renewed(&inodes, &Node::Root, "resolve");
        assert_eq!(
            inodes.node(old),
            Some(node),
            "open descriptors keep working"
        );
        never_renewed(&inodes, &Node::Root, "status", Node::Text(TextFile::Status));
    }

    #[test]
    fn forgotten_old_device_inodes_and_decided_items_leave_the_table() {
        let inodes = Inodes::new(false, false);
        let fresh = inodes.len();
        let (old, new, _) = renewed(&inodes, &Node::Root, "resolve");
        assert_eq!(inodes.len(), fresh + 1);
        inodes.forget(new, 1, |_| false);
        assert_eq!(
            inodes.node(new),
            Some(Node::Device(Device::Resolve)),
            "current: kept"
        );
        inodes.forget(old, 1, |_| false);
        assert_eq!(
            inodes.node(old),
            None,
            "an old device inode, forgotten: gone"
        );
        assert_eq!(inodes.len(), fresh);

        let id = "pending-action:t:1";
        let pending = |known: &str| known == id;
        let (dir, node) = inodes
            .lookup(&Node::PendingDir, id, pending, free)
            .expect("item");
        let (label, _) = inodes.lookup(&node, "label", pending, free).expect("label");
        inodes.forget(dir, 1, |_| false);
        assert!(inodes.node(dir).is_some(), "its label is still known");
        inodes.forget(label, 1, |_| false);
        assert_eq!(inodes.node(label), None, "decided and forgotten: gone");
        assert_eq!(inodes.len(), fresh);

        inodes.entries(&Node::PendingDir, || vec![id.to_string()]);
        assert_eq!(inodes.len(), fresh + 9, "listed: its nine inodes");
        inodes.entries(&Node::PendingDir, none);
        assert_eq!(
            inodes.len(),
            fresh,
            "decided, never looked up: gone at the next listing"
        );
    }

    #[test]
    fn a_busy_session_device_is_renewed_and_its_session_leaves_once_forgotten() {
        let inodes = Inodes::new(false, false);
        let fresh = inodes.len();
        let (dir, session) = inodes
            .lookup(&Node::SessionsDir, "s-a", |_| false, free)
            .expect("session");
        let (old, new, node) = renewed(&inodes, &session, "resolve");
        let listed = inodes.entries(&session, none);
        assert_eq!((listed[0].0, listed[0].1.as_str()), (new, "resolve"));
        let status_node = Node::AgentSession(Arc::from("s-a"), SessionFile::Status);
        let status = never_renewed(&inodes, &session, "status", status_node);

        inodes.forget(old, 1, |_| false);
        assert_eq!(
            inodes.node(old),
            Some(node.clone()),
            "its block stays while the session is known"
        );
        inodes.forget(status, 2, |_| false);
        inodes.forget(dir, 1, |_| false);
        assert!(
            inodes.node(dir).is_some(),
            "its fresh resolve is still known"
        );
        inodes.forget(new, 2, |_| false);
        assert_eq!(inodes.node(new), None, "all forgotten: the session goes");
        assert_eq!(inodes.node(dir), None);
        assert_eq!(inodes.len(), fresh);

        // A fresh inode replaced by a newer one goes once forgotten.
        let (_, session) = inodes
            .lookup(&Node::SessionsDir, "s-b", |_| false, free)
            .expect("session");
        let (first, _) = inodes
            .lookup(&session, "reject", |_| false, free)
            .expect("reject");
        let (second, _) = inodes
            .lookup(&session, "reject", |_| false, |ino| ino == first)
            .expect("reject");
        let (third, _) = inodes
            .lookup(&session, "reject", |_| false, |ino| ino == second)
            .expect("reject");
        inodes.forget(second, 1, |_| false);
        assert_eq!(inodes.node(second), None, "replaced and forgotten: gone");
        assert!(inodes.node(third).is_some() && inodes.node(first).is_some());
    }

    #[test]
    fn items_exist_while_pending_and_keep_their_numbers() {
        let inodes = Inodes::new(false, false);
        let pending = |id: &str| id == "pending-action:t:1";
        let (dir, node) = inodes
            .lookup(&Node::PendingDir, "pending-action:t:1", pending, free)
            .expect("item");
        assert_eq!(
            inodes.lookup(&Node::PendingDir, "pending-action:t:2", pending, free),
            None
        );
        let (resolve, file) = inodes
            .lookup(&node, "resolve", pending, free)
            .expect("resolve");
        assert_eq!(resolve.0, dir.0 + 3);
        assert!(file.target().is_some());
        assert_eq!(
            inodes.lookup(&node, "resolve", |_| false, free),
            None,
            "gone once decided"
        );
        let listed = inodes.entries(&Node::PendingDir, || vec!["pending-action:t:1".to_string()]);
        assert_eq!(listed[0].0, dir, "numbers are never reallocated");
    }

    #[test]
    fn ids_that_are_no_file_name_are_not_listed() {
        let inodes = Inodes::new(false, false);
        let ids = [
            "pending-action:t:1",
            "a/b",
            "nul\0",
            "..",
            "esc\u{1b}[2J",
            "pending-action:t:2",
        ];
        let listed: Vec<String> = inodes
            .entries(&Node::PendingDir, || ids.map(String::from).to_vec())
            .into_iter()
            .map(|(_, name, _)| name)
            .collect();
        assert_eq!(listed, ["pending-action:t:1", "pending-action:t:2"]);
    }

    #[test]
    fn the_man_page_lists_every_file_of_the_tree() {
        let dir = |name: &str, node: &Node| match node {
            Node::PendingDir | Node::SessionsDir | Node::PlanDir => format!("{name}/"),
            _ => name.to_string(),
        };
        let mut tree: Vec<String> = Vec::new();
        for (name, node) in &ROOT_ENTRIES {
            tree.push(dir(name, node));
            match node {
                Node::PendingDir => tree.extend(
                    ITEM_FILES
                        .iter()
                        .map(|(file, _)| format!("pending/<id>/{file}")),
                ),
                Node::SessionsDir => tree.extend(SESSION_FILES.iter().map(|(file, kind)| {
                    let slash = if *kind == SessionFile::Pending {
                        "/"
                    } else {
                        ""
                    };
                    format!("sessions/<session-id>/{file}{slash}")
                })),
                Node::PlanDir => {
                    tree.extend(PLAN_ENTRIES.iter().map(|(file, _)| format!("plan/{file}")))
                }
                _ => {}
            }
        }
        let listed: Vec<&str> = crate::texts::MOUNT_FILES
            .iter()
            .map(|(path, _)| *path)
            .collect();
        assert_eq!(listed, tree);
    }
}
