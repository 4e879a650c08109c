//! The journal file (`--journal FILE`): whole lines, synced, never torn.
//! Lines may be written one by one or many in one `write(2)`, and synced
//! together (a group commit, see the committer): a write that stops partway
//! is cut back to its last whole line, a failed sync cuts every unsynced
//! line off again.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::texts;

/// The most lines one `write(2)` takes (below any system's `IOV_MAX`).
const LINES_PER_WRITE: usize = 512;

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

    /// Writes `lines` one after another in as few `write(2)` calls as it
    /// can (one for up to [`LINES_PER_WRITE`] lines), not yet synced, and
    /// tells how many of them were written whole. A write that fails or
    /// stops partway is cut back to the last whole line, so no line is
    /// ever torn; the lines from there on are not written.
    pub(crate) fn write_lines(&mut self, lines: &[&[u8]]) -> usize {
        let mut whole = 0;
        for chunk in lines.chunks(LINES_PER_WRITE) {
            let slices: Vec<IoSlice<'_>> = chunk.iter().map(|line| IoSlice::new(line)).collect();
            let len: usize = chunk.iter().map(|line| line.len()).sum();
            let written = loop {
                match (&self.file).write_vectored(&slices) {
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    written => break written,
                }
            };
            let count = match written {
                Ok(count) if count == len => {
                    self.good_len += len as u64;
                    whole += chunk.len();
                    continue;
                }
                Ok(count) => count,
                Err(_) => 0,
            };
            // Stopped partway: keep the lines it wrote whole.
            let mut kept = 0;
            for line in chunk {
                if kept + line.len() > count {
                    break;
                }
                kept += line.len();
                whole += 1;
            }
            self.good_len += kept as u64;
            self.cut_back(self.good_len);
            break;
        }
        whole
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

    #[test]
    fn lines_written_together_are_appended_whole_and_in_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("journal.jsonl");
        let mut journal = JournalFile::open(&path).expect("open");
        let lines: Vec<Vec<u8>> = (0..LINES_PER_WRITE * 2 + 3)
            .map(|n| format!("{{\"n\":{n}}}\n").into_bytes())
            .collect();
        let all: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        assert_eq!(journal.write_lines(&all), lines.len());
        journal.sync().expect("sync");
        assert_eq!(std::fs::read(&path).expect("read"), lines.concat());
        assert_eq!(journal.good_len, lines.concat().len() as u64);
        assert_eq!(journal.synced_len, journal.good_len);
    }

    /// The size of a memory page here (4 KiB on most machines, 64 KiB on some).
    fn page_size() -> usize {
        use nix::unistd::{sysconf, SysconfVar};
        let page = sysconf(SysconfVar::PAGE_SIZE).ok().flatten();
        page.and_then(|page| usize::try_from(page).ok())
            .unwrap_or(4096)
    }

    /// A tmpfs of four pages mounted over a temp dir (needs root), gone on drop.
    struct FourPages(tempfile::TempDir);

    impl FourPages {
        fn mount() -> FourPages {
            use nix::mount::{mount, MsFlags};
            let dir = tempfile::tempdir().expect("tmp");
            let size = format!("size={}", 4 * page_size());
            mount(
                Some("tmpfs"),
                dir.path(),
                Some("tmpfs"),
                MsFlags::empty(),
                Some(size.as_str()),
            )
            .expect("mounting a tmpfs needs root");
            FourPages(dir)
        }
    }

    impl Drop for FourPages {
        fn drop(&mut self) {
            let _ = nix::mount::umount(self.0.path());
        }
    }

    #[test]
    fn lines_the_disk_takes_only_partway_keep_the_whole_ones_and_tear_none() {
        let disk = FourPages::mount();
        let path = disk.0.path().join("journal.jsonl");
        let mut journal = JournalFile::open(&path).expect("open");
        let first = b"{\"event\":\"first\"}\n".to_vec();
        journal.append(&first).expect("room for the first line");
        // The rest of the disk goes to a filler: only the journal's first
        // page has room left (a page less the first line).
        let mut filler = File::create(disk.0.path().join("filler")).expect("filler");
        while filler.write(&[b'x'; 512]).is_ok_and(|written| written > 0) {}
        let line = |byte: u8| [vec![byte; page_size() * 3 / 4 - 1], b"\n".to_vec()].concat();
        let (fits, tears) = (line(b'a'), line(b'b'));
        assert_eq!(
            journal.write_lines(&[&fits, &tears, &line(b'c')]),
            1,
            "the first line fits whole; the next would have been torn"
        );
        journal.sync().expect("sync");
        let expected = [first, fits].concat();
        assert_eq!(std::fs::read(&path).expect("read"), expected);
        assert_eq!(journal.good_len, expected.len() as u64);
        assert_eq!(
            journal.write_lines(&[&tears]),
            0,
            "a line only part of which fits is not written at all"
        );
        assert_eq!(std::fs::read(&path).expect("read"), expected);
    }
}
