//! `xdev watch --exec CMD`: tells a person that a preview waits, by
//! running their command (a desktop notification, a push message) for each
//! newly staged preview, and again for one still pending after a while.
//!
//! It follows the mount's `events` stream: one thread waits in a blocking
//! read of it, so nothing is polled on a timer; the records reach an async
//! loop that also waits for the `--after` times and for SIGINT and SIGTERM.
//!
//! With `--after`, the previews already pending when watching starts are
//! looked at again too, once they have waited that long since they were
//! staged (by their `staged` record in `log`; one whose record `log` no
//! longer holds counts from when watching started).
//!
//! Commands run one at a time, in the order they were asked for, through
//! `sh -c`; at most [`MAX_QUEUED`] wait behind the one running, and one
//! more is dropped (and logged) rather than queued, so a burst of previews
//! never piles up commands without bound. A command that fails (exits
//! non-zero, is killed, cannot start) is logged and watching goes on.

use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use super::{check_mount, describe_status, ClientError, ID_ENV, MOUNT_ENV};
use crate::error::describe;
use crate::safe_text::{is_path_safe_name, one_line};
use crate::texts;

/// The environment variable that holds the preview's label (on one line,
/// escaped as `status` shows it).
pub const LABEL_ENV: &str = "XDEV_LABEL";
/// The environment variable that holds the preview's agent session id
/// (empty when it names none).
pub const SESSION_ENV: &str = "XDEV_SESSION";
/// The environment variable that holds the preview's source tool.
pub const TOOL_ENV: &str = "XDEV_TOOL";
/// The environment variable set for a run of `--after`: how long the
/// preview has waited (`30s`).
pub const WAITED_ENV: &str = "XDEV_WAITED";

/// How many commands may wait behind the one running.
pub const MAX_QUEUED: usize = 32;

/// What `xdev watch` runs, and when.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The shell command line (`sh -c`) run for each preview.
    pub command: OsString,
    /// Run it again for a preview still pending this long after it was
    /// staged (once per preview).
    pub after: Option<Duration>,
}

/// Why watching ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// The mount went away (unmounted, or its daemon stopped).
    MountGone,
    /// SIGINT or SIGTERM.
    Stopped,
}

/// Watches the mount at `dir` until it goes away or a stop signal comes,
/// running `options.command` for each preview staged meanwhile (see the
/// module's documentation). Returns once the command under way, if any,
/// has ended; commands still queued then are dropped.
pub fn watch(dir: &Path, options: &WatchOptions) -> Result<WatchEnd, ClientError> {
    check_mount(dir)?;
    let events_path = dir.join("events");
    let events = File::open(&events_path).map_err(|source| ClientError::Io {
        what: texts::cannot_open(&events_path),
        source,
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ClientError::Io {
            what: texts::WATCH_NO_RUNTIME.to_string(),
            source,
        })?;
    runtime.block_on(follow(dir, options, events))
}

/// A record the reader thread passes on, or the stream's end.
enum FromReader {
    Line(String),
    Gone,
}

/// Reads `events` in a thread of its own, sending each whole line; ends
/// when the stream does (the mount went away) or nobody listens any more.
///
/// A blocking read, not `poll(2)`: a read waiting in the mount is answered
/// with an error when the mount goes away (its connection ends), which a
/// poller is never told. Once [`watch`] has returned, the thread ends at
/// the next record or when the mount goes away, whichever comes first.
fn spawn_reader(
    events: File,
    lines: mpsc::Sender<FromReader>,
) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("xdev-watch".into())
        .spawn(move || read_events(events, &lines))
}

fn read_events(mut events: File, lines: &mpsc::Sender<FromReader>) {
    let mut partial: Vec<u8> = Vec::new();
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        match events.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                partial.extend_from_slice(&buffer[..read]);
                while let Some(end) = partial.iter().position(|&byte| byte == b'\n') {
                    let line: Vec<u8> = partial.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line).trim_end().to_string();
                    if lines.blocking_send(FromReader::Line(line)).is_err() {
                        return;
                    }
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::debug!(error = %describe(&error), "events ended");
                break;
            }
        }
    }
    let _ = lines.blocking_send(FromReader::Gone);
}

/// A preview as its `staged` record names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Staged {
    id: String,
    label: String,
    tool: String,
    session: String,
    /// The record itself, the command's standard input.
    line: String,
}

impl Staged {
    /// The preview a record stages, if it is a `staged` record.
    fn from_line(line: &str) -> Option<Staged> {
        let record: Value = serde_json::from_str(line).ok()?;
        if record.get("event")?.as_str()? != "staged" {
            return None;
        }
        let text = |key: &str| {
            record
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Some(Staged {
            id: text("id"),
            label: text("label"),
            tool: text("sourceTool"),
            session: text("sessionId"),
            line: format!("{line}\n"),
        })
    }

    /// A preview pending at `dir` whose `staged` record is gone from
    /// `log`: what its files say, and a record made of it.
    fn from_files(dir: &Path, id: &str) -> Staged {
        let item = dir.join("pending").join(id);
        let read = |name: &str| {
            std::fs::read_to_string(item.join(name))
                .unwrap_or_default()
                .trim_end()
                .to_string()
        };
        let (label, tool) = (read("label"), read("source"));
        let record =
            serde_json::json!({"event": "staged", "id": id, "label": label, "sourceTool": tool});
        Staged {
            id: id.to_string(),
            label,
            tool,
            session: String::new(),
            line: format!("{record}\n"),
        }
    }
}

/// The previews pending now, each with when it was staged (seconds since
/// the epoch) when `log` still says so: from its `staged` record, else
/// from its `label` and `source` files.
fn already_pending(dir: &Path) -> Vec<(Staged, Option<f64>)> {
    let Ok(entries) = std::fs::read_dir(dir.join("pending")) else {
        return Vec::new();
    };
    let ids: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|id| is_path_safe_name(id))
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
    let mut staged: HashMap<String, (Staged, Option<f64>)> = HashMap::new();
    for line in log.lines() {
        if let Some(record) = Staged::from_line(line) {
            let time = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|value| value.get("time").and_then(Value::as_f64));
            staged.insert(record.id.clone(), (record, time));
        }
    }
    ids.into_iter()
        .map(|id| {
            staged
                .remove(&id)
                .unwrap_or_else(|| (Staged::from_files(dir, &id), None))
        })
        .collect()
}

/// How long after now a preview staged at `staged_at` (seconds since the
/// epoch; unknown: now) will have waited `after`.
fn wait_left(after: Duration, staged_at: Option<f64>) -> Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    let waited = staged_at.map_or(0.0, |at| (now - at).max(0.0));
    after.saturating_sub(Duration::from_secs_f64(waited))
}

/// One run of the command: for which preview, and (for `--after`) how
/// long it has waited.
#[derive(Debug, Clone)]
struct Job {
    staged: Staged,
    waited: Option<Duration>,
}

/// A preview to look at again once `due`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Due {
    due: Instant,
    staged: Staged,
}

impl Ord for Due {
    // Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .due
            .cmp(&self.due)
            .then_with(|| other.staged.id.cmp(&self.staged.id))
    }
}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The commands waiting to run, and the one running, shared with the
/// runner task.
#[derive(Debug, Default)]
struct Queue {
    jobs: parking_lot::Mutex<VecDeque<Job>>,
    more: Notify,
    stopping: AtomicBool,
}

impl Queue {
    /// Queues `job`, unless [`MAX_QUEUED`] already wait: then it is
    /// dropped and logged.
    fn push(&self, job: Job) {
        let mut jobs = self.jobs.lock();
        if jobs.len() >= MAX_QUEUED {
            tracing::warn!(id = %job.staged.id, queued = jobs.len(), "too many commands waiting; this one is dropped");
            return;
        }
        jobs.push_back(job);
        drop(jobs);
        self.more.notify_one();
    }

    async fn next(&self) -> Option<Job> {
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                return None;
            }
            let notified = self.more.notified();
            if let Some(job) = self.jobs.lock().pop_front() {
                return Some(job);
            }
            notified.await;
        }
    }

    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.more.notify_one();
    }
}

async fn follow(dir: &Path, options: &WatchOptions, events: File) -> Result<WatchEnd, ClientError> {
    let (sender, mut lines) = mpsc::channel(1024);
    let reader = spawn_reader(events, sender).map_err(|source| ClientError::Io {
        what: texts::WATCH_NO_RUNTIME.to_string(),
        source,
    })?;
    let signal = |kind| {
        tokio::signal::unix::signal(kind).map_err(|source| ClientError::Io {
            what: texts::WATCH_NO_RUNTIME.to_string(),
            source,
        })
    };
    let mut interrupt = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
    let queue = Arc::new(Queue::default());
    let runner = tokio::spawn(run_jobs(
        Arc::clone(&queue),
        options.command.clone(),
        dir.to_path_buf(),
    ));
    let mut later: BinaryHeap<Due> = BinaryHeap::new();
    // The previews pending before `events` was opened make no `staged`
    // record on it: with `--after`, they are looked at again too.
    let mut scheduled: HashSet<String> = HashSet::new();
    if let Some(after) = options.after {
        for (staged, staged_at) in already_pending(dir) {
            scheduled.insert(staged.id.clone());
            let due = Instant::now() + wait_left(after, staged_at);
            later.push(Due { due, staged });
        }
    }
    let end = loop {
        let next_due = later.peek().map(|due| due.due);
        tokio::select! {
            read = lines.recv() => match read {
                Some(FromReader::Line(line)) => {
                    if let Some(staged) = Staged::from_line(&line) {
                        // One staged while the pending ones were listed is
                        // already due once.
                        if let Some(after) = options.after.filter(|_| !scheduled.contains(&staged.id)) {
                            later.push(Due { due: Instant::now() + after, staged: staged.clone() });
                        }
                        queue.push(Job { staged, waited: None });
                    } else if line.contains("\"event\":\"lost\"") {
                        tracing::warn!(record = %line, "events lost records while watching");
                    }
                }
                Some(FromReader::Gone) | None => break WatchEnd::MountGone,
            },
            () = sleep_until(next_due) => {
                if let Some(Due { staged, .. }) = later.pop() {
                    if still_pending(dir, &staged.id) {
                        queue.push(Job { staged, waited: options.after });
                    }
                }
            }
            _ = interrupt.recv() => break WatchEnd::Stopped,
            _ = terminate.recv() => break WatchEnd::Stopped,
        }
    };
    queue.stop();
    let _ = runner.await;
    // A reader still waiting for a record is left to end by itself.
    drop((lines, reader));
    Ok(end)
}

/// Waits until `due`, or forever when there is nothing to wait for.
async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Whether preview `id` still waits: its directory is still listed under
/// `pending/` (an id that could not name one never is).
fn still_pending(dir: &Path, id: &str) -> bool {
    is_path_safe_name(id) && dir.join("pending").join(id).is_dir()
}

/// Runs the queued commands, one at a time, until the queue stops.
async fn run_jobs(queue: Arc<Queue>, command: OsString, dir: PathBuf) {
    while let Some(job) = queue.next().await {
        let id = job.staged.id.clone();
        let run = tokio::task::spawn_blocking({
            let command = command.clone();
            let dir = dir.clone();
            move || run_job(&command, &dir, &job)
        });
        match run.await {
            Ok(Ok(status)) if status.success() => {
                tracing::debug!(%id, "the watch command ran");
            }
            Ok(Ok(status)) => {
                tracing::warn!(%id, status = %describe_status(status), "the watch command failed; watching goes on");
            }
            Ok(Err(error)) => {
                tracing::warn!(%id, error = %describe(&error), "the watch command could not run; watching goes on");
            }
            Err(error) => tracing::warn!(%id, %error, "the watch command's task failed"),
        }
    }
}

/// Runs the command for one job: the record on its stdin, the preview in
/// its environment; returns how it ended.
fn run_job(command: &OsString, dir: &Path, job: &Job) -> io::Result<std::process::ExitStatus> {
    let staged = &job.staged;
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .env(MOUNT_ENV, dir)
        .env(ID_ENV, &staged.id)
        .env(LABEL_ENV, one_line(&staged.label).as_ref())
        .env(TOOL_ENV, &staged.tool)
        .env(SESSION_ENV, one_line(&staged.session).as_ref())
        .env_remove(WAITED_ENV)
        .stdin(Stdio::piped());
    if let Some(waited) = job.waited {
        shell.env(WAITED_ENV, humantime::format_duration(waited).to_string());
    }
    let mut child = shell.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin closes it: not a failure.
        let _ = stdin.write_all(staged.line.as_bytes());
    }
    child.wait()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_staged_records_start_a_command() {
        let line = r#"{"time":1.0,"event":"staged","id":"pending-action:Bash:3","label":"Bash: ls\nrm","sourceTool":"Bash","sessionId":"s-1","outcome":"ok"}"#;
        let staged = Staged::from_line(line).expect("a staged record");
        assert_eq!(staged.id, "pending-action:Bash:3");
        assert_eq!(staged.label, "Bash: ls\nrm");
        assert_eq!(staged.tool, "Bash");
        assert_eq!(staged.session, "s-1");
        assert_eq!(staged.line, format!("{line}\n"));
        let decided = r#"{"event":"resolve","id":"pending-action:Bash:3","outcome":"ok"}"#;
        assert_eq!(Staged::from_line(decided), None);
        assert_eq!(Staged::from_line("not json"), None);
    }

    #[test]
    fn the_earliest_due_preview_comes_first() {
        let at = Instant::now();
        let staged = |id: &str| Staged {
            id: id.into(),
            label: String::new(),
            tool: String::new(),
            session: String::new(),
            line: String::new(),
        };
        let mut heap = BinaryHeap::new();
        heap.push(Due {
            due: at + Duration::from_secs(2),
            staged: staged("b"),
        });
        heap.push(Due {
            due: at + Duration::from_secs(1),
            staged: staged("a"),
        });
        assert_eq!(heap.pop().map(|due| due.staged.id), Some("a".to_string()));
    }

    #[test]
    fn a_full_queue_drops_rather_than_grows() {
        let queue = Queue::default();
        let job = Job {
            staged: Staged::from_line(r#"{"event":"staged","id":"x"}"#).expect("staged"),
            waited: None,
        };
        for _ in 0..MAX_QUEUED + 5 {
            queue.push(job.clone());
        }
        assert_eq!(queue.jobs.lock().len(), MAX_QUEUED);
    }
}
