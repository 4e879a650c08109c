//! What each node of the mount's tree is, and what the kernel is told of
//! it: its kind, its attributes and how long they may be cached, and which
//! target its messages go to if it is device-like.
//!
//! ```text
//! /xdev/resolve reject propose          devices
//!       status status.json last reminder read-only status
//!       log events                       journal, and its live stream
//!       stage                            external producers stage here
//!       pending/<id>/{label,source,resolve,reject,detail,diff,cwd}
//!                                        (detail, diff, cwd only when the preview has one)
//!       sessions/<session-id>/{resolve,reject,status,pending/<id>/}
//!                                        one agent session's previews alone
//!       plan/{ctl,status}                only with a plan desk
//!       policy                           only with a policy
//! ```
//!
//! The names each directory holds are listed here too, in listing order;
//! the numbers they get are [`super::inodes`]'s.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileType, INodeNo};

use super::status::TextFile;
use super::target::Target;
use crate::device::Device;
use crate::session::request::Action;

/// One file of a pending item's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemFile {
    Dir,
    Label,
    Source,
    Resolve,
    Reject,
    /// The full request, for previews that carry one.
    Detail,
    /// What the preview would change, for previews that carry a diff.
    Diff,
    /// The agent's working directory, for previews that carry one.
    Cwd,
    /// The item's directory as its agent session's `pending/` lists it:
    /// the same files, but a directory inode of its own, since the kernel
    /// lets a directory have one name only.
    Scoped,
}

/// The inodes of one item: its directory, its files, and its directory as
/// its session lists it ([`ItemFile::Scoped`]), in this order.
pub(super) const ITEM_INODES: u64 = ITEM_FILES.len() as u64 + 2;

/// One file of an agent session's directory `sessions/<session-id>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionFile {
    Dir,
    Resolve,
    Reject,
    Status,
    Pending,
}

/// A session directory's files in listing order, each at its offset from
/// the directory's inode.
pub(super) const SESSION_FILES: [(&str, SessionFile); 4] = [
    ("resolve", SessionFile::Resolve),
    ("reject", SessionFile::Reject),
    ("status", SessionFile::Status),
    ("pending", SessionFile::Pending),
];

/// An item's files in listing order, each at its offset from the item's
/// directory inode. `detail`, `diff` and `cwd` exist only for previews
/// that carry one (see `XdevFs::node`), so they come last and their absence
/// shifts nothing.
pub(super) const ITEM_FILES: [(&str, ItemFile); 7] = [
    ("label", ItemFile::Label),
    ("source", ItemFile::Source),
    ("resolve", ItemFile::Resolve),
    ("reject", ItemFile::Reject),
    ("detail", ItemFile::Detail),
    ("diff", ItemFile::Diff),
    ("cwd", ItemFile::Cwd),
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
    SessionsDir,
    /// A file of `sessions/<session-id>/`, by the session's id.
    AgentSession(Arc<str>, SessionFile),
    PlanDir,
    PlanCtl,
    /// `policy`: reads describe the rules in force, a write of `reload`
    /// loads them again.
    PolicyCtl,
    /// A writer's scratch file (see [`crate::fs::handles::drafts`]); what
    /// it holds lives there, not in the inode table.
    Draft,
}

/// The name of the file external producers stage through.
pub(crate) const STAGE_FILE: &str = "stage";

/// The root's entries, in listing order. `plan` only exists with a plan
/// desk, `policy` only with a policy.
pub(super) const ROOT_ENTRIES: [(&str, Node); 14] = [
    ("resolve", Node::Device(Device::Resolve)),
    ("reject", Node::Device(Device::Reject)),
    ("propose", Node::Device(Device::Propose)),
    ("status", Node::Text(TextFile::Status)),
    ("status.json", Node::Text(TextFile::StatusJson)),
    ("last", Node::Text(TextFile::Last)),
    ("reminder", Node::Text(TextFile::Reminder)),
    ("log", Node::Log),
    ("events", Node::Events),
    (STAGE_FILE, Node::Stage),
    ("pending", Node::PendingDir),
    ("sessions", Node::SessionsDir),
    ("plan", Node::PlanDir),
    ("policy", Node::PolicyCtl),
];

/// The plan directory's entries.
pub(super) const PLAN_ENTRIES: [(&str, Node); 2] = [
    ("ctl", Node::PlanCtl),
    ("status", Node::Text(TextFile::PlanStatus)),
];

/// Names and attributes that never change may be cached for as long as the
/// mount lives; this is "long" without overflowing the kernel's arithmetic.
pub(crate) const STATIC_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a listed pending item's directory may be cached.
const LISTED_ITEM_TTL: Duration = Duration::from_secs(1);

/// Anything that changes with every decision is never cached.
pub(crate) const FRESH_TTL: Duration = Duration::ZERO;

/// Device block size: at least 8192, so `echo` of up to 8 KiB arrives in
/// one write.
const DEVICE_BLOCK_SIZE: u32 = 8192;

impl Node {
    pub(crate) fn kind(&self) -> FileType {
        match self {
            Node::Root
            | Node::PendingDir
            | Node::PlanDir
            | Node::SessionsDir
            | Node::Item(_, ItemFile::Dir | ItemFile::Scoped)
            | Node::AgentSession(_, SessionFile::Dir | SessionFile::Pending) => FileType::Directory,
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
            Node::AgentSession(session, SessionFile::Resolve) => Some(Target::Session {
                session: Arc::clone(session),
                device: Device::Resolve,
            }),
            Node::AgentSession(session, SessionFile::Reject) => Some(Target::Session {
                session: Arc::clone(session),
                device: Device::Reject,
            }),
            Node::PlanCtl => Some(Target::PlanCtl),
            Node::PolicyCtl => Some(Target::PolicyCtl),
            _ => None,
        }
    }

    /// Whether writers may create drafts in this directory: the root and a
    /// pending item's directory.
    pub(crate) fn holds_drafts(&self) -> bool {
        matches!(self, Node::Root | Node::Item(_, ItemFile::Dir))
    }

    /// Whether its attributes (a status file's size) change as the session
    /// does. A pending item's existence changes, not its attributes: its
    /// name is never cached instead (see [`Node::entry_ttl`]). Cached
    /// directory attributes matter: every path walked through a directory
    /// checks its permissions, and would ask for them each time.
    fn is_fresh(&self) -> bool {
        matches!(
            self,
            Node::Text(_)
                | Node::Log
                | Node::Events
                | Node::Draft
                | Node::AgentSession(_, SessionFile::Status)
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

    /// How long the kernel may cache a listed entry's name and attributes
    /// (one figure for both). A pending item's directory is cached for a
    /// moment, so that `ls -l pending` needs no lookup per item: for that
    /// moment after a decision, `stat` may still find it (its files, and
    /// writes to them, are gone at once).
    pub(crate) fn listed_ttl(&self) -> Duration {
        match self {
            Node::Item(_, ItemFile::Dir) => LISTED_ITEM_TTL,
            _ => self.entry_ttl().min(self.attr_ttl()),
        }
    }

    /// How long the kernel may cache the name leading to this node.
    pub(crate) fn entry_ttl(&self) -> Duration {
        match self {
            // A draft's name is private to its uid: never cached, so that
            // every walk to it asks whose it is. A session's names come and
            // go with its previews.
            Node::Item(..) | Node::Draft | Node::AgentSession(..) => FRESH_TTL,
            _ => STATIC_TTL,
        }
    }

    /// The mode bits, which the kernel enforces: see [`Owner::mode`].
    fn perm(&self, owner: Owner) -> u16 {
        let access = match self.kind() {
            FileType::Directory => Access::List,
            _ if self.target().is_some() || *self == Node::Stage => Access::Decide,
            _ => Access::Read,
        };
        owner.mode(access)
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

/// Who owns the mount's files, since when, and whom the mode bits let
/// read and list them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) since: SystemTime,
    /// Whether other users may read the session's files (status files,
    /// items, the journal).
    pub(crate) share_journal: bool,
    /// Whether the files' group reads what the owner reads (a group given
    /// on purpose, not the owner's login group).
    pub(crate) group_reads: bool,
    /// Whether users other than the owner and that group may list the
    /// directories.
    pub(crate) others_list: bool,
}

/// What a file is for, as far as its mode bits go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A device or `stage`: writing it decides or stages.
    Decide,
    /// A file that shows what the session holds or was told.
    Read,
    /// A directory.
    List,
}

impl Owner {
    /// The mode bits of a file used for `access`:
    ///
    /// - Devices (and `stage`) are the owner's alone (0600): only the owner
    ///   decides and stages.
    /// - Every other file shows what the owner's session holds or was
    ///   told (labels, reasons, details, result texts, which may hold
    ///   secrets): the owner's (0400), the group's too when it reads
    ///   (0440), everyone's when the owner shares the journal (0444).
    /// - Directories list ids only (0755). Where others may not list them
    ///   (a mount handed to a user, without `allow_other`) they only pass
    ///   through (0711, or 0751 for a group that reads): the kernel lets
    ///   them reach a name they know, and every file there refuses them.
    fn mode(&self, access: Access) -> u16 {
        match access {
            Access::Decide => 0o600,
            Access::Read if self.share_journal => 0o444,
            Access::Read if self.group_reads => 0o440,
            Access::Read => 0o400,
            Access::List => {
                let others = if self.others_list { 0o005 } else { 0o001 };
                let group = if self.group_reads { 0o050 } else { others << 3 };
                0o700 | group | others
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(share_journal: bool, group_reads: bool, others_list: bool) -> Owner {
        Owner {
            uid: 1000,
            gid: 1000,
            since: SystemTime::UNIX_EPOCH,
            share_journal,
            group_reads,
            others_list,
        }
    }

    /// Each way of mounting, and the modes of a device, a status file and
    /// a directory under it.
    #[test]
    fn the_mode_bits_say_who_decides_reads_and_lists() {
        let cases = [
            (
                "the user's own mount",
                owner(false, false, true),
                [0o600, 0o400, 0o755],
            ),
            (
                "shared with other users",
                owner(true, false, true),
                [0o600, 0o444, 0o755],
            ),
            (
                "a group that reads",
                owner(false, true, true),
                [0o600, 0o440, 0o755],
            ),
            (
                "handed to a user",
                owner(false, false, false),
                [0o600, 0o400, 0o711],
            ),
            (
                "handed to a user and group",
                owner(false, true, false),
                [0o600, 0o440, 0o751],
            ),
        ];
        let nodes = [
            Node::Device(Device::Resolve),
            Node::Text(TextFile::Status),
            Node::PendingDir,
        ];
        for (how, owner, modes) in cases {
            let seen: Vec<u16> = nodes.iter().map(|node| node.perm(owner)).collect();
            assert_eq!(seen, modes, "{how}");
            assert_eq!(Node::Stage.perm(owner), 0o600, "{how}: stage");
        }
    }
}
