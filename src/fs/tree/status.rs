//! The read-only status files: `status`, `status.json`, `last`, `reminder`,
//! `plan/status`, and each agent session's `sessions/<session-id>/status`.
//! Rendered afresh from the session on a descriptor's first read and on
//! every read from offset 0 (never at open), for the mount's owner; other
//! users (on a mount that shares them) share one rendering per file at most
//! a quarter of a second old, made off the request loop, so that their
//! loops over a large `status.json` never take it from the owner. `status`
//! shows each free text escaped on its line, and the plan waiting on the
//! plan desk while one does; `last` is the one text as it is.

use crate::maps::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::json;

use crate::dispatch::DeviceResult;
use crate::fs::PolicyControl;
use crate::journal::Journal;
use crate::plan_desk::{PlanDesk, PlanUnderReview};
use crate::session::preview::PreviewInfo;
use crate::session::Session;
use crate::texts;

/// The last device result of a mount.
#[derive(Debug, Default)]
pub(crate) struct LastResult {
    last: Mutex<Option<DeviceResult>>,
}

impl LastResult {
    pub(crate) fn record(&self, result: DeviceResult) {
        *self.last.lock() = Some(result);
    }

    pub(crate) fn get(&self) -> Option<DeviceResult> {
        self.last.lock().clone()
    }
}

/// The latest rendering of each status file, so that descriptors reading
/// the same content share one copy (a thousand open `status.json`
/// descriptors hold one, not a thousand).
#[derive(Debug, Default)]
pub(crate) struct Renders {
    latest: Mutex<Vec<(TextFile, Weak<[u8]>)>>,
    /// The rendering other users share, and when it was made.
    for_others: Mutex<HashMap<TextFile, Dated>>,
    /// Held while rendering for others: readers woken together get one
    /// rendering, not one each.
    rendering_for_others: Mutex<()>,
}

/// A rendering and when it was made.
type Dated = (Instant, Arc<[u8]>);

/// How old a rendering other users get may be: at most four renders a
/// second of each file for all of them together, however many read.
pub(crate) const OTHERS_REFRESH: Duration = Duration::from_millis(250);

impl Renders {
    /// The size of the rendering other users share of `file` (0 before
    /// the first).
    pub(crate) fn others_len(&self, file: TextFile) -> u64 {
        self.for_others
            .lock()
            .get(&file)
            .map_or(0, |(_, rendering)| rendering.len() as u64)
    }

    /// Whether the rendering other users share of `file` is recent.
    pub(crate) fn others_recent(&self, file: TextFile) -> bool {
        self.for_others
            .lock()
            .get(&file)
            .is_some_and(|(made, _)| made.elapsed() < OTHERS_REFRESH)
    }

    /// `file` for a user other than the owner: the rendering made for them
    /// less than [`OTHERS_REFRESH`] ago, else a new one by `render`.
    pub(crate) fn for_others(&self, file: TextFile, render: impl FnOnce() -> Vec<u8>) -> Arc<[u8]> {
        let _one_at_a_time = self.rendering_for_others.lock();
        if let Some((made, rendering)) = self.for_others.lock().get(&file) {
            if made.elapsed() < OTHERS_REFRESH {
                return Arc::clone(rendering);
            }
        }
        // Rendered outside the table's lock: the owner's reads never wait
        // for it.
        let rendering = self.share(file, render());
        self.for_others
            .lock()
            .insert(file, (Instant::now(), Arc::clone(&rendering)));
        rendering
    }

    /// `bytes` of `file`, shared with the last rendering if that is the same.
    pub(crate) fn share(&self, file: TextFile, bytes: Vec<u8>) -> Arc<[u8]> {
        let mut latest = self.latest.lock();
        latest.retain(|(_, rendering)| rendering.strong_count() > 0);
        let same = latest
            .iter()
            .filter(|(rendered, _)| *rendered == file)
            .find_map(|(_, rendering)| rendering.upgrade())
            .filter(|rendering| **rendering == *bytes);
        if let Some(rendering) = same {
            return rendering;
        }
        let rendering: Arc<[u8]> = Arc::from(bytes);
        latest.retain(|(rendered, _)| *rendered != file);
        latest.push((file, Arc::downgrade(&rendering)));
        rendering
    }
}

/// One of the read-only status files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TextFile {
    Status,
    StatusJson,
    Last,
    Reminder,
    PlanStatus,
}

impl TextFile {
    /// The file's content right now.
    pub(crate) fn render(
        self,
        session: &Session,
        last: &LastResult,
        plan: Option<&PlanDesk>,
        policy: Option<&dyn PolicyControl>,
        journal: &Journal,
    ) -> String {
        let journal = journal.file_health();
        let under_review = || plan.and_then(PlanDesk::under_review);
        let policy = policy.map(PolicyControl::summary);
        match self {
            TextFile::Status => render_status(session, last.get(), under_review(), journal, policy),
            TextFile::StatusJson => {
                render_status_json(session, last.get(), under_review(), journal, policy)
            }
            TextFile::Last => last
                .get()
                .map(|last| format!("{}\n", last.text))
                .unwrap_or_default(),
            TextFile::Reminder => render_reminder(session),
            TextFile::PlanStatus => plan
                .map(|plan| {
                    format!(
                        "{}\n",
                        serde_json::to_string(&plan.status()).unwrap_or_default()
                    )
                })
                .unwrap_or_default(),
        }
    }
}

fn render_status(
    session: &Session,
    last: Option<DeviceResult>,
    under_review: Option<PlanUnderReview>,
    journal: Option<String>,
    policy: Option<String>,
) -> String {
    let mut out = texts::status_pending(session.pending_count());
    let in_progress = session.in_progress_count();
    if in_progress > 0 {
        out.push_str(&texts::status_in_progress(in_progress));
    }
    // Every field is one line (the texts see to it): a label or a result
    // text must not be able to add a line such as `plan mode: on`.
    out.push_str(&head_line(session.pending_head().as_ref()));
    // One line per agent session with previews waiting; none at all while
    // no preview names a session, so that such a mount's status is as it
    // always was.
    for summary in session.pending_sessions() {
        let head = &summary.head;
        out.push_str(&texts::status_session(
            &summary.id,
            summary.pending,
            (&head.id, &head.source_tool, &head.label),
        ));
    }
    out.push_str(&texts::status_plan_mode(session.plan_mode()));
    // Only while a proposal waits on the plan desk, as the session lines.
    if let Some(plan) = under_review {
        out.push_str(&texts::status_plan_under_review(&plan.slug, &plan.path));
    }
    match last {
        Some(last) if last.ok => out.push_str(&texts::status_last_ok(&last.device, &last.text)),
        Some(last) => out.push_str(&texts::status_last_error(
            &last.device,
            last.errno.as_deref().unwrap_or("E?"),
            &last.text,
        )),
        None => out.push_str(texts::STATUS_LAST_NONE),
    }
    if let Some(journal) = journal {
        out.push_str(&texts::status_journal(&journal));
    }
    if let Some(policy) = policy {
        out.push_str(&texts::status_policy(&policy));
    }
    out
}

fn render_status_json(
    session: &Session,
    last: Option<DeviceResult>,
    under_review: Option<PlanUnderReview>,
    journal: Option<String>,
    policy: Option<String>,
) -> String {
    let stack = session.pending();
    let value = json!({
        "mountDir": session.mount_dir(),
        "serverPid": std::process::id(),
        "pending": stack.len(),
        "inProgress": session.in_progress_count(),
        "head": stack.first(),
        "planMode": session.plan_mode(),
        "planUnderReview": under_review,
        "last": last,
        "stack": stack,
        "sessions": session.pending_sessions(),
        "journal": journal,
        "policy": policy,
    });
    format!("{value}\n")
}

/// `sessions/<agent>/status`: that agent session's pending count and head,
/// each field escaped on its line as in `status`.
pub(crate) fn render_session_status(session: &Session, agent: &str) -> String {
    let pending = session.pending_in(agent);
    let mut out = texts::session_status_header(agent, pending.len());
    out.push_str(&head_line(pending.first()));
    out
}

/// The `head:` line of `status`: id, source tool and label, each escaped.
fn head_line(head: Option<&PreviewInfo>) -> String {
    texts::status_head(head.map(|head| {
        (
            head.id.as_str(),
            head.source_tool.as_str(),
            head.label.as_str(),
        )
    }))
}

fn render_reminder(session: &Session) -> String {
    session
        .pending_head()
        .map(|head| {
            format!(
                "{}\n",
                texts::reminder(&head.source_tool, &session.mount_dir())
            )
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renderings_of_the_same_content_are_shared_while_someone_holds_one() {
        let renders = Renders::default();
        let first = renders.share(TextFile::Status, b"a".to_vec());
        let second = renders.share(TextFile::Status, b"a".to_vec());
        assert!(Arc::ptr_eq(&first, &second));
        let other = renders.share(TextFile::StatusJson, b"a".to_vec());
        assert!(!Arc::ptr_eq(&first, &other), "another file keeps its own");
        let changed = renders.share(TextFile::Status, b"b".to_vec());
        assert_eq!(&*changed, b"b");
        assert_eq!(&*first, b"a", "an older reader keeps what it read");
        drop((first, second, changed));
        let again = renders.share(TextFile::Status, b"a".to_vec());
        assert_eq!(&*again, b"a");
    }

    #[test]
    fn other_users_share_one_recent_rendering_per_file() {
        let renders = Renders::default();
        let renders_made = std::cell::Cell::new(0);
        let render = |text: &'static [u8]| {
            renders_made.set(renders_made.get() + 1);
            text.to_vec()
        };
        let first = renders.for_others(TextFile::StatusJson, || render(b"{}"));
        let second = renders.for_others(TextFile::StatusJson, || render(b"{\"new\":1}"));
        assert!(Arc::ptr_eq(&first, &second), "within the window: the same");
        assert_eq!(renders_made.get(), 1);
        let other = renders.for_others(TextFile::Status, || render(b"pending: 0\n"));
        assert_eq!(&*other, b"pending: 0\n", "each file its own");
        std::thread::sleep(OTHERS_REFRESH);
        let later = renders.for_others(TextFile::StatusJson, || render(b"{\"new\":1}"));
        assert_eq!(&*later, b"{\"new\":1}", "past the window: fresh");
        assert_eq!(renders_made.get(), 3);
    }
}
