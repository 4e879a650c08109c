//! The decision journal: an append-only record, one JSON line per staging
//! and per decision, with who made it. The mount shows it as `log` (and
//! streams it as `events`); `--journal FILE` also appends it to a file.
//! A decision's records are synced before its writer is answered; the
//! syncing itself runs on a thread of its own, in groups (see `journal/commit.rs`).

use crate::maps::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::dispatch::{BeforeDecision, Decision, Details};
use crate::error::{errno_name, Error};
use crate::maps::remove_and_shrink;
use crate::session::answer::PlanApprovalDetails;
use crate::session::events::{Event, EventKind};
use crate::session::preview::{Origin, PreviewInfo};
use crate::session::Session;
use crate::stage_protocol::WithdrawReason;
use crate::who::Who;

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
    /// `ok`, `error`, `refused`, `timeout`, ...
    pub outcome: String,
    /// The result text.
    pub text: Option<String>,
    /// The errno name of a failed decision.
    pub errno: Option<String>,
    /// The agent call the preview answers (`sessionId`, `toolUseId`), when
    /// its producer named one; absent otherwise.
    #[serde(flatten)]
    pub origin: Option<Origin>,
    /// Who caused it, when known.
    #[serde(flatten)]
    pub who: Option<Who>,
    /// The plan a `propose` was about, when its handler named it (title,
    /// plan path, outcome): what a review UI watching `events` needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanApprovalDetails>,
    /// What decided, when no person's write did (the daemon's policy);
    /// absent otherwise.
    #[serde(flatten)]
    pub decider: Option<Decider>,
}

/// What made a decision that no person wrote: the daemon's policy
/// (`"decider": "policy"`), with the rule that decided, or in shadow mode
/// what it would have decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decider {
    /// Who decided: `policy`.
    pub decider: String,
    /// The rule that decided, as the rules file writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// In shadow mode, what the policy would have decided (`allow`,
    /// `deny` or `ask`); nothing was decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_decide: Option<String>,
}

/// A decision's record borrowed from its [`Decision`]: serialised exactly as
/// its [`Record`] would be, without copying every text first (one `echo`
/// spent a fifth of its work building and dropping that copy).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DecisionLine<'a> {
    time: f64,
    event: &'a str,
    id: Option<&'a str>,
    label: Option<&'a str>,
    source_tool: Option<&'a str>,
    device: Option<&'a str>,
    reason: Option<&'a str>,
    outcome: &'static str,
    text: Option<&'a str>,
    errno: Option<String>,
    #[serde(flatten)]
    origin: Option<&'a Origin>,
    #[serde(flatten)]
    who: Option<&'a Who>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a PlanApprovalDetails>,
    #[serde(flatten)]
    decider: Option<&'a Decider>,
}

impl<'a> DecisionLine<'a> {
    fn new(
        device: &'a str,
        reason: &'a str,
        decision: &'a Decision,
        who: Option<&'a Who>,
        decider: Option<&'a Decider>,
    ) -> Self {
        let details = decision.details();
        DecisionLine {
            time: now(),
            event: device,
            id: decision.id(),
            label: details.map(|details| details.label.as_str()),
            source_tool: details.map(|details| details.source_tool_name.as_str()),
            device: Some(device),
            reason: Some(reason),
            outcome: match decision.error() {
                None => "ok",
                Some(Error::OutcomeUnknown(_)) => "unknown",
                Some(Error::AgentsOwnCall(_)) => "refused",
                Some(_) => "error",
            },
            text: Some(decision.text()),
            errno: decision.error().map(Error::errno_name),
            origin: details.and_then(|details| details.origin.as_ref()),
            who,
            plan: decision.plan(),
            decider,
        }
    }
}

pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs_f64())
        .unwrap_or(0.0)
}

impl Record {
    /// The note that `bytes` written to `device` after its message (which
    /// decided preview `id`, with its label and source tool, if any) were
    /// ignored; `who` wrote them.
    pub fn ignored(
        device: &str,
        id: Option<String>,
        (label, source_tool): (Option<String>, Option<String>),
        bytes: usize,
        who: Option<Who>,
    ) -> Record {
        Record {
            time: now(),
            event: "ignored".to_string(),
            id,
            label,
            source_tool,
            device: Some(device.to_string()),
            reason: None,
            outcome: "ok".to_string(),
            text: Some(crate::texts::bytes_ignored(bytes)),
            errno: None,
            origin: None,
            who,
            plan: None,
            decider: None,
        }
    }

    /// The record of a decision written to `device` by `who`.
    pub fn decision(device: &str, reason: &str, decision: &Decision, who: Option<Who>) -> Record {
        let line = DecisionLine::new(device, reason, decision, who.as_ref(), None);
        Record {
            time: line.time,
            event: device.to_string(),
            id: line.id.map(str::to_string),
            label: line.label.map(str::to_string),
            source_tool: line.source_tool.map(str::to_string),
            device: Some(device.to_string()),
            reason: Some(reason.to_string()),
            outcome: line.outcome.to_string(),
            text: Some(decision.text().to_string()),
            errno: line.errno,
            origin: line.origin.cloned(),
            who,
            plan: decision.plan().cloned(),
            decider: None,
        }
    }

    /// The note that the writer of a decision written to `device` stopped
    /// waiting for it: the decision goes on, and its own record follows
    /// when it ends.
    /// `preview` is the one it was deciding (or only its id, if the session
    /// no longer knows it), when one was claimed; `why` is what the writer
    /// was told. Its outcome is `left`, or `unknown` when the writer was
    /// told so (an apply still running when the mount stopped).
    pub fn writer_left(
        device: &str,
        reason: &str,
        preview: Option<Result<PreviewInfo, String>>,
        why: &Error,
        who: Option<Who>,
    ) -> Record {
        let (id, label, source_tool) = match preview {
            Some(Ok(info)) => (Some(info.id), Some(info.label), Some(info.source_tool)),
            Some(Err(id)) => (Some(id), None, None),
            None => (None, None, None),
        };
        Record {
            time: now(),
            event: "writer-left".to_string(),
            id,
            label,
            source_tool,
            device: Some(device.to_string()),
            reason: Some(reason.to_string()),
            outcome: match why {
                Error::OutcomeUnknown(_) => "unknown",
                _ => "left",
            }
            .to_string(),
            text: Some(why.to_string()),
            errno: Some(why.errno_name()),
            origin: None,
            who,
            plan: None,
            decider: None,
        }
    }

    /// The record written (and synced) before the decision of preview `id`
    /// written to `device` runs: if the outcome's record is lost, this one
    /// still tells that the decision started.
    pub fn intent(device: &str, id: &str, details: &Details, who: Option<Who>) -> Record {
        Record {
            time: now(),
            event: "intent".to_string(),
            id: Some(id.to_string()),
            label: Some(details.label.clone()),
            source_tool: Some(details.source_tool_name.clone()),
            device: Some(device.to_string()),
            reason: Some(details.reason.clone()),
            outcome: "started".to_string(),
            text: None,
            errno: None,
            origin: details.origin.clone(),
            who,
            plan: None,
            decider: None,
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
            EventKind::Withdrawn
                if event.reason.as_deref().and_then(|why| why.parse().ok())
                    == Some(WithdrawReason::Deadline) =>
            {
                ("withdrawn", "timeout", None)
            }
            EventKind::Withdrawn => ("withdrawn", "ok", None),
            // A proposal is recorded with its write.
            EventKind::Proposed => return None,
            EventKind::PlanDecided => ("plan-decided", "ok", None),
            EventKind::PlanModeEntered => ("plan-mode", "entered", None),
            EventKind::PlanModeLeft => ("plan-mode", "left", None),
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
            // Plan mode and plan events concern no preview.
            id: (!event.id.is_empty()).then(|| event.id.clone()),
            label: Some(event.label.clone()),
            source_tool: Some(event.source_tool.clone()),
            device: None,
            reason: event.reason.clone(),
            outcome: outcome.to_string(),
            text: event.text.clone(),
            errno: errno.map(errno_name),
            origin: event.origin.clone(),
            who,
            plan: event.plan.clone(),
            decider: None,
        })
    }
}

mod commit;
mod file;
mod memory;

pub use commit::Commit;
use commit::{Entry, Queue};
use file::JournalFile;
use memory::Memory;
pub use memory::{EventsAt, LOG_MEMORY_CAP, LOG_MEMORY_CAP_WITH_FILE};

struct Lines {
    /// What `log` and `events` serve.
    memory: Memory,
    /// Who staged ids that are about to be staged (filled before staging so
    /// the staged record can name the producer).
    stagers: HashMap<String, Who>,
}

fn to_line(record: &impl Serialize) -> Vec<u8> {
    // Most records fit: one allocation, no regrowth while serialising.
    let mut line = Vec::with_capacity(512);
    if serde_json::to_writer(&mut line, record).is_err() {
        line = b"{}".to_vec();
    }
    line.push(b'\n');
    line
}

/// The journal of one mount. Cheap to clone.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    lines: Mutex<Lines>,
    /// How many records `log` has had, told to `events` readers waiting
    /// for more. An atomic and a `Notify` rather than a `watch`: telling
    /// nobody costs a few instructions, not a lock per waiter slot.
    count: AtomicUsize,
    more: Notify,
    /// The journal file's path and its writer's queue, with a file.
    file: Option<(PathBuf, Arc<Queue>)>,
}

impl Inner {
    /// Keeps `lines` in `log`, in order (records that only the disk lets
    /// in: intents and `lost` notes, once synced).
    fn keep<'a>(&self, lines: impl Iterator<Item = &'a Vec<u8>>) {
        let count = {
            let mut kept = self.lines.lock();
            for line in lines {
                kept.memory.push(line);
            }
            kept.memory.records()
        };
        self.counted(count);
    }

    fn queue(&self) -> Option<&Queue> {
        self.file.as_ref().map(|(_, queue)| &**queue)
    }

    /// `log` has `count` records now.
    fn counted(&self, count: usize) {
        self.count.store(count, Ordering::Release);
        self.more.notify_waiters();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The writer finishes what is queued, then ends.
        if let Some(queue) = self.queue() {
            queue.close();
        }
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("records", &self.len())
            .finish()
    }
}

/// Where a reader of `log` is: how far the kept journal had moved past the
/// offsets it asked for (records dropped from memory meanwhile), so that
/// its next read goes on where the last one ended.
#[derive(Debug, Default)]
pub struct LogReader {
    skipped: u64,
}

impl Journal {
    /// An in-memory journal; with `file`, every record is also appended
    /// there and synced. The file is refused (with an error naming it and
    /// saying what to do) unless it is a regular file that no other user
    /// (but root) owns and that neither its group nor everyone may write.
    pub fn new(file: Option<&Path>) -> std::io::Result<Journal> {
        let cap = if file.is_some() {
            LOG_MEMORY_CAP_WITH_FILE
        } else {
            LOG_MEMORY_CAP
        };
        Journal::with_cap(file, cap)
    }

    fn with_cap(file: Option<&Path>, cap: usize) -> std::io::Result<Journal> {
        let file = file.map(JournalFile::open).transpose()?;
        let queue = file.as_ref().map(|_| Arc::new(Queue::default()));
        let inner = Arc::new(Inner {
            lines: Mutex::new(Lines {
                memory: Memory::new(cap),
                stagers: HashMap::default(),
            }),
            count: AtomicUsize::new(0),
            more: Notify::new(),
            file: file
                .as_ref()
                .zip(queue.clone())
                .map(|(file, queue)| (file.path().to_path_buf(), queue)),
        });
        if let (Some(file), Some(queue)) = (file, queue) {
            commit::start(file, queue, Arc::downgrade(&inner))?;
        }
        Ok(Journal { inner })
    }

    /// Appends a record; with a journal file it is queued to be written
    /// and synced there, and the returned [`Commit`] tells when it is (or
    /// why not). When the file cannot take it, it is still in `log`, the
    /// file is marked failing (see [`Journal::file_health`]) and the next
    /// record the file takes is preceded by a `lost` record naming it.
    /// Never waits for the disk.
    pub fn append(&self, record: &Record) -> Commit {
        self.append_line(to_line(record))
    }

    /// Appends the record of a decision written to `device` by `who` (as
    /// [`Record::decision`] makes it), like [`Journal::append`].
    pub fn append_decision(
        &self,
        device: &str,
        reason: &str,
        decision: &Decision,
        who: Option<&Who>,
    ) -> Commit {
        self.append_line(to_line(&DecisionLine::new(
            device, reason, decision, who, None,
        )))
    }

    /// Appends the record of a decision `decider` made (the daemon's
    /// policy) as if written to `device` by `who`: the record
    /// [`Journal::append_decision`] makes, with the decider's fields.
    pub fn append_decision_by(
        &self,
        device: &str,
        reason: &str,
        decision: &Decision,
        who: Option<&Who>,
        decider: &Decider,
    ) -> Commit {
        self.append_line(to_line(&DecisionLine::new(
            device,
            reason,
            decision,
            who,
            Some(decider),
        )))
    }

    fn append_line(&self, line: Vec<u8>) -> Commit {
        let (commit, count) = {
            let mut lines = self.inner.lines.lock();
            lines.memory.push(&line);
            // Queued under the lock: the file gets the order `log` shows.
            let commit = self.queue(line, false);
            (commit, lines.memory.records())
        };
        self.inner.counted(count);
        commit
    }

    /// Queues a record that must be in the journal file before what it
    /// announces happens (a decision's intent); await its [`Commit`] before
    /// going ahead. Unlike [`Journal::append`], a record the file cannot
    /// take is not kept at all: the caller refuses what it announced, and
    /// `log` shows the record only once it is on disk. Without a journal
    /// file nothing is recorded.
    pub fn write_ahead(&self, record: &Record) -> Commit {
        match self.inner.file {
            Some(_) => self.queue(to_line(record), true),
            None => Commit::done(Ok(())),
        }
    }

    /// Ready once every record appended so far is settled in the journal
    /// file (at once without one): what a reply waits for when the record
    /// it caused must be on disk first.
    pub fn flushed(&self) -> Commit {
        let Some(queue) = self.inner.queue() else {
            return Commit::done(Ok(()));
        };
        let (done, commit) = Commit::queued();
        queue.push(Entry::Barrier(done));
        commit
    }

    fn queue(&self, line: Vec<u8>, ahead: bool) -> Commit {
        let Some(queue) = self.inner.queue() else {
            return Commit::done(Ok(()));
        };
        let (done, commit) = Commit::queued();
        queue.push(Entry::Line { line, ahead, done });
        commit
    }

    /// The check a decision written to `device` by `who` passes once its
    /// preview is claimed: its intent record is written ahead and synced,
    /// or the decision is refused (`ENOSPC`, `EIO`) and nothing runs.
    /// `None` without a journal file: there is nothing to write ahead, and
    /// the device write path builds no record for it.
    pub fn before_decision(
        &self,
        device: impl FnOnce() -> String,
        who: Option<&Who>,
    ) -> Option<BeforeDecision> {
        self.inner.file.as_ref()?;
        let (journal, device, who) = (self.clone(), device(), who.cloned());
        Some(Box::new(move |id, details| {
            let commit = journal.write_ahead(&Record::intent(&device, id, details, who));
            Box::pin(async move { commit.await.map_err(|error| Error::journal(&error)) })
        }))
    }

    /// With a journal file: `ok`, or `failing (<error>)` while its writes
    /// fail. `None` without one.
    pub fn file_health(&self) -> Option<String> {
        let queue = self.inner.queue()?;
        Some(match queue.failing() {
            None => "ok".to_string(),
            Some(error) => crate::texts::journal_file_failing(&error),
        })
    }

    /// Closes the journal file and opens it again by its path, with the
    /// checks [`Journal::new`] makes, so that after a log rotation renamed
    /// it away, the records queued after this go to a new file at that path.
    /// Returns that path, or `None` without a journal file. When the path
    /// cannot be opened (or is refused), the file open so far is kept and
    /// the error (naming the path) is returned.
    pub fn reopen_file(&self) -> std::io::Result<Option<PathBuf>> {
        let Some((path, queue)) = &self.inner.file else {
            return Ok(None);
        };
        let reopened = JournalFile::open(path)?;
        queue.push(Entry::Reopen(reopened));
        Ok(Some(path.clone()))
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
            let who = remove_and_shrink(&mut journal.inner.lines.lock().stagers, &event.id);
            if let Some(record) = Record::from_event(event, who) {
                // A failure is reported by the next record the file takes.
                drop(journal.append(&record));
            }
            true
        });
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.inner.count.load(Ordering::Acquire)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size of `log` in bytes: every byte recorded since the mount
    /// started, including records no longer kept in memory.
    pub fn byte_len(&self) -> usize {
        self.inner.lines.lock().memory.end() as usize
    }

    /// Everything kept in memory, as `log` shows it.
    pub fn bytes(&self) -> Vec<u8> {
        self.read_at(0, u32::MAX)
    }

    /// The part of `log` a read at `offset` of at most `size` bytes returns;
    /// an offset older than the oldest record kept reads from that record.
    pub fn read_at(&self, offset: u64, size: u32) -> Vec<u8> {
        self.inner.lines.lock().memory.read_at(offset, size).0
    }

    /// A read of `log` by `reader`: like [`Journal::read_at`], but a reader
    /// that fell behind the kept records goes on from the oldest kept one,
    /// and its later reads continue from where this one ended (nothing is
    /// read twice).
    pub fn read_log(&self, reader: &mut LogReader, offset: u64, size: u32) -> Vec<u8> {
        let wanted = offset.saturating_add(reader.skipped);
        let (bytes, start) = self.inner.lines.lock().memory.read_at(wanted, size);
        reader.skipped += start - wanted;
        bytes
    }

    /// What a reader of `events` at `at` reads in at most `max` bytes:
    /// whole lines where they fit, else the next part of one (see
    /// the memory's `lines_from`); and where it is then. Records no
    /// longer kept in memory are skipped.
    pub fn lines_from(&self, at: EventsAt, max: usize) -> (Vec<u8>, EventsAt) {
        self.inner.lines.lock().memory.lines_from(at, max)
    }

    /// Waits until there are more than `seen` records.
    pub async fn wait_beyond(&self, seen: usize) {
        loop {
            // Registered before the count is looked at: a record that comes
            // in between still wakes this waiter.
            let more = self.inner.more.notified();
            let mut more = std::pin::pin!(more);
            more.as_mut().enable();
            if self.len() > seen {
                return;
            }
            more.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Decision;
    use crate::session::answer::ToolResult;

    fn record(text: &str) -> Record {
        Record::decision(
            "resolve",
            "why",
            &Decision::answered(Ok(ToolResult::ok(text)), None, None),
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
            plan: None,
            origin: None,
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
    fn a_decision_appended_from_its_decision_reads_as_its_record() {
        let details = Details {
            action: crate::session::request::Action::Apply,
            reason: "why".into(),
            extra: None,
            source_tool_name: "edit".into(),
            label: "a \"quoted\" label".into(),
            source_result_details: None,
            origin: None,
        };
        let id = Some(std::sync::Arc::from("pending-action:edit:7"));
        let decision = Decision::failed(Error::Busy("busy".into()), id, Some(details));
        let who = Who::current();
        let journal = Journal::new(None).expect("journal");
        journal
            .append_decision("resolve", "why", &decision, Some(&who))
            .wait()
            .expect("append");
        let mut appended: serde_json::Value =
            serde_json::from_slice(&journal.bytes()).expect("json");
        let record = Record::decision("resolve", "why", &decision, Some(who));
        let mut expected = serde_json::to_value(&record).expect("json");
        for value in [&mut appended, &mut expected] {
            value["time"] = 0.into();
        }
        assert_eq!(appended, expected);
    }

    #[test]
    fn records_are_json_lines_with_every_field() {
        let journal = Journal::new(None).expect("journal");
        journal.append(&record("done")).wait().expect("append");
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
    fn a_policys_decision_names_the_decider_and_the_rule_and_others_do_not() {
        let decision = Decision::answered(Ok(ToolResult::ok("done")), None, None);
        let journal = Journal::new(None).expect("journal");
        let decider = Decider {
            decider: "policy".into(),
            rule: Some("Bash(cargo test *)".into()),
            would_decide: None,
        };
        journal
            .append_decision_by("pending/p/resolve", "policy: x", &decision, None, &decider)
            .wait()
            .expect("append");
        journal
            .append_decision("resolve", "why", &decision, None)
            .wait()
            .expect("append");
        let text = String::from_utf8(journal.bytes()).expect("utf-8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(lines[0]["decider"], "policy");
        assert_eq!(lines[0]["rule"], "Bash(cargo test *)");
        assert!(lines[0].get("wouldDecide").is_none());
        for key in ["decider", "rule", "wouldDecide"] {
            assert!(lines[1].get(key).is_none(), "{key} in a person's record");
        }
    }

    #[test]
    fn reads_work_from_any_offset_and_by_whole_lines() {
        let journal = Journal::new(None).expect("journal");
        journal.append(&record("one")).wait().expect("append");
        journal.append(&record("two")).wait().expect("append");
        let all = journal.bytes();
        assert_eq!(journal.read_at(5, 10), all[5..15].to_vec());
        let (first, next) = journal.lines_from(EventsAt::default(), all.len() / 2 + 1);
        assert_eq!(next, EventsAt::record(1));
        assert!(String::from_utf8(first).expect("utf-8").contains("\"one\""));
        let (rest, next) = journal.lines_from(next, 1 << 20);
        assert_eq!(next, EventsAt::record(2));
        assert!(String::from_utf8(rest).expect("utf-8").contains("\"two\""));
    }

    #[test]
    fn the_journal_file_gets_the_same_lines() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("journal.jsonl");
        let journal = Journal::new(Some(&path)).expect("journal");
        journal.append(&record("one")).wait().expect("append");
        journal.append(&record("two")).wait().expect("append");
        assert_eq!(std::fs::read(&path).expect("file"), journal.bytes());
    }

    #[test]
    fn reopening_follows_the_path_and_keeps_the_old_file_when_it_cannot() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("journal.jsonl");
        let rotated = dir.path().join("journal.jsonl.1");
        assert_eq!(
            Journal::new(None).expect("journal").reopen_file().ok(),
            Some(None)
        );
        let journal = Journal::new(Some(&path)).expect("journal");
        journal.append(&record("one")).wait().expect("append");
        std::fs::rename(&path, &rotated).expect("rotate");
        std::fs::create_dir(&path).expect("a directory where the file was");
        let error = journal.reopen_file().expect_err("refused").to_string();
        assert!(error.contains("is a directory"), "{error}");
        journal.append(&record("two")).wait().expect("append");
        std::fs::remove_dir(&path).expect("rmdir");
        assert_eq!(journal.reopen_file().expect("reopen"), Some(path.clone()));
        journal.append(&record("three")).wait().expect("append");
        let lines = |path: &Path| {
            std::fs::read_to_string(path)
                .expect("read")
                .lines()
                .map(|line| {
                    serde_json::from_str::<serde_json::Value>(line).expect("json")["text"].clone()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(lines(&rotated), ["one", "two"]);
        assert_eq!(lines(&path), ["three"]);
    }

    #[test]
    fn log_keeps_its_newest_bytes_and_a_reader_behind_goes_on_from_the_oldest() {
        // Fixed times, so that every line has the same length.
        let numbered = |n: usize| Record {
            time: 1.5,
            ..record(&format!("{n:03}"))
        };
        let one = to_line(&numbered(0)).len();
        let journal = Journal::with_cap(None, 2 * one + one / 2).expect("journal");
        let mut early = LogReader::default();
        for n in 0..5 {
            journal.append(&numbered(n)).wait().expect("append");
        }
        assert_eq!(journal.len(), 5);
        assert_eq!(
            journal.byte_len(),
            5 * one,
            "log's size counts all since mount"
        );
        let kept = journal.bytes();
        assert_eq!(kept.len(), 2 * one, "only whole lines, within the cap");
        assert!(String::from_utf8_lossy(&kept).contains("\"003\""));
        // A reader at offset 0 reads the oldest kept line onward, then goes
        // on where it stopped, reading nothing twice.
        let first = journal.read_log(&mut early, 0, one as u32);
        assert_eq!(first, kept[..one].to_vec());
        let second = journal.read_log(&mut early, one as u64, 10 * one as u32);
        assert_eq!(second, kept[one..].to_vec());
        assert!(journal.read_log(&mut early, 2 * one as u64, 100).is_empty());
        let (lost, at) = journal.lines_from(EventsAt::default(), 1 << 20);
        assert_eq!(
            String::from_utf8_lossy(&lost),
            "{\"event\":\"lost\",\"count\":3}\n",
            "events tell of dropped records"
        );
        let (events, next) = journal.lines_from(at, 1 << 20);
        assert_eq!((events, next), (kept, EventsAt::record(5)));
    }
}
