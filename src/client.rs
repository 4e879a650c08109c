//! The `xdev` command's work, as a library: finding the mount, writing a
//! device and reading its answer back, speaking the stage protocol for a
//! command, running the daemon and `xdev run`. The binary only parses
//! arguments and prints what these functions return.
//!
//! Every client function takes the mount directory; [`mount_dir`] finds it
//! the way the CLI does (`--mount`, else `$XDEV_DIR`, else `/xdev`).
//!
//! ```no_run
//! use xdev::client::{mount_dir, write_device, ClientError};
//!
//! let dir = mount_dir(None);
//! match write_device(&dir.join("resolve"), b"tests pass") {
//!     Ok(text) => println!("{text}"),
//!     Err(ClientError::Refused { errno, text }) => {
//!         eprintln!("{}: {text}", xdev::client::errno_label(errno))
//!     }
//!     Err(other) => eprintln!("{other}"),
//! }
//! ```

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use thiserror::Error;

use crate::error::describe;
use crate::fs::MAX_MESSAGE;
use crate::mount::{mount, Mount, MountError, MountOptions};
use crate::mount_point::{probe_mount_point, MountPointState};
use crate::plan_command::PlanCommand;
use crate::plan_desk::{PlanDesk, PlanHandlerKind};
use crate::session::{Session, DEFAULT_MOUNT_DIR};
use crate::stage_protocol::{ProducerMessage, ProducerReport, StageRequest, WithdrawReason};
use crate::supervised::supervise;
use crate::texts;

/// The environment variable that names the mount (and that `xdev run`
/// exports to its command).
pub const MOUNT_ENV: &str = "XDEV_DIR";

/// How many lines of a failed command's stderr become the failure message.
pub const TAIL_LINES: usize = 20;
/// How many bytes of a failed command's stderr become the failure message.
pub const TAIL_BYTES: usize = 2048;

/// Exit code of `xdev stage` when the preview was applied.
pub const EXIT_APPLIED: u8 = 0;
/// Exit code of any command that failed (bad mount, protocol or I/O error,
/// a device that refused the message).
pub const EXIT_ERROR: u8 = 1;
/// Exit code of `xdev stage` when the preview was discarded.
pub const EXIT_DISCARDED: u8 = 3;
/// Exit code of `xdev stage` when its deadline passed first.
pub const EXIT_DEADLINE: u8 = 4;
/// Exit code of `xdev stage` when the mount went away while it waited for a
/// decision (its command did not run).
pub const EXIT_MOUNT_GONE: u8 = 5;

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
pub fn check_mount(dir: &Path) -> Result<(), ClientError> {
    let shown = dir.display().to_string();
    match probe_mount_point(dir) {
        MountPointState::Xdev => Ok(()),
        MountPointState::Stale => Err(ClientError::StaleMount { dir: shown }),
        found => Err(ClientError::NotAMount { dir: shown, found }),
    }
}

/// Why a client command failed. `Display` is the one line the CLI prints
/// after `xdev: `.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The device (or `plan/ctl`) refused the message: its `write(2)`
    /// failed with `errno`, and `text` is the answer read back on the same
    /// descriptor (the handler's message).
    #[error("{}: {text}", errno_label(*errno))]
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
    #[error("no xdev mount at {dir}: {found} (use --mount DIR or set {MOUNT_ENV}, or start one with `xdev mount DIR`)")]
    NotAMount {
        /// The directory given.
        dir: String,
        /// What it is instead.
        found: MountPointState,
    },
    /// The directory is an xdev mount whose daemon is gone.
    #[error("ENOTCONN: the xdev mount at {dir} is stale (its daemon is gone); run `xdev mount {dir}` to clear it and serve again")]
    StaleMount {
        /// The mount point.
        dir: String,
    },
    /// The plan directory (`--plan-dir`) is missing or not a directory.
    #[error("plan directory {path} {}", if *missing { "does not exist" } else { "is not a directory" })]
    PlanDir {
        /// The plan directory given.
        path: String,
        /// Whether it is missing (else it is not a directory).
        missing: bool,
    },
    /// The command to run on apply cannot be found; nothing was staged.
    #[error("cannot stage: command {program} {why}; nothing was staged")]
    CommandNotFound {
        /// The program named.
        program: String,
        /// `not found on PATH`, `does not exist`, `is not executable`.
        why: &'static str,
    },
    /// The mount went away (stopped, killed) while `xdev stage` waited for
    /// a decision; its command did not run.
    #[error("the xdev mount at {dir} went away while {id} waited for a decision; its command did not run")]
    MountGone {
        /// The mount point.
        dir: String,
        /// The preview's id.
        id: String,
    },
    /// The command to run could not be started.
    #[error("cannot run {program}: {}", describe(source))]
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
            ClientError::MountGone { .. } => EXIT_MOUNT_GONE,
            _ => EXIT_ERROR,
        }
    }

    fn io(what: impl Into<String>, source: io::Error) -> Self {
        ClientError::Io {
            what: what.into(),
            source,
        }
    }

    /// An error opening `path` (a file of a mount), naming the likelier
    /// cause of a missing file: no mount there at all, a mount without a
    /// plan desk, or a preview id that is not pending; and of a busy one: a
    /// preview another writer is deciding.
    fn open(path: &Path, source: io::Error) -> Self {
        let shown = path.display();
        let mut what = format!("cannot open {shown}");
        if source.raw_os_error() == Some(libc::EBUSY) && locate(path).1 == Place::Item {
            what =
                format!("another writer is deciding this preview right now; cannot open {shown}");
        }
        if source.kind() == io::ErrorKind::NotFound {
            let (mount, place) = locate(path);
            if !mount.join("status").exists() {
                what = format!(
                    "no xdev mount at {} (use --mount DIR or set {MOUNT_ENV}); cannot open {shown}",
                    mount.display()
                );
            } else if place == Place::Plan {
                what = format!(
                    "this mount has no plan desk (mount it with --plan-dir); cannot open {shown}"
                );
            } else if place == Place::Item {
                what = format!(
                    "no such pending preview (already decided or withdrawn?); cannot open {shown}"
                );
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
            ClientError::Protocol(_)
            | ClientError::Mount(_)
            | ClientError::NotAMount { .. }
            | ClientError::PlanDir { .. }
            | ClientError::CommandNotFound { .. }
            | ClientError::MountGone { .. } => None,
        }
    }
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
        Some(errno) => format!("{}: {what}: {}", errno_label(errno), describe(source)),
        None => format!("{what}: {}", describe(source)),
    }
}

/// The symbolic name of an errno (`ENOENT`), else `errno N` for a number
/// the system does not name.
pub fn errno_label(errno: i32) -> String {
    match Errno::from_raw(errno) {
        Errno::UnknownErrno => format!("errno {errno}"),
        known => format!("{known:?}"),
    }
}

// ----- devices and status files -------------------------------------------

/// Writes one message to a device-like file (`resolve`, `reject`,
/// `propose`, `pending/<id>/resolve`, `plan/ctl`, ...) the SPEC way: open
/// `O_RDWR`, write the whole message in one `write(2)`, read the answer
/// back on the same descriptor. Returns the answer text (without its
/// trailing newline) when the write succeeded, or
/// [`ClientError::Refused`] with the write's errno and the answer text.
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
    let written = (&file).write(&body);
    let answer = read_all(&file);
    match written {
        Ok(count) if count == body.len() => {
            let answer = answer.map_err(|err| {
                ClientError::io(
                    format!("cannot read the answer from {}", path.display()),
                    err,
                )
            })?;
            Ok(trim_newline(&answer).to_string())
        }
        Ok(count) => Err(ClientError::Protocol(format!(
            "short write to {}: {count} of {} bytes",
            path.display(),
            body.len()
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
            None => Err(ClientError::io(
                format!("cannot write {}", path.display()),
                err,
            )),
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
    read_all(&file).map_err(|err| ClientError::io(format!("cannot read {}", path.display()), err))
}

fn read_all(mut file: &File) -> io::Result<String> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn trim_newline(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// Runs a plan command through `<mount>/plan/ctl` and returns the answer.
pub fn plan_control(mount: &Path, command: &PlanCommand) -> Result<String, ClientError> {
    write_device(
        &mount.join("plan").join("ctl"),
        command.to_string().as_bytes(),
    )
}

// ----- running commands ---------------------------------------------------

/// What a command run for a decision left behind.
#[derive(Debug)]
pub struct CommandOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// The last lines of its stderr (see [`stderr_tail`]).
    pub stderr_tail: String,
}

impl CommandOutput {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Its stdout as text, trailing newlines trimmed: the result text of a
    /// successful apply.
    pub fn result_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout)
            .trim_end_matches(['\n', '\r'])
            .to_string()
    }

    /// The failure message: the stderr tail, or `exit status N` (`killed by
    /// signal N`) when it wrote nothing to stderr.
    pub fn failure_text(&self) -> String {
        if self.stderr_tail.is_empty() {
            describe_status(self.status)
        } else {
            self.stderr_tail.clone()
        }
    }
}

/// `exit status N`, or `killed by signal N`.
pub fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "exit status unknown".to_string(),
    }
}

/// The exit code a shell would report for `status`: the code, or 128 plus
/// the signal that killed it.
pub fn exit_code_of(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => EXIT_ERROR.into(),
    }
}

/// The tail of a command's stderr: its last [`TAIL_LINES`] lines, at most
/// [`TAIL_BYTES`] bytes, surrounding whitespace trimmed.
pub fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let mut start = 0;
    let mut lines = 0;
    for (at, _) in text.rmatch_indices('\n') {
        lines += 1;
        if lines == TAIL_LINES {
            start = at + 1;
            break;
        }
    }
    let mut tail = &text[start..];
    if tail.len() > TAIL_BYTES {
        let mut cut = tail.len() - TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = &tail[cut..];
    }
    tail.trim().to_string()
}

/// How much of a command's stderr is kept to compute its tail.
const STDERR_KEEP: usize = 4 * TAIL_BYTES;

/// Runs `command` with stdout captured and stderr both passed through to
/// this process's stderr and kept for its tail; stdin is inherited.
///
/// The command is supervised (see [`crate::supervised`]): in a process
/// group of its own, it gets SIGTERM, with its whole group, if this process
/// dies while it runs. Call this from a thread that lives as long as the
/// process (the CLI calls it from its main thread).
pub fn run_command(mut command: Command) -> Result<CommandOutput, ClientError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let spawn_error = |source| ClientError::Spawn {
        program: program.clone(),
        source,
    };
    let supervisor = supervise(&mut command).map_err(spawn_error)?;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error)?;
    let stderr = child.stderr.take();
    let tee = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let Some(mut stderr) = stderr else {
            return kept;
        };
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let _ = io::stderr().write_all(&buf[..n]);
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * STDERR_KEEP {
                        kept.drain(..kept.len() - STDERR_KEEP);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        kept
    });
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        // A command that closes its stdout early still gets waited for.
        let _ = out.read_to_end(&mut stdout);
    }
    let status = child
        .wait()
        .map_err(|err| ClientError::io("cannot wait for the command", err))?;
    supervisor.done();
    let kept = tee.join().unwrap_or_default();
    Ok(CommandOutput {
        status,
        stdout,
        stderr_tail: stderr_tail(&kept),
    })
}

// ----- the stage protocol -------------------------------------------------

/// What a producer asks the mount to stage: the request line of the stage
/// protocol (see [`crate::producer`]).
#[derive(Debug, Clone, Default)]
pub struct PreviewRequest {
    /// The preview's label.
    pub label: String,
    /// The tool that made it (the mount's default, `external`, when `None`).
    pub source_tool: Option<String>,
    /// Withdraw the preview if no decision has come after this long.
    pub deadline: Option<Duration>,
    /// The full request, shown as pretty JSON in `pending/<id>/detail`.
    pub detail: Option<Value>,
    /// The agent session the preview answers (kept in the journal).
    pub session_id: Option<String>,
    /// The agent's tool call the preview answers (kept in the journal).
    pub tool_use_id: Option<String>,
}

impl PreviewRequest {
    /// The request as the stage protocol carries it.
    pub fn stage_request(&self) -> StageRequest {
        StageRequest {
            label: self.label.clone(),
            source_tool: self.source_tool.clone(),
            deadline_ms: self
                .deadline
                .map(|deadline| u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX)),
            detail: self.detail.clone(),
            session_id: self.session_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
        }
    }
}

/// What `xdev stage` stages and runs.
#[derive(Debug, Clone, Default)]
pub struct StageOptions {
    /// The preview to stage.
    pub preview: PreviewRequest,
    /// A shell command line (`sh -c`) run when the preview is discarded:
    /// its stdout becomes the discard's result text.
    pub on_reject: Option<String>,
    /// The command (argv, no shell) run when the preview is applied.
    pub command: Vec<OsString>,
}

/// How a staged preview ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageOutcome {
    /// Applied: the command ran and succeeded.
    Applied,
    /// Discarded (the command never ran).
    Discarded,
    /// The deadline passed first: withdrawn, nothing applied.
    DeadlinePassed,
}

impl StageOutcome {
    /// The exit code `xdev stage` ends with: 0 applied, 3 discarded, 4
    /// deadline passed.
    pub fn exit_code(self) -> u8 {
        match self {
            StageOutcome::Applied => EXIT_APPLIED,
            StageOutcome::Discarded => EXIT_DISCARDED,
            StageOutcome::DeadlinePassed => EXIT_DEADLINE,
        }
    }
}

/// What happens while a staged preview waits, for the caller to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageNotice {
    /// The preview is staged under this id.
    Staged(String),
    /// The command failed; the preview is back at the head and the stager
    /// waits for the next decision. Carries the failure message reported.
    ApplyFailed(String),
    /// The `--on-reject` command failed; the preview stays pending and the
    /// stager waits for the next decision. Carries the failure message.
    RejectFailed(String),
    /// The command ran and succeeded, but the mount went away before its
    /// result could be reported: the stager still counts it as applied.
    AppliedUnreported,
}

/// A preview staged through `<mount>/stage`: the open conversation with the
/// mount. The preview stays pending while this lives; dropping it (or the
/// process dying) before a decision withdraws it.
#[derive(Debug)]
pub struct StagedPreview {
    mount: PathBuf,
    path: PathBuf,
    reader: BufReader<File>,
    id: String,
}

impl StagedPreview {
    /// Stages `request` through `<mount>/stage` and returns once the mount
    /// has given it an id. A refused request is [`ClientError::Refused`]
    /// with the mount's reason.
    pub fn stage(mount: &Path, request: &PreviewRequest) -> Result<StagedPreview, ClientError> {
        let path = mount.join("stage");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|err| ClientError::open(&path, err))?;
        let mut staged = StagedPreview {
            mount: mount.to_path_buf(),
            path,
            reader: BufReader::new(file),
            id: String::new(),
        };
        staged
            .send(&request_line(request))
            .map_err(|refused| staged.with_refusal_reason(refused))?;
        staged.id = match staged.next()? {
            Some(ProducerMessage::Staged { id }) => id,
            Some(other) => {
                return Err(ClientError::Protocol(format!(
                    "expected the staged id from {}, got {other:?}",
                    staged.path.display()
                )))
            }
            None => {
                return Err(ClientError::Protocol(format!(
                    "{} ended before staging the preview",
                    staged.path.display()
                )))
            }
        };
        Ok(staged)
    }

    /// The preview's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the next decision: [`ProducerMessage::Apply`],
    /// [`ProducerMessage::Discard`] or [`ProducerMessage::Withdrawn`] (never
    /// a second `staged`). [`ClientError::MountGone`] when the mount stops
    /// (or is killed) first.
    pub fn next_decision(&mut self) -> Result<ProducerMessage, ClientError> {
        match self.next() {
            Err(error) if is_mount_gone(&error) => Err(self.gone()),
            Ok(Some(message @ ProducerMessage::Staged { .. })) => Err(self.unexpected(message)),
            Ok(Some(decision)) => Ok(decision),
            // The conversation ended with no decision: the mount stopped.
            Ok(None) => Err(self.gone()),
            Err(error) => Err(error),
        }
    }

    /// The error for a message that ends the wait without a decision the
    /// caller acts on: a withdrawal (for a reason the caller does not
    /// handle itself) or a second `staged`.
    pub fn unexpected(&self, message: ProducerMessage) -> ClientError {
        match message {
            ProducerMessage::Withdrawn { why } => {
                ClientError::Protocol(texts::preview_withdrawn(&self.id, why))
            }
            ProducerMessage::Staged { .. } => ClientError::Protocol(format!(
                "{} staged a second time on one descriptor",
                self.path.display()
            )),
            other => ClientError::Protocol(format!(
                "unexpected message from {}: {other:?}",
                self.path.display()
            )),
        }
    }

    /// Reports the result of an apply (or a discard): `ok` finishes the
    /// preview, `false` is a failure that keeps it pending. The text is
    /// shortened, keeping its end, to fit in one message.
    pub fn report(&self, ok: bool, text: &str) -> Result<(), ClientError> {
        self.send(&report_line(ok, text))
    }

    fn gone(&self) -> ClientError {
        ClientError::MountGone {
            dir: self.mount.display().to_string(),
            id: self.id.clone(),
        }
    }

    fn send(&self, line: &str) -> Result<(), ClientError> {
        match self.reader.get_ref().write(line.as_bytes()) {
            Ok(count) if count == line.len() => Ok(()),
            Ok(count) => Err(ClientError::Protocol(format!(
                "short write to {}: {count} of {} bytes",
                self.path.display(),
                line.len()
            ))),
            Err(err) => match err.raw_os_error() {
                Some(errno) => Err(ClientError::Refused {
                    errno,
                    text: format!(
                        "{} refused {}: {}",
                        self.path.display(),
                        line.trim(),
                        describe(&err)
                    ),
                }),
                None => Err(ClientError::io(
                    format!("cannot write {}", self.path.display()),
                    err,
                )),
            },
        }
    }

    /// A refused stage request: the mount explains why on a read of the
    /// same descriptor (nothing is staged, so the read does not wait).
    fn with_refusal_reason(&self, refused: ClientError) -> ClientError {
        let ClientError::Refused { errno, .. } = refused else {
            return refused;
        };
        let mut reason = String::new();
        match self.reader.get_ref().read_to_string(&mut reason) {
            Ok(_) if !reason.trim().is_empty() => ClientError::Refused {
                errno,
                text: format!("{}: {}", self.path.display(), reason.trim()),
            },
            _ => refused,
        }
    }

    /// The next message, or `None` at end of file.
    fn next(&mut self) -> Result<Option<ProducerMessage>, ClientError> {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.reader.read_line(&mut line).map_err(|err| {
                ClientError::io(format!("cannot read {}", self.path.display()), err)
            })?;
            if read == 0 {
                return Ok(None);
            }
            if !line.trim().is_empty() {
                break;
            }
        }
        serde_json::from_str(line.trim()).map(Some).map_err(|err| {
            ClientError::Protocol(format!(
                "unexpected line from {}: {} ({err})",
                self.path.display(),
                line.trim()
            ))
        })
    }
}

/// The result line `{"ok":..,"text":..}` plus newline, the text shortened
/// (keeping its end) so that the line fits in one message of the mount.
fn report_line(ok: bool, text: &str) -> String {
    const MARK: &str = "[…]\n";
    let encode = |text: &str| {
        ProducerReport {
            ok,
            text: text.to_string(),
        }
        .line()
    };
    let line = encode(text);
    if line.len() <= MAX_MESSAGE {
        return line;
    }
    // Keep the longest tail that fits: the encoding is never shorter than
    // the text, so search starts in the last MAX_MESSAGE bytes.
    let boundary = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at += 1;
        }
        at
    };
    let (mut fits, mut too_long) = (text.len(), boundary(text.len().saturating_sub(MAX_MESSAGE)));
    let with_mark = |start: usize| encode(&format!("{MARK}{}", &text[start..]));
    while fits > too_long + 1 {
        let middle = boundary(too_long + (fits - too_long) / 2);
        if middle >= fits {
            break;
        }
        if with_mark(middle).len() <= MAX_MESSAGE {
            fits = middle;
        } else {
            too_long = middle;
        }
    }
    with_mark(fits)
}

/// The request line a producer stages with: only the fields given.
fn request_line(request: &PreviewRequest) -> String {
    request.stage_request().line()
}

/// Runs a command for the producer's report: `(true, stdout)` on success,
/// `(false, stderr tail)` on failure.
fn run_for_report(command: Command) -> (bool, String) {
    match run_command(command) {
        Ok(output) if output.success() => (true, output.result_text()),
        Ok(output) => (false, output.failure_text()),
        Err(err) => (false, err.to_string()),
    }
}

/// Fails unless `program` names an executable file: a path as given, a
/// bare name on `PATH` (as `Command` looks it up), so that a typo fails
/// before anything is staged, not when a reviewer applies the preview.
fn require_program(program: &OsString) -> Result<(), ClientError> {
    let not_found = |why| ClientError::CommandNotFound {
        program: program.to_string_lossy().into_owned(),
        why,
    };
    let path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        return match std::fs::metadata(path) {
            Ok(metadata) if is_executable(&metadata) => Ok(()),
            Ok(_) => Err(not_found("is not an executable file")),
            Err(_) => Err(not_found("does not exist")),
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&search)
        .filter_map(|dir| std::fs::metadata(dir.join(program)).ok())
        .any(|metadata| is_executable(&metadata));
    if found {
        Ok(())
    } else {
        Err(not_found("not found on PATH"))
    }
}

fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
}

/// Stages a preview through `<mount>/stage` and waits for its decision:
/// on apply runs `options.command` (its stdout is the result; on a non-zero
/// exit its stderr tail is the failure, the preview goes back to the head
/// and the wait goes on); on discard runs `options.on_reject`, if any, and
/// reports its output; returns how it ended. `notice` hears the id once
/// staged and every failed apply.
///
/// The commands run with `XDEV_DIR` (the mount), `XDEV_ID` (the preview's
/// id) and `XDEV_REASON` (the decision's reason) in their environment.
pub fn stage(
    mount: &Path,
    options: &StageOptions,
    mut notice: impl FnMut(StageNotice),
) -> Result<StageOutcome, ClientError> {
    let Some(program) = options.command.first() else {
        return Err(ClientError::Protocol("no command to run on apply".into()));
    };
    require_program(program)?;
    let mut staged = StagedPreview::stage(mount, &options.preview)?;
    let id = staged.id().to_string();
    notice(StageNotice::Staged(id.clone()));
    let environment = |command: &mut Command, reason: &str| {
        command
            .env(MOUNT_ENV, mount)
            .env("XDEV_ID", &id)
            .env("XDEV_REASON", reason);
    };
    loop {
        match staged.next_decision()? {
            ProducerMessage::Apply { reason, .. } => {
                let mut command = Command::new(program);
                command.args(&options.command[1..]);
                environment(&mut command, &reason);
                let (ok, text) = run_for_report(command);
                match staged.report(ok, &text) {
                    // The command did its work: that is what counts.
                    Err(error) if ok && is_mount_gone(&error) => {
                        notice(StageNotice::AppliedUnreported);
                        return Ok(StageOutcome::Applied);
                    }
                    reported => reported?,
                }
                if ok {
                    return Ok(StageOutcome::Applied);
                }
                notice(StageNotice::ApplyFailed(text));
            }
            ProducerMessage::Discard { reason } => {
                if let Some(on_reject) = &options.on_reject {
                    let mut command = Command::new("sh");
                    command.arg("-c").arg(on_reject);
                    environment(&mut command, &reason);
                    let (ok, text) = run_for_report(command);
                    staged.report(ok, &text)?;
                    if !ok {
                        // A failed reject keeps the preview pending: wait on.
                        notice(StageNotice::RejectFailed(text));
                        continue;
                    }
                }
                return Ok(StageOutcome::Discarded);
            }
            ProducerMessage::Withdrawn {
                why: WithdrawReason::Deadline,
            } => return Ok(StageOutcome::DeadlinePassed),
            other => return Err(staged.unexpected(other)),
        }
    }
}

/// Whether `error` means the mount is gone: stopped (its waiting requests
/// cancelled), unmounted, or its daemon killed.
pub fn is_mount_gone(error: &ClientError) -> bool {
    matches!(
        error.errno(),
        Some(libc::ECANCELED | libc::ENOTCONN | libc::ECONNABORTED | libc::ENODEV)
    )
}

// ----- the daemon and `xdev run` ------------------------------------------

/// Plan review for a daemon's mount.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Where `<slug>-plan.md` files are looked up.
    pub plan_dir: PathBuf,
    /// How proposals are decided.
    pub handler: PlanHandlerKind,
    /// Who implements a `yolo` approval (default: the current agent).
    pub execute_with: Option<String>,
    /// Start in plan mode.
    pub plan_mode: bool,
}

/// How the daemon (or `xdev run`) mounts.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// Let other users read the status files.
    pub allow_other: bool,
    /// Also append the journal to this file.
    pub journal_file: Option<PathBuf>,
    /// Let other users read `log` and `events` (see
    /// [`MountOptions::share_journal`]).
    pub share_journal: bool,
    /// Plan review, when a plan directory is given.
    pub plan: Option<PlanOptions>,
    /// How long decisions under way may take to finish at shutdown.
    pub grace: Duration,
    /// Create a missing mount point, and remove it when done (see
    /// [`MountOptions::create_dir`]).
    pub create_dir: bool,
}

/// A mount made by [`start`], with its session and plan desk.
#[derive(Debug)]
pub struct Daemon {
    /// The session the mount serves.
    pub session: Session,
    /// The plan desk, when mounted with one.
    pub desk: Option<PlanDesk>,
    /// The mount (unmounted when dropped).
    pub mount: Mount,
}

/// Mounts a fresh session at `dir` with `options` and waits until the mount
/// answers.
pub fn start(dir: &Path, options: &DaemonOptions) -> Result<Daemon, ClientError> {
    let session = Session::new();
    let desk = match &options.plan {
        Some(plan) => {
            let plan_dir = std::path::absolute(&plan.plan_dir).map_err(|err| {
                ClientError::io(
                    format!("cannot use plan directory {}", plan.plan_dir.display()),
                    err,
                )
            })?;
            if !plan_dir.is_dir() {
                return Err(ClientError::PlanDir {
                    path: plan.plan_dir.display().to_string(),
                    missing: !plan_dir.exists(),
                });
            }
            let desk = PlanDesk::new(
                session.clone(),
                plan_dir,
                plan.handler,
                plan.execute_with.clone(),
            );
            if plan.plan_mode {
                desk.enter();
            }
            Some(desk)
        }
        None => None,
    };
    let mount_options = MountOptions {
        allow_other: options.allow_other,
        journal_file: options.journal_file.clone(),
        share_journal: options.share_journal,
        plan: desk.clone(),
        grace: options.grace,
        create_dir: options.create_dir,
        ..MountOptions::default()
    };
    let mount = mount(&session, dir, mount_options)?;
    // The mount answers once a lookup through it does.
    std::fs::metadata(dir.join("status")).map_err(|err| {
        ClientError::io(format!("mount at {} does not answer", dir.display()), err)
    })?;
    Ok(Daemon {
        session,
        desk,
        mount,
    })
}

fn signal_runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| ClientError::io("cannot start", err))
}

/// `xdev mount`: mounts at `dir`, calls `ready` once the mount answers, serves
/// until SIGINT or SIGTERM, then unmounts (blocked writers get
/// `ECANCELED`).
pub fn serve(dir: &Path, options: &DaemonOptions, ready: impl FnOnce()) -> Result<(), ClientError> {
    use tokio::signal::unix::{signal, SignalKind};
    // Signals are caught before the mount exists, so a signal sent the
    // moment the ready line appears still unmounts cleanly.
    let runtime = signal_runtime()?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            Ok::<_, io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|err| ClientError::io("cannot catch signals", err))?;
    let daemon = start(dir, options)?;
    ready();
    runtime.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    daemon
        .mount
        .unmount()
        .map_err(|err| ClientError::io(format!("unmount of {} failed", dir.display()), err))
}

/// A mount point for `xdev run`: the directory given (created, and removed
/// afterwards, when missing) or a private temporary one.
enum RunDir {
    Given { dir: PathBuf, created: bool },
    Private(tempfile::TempDir),
}

impl RunDir {
    fn new(dir: Option<&Path>) -> Result<RunDir, ClientError> {
        match dir {
            Some(dir) => {
                let created = !dir.exists();
                if created {
                    std::fs::create_dir_all(dir).map_err(|err| {
                        ClientError::io(format!("cannot create {}", dir.display()), err)
                    })?;
                }
                Ok(RunDir::Given {
                    dir: dir.to_path_buf(),
                    created,
                })
            }
            None => tempfile::Builder::new()
                .prefix("xdev-run-")
                .tempdir()
                .map(RunDir::Private)
                .map_err(|err| ClientError::io("cannot create a temporary mount point", err)),
        }
    }

    fn path(&self) -> &Path {
        match self {
            RunDir::Given { dir, .. } => dir,
            RunDir::Private(tmp) => tmp.path(),
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let RunDir::Given { dir, created: true } = self {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// `xdev run`: mounts at `dir` (or a private temporary directory), runs
/// `command` with `XDEV_DIR` set to the mount, unmounts, and returns the
/// command's exit code (128 + the signal if it was killed). SIGTERM and
/// SIGHUP are passed on to the command; SIGINT is left to it (a terminal
/// sends it to the whole process group) and the mount stays until it ends.
pub fn run(
    dir: Option<&Path>,
    options: &DaemonOptions,
    command: &[OsString],
) -> Result<i32, ClientError> {
    use tokio::signal::unix::{signal, SignalKind};
    let Some(program) = command.first() else {
        return Err(ClientError::Protocol("no command to run".into()));
    };
    let runtime = signal_runtime()?;
    let mut signals = runtime
        .block_on(async {
            Ok::<_, io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
                signal(SignalKind::hangup())?,
            ))
        })
        .map_err(|err| ClientError::io("cannot catch signals", err))?;
    let place = RunDir::new(dir)?;
    let daemon = start(place.path(), options)?;
    let mut child = Command::new(program);
    child.args(&command[1..]).env(MOUNT_ENV, place.path());
    let status = runtime.block_on(async {
        let mut child = tokio::process::Command::from(child)
            .spawn()
            .map_err(|source| ClientError::Spawn {
                program: program.to_string_lossy().into_owned(),
                source,
            })?;
        let (interrupt, terminate, hangup) = &mut signals;
        loop {
            let forward = tokio::select! {
                status = child.wait() => {
                    return status.map_err(|err| ClientError::io("cannot wait for the command", err));
                }
                _ = interrupt.recv() => None,
                _ = terminate.recv() => Some(Signal::SIGTERM),
                _ = hangup.recv() => Some(Signal::SIGHUP),
            };
            let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
            if let (Some(signal), Some(pid)) = (forward, pid) {
                // Our own child, not yet reaped (it has an id): the pid is
                // still its. A child that just exited is no error here.
                let _ = kill(Pid::from_raw(pid), signal);
            }
        }
    });
    let unmounted = daemon.mount.unmount();
    drop(place);
    let status = status?;
    unmounted.map_err(|err| {
        ClientError::io(
            format!(
                "unmount after the command (exit {}) failed",
                exit_code_of(status)
            ),
            err,
        )
    })?;
    Ok(exit_code_of(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_comes_from_the_flag_first() {
        assert_eq!(mount_dir(Some(Path::new("/m"))), PathBuf::from("/m"));
    }

    #[test]
    fn stderr_tail_keeps_the_last_lines_and_bytes() {
        let many: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let tail = stderr_tail(many.as_bytes());
        assert!(tail.starts_with("line 11\n"), "{tail}");
        assert!(tail.ends_with("line 30"), "{tail}");
        assert_eq!(tail.lines().count(), TAIL_LINES);
        let long = "é".repeat(3000);
        let tail = stderr_tail(long.as_bytes());
        assert!(tail.len() <= TAIL_BYTES);
        assert!(tail.chars().all(|c| c == 'é'));
        assert_eq!(stderr_tail(b"  \n"), "");
        assert_eq!(stderr_tail(b"boom\n"), "boom");
    }

    #[test]
    fn report_lines_fit_in_one_message() {
        let short = report_line(true, "done");
        assert_eq!(short, "{\"ok\":true,\"text\":\"done\"}\n");
        let huge = "\"".repeat(MAX_MESSAGE);
        let line = report_line(false, &huge);
        assert!(line.len() <= MAX_MESSAGE, "{}", line.len());
        assert!(line.ends_with("\\\"\"}\n"));
        let value: serde_json::Value = serde_json::from_str(line.trim()).expect("json");
        assert_eq!(value["ok"], false);
        let big = format!("head{}tail", "x".repeat(100_000));
        let line = report_line(true, &big);
        assert!(line.len() <= MAX_MESSAGE && line.len() > MAX_MESSAGE - 8);
        assert!(line.starts_with("{\"ok\":true,\"text\":\"[…]\\nxxx"));
        assert!(line.ends_with("xtail\"}\n"));
    }

    #[test]
    fn request_lines_carry_only_what_is_given() {
        let mut request = PreviewRequest {
            label: "edit a".into(),
            ..PreviewRequest::default()
        };
        assert_eq!(request_line(&request), "{\"label\":\"edit a\"}\n");
        request.source_tool = Some("patch".into());
        request.deadline = Some(Duration::from_millis(1500));
        request.detail = Some(serde_json::json!({"command": "ls"}));
        request.session_id = Some("s-1".into());
        request.tool_use_id = Some("toolu_1".into());
        let value: serde_json::Value =
            serde_json::from_str(request_line(&request).trim()).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"label": "edit a", "sourceTool": "patch", "deadlineMs": 1500,
                "detail": {"command": "ls"}, "sessionId": "s-1", "toolUseId": "toolu_1"})
        );
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

    #[test]
    fn errno_labels() {
        assert_eq!(errno_label(libc::EIO), "EIO");
        assert_eq!(errno_label(libc::ENOTCONN), "ENOTCONN");
        assert_eq!(errno_label(9999), "errno 9999");
        // The names the crate's errors use read the same here.
        for errno in 1..200 {
            let name = crate::errno_name(errno);
            if name != "E?" {
                assert_eq!(errno_label(errno), name);
            }
        }
        assert_eq!(errno_label(libc::EAGAIN), "EAGAIN");
        let refused = ClientError::Refused {
            errno: libc::ENOENT,
            text: "nothing".into(),
        };
        assert_eq!(refused.to_string(), "ENOENT: nothing");
        let io = ClientError::io("cannot open x", io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            io.to_string(),
            "ENOENT: cannot open x: No such file or directory"
        );
    }

    #[test]
    fn commands_report_stdout_or_the_stderr_tail() {
        let mut ok = Command::new("sh");
        ok.arg("-c").arg("echo out; echo err >&2");
        let output = run_command(ok).expect("run");
        assert!(output.success());
        assert_eq!(output.result_text(), "out");
        assert_eq!(output.stderr_tail, "err");
        let mut failing = Command::new("sh");
        failing.arg("-c").arg("exit 5");
        let output = run_command(failing).expect("run");
        assert_eq!(output.failure_text(), "exit status 5");
        assert_eq!(exit_code_of(output.status), 5);
        let missing = run_command(Command::new("/nonexistent/xdev-test"));
        assert!(matches!(missing, Err(ClientError::Spawn { .. })));
    }
}
