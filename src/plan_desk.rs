//! The daemon's plan review desk: plan mode for a session whose plans are
//! files in a plan directory.
//!
//! A [`PlanDesk`] owns plan mode for one [`Session`]: [`PlanDesk::enter`]
//! installs a plan proposal handler, a `propose` write then finds the plan
//! file in the plan directory and is decided by the configured
//! [`PlanHandlerKind`]:
//!
//! - `yolo` approves at once and leaves plan mode;
//! - `review` keeps the `propose` write waiting until a reviewer calls
//!   [`PlanDesk::approve`] or [`PlanDesk::refine`];
//! - `async` answers `Plan ready for review.` at once and the decision comes
//!   later the same way.
//!
//! This is pure library code: the mount and the CLI only forward to it.
//!
//! ```
//! use xdev::{Device, Dispatch, PlanDesk, PlanHandlerKind, Session};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let plans = std::env::temp_dir().join(format!("xdev-plan-desk-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&plans)?;
//! std::fs::write(plans.join("auth-plan.md"), "# Auth\n")?;
//!
//! let session = Session::new();
//! let desk = PlanDesk::new(session.clone(), plans.clone(), PlanHandlerKind::Yolo, None);
//! desk.enter();
//! let decision = Dispatch::device(Device::Propose, "auth").run(&session).await;
//! assert_eq!(decision.text(), "Plan approved. Implementing now with the current agent.");
//! assert!(!session.plan_mode());
//! # std::fs::remove_dir_all(&plans)?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::error::Error;
use crate::session::answer::{PlanApprovalDetails, PlanOutcome, ToolResult};
use crate::session::plan::{plan_handler, PlanHandler, PlanProposal};
use crate::session::{Session, WeakSession};
use crate::texts;

/// How a plan proposal is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum PlanHandlerKind {
    /// Approve every plan at once.
    Yolo,
    /// Block the `propose` write until a reviewer approves or refines.
    #[default]
    Review,
    /// Answer `propose` at once; a reviewer decides later.
    Async,
}

impl PlanHandlerKind {
    /// The handler's name: `yolo`, `review` or `async`.
    pub fn name(self) -> &'static str {
        match self {
            PlanHandlerKind::Yolo => "yolo",
            PlanHandlerKind::Review => "review",
            PlanHandlerKind::Async => "async",
        }
    }
}

impl fmt::Display for PlanHandlerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A plan handler name that is not `yolo`, `review` or `async`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown plan handler {0:?}; expected yolo, review or async")]
pub struct UnknownPlanHandler(pub String);

impl FromStr for PlanHandlerKind {
    type Err = UnknownPlanHandler;

    /// Parses `yolo`, `review` or `async` (surrounding whitespace and ASCII
    /// case ignored).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim();
        [
            PlanHandlerKind::Yolo,
            PlanHandlerKind::Review,
            PlanHandlerKind::Async,
        ]
        .into_iter()
        .find(|kind| kind.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| UnknownPlanHandler(text.to_string()))
    }
}

/// The permission mode an agent continues in once its plan is approved
/// (Claude Code's modes; a hook passes it on as a `setMode` permission
/// update). Written as the agent spells it: `acceptEdits`, `auto`,
/// `bypassPermissions`, `default`, `dontAsk`, `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContinueMode {
    /// Edits are accepted without asking.
    AcceptEdits,
    /// The agent's automatic mode.
    Auto,
    /// Nothing is asked (the agent refuses it unless its session allows it).
    BypassPermissions,
    /// The agent asks as usual.
    Default,
    /// Nothing is asked; what would be is refused.
    DontAsk,
    /// Back to planning.
    Plan,
}

impl ContinueMode {
    /// Every mode, in the order the agent lists them.
    pub const ALL: [ContinueMode; 6] = [
        ContinueMode::AcceptEdits,
        ContinueMode::Auto,
        ContinueMode::BypassPermissions,
        ContinueMode::Default,
        ContinueMode::DontAsk,
        ContinueMode::Plan,
    ];

    /// The name the agent uses.
    pub fn name(self) -> &'static str {
        match self {
            ContinueMode::AcceptEdits => "acceptEdits",
            ContinueMode::Auto => "auto",
            ContinueMode::BypassPermissions => "bypassPermissions",
            ContinueMode::Default => "default",
            ContinueMode::DontAsk => "dontAsk",
            ContinueMode::Plan => "plan",
        }
    }
}

impl fmt::Display for ContinueMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ContinueMode {
    type Err = Error;

    /// A mode by the agent's name for it; anything else is `EINVAL`,
    /// naming the modes.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ContinueMode::ALL
            .into_iter()
            .find(|mode| mode.name() == text.trim())
            .ok_or_else(|| Error::InvalidRequest(texts::unknown_continue_mode(text.trim())))
    }
}

/// The plan under review, as [`PlanStatus`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanUnderReview {
    /// The plan's slug (its file name without `-plan.md`).
    pub slug: String,
    /// The plan file's path.
    pub path: String,
}

/// A snapshot of the desk, as `plan/status` shows it (`xdev plan status`
/// and `xdev hook` read it back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    /// Whether plan mode is on (a plan proposal handler is set).
    pub plan_mode: bool,
    /// How proposals are decided.
    pub handler: PlanHandlerKind,
    /// Where plan files are looked up.
    pub plan_dir: String,
    /// The plan waiting for a decision, if any.
    pub under_review: Option<PlanUnderReview>,
    /// The text of the latest decision, if any.
    pub last_decision: Option<String>,
    /// The plan the latest decision was about: a waiter for its own plan
    /// never takes another plan's decision for its own.
    #[serde(default)]
    pub last_decided: Option<PlanUnderReview>,
    /// How many decisions the desk has made: a waiter tells a new decision
    /// by this, since two decisions may read the same.
    #[serde(default)]
    pub decisions: u64,
    /// The mode the latest decision, an approval, said to continue in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_in: Option<ContinueMode>,
}

/// A plan file found for a proposal.
#[derive(Debug, Clone)]
struct PlanFile {
    slug: String,
    path: PathBuf,
}

impl PlanFile {
    /// What a review UI is told about this plan, decided `outcome`.
    fn details(&self, outcome: PlanOutcome) -> PlanApprovalDetails {
        PlanApprovalDetails {
            title: self.slug.clone(),
            plan_path: self.path.display().to_string(),
            outcome,
        }
    }

    /// How `plan/status` names this plan.
    fn shown(&self) -> PlanUnderReview {
        PlanUnderReview {
            slug: self.slug.clone(),
            path: self.path.display().to_string(),
        }
    }
}

/// The plan in the review slot.
struct Review {
    /// Tells the review's guard apart from a later review's.
    id: u64,
    plan: PlanFile,
    /// The waiting `review` write; `None` for an `async` review.
    decide: Option<oneshot::Sender<ToolResult>>,
}

/// Everything behind the desk's lock.
#[derive(Default)]
struct DeskState {
    review: Option<Review>,
    next_review: u64,
    last_decision: Option<String>,
    last_decided: Option<PlanUnderReview>,
    decisions: u64,
    continue_in: Option<ContinueMode>,
    /// The handler `enter` installed (set by `enter`, taken by `exit` and by
    /// an approval): the desk is in plan mode while it holds one, and
    /// leaving clears it only if no other desk has entered plan mode since.
    installed: Option<PlanHandler>,
}

impl DeskState {
    /// Records a decision the desk made about `plan`, its text, and the
    /// mode an approval said to continue in.
    fn decided(&mut self, text: &str, plan: &PlanFile, continue_in: Option<ContinueMode>) {
        self.last_decision = Some(text.to_string());
        self.last_decided = Some(plan.shown());
        self.decisions += 1;
        self.continue_in = continue_in;
    }
}

struct Inner {
    session: Session,
    plan_dir: PathBuf,
    kind: PlanHandlerKind,
    execute_with: Option<String>,
    state: Mutex<DeskState>,
}

/// The daemon's plan review desk: plan mode, the review slot and the latest
/// decision of one session. Cheap to clone; every clone is the same desk.
#[derive(Clone)]
pub struct PlanDesk {
    inner: Arc<Inner>,
}

impl fmt::Debug for PlanDesk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlanDesk")
            .field("plan_dir", &self.inner.plan_dir)
            .field("kind", &self.inner.kind)
            .field("execute_with", &self.inner.execute_with)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl PlanDesk {
    /// A desk for `session` that looks plans up in `plan_dir` and decides
    /// them with `kind`; `execute_with` names who implements a `yolo`
    /// approval (default: the current agent). Plan mode stays off until
    /// [`PlanDesk::enter`].
    pub fn new(
        session: Session,
        plan_dir: PathBuf,
        kind: PlanHandlerKind,
        execute_with: Option<String>,
    ) -> Self {
        PlanDesk {
            inner: Arc::new(Inner {
                session,
                plan_dir,
                kind,
                execute_with,
                state: Mutex::new(DeskState::default()),
            }),
        }
    }

    /// The session this desk serves.
    pub fn session(&self) -> &Session {
        &self.inner.session
    }

    /// Where plan files are looked up.
    pub fn plan_dir(&self) -> &Path {
        &self.inner.plan_dir
    }

    /// How proposals are decided.
    pub fn kind(&self) -> PlanHandlerKind {
        self.inner.kind
    }

    /// Turns plan mode on: installs this desk's plan proposal handler on the
    /// session (replacing any other). A review under way is kept.
    pub fn enter(&self) {
        let mut state = self.inner.state.lock();
        let handler = self.proposal_handler();
        state.installed = Some(Arc::clone(&handler));
        // The session holds the desk only weakly: plan mode follows the desk.
        let owner = Arc::downgrade(&self.inner) as Weak<dyn std::any::Any + Send + Sync>;
        self.inner
            .session
            .set_plan_proposal_handler_owned(handler, owner);
    }

    /// Turns plan mode off: clears the plan proposal handler this desk's
    /// [`PlanDesk::enter`] installed (one another desk or the harness
    /// installed since stays: it is not this desk's to end). A review under
    /// way is cancelled (a waiting `review` write fails with
    /// `Aborted: …`, `ECANCELED`); the latest decision is kept.
    pub fn exit(&self) {
        let mut state = self.inner.state.lock();
        self.inner.leave_plan_mode(&mut state);
        // Dropping the sender wakes the waiting write with the cancellation.
        state.review = None;
    }

    /// Approves the plan under review (in `review` mode the waiting write
    /// returns this text too) and leaves plan mode. Returns the decision
    /// text: `Plan approved at <path>. Plan mode exited; proceed with the
    /// implementation.`, plus a blank line and `Reviewer feedback: <text>`
    /// when non-empty feedback is given. `ENOENT` if no plan is under review.
    pub fn approve(&self, feedback: Option<&str>) -> Result<String, Error> {
        self.approve_plan(feedback, None)
            .map(|decided| decided.text)
    }

    /// [`PlanDesk::approve`], saying which mode the agent continues in
    /// (`plan/status` shows it as `continueIn`; `xdev hook` passes it on).
    pub fn approve_in(&self, feedback: Option<&str>, mode: ContinueMode) -> Result<String, Error> {
        self.approve_plan(feedback, Some(mode))
            .map(|decided| decided.text)
    }

    /// [`PlanDesk::approve`], answered as the waiting write gets it: the
    /// text, naming the plan decided.
    pub(crate) fn approve_plan(
        &self,
        feedback: Option<&str>,
        mode: Option<ContinueMode>,
    ) -> Result<ToolResult, Error> {
        let mut state = self.inner.state.lock();
        let review = take_review(&mut state)?;
        let mut text = texts::plan_approved_at(&review.plan.path.display().to_string());
        if let Some(feedback) = feedback.map(str::trim).filter(|f| !f.is_empty()) {
            text.push_str("\n\nReviewer feedback: ");
            text.push_str(feedback);
        }
        // Plan mode is off before the waiting write learns the decision.
        self.inner.leave_plan_mode(&mut state);
        Ok(decide(
            &self.inner.session,
            &mut state,
            review,
            text,
            (PlanOutcome::Approved, mode),
        ))
    }

    /// Asks for a better plan: the plan under review is decided (in `review`
    /// mode the waiting write returns this text too) and plan mode stays on.
    /// Returns `Plan refinement requested. Update the plan file, then write
    /// <slug> to <dir>/propose again when ready.` followed by a newline and
    /// the feedback (when non-empty). `ENOENT` if no plan is under review.
    pub fn refine(&self, feedback: &str) -> Result<String, Error> {
        self.refine_plan(feedback).map(|decided| decided.text)
    }

    /// [`PlanDesk::refine`], answered as the waiting write gets it: the
    /// text, naming the plan decided.
    pub(crate) fn refine_plan(&self, feedback: &str) -> Result<ToolResult, Error> {
        let mut state = self.inner.state.lock();
        let review = take_review(&mut state)?;
        let mut text =
            texts::plan_refinement_requested(&review.plan.slug, &self.inner.session.mount_dir());
        let feedback = feedback.trim();
        if !feedback.is_empty() {
            text.push('\n');
            text.push_str(feedback);
        }
        Ok(decide(
            &self.inner.session,
            &mut state,
            review,
            text,
            (PlanOutcome::Refine, None),
        ))
    }

    /// The plan waiting for a decision, if any (what `status` shows).
    pub fn under_review(&self) -> Option<PlanUnderReview> {
        let state = self.inner.state.lock();
        state.review.as_ref().map(|review| review.plan.shown())
    }

    /// A snapshot: plan mode, handler, plan directory, the plan under
    /// review and the latest decision.
    pub fn status(&self) -> PlanStatus {
        let state = self.inner.state.lock();
        PlanStatus {
            plan_mode: self.inner.session.plan_mode(),
            handler: self.inner.kind,
            plan_dir: self.inner.plan_dir.display().to_string(),
            under_review: state.review.as_ref().map(|review| review.plan.shown()),
            last_decision: state.last_decision.clone(),
            last_decided: state.last_decided.clone(),
            decisions: state.decisions,
            continue_in: state.continue_in,
        }
    }

    /// The handler installed on the session. It holds the desk and the
    /// session weakly, so the session (which the desk holds, and which holds
    /// the handler) keeps neither alive.
    fn proposal_handler(&self) -> PlanHandler {
        let desk = Arc::downgrade(&self.inner);
        let session = self.inner.session.downgrade();
        let mount_dir = self.inner.session.mount_dir();
        plan_handler(move |proposal| {
            let gone = Gone {
                session: session.clone(),
                mount_dir: mount_dir.clone(),
            };
            propose(Weak::clone(&desk), gone, proposal)
        })
    }
}

/// Takes the plan under review out of the slot, or the "nothing under
/// review" error.
fn take_review(state: &mut DeskState) -> Result<Review, Error> {
    state
        .review
        .take()
        .ok_or_else(|| Error::NothingToResolve(texts::NOTHING_UNDER_REVIEW.into()))
}

/// Records a decision (its outcome, and the mode an approval continues in)
/// and hands it to the waiting write, if any.
fn decide(
    session: &Session,
    state: &mut DeskState,
    review: Review,
    text: String,
    (outcome, continue_in): (PlanOutcome, Option<ContinueMode>),
) -> ToolResult {
    state.decided(&text, &review.plan, continue_in);
    let plan = review.plan.details(outcome);
    match review.decide {
        // The writer may be gone already; the decision stands either way.
        Some(waiting) => {
            let _ = waiting.send(ToolResult::ok(text.clone()).with_plan(plan.clone()));
        }
        // Nobody waits (an `async` proposal answered at once): the
        // decision is an event of its own.
        None => session.plan_decided(&text, plan.clone()),
    }
    ToolResult::ok(text).with_plan(plan)
}

impl Inner {
    /// Leaves plan mode if this desk's handler is still the session's
    /// (another desk may have entered plan mode since, and keeps it).
    fn leave_plan_mode(&self, state: &mut DeskState) {
        if let Some(handler) = state.installed.take() {
            self.session.clear_plan_proposal_handler_if(&handler);
        }
    }
}

/// Finds the plan file a proposal names in `plan_dir`: exactly
/// `<slug>-plan.md` for a title, the newest `*plan.md` for an empty body.
fn find_plan(plan_dir: &Path, proposal: &PlanProposal) -> Result<PlanFile, Error> {
    match &proposal.title {
        Some(title) => {
            let path = plan_dir.join(title.file_name());
            if path.is_file() {
                Ok(PlanFile {
                    slug: title.slug.clone(),
                    path,
                })
            } else {
                Err(Error::PlanNotFound(texts::plan_file_not_found(
                    &path.display().to_string(),
                )))
            }
        }
        None => newest_plan(plan_dir).ok_or_else(|| {
            Error::PlanNotFound(texts::no_plan_file_in(&plan_dir.display().to_string()))
        }),
    }
}

/// [`find_plan`] on a blocking thread of the runtime when there is one: a
/// plan directory on a slow disk never holds up the thread that dispatched
/// the proposal (a FUSE request thread, when it ran inline there).
async fn find_plan_off_thread(
    plan_dir: PathBuf,
    proposal: PlanProposal,
) -> Result<PlanFile, Error> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return find_plan(&plan_dir, &proposal);
    };
    let lookup = runtime.spawn_blocking(move || find_plan(&plan_dir, &proposal));
    lookup
        .await
        .unwrap_or_else(|failed| Err(Error::Aborted(failed.to_string())))
}

/// The newest regular file named `*plan.md` in `dir` (ties go to the
/// greatest name, so the choice is stable).
fn newest_plan(dir: &Path) -> Option<PlanFile> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut newest: Option<(SystemTime, String, PathBuf)> = None;
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.ends_with("plan.md") {
            continue;
        }
        let path = entry.path();
        // `metadata` follows symlinks: a link to a plan file counts.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let newer = newest
            .as_ref()
            .is_none_or(|(time, best, _)| (modified, &name) > (*time, best));
        if newer {
            newest = Some((modified, name, path));
        }
    }
    newest.map(|(_, name, path)| PlanFile {
        slug: slug_of(&name).to_string(),
        path,
    })
}

/// The slug of a plan file name: `auth-plan.md` → `auth`, `myplan.md` →
/// `myplan`.
fn slug_of(name: &str) -> &str {
    name.strip_suffix("-plan.md")
        .or_else(|| name.strip_suffix(".md"))
        .unwrap_or(name)
}

/// Clears the review slot when a waiting `review` write goes away before a
/// decision (its future was dropped: the writer was killed).
///
/// It holds the desk weakly: a waiting write must not keep a desk alive
/// that every owner has let go (its review would wait for a reviewer who
/// cannot come).
struct ReviewGuard {
    desk: Weak<Inner>,
    id: u64,
}

impl Drop for ReviewGuard {
    fn drop(&mut self) {
        let Some(desk) = self.desk.upgrade() else {
            return;
        };
        let mut state = desk.state.lock();
        if state
            .review
            .as_ref()
            .is_some_and(|review| review.id == self.id)
        {
            state.review = None;
        }
    }
}

/// What a `propose` leads to once the plan file is found.
enum Proposed {
    /// Answered at once (`yolo`, `async`).
    Answered(ToolResult),
    /// A `review` write waiting for the reviewer.
    Waiting(oneshot::Receiver<ToolResult>, ReviewGuard),
}

/// Where a handler whose desk is gone finds the mount point its refusal
/// names: the session's, or (if the session is gone too) the one it had
/// when the handler was installed.
struct Gone {
    session: WeakSession,
    mount_dir: String,
}

impl Gone {
    fn not_in_plan_mode(self) -> Error {
        let dir = self
            .session
            .upgrade()
            .map_or(self.mount_dir, |session| session.mount_dir());
        Error::NotInPlanMode(texts::not_in_plan_mode(&dir))
    }
}

/// The plan proposal handler's work.
async fn propose(
    desk: Weak<Inner>,
    gone: Gone,
    proposal: PlanProposal,
) -> Result<ToolResult, Error> {
    let Some(desk) = desk.upgrade() else {
        return Err(gone.not_in_plan_mode());
    };
    // Looked up before the desk's lock is taken: no lock is held while
    // the disk answers. Refusals that need no plan file still come first.
    let found = find_plan_off_thread(desk.plan_dir.clone(), proposal.clone()).await;
    let proposed = submit(&desk, found)?;
    // Not held while the review waits: the desk goes with its owners.
    drop(desk);
    match proposed {
        Proposed::Answered(decision) => Ok(decision),
        Proposed::Waiting(decision, guard) => {
            let decision = decision.await;
            let desk_gone = guard.desk.strong_count() == 0;
            drop(guard);
            match decision {
                Ok(decision) => Ok(decision),
                Err(_) if desk_gone => {
                    // Every owner let the desk go: plan mode ended with it.
                    if let Some(session) = gone.session.upgrade() {
                        session.forget_gone_plan_handler();
                    }
                    Err(Error::Aborted(texts::REVIEW_DESK_GONE.into()))
                }
                Err(_) => Err(Error::Aborted(texts::REVIEW_CANCELLED.into())),
            }
        }
    }
}

/// Checks plan mode and the review slot, then takes the plan file `found`
/// (or its refusal) and decides or files the proposal, all under the desk's
/// lock.
fn submit(desk: &Arc<Inner>, found: Result<PlanFile, Error>) -> Result<Proposed, Error> {
    let mut state = desk.state.lock();
    if state.installed.is_none() {
        // `exit` ran between the dispatch taking the handler and calling it.
        return Err(Error::NotInPlanMode(texts::not_in_plan_mode(
            &desk.session.mount_dir(),
        )));
    }
    if let Some(review) = &state.review {
        return Err(Error::Busy(texts::another_plan_under_review(
            &review.plan.slug,
            &review.plan.path.display().to_string(),
        )));
    }
    let plan = found?;
    match desk.kind {
        PlanHandlerKind::Yolo => {
            let target = desk
                .execute_with
                .as_deref()
                .unwrap_or(texts::DEFAULT_PLAN_TARGET);
            let text = texts::plan_approved_at_once(target);
            desk.leave_plan_mode(&mut state);
            state.decided(&text, &plan, None);
            let approved = plan.details(PlanOutcome::Approved);
            Ok(Proposed::Answered(ToolResult::ok(text).with_plan(approved)))
        }
        PlanHandlerKind::Async => {
            let details = plan.details(PlanOutcome::PendingReview);
            file_review(&mut state, plan, None);
            Ok(Proposed::Answered(
                ToolResult::ok(texts::PLAN_READY).with_plan(details),
            ))
        }
        PlanHandlerKind::Review => {
            let (decide, decision) = oneshot::channel();
            let id = file_review(&mut state, plan, Some(decide));
            let guard = ReviewGuard {
                desk: Arc::downgrade(desk),
                id,
            };
            Ok(Proposed::Waiting(decision, guard))
        }
    }
}

/// Puts a plan in the review slot and returns the review's id.
fn file_review(
    state: &mut DeskState,
    plan: PlanFile,
    decide: Option<oneshot::Sender<ToolResult>>,
) -> u64 {
    let id = state.next_review;
    state.next_review += 1;
    state.review = Some(Review { id, plan, decide });
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::plan::PlanTitle;
    use std::fs::File;
    use std::time::Duration;

    #[test]
    fn handler_kind_names_round_trip() {
        for kind in [
            PlanHandlerKind::Yolo,
            PlanHandlerKind::Review,
            PlanHandlerKind::Async,
        ] {
            assert_eq!(kind.to_string().parse::<PlanHandlerKind>(), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::Value::String(kind.to_string()))
            );
        }
        assert_eq!(" YOLO\n".parse(), Ok(PlanHandlerKind::Yolo));
        let refused = "maybe".parse::<PlanHandlerKind>();
        assert_eq!(refused, Err(UnknownPlanHandler("maybe".into())));
        assert!(refused
            .map_err(|e| e.to_string())
            .err()
            .is_some_and(|text| text.contains("yolo, review or async")));
    }

    #[cfg(feature = "cli")]
    #[test]
    fn handler_kind_works_with_clap() {
        use clap::Parser;
        #[derive(Parser)]
        struct Args {
            #[arg(long, default_value_t)]
            plan_handler: PlanHandlerKind,
        }
        let parsed = Args::try_parse_from(["x", "--plan-handler", "async"]);
        assert_eq!(
            parsed.ok().map(|a| a.plan_handler),
            Some(PlanHandlerKind::Async)
        );
        let default = Args::try_parse_from(["x"]);
        assert_eq!(
            default.ok().map(|a| a.plan_handler),
            Some(PlanHandlerKind::Review)
        );
        assert!(Args::try_parse_from(["x", "--plan-handler", "nope"]).is_err());
    }

    #[test]
    fn slugs_of_plan_file_names() {
        assert_eq!(slug_of("auth-plan.md"), "auth");
        assert_eq!(slug_of("myplan.md"), "myplan");
        assert_eq!(slug_of("plan.md"), "plan");
    }

    fn touch(dir: &Path, name: &str, age_secs: u64) {
        let path = dir.join(name);
        let file = File::create(&path).expect("create plan");
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        file.set_modified(when).expect("set mtime");
    }

    #[test]
    fn newest_plan_ignores_other_files_and_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        touch(dir.path(), "old-plan.md", 300);
        touch(dir.path(), "new-plan.md", 100);
        touch(dir.path(), "notes.md", 0);
        touch(dir.path(), "plan.md.bak", 0);
        std::fs::create_dir(dir.path().join("dir-plan.md")).expect("mkdir");
        let found = newest_plan(dir.path()).expect("a plan");
        assert_eq!(found.slug, "new");
        assert_eq!(found.path, dir.path().join("new-plan.md"));
        assert!(newest_plan(&dir.path().join("missing")).is_none());
    }

    #[test]
    fn a_named_plan_that_is_a_directory_is_not_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("auth-plan.md")).expect("mkdir");
        let desk = PlanDesk::new(
            Session::new(),
            dir.path().to_path_buf(),
            PlanHandlerKind::Yolo,
            None,
        );
        let proposal = PlanProposal {
            title: PlanTitle::parse("auth").ok(),
        };
        let found = find_plan(&desk.inner.plan_dir, &proposal);
        assert!(matches!(found, Err(Error::PlanNotFound(_))));
    }

    /// A desk of this kind (with no plans) that has entered plan mode.
    fn entered_desk(kind: PlanHandlerKind) -> (Session, PlanDesk) {
        let session = Session::new();
        let desk = PlanDesk::new(session.clone(), PathBuf::from("/nonexistent"), kind, None);
        desk.enter();
        (session, desk)
    }

    #[test]
    fn the_desk_does_not_keep_itself_alive_through_the_session() {
        let (session, desk) = entered_desk(PlanHandlerKind::Review);
        let weak = Arc::downgrade(&desk.inner);
        drop(desk);
        assert!(weak.upgrade().is_none());
        assert!(!session.plan_mode(), "plan mode follows its desk");
    }

    #[tokio::test]
    async fn a_handler_outliving_its_desk_refuses_with_eperm() {
        let (session, desk) = entered_desk(PlanHandlerKind::Yolo);
        drop(desk);
        let answer = crate::Dispatch::device(crate::Device::Propose, "auth")
            .run(&session)
            .await;
        assert_eq!(answer.errno(), libc::EPERM);
    }
}
