//! The lock that makes one xdev the only one at a mount point: an exclusive
//! `flock(2)` on a file of the runtime directory, taken before the mount
//! point is looked at and held until the mount has ended.
//!
//! A lock file is removed when its lock is let go, while still held. A
//! process that opened it just before then gets a lock on a file that no
//! longer has that name, so every taker checks, once it holds the lock,
//! that the name still leads to the file it locked, and starts over when
//! it does not: two holders of one name can never be.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// How often a lock file that was replaced between its open and its lock
/// is opened again before giving up (each time, its holder has just let go).
const ATTEMPTS: usize = 16;

/// A held mount point lock; dropping it removes the lock file and lets go.
pub(crate) struct MountLock {
    path: PathBuf,
    _file: Flock<File>,
}

impl std::fmt::Debug for MountLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountLock")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl MountLock {
    /// Takes the lock at `path` for the mount point `key` without waiting:
    /// `None` when another process (or another mount of this one) holds
    /// it. The file then says who holds it: this process's id and `key`,
    /// one line each.
    pub(crate) fn try_take(path: &Path, key: &Path) -> io::Result<Option<MountLock>> {
        for _ in 0..ATTEMPTS {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)?;
            let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => locked,
                Err((_, Errno::EWOULDBLOCK)) => return Ok(None),
                Err((_, errno)) => return Err(errno.into()),
            };
            if !still_named(&file, path) {
                continue;
            }
            file.set_len(0)?;
            writeln!(file, "{}\n{}", std::process::id(), key.display())?;
            return Ok(Some(MountLock {
                path: path.to_path_buf(),
                _file: file,
            }));
        }
        Err(io::Error::other(crate::texts::LOCK_FILE_REPLACED))
    }
}

/// Whether `path` still names the file `file` is open on.
fn still_named(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

impl Drop for MountLock {
    fn drop(&mut self) {
        // Removed while still held (the lock goes with the file, after
        // this): see the module's docs for why that is safe.
        if let Err(err) = std::fs::remove_file(&self.path) {
            tracing::debug!(%err, path = %self.path.display(), "cannot remove the lock file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_keeps_every_other_taker_out_until_it_is_let_go() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("lock-1");
        let key = Path::new("/the/mount point");
        let held = MountLock::try_take(&path, key)
            .expect("lock")
            .expect("free");
        assert_eq!(
            std::fs::read_to_string(&path).expect("lock file"),
            format!("{}\n/the/mount point\n", std::process::id())
        );
        // Another open file description: what another process would have.
        assert!(MountLock::try_take(&path, key).expect("lock").is_none());
        drop(held);
        assert!(!path.exists(), "the lock file goes with its lock");
        let again = MountLock::try_take(&path, key).expect("lock");
        assert!(again.is_some(), "free again once let go");
    }

    #[test]
    fn a_lock_on_a_file_removed_meanwhile_is_taken_again_on_the_new_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("lock-2");
        let old = File::create(&path).expect("old file");
        std::fs::remove_file(&path).expect("removed");
        let stale = Flock::lock(old, FlockArg::LockExclusiveNonblock).expect("lock old");
        assert!(!still_named(&stale, &path));
        let lock = MountLock::try_take(&path, Path::new("/m"))
            .expect("lock")
            .expect("the new file is free");
        assert!(still_named(&lock._file, &path));
    }

    #[test]
    fn a_symbolic_link_is_never_followed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let target = tmp.path().join("target");
        let path = tmp.path().join("lock-3");
        std::os::unix::fs::symlink(&target, &path).expect("symlink");
        let error = MountLock::try_take(&path, Path::new("/m")).expect_err("refused");
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
        assert!(!target.exists(), "nothing was made through the link");
    }
}
