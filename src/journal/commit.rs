//! Group commit of the journal file. Whoever makes a record only queues
//! it; one thread of its own writes the queued lines (in one `write(2)`)
//! and syncs all of them with one `fdatasync`, so records that arrive
//! while a sync runs share the next one. Nobody that queues a record waits
//! on the disk: a writer whose answer must follow its record awaits the
//! record's [`Commit`], while the thread it came on (a FUSE request thread,
//! say) goes on serving.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use super::file::JournalFile;
use super::{now, Inner, Record};
use crate::texts;

/// Whether a queued record is on disk: `Ok` once it is synced, the error
/// once the file could not take it. Ready at once where there is no
/// journal file. Await it, or [`Commit::wait`] outside async code.
#[derive(Debug)]
pub struct Commit(Waiting);

#[derive(Debug)]
enum Waiting {
    Done(Option<io::Result<()>>),
    Queued(oneshot::Receiver<io::Result<()>>),
}

/// Tells a [`Commit`] how its record ended.
pub(super) type Done = oneshot::Sender<io::Result<()>>;

impl Commit {
    /// A commit known already.
    pub(super) fn done(result: io::Result<()>) -> Commit {
        Commit(Waiting::Done(Some(result)))
    }

    /// A commit told later, through the sender.
    pub(super) fn queued() -> (Done, Commit) {
        let (done, waiting) = oneshot::channel();
        (done, Commit(Waiting::Queued(waiting)))
    }

    /// Blocks this thread until the outcome is known: for threads that
    /// serve nobody meanwhile and run no async code (a test, a
    /// command-line tool).
    pub fn wait(self) -> io::Result<()> {
        match self.0 {
            Waiting::Done(result) => result.unwrap_or_else(|| Err(stopped())),
            Waiting::Queued(waiting) => waiting.blocking_recv().unwrap_or_else(|_| Err(stopped())),
        }
    }
}

impl Future for Commit {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Waiting::Done(result) => Poll::Ready(result.take().unwrap_or_else(|| Err(stopped()))),
            Waiting::Queued(waiting) => Pin::new(waiting)
                .poll(cx)
                .map(|told| told.unwrap_or_else(|_| Err(stopped()))),
        }
    }
}

/// The error of a record whose writer went away before telling its fate.
fn stopped() -> io::Error {
    io::Error::other(texts::JOURNAL_WRITER_STOPPED)
}

/// A copy of `error` for each record it failed (`io::Error` is not `Clone`).
fn copy(error: &io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(errno) => io::Error::from_raw_os_error(errno),
        None => io::Error::new(error.kind(), error.to_string()),
    }
}

/// What the writer thread is asked to do, in order.
pub(super) enum Entry {
    /// A serialised record. One `ahead` of what it announces is kept in
    /// `log` only once it is on disk, and is not counted as lost when it
    /// fails (its decision is refused instead).
    Line {
        line: Vec<u8>,
        ahead: bool,
        done: Done,
    },
    /// Told once everything queued before it is settled.
    Barrier(Done),
    /// Records queued after this go to this file (after a log rotation).
    Reopen(JournalFile),
}

/// The entries waiting for the writer thread.
#[derive(Default)]
pub(super) struct Queue {
    state: Mutex<State>,
    arrived: Condvar,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    closed: bool,
    /// The error of the last failed write, while the file is failing.
    failing: Option<String>,
}

impl Queue {
    /// Queues `entry` for the writer; never waits for the disk.
    pub(super) fn push(&self, entry: Entry) {
        self.state.lock().entries.push(entry);
        self.arrived.notify_one();
    }

    /// `Some(error)` while the file's writes fail.
    pub(super) fn failing(&self) -> Option<String> {
        self.state.lock().failing.clone()
    }

    /// The writer finishes what is queued, then ends.
    pub(super) fn close(&self) {
        self.state.lock().closed = true;
        self.arrived.notify_one();
    }

    /// Everything queued so far, into `batch`; `false` once closed and
    /// drained.
    fn next_batch(&self, batch: &mut Vec<Entry>) -> bool {
        let mut state = self.state.lock();
        while state.entries.is_empty() && !state.closed {
            self.arrived.wait(&mut state);
        }
        std::mem::swap(&mut state.entries, batch);
        !batch.is_empty()
    }

    fn set_failing(&self, failing: Option<String>) {
        self.state.lock().failing = failing;
    }
}

/// Starts the thread that writes `file` from `queue`; it keeps in `log`
/// (through `inner`) what only the disk may let in.
pub(super) fn start(file: JournalFile, queue: Arc<Queue>, inner: Weak<Inner>) -> io::Result<()> {
    let writer = Writer {
        file,
        queue,
        inner,
        losses: Losses::default(),
    };
    std::thread::Builder::new()
        .name("xdev-journal".into())
        .spawn(move || writer.run())
        .map(drop)
}

struct Writer {
    file: JournalFile,
    queue: Arc<Queue>,
    inner: Weak<Inner>,
    losses: Losses,
}

/// One group of lines written and not yet synced.
#[derive(Default)]
struct Group {
    /// Lines written, with whether they went ahead and whom to tell.
    lines: Vec<(Vec<u8>, bool, Done)>,
    barriers: Vec<Done>,
    /// The `lost` record written in this group, and the losses it tells.
    lost: Option<(Vec<u8>, Losses)>,
    /// Whether the last write of the group succeeded (the file is well
    /// again once it is synced).
    healthy: bool,
}

impl Writer {
    fn run(mut self) {
        let mut batch = Vec::new();
        let mut lines = Vec::new();
        while self.queue.next_batch(&mut batch) {
            let mut group = Group::default();
            for entry in batch.drain(..) {
                match entry {
                    Entry::Line { line, ahead, done } => lines.push((line, ahead, done)),
                    Entry::Barrier(done) => group.barriers.push(done),
                    Entry::Reopen(file) => {
                        self.write_all(&mut lines, &mut group);
                        self.settle(std::mem::take(&mut group));
                        self.file = file;
                    }
                }
            }
            self.write_all(&mut lines, &mut group);
            self.settle(group);
        }
    }

    /// Writes the queued `lines` (after the `lost` record of earlier
    /// failures, once per group), unsynced, in one `write(2)` where it
    /// can. Lines from the first one the file did not take whole are
    /// written one by one, so each learns its own error.
    fn write_all(&mut self, lines: &mut Vec<(Vec<u8>, bool, Done)>, group: &mut Group) {
        if lines.is_empty() {
            return;
        }
        let lost = match group.lost {
            None => self.losses.record().map(|lost| super::to_line(&lost)),
            Some(_) => None,
        };
        let all: Vec<&[u8]> = lost
            .iter()
            .chain(lines.iter().map(|(line, ..)| line))
            .map(Vec::as_slice)
            .collect();
        let mut whole = self.file.write_lines(&all);
        drop(all);
        if let Some(lost) = lost {
            if whole == 0 {
                // Not even the `lost` record went: each line on its own.
                for (line, ahead, done) in lines.drain(..) {
                    self.write(line, ahead, done, group);
                }
                return;
            }
            whole -= 1;
            group.lost = Some((lost, std::mem::take(&mut self.losses)));
        }
        let mut lines = lines.drain(..);
        for (line, ahead, done) in lines.by_ref().take(whole) {
            group.healthy = true;
            group.lines.push((line, ahead, done));
        }
        for (line, ahead, done) in lines {
            self.write(line, ahead, done, group);
        }
    }

    /// Writes one line (after the `lost` record of earlier failures, once
    /// per group), unsynced.
    fn write(&mut self, line: Vec<u8>, ahead: bool, done: Done, group: &mut Group) {
        if group.lost.is_none() {
            if let Some(lost) = self.losses.record().map(|lost| super::to_line(&lost)) {
                if self.file.write_line(&lost).is_ok() {
                    group.lost = Some((lost, std::mem::take(&mut self.losses)));
                }
            }
        }
        match self.file.write_line(&line) {
            Ok(()) => {
                group.healthy = true;
                group.lines.push((line, ahead, done));
            }
            Err(error) => {
                group.healthy = false;
                self.failed(&line, ahead, done, &error);
            }
        }
    }

    /// Syncs `group` and tells each of its records how it ended.
    fn settle(&mut self, group: Group) {
        let Group {
            lines,
            barriers,
            lost,
            healthy,
        } = group;
        match self.file.sync() {
            Ok(()) => {
                let ahead = lines.iter().filter(|(_, ahead, _)| *ahead);
                let kept = lost
                    .iter()
                    .map(|(lost, _)| lost)
                    .chain(ahead.map(|(line, ..)| line));
                if let Some(inner) = self.inner.upgrade() {
                    inner.keep(kept);
                }
                if healthy {
                    self.losses.failing = None;
                }
                for (_, _, done) in lines {
                    let _ = done.send(Ok(()));
                }
            }
            Err(error) => {
                if let Some((_, earlier)) = lost {
                    let later = std::mem::replace(&mut self.losses, earlier);
                    self.losses.absorb(later);
                }
                for (line, ahead, done) in lines {
                    self.failed(&line, ahead, done, &error);
                }
            }
        }
        for done in barriers {
            let _ = done.send(Ok(()));
        }
        self.queue.set_failing(self.losses.failing.clone());
    }

    /// A line the file could not take: the file is failing, a record that
    /// did not go ahead is counted as lost (it is in `log` already), and
    /// the one waiting for it is told.
    fn failed(&mut self, line: &[u8], ahead: bool, done: Done, error: &io::Error) {
        tracing::error!(%error, path = %self.file.path().display(), "cannot append to the journal file");
        if ahead {
            self.losses.failing = Some(crate::error::describe(error));
        } else {
            self.losses.note(line, error);
        }
        let _ = done.send(Err(copy(error)));
    }
}

/// How many lost records a `lost` record names (it counts them all).
const LOST_NAMED: usize = 20;

/// Records the journal file could not take, for the next record that can
/// be written to say so.
#[derive(Debug, Default)]
pub(super) struct Losses {
    count: usize,
    named: Vec<String>,
    /// The error of the last failed write, while the file is failing.
    failing: Option<String>,
}

impl Losses {
    fn note(&mut self, line: &[u8], error: &io::Error) {
        self.count += 1;
        if self.named.len() < LOST_NAMED {
            self.named.push(name_of(line));
        }
        self.failing = Some(crate::error::describe(error));
    }

    /// Adds `later`'s losses after these.
    fn absorb(&mut self, later: Losses) {
        self.count += later.count;
        let room = LOST_NAMED.saturating_sub(self.named.len());
        self.named.extend(later.named.into_iter().take(room));
        self.failing = later.failing.or(self.failing.take());
    }

    /// The `lost` record of what could not be written so far, if anything.
    fn record(&self) -> Option<Record> {
        if self.count == 0 {
            return None;
        }
        let more = self.count - self.named.len();
        let text = texts::journal_records_lost(self.count, &self.named.join(", "), more);
        Some(Record {
            time: now(),
            event: "lost".to_string(),
            id: None,
            label: None,
            source_tool: None,
            device: None,
            reason: self.failing.clone(),
            outcome: "error".to_string(),
            text: Some(text),
            errno: None,
            origin: None,
            who: None,
            plan: None,
            decider: None,
        })
    }
}

/// `event id (outcome)` of a serialised record: read back from the line
/// only when it is lost, so that records that are written cost nothing.
fn name_of(line: &[u8]) -> String {
    let record: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
    let field = |key: &str| record[key].as_str().unwrap_or("-").to_string();
    format!("{} {} ({})", field("event"), field("id"), field("outcome"))
}
