//! Reading the mount for the review: the pending previews (from
//! `status.json`, grouped by agent session as the journal's `staged`
//! records and `sessions/<id>/pending/` say, aged by those records), the
//! plan under review (`plan/status` and its file), the trail of the last
//! decisions (from `log`), and then every change as it happens, from
//! `events`, waited on with `poll(2)`: no status file is read again in a
//! loop. A change that a record alone cannot settle (a decision that
//! failed may or may not have consumed its preview) is checked with one
//! look at `pending/<id>`; a record that says the queue was cleared, or
//! that records were lost, reads the whole mount again.
//!
//! What it finds reaches the app loop as [`Msg::Source`] messages, so the
//! UI never waits on the mount.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use serde_json::Value;

use super::app::{Decider, Item, Msg, PlanInfo, SourceEvent, TrailEntry};
use super::components::detail::{DetailView, ItemFiles};
use crate::client::{read_text, ClientError};
use crate::safe_text::is_path_safe_name;
use crate::texts;

/// How many decisions of `log` the first reading keeps for the trail.
const TRAIL_FROM_LOG: usize = 20;
/// How often `plan/status` is read while plan mode is on: a proposal under
/// review makes no record until it is decided, so this is the one thing
/// `events` cannot tell.
const PLAN_POLL: Duration = Duration::from_secs(1);
/// How long a `poll(2)` waits before the thread looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(250);
/// How much of `events` one read takes at most.
const READ_CHUNK: usize = 256 * 1024;
/// Processes that are shells, for the trail's "a shell".
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "fish", "ksh", "busybox", "ash"];

/// A whole reading of the mount.
#[derive(Debug)]
pub struct Reading {
    /// The first message: the items, the plan, the trail.
    pub snapshot: SourceEvent,
    /// Whether plan mode is on.
    pub plan_mode: bool,
}

/// Reads the mount whole. `me` is this process (the trail names its
/// decisions "this review").
pub fn read_mount(dir: &Path, me: u32) -> Result<Reading, ClientError> {
    let status: Value = parse(&read_text(&dir.join("status.json"))?);
    let log = read_text(&dir.join("log")).unwrap_or_default();
    let mut staged: HashMap<String, (Option<String>, Option<f64>)> = HashMap::new();
    let mut trail = Vec::new();
    for record in log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
    {
        if record["event"] == "staged" {
            if let Some(id) = record["id"].as_str() {
                let session = record["sessionId"].as_str().map(str::to_string);
                staged.insert(id.to_string(), (session, record["time"].as_f64()));
            }
        } else if let Some(entry) = trail_entry(&record, me) {
            trail.push(entry);
        }
    }
    let keep_from = trail.len().saturating_sub(TRAIL_FROM_LOG);
    let trail = trail.split_off(keep_from);
    let listed = session_listings(dir, &status);
    let items = status["stack"]
        .as_array()
        .map(|stack| {
            stack
                .iter()
                .filter_map(|entry| {
                    let id = entry["id"].as_str()?;
                    let (session, time) = staged.get(id).cloned().unwrap_or_default();
                    let session = session.or_else(|| listed.get(id).cloned());
                    Some(Item {
                        id: Arc::from(id),
                        label: entry["label"].as_str().unwrap_or_default().to_string(),
                        tool: entry["sourceTool"].as_str().unwrap_or_default().to_string(),
                        session: session.map(Arc::from),
                        staged_at: time,
                        rank: 0,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let (plan, plan_mode) = read_plan(dir);
    Ok(Reading {
        snapshot: SourceEvent::Snapshot { items, plan, trail },
        plan_mode,
    })
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Which session lists each id, for the previews whose `staged` record
/// `log` no longer holds.
fn session_listings(dir: &Path, status: &Value) -> HashMap<String, String> {
    let mut listed = HashMap::new();
    let sessions = status["sessions"].as_array().cloned().unwrap_or_default();
    for session in sessions {
        let Some(name) = session["id"]
            .as_str()
            .filter(|name| is_path_safe_name(name))
        else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(dir.join("sessions").join(name).join("pending")) else {
            continue;
        };
        for entry in entries.flatten() {
            listed.insert(
                entry.file_name().to_string_lossy().into_owned(),
                name.to_string(),
            );
        }
    }
    listed
}

/// The plan under review and whether plan mode is on (no plan desk: none,
/// off).
pub fn read_plan(dir: &Path) -> (Option<PlanInfo>, bool) {
    let Ok(text) = read_text(&dir.join("plan").join("status")) else {
        return (None, false);
    };
    let status = parse(&text);
    let plan_mode = status["planMode"].as_bool().unwrap_or(false);
    let review = &status["underReview"];
    let (Some(slug), Some(path)) = (review["slug"].as_str(), review["path"].as_str()) else {
        return (None, plan_mode);
    };
    let markdown =
        std::fs::read_to_string(path).map_err(|err| format!("cannot read {path}: {err}"));
    let plan = PlanInfo {
        slug: slug.to_string(),
        path: path.to_string(),
        markdown,
    };
    (Some(plan), plan_mode)
}

/// What one journal record means for the review.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Tell the app this.
    Tell(SourceEvent),
    /// Look whether `pending/<id>` is still there.
    Recheck(String),
    /// Read the whole mount again.
    Resync,
    /// Read `plan/status` again; plan mode is now on or off when known.
    Plan(Option<bool>),
}

/// Whether `event` names a device whose write decides a preview; and
/// whether it applies.
fn decision_device(event: &str) -> Option<bool> {
    let last = event.rsplit('/').next().unwrap_or(event);
    let scoped = event == last || event.starts_with("pending/") || event.starts_with("sessions/");
    match last {
        "resolve" if scoped => Some(true),
        "reject" if scoped => Some(false),
        _ => None,
    }
}

/// Who made the decision a record tells of.
fn decider_of(record: &Value, me: u32) -> Decider {
    if record["decider"] == "policy" {
        let rule = record["rule"].as_str().map(str::to_string);
        return Decider::Policy(rule);
    }
    if record["outcome"] == "timeout" {
        return Decider::Timeout;
    }
    if record["pid"].as_u64() == Some(u64::from(me)) {
        return Decider::ThisReview;
    }
    match record["process"].as_str() {
        Some(name) if SHELLS.contains(&name) => Decider::Shell(name.to_string()),
        Some(name) => Decider::Process(name.to_string()),
        None => Decider::Unknown,
    }
}

/// The trail's entry for a record of a decision (or a withdrawal), if it
/// is one.
pub fn trail_entry(record: &Value, me: u32) -> Option<TrailEntry> {
    let event = record["event"].as_str()?;
    let label = record["label"].as_str().unwrap_or_default().to_string();
    let time = record["time"].as_f64().unwrap_or_default();
    let verdict = if let Some(applies) = decision_device(event) {
        if record["outcome"] != "ok" || record["id"].is_null() {
            return None;
        }
        if applies {
            texts::REVIEW_APPLIED
        } else {
            texts::REVIEW_REJECTED
        }
        .to_string()
    } else if event == "withdrawn" {
        match record["reason"].as_str() {
            Some(reason) if record["outcome"] != "timeout" => {
                texts::review_withdrawn_because(reason)
            }
            _ => texts::REVIEW_WITHDRAWN.to_string(),
        }
    } else if event == "plan/ctl" || event == "propose" || event == "plan-decided" {
        match record["plan"]["outcome"].as_str() {
            Some("approved") => texts::REVIEW_PLAN_APPROVED.to_string(),
            Some("refine") => texts::REVIEW_PLAN_SENT_BACK.to_string(),
            _ => return None,
        }
    } else if record["decider"] == "policy" && !record["id"].is_null() {
        event.to_string()
    } else {
        return None;
    };
    let label = match record["plan"]["title"].as_str() {
        Some(title) if label.is_empty() => title.to_string(),
        _ => label,
    };
    Some(TrailEntry {
        time,
        verdict,
        label,
        decider: decider_of(record, me),
    })
}

/// What a record of `events` changes.
pub fn interpret(record: &Value, me: u32) -> Vec<Change> {
    let event = record["event"].as_str().unwrap_or_default();
    let id = record["id"].as_str().map(str::to_string);
    let mut changes = Vec::new();
    if let Some(entry) = trail_entry(record, me) {
        changes.push(Change::Tell(SourceEvent::Decided(entry)));
    }
    match (event, id) {
        ("staged", Some(id)) => changes.push(Change::Tell(SourceEvent::Staged(Item {
            id: Arc::from(id),
            label: record["label"].as_str().unwrap_or_default().to_string(),
            tool: record["sourceTool"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            session: record["sessionId"].as_str().map(Arc::from),
            staged_at: record["time"].as_f64(),
            rank: 0,
        }))),
        ("withdrawn", Some(id)) => changes.push(Change::Tell(SourceEvent::Gone(id))),
        ("requeued", Some(id)) => changes.push(Change::Tell(SourceEvent::Requeued(id))),
        ("applied" | "discarded" | "failed" | "writer-left", Some(id)) => {
            changes.push(Change::Recheck(id));
        }
        ("cleared" | "lost", _) => changes.push(Change::Resync),
        ("plan-mode", _) => changes.push(Change::Plan(Some(record["outcome"] == "entered"))),
        ("plan/ctl" | "propose" | "plan-decided", _) => changes.push(Change::Plan(None)),
        (event, Some(id)) if decision_device(event).is_some() || record["decider"] == "policy" => {
            if record["outcome"] == "ok" {
                changes.push(Change::Tell(SourceEvent::Gone(id)));
            } else {
                changes.push(Change::Recheck(id));
            }
        }
        _ => {}
    }
    changes
}

/// The thread that follows the mount; stopped when dropped.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens `events` first (so nothing made after the reading is missed),
/// reads the mount whole, sends that, and follows `events` on a thread of
/// its own, sending each change to `messages`.
pub fn follow(dir: &Path, me: u32, messages: Sender<Msg>) -> Result<Follower, ClientError> {
    let events = open_events(dir)?;
    let reading = read_mount(dir, me)?;
    let plan = match &reading.snapshot {
        SourceEvent::Snapshot { plan, .. } => plan.clone(),
        _ => None,
    };
    let _ = messages.send(Msg::Source(reading.snapshot));
    let stop = Arc::new(AtomicBool::new(false));
    let mut watcher = Watcher {
        dir: dir.to_path_buf(),
        me,
        messages,
        events,
        buffered: Vec::new(),
        plan_mode: reading.plan_mode,
        plan,
        stop: stop.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("xdev-review-source".into())
        .spawn(move || watcher.run())
        .map_err(|err| ClientError::io(texts::REVIEW_CANNOT_START_THREAD, err))?;
    Ok(Follower {
        stop,
        thread: Some(thread),
    })
}

fn open_events(dir: &Path) -> Result<File, ClientError> {
    let path = dir.join("events");
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .map_err(|err| ClientError::io(texts::cannot_open(&path), err))
}

struct Watcher {
    dir: PathBuf,
    me: u32,
    messages: Sender<Msg>,
    events: File,
    /// The start of a line whose end has not been read yet.
    buffered: Vec<u8>,
    plan_mode: bool,
    /// The plan last sent, so that a reading that finds the same sends
    /// nothing.
    plan: Option<PlanInfo>,
    stop: Arc<AtomicBool>,
}

impl Watcher {
    fn run(&mut self) {
        let mut plan_read = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            let wait = if self.plan_mode {
                STOP_CHECK.min(PLAN_POLL)
            } else {
                STOP_CHECK
            };
            match self.wait_readable(wait) {
                Ok(true) => {
                    if let Err(err) = self.read_records() {
                        self.fail(&err);
                        return;
                    }
                }
                Ok(false) => {}
                Err(err) => {
                    self.fail(&err);
                    return;
                }
            }
            if self.plan_mode && plan_read.elapsed() >= PLAN_POLL {
                plan_read = Instant::now();
                self.send_plan();
            }
        }
    }

    fn fail(&self, err: &io::Error) {
        let _ = self
            .messages
            .send(Msg::Source(SourceEvent::Failed(err.to_string())));
    }

    fn wait_readable(&self, wait: Duration) -> io::Result<bool> {
        let millis = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.events.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(0) => Ok(false),
            Ok(_) => {
                let revents = fds[0].revents().unwrap_or(PollFlags::empty());
                if revents.intersects(PollFlags::POLLERR | PollFlags::POLLNVAL) {
                    return Err(io::Error::other("events: poll error"));
                }
                Ok(true)
            }
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(errno) => Err(io::Error::from(errno)),
        }
    }

    /// Reads what `events` holds now and handles each whole line.
    fn read_records(&mut self) -> io::Result<()> {
        loop {
            let start = self.buffered.len();
            self.buffered.resize(start + READ_CHUNK, 0);
            let read = self.events.read(&mut self.buffered[start..]);
            self.buffered.truncate(start + *read.as_ref().unwrap_or(&0));
            match read {
                Ok(0) => return Err(io::Error::other("events: end of file (the mount stopped)")),
                Ok(_) => {
                    self.handle_lines();
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    fn handle_lines(&mut self) {
        let Some(end) = self.buffered.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let lines: Vec<u8> = self.buffered.drain(..=end).collect();
        for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            let Ok(record) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            for change in interpret(&record, self.me) {
                self.apply(change);
            }
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Tell(event) => self.send(event),
            Change::Recheck(id) => {
                if !is_path_safe_name(&id) {
                    return self.apply(Change::Resync);
                }
                if std::fs::symlink_metadata(self.dir.join("pending").join(&id)).is_err() {
                    self.send(SourceEvent::Gone(id));
                }
            }
            Change::Resync => match read_mount(&self.dir, self.me) {
                Ok(reading) => {
                    self.plan_mode = reading.plan_mode;
                    if let SourceEvent::Snapshot { plan, .. } = &reading.snapshot {
                        self.plan = plan.clone();
                    }
                    self.send(reading.snapshot);
                }
                Err(err) => self.send(SourceEvent::Failed(err.to_string())),
            },
            Change::Plan(mode) => {
                if let Some(mode) = mode {
                    self.plan_mode = mode;
                }
                self.send_plan();
            }
        }
    }

    fn send_plan(&mut self) {
        let (plan, mode) = read_plan(&self.dir);
        self.plan_mode = mode;
        if plan != self.plan {
            self.plan = plan.clone();
            self.send(SourceEvent::Plan(plan));
        }
    }

    fn send(&self, event: SourceEvent) {
        let _ = self.messages.send(Msg::Source(event));
    }
}

/// The detail pane's view of preview `id` from its files: its `diff`
/// when the hook made one at staging, its `detail` read as its tool's
/// input, and the `cwd` the agent staged it from.
pub fn load_detail(dir: &Path, id: &str, label: &str, tool: &str) -> DetailView {
    if !is_path_safe_name(id) {
        return DetailView::from_files(label, tool, &ItemFiles::default());
    }
    let item = dir.join("pending").join(id);
    let read = |name: &str| read_text(&item.join(name)).ok();
    let (diff, detail, cwd) = (read("diff"), read("detail"), read("cwd"));
    let files = ItemFiles {
        detail: detail.as_deref(),
        diff: diff.as_deref(),
        cwd: cwd.as_deref(),
    };
    DetailView::from_files(label, tool, &files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ME: u32 = 4242;

    fn record(event: &str, extra: Value) -> Value {
        let mut record = json!({"time": 10.0, "event": event, "id": "pending-action:Bash:7",
            "label": "Bash: ls", "sourceTool": "Bash", "outcome": "ok", "pid": 99, "process": "bash"});
        if let (Some(record), Some(extra)) = (record.as_object_mut(), extra.as_object()) {
            for (key, value) in extra {
                record.insert(key.clone(), value.clone());
            }
        }
        record
    }

    fn decider(changes: &[Change]) -> Option<Decider> {
        changes.iter().find_map(|change| match change {
            Change::Tell(SourceEvent::Decided(entry)) => Some(entry.decider.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_staging_is_an_item_of_its_session() {
        let changes = interpret(&record("staged", json!({"sessionId": "s-1"})), ME);
        let [Change::Tell(SourceEvent::Staged(item))] = changes.as_slice() else {
            panic!("{changes:?}");
        };
        assert_eq!(
            (&*item.id, item.session.as_deref(), item.staged_at),
            ("pending-action:Bash:7", Some("s-1"), Some(10.0))
        );
    }

    #[test]
    fn a_decision_of_any_device_removes_its_item_and_names_who() {
        for device in [
            "resolve",
            "reject",
            "pending/pending-action:Bash:7/resolve",
            "sessions/s-1/reject",
        ] {
            let changes = interpret(&record(device, json!({})), ME);
            assert!(
                changes.contains(&Change::Tell(SourceEvent::Gone(
                    "pending-action:Bash:7".into()
                ))),
                "{device}: {changes:?}"
            );
            assert_eq!(
                decider(&changes),
                Some(Decider::Shell("bash".into())),
                "{device}"
            );
        }
        let mine = interpret(&record("reject", json!({"pid": ME, "process": "xdev"})), ME);
        assert_eq!(decider(&mine), Some(Decider::ThisReview));
        let policy = interpret(
            &record(
                "resolve",
                json!({"decider": "policy", "rule": "Bash(ls:*)", "process": "xdev"}),
            ),
            ME,
        );
        assert_eq!(
            decider(&policy),
            Some(Decider::Policy(Some("Bash(ls:*)".into())))
        );
        let other = interpret(&record("resolve", json!({"process": "python3"})), ME);
        assert_eq!(decider(&other), Some(Decider::Process("python3".into())));
    }

    #[test]
    fn a_failed_decision_is_checked_not_assumed() {
        let changes = interpret(
            &record(
                "pending/pending-action:Bash:7/resolve",
                json!({"outcome": "error", "errno": "EIO"}),
            ),
            ME,
        );
        assert_eq!(changes, [Change::Recheck("pending-action:Bash:7".into())]);
        let refused = interpret(
            &record("resolve", json!({"outcome": "refused", "errno": "EPERM"})),
            ME,
        );
        assert_eq!(refused, [Change::Recheck("pending-action:Bash:7".into())]);
        let nothing = interpret(&record("reject", json!({"id": null})), ME);
        assert!(
            nothing.is_empty(),
            "a reject of nothing changes nothing: {nothing:?}"
        );
    }

    #[test]
    fn withdrawals_requeues_clears_and_plans() {
        let timeout = interpret(
            &record(
                "withdrawn",
                json!({"outcome": "timeout", "reason": "deadline"}),
            ),
            ME,
        );
        assert_eq!(decider(&timeout), Some(Decider::Timeout));
        assert!(timeout.contains(&Change::Tell(SourceEvent::Gone(
            "pending-action:Bash:7".into()
        ))));
        let exited = interpret(
            &record("withdrawn", json!({"reason": "producer exited"})),
            ME,
        );
        assert!(
            matches!(&exited[0], Change::Tell(SourceEvent::Decided(entry)) if entry.verdict == "withdrawn (producer exited)")
        );
        assert_eq!(
            interpret(&record("requeued", json!({})), ME),
            [Change::Tell(SourceEvent::Requeued(
                "pending-action:Bash:7".into()
            ))]
        );
        assert_eq!(
            interpret(&record("cleared", json!({})), ME),
            [Change::Resync]
        );
        assert_eq!(
            interpret(&json!({"event": "lost", "count": 3}), ME),
            [Change::Resync]
        );
        assert_eq!(
            interpret(&json!({"event": "plan-mode", "outcome": "entered"}), ME),
            [Change::Plan(Some(true))]
        );
        let approved = interpret(
            &json!({"event": "plan/ctl", "outcome": "ok", "label": null, "plan": {"title": "auth", "outcome": "approved"}, "process": "xdev", "pid": ME}),
            ME,
        );
        assert!(
            matches!(&approved[0], Change::Tell(SourceEvent::Decided(entry)) if entry.verdict == "plan approved" && entry.label == "auth" && entry.decider == Decider::ThisReview),
            "{approved:?}"
        );
        assert_eq!(approved[1], Change::Plan(None));
        assert!(interpret(&record("intent", json!({"outcome": "started"})), ME).is_empty());
    }
}
