//! The decision journal: an append-only record, one JSON line per staging
//! and per decision, with who made it. The mount shows it as `log` (and
//! streams it as `events`); `--journal FILE` also appends it to a file,
//! synced before the write that caused a record returns.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;

use crate::dispatch::Resolution;
use crate::error::{errno_name, Error};
use crate::session::events::{Event, EventKind};
use crate::session::Session;
pub use crate::who::{Who, WhoCache};

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Seconds since the Unix epoch.
    pub time: f64,
    /// `staged`, `withdrawn`, `requeued`, `cleared`, or the device written
    /// (`resolve`, `reject`, `propose`, `pending/<id>/resolve`, ...).
    pub event: String,
    /// The preview's id, when one is concerned.
    pub id: Option<String>,
    /// The preview's label.
    pub label: Option<String>,
    /// The tool that staged it.
    pub source_tool: Option<String>,
    /// The device written, for decisions.
    pub device: Option<String>,
    /// The reason given.
    pub reason: Option<String>,
    /// `ok`, `error`, `timeout`, ...
    pub outcome: String,
    /// The result text.
    pub text: Option<String>,
    /// The errno name of a failed decision.
    pub errno: Option<String>,
    /// Who caused it, when known.
    #[serde(flatten)]
    pub who: Option<Who>,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs_f64())
        .unwrap_or(0.0)
}

impl Record {
    /// The record of a decision written to `device` by `who`.
    pub fn decision(
        device: &str,
        reason: &str,
        resolution: &Resolution,
        who: Option<Who>,
    ) -> Record {
        let details = resolution.details.as_ref();
        Record {
            time: now(),
            event: device.to_string(),
            id: resolution.id.clone(),
            label: details.map(|details| details.label.clone()),
            source_tool: details.map(|details| details.source_tool_name.clone()),
            device: Some(device.to_string()),
            reason: Some(reason.to_string()),
            outcome: match &resolution.error {
                None => "ok",
                Some(Error::OutcomeUnknown(_)) => "unknown",
                Some(_) => "error",
            }
            .to_string(),
            text: Some(resolution.text.clone()),
            errno: resolution
                .error
                .as_ref()
                .map(|error| error.errno_name().to_string()),
            who,
        }
    }

    /// The record of a queue event (staging, withdrawal, ...) or of the
    /// outcome of an abandoned decision; `None` for the events that
    /// decisions already record.
    pub fn from_event(event: &Event, who: Option<Who>) -> Option<Record> {
        // A callback that failed (or returned an error result) is an EIO,
        // as it would have been for a waiting writer.
        let eio = Some(libc::EIO);
        let (name, outcome, errno) = match event.kind {
            EventKind::Staged => ("staged", "ok", None),
            EventKind::Requeued => ("requeued", "error", None),
            EventKind::Cleared => ("cleared", "ok", None),
            EventKind::Withdrawn if event.reason.as_deref() == Some("deadline") => {
                ("withdrawn", "timeout", None)
            }
            EventKind::Withdrawn => ("withdrawn", "ok", None),
            // A decision's outcome is recorded with its write, unless the
            // writer had stopped waiting (interrupted, aborted): then only
            // this event tells how it ended.
            EventKind::Applied | EventKind::Discarded | EventKind::Failed if !event.abandoned => {
                return None
            }
            EventKind::Applied if event.ok => ("applied", "ok", None),
            EventKind::Applied => ("applied", "error", eio),
            EventKind::Discarded if event.ok => ("discarded", "ok", None),
            EventKind::Discarded => ("discarded", "error", eio),
            EventKind::Failed => ("failed", "error", eio),
        };
        Some(Record {
            time: now(),
            event: name.to_string(),
            id: Some(event.id.clone()),
            label: Some(event.label.clone()),
            source_tool: Some(event.source_tool.clone()),
            device: None,
            reason: event.reason.clone(),
            outcome: outcome.to_string(),
            text: event.text.clone(),
            errno: errno.map(|errno| errno_name(errno).to_string()),
            who,
        })
    }
}

struct Lines {
    /// Every line so far, newline-terminated, concatenated (what `log` reads).
    bytes: Vec<u8>,
    /// Where each line starts in `bytes`.
    starts: Vec<usize>,
    file: Option<File>,
    /// Who staged ids that are about to be staged (filled before staging so
    /// the staged record can name the producer).
    stagers: HashMap<String, Who>,
}

/// The journal of one mount. Cheap to clone.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    lines: Mutex<Lines>,
    count: watch::Sender<usize>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("records", &self.len())
            .finish()
    }
}

impl Journal {
    /// An in-memory journal; with `file`, every record is also appended
    /// there and synced.
    pub fn new(file: Option<&Path>) -> std::io::Result<Journal> {
        let file = match file {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
            None => None,
        };
        Ok(Journal {
            inner: Arc::new(Inner {
                lines: Mutex::new(Lines {
                    bytes: Vec::new(),
                    starts: Vec::new(),
                    file,
                    stagers: HashMap::new(),
                }),
                count: watch::Sender::new(0),
            }),
        })
    }

    /// Appends a record (and syncs it to the journal file, if any).
    pub fn append(&self, record: &Record) {
        let mut line = serde_json::to_string(record).unwrap_or_else(|_| "{}".to_string());
        line.push('\n');
        let count = {
            let mut lines = self.inner.lines.lock();
            if let Some(file) = lines.file.as_mut() {
                if let Err(err) = file
                    .write_all(line.as_bytes())
                    .and_then(|()| file.sync_data())
                {
                    tracing::error!(%err, "cannot append to the journal file");
                }
            }
            let start = lines.bytes.len();
            lines.starts.push(start);
            lines.bytes.extend_from_slice(line.as_bytes());
            lines.starts.len()
        };
        self.inner.count.send_replace(count);
    }

    /// Notes who is staging `id`, for its `staged` record.
    pub fn expect_stager(&self, id: &str, who: Who) {
        self.inner.lines.lock().stagers.insert(id.to_string(), who);
    }

    /// Records the queue events of `session` from now on, as they happen,
    /// until this journal is gone.
    pub fn follow(&self, session: &Session) {
        let journal = Arc::downgrade(&self.inner);
        session.on_event(move |event| {
            let Some(inner) = journal.upgrade() else {
                return false;
            };
            let journal = Journal { inner };
            let who = journal.inner.lines.lock().stagers.remove(&event.id);
            if let Some(record) = Record::from_event(event, who) {
                journal.append(&record);
            }
            true
        });
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        *self.inner.count.borrow()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size of `log` in bytes.
    pub fn byte_len(&self) -> usize {
        self.inner.lines.lock().bytes.len()
    }

    /// Everything, as `log` shows it.
    pub fn bytes(&self) -> Vec<u8> {
        self.inner.lines.lock().bytes.clone()
    }

    /// The part of `log` a read at `offset` of at most `size` bytes returns.
    pub fn read_at(&self, offset: u64, size: u32) -> Vec<u8> {
        let lines = self.inner.lines.lock();
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(lines.bytes.len());
        let end = start.saturating_add(size as usize).min(lines.bytes.len());
        lines.bytes[start..end].to_vec()
    }

    /// Whole lines from record `from` on, at most `max` bytes (but at least
    /// one line, which may be cut); returns them and the next record index.
    pub fn lines_from(&self, from: usize, max: usize) -> (Vec<u8>, usize) {
        let lines = self.inner.lines.lock();
        let mut next = from;
        let mut out = Vec::new();
        while next < lines.starts.len() {
            let start = lines.starts[next];
            let end = lines
                .starts
                .get(next + 1)
                .copied()
                .unwrap_or(lines.bytes.len());
            if !out.is_empty() && out.len() + (end - start) > max {
                break;
            }
            out.extend_from_slice(&lines.bytes[start..end]);
            next += 1;
        }
        out.truncate(max);
        (out, next)
    }

    /// Waits until there are more than `seen` records.
    pub async fn wait_beyond(&self, seen: usize) {
        let mut count = self.inner.count.subscribe();
        let _ = count.wait_for(|count| *count > seen).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Resolution;

    fn record(text: &str) -> Record {
        Record::decision(
            "resolve",
            "why",
            &Resolution::ok(text, None),
            Some(Who::current()),
        )
    }

    fn outcome_event(kind: EventKind, ok: bool, abandoned: bool) -> Event {
        Event {
            kind,
            id: "pending-action:edit:0".into(),
            label: "edit".into(),
            source_tool: "edit".into(),
            reason: Some("why".into()),
            text: Some("text".into()),
            ok,
            abandoned,
            time: SystemTime::now(),
        }
    }

    #[test]
    fn only_abandoned_decisions_are_recorded_from_their_events() {
        let recorded = |kind, ok, abandoned| {
            Record::from_event(&outcome_event(kind, ok, abandoned), None)
                .map(|record| (record.event, record.outcome, record.errno))
        };
        let eio = || Some("EIO".to_string());
        for kind in [EventKind::Applied, EventKind::Discarded, EventKind::Failed] {
            assert_eq!(
                recorded(kind, true, false),
                None,
                "{kind:?} with a waiting writer"
            );
        }
        let late = [
            (EventKind::Applied, true, ("applied", "ok", None)),
            (EventKind::Applied, false, ("applied", "error", eio())),
            (EventKind::Discarded, true, ("discarded", "ok", None)),
            (EventKind::Discarded, false, ("discarded", "error", eio())),
            (EventKind::Failed, false, ("failed", "error", eio())),
        ];
        for (kind, ok, (event, outcome, errno)) in late {
            assert_eq!(
                recorded(kind, ok, true),
                Some((event.to_string(), outcome.to_string(), errno)),
                "{kind:?} ok={ok}, nobody waiting"
            );
        }
    }

    #[test]
    fn records_are_json_lines_with_every_field() {
        let journal = Journal::new(None).expect("journal");
        journal.append(&record("done"));
        let line = String::from_utf8(journal.bytes()).expect("utf-8");
        assert!(line.ends_with('\n'));
        let value: serde_json::Value = serde_json::from_str(&line).expect("json");
        for key in [
            "time",
            "event",
            "id",
            "label",
            "sourceTool",
            "device",
            "reason",
            "outcome",
            "text",
            "errno",
            "uid",
            "pid",
            "process",
        ] {
            assert!(value.get(key).is_some(), "missing {key} in {line}");
        }
        assert_eq!(value["outcome"], "ok");
        assert_eq!(value["pid"], std::process::id());
    }

    #[test]
    fn reads_work_from_any_offset_and_by_whole_lines() {
        let journal = Journal::new(None).expect("journal");
        journal.append(&record("one"));
        journal.append(&record("two"));
        let all = journal.bytes();
        assert_eq!(journal.read_at(5, 10), all[5..15].to_vec());
        let (first, next) = journal.lines_from(0, all.len() / 2 + 1);
        assert_eq!(next, 1);
        assert!(String::from_utf8(first).expect("utf-8").contains("\"one\""));
        let (rest, next) = journal.lines_from(1, 1 << 20);
        assert_eq!(next, 2);
        assert!(String::from_utf8(rest).expect("utf-8").contains("\"two\""));
    }

    #[test]
    fn the_journal_file_gets_the_same_lines() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("journal.jsonl");
        let journal = Journal::new(Some(&path)).expect("journal");
        journal.append(&record("one"));
        journal.append(&record("two"));
        assert_eq!(std::fs::read(&path).expect("file"), journal.bytes());
    }
}
