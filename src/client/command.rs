//! Running the command of a decision: its stdout is the result, the tail
//! of its stderr the failure; and sending a plan command.

use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use super::{write_device, ClientError, EXIT_ERROR};
use crate::device::MAX_MESSAGE;
use crate::plan_command::PlanCommand;
use crate::supervised::supervise;
use crate::texts;

/// How many lines of a failed command's stderr become the failure message.
pub const TAIL_LINES: usize = 20;
/// How many bytes of a failed command's stderr become the failure message.
pub const TAIL_BYTES: usize = 2048;

/// Runs a plan command through `<mount>/plan/ctl` and returns the answer.
pub fn plan_control(mount: &Path, command: &PlanCommand) -> Result<String, ClientError> {
    write_device(
        &mount.join("plan").join("ctl"),
        command.to_string().as_bytes(),
    )
}

/// What a command run for a decision left behind.
#[derive(Debug)]
pub struct CommandOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// What it wrote to stdout: all of it when that is at most twice
    /// [`STDOUT_KEEP`] bytes, else its last [`STDOUT_KEEP`] bytes before the
    /// trailing newlines (all the result text can show), and what followed
    /// them (a run of newlines there shortened to [`STDOUT_KEEP`] bytes).
    pub stdout: Vec<u8>,
    /// How many bytes of its stdout were read and discarded (0 when
    /// `stdout` holds all of it).
    pub stdout_dropped: u64,
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
        (Some(code), _) => texts::exit_status(code),
        (None, Some(signal)) => texts::killed_by_signal(signal),
        (None, None) => texts::EXIT_STATUS_UNKNOWN.to_string(),
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
/// [`TAIL_BYTES`] bytes, surrounding whitespace trimmed; a tail that is
/// not the whole starts with a line saying so and where the whole is
/// ([`texts::STDERR_TAIL_CUT`]: the stderr is passed through as well).
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
    let tail = tail.trim();
    if tail.len() < text.len() {
        format!("{}{tail}", texts::STDERR_TAIL_CUT)
    } else {
        tail.to_string()
    }
}

/// How much of a command's stderr is kept to compute its tail.
const STDERR_KEEP: usize = 4 * TAIL_BYTES;

/// How many bytes of the end of a command's stdout (trailing newlines
/// aside) are kept. Its result text goes to the mount in one message, which
/// holds at most [`MAX_MESSAGE`] bytes and keeps the text's end when it is
/// longer; so this much is all that can be reported, and a command that
/// prints gigabytes costs no more memory than one that prints a line.
pub const STDOUT_KEEP: usize = MAX_MESSAGE;

/// The end of a stream, for [`CommandOutput::result_text`]: once trailing
/// newlines are trimmed, the text it gives ends with the same `limit` bytes
/// as the whole stream's (and is at least that long, unless the whole is
/// shorter). Holds about `2 * limit` bytes however long the stream.
#[derive(Debug)]
struct StreamEnd {
    limit: usize,
    kept: Vec<u8>,
    dropped: u64,
}

impl StreamEnd {
    fn new(limit: usize) -> StreamEnd {
        StreamEnd {
            limit,
            kept: Vec::new(),
            dropped: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        // Compacting at twice the limit keeps the copying to about one
        // pass over the stream.
        if self.kept.len() > 2 * self.limit {
            self.compact();
        }
    }

    /// Drops what the result text can never show: all but the last
    /// `limit` bytes before the trailing newlines, and all but the last
    /// `limit` of those newlines (they count only if text follows them, and
    /// then only the last `limit` bytes of the text count).
    fn compact(&mut self) {
        let text_end = self
            .kept
            .iter()
            .rposition(|byte| !matches!(byte, b'\n' | b'\r'))
            .map_or(0, |at| at + 1);
        let newlines = self.kept.len() - text_end;
        if newlines > self.limit {
            self.kept.drain(text_end..self.kept.len() - self.limit);
            self.dropped += (newlines - self.limit) as u64;
        }
        let start = text_end.saturating_sub(self.limit);
        self.kept.drain(..start);
        self.dropped += start as u64;
    }

    /// Reads `source` to its end, keeping only its end; a read error ends
    /// it early, like end of file.
    fn read_from(&mut self, mut source: impl Read) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match source.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.push(&buf[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
}

/// Runs `command` with stdout captured (its end: [`STDOUT_KEEP`]; the rest
/// is read and discarded, so the command never blocks on a full pipe) and
/// stderr both passed through to this process's stderr and kept for its
/// tail; stdin is inherited.
///
/// The command is supervised: in a process
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
    let mut stdout = StreamEnd::new(STDOUT_KEEP);
    if let Some(out) = child.stdout.take() {
        // A command that closes its stdout early still gets waited for.
        stdout.read_from(out);
    }
    let status = child
        .wait()
        .map_err(|err| ClientError::io(texts::CANNOT_WAIT_FOR_COMMAND, err))?;
    supervisor.done();
    let kept = tee.join().unwrap_or_default();
    Ok(CommandOutput {
        status,
        stdout: stdout.kept,
        stdout_dropped: stdout.dropped,
        stderr_tail: stderr_tail(&kept),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_keeps_the_last_lines_and_bytes() {
        let many: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let tail = stderr_tail(many.as_bytes());
        let kept = tail
            .strip_prefix(texts::STDERR_TAIL_CUT)
            .expect("says it is cut");
        assert!(kept.starts_with("line 11\n"), "{tail}");
        assert!(kept.ends_with("line 30"), "{tail}");
        assert_eq!(kept.lines().count(), TAIL_LINES);
        let long = "é".repeat(3000);
        let tail = stderr_tail(long.as_bytes());
        let kept = tail
            .strip_prefix(texts::STDERR_TAIL_CUT)
            .expect("says it is cut");
        assert!(kept.len() <= TAIL_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
        let few: String = (1..=TAIL_LINES).map(|n| format!("line {n}\n")).collect();
        assert_eq!(stderr_tail(few.as_bytes()), few.trim(), "whole: no mark");
        assert_eq!(stderr_tail(b"  \n"), "");
        assert_eq!(stderr_tail(b"boom\n"), "boom");
    }

    /// The result text of `stream` fed in `chunk`-sized pieces through a
    /// [`StreamEnd`] of `limit`, and the bytes it held at most.
    fn through_stream_end(stream: &[u8], chunk: usize, limit: usize) -> (String, usize) {
        let mut end = StreamEnd::new(limit);
        let mut most = 0;
        for piece in stream.chunks(chunk) {
            end.push(piece);
            most = most.max(end.kept.len());
        }
        assert_eq!(end.dropped + end.kept.len() as u64, stream.len() as u64);
        let output = CommandOutput {
            status: ExitStatus::from_raw(0),
            stdout: end.kept,
            stdout_dropped: end.dropped,
            stderr_tail: String::new(),
        };
        (output.result_text(), most)
    }

    #[test]
    fn only_the_end_of_stdout_is_kept_and_it_gives_the_same_result() {
        let limit = 16;
        let text = |n: usize| {
            (0..n)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect::<String>()
        };
        let streams = [
            text(10),
            format!("{}\n", text(1000)),
            format!("{}{}", text(1000), "\n".repeat(1000)),
            format!("{}{}x", text(1000), "\r\n".repeat(500)),
            format!("{}{}xyz\n\n", text(5), "\n".repeat(1000)),
            "\n".repeat(1000),
            format!("a\nb{}", "\n".repeat(40)),
        ];
        for stream in &streams {
            let full = stream.trim_end_matches(['\n', '\r']);
            for chunk in [1, 3, 7, 16, 64, 5000] {
                let (result, most) = through_stream_end(stream.as_bytes(), chunk, limit);
                // What the mount is sent is at most `limit` bytes of the
                // result's end: the same as the whole stream's.
                let end = |text: &str| text[text.len().saturating_sub(limit)..].to_string();
                assert_eq!(end(&result), end(full), "{stream:?} in chunks of {chunk}");
                assert!(
                    result.len() >= limit.min(full.len()) && result.len() <= full.len(),
                    "{stream:?} in chunks of {chunk}: {result:?}"
                );
                assert!(most <= 2 * limit + chunk, "{most} bytes held");
            }
        }
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
