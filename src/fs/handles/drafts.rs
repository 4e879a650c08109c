//! Drafts: the scratch files that atomic-write libraries and agents' file
//! tools create beside a file they replace. A writer creates one in the
//! mount root or in a `pending/<id>/` directory, writes it, and renames it
//! onto a device: the rename delivers the draft as one message (see
//! `requests/draft_ops.rs`). Until then a draft is a small ordinary file
//! held in memory; this is its store, and each bound it keeps refuses with
//! its rule.
//!
//! Drafts are private to the uid that made them (other uids can neither
//! see nor open them) and bounded per uid. A draft whose `pending/<id>/`
//! directory has gone is dropped the next time that uid creates one. A draft
//! whose creating process has exited (an orphan: `cp r D/d1; mv D/d1
//! D/resolve` runs two processes) stays until its uid's quota needs the
//! room, oldest orphan first; all go at unmount with the mount.
//! Nothing here is on the path of a plain `echo > resolve`.

use crate::maps::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{FileAttr, FileType, INodeNo};
use parking_lot::Mutex;

use super::slice_at;
use crate::device::MAX_MESSAGE;
use crate::fs::refusal::{refuse, Refusal};

/// How many drafts one uid may hold at once.
pub(crate) const MAX_DRAFTS_PER_UID: usize = 64;

/// How many bytes one uid's drafts may hold together. One draft holds at
/// most one message ([`MAX_MESSAGE`]).
pub(crate) const MAX_DRAFT_BYTES_PER_UID: usize = 2 * 1024 * 1024;

/// A draft never holds more than one message, so a rename can never
/// deliver one that is too long.
const TOO_BIG: Refusal = refuse!(EFBIG, "a draft holds at most one message");

/// The process that created a draft: its uid (whose draft it is) and its
/// thread group, with the group's start time so that a reused pid does not
/// keep an orphan alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Creator {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pid: u32,
    started: Option<u64>,
}

impl Creator {
    /// The creator `pid` (a thread group id) of uid `uid`, as it is now.
    pub(crate) fn new(uid: u32, gid: u32, pid: u32) -> Self {
        Creator {
            uid,
            gid,
            pid,
            started: start_time(pid),
        }
    }

    /// Whether the creating process still runs.
    fn is_alive(&self) -> bool {
        self.started.is_some() && start_time(self.pid) == self.started
    }
}

/// When process `pid` started (field 22 of `/proc/<pid>/stat`, in clock
/// ticks since boot), if it exists.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: count from its end.
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// One draft: an inode number, whose it is, and its content.
#[derive(Debug)]
pub(crate) struct Draft {
    ino: INodeNo,
    creator: Creator,
    file: Mutex<DraftFile>,
}

/// What a draft holds, as an ordinary file would.
#[derive(Debug)]
struct DraftFile {
    bytes: Vec<u8>,
    /// Its name is gone (unlinked, delivered, dropped): it holds nothing,
    /// and writes to a descriptor still open on it fail, so that no uid can
    /// keep bytes past its bounds through descriptors of nameless drafts.
    detached: bool,
    perm: u16,
    uid: u32,
    gid: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
}

impl Draft {
    /// The inode number it was given.
    pub(crate) fn ino(&self) -> INodeNo {
        self.ino
    }

    /// Whether `uid` may see and open it: only its creator's uid may.
    pub(crate) fn is_visible_to(&self, uid: u32) -> bool {
        self.creator.uid == uid
    }

    /// Its name is gone: it lets go of its bytes.
    fn detach(&self) {
        let mut file = self.file.lock();
        file.detached = true;
        file.bytes = Vec::new();
    }

    /// Its bytes at `offset`, at most `size` of them.
    pub(crate) fn read(&self, offset: u64, size: u32) -> Vec<u8> {
        let mut file = self.file.lock();
        file.atime = SystemTime::now();
        slice_at(&file.bytes, offset, size).to_vec()
    }

    /// All its bytes.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.file.lock().bytes.clone()
    }

    /// How many bytes it holds.
    pub(crate) fn len(&self) -> usize {
        self.file.lock().bytes.len()
    }

    /// Changes its `mode`, owner (uid, gid) or times (atime, mtime), each
    /// left as is when `None` (permission was checked by the kernel, as for
    /// any file).
    pub(crate) fn change(
        &self,
        mode: Option<u32>,
        (uid, gid): (Option<u32>, Option<u32>),
        (atime, mtime): (Option<SystemTime>, Option<SystemTime>),
    ) {
        let mut file = self.file.lock();
        if let Some(mode) = mode {
            // The type bits are the kernel's; only permission bits change.
            file.perm = (mode & 0o7777) as u16;
        }
        file.uid = uid.unwrap_or(file.uid);
        file.gid = gid.unwrap_or(file.gid);
        file.atime = atime.unwrap_or(file.atime);
        file.mtime = mtime.unwrap_or(file.mtime);
        file.ctime = SystemTime::now();
    }

    /// Its attributes.
    pub(crate) fn attr(&self) -> FileAttr {
        let file = self.file.lock();
        let size = file.bytes.len() as u64;
        FileAttr {
            ino: self.ino,
            size,
            blocks: size.div_ceil(512),
            atime: file.atime,
            mtime: file.mtime,
            ctime: file.ctime,
            crtime: file.ctime,
            kind: FileType::RegularFile,
            perm: file.perm,
            nlink: u32::from(!file.detached),
            uid: file.uid,
            gid: file.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

/// Where a draft is: its directory's inode, whose it is, and its name.
/// Each uid has names of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Place {
    pub(crate) dir: INodeNo,
    pub(crate) uid: u32,
    pub(crate) name: String,
}

/// Every draft of a mount.
#[derive(Debug, Default)]
pub(crate) struct Drafts {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_ino: HashMap<u64, (Place, Arc<Draft>)>,
    by_place: HashMap<Place, u64>,
}

impl Table {
    fn remove(&mut self, place: &Place) -> Option<Arc<Draft>> {
        let ino = self.by_place.remove(place)?;
        self.by_ino.remove(&ino).map(|(_, draft)| draft)
    }

    fn insert(&mut self, place: Place, draft: Arc<Draft>) {
        self.by_place.insert(place.clone(), draft.ino.0);
        self.by_ino.insert(draft.ino.0, (place, draft));
    }

    fn of_uid(&self, uid: u32) -> impl Iterator<Item = &Arc<Draft>> {
        self.by_ino
            .values()
            .filter(move |(place, _)| place.uid == uid)
            .map(|(_, draft)| draft)
    }

    /// Drops uid `uid`'s oldest draft whose creator has exited (never
    /// `except`, the draft being written): whether there was one.
    fn drop_oldest_orphan(&mut self, uid: u32, except: Option<INodeNo>) -> bool {
        let oldest = self
            .by_ino
            .values()
            .filter(|(held, draft)| {
                held.uid == uid && Some(draft.ino) != except && !draft.creator.is_alive()
            })
            .min_by_key(|(_, draft)| draft.file.lock().ctime)
            .map(|(held, _)| held.clone());
        let Some(place) = oldest else { return false };
        if let Some(draft) = self.remove(&place) {
            draft.detach();
        }
        true
    }

    /// The bytes uid `uid` holds in drafts other than `except`.
    fn bytes_of_uid_except(&self, uid: u32, except: INodeNo) -> usize {
        self.of_uid(uid)
            .filter(|draft| draft.ino != except)
            .map(|draft| draft.len())
            .sum()
    }
}

/// How `create` found or made a draft.
#[derive(Debug)]
pub(crate) enum Created {
    /// A new draft.
    New(Arc<Draft>),
    /// The caller's draft of that name, which it opens (`O_CREAT` without
    /// `O_EXCL` on an existing file).
    Existing(Arc<Draft>),
}

impl Drafts {
    /// Creates a draft at `place` for `creator`, with inode number `ino`
    /// (taken only for a new draft) and permission bits `perm`.
    ///
    /// Drafts of that uid whose directory is gone (`dir_exists`) are
    /// dropped first; at the per-uid count, its oldest orphan makes room,
    /// and without one it is `EDQUOT`. An existing draft of that name is
    /// `EEXIST` when `exclusive`, else opened.
    pub(crate) fn create(
        &self,
        place: Place,
        creator: Creator,
        perm: u16,
        exclusive: bool,
        ino: impl FnOnce() -> INodeNo,
        dir_exists: impl Fn(INodeNo) -> bool,
    ) -> Result<Created, Refusal> {
        let mut table = self.table.lock();
        if let Some(existing) = table.by_place.get(&place) {
            if exclusive {
                return Err(refuse!(EEXIST, "the draft exists (O_EXCL)"));
            }
            let (_, draft) = &table.by_ino[existing];
            return Ok(Created::Existing(Arc::clone(draft)));
        }
        let gone: Vec<Place> = table
            .by_ino
            .values()
            .filter(|(held, _)| held.uid == place.uid && !dir_exists(held.dir))
            .map(|(held, _)| held.clone())
            .collect();
        for held in &gone {
            if let Some(draft) = table.remove(held) {
                draft.detach();
            }
        }
        if table.of_uid(place.uid).count() >= MAX_DRAFTS_PER_UID
            && !table.drop_oldest_orphan(place.uid, None)
        {
            return Err(refuse!(
                EDQUOT,
                "the uid holds its most drafts, none of them an orphan"
            ));
        }
        let now = SystemTime::now();
        let draft = Arc::new(Draft {
            ino: ino(),
            creator,
            file: Mutex::new(DraftFile {
                bytes: Vec::new(),
                detached: false,
                perm: perm & 0o7777,
                uid: creator.uid,
                gid: creator.gid,
                atime: now,
                mtime: now,
                ctime: now,
            }),
        });
        table.insert(place, Arc::clone(&draft));
        Ok(Created::New(draft))
    }

    /// The draft numbered `ino`, while it has a name.
    pub(crate) fn get(&self, ino: INodeNo) -> Option<Arc<Draft>> {
        let table = self.table.lock();
        table.by_ino.get(&ino.0).map(|(_, draft)| Arc::clone(draft))
    }

    /// The draft at `place`.
    pub(crate) fn find(&self, place: &Place) -> Option<Arc<Draft>> {
        let table = self.table.lock();
        let ino = table.by_place.get(place)?;
        table.by_ino.get(ino).map(|(_, draft)| Arc::clone(draft))
    }

    /// The drafts uid `uid` has in directory `dir`, by name.
    pub(crate) fn listed(&self, dir: INodeNo, uid: u32) -> Vec<(INodeNo, String)> {
        let table = self.table.lock();
        let mut listed: Vec<(INodeNo, String)> = table
            .by_ino
            .values()
            .filter(|(place, _)| place.dir == dir && place.uid == uid)
            .map(|(place, draft)| (draft.ino, place.name.clone()))
            .collect();
        listed.sort_by(|a, b| a.1.cmp(&b.1));
        listed
    }

    /// Takes the draft at `place` away (an unlink, or its delivery): its
    /// bytes go at once (take them first to deliver them); descriptors
    /// still open on it read nothing and cannot write (`ENOENT`).
    pub(crate) fn remove(&self, place: &Place) -> Option<Arc<Draft>> {
        let draft = self.table.lock().remove(place)?;
        draft.detach();
        Some(draft)
    }

    /// Renames the draft at `from` to `to` (same uid), replacing a draft
    /// already there, as rename(2) does. The caller found the draft first:
    /// it is missing only if it went in between (an unlink, a delivery).
    pub(crate) fn rename(&self, from: &Place, to: Place) -> Result<(), Refusal> {
        let mut table = self.table.lock();
        let draft = table
            .remove(from)
            .ok_or(refuse!(ENOENT, "the draft went while it was being renamed"))?;
        table.remove(&to);
        table.insert(to, draft);
        Ok(())
    }

    /// Writes `data` at `offset` into `draft`: never past one message
    /// (`EFBIG`), nor past its uid's byte total (`EDQUOT`).
    pub(crate) fn write(&self, draft: &Draft, offset: u64, data: &[u8]) -> Result<(), Refusal> {
        let end = usize::try_from(offset)
            .ok()
            .and_then(|start| start.checked_add(data.len()))
            .ok_or(TOO_BIG)?;
        let start = end - data.len();
        self.resize(
            draft,
            |len| len.max(end),
            |bytes| {
                bytes[start..end].copy_from_slice(data);
            },
        )
    }

    /// Truncates or extends `draft` to `size` bytes, within the same bounds
    /// as a write.
    pub(crate) fn set_len(&self, draft: &Draft, size: u64) -> Result<(), Refusal> {
        let size = usize::try_from(size).map_err(|_| TOO_BIG)?;
        self.resize(draft, |_| size, |_| {})
    }

    /// Resizes `draft` to `new_len(its length)` and then lets `fill`
    /// change its bytes, if the new length stays within one message and
    /// its uid's total; else nothing changes.
    fn resize(
        &self,
        draft: &Draft,
        new_len: impl FnOnce(usize) -> usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), Refusal> {
        let mut table = self.table.lock();
        // Held throughout: making room never touches this draft.
        let mut file = draft.file.lock();
        if file.detached {
            return Err(refuse!(ENOENT, "the draft's name is gone"));
        }
        let before = file.bytes.len();
        let after = new_len(before);
        if after > MAX_MESSAGE {
            return Err(TOO_BIG);
        }
        if after > before {
            let uid = draft.creator.uid;
            // Orphans make room, oldest first, before the quota refuses.
            while table.bytes_of_uid_except(uid, draft.ino) + after > MAX_DRAFT_BYTES_PER_UID {
                if !table.drop_oldest_orphan(uid, Some(draft.ino)) {
                    return Err(refuse!(
                        EDQUOT,
                        "the uid's drafts hold their most bytes, none of them an orphan"
                    ));
                }
            }
        }
        file.bytes.resize(after, 0);
        fill(&mut file.bytes);
        let now = SystemTime::now();
        file.mtime = now;
        file.ctime = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::fs::testing::{assert_refusals, RefusalCase};

    const UID: u32 = 4242;

    /// The place of uid [`UID`]'s draft `name` in the root.
    fn place(name: &str) -> Place {
        Place {
            dir: INodeNo::ROOT,
            uid: UID,
            name: name.to_string(),
        }
    }

    /// This test process, as a creator that still runs: its drafts are
    /// never orphans.
    fn running() -> Creator {
        Creator::new(UID, UID, std::process::id())
    }

    /// A fresh inode number.
    fn fresh_ino() -> INodeNo {
        static NEXT: AtomicU64 = AtomicU64::new(1_000);
        INodeNo(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Creates a draft at `place` for `creator` (exclusively, if asked).
    fn create(
        drafts: &Drafts,
        place: Place,
        creator: Creator,
        exclusive: bool,
    ) -> Result<Created, Refusal> {
        drafts.create(place, creator, 0o600, exclusive, fresh_ino, |_| true)
    }

    /// Creates the running creator's new draft `name` in the root.
    fn new_draft(drafts: &Drafts, name: &str) -> Arc<Draft> {
        match create(drafts, place(name), running(), true) {
            Ok(Created::New(draft)) => draft,
            other => panic!("draft {name}: {other:?}"),
        }
    }

    /// Fills the uid's byte quota with full drafts of a running creator.
    fn fill_byte_quota(drafts: &Drafts) {
        for n in 0..MAX_DRAFT_BYTES_PER_UID / MAX_MESSAGE {
            let draft = new_draft(drafts, &format!("full{n}"));
            drafts
                .set_len(&draft, MAX_MESSAGE as u64)
                .expect("a full draft");
        }
    }

    /// Each refusal of the drafts' store, on a fresh store: its errno and
    /// its rule.
    #[test]
    fn each_refusal_of_the_store_names_its_rule() {
        let cases: &[RefusalCase<Drafts>] = &[
            (
                "a write past one message",
                |drafts| {
                    let draft = new_draft(drafts, "a.tmp");
                    drafts.write(&draft, MAX_MESSAGE as u64, b"x").err()
                },
                refuse!(EFBIG, "a draft holds at most one message"),
            ),
            (
                "a write whose end overflows",
                |drafts| {
                    let draft = new_draft(drafts, "a.tmp");
                    drafts.write(&draft, u64::MAX, b"x").err()
                },
                refuse!(EFBIG, "a draft holds at most one message"),
            ),
            (
                "a truncate past one message",
                |drafts| {
                    let draft = new_draft(drafts, "a.tmp");
                    drafts.set_len(&draft, MAX_MESSAGE as u64 + 1).err()
                },
                refuse!(EFBIG, "a draft holds at most one message"),
            ),
            (
                "an exclusive create of a draft that exists",
                |drafts| {
                    new_draft(drafts, "a.tmp");
                    create(drafts, place("a.tmp"), running(), true).err()
                },
                refuse!(EEXIST, "the draft exists (O_EXCL)"),
            ),
            (
                "a create past the uid's count, with no orphan",
                |drafts| {
                    for n in 0..MAX_DRAFTS_PER_UID {
                        new_draft(drafts, &format!("d{n}"));
                    }
                    create(drafts, place("one.more"), running(), true).err()
                },
                refuse!(
                    EDQUOT,
                    "the uid holds its most drafts, none of them an orphan"
                ),
            ),
            (
                // Through a rename, only a draft removed between its find
                // and its move gets here (a race).
                "a rename of a draft that is not there",
                |drafts| drafts.rename(&place("a.tmp"), place("b.tmp")).err(),
                refuse!(ENOENT, "the draft went while it was being renamed"),
            ),
            (
                "a write to a draft whose name is gone",
                |drafts| {
                    let draft = new_draft(drafts, "a.tmp");
                    drafts.remove(&place("a.tmp"));
                    drafts.write(&draft, 0, b"x").err()
                },
                refuse!(ENOENT, "the draft's name is gone"),
            ),
            (
                "a write past the uid's bytes, with no orphan",
                |drafts| {
                    fill_byte_quota(drafts);
                    let draft = new_draft(drafts, "one.more");
                    drafts.write(&draft, 0, b"x").err()
                },
                refuse!(
                    EDQUOT,
                    "the uid's drafts hold their most bytes, none of them an orphan"
                ),
            ),
        ];
        assert_refusals(include_str!("drafts.rs"), cases, |trigger| {
            trigger(&Drafts::default())
        });
    }

    /// Where a quota would refuse, an orphan (its creator has exited) makes
    /// room instead.
    #[test]
    fn an_orphan_makes_room_before_a_quota_refuses() {
        // No process has this pid: its drafts are orphans from the start.
        let exited = Creator::new(UID, UID, u32::MAX);
        let drafts = Drafts::default();
        let orphan = create(&drafts, place("orphan"), exited, true);
        assert!(matches!(orphan, Ok(Created::New(_))));
        for n in 1..MAX_DRAFTS_PER_UID {
            new_draft(&drafts, &format!("d{n}"));
        }
        let made = create(&drafts, place("one.more"), running(), true);
        assert!(matches!(made, Ok(Created::New(_))));
        assert!(drafts.find(&place("orphan")).is_none());

        let drafts = Drafts::default();
        let orphan = match create(&drafts, place("orphan"), exited, true) {
            Ok(Created::New(draft)) => draft,
            other => panic!("the orphan: {other:?}"),
        };
        drafts.set_len(&orphan, 1).expect("a byte");
        // The last full draft needs the orphan's byte.
        fill_byte_quota(&drafts);
        assert!(drafts.find(&place("orphan")).is_none());
    }
}
