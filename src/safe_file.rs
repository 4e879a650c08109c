//! Reading a file that a hostile input names: a plan file an agent's event
//! points at, the file a `Write` or `Edit` preview would change.
//!
//! The path may name a link to a secret, a FIFO that never ends (or whose
//! open waits for a writer), a device whose open acts (a tape rewinds, a
//! terminal becomes the controlling one), or a file too large to hold. So
//! a file is read only when it is a regular file of at most a given size,
//! looked at before it is opened and again once opened; its last component
//! is never followed when it is a link. Components before it are followed,
//! as the agent's own tools follow them: a project in a linked directory
//! is still the project the agent edits.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{describe, errno_name};
use crate::texts;

/// Why a file is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    /// It is a symbolic link.
    Symlink,
    /// It is something other than a regular file (`a FIFO`, ...).
    NotRegular(&'static str),
    /// It is larger than `max` bytes (its size, when known before reading;
    /// `None`: it grew past `max` while being read).
    TooLarge {
        /// The most that is read.
        max: u64,
        /// Its size when it was looked at.
        size: Option<u64>,
    },
    /// The reader may not read it.
    PermissionDenied,
    /// It does not exist.
    Missing,
    /// It is not UTF-8.
    NotUtf8,
    /// Any other error, as the system put it.
    Unreadable(String),
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileProblem::Symlink => f.write_str(texts::PLAN_FILE_SYMLINK),
            FileProblem::NotRegular(kind) => f.write_str(&texts::plan_file_not_regular(kind)),
            FileProblem::TooLarge { max, size } => {
                f.write_str(&texts::plan_file_too_large(max / 1024, *size))
            }
            FileProblem::PermissionDenied => f.write_str(texts::PLAN_FILE_PERMISSION_DENIED),
            FileProblem::Missing => f.write_str(texts::PLAN_FILE_MISSING),
            FileProblem::NotUtf8 => f.write_str(texts::PLAN_FILE_NOT_UTF8),
            FileProblem::Unreadable(why) => f.write_str(why),
        }
    }
}

impl FileProblem {
    /// The problem an I/O error of looking at, opening or reading a file
    /// stands for.
    pub fn from_io(error: &io::Error) -> FileProblem {
        match error.raw_os_error() {
            // What O_NOFOLLOW answers for a link.
            Some(libc::ELOOP) => FileProblem::Symlink,
            Some(libc::EACCES | libc::EPERM) => FileProblem::PermissionDenied,
            Some(libc::ENOENT) => FileProblem::Missing,
            Some(errno) => FileProblem::Unreadable(texts::plan_file_unreadable(
                &errno_name(errno),
                &describe(error),
            )),
            None => FileProblem::Unreadable(describe(error)),
        }
    }
}

/// What a file is, when it is not a regular file.
fn irregular_kind(kind: std::fs::FileType) -> Option<FileProblem> {
    if kind.is_file() {
        return None;
    }
    if kind.is_symlink() {
        return Some(FileProblem::Symlink);
    }
    Some(FileProblem::NotRegular(texts::file_kind(kind)))
}

/// The bytes of the file at `path`, only when it is a regular file (never
/// a link to one) of at most `max` bytes.
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, FileProblem> {
    let problem = |error: io::Error| FileProblem::from_io(&error);
    // Looked at before it is opened, since opening a device can act.
    let seen = std::fs::symlink_metadata(path).map_err(problem)?;
    if let Some(refused) = irregular_kind(seen.file_type()) {
        return Err(refused);
    }
    // The path may have been swapped since: never follow a link, never
    // wait (a FIFO put there would block the open until a writer came),
    // never take a terminal; then check again what was opened. (The
    // standard library opens with O_CLOEXEC already.)
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(problem)?;
    let opened = file.metadata().map_err(problem)?;
    if let Some(refused) = irregular_kind(opened.file_type()) {
        return Err(refused);
    }
    if opened.len() > max {
        return Err(FileProblem::TooLarge {
            max,
            size: Some(opened.len()),
        });
    }
    // Bounded even if the file grows after the size was taken.
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(problem)?;
    if bytes.len() as u64 > max {
        return Err(FileProblem::TooLarge { max, size: None });
    }
    Ok(bytes)
}

/// The text of the file at `path`: [`read_bytes`], and UTF-8.
pub fn read_text(path: &Path, max: u64) -> Result<String, FileProblem> {
    String::from_utf8(read_bytes(path, max)?).map_err(|_| FileProblem::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_utf8_files_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("ok"), "hello\n").expect("file");
        assert_eq!(read_text(&path("ok"), 6), Ok("hello\n".to_string()));
        assert_eq!(
            read_text(&path("ok"), 5),
            Err(FileProblem::TooLarge {
                max: 5,
                size: Some(6)
            })
        );
        std::os::unix::fs::symlink(path("ok"), path("link")).expect("link");
        assert_eq!(read_text(&path("link"), 100), Err(FileProblem::Symlink));
        nix::unistd::mkfifo(&path("fifo"), nix::sys::stat::Mode::S_IRWXU).expect("fifo");
        assert_eq!(
            read_text(&path("fifo"), 100),
            Err(FileProblem::NotRegular("a FIFO"))
        );
        assert_eq!(
            read_text(dir.path(), 100),
            Err(FileProblem::NotRegular("a directory"))
        );
        assert_eq!(
            read_text(Path::new("/dev/zero"), 100),
            Err(FileProblem::NotRegular("a character device"))
        );
        assert_eq!(read_text(&path("none"), 100), Err(FileProblem::Missing));
        std::fs::write(path("bin"), [0xff, 0xfe]).expect("file");
        assert_eq!(read_text(&path("bin"), 100), Err(FileProblem::NotUtf8));
        assert_eq!(read_bytes(&path("bin"), 100), Ok(vec![0xff, 0xfe]));
    }
}
