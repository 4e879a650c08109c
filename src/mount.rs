//! Mount lifecycle: checking the mount point, clearing a stale mount,
//! mounting in the background, and unmounting without leaving anything behind.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuser::{Config, MountOption, SessionACL};
use thiserror::Error;

use crate::fs::{Control, XdevFs};
use crate::journal::Journal;
use crate::plan_desk::PlanDesk;
use crate::session::Session;

/// How a mount is set up.
#[derive(Clone)]
pub struct MountOptions {
    /// Let other users in: they may read the status files (and, with
    /// `share_journal`, the journal); their writes to the devices fail with
    /// `EACCES` (the kernel enforces the mode bits).
    pub allow_other: bool,
    /// Request-loop threads (default 2).
    pub threads: usize,
    /// Also append every journal record to this file, synced before the
    /// write that caused it returns.
    pub journal_file: Option<PathBuf>,
    /// The plan review desk behind `plan/` (none: no `plan/` directory).
    pub plan: Option<PlanDesk>,
    /// Let other users (with `allow_other`) read `log` and `events`, which
    /// hold the reasons written. Off: they are the mount owner's only
    /// (mode 0400).
    pub share_journal: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            allow_other: false,
            threads: 2,
            journal_file: None,
            plan: None,
            share_journal: false,
        }
    }
}

impl std::fmt::Debug for MountOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountOptions")
            .field("allow_other", &self.allow_other)
            .field("threads", &self.threads)
            .field("journal_file", &self.journal_file)
            .field("plan", &self.plan.is_some())
            .field("share_journal", &self.share_journal)
            .finish()
    }
}

/// Why a mount could not be made.
#[derive(Debug, Error)]
pub enum MountError {
    /// The mount point does not exist.
    #[error("mount point {0} does not exist")]
    Missing(String),
    /// The mount point is not a directory.
    #[error("mount point {0} is not a directory")]
    NotADirectory(String),
    /// The mount point has entries in it.
    #[error("mount point {0} is not empty")]
    NotEmpty(String),
    /// The `--journal` file cannot be used (not a regular file, no access).
    /// The message names the file.
    #[error("cannot use the journal file: {0}")]
    Journal(io::Error),
    /// Anything else (FUSE missing, no permission, ...).
    #[error("cannot mount {dir}: {source}")]
    Io {
        /// The mount point.
        dir: String,
        /// What the system said.
        source: io::Error,
    },
}

/// A live mount. Unmounts on [`Mount::unmount`] and on drop: blocked
/// writers get `ECANCELED`, then the mount is removed (lazily if something
/// still holds it busy).
pub struct Mount {
    dir: PathBuf,
    journal: Journal,
    control: Arc<Control>,
    background: Option<fuser::BackgroundSession>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Mounts the devices of `session` at `dir` and serves them in the
/// background until the returned [`Mount`] is unmounted or dropped.
///
/// The texts of the session name `dir` as given. A stale mount left at
/// `dir` by a killed process is cleared first.
pub fn mount(
    session: &Session,
    dir: impl AsRef<Path>,
    options: MountOptions,
) -> Result<Mount, MountError> {
    let dir = dir.as_ref();
    let shown = dir.display().to_string();
    check_mount_point(dir)?;
    let io_error = |source| MountError::Io {
        dir: shown.clone(),
        source,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("xdev-dispatch")
        .enable_all()
        .build()
        .map_err(io_error)?;
    session.set_mount_dir(shown.clone());
    let journal = Journal::new(options.journal_file.as_deref()).map_err(MountError::Journal)?;
    journal.follow(session);
    let fs = XdevFs::new(
        session.clone(),
        journal.clone(),
        options.plan.clone(),
        runtime.handle().clone(),
        options.share_journal,
    );
    let control = fs.control();
    let background = fuser::spawn_mount(fs, dir, &fuse_config(&options)).map_err(io_error)?;
    control.set_notifier(background.notifier());
    tracing::info!(dir = %shown, "mounted");
    Ok(Mount {
        dir: dir.to_path_buf(),
        journal,
        control,
        background: Some(background),
        runtime: Some(runtime),
    })
}

fn fuse_config(options: &MountOptions) -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("xdev".into()),
        MountOption::Subtype("xdev".into()),
        MountOption::DefaultPermissions,
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::NoExec,
    ];
    config.acl = if options.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    config
}

/// The mount point must be an empty directory; a stale FUSE mount there
/// ("Transport endpoint is not connected") is cleared first.
fn check_mount_point(dir: &Path) -> Result<(), MountError> {
    let shown = dir.display().to_string();
    if is_stale_mount(dir) {
        tracing::warn!(dir = %shown, "clearing a stale mount");
        unmount_dir(dir, true).map_err(|source| MountError::Io {
            dir: shown.clone(),
            source,
        })?;
    }
    let metadata = match std::fs::metadata(dir) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(MountError::Missing(shown))
        }
        Err(source) => return Err(MountError::Io { dir: shown, source }),
    };
    if !metadata.is_dir() {
        return Err(MountError::NotADirectory(shown));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|source| MountError::Io {
        dir: shown.clone(),
        source,
    })?;
    if entries.next().is_some() {
        return Err(MountError::NotEmpty(shown));
    }
    Ok(())
}

/// Whether `dir` is a stale FUSE mount: its server is gone and the kernel
/// answers "Transport endpoint is not connected". Asks with `statfs`, which
/// always reaches the server (a `stat` may be answered from cached attributes).
pub fn is_stale_mount(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid C string and `stats` a writable statfs.
    let failed = unsafe {
        let mut stats: libc::statfs = std::mem::zeroed();
        libc::statfs(path.as_ptr(), &mut stats) != 0
    };
    failed && io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN)
}

/// Unmounts `dir`: a plain unmount first, a lazy one if it is busy (or if
/// `lazy`). Falls back to `fusermount3` where the caller is not root.
fn unmount_dir(dir: &Path, lazy: bool) -> io::Result<()> {
    let path = CString::new(dir.as_os_str().as_bytes())?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: `path` is a valid NUL-terminated string for the whole call.
    if unsafe { libc::umount2(path.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EBUSY) if !lazy => unmount_dir(dir, true),
        Some(libc::EINVAL) => Ok(()), // not mounted (any more)
        Some(libc::EPERM) => fusermount_unmount(dir, lazy),
        _ => Err(error),
    }
}

fn fusermount_unmount(dir: &Path, lazy: bool) -> io::Result<()> {
    let mut command = Command::new("fusermount3");
    command.arg("-u").arg("-q");
    if lazy {
        command.arg("-z");
    }
    let status = command.arg("--").arg(dir).status()?;
    if status.success() {
        Ok(())
    } else if !lazy {
        fusermount_unmount(dir, true)
    } else {
        Err(io::Error::other(format!(
            "fusermount3 -uz {} failed",
            dir.display()
        )))
    }
}

/// How long unmounting waits for cancelled writers to get their answer.
const CANCEL_GRACE: Duration = Duration::from_millis(500);
/// How long unmounting waits for the request loop to end.
const LOOP_GRACE: Duration = Duration::from_millis(1000);

impl Mount {
    /// Where the devices are mounted.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The mount's decision journal (what `log` shows).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Cancels blocked writers (`ECANCELED`), then removes the mount.
    pub fn unmount(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        let Some(background) = self.background.take() else {
            return Ok(());
        };
        self.control.close();
        wait_until(CANCEL_GRACE, || self.control.in_flight() == 0);
        let result = unmount_dir(&self.dir, false);
        // The loop ends once the kernel lets go; after a lazy unmount that is
        // when the last open descriptor closes, so do not wait forever.
        wait_until(LOOP_GRACE, || background.guard.is_finished());
        if background.guard.is_finished() {
            if let Err(err) = background.join() {
                tracing::warn!(%err, "request loop ended with an error");
            }
        }
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so a Mount may be dropped inside async code.
            runtime.shutdown_background();
        }
        tracing::info!(dir = %self.dir.display(), "unmounted");
        result
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(err) = self.shutdown() {
            tracing::warn!(%err, dir = %self.dir.display(), "unmount failed");
        }
    }
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}
