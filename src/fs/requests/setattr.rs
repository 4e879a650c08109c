//! Which attribute changes a setattr may make. A draft takes any (it is
//! the writer's file). Of the mount's own files, only a writable one may
//! be truncated, and only to 0 (that is what `>` does) or, on a device
//! descriptor, to what was written on it (an in-place writer tidying up
//! after itself); any other size is `EINVAL`. Nothing else changes: a
//! read-only file's size, and anyone's mode, owner or times, are `EPERM`.
//! Each refusal names its rule.

use std::time::{Duration, SystemTime};

use fuser::{FileAttr, FileHandle, INodeNo, TimeOrNow};

use super::lookup::INODE_GONE;
use crate::fs::handles::drafts::Draft;
use crate::fs::refusal::{refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::{Node, FRESH_TTL};

/// The changes one setattr asks for (`None`: leave as is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AttrChange {
    pub(crate) size: Option<u64>,
    pub(crate) mode: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) atime: Option<TimeOrNow>,
    pub(crate) mtime: Option<TimeOrNow>,
}

/// A setattr time, as a point in time.
fn time_of(time: TimeOrNow) -> SystemTime {
    match time {
        TimeOrNow::SpecificTime(time) => time,
        TimeOrNow::Now => SystemTime::now(),
    }
}

/// Whether `change` is allowed on `node` (one of the mount's own files).
/// `written` tells how many bytes the descriptor the change came through
/// wrote, if it is a device descriptor; asked only for such a truncate.
/// A truncate carries times of its own, which are then ignored.
fn check_change(
    node: &Node,
    change: &AttrChange,
    written: impl FnOnce() -> Option<usize>,
) -> Result<(), Refusal> {
    let writable = node.target().is_some() || *node == Node::Stage;
    match change.size {
        Some(0) if writable => Ok(()),
        Some(size) if writable && written().is_some_and(|n| n as u64 == size) => Ok(()),
        Some(_) if writable => Err(refuse!(
            EINVAL,
            "a writable file truncates only to 0, or to what its descriptor wrote"
        )),
        Some(_) => Err(refuse!(EPERM, "a read-only file keeps its size")),
        None if change.mode.is_some() || change.uid.is_some() || change.gid.is_some() => Err(
            refuse!(EPERM, "the mount's files keep their mode and owner"),
        ),
        None if change.atime.is_some() || change.mtime.is_some() => {
            Err(refuse!(EPERM, "the mount's files keep their times"))
        }
        None => Ok(()),
    }
}

impl XdevFs {
    /// Applies a setattr of `ino` (through descriptor `fh`, if any) and
    /// returns the attributes after it, and how long they may be kept.
    pub(crate) fn setattr(
        &self,
        ino: INodeNo,
        change: &AttrChange,
        fh: Option<FileHandle>,
    ) -> Result<(FileAttr, Duration), Refusal> {
        let node = self.node(ino);
        // A draft, named or (through its descriptor) not.
        let draft = match node {
            Some(Node::Draft) | None => fh
                .and_then(|fh| self.handles.draft(fh))
                .or_else(|| self.drafts.get(ino)),
            Some(_) => None,
        };
        if let Some(draft) = draft {
            self.change_draft(&draft, change)?;
            return Ok((draft.attr(), FRESH_TTL));
        }
        let node = node.ok_or(INODE_GONE)?;
        check_change(&node, change, || fh.and_then(|fh| self.handles.written(fh)))?;
        let mut attr = self.attr(ino, &node, self.owner.uid);
        // As on an ordinary file, the size is what the truncate asked for.
        attr.size = change.size.unwrap_or(attr.size);
        Ok((attr, node.attr_ttl()))
    }

    /// Changes a draft's size, mode, owner or times, as setattr asks.
    fn change_draft(&self, draft: &Draft, change: &AttrChange) -> Result<(), Refusal> {
        if let Some(size) = change.size {
            self.drafts.set_len(draft, size)?;
        }
        let times = (change.atime.map(time_of), change.mtime.map(time_of));
        draft.change(change.mode, (change.uid, change.gid), times);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::device::{Device, MAX_MESSAGE};
    use crate::fs::testing::{assert_refusals, draft, ino_of, Mount, RefusalCase, OWNER_UID};
    use crate::fs::tree::node::ItemFile;
    use crate::fs::tree::status::TextFile;
    use fuser::Errno;

    /// What `check_change` decides, as the errno the caller would get.
    fn check(
        node: &Node,
        change: &AttrChange,
        written: impl FnOnce() -> Option<usize>,
    ) -> Result<(), Errno> {
        check_change(node, change, written).map_err(|refusal| refusal.errno)
    }

    fn truncate(size: u64) -> AttrChange {
        AttrChange {
            size: Some(size),
            ..AttrChange::default()
        }
    }

    fn writable_nodes() -> [Node; 4] {
        [
            Node::Device(Device::Resolve),
            Node::Item(Arc::from("p1"), ItemFile::Reject),
            Node::PlanCtl,
            Node::Stage,
        ]
    }

    #[test]
    fn a_writable_file_truncates_to_zero() {
        for node in writable_nodes() {
            assert_eq!(check(&node, &truncate(0), || None), Ok(()), "{node:?}");
        }
    }

    #[test]
    fn a_device_descriptor_truncates_to_what_it_wrote() {
        let device = Node::Device(Device::Reject);
        assert_eq!(check(&device, &truncate(6), || Some(6)), Ok(()));
        assert_eq!(check(&device, &truncate(7), || Some(6)), Err(Errno::EINVAL));
    }

    #[test]
    fn a_writable_file_refuses_any_other_size_with_einval() {
        for node in writable_nodes() {
            assert_eq!(
                check(&node, &truncate(3), || None),
                Err(Errno::EINVAL),
                "{node:?}"
            );
        }
    }

    #[test]
    fn a_read_only_file_refuses_any_truncate_with_eperm() {
        for node in [Node::Text(TextFile::Status), Node::Log, Node::Events] {
            assert_eq!(check(&node, &truncate(0), || None), Err(Errno::EPERM));
            assert_eq!(check(&node, &truncate(5), || Some(5)), Err(Errno::EPERM));
        }
    }

    #[test]
    fn mode_owner_and_times_are_refused_with_eperm() {
        let changes = [
            AttrChange {
                mode: Some(0o644),
                ..AttrChange::default()
            },
            AttrChange {
                uid: Some(0),
                ..AttrChange::default()
            },
            AttrChange {
                gid: Some(0),
                ..AttrChange::default()
            },
            AttrChange {
                atime: Some(TimeOrNow::Now),
                ..AttrChange::default()
            },
            AttrChange {
                mtime: Some(TimeOrNow::SpecificTime(SystemTime::UNIX_EPOCH)),
                ..AttrChange::default()
            },
        ];
        for change in changes {
            for node in [Node::Device(Device::Resolve), Node::Text(TextFile::Last)] {
                assert_eq!(check(&node, &change, || None), Err(Errno::EPERM));
            }
        }
    }

    #[test]
    fn a_truncate_with_times_is_judged_by_its_size() {
        let change = AttrChange {
            mtime: Some(TimeOrNow::Now),
            ..truncate(0)
        };
        assert_eq!(
            check(&Node::Device(Device::Propose), &change, || None),
            Ok(())
        );
    }

    #[test]
    fn an_empty_change_is_allowed_anywhere() {
        for node in [Node::Root, Node::Log, Node::Device(Device::Resolve)] {
            assert_eq!(check(&node, &AttrChange::default(), || None), Ok(()));
        }
    }

    /// Each refusal of a setattr, on a fresh mount: its errno and its rule.
    #[test]
    fn each_refusal_of_a_setattr_names_its_rule() {
        let cases: &[RefusalCase<XdevFs>] = &[
            (
                "resolve truncated to 3 bytes it did not write",
                |fs| fs.setattr(ino_of(fs, "resolve"), &truncate(3), None).err(),
                refuse!(
                    EINVAL,
                    "a writable file truncates only to 0, or to what its descriptor wrote"
                ),
            ),
            (
                "status truncated",
                |fs| fs.setattr(ino_of(fs, "status"), &truncate(0), None).err(),
                refuse!(EPERM, "a read-only file keeps its size"),
            ),
            (
                "resolve's mode changed",
                |fs| {
                    let chmod = AttrChange {
                        mode: Some(0o600),
                        ..AttrChange::default()
                    };
                    fs.setattr(ino_of(fs, "resolve"), &chmod, None).err()
                },
                refuse!(EPERM, "the mount's files keep their mode and owner"),
            ),
            (
                "status's group changed",
                |fs| {
                    let chgrp = AttrChange {
                        gid: Some(0),
                        ..AttrChange::default()
                    };
                    fs.setattr(ino_of(fs, "status"), &chgrp, None).err()
                },
                refuse!(EPERM, "the mount's files keep their mode and owner"),
            ),
            (
                "resolve's modification time changed",
                |fs| {
                    let touch = AttrChange {
                        mtime: Some(TimeOrNow::Now),
                        ..AttrChange::default()
                    };
                    fs.setattr(ino_of(fs, "resolve"), &touch, None).err()
                },
                refuse!(EPERM, "the mount's files keep their times"),
            ),
            (
                "an inode that is gone (the lookup's rule)",
                |fs| fs.setattr(INodeNo(9_999_999), &truncate(0), None).err(),
                refuse!(ENOENT, "the inode is gone"),
            ),
            (
                "a draft extended past one message (the drafts' rule)",
                |fs| {
                    let (ino, fh) = draft(fs, INodeNo::ROOT, "note.tmp");
                    let past = MAX_MESSAGE as u64 + 1;
                    fs.setattr(ino, &truncate(past), Some(fh)).err()
                },
                refuse!(EFBIG, "a draft holds at most one message"),
            ),
            (
                "a removed draft truncated through its descriptor (the drafts' rule)",
                |fs| {
                    let (ino, fh) = draft(fs, INodeNo::ROOT, "note.tmp");
                    let unlinked = fs.unlink(OWNER_UID, INodeNo::ROOT, "note.tmp".as_ref());
                    unlinked.expect("the draft goes");
                    fs.setattr(ino, &truncate(1), Some(fh)).err()
                },
                refuse!(ENOENT, "the draft's name is gone"),
            ),
        ];
        assert_refusals(include_str!("setattr.rs"), cases, |trigger| {
            trigger(&Mount::new().fs)
        });
    }
}
