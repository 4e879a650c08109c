//! Plan files: reading the one an `ExitPlanMode` call names (safely: the
//! event is not trusted), the slugs plans are filed under, and writing a
//! plan for the desk through a scratch file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::HookInput;
use crate::client::ClientError;
use crate::safe_file::{read_text, FileProblem};
use crate::session::plan::PlanTitle;
use crate::texts;

/// The most of a plan file the hook reads: a plan is prose a person
/// reviews, and a larger file is refused rather than cut, since half a
/// plan approved is worse than none (and an endless one must not fill the
/// hook's memory).
pub const MAX_PLAN_FILE_BYTES: u64 = 256 * 1024;

/// How many fresh scratch names the hook tries before it gives up on
/// writing a plan (each one taken means someone else put a file there).
const SCRATCH_ATTEMPTS: usize = 16;

impl HookInput {
    /// The plan of an `ExitPlanMode` call: its own `plan`, else the file
    /// its `planFilePath` names, read only when that is a regular file of
    /// at most [`MAX_PLAN_FILE_BYTES`] (the event is not trusted: the path
    /// may name a link to a secret, a FIFO that never ends, a device).
    /// `Ok(None)` when the call is no plan or names none.
    pub fn plan(&self) -> Result<Option<Plan>, PlanFileRefused> {
        if self.tool_name != "ExitPlanMode" {
            return Ok(None);
        }
        if let Some(plan) = self.own_plan() {
            return Ok(Some(Plan {
                text: plan.to_string(),
                slug: plan_slug(plan),
            }));
        }
        let Some(file) = self.field("planFilePath") else {
            return Ok(None);
        };
        let path = Path::new(file);
        match read_plan_file(path) {
            // Filed under the file's name: the slug shows in the desk's
            // status and the journal, which must never carry what only the
            // file held.
            Ok(text) => Ok(Some(Plan {
                text,
                slug: file_slug(path),
            })),
            Err(why) => Err(PlanFileRefused {
                path: path.to_path_buf(),
                why,
            }),
        }
    }
}

/// A plan for the plan desk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The plan's text, as it is filed.
    pub text: String,
    /// The slug it is filed under (`<slug>-plan.md`): from the event's own
    /// plan text, or from the plan file's name, never from a file's
    /// contents.
    pub slug: String,
}

/// Why a plan file named by an event is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanFileProblem {
    /// It is a symbolic link.
    Symlink,
    /// It is something other than a regular file (`a FIFO`, ...).
    NotRegular(&'static str),
    /// It is larger than [`MAX_PLAN_FILE_BYTES`] (its size, when known
    /// before reading).
    TooLarge(Option<u64>),
    /// The hook may not read it.
    PermissionDenied,
    /// It does not exist.
    Missing,
    /// It is not UTF-8.
    NotUtf8,
    /// It holds only whitespace.
    Empty,
    /// Any other error, as the system put it.
    Unreadable(String),
}

impl std::fmt::Display for PlanFileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanFileProblem::Symlink => f.write_str(texts::PLAN_FILE_SYMLINK),
            PlanFileProblem::NotRegular(kind) => f.write_str(&texts::plan_file_not_regular(kind)),
            PlanFileProblem::TooLarge(size) => f.write_str(&texts::plan_file_too_large(
                MAX_PLAN_FILE_BYTES / 1024,
                *size,
            )),
            PlanFileProblem::PermissionDenied => f.write_str(texts::PLAN_FILE_PERMISSION_DENIED),
            PlanFileProblem::Missing => f.write_str(texts::PLAN_FILE_MISSING),
            PlanFileProblem::NotUtf8 => f.write_str(texts::PLAN_FILE_NOT_UTF8),
            PlanFileProblem::Empty => f.write_str(texts::PLAN_FILE_EMPTY),
            PlanFileProblem::Unreadable(why) => f.write_str(why),
        }
    }
}

impl From<FileProblem> for PlanFileProblem {
    fn from(problem: FileProblem) -> PlanFileProblem {
        match problem {
            FileProblem::Symlink => PlanFileProblem::Symlink,
            FileProblem::NotRegular(kind) => PlanFileProblem::NotRegular(kind),
            FileProblem::TooLarge { size, .. } => PlanFileProblem::TooLarge(size),
            FileProblem::PermissionDenied => PlanFileProblem::PermissionDenied,
            FileProblem::Missing => PlanFileProblem::Missing,
            FileProblem::NotUtf8 => PlanFileProblem::NotUtf8,
            FileProblem::Unreadable(why) => PlanFileProblem::Unreadable(why),
        }
    }
}

/// A plan file the hook will not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFileRefused {
    /// The path the event named.
    pub path: PathBuf,
    /// Why it is not read.
    pub why: PlanFileProblem,
}

impl std::fmt::Display for PlanFileRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display().to_string();
        f.write_str(&texts::plan_file_refused(&path, &self.why.to_string()))
    }
}

impl std::error::Error for PlanFileRefused {}

/// Reads a plan file an event names, only when it is a regular file of at
/// most [`MAX_PLAN_FILE_BYTES`] of UTF-8 (see [`crate::safe_file`]).
fn read_plan_file(path: &Path) -> Result<String, PlanFileProblem> {
    let text = read_text(path, MAX_PLAN_FILE_BYTES)?;
    if text.trim().is_empty() {
        return Err(PlanFileProblem::Empty);
    }
    Ok(text)
}

/// A plan's first heading (or first line), without its `#`s.
pub(super) fn plan_heading(plan: &str) -> String {
    let lines = || plan.lines().map(str::trim).filter(|line| !line.is_empty());
    let heading = lines()
        .find(|line| line.starts_with('#'))
        .or_else(|| lines().next());
    heading
        .unwrap_or_default()
        .trim_start_matches('#')
        .trim()
        .to_string()
}

/// The slug a plan is filed under: its heading under the plan-title rules,
/// else `agent`.
pub fn plan_slug(plan: &str) -> String {
    title_slug(&plan_heading(plan))
}

/// The slug a plan read from `path` is filed under: the file's name under
/// the plan-title rules (`add-login.md` → `add-login`), else `agent`.
pub fn file_slug(path: &Path) -> String {
    path.file_name().map_or_else(
        || "agent".to_string(),
        |name| title_slug(&name.to_string_lossy()),
    )
}

/// `title` under the plan-title rules, cut to a sane length, else `agent`.
fn title_slug(title: &str) -> String {
    let title: String = title.chars().take(60).collect();
    PlanTitle::parse(&title)
        .map(|title| title.slug)
        .ok()
        .filter(|slug| !slug.is_empty())
        .unwrap_or_else(|| "agent".to_string())
}

/// Writes the plan whole or not at all (the desk may read it any time):
/// into a scratch file of a fresh, unguessable name beside it, renamed
/// into place. A link someone put at the plan's own name is replaced by
/// the rename, never written through.
pub(super) fn write_plan(path: &Path, plan: &str) -> Result<(), ClientError> {
    let failed = |source| ClientError::Io {
        what: texts::cannot_write_plan(path),
        source,
    };
    let (scratch, mut file) = create_scratch(scratch_names(path)).map_err(failed)?;
    let scratch = Scratch {
        path: scratch,
        placed: false,
    };
    file.write_all(plan.as_bytes()).map_err(failed)?;
    drop(file);
    scratch.rename_to(path).map_err(failed)
}

/// Candidate scratch names beside `path`: hidden, unguessable (std's
/// hash keys are random for each process) and never `*plan.md`, so the
/// desk's "newest plan" never picks one up.
fn scratch_names(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    use std::hash::BuildHasher;
    let name = path
        .file_name()
        .map_or_else(|| "plan".into(), |name| name.to_string_lossy());
    (0u32..).map(move |attempt| {
        let random = std::collections::hash_map::RandomState::new().hash_one(attempt);
        path.with_file_name(format!(".{name}.{random:016x}.xdev-hook"))
    })
}

/// Creates the first of `names` that is free, mode 0600, never following
/// a link; a name already taken (by a file or a link someone planted) is
/// passed over, never opened. Gives up after [`SCRATCH_ATTEMPTS`] names.
fn create_scratch(names: impl IntoIterator<Item = PathBuf>) -> io::Result<(PathBuf, File)> {
    for name in names.into_iter().take(SCRATCH_ATTEMPTS) {
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&name);
        match created {
            Ok(file) => return Ok((name, file)),
            Err(err)
                if err.kind() == io::ErrorKind::AlreadyExists
                    || err.raw_os_error() == Some(libc::ELOOP) => {}
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        texts::NO_SCRATCH_NAME,
    ))
}

/// A scratch file that is removed unless it was renamed into place, so a
/// failed write leaves nothing behind.
struct Scratch {
    path: PathBuf,
    placed: bool,
}

impl Scratch {
    fn rename_to(mut self, path: &Path) -> io::Result<()> {
        std::fs::rename(&self.path, path)?;
        self.placed = true;
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_filed_by_heading() {
        assert_eq!(plan_slug("# Add auth: v2\nsteps"), "Add-auth-v2");
        assert_eq!(plan_slug("# Release plan\n"), "Release");
        assert_eq!(plan_slug("\n\n"), "agent");
        assert_eq!(file_slug(Path::new("/h/plans/add-login.md")), "add-login");
        assert_eq!(file_slug(Path::new("/h/x-plan.md")), "x");
        assert_eq!(file_slug(Path::new("/")), "agent");
    }

    #[test]
    fn plan_files_are_read_only_when_small_regular_utf8_files() {
        let dir = tempfile::tempdir().expect("tmp");
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("plan.md"), "# Ship it\n").expect("write");
        std::fs::write(at("empty.md"), " \n").expect("write");
        std::fs::write(at("latin1.md"), b"caf\xe9").expect("write");
        let big = vec![b'a'; usize::try_from(MAX_PLAN_FILE_BYTES).expect("fits") + 1];
        std::fs::write(at("big.md"), big).expect("write");
        std::os::unix::fs::symlink(at("plan.md"), at("link.md")).expect("symlink");
        nix::unistd::mkfifo(&at("fifo.md"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        assert_eq!(read_plan_file(&at("plan.md")), Ok("# Ship it\n".into()));
        let cases = [
            ("link.md", PlanFileProblem::Symlink),
            ("fifo.md", PlanFileProblem::NotRegular("a FIFO")),
            ("", PlanFileProblem::NotRegular("a directory")),
            (
                "big.md",
                PlanFileProblem::TooLarge(Some(MAX_PLAN_FILE_BYTES + 1)),
            ),
            ("empty.md", PlanFileProblem::Empty),
            ("latin1.md", PlanFileProblem::NotUtf8),
            ("gone.md", PlanFileProblem::Missing),
        ];
        for (name, problem) in cases {
            assert_eq!(read_plan_file(&at(name)), Err(problem), "{name}");
        }
        assert_eq!(
            read_plan_file(Path::new("/dev/zero")),
            Err(PlanFileProblem::NotRegular("a character device"))
        );
        let refused = PlanFileRefused {
            path: at("big.md"),
            why: PlanFileProblem::TooLarge(Some(MAX_PLAN_FILE_BYTES + 1)),
        };
        assert_eq!(
            refused.to_string(),
            format!(
                "will not read the plan file {}: it is larger than 256 KiB (262145 bytes)",
                at("big.md").display()
            )
        );
    }

    #[test]
    fn a_taken_scratch_name_is_passed_over_never_written_through() {
        let dir = tempfile::tempdir().expect("tmp");
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("victim"), "untouched").expect("write");
        std::os::unix::fs::symlink(at("victim"), at("planted")).expect("symlink");
        std::os::unix::fs::symlink(at("nowhere"), at("dangling")).expect("symlink");
        let names = ["planted", "dangling", "free"].map(at);
        let (created, mut file) = create_scratch(names).expect("a free name");
        assert_eq!(created, at("free"));
        file.write_all(b"plan").expect("write");
        assert_eq!(
            std::fs::read_to_string(at("victim")).expect("read"),
            "untouched"
        );
        assert!(!at("nowhere").exists(), "a dangling link is not followed");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&created)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        let all_taken = create_scratch(["planted", "dangling"].map(at));
        assert!(all_taken.is_err_and(|err| err.kind() == io::ErrorKind::AlreadyExists));
        let fresh: Vec<PathBuf> = scratch_names(&at("a-plan.md")).take(2).collect();
        assert_ne!(fresh[0], fresh[1], "each try is a new name");
        let name = fresh[0].file_name().expect("name").to_string_lossy();
        assert!(
            name.starts_with(".a-plan.md.") && name.ends_with(".xdev-hook"),
            "{name}"
        );
    }

    #[test]
    fn a_plan_is_written_in_place_of_a_link_not_through_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("victim"), "untouched").expect("write");
        std::os::unix::fs::symlink(at("victim"), at("a-plan.md")).expect("symlink");
        write_plan(&at("a-plan.md"), "# A\n").expect("written");
        assert_eq!(
            std::fs::read_to_string(at("victim")).expect("read"),
            "untouched"
        );
        let placed = std::fs::symlink_metadata(at("a-plan.md")).expect("stat");
        assert!(placed.file_type().is_file());
        assert_eq!(
            std::fs::read_to_string(at("a-plan.md")).expect("read"),
            "# A\n"
        );
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        left.sort();
        assert_eq!(left, ["a-plan.md", "victim"], "no scratch file is left");
    }
}
