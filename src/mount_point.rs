//! The mount point itself: what a directory is (a live xdev mount, a stale
//! one, a plain directory, ...), getting it ready for a mount (and why it
//! cannot be: [`MountError`]), unmounting it, and creating and removing it
//! when the caller asks xdev to manage it. The mount's lifecycle
//! (`mount.rs`) builds on these; nothing here needs it.
//!
//! **Who created the directory.** With [`MountOptions::create_dir`]
//! (`xdev mount` sets it) a missing mount point is created and removed again
//! when the mount ends. So that a daemon killed with SIGKILL does not leave
//! the directory behind for good, the creation is remembered in a marker
//! file, `created-<hash>` in the runtime directory (`/run/xdev` for root,
//! else `$XDG_RUNTIME_DIR/xdev`, or `xdev-<uid>` in the temporary directory
//! without one), whose content is the directory's canonical path. The next
//! mount at that directory (which also clears the stale mount) adopts it
//! and removes it when it ends. Only an empty directory is ever removed.
//!
//! **One daemon per mount point.** Getting a mount point ready
//! ([`prepare`]) first takes an exclusive lock ([`lock`]) on
//! `lock-<hash>` in the same runtime directory, keyed by the same canonical
//! path, and the mount holds it until it has ended: the look at what the
//! directory is, the clearing of a stale mount and the mount itself happen
//! under it, so of two xdev processes started at once on one directory
//! exactly one mounts, and no starter ever clears a mount another one has
//! just made. The kernel releases the lock of a process that dies, so a
//! SIGKILL leaves no lock behind.
//!
//! **A mount removed from outside** (`fusermount3 -u`, `umount`, also
//! lazily) is noticed by [`watch`], which wakes the mount's owner.
//!
//! **Whose the mount is** ([`owner`]): who its files belong to, and who
//! may hand them to whom, checked before anything is mounted.
//!
//! [`MountOptions::create_dir`]: crate::mount::MountOptions::create_dir

use std::fmt;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::errno::Errno;
use nix::mount::{umount2, MntFlags};
use nix::sys::statfs::{statfs, FsType, FUSE_SUPER_MAGIC};
use nix::unistd::geteuid;
use thiserror::Error;

use crate::device::Device;
use crate::error::describe;
use crate::safe_text::one_line;

mod lock;
pub(crate) mod watch;

use lock::MountLock;

pub(crate) mod owner;

/// Why a mount could not be made.
#[derive(Debug, Error)]
pub enum MountError {
    /// The mount point does not exist.
    #[error("{}", crate::texts::mount_point_does_not_exist(.0))]
    Missing(String),
    /// The mount point is not a directory.
    #[error("{}", crate::texts::mount_point_not_a_directory(.0))]
    NotADirectory(String),
    /// The mount point's parent directory does not exist (so the mount
    /// point cannot be created).
    #[error("{}", crate::texts::mount_point_parent_missing(.dir, .parent))]
    MissingParent {
        /// The mount point.
        dir: String,
        /// Its parent directory.
        parent: String,
    },
    /// The mount point has entries in it.
    #[error("{}", crate::texts::mount_point_not_empty(.dir, *.entries, .names))]
    NotEmpty {
        /// The mount point.
        dir: String,
        /// How many entries it holds.
        entries: usize,
        /// The first few of them (in byte order), as one line each.
        names: Vec<String>,
    },
    /// The mount point is served by a running xdev already: another xdev
    /// process holds its lock (it serves there, or is starting or stopping
    /// there), or it is a live xdev mount.
    #[error("{}", crate::texts::mount_point_already_served(.0))]
    AlreadyServed(String),
    /// The runtime directory, where the lock of each mount point is kept,
    /// cannot be used (not a directory, another user's, writable by
    /// others, ...). The message names it and the fix.
    #[error("{}", runtime_dir_problem(.dir, .source))]
    RuntimeDir {
        /// The runtime directory (or the lock file in it).
        dir: String,
        /// What is wrong with it.
        source: io::Error,
    },
    /// The mount point holds regular files named like the devices: what a
    /// write such as `echo ... > DIR/resolve` leaves while nothing is
    /// mounted there. xdev never deletes them.
    #[error("{}", crate::texts::leftover_device_files(.dir, .files))]
    LeftoverDeviceFiles {
        /// The mount point.
        dir: String,
        /// The file names (`resolve`, ...).
        files: Vec<String>,
    },
    /// The missing mount point could not be created.
    #[error("{}", crate::texts::cannot_create_mount_point(.dir, &describe(.source)))]
    CreateDir {
        /// The mount point.
        dir: String,
        /// What the system said.
        source: io::Error,
    },
    /// `/dev/fuse` is missing, is not the FUSE device, or cannot be opened.
    #[error("{}", fuse_device_problem(path, source, *as_root))]
    FuseDevice {
        /// The device path (`/dev/fuse`).
        path: String,
        /// What went wrong.
        source: io::Error,
        /// Whether xdev runs as root (the advice differs).
        as_root: bool,
    },
    /// The mount's files cannot be handed to the owner asked for
    /// ([`crate::mount::MountOptions::owner`]): only root gives them to
    /// another user. Found before anything is mounted.
    #[error(transparent)]
    Owner(#[from] owner::OwnerError),
    /// The `--journal` file cannot be used (not a regular file, no access,
    /// another user could write it). The message names the file.
    #[error("{}", crate::texts::cannot_use_journal_file(.0))]
    Journal(io::Error),
    /// Anything else (FUSE missing, no permission, ...).
    #[error("{}", crate::texts::cannot_mount(.dir, .source.to_string().trim_end(), permission_hint(.source)))]
    Io {
        /// The mount point.
        dir: String,
        /// What the system said.
        source: io::Error,
    },
}

/// Why the runtime directory cannot be used, and what to do about it.
fn runtime_dir_problem(dir: &str, source: &io::Error) -> String {
    let fix = if is_root() {
        crate::texts::RUNTIME_DIR_FIX_ROOT
    } else {
        crate::texts::RUNTIME_DIR_FIX_USER
    };
    crate::texts::cannot_use_runtime_dir(dir, &describe(source), fix)
}

/// What to do about a mount the system refused: mounting takes
/// CAP_SYS_ADMIN (root) or the setuid fusermount3, which a container
/// withholds unless it is started to allow FUSE.
fn permission_hint(source: &io::Error) -> &'static str {
    let refused = source.kind() == io::ErrorKind::PermissionDenied
        || source.raw_os_error() == Some(libc::EPERM)
        || source.to_string().contains("Operation not permitted");
    if refused {
        crate::texts::MOUNT_NOT_PERMITTED_HINT
    } else {
        ""
    }
}

/// The source (`FSName`) every xdev mount shows in `/proc/self/mountinfo`.
const XDEV_SOURCE: &str = "xdev";
/// The filesystem types an xdev mount shows there: `fuse` when mounted
/// directly (as root), `fuse.xdev` when mounted through `fusermount3`.
const XDEV_FSTYPES: [&str; 2] = ["fuse", "fuse.xdev"];
/// The FUSE device and its character-device number (10, 229).
pub(crate) const FUSE_DEVICE: &str = "/dev/fuse";
const FUSE_DEVICE_NUMBER: (u64, u64) = (10, 229);

/// What a directory is, as far as xdev is concerned.
#[derive(Debug)]
pub enum MountPointState {
    /// A live xdev mount.
    Xdev,
    /// A FUSE mount whose server is gone ("Transport endpoint is not
    /// connected").
    Stale,
    /// Nothing there.
    Missing,
    /// Something that is not a directory.
    NotADirectory,
    /// A directory that is not on a FUSE filesystem.
    NotFuse,
    /// A directory on another FUSE filesystem.
    OtherFuse {
        /// Its filesystem type in `/proc/self/mountinfo` (`?` if absent).
        fstype: String,
        /// Its source there (`?` if absent).
        source: String,
    },
    /// A live xdev mount this user may not enter: another user's, mounted
    /// without `--allow-other` (the kernel lets nobody else in, root
    /// included).
    Closed,
    /// It could not be looked at.
    Unreadable(io::Error),
}

impl fmt::Display for MountPointState {
    /// Why the directory is (or is not) an xdev mount, as a phrase.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountPointState::Xdev => f.write_str(crate::texts::MOUNT_POINT_XDEV),
            MountPointState::Stale => f.write_str(crate::texts::MOUNT_POINT_STALE),
            MountPointState::Missing => f.write_str(crate::texts::MOUNT_POINT_MISSING),
            MountPointState::NotADirectory => {
                f.write_str(crate::texts::MOUNT_POINT_NOT_A_DIRECTORY)
            }
            MountPointState::NotFuse => f.write_str(crate::texts::MOUNT_POINT_NOT_FUSE),
            MountPointState::OtherFuse { fstype, source } => {
                f.write_str(&crate::texts::mount_point_other_fuse(fstype, source))
            }
            MountPointState::Closed => f.write_str(crate::texts::MOUNT_POINT_CLOSED),
            MountPointState::Unreadable(error) => {
                f.write_str(&crate::texts::mount_point_unreadable(&describe(error)))
            }
        }
    }
}

/// What `dir` is: asks `statfs(2)` (which always reaches a FUSE server, so
/// a stale mount shows) and, for a FUSE filesystem, `/proc/self/mountinfo`
/// (whose entry for the directory's device must show xdev's source and
/// type).
pub fn probe_mount_point(dir: &Path) -> MountPointState {
    let magic = match statfs_type(dir) {
        Ok(magic) => magic,
        Err(error) => {
            return match error.raw_os_error() {
                Some(libc::ENOTCONN) => MountPointState::Stale,
                Some(libc::ENOENT) => MountPointState::Missing,
                Some(libc::ENOTDIR) => MountPointState::NotADirectory,
                _ => MountPointState::Unreadable(error),
            }
        }
    };
    let metadata = match std::fs::metadata(dir) {
        Ok(metadata) => metadata,
        // The kernel answers statfs for a FUSE mount a user may not enter
        // (its magic only), and refuses everything else.
        Err(error)
            if magic == FUSE_SUPER_MAGIC
                && error.kind() == io::ErrorKind::PermissionDenied
                && xdev_mounted_at(dir) =>
        {
            return MountPointState::Closed
        }
        Err(error) => return MountPointState::Unreadable(error),
    };
    if !metadata.is_dir() {
        return MountPointState::NotADirectory;
    }
    if magic != FUSE_SUPER_MAGIC {
        return MountPointState::NotFuse;
    }
    match mountinfo_fs(metadata.dev()) {
        Some((fstype, source))
            if source == XDEV_SOURCE && XDEV_FSTYPES.contains(&fstype.as_str()) =>
        {
            MountPointState::Xdev
        }
        Some((fstype, source)) => MountPointState::OtherFuse { fstype, source },
        None => MountPointState::OtherFuse {
            fstype: "?".into(),
            source: "?".into(),
        },
    }
}

/// Whether `dir` is a stale FUSE mount: its server is gone and the kernel
/// answers "Transport endpoint is not connected".
pub fn is_stale_mount(dir: &Path) -> bool {
    matches!(probe_mount_point(dir), MountPointState::Stale)
}

fn statfs_type(dir: &Path) -> io::Result<FsType> {
    Ok(statfs(dir)?.filesystem_type())
}

/// The filesystem type and source `/proc/self/mountinfo` shows for the
/// device `dev` (a line is `id parent MAJ:MIN root point opts ... - type
/// source superopts`).
fn mountinfo_fs(dev: u64) -> Option<(String, String)> {
    let wanted = format!("{}:{}", dev_major(dev), dev_minor(dev));
    mountinfo_find(|fields| fields.get(2) == Some(&wanted.as_str()))
}

/// Whether `/proc/self/mountinfo` shows an xdev mount at `dir` (found by
/// its path: a mount this user may not enter cannot be looked at).
fn xdev_mounted_at(dir: &Path) -> bool {
    let Some(point) = mountinfo_point(dir) else {
        return false;
    };
    mountinfo_find(|fields| fields.get(4) == Some(&point.as_str())).is_some_and(
        |(fstype, source)| source == XDEV_SOURCE && XDEV_FSTYPES.contains(&fstype.as_str()),
    )
}

/// Whether `/proc/self/mountinfo` shows a mount at `dir` other than the one
/// of the device `ours` (any, when it is not known).
pub(crate) fn other_mount_at(dir: &Path, ours: Option<u64>) -> bool {
    let Some(point) = mountinfo_point(dir) else {
        return false;
    };
    let ours = ours.map(|dev| format!("{}:{}", dev_major(dev), dev_minor(dev)));
    let mountinfo = read_mountinfo().unwrap_or_default();
    mountinfo.lines().any(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        fields.get(4) == Some(&point.as_str()) && fields.get(2).copied() != ours.as_deref()
    })
}

/// The filesystem type and source of the last mount whose fields before
/// ` - ` satisfy `wanted` (the last: a later mount over the same point
/// hides the earlier).
fn mountinfo_find(wanted: impl Fn(&[&str]) -> bool) -> Option<(String, String)> {
    let mountinfo = read_mountinfo().ok()?;
    mountinfo
        .lines()
        .filter_map(|line| {
            let (mount, filesystem) = line.split_once(" - ")?;
            let fields: Vec<&str> = mount.split(' ').collect();
            if !wanted(&fields) {
                return None;
            }
            let mut fields = filesystem.split(' ');
            Some((fields.next()?.to_string(), fields.next()?.to_string()))
        })
        .last()
}

/// `/proc/self/mountinfo`'s text. Its size shows as 0, so a read sized by
/// it would start at 32 bytes and double (eight reads for thirty mounts);
/// 16 KiB takes most machines' table in one read.
fn read_mountinfo() -> io::Result<String> {
    use std::io::Read;
    let mut text = String::with_capacity(16 * 1024);
    std::fs::File::open("/proc/self/mountinfo")?.read_to_string(&mut text)?;
    Ok(text)
}

/// The xdev mounts `/proc/self/mountinfo` showed when it was read: the
/// devices whose entry has xdev's source and type. A client that looks at
/// several paths (a directory and its ancestors) reads the table once.
#[derive(Debug, Default)]
pub(crate) struct XdevMounts {
    devices: Vec<String>,
}

impl XdevMounts {
    /// The xdev mounts there are now (none when the table cannot be read).
    pub(crate) fn now() -> XdevMounts {
        let mountinfo = read_mountinfo().unwrap_or_default();
        let devices = mountinfo
            .lines()
            .filter_map(|line| {
                let (mount, filesystem) = line.split_once(" - ")?;
                let mut filesystem = filesystem.split(' ');
                let (fstype, source) = (filesystem.next()?, filesystem.next()?);
                let is_xdev = source == XDEV_SOURCE && XDEV_FSTYPES.contains(&fstype);
                is_xdev.then(|| mount.split(' ').nth(2).map(str::to_string))?
            })
            .collect();
        XdevMounts { devices }
    }

    /// Whether `dir` is a directory on one of these mounts whose server
    /// answers: `statfs(2)` always reaches a FUSE server (so a stale mount
    /// fails it, where a `statx` may be answered from the kernel's cache).
    pub(crate) fn serve(&self, dir: &Path) -> bool {
        matches!(statfs_type(dir), Ok(magic) if magic == FUSE_SUPER_MAGIC) && self.holds_dir(dir)
    }

    /// Whether `dir` is a directory on one of these mounts (its root or
    /// below), by one `statx`.
    pub(crate) fn holds_dir(&self, dir: &Path) -> bool {
        std::fs::metadata(dir).is_ok_and(|metadata| {
            let dev = metadata.dev();
            let device = format!("{}:{}", dev_major(dev), dev_minor(dev));
            metadata.is_dir() && self.devices.contains(&device)
        })
    }
}

/// The canonical path of `dir` as `/proc/self/mountinfo` writes a mount
/// point.
fn mountinfo_point(dir: &Path) -> Option<String> {
    canonical(dir)
        .ok()
        .and_then(|path| path.to_str().map(mountinfo_escape))
}

/// A path as `/proc/self/mountinfo` writes it: space, tab, newline and
/// backslash as octal escapes.
fn mountinfo_escape(path: &str) -> String {
    let mut escaped = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            ' ' => escaped.push_str("\\040"),
            '\t' => escaped.push_str("\\011"),
            '\n' => escaped.push_str("\\012"),
            '\\' => escaped.push_str("\\134"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// glibc's encoding of device numbers (`major(3)`, `minor(3)`).
fn dev_major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

fn dev_minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}

// ----- getting the mount point ready --------------------------------------

/// A mount point claimed for one mount: the lock that keeps every other
/// xdev out of it for the mount's life and, when xdev created the
/// directory, its guard. Dropped after the unmount: the directory is
/// removed first, then the lock let go (fields drop in order).
#[derive(Debug)]
pub(crate) struct Claim {
    /// The directory xdev created, if it did (now or before a SIGKILL).
    pub(crate) created_dir: Option<CreatedDir>,
    _lock: MountLock,
}

/// Claims `dir` and gets it ready for a mount. First its lock: another
/// xdev holding it serves there ([`MountError::AlreadyServed`]). Then,
/// under the lock: a stale FUSE mount there is cleared; a live xdev mount,
/// device-named files left by writes while nothing was mounted, and any
/// other entry are refused; a missing directory is created when `create`
/// is set (its parent must exist).
pub(crate) fn prepare(dir: &Path, create: bool) -> Result<Claim, MountError> {
    let lock = lock_mount_point(dir, create)?;
    let created_dir = get_ready(dir, create)?;
    Ok(Claim {
        created_dir,
        _lock: lock,
    })
}

/// Takes the lock of `dir`, keyed by its canonical path (so its parent
/// must exist).
fn lock_mount_point(dir: &Path, create: bool) -> Result<MountLock, MountError> {
    let shown = dir.display().to_string();
    let key = match canonical(dir) {
        Ok(key) => key,
        Err(err) if err.kind() == io::ErrorKind::NotFound && create => {
            return Err(MountError::MissingParent {
                dir: shown,
                parent: parent_of(dir).display().to_string(),
            })
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(MountError::Missing(shown))
        }
        Err(source) => return Err(MountError::Io { dir: shown, source }),
    };
    let runtime = ready_runtime_dir().map_err(|(dir, source)| MountError::RuntimeDir {
        dir: dir.display().to_string(),
        source,
    })?;
    let path = runtime_file(&runtime, "lock", &key);
    match MountLock::try_take(&path, &key) {
        Ok(Some(lock)) => Ok(lock),
        Ok(None) => Err(MountError::AlreadyServed(shown)),
        Err(source) => Err(MountError::RuntimeDir {
            dir: path.display().to_string(),
            source,
        }),
    }
}

/// The rest of [`prepare`], under the lock. Returns the guard of a
/// directory xdev created (now or before a SIGKILL), which removes it
/// again when dropped.
fn get_ready(dir: &Path, create: bool) -> Result<Option<CreatedDir>, MountError> {
    let shown = dir.display().to_string();
    match probe_mount_point(dir) {
        MountPointState::Stale => {
            tracing::warn!(dir = %shown, "clearing a stale mount");
            unmount_dir(dir, true).map_err(|source| MountError::Io {
                dir: shown.clone(),
                source,
            })?;
        }
        // Closed: another user's live xdev mount, which lets only its owner in.
        MountPointState::Xdev | MountPointState::Closed => {
            return Err(MountError::AlreadyServed(shown))
        }
        _ => {}
    }
    let metadata = match std::fs::metadata(dir) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound && create => {
            return CreatedDir::create(dir).map(Some);
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(MountError::Missing(shown))
        }
        Err(source) => return Err(MountError::Io { dir: shown, source }),
    };
    if !metadata.is_dir() {
        return Err(MountError::NotADirectory(shown));
    }
    require_empty(dir)?;
    // Only a directory that is there can be one xdev made before: a marker
    // whose directory was removed by hand is replaced by `create` above,
    // never given a guard that would remove the new directory.
    Ok(CreatedDir::remembered(dir))
}

/// How many entries of a mount point that is not empty its refusal names.
const ENTRIES_NAMED: usize = 3;

/// The mount point must be empty; regular files named like the devices are
/// named in the refusal (they are what `echo ... > DIR/resolve` leaves when
/// nothing is mounted) and never deleted. Any other entry is refused with
/// how many there are and the first few names (in byte order, so the same
/// directory always reads the same).
fn require_empty(dir: &Path) -> Result<(), MountError> {
    let shown = dir.display().to_string();
    let io_error = |source| MountError::Io {
        dir: shown.clone(),
        source,
    };
    let mut entries = 0;
    let mut first = Vec::with_capacity(ENTRIES_NAMED + 1);
    let mut leftovers = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        entries += 1;
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        let name = entry.file_name();
        if is_file && device_names().any(|device| name == device) {
            leftovers.push(name.to_string_lossy().into_owned());
        }
        keep_first(&mut first, name.into_vec());
    }
    if !leftovers.is_empty() {
        leftovers.sort();
        return Err(MountError::LeftoverDeviceFiles {
            dir: shown,
            files: leftovers,
        });
    }
    if entries > 0 {
        return Err(MountError::NotEmpty {
            dir: shown,
            entries,
            names: first
                .iter()
                .map(|name| one_line(&String::from_utf8_lossy(name)).into_owned())
                .collect(),
        });
    }
    Ok(())
}

/// Keeps the [`ENTRIES_NAMED`] smallest names seen so far in `first`,
/// sorted, without holding every name of a large directory.
fn keep_first(first: &mut Vec<Vec<u8>>, name: Vec<u8>) {
    let at = first.partition_point(|kept| *kept < name);
    if at < ENTRIES_NAMED {
        first.insert(at, name);
        first.truncate(ENTRIES_NAMED);
    }
}

fn device_names() -> impl Iterator<Item = &'static str> {
    [Device::Resolve, Device::Reject, Device::Propose]
        .into_iter()
        .map(Device::name)
}

/// Why `/dev/fuse` cannot serve a mount, if it cannot: it is missing, is not
/// the FUSE character device, or cannot be opened for reading and writing
/// (what the mount does first).
pub(crate) fn check_fuse_device() -> Result<(), MountError> {
    let problem = |source| MountError::FuseDevice {
        path: FUSE_DEVICE.to_string(),
        source,
        as_root: is_root(),
    };
    let metadata = std::fs::metadata(FUSE_DEVICE).map_err(problem)?;
    let rdev = metadata.rdev();
    if !metadata.file_type().is_char_device()
        || (dev_major(rdev), dev_minor(rdev)) != FUSE_DEVICE_NUMBER
    {
        return Err(problem(io::Error::other(crate::texts::NOT_THE_FUSE_DEVICE)));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(FUSE_DEVICE)
        .map(drop)
        .map_err(problem)
}

/// What is wrong with the FUSE device at `path` and what to do about it.
/// A user who is not root mounts through `fusermount3`, and xdev opens
/// `/dev/fuse` itself first, so both must be usable.
fn fuse_device_problem(path: &str, source: &io::Error, as_root: bool) -> String {
    let what = match source.kind() {
        io::ErrorKind::NotFound => crate::texts::fuse_device_missing(path),
        io::ErrorKind::PermissionDenied => {
            crate::texts::fuse_device_not_accessible(path, &describe(source))
        }
        _ => crate::texts::fuse_device_unusable(path, &describe(source)),
    };
    if as_root {
        what
    } else {
        crate::texts::fuse_device_for_users(&what, path)
    }
}

fn is_root() -> bool {
    geteuid().is_root()
}

// ----- unmounting ------------------------------------------------------------

/// Unmounts `dir`: a plain unmount first, a lazy one if it is busy (or if
/// `lazy`). Falls back to `fusermount3` where the caller is not root.
pub(crate) fn unmount_dir(dir: &Path, lazy: bool) -> io::Result<()> {
    let flags = if lazy {
        MntFlags::MNT_DETACH
    } else {
        MntFlags::empty()
    };
    // nix reports a path it cannot pass (a NUL inside) as EINVAL, which
    // here would read as "not mounted".
    if dir.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            crate::texts::MOUNT_POINT_WITH_NUL,
        ));
    }
    match umount2(dir, flags) {
        Ok(()) => Ok(()),
        Err(Errno::EBUSY) if !lazy => unmount_dir(dir, true),
        Err(Errno::EINVAL) => Ok(()), // not mounted (any more)
        Err(Errno::EPERM) => fusermount_unmount(dir, lazy),
        Err(errno) => Err(errno.into()),
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
        Err(io::Error::other(crate::texts::lazy_unmount_failed(dir)))
    }
}

// ----- directories xdev created --------------------------------------------

/// A mount point xdev created; dropping it removes the directory (only if
/// it is empty) and the marker that remembers it.
#[derive(Debug)]
pub(crate) struct CreatedDir {
    dir: PathBuf,
    marker: Option<PathBuf>,
}

impl CreatedDir {
    /// Creates `dir` (its parent must exist) and remembers that xdev did.
    fn create(dir: &Path) -> Result<CreatedDir, MountError> {
        std::fs::create_dir(dir).map_err(|source| MountError::CreateDir {
            dir: dir.display().to_string(),
            source,
        })?;
        let marker = marker_path(dir);
        if let Some(marker) = &marker {
            if let Err(err) = write_marker(marker, dir) {
                tracing::warn!(%err, marker = %marker.display(), "cannot remember the created mount point; a SIGKILL would leave it behind");
            }
        }
        Ok(CreatedDir {
            dir: dir.to_path_buf(),
            marker,
        })
    }

    /// The guard of `dir` if a marker says xdev created it.
    fn remembered(dir: &Path) -> Option<CreatedDir> {
        let marker = marker_path(dir)?;
        let content = std::fs::read(&marker).ok()?;
        (content == marker_content(dir)?).then(|| CreatedDir {
            dir: dir.to_path_buf(),
            marker: Some(marker),
        })
    }
}

impl Drop for CreatedDir {
    fn drop(&mut self) {
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                // Not empty, or still busy: keep it, and the marker with it.
                tracing::warn!(%err, dir = %self.dir.display(), "cannot remove the mount point xdev created");
                return;
            }
        }
        if let Some(marker) = &self.marker {
            let _ = std::fs::remove_file(marker);
        }
    }
}

// ----- the runtime directory: locks and markers ------------------------------

/// Where locks and markers live: `/run/xdev` for root; for anyone else
/// `$XDG_RUNTIME_DIR/xdev`, else (no `XDG_RUNTIME_DIR`, as under tmux or
/// cron) `$XDG_STATE_HOME/xdev` or `~/.local/state/xdev`, and only without
/// a home of its own `xdev-<uid>` in the temporary directory, where another
/// user could make that name first.
fn runtime_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    runtime_dir_of(
        is_root(),
        UserDirs {
            runtime: var("XDG_RUNTIME_DIR"),
            state: var("XDG_STATE_HOME"),
            // A home that is not this user's own directory (`nobody`'s
            // /nonexistent, root's home under `setpriv`) holds no state.
            home: var("HOME").filter(|home| is_own_dir(home)),
        },
        || std::env::temp_dir().join(format!("xdev-{}", geteuid())),
    )
}

/// Whether `dir` is a directory (not a link) of this user.
fn is_own_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == geteuid().as_raw())
}

/// The directories of the environment [`runtime_dir`] chooses from.
struct UserDirs {
    runtime: Option<PathBuf>,
    state: Option<PathBuf>,
    home: Option<PathBuf>,
}

/// [`runtime_dir`] for a user (root or not) with `dirs`; `in_tmp` is the
/// last resort. Only absolute paths count, as the XDG rules say.
fn runtime_dir_of(root: bool, dirs: UserDirs, in_tmp: impl FnOnce() -> PathBuf) -> PathBuf {
    if root {
        return PathBuf::from("/run/xdev");
    }
    let usable = |dir: Option<PathBuf>| dir.filter(|dir| dir.is_absolute());
    if let Some(runtime) = usable(dirs.runtime) {
        return runtime.join("xdev");
    }
    let state =
        usable(dirs.state).or_else(|| usable(dirs.home).map(|home| home.join(".local/state")));
    match state {
        Some(state) => state.join("xdev"),
        None => in_tmp(),
    }
}

/// The runtime directory, created when missing (0755 for root, since
/// instance mount points live there too and others may need to reach them;
/// 0700 otherwise). Refused, with what is wrong, unless it is a directory
/// of this user that no other user may write: a lock file someone else
/// could make or hold would keep this user from mounting.
fn ready_runtime_dir() -> Result<PathBuf, (PathBuf, io::Error)> {
    let dir = runtime_dir();
    let mode = if is_root() { 0o755 } else { 0o700 };
    match ready_private_dir(&dir, mode) {
        Ok(()) => Ok(dir),
        Err(error) => Err((dir, error)),
    }
}

/// Creates `dir` (mode `mode`) when missing; then it must be a directory of
/// this user that no one else may write.
fn ready_private_dir(dir: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)?;
    let metadata = std::fs::symlink_metadata(dir)?;
    let why = if !metadata.is_dir() {
        crate::texts::RUNTIME_DIR_NOT_A_DIRECTORY
    } else if metadata.uid() != geteuid().as_raw() {
        crate::texts::RUNTIME_DIR_NOT_OURS
    } else if metadata.permissions().mode() & 0o022 != 0 {
        crate::texts::RUNTIME_DIR_SHARED
    } else {
        return Ok(());
    };
    Err(io::Error::other(why))
}

/// The directory a path names, for `xdev mount` through a missing parent.
fn parent_of(dir: &Path) -> &Path {
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The canonical path of `dir`, found through its parent: the directory
/// itself may be missing, or a stale mount that cannot be resolved. A
/// symbolic link there is followed (mount(2) follows it too), so a link
/// and its target share one lock.
fn canonical(dir: &Path) -> io::Result<PathBuf> {
    let Some(name) = dir.file_name() else {
        // `/`, `.` or `..`: there is no parent to go through.
        return dir.canonicalize();
    };
    let path = parent_of(dir).canonicalize()?.join(name);
    let is_link = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink());
    if is_link {
        return Ok(path.canonicalize().unwrap_or(path));
    }
    Ok(path)
}

/// A canonical path as a line: what a marker holds, and what the names of
/// runtime files hash.
fn key_line(key: &Path) -> Vec<u8> {
    let mut line = key.as_os_str().as_encoded_bytes().to_vec();
    line.push(b'\n');
    line
}

/// The canonical path of `dir` as a marker holds it.
fn marker_content(dir: &Path) -> Option<Vec<u8>> {
    canonical(dir).ok().map(|key| key_line(&key))
}

/// The runtime file `<kind>-<hash>` of the mount point whose canonical
/// path is `key`.
fn runtime_file(runtime: &Path, kind: &str, key: &Path) -> PathBuf {
    runtime.join(format!("{kind}-{:016x}", fnv1a(&key_line(key))))
}

fn marker_path(dir: &Path) -> Option<PathBuf> {
    Some(runtime_file(
        &runtime_dir(),
        "created",
        &canonical(dir).ok()?,
    ))
}

fn write_marker(marker: &Path, dir: &Path) -> io::Result<()> {
    let content = marker_content(dir).ok_or_else(|| io::Error::other("no canonical path"))?;
    std::fs::write(marker, content)
}

/// FNV-1a: a stable hash (unlike `DefaultHasher`) for marker names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_removed_by_hand_after_a_sigkill_is_made_again_and_kept() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("mnt");
        let Claim { created_dir, _lock } = prepare(&dir, true).expect("created");
        // A SIGKILLed daemon never drops its guard (the kernel lets go of
        // its lock); then a person removes the directory by hand.
        std::mem::forget(created_dir.expect("a guard"));
        drop(_lock);
        std::fs::remove_dir(&dir).expect("removed by hand");
        let second = prepare(&dir, true).expect("created again");
        assert!(dir.is_dir(), "the new directory stays while it is used");
        drop(second);
        assert!(!dir.exists(), "and goes with its guard");
    }

    #[test]
    fn a_full_mount_point_is_refused_with_its_count_and_first_names() {
        let tmp = tempfile::tempdir().expect("tmp");
        let refusal = |count: usize| {
            let dir = tmp.path().join(format!("dir-{count}"));
            std::fs::create_dir(&dir).expect("mkdir");
            for n in (0..count).rev() {
                std::fs::write(dir.join(format!("f{n:02}")), "").expect("entry");
            }
            let shown = dir.display().to_string();
            let error = require_empty(&dir).expect_err("not empty");
            error.to_string().replace(&shown, "D")
        };
        assert_eq!(refusal(1), "mount point D is not empty: it holds 1 entry (f00); mount on an empty directory, or move it out first");
        assert_eq!(refusal(3), "mount point D is not empty: it holds 3 entries (f00, f01, f02); mount on an empty directory, or move them out first");
        assert_eq!(refusal(40), "mount point D is not empty: it holds 40 entries (f00, f01, f02 and 37 more); mount on an empty directory, or move them out first");
    }

    #[test]
    fn only_the_first_names_in_byte_order_are_kept() {
        let mut first = Vec::new();
        for name in ["m", "b", "z", ".hidden", "a", "B"] {
            keep_first(&mut first, name.as_bytes().to_vec());
        }
        assert_eq!(first, [b".hidden".to_vec(), b"B".to_vec(), b"a".to_vec()]);
    }

    #[test]
    fn a_missing_parent_is_named_and_nothing_is_locked_or_made() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("none").join("mnt");
        let error = prepare(&dir, true).expect_err("no parent");
        let parent = tmp.path().join("none");
        assert_eq!(
            error.to_string(),
            format!(
                "cannot create mount point {}: its parent directory {} does not exist (create it first: mkdir -p -- '{}')",
                dir.display(),
                parent.display(),
                parent.display()
            )
        );
        assert!(matches!(prepare(&dir, false), Err(MountError::Missing(_))));
        assert!(!parent.exists());
    }

    #[test]
    fn a_runtime_dir_others_could_write_or_that_is_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let fresh = tmp.path().join("made").join("xdev");
        ready_private_dir(&fresh, 0o700).expect("made");
        let mode = std::fs::metadata(&fresh)
            .expect("made")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).expect("mkdir");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).expect("symlink");
        for (dir, why) in [
            (&shared, crate::texts::RUNTIME_DIR_SHARED),
            (&link, crate::texts::RUNTIME_DIR_NOT_A_DIRECTORY),
        ] {
            let error = ready_private_dir(dir, 0o700).expect_err("refused");
            assert_eq!(error.to_string(), why);
        }
    }

    #[test]
    fn a_link_and_its_target_share_one_key() {
        let tmp = tempfile::tempdir().expect("tmp");
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).expect("mkdir");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert_eq!(
            canonical(&link).expect("link"),
            canonical(&target).expect("target")
        );
    }

    #[test]
    fn a_plain_directory_a_file_and_nothing_are_not_mounts() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").expect("file");
        assert!(matches!(
            probe_mount_point(tmp.path()),
            MountPointState::NotFuse
        ));
        assert!(matches!(
            probe_mount_point(&file),
            MountPointState::NotADirectory
        ));
        assert!(matches!(
            probe_mount_point(&tmp.path().join("none")),
            MountPointState::Missing
        ));
    }

    #[test]
    fn the_fuse_device_message_names_the_device_and_advises_non_root_users() {
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        let as_root = fuse_device_problem("/dev/fuse", &missing, true);
        assert!(as_root.starts_with("FUSE is not available: /dev/fuse is missing"));
        assert!(!as_root.contains("fusermount3"), "{as_root}");
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            fuse_device_problem("/dev/fuse", &denied, false),
            "FUSE is not available: /dev/fuse is not accessible: Permission denied; as a user other than root, xdev needs fusermount3 (package fuse3) and a /dev/fuse that everyone may read and write (crw-rw-rw-)"
        );
    }

    #[test]
    fn device_numbers_decode_like_glibc() {
        // makedev(10, 229) and makedev(259, 70000)
        assert_eq!((dev_major(0xae5), dev_minor(0xae5)), (10, 229));
        let big = (259u64 << 8) | (70000 & 0xff) | ((70000u64 & !0xff) << 12);
        assert_eq!((dev_major(big), dev_minor(big)), (259, 70000));
    }

    #[test]
    fn markers_are_keyed_by_the_canonical_path() {
        let tmp = tempfile::tempdir().expect("tmp");
        let direct = tmp.path().join("mnt");
        let roundabout = tmp.path().join(".").join("mnt");
        assert_eq!(marker_content(&direct), marker_content(&roundabout));
        assert_ne!(
            marker_content(&direct),
            marker_content(&tmp.path().join("other"))
        );
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn without_a_runtime_dir_locks_live_in_the_users_state_dir_not_in_tmp() {
        let dirs = |runtime: Option<&str>, state: Option<&str>, home: Option<&str>| UserDirs {
            runtime: runtime.map(PathBuf::from),
            state: state.map(PathBuf::from),
            home: home.map(PathBuf::from),
        };
        let tmp = || PathBuf::from("/tmp/xdev-1000");
        let chosen = |root, dirs| runtime_dir_of(root, dirs, tmp);
        assert_eq!(
            chosen(true, dirs(Some("/run/user/0"), None, None)),
            PathBuf::from("/run/xdev")
        );
        let with_runtime = dirs(Some("/run/user/1000"), None, Some("/home/a"));
        assert_eq!(
            chosen(false, with_runtime),
            PathBuf::from("/run/user/1000/xdev")
        );
        let with_state = dirs(None, Some("/home/a/state"), Some("/home/a"));
        assert_eq!(
            chosen(false, with_state),
            PathBuf::from("/home/a/state/xdev")
        );
        let with_home = dirs(Some(""), Some("relative"), Some("/home/a"));
        assert_eq!(
            chosen(false, with_home),
            PathBuf::from("/home/a/.local/state/xdev")
        );
        assert_eq!(chosen(false, dirs(None, None, Some("~"))), tmp());
    }
}
