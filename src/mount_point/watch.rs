//! Noticing that a mount was removed by someone else: `fusermount3 -u`,
//! `umount`, or `umount -l` (which detaches the mount at once, while the
//! kernel keeps serving descriptors already open on it, so the FUSE
//! session alone would not end). The kernel wakes a `poll(2)` on
//! `/proc/self/mountinfo` with `POLLPRI` whenever the mount table changes;
//! a thread of its own waits there and looks whether the mount's device is
//! still listed.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::mountinfo_fs;

/// Watches one mount; dropping it stops the watch.
#[derive(Debug)]
pub(crate) struct RemovalWatch {
    /// The mount's device, as its entry in `/proc/self/mountinfo` shows it.
    dev: u64,
    /// Closing it wakes the thread, which then ends.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl RemovalWatch {
    /// Watches the mount now at `dir`: `removed` is called (once, from a
    /// thread of the watch) when `/proc/self/mountinfo` no longer lists it.
    pub(crate) fn start(
        dir: &Path,
        removed: impl FnOnce() + Send + 'static,
    ) -> io::Result<RemovalWatch> {
        let dev = std::fs::metadata(dir)?.dev();
        // Opened before the first look: a change after it wakes the poll.
        let mountinfo = File::open("/proc/self/mountinfo")?;
        let (woken, stop) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let thread = std::thread::Builder::new()
            .name("xdev-mountwatch".into())
            .spawn(move || {
                if wait_for_removal(&mountinfo, &woken, dev) {
                    removed();
                }
            })?;
        Ok(RemovalWatch {
            dev,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The mount's device.
    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }

    /// Whether `/proc/self/mountinfo` still lists the mount.
    pub(crate) fn still_mounted(&self) -> bool {
        is_listed(self.dev)
    }
}

impl Drop for RemovalWatch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether the mount table lists the device `dev`.
fn is_listed(dev: u64) -> bool {
    mountinfo_fs(dev).is_some()
}

/// Waits until the mount of `dev` is no longer listed (true), or the watch
/// is stopped or cannot go on (false).
fn wait_for_removal(mountinfo: &File, stop: &OwnedFd, dev: u64) -> bool {
    loop {
        if !is_listed(dev) {
            return true;
        }
        let mut fds = [
            PollFd::new(mountinfo.as_fd(), PollFlags::POLLPRI),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(errno) => {
                tracing::warn!(%errno, "cannot watch the mount table; a mount removed from outside goes unnoticed until its session ends");
                return false;
            }
        }
        if fds[1].revents().is_some_and(|events| !events.is_empty()) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_watch_on_a_mount_that_stays_ends_when_dropped_without_calling_back() {
        // The root file system stays mounted for the whole test.
        let (told, heard) = mpsc::channel();
        let watch = RemovalWatch::start(Path::new("/"), move || {
            let _ = told.send(());
        })
        .expect("watch");
        assert!(watch.still_mounted());
        drop(watch);
        assert_eq!(
            heard.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected),
            "never called back"
        );
    }
}
