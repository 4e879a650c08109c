//! The journal file (`--journal FILE`): whole lines, synced, never torn.
//! Lines may be written one by one and synced together (a group commit,
//! see the committer): a failed sync cuts every unsynced line off again.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::texts;

/// An append-only journal file.
#[derive(Debug)]
pub(crate) struct JournalFile {
    path: PathBuf,
    file: File,
    /// The size up to the end of the last whole line written: a short write
    /// is cut back to it.
    good_len: u64,
    /// The size up to the end of the last line synced: a failed sync is
    /// cut back to it (what it held may not be on disk).
    synced_len: u64,
}

impl JournalFile {
    /// Opens (or creates, mode 0600) `path` to append. Refuses a symbolic
    /// link, a FIFO, a directory, or anything else that is not a regular
    /// file, and a file that another user could write: one owned by neither
    /// this process's effective user nor root, or writable by its group or
    /// by everyone. The error names the path and says what to do.
    pub(crate) fn open(path: &Path) -> io::Result<JournalFile> {
        let refused = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let shown = path.display().to_string();
        // Non-blocking, so that opening a FIFO cannot hang waiting for a reader.
        let opened = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path);
        let file = match opened {
            Ok(file) => file,
            Err(err) => {
                return Err(match err.raw_os_error() {
                    Some(libc::ELOOP) => refused(texts::journal_is_symlink(&shown)),
                    Some(libc::EISDIR) => refused(texts::journal_is_directory(&shown)),
                    Some(libc::ENXIO) => refused(texts::journal_is_fifo_or_socket(&shown)),
                    _ => io::Error::new(
                        err.kind(),
                        format!("{shown}: {}", crate::error::describe(&err)),
                    ),
                })
            }
        };
        // Checked on the descriptor opened, not on the path: what is checked
        // is what gets written.
        let metadata = file.metadata()?;
        let kind = metadata.file_type();
        if !kind.is_file() {
            return Err(refused(texts::journal_not_regular(
                &shown,
                texts::journal_file_kind(kind),
            )));
        }
        // The journal is the record of who decided what: a file another user
        // may write could be forged or emptied behind the daemon's back.
        // Root's files are trusted (root could rewrite ours anyway).
        let euid = nix::unistd::geteuid().as_raw();
        if metadata.uid() != euid && metadata.uid() != 0 {
            return Err(refused(texts::journal_owned_by_another_user(
                &shown,
                metadata.uid(),
                euid,
            )));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(refused(texts::journal_writable_by_others(
                &shown,
                metadata.mode(),
            )));
        }
        clear_nonblocking(&file)?;
        let good_len = metadata.len();
        Ok(JournalFile {
            path: path.to_path_buf(),
            file,
            good_len,
            synced_len: good_len,
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one whole line in one `write(2)` and syncs it. On any
    /// failure (a short write included) the file is cut back to its last
    /// whole line, so no line is ever torn.
    #[cfg(test)]
    pub(crate) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_line(line)?;
        self.sync()
    }

    /// Writes one whole line in one `write(2)`, not yet synced. On any
    /// failure (a short write included) the file is cut back to its last
    /// whole line, so no line is ever torn.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let written = loop {
            match (&self.file).write(line) {
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                written => break written,
            }
        };
        let failed = match written {
            Ok(count) if count == line.len() => {
                self.good_len += line.len() as u64;
                return Ok(());
            }
            // A short write: the disk filled up partway.
            Ok(_) => io::Error::from_raw_os_error(libc::ENOSPC),
            Err(err) => err,
        };
        self.cut_back(self.good_len);
        Err(failed)
    }

    /// Syncs the lines written since the last sync. On failure they are
    /// all cut off: none of them may be counted as recorded.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.good_len == self.synced_len {
            return Ok(());
        }
        match self.file.sync_data() {
            Ok(()) => {
                self.synced_len = self.good_len;
                Ok(())
            }
            Err(err) => {
                self.good_len = self.synced_len;
                self.cut_back(self.synced_len);
                Err(err)
            }
        }
    }

    fn cut_back(&self, len: u64) {
        if let Err(cut) = self.file.set_len(len) {
            tracing::error!(%cut, path = %self.path.display(), "cannot cut a failed journal line back");
        }
    }
}

fn clear_nonblocking(file: &File) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_retain(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn anything_but_a_regular_file_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("real.jsonl");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        for (path, says) in [
            (&link, "is a symbolic link"),
            (&fifo.clone(), "FIFO"),
            (&dir.path().to_path_buf(), "is a directory"),
        ] {
            let error = JournalFile::open(path).expect_err("refused").to_string();
            assert!(error.contains(&path.display().to_string()), "{error}");
            assert!(error.contains(says), "{error}");
        }
        assert!(!target.exists(), "nothing created through the link");

        let mut journal = JournalFile::open(&target).expect("regular file");
        journal.append(b"{}\n").expect("append");
        let mode = std::fs::metadata(&target)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&target).expect("read"), b"{}\n");
    }

    #[test]
    fn a_file_another_user_could_write_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tmp");
        for (mode, by) in [
            (0o602, "writable by everyone (mode 0602)"),
            (0o620, "writable by its group (mode 0620)"),
            (0o666, "writable by its group and everyone (mode 0666)"),
        ] {
            let path = dir.path().join(format!("{mode:o}.jsonl"));
            std::fs::write(&path, b"").expect("file");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let error = JournalFile::open(&path).expect_err("refused").to_string();
            assert!(
                error.starts_with(&format!("{} is {by}", path.display())),
                "{error}"
            );
            assert!(
                error.contains(&format!("chmod go-w '{}'", path.display())),
                "{error}"
            );
        }
        let readable = dir.path().join("readable.jsonl");
        std::fs::write(&readable, b"").expect("file");
        std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        JournalFile::open(&readable).expect("others may read it");
        if nix::unistd::geteuid().is_root() {
            let theirs = dir.path().join("theirs.jsonl");
            std::fs::write(&theirs, b"").expect("file");
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
            let error = JournalFile::open(&theirs).expect_err("refused").to_string();
            assert_eq!(
                error,
                format!("{} belongs to uid 65534, not to uid 0 that xdev runs as, and its owner could forge or erase records; choose a file you own", theirs.display())
            );
        }
    }
}
