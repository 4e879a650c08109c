//! What the small FUSE filesystems of the tests and benchmarks share: the
//! attributes of their root and of their one file (the benchmark's null
//! file, the slow journal test's gated disk).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};

/// The attributes of the root (a directory) or of the one file, `size`
/// bytes long: owned by this process's user, fixed times.
pub(crate) fn attr(ino: INodeNo, size: u64) -> FileAttr {
    let dir = ino == INodeNo::ROOT;
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let time: SystemTime = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    FileAttr {
        ino,
        size,
        blocks: 0,
        atime: time,
        mtime: time,
        ctime: time,
        crtime: time,
        kind: if dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if dir { 0o755 } else { 0o600 },
        nlink: if dir { 2 } else { 1 },
        uid,
        gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}
