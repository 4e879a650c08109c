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
//! file, `/run/xdev/created-<hash>` for root, else
//! `$XDG_RUNTIME_DIR/xdev/created-<hash>`, whose content is the directory's
//! canonical path. The next mount at that directory (which also clears the
//! stale mount) adopts it and removes it when it ends. Only an empty
//! directory is ever removed; without a runtime directory nothing is
//! remembered across a SIGKILL.
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
    /// The mount point has entries in it.
    #[error("{}", crate::texts::mount_point_not_empty(.0))]
    NotEmpty(String),
    /// The mount point is already a live xdev mount.
    #[error("{}", crate::texts::mount_point_already_served(.0))]
    AlreadyServed(String),
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
    let Some(point) = canonical(dir).and_then(|path| path.to_str().map(mountinfo_escape)) else {
        return false;
    };
    mountinfo_find(|fields| fields.get(4) == Some(&point.as_str())).is_some_and(
        |(fstype, source)| source == XDEV_SOURCE && XDEV_FSTYPES.contains(&fstype.as_str()),
    )
}

/// The filesystem type and source of the last mount whose fields before
/// ` - ` satisfy `wanted` (the last: a later mount over the same point
/// hides the earlier).
fn mountinfo_find(wanted: impl Fn(&[&str]) -> bool) -> Option<(String, String)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
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

/// Gets `dir` ready for a mount: a stale FUSE mount there is cleared; a live
/// xdev mount, device-named files left by writes while nothing was mounted,
/// and any other entry are refused; a missing directory is created when
/// `create` is set. Returns the guard of a directory xdev created (now or
/// before a SIGKILL), which removes it again when dropped.
pub(crate) fn prepare(dir: &Path, create: bool) -> Result<Option<CreatedDir>, MountError> {
    let shown = dir.display().to_string();
    match probe_mount_point(dir) {
        MountPointState::Stale => {
            tracing::warn!(dir = %shown, "clearing a stale mount");
            unmount_dir(dir, true).map_err(|source| MountError::Io {
                dir: shown.clone(),
                source,
            })?;
        }
        MountPointState::Xdev => return Err(MountError::AlreadyServed(shown)),
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

/// The mount point must be empty; regular files named like the devices are
/// named in the refusal (they are what `echo ... > DIR/resolve` leaves when
/// nothing is mounted) and never deleted.
fn require_empty(dir: &Path) -> Result<(), MountError> {
    let shown = dir.display().to_string();
    let io_error = |source| MountError::Io {
        dir: shown.clone(),
        source,
    };
    let mut any = false;
    let mut leftovers = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        any = true;
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        let name = entry.file_name();
        if is_file && device_names().any(|device| name == device) {
            leftovers.push(name.to_string_lossy().into_owned());
        }
    }
    if !leftovers.is_empty() {
        leftovers.sort();
        return Err(MountError::LeftoverDeviceFiles {
            dir: shown,
            files: leftovers,
        });
    }
    if any {
        return Err(MountError::NotEmpty(shown));
    }
    Ok(())
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

/// Where markers live: `/run/xdev` for root, else `$XDG_RUNTIME_DIR/xdev`.
fn runtime_dir() -> Option<PathBuf> {
    if is_root() {
        return Some(PathBuf::from("/run/xdev"));
    }
    let base = std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty())?;
    Some(PathBuf::from(base).join("xdev"))
}

/// The canonical path of `dir`, found through its parent: the directory
/// itself may be missing, or a stale mount that cannot be resolved.
fn canonical(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?;
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Some(parent.canonicalize().ok()?.join(name))
}

fn marker_content(dir: &Path) -> Option<Vec<u8>> {
    let mut content = canonical(dir)?.into_os_string().into_vec();
    content.push(b'\n');
    Some(content)
}

fn marker_path(dir: &Path) -> Option<PathBuf> {
    let key = fnv1a(&marker_content(dir)?);
    Some(runtime_dir()?.join(format!("created-{key:016x}")))
}

fn write_marker(marker: &Path, dir: &Path) -> io::Result<()> {
    if let Some(parent) = marker.parent() {
        std::fs::create_dir_all(parent)?;
    }
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
        let first = prepare(&dir, true).expect("created").expect("a guard");
        // A SIGKILLed daemon never drops its guard; then a person removes
        // the directory by hand.
        std::mem::forget(first);
        std::fs::remove_dir(&dir).expect("removed by hand");
        let second = prepare(&dir, true).expect("created again");
        assert!(dir.is_dir(), "the new directory stays while it is used");
        drop(second);
        assert!(!dir.exists(), "and goes with its guard");
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
}
