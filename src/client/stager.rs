//! The stager: stages a preview through `<mount>/stage`, waits for its
//! decision and runs the command that applies (or rejects) it, in the
//! stage protocol's own types ([`crate::stage_protocol`]).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{
    run_command, ClientError, EXIT_APPLIED, EXIT_DEADLINE, EXIT_DISCARDED, ID_ENV, MOUNT_ENV,
    REASON_ENV,
};
use crate::device::MAX_MESSAGE;
use crate::error::describe;
use crate::stage_protocol::{
    ProducerMessage, ProducerReport, StageRequest, StagerAgent, WithdrawReason,
};
use crate::texts;

/// What a producer asks the mount to stage: the request line of the stage
/// protocol (see [`crate::stage_protocol`]).
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
    /// What the preview would change, shown in `pending/<id>/diff`
    /// (at most [`MAX_DIFF_BYTES`](crate::stage_protocol::MAX_DIFF_BYTES)
    /// as a JSON string).
    pub diff: Option<String>,
    /// The agent's working directory (an absolute path), shown in
    /// `pending/<id>/cwd`.
    pub cwd: Option<String>,
    /// The agent session the preview answers (kept in the journal).
    pub session_id: Option<String>,
    /// The agent's tool call the preview answers (kept in the journal).
    pub tool_use_id: Option<String>,
    /// Where the agent whose call this is runs, when the stager is its hook
    /// (decisions from the agent's own processes are then refused).
    pub agent: Option<StagerAgent>,
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
            diff: self.diff.clone(),
            cwd: self.cwd.clone(),
            session_id: self.session_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
            agent: self.agent,
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
                return Err(ClientError::Protocol(texts::expected_staged_id(
                    &staged.path,
                    other,
                )))
            }
            None => {
                return Err(ClientError::Protocol(texts::ended_before_staging(
                    &staged.path,
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
            ProducerMessage::Staged { .. } => {
                ClientError::Protocol(texts::staged_twice(&self.path))
            }
            other => ClientError::Protocol(texts::unexpected_message(&self.path, other)),
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
            Ok(count) => Err(ClientError::Protocol(texts::short_write(
                &self.path,
                count,
                line.len(),
            ))),
            Err(err) => match err.raw_os_error() {
                Some(errno) => Err(ClientError::Refused {
                    errno,
                    text: texts::line_refused(&self.path, line.trim(), &describe(&err)),
                }),
                None => Err(ClientError::io(texts::cannot_write(&self.path), err)),
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
            let read = self
                .reader
                .read_line(&mut line)
                .map_err(|err| ClientError::io(texts::cannot_read(&self.path), err))?;
            if read == 0 {
                return Ok(None);
            }
            if !line.trim().is_empty() {
                break;
            }
        }
        serde_json::from_str(line.trim()).map(Some).map_err(|err| {
            ClientError::Protocol(texts::unexpected_line(&self.path, line.trim(), err))
        })
    }
}

/// The result line `{"ok":..,"text":..}` plus newline, the text shortened
/// (keeping its end) so that the line fits in one message of the mount.
fn report_line(ok: bool, text: &str) -> String {
    const MARK: &str = texts::STAGE_RESULT_CUT;
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
            Ok(_) => Err(not_found(texts::COMMAND_NOT_EXECUTABLE)),
            Err(_) => Err(not_found(texts::COMMAND_MISSING)),
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&search)
        .filter_map(|dir| std::fs::metadata(dir.join(program)).ok())
        .any(|metadata| is_executable(&metadata));
    if found {
        Ok(())
    } else {
        Err(not_found(texts::COMMAND_NOT_ON_PATH))
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
        return Err(ClientError::Protocol(texts::NO_COMMAND_ON_APPLY.into()));
    };
    require_program(program)?;
    let mut staged = StagedPreview::stage(mount, &options.preview)?;
    let id = staged.id().to_string();
    notice(StageNotice::Staged(id.clone()));
    let environment = |command: &mut Command, reason: &str| {
        command
            .env(MOUNT_ENV, mount)
            .env(ID_ENV, &id)
            .env(REASON_ENV, reason);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = serde_json::from_str::<serde_json::Value>(&line).expect("JSON")["text"]
            .as_str()
            .expect("text")
            .to_string();
        let kept = text
            .strip_prefix(texts::STAGE_RESULT_CUT)
            .expect("says that it is cut");
        assert!(kept.starts_with("xxx") && kept.ends_with("xtail"));
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
}
