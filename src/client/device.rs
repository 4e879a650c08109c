//! Device I/O: finding the mount, writing a device-like file and reading
//! its answer back on the same descriptor, reading status files, and the
//! one error type of every client command.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::{EXIT_CANNOT_RUN, EXIT_ERROR, EXIT_MOUNT_GONE, EXIT_NOT_FOUND, EXIT_USAGE, MOUNT_ENV};
use crate::error::{describe, errno_name};
use crate::mount::MountError;
use crate::mount_point::owner::user_name;
use crate::mount_point::{probe_mount_point, MountPointState, XdevMounts};
use crate::safe_text::{path_name_problem, NameProblem};
use crate::session::DEFAULT_MOUNT_DIR;
use crate::texts;

/// The mount a client command talks to: `explicit` (`--mount`), else
/// `$XDEV_DIR` when set and not empty, else `/xdev`.
pub fn mount_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    match std::env::var_os(MOUNT_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(DEFAULT_MOUNT_DIR),
    }
}

/// Checks that `dir` is a live xdev mount before a client opens anything
/// in it: a write into a plain directory would create a file there (or
/// overwrite one of the user's), and a stale mount only answers
/// "Transport endpoint is not connected".
///
/// A `dir` inside a mount (`/xdev/sessions/agent-one`, to decide one
/// session's previews only) must get there by names the mount lists (see
/// [`crate::safe_text::path_name_problem`]): `XDEV_DIR=/xdev/sessions/..`,
/// made from a session id `..`, would reach the root's devices, which
/// decide for every session. Such a `dir` is refused with
/// [`ClientError::BadArgument`] before anything is opened.
///
/// A live mount is recognised from one read of `/proc/self/mountinfo`, a
/// `statfs` and a `statx` of `dir`; only a `dir` that is not one is probed
/// further, to say what it is instead.
pub fn check_mount(dir: &Path) -> Result<(), ClientError> {
    let mounts = XdevMounts::now();
    if mounts.serve(dir) {
        return check_path_below_mount(dir, &mounts);
    }
    let shown = dir.display().to_string();
    match probe_mount_point(dir) {
        MountPointState::Xdev => check_path_below_mount(dir, &XdevMounts::now()),
        MountPointState::Stale => Err(ClientError::StaleMount { dir: shown }),
        MountPointState::Closed => Err(ClientError::ClosedMount { dir: shown }),
        found => Err(ClientError::NotAMount { dir: shown, found }),
    }
}

/// Refuses a `dir` inside an xdev mount whose path, below the mount's
/// root, holds a name the mount never lists. The root is the shortest of
/// `dir`'s ancestors, as written (`..` not resolved), that is an xdev
/// mount; most `dir`s are the root itself and have nothing below it.
fn check_path_below_mount(dir: &Path, mounts: &XdevMounts) -> Result<(), ClientError> {
    let ancestors: Vec<&Path> = dir
        .ancestors()
        .skip(1)
        .filter(|ancestor| !ancestor.as_os_str().is_empty())
        .collect();
    let Some(root) = ancestors
        .into_iter()
        .rev()
        .find(|ancestor| mounts.holds_dir(ancestor))
    else {
        return Ok(());
    };
    let Ok(below) = dir.strip_prefix(root) else {
        return Ok(());
    };
    for part in below.components() {
        let name = part.as_os_str().to_string_lossy();
        let problem = match part {
            std::path::Component::ParentDir => Some(NameProblem::Dots("..")),
            std::path::Component::Normal(_) => path_name_problem(&name),
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(ClientError::BadArgument(texts::mount_tail_not_listed(
                &dir.display().to_string(),
                &root.display().to_string(),
                &name,
                problem,
            )));
        }
    }
    Ok(())
}

/// Why a client command failed. `Display` is the one line the CLI prints
/// after `xdev: `.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The device (or `plan/ctl`) refused the message: its `write(2)`
    /// failed with `errno`, and `text` is the answer read back on the same
    /// descriptor (the handler's message).
    #[error("{}: {text}", errno_name(*errno))]
    Refused {
        /// The `write(2)` errno.
        errno: i32,
        /// The result text read back.
        text: String,
    },
    /// A file of the mount could not be opened, read or written. Shown as
    /// `ERRNO: what: description`.
    #[error("{}", io_line(what, source))]
    Io {
        /// What was being done (`cannot open /xdev/resolve`).
        what: String,
        /// What the system said.
        source: io::Error,
    },
    /// The mount answered something the stage protocol does not allow, or
    /// ended the conversation early.
    #[error("{0}")]
    Protocol(String),
    /// The mount could not be made.
    #[error(transparent)]
    Mount(#[from] MountError),
    /// The directory is not a live xdev mount; nothing in it was opened.
    #[error("{}", texts::no_xdev_mount(.dir, .found, MOUNT_ENV))]
    NotAMount {
        /// The directory given.
        dir: String,
        /// What it is instead.
        found: MountPointState,
    },
    /// The directory is an xdev mount whose daemon is gone.
    #[error("{}", texts::stale_mount(.dir))]
    StaleMount {
        /// The mount point.
        dir: String,
    },
    /// The directory is another user's xdev mount, which lets only its
    /// owner in (the kernel refuses everyone else, root included).
    #[error("{}", texts::closed_mount(.dir))]
    ClosedMount {
        /// The mount point.
        dir: String,
    },
    /// `xdev wait`: the daemon that should serve the mount has exited.
    #[error("{}", texts::daemon_exited(*.pid, .dir))]
    DaemonExited {
        /// The daemon's process id.
        pid: i32,
        /// The mount point.
        dir: String,
    },
    /// `xdev wait --pid`: the directory is an xdev mount, but another
    /// process serves it; the daemon waited for has exited, or the time
    /// passed.
    #[error("{}", texts::served_by_another(.dir, *.daemon, *.server, *.exited))]
    ServedByAnother {
        /// The mount point.
        dir: String,
        /// The daemon waited for.
        daemon: i32,
        /// The process serving the mount, when its `status.json` says.
        server: Option<i32>,
        /// Whether the daemon waited for has exited.
        exited: bool,
    },
    /// `xdev wait`: the mount did not answer in time.
    #[error("{}", texts::not_mounted_in_time(.dir, humantime::format_duration(*.waited)))]
    NotMountedInTime {
        /// The mount point.
        dir: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// The plan directory (`--plan-dir`) is missing or not a directory.
    #[error("{}", texts::bad_plan_dir(.path, *.missing))]
    PlanDir {
        /// The plan directory given.
        path: String,
        /// Whether it is missing (else it is not a directory).
        missing: bool,
    },
    /// The command to run on apply cannot be found; nothing was staged.
    #[error("{}", texts::command_not_found(.program, .why))]
    CommandNotFound {
        /// The program named.
        program: String,
        /// [`texts::COMMAND_NOT_ON_PATH`], [`texts::COMMAND_MISSING`] or
        /// [`texts::COMMAND_NOT_EXECUTABLE`].
        why: &'static str,
    },
    /// The mount went away (stopped, killed) while `xdev stage` waited for
    /// a decision; its command did not run.
    #[error("{}", texts::mount_gone(.dir, .id))]
    MountGone {
        /// The mount point.
        dir: String,
        /// The preview's id.
        id: String,
    },
    /// A value given to the command (an argument, `XDEV_DIR`) that names
    /// nothing the mount could list; nothing was opened. Exit code
    /// [`EXIT_USAGE`].
    #[error("{0}")]
    BadArgument(String),
    /// `xdev mount`: another process unmounted the daemon's mount
    /// (`fusermount3 -u`, `umount`); the daemon stopped serving it.
    #[error("{}", texts::mount_removed_from_outside(.dir))]
    MountRemoved {
        /// The mount point.
        dir: String,
    },
    /// The daemon's policy file (`--policy`) is refused or does not load;
    /// the text names the file and says why.
    #[error("{0}")]
    Policy(String),
    /// The command to run could not be started.
    #[error("{}", texts::cannot_run(.program, &describe(.source)))]
    Spawn {
        /// The program named.
        program: String,
        /// What the system said.
        source: io::Error,
    },
}

impl ClientError {
    /// The exit code the `xdev` command ends with for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            ClientError::MountGone { .. } | ClientError::MountRemoved { .. } => EXIT_MOUNT_GONE,
            ClientError::Spawn { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                EXIT_NOT_FOUND
            }
            ClientError::Spawn { .. } => EXIT_CANNOT_RUN,
            ClientError::BadArgument(_) => EXIT_USAGE,
            _ => EXIT_ERROR,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        ClientError::Io {
            what: what.into(),
            source,
        }
    }

    /// An error opening `path` (a file of a mount), naming the likelier
    /// cause of a missing file: no mount there at all, a mount without a
    /// plan desk, or a preview id that is not pending; and of a busy one: a
    /// preview another writer is deciding.
    pub(crate) fn open(path: &Path, source: io::Error) -> Self {
        let mut what = texts::cannot_open(path);
        if source.raw_os_error() == Some(libc::EBUSY) && locate(path).1 == Place::Item {
            what = texts::item_busy(path);
        }
        if source.kind() == io::ErrorKind::PermissionDenied {
            if let Some(owner) = another_users(path) {
                what = texts::another_users_file(path, &owner);
            }
        }
        if source.kind() == io::ErrorKind::NotFound {
            let (mount, place) = locate(path);
            if !mount.join("status").exists() {
                what = texts::no_mount_to_open(mount, MOUNT_ENV, path);
            } else if place == Place::Plan {
                what = texts::no_plan_desk_to_open(path);
            } else if place == Place::Root && path.file_name().is_some_and(|name| name == "policy")
            {
                what = texts::no_policy_to_open(path);
            } else if place == Place::Item {
                what = texts::no_item_to_open(path);
            }
        }
        ClientError::io(what, source)
    }

    /// The errno behind this error, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            ClientError::Refused { errno, .. } => Some(*errno),
            ClientError::Io { source, .. } | ClientError::Spawn { source, .. } => {
                source.raw_os_error()
            }
            ClientError::StaleMount { .. } => Some(libc::ENOTCONN),
            ClientError::ClosedMount { .. } => Some(libc::EACCES),
            ClientError::Protocol(_)
            | ClientError::BadArgument(_)
            | ClientError::Mount(_)
            | ClientError::NotAMount { .. }
            | ClientError::PlanDir { .. }
            | ClientError::Policy(_)
            | ClientError::DaemonExited { .. }
            | ClientError::ServedByAnother { .. }
            | ClientError::NotMountedInTime { .. }
            | ClientError::CommandNotFound { .. }
            | ClientError::MountGone { .. }
            | ClientError::MountRemoved { .. } => None,
        }
    }
}

/// Who `path` belongs to, named, when that is another user than this
/// process's (a stat needs no right to the file itself).
fn another_users(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(path).ok()?.uid();
    (uid != nix::unistd::geteuid().as_raw()).then(|| user_name(uid))
}

/// Where in a mount a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// At the root (`resolve`, `status`, `stage`, ...).
    Root,
    /// In `plan/`.
    Plan,
    /// In `pending/<id>/`.
    Item,
}

/// The mount a file path belongs to, judged from its shape:
/// `<mount>/plan/<file>`, `<mount>/pending/<id>/<file>` or `<mount>/<file>`.
fn locate(path: &Path) -> (&Path, Place) {
    let parent = path.parent().unwrap_or(path);
    let grandparent = parent.parent();
    if parent.file_name().is_some_and(|name| name == "plan") {
        return (grandparent.unwrap_or(parent), Place::Plan);
    }
    if let Some(grandparent) = grandparent {
        if grandparent
            .file_name()
            .is_some_and(|name| name == "pending")
        {
            return (grandparent.parent().unwrap_or(grandparent), Place::Item);
        }
    }
    (parent, Place::Root)
}

/// `ENOENT: cannot open /xdev/resolve: No such file or directory`.
fn io_line(what: &str, source: &io::Error) -> String {
    match source.raw_os_error() {
        Some(errno) => format!("{}: {what}: {}", errno_name(errno), describe(source)),
        None => format!("{what}: {}", describe(source)),
    }
}

/// Writes one message to a device-like file (`resolve`, `reject`,
/// `propose`, `pending/<id>/resolve`, `plan/ctl`, ...) as a control file
/// wants it: open
/// `O_RDWR`, write the whole message in one `write(2)`, read the answer
/// back on the same descriptor. Returns the answer text (without its
/// trailing newline) when the write succeeded, or
/// [`ClientError::Refused`] with the write's errno and the answer text.
/// A write interrupted by a signal (`EINTR`) is written again on the same
/// descriptor, which asks for the same decision, never a second one.
///
/// A newline is added when the message does not end in one, so a message
/// whose length happens to be a multiple of 4096 is never held as a "full
/// chunk" (the mount trims surrounding whitespace anyway).
pub fn write_device(path: &Path, message: &[u8]) -> Result<String, ClientError> {
    let file = open_device(path)?;
    let mut body = message.to_vec();
    if body.last() != Some(&b'\n') {
        body.push(b'\n');
    }
    // EINTR means "not decided yet": a retry on the same descriptor joins
    // the decision under way (or dispatches again if it was withdrawn), so
    // a handled signal never turns a decision into a failure. A fresh
    // descriptor would be a second message.
    let written = loop {
        match (&file).write(&body) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            written => break written,
        }
    };
    let answer = read_all(&file);
    match written {
        Ok(count) if count == body.len() => {
            let answer =
                answer.map_err(|err| ClientError::io(texts::cannot_read_answer(path), err))?;
            Ok(trim_newline(&answer).to_string())
        }
        Ok(count) => Err(ClientError::Protocol(texts::short_write(
            path,
            count,
            body.len(),
        ))),
        Err(err) => match err.raw_os_error() {
            Some(errno) => {
                let text = answer
                    .ok()
                    .map(|answer| trim_newline(&answer).to_string())
                    .filter(|answer| !answer.is_empty())
                    .unwrap_or_else(|| describe(&err));
                Err(ClientError::Refused { errno, text })
            }
            None => Err(ClientError::io(texts::cannot_write(path), err)),
        },
    }
}

/// Opens a device-like file to write and read back. While a write on a
/// device waits, the device moves to a fresh inode, and an open that raced
/// two such moves gets `ESTALE`: it simply opens again.
fn open_device(path: &Path) -> Result<File, ClientError> {
    const ATTEMPTS: usize = 3;
    let mut attempt = 1;
    loop {
        match OpenOptions::new().read(true).write(true).open(path) {
            Err(err) if err.raw_os_error() == Some(libc::ESTALE) && attempt < ATTEMPTS => {
                attempt += 1;
            }
            opened => return opened.map_err(|err| ClientError::open(path, err)),
        }
    }
}

/// Reads a file of the mount (`status`, `status.json`, `plan/status`, ...).
pub fn read_text(path: &Path) -> Result<String, ClientError> {
    let file = File::open(path).map_err(|err| ClientError::open(path, err))?;
    read_all(&file).map_err(|err| ClientError::io(texts::cannot_read(path), err))
}

fn read_all(mut file: &File) -> io::Result<String> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn trim_newline(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_comes_from_the_flag_first() {
        assert_eq!(mount_dir(Some(Path::new("/m"))), PathBuf::from("/m"));
    }

    #[test]
    fn files_are_located_in_their_mount() {
        assert_eq!(
            locate(Path::new("/m/resolve")),
            (Path::new("/m"), Place::Root)
        );
        assert_eq!(
            locate(Path::new("/m/plan/ctl")),
            (Path::new("/m"), Place::Plan)
        );
        assert_eq!(
            locate(Path::new("/m/pending/pending-action:x:1/resolve")),
            (Path::new("/m"), Place::Item)
        );
    }
}
