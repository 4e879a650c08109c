//! The session: pending previews, hard directives, handler slots, events and
//! the abort signal of one agent session. Knows nothing of FUSE.
//!
//! [`Session`] is the queue itself. Beside it live what staging takes (the
//! callbacks and [`StageOptions`]), what a callback answers
//! ([`ToolResult`]), what a caller asks ([`ResolveRequest`]), what the
//! session reports ([`Event`], [`PreviewInfo`], [`SessionSummary`]), and
//! what its plan proposal slot holds ([`PlanHandler`]). The hard
//! tool-choice directives a harness queues on it are in `xdev::harness`.

mod abort;
pub(crate) mod answer;
pub(crate) mod directives;
pub(crate) mod events;
mod pending;
pub(crate) mod plan;
pub(crate) mod preview;
pub(crate) mod request;

pub use answer::{PlanApprovalDetails, PlanOutcome, ToolResult};
pub use events::{Event, EventKind, EventStream};
pub use plan::{plan_handler, PlanHandler, PlanProposal, PlanTitle};
pub use preview::{
    apply_fn, reject_fn, ApplyFn, BoxFuture, Origin, PreviewInfo, RejectFn, StageOptions,
    CUSTOM_TOOL,
};
pub use request::{Action, ResolveRequest};

use crate::maps::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, RwLock};

use crate::error::Error;
use crate::safe_text::{path_safe_source_tool, printable_lines};
use abort::{AbortSignal, AbortWaiter};
use directives::{Directive, DirectiveId, DirectiveQueue, QueueInvoker, ToolChoice, TurnEnd};
use events::Subscribers;
use pending::PendingStack;
use preview::{next_preview_id, AgentProcess, Preview, PreviewExtras, TakeBackFn};

/// The handler a mode installs for the whole session; the resolve *tool*
/// falls back to it when nothing is pending.
pub type StandingHandler = QueueInvoker;

/// The default mount point named in user-facing texts.
pub const DEFAULT_MOUNT_DIR: &str = "/xdev";

/// What a resolve or reject decides (see [`Session::take_next`]).
pub(crate) enum Next {
    /// A hard directive's queue invoker, and the name of its tool.
    Invoker(QueueInvoker, String),
    /// The newest pending preview, claimed.
    Preview(Arc<Preview>),
}

/// Which previews a resolve or reject may decide (see
/// [`Dispatch::device_in`](crate::Dispatch::device_in)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// The mount's root devices: any preview, but only while the previews
    /// waiting all belong to one group (one agent session, or no session).
    Mount,
    /// `sessions/<id>/`: the previews of this agent session alone.
    AgentSession(&'a str),
}

/// Why the root devices decided nothing: previews of several groups wait.
/// Each group is an agent session's id, or `None` for the previews of no
/// session, in a stable order (by id, "no session" first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeveralSessions(pub Vec<Option<String>>);

/// One agent session with previews waiting, as the status files show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    /// The agent's session id.
    pub id: String,
    /// How many of its previews wait.
    pub pending: usize,
    /// Its newest waiting preview.
    pub head: PreviewInfo,
}

/// Everything behind the session's one lock.
#[derive(Default)]
struct State {
    pending: PendingStack,
    directives: DirectiveQueue,
    standing: Option<StandingHandler>,
    plan_handler: Option<PlanHandlerSlot>,
    subscribers: Subscribers,
    /// Claims whose decision runs on after its caller stopped waiting, by
    /// [`claim_key`].
    abandoned: HashSet<usize>,
}

impl State {
    /// Whether plan mode is on: a handler is set whose owner (if any) lives.
    fn plan_mode_on(&self) -> bool {
        self.plan_handler
            .as_ref()
            .is_some_and(|slot| slot.live().is_some())
    }
}

/// The plan proposal handler and, when it belongs to something that can go
/// away (a plan desk), a weak handle on that owner. Plan mode ends when the
/// owner does: the owner's drop takes no session lock (it may happen while
/// the session drops something under that lock), the session looks instead.
struct PlanHandlerSlot {
    handler: PlanHandler,
    owner: Option<std::sync::Weak<dyn std::any::Any + Send + Sync>>,
}

impl PlanHandlerSlot {
    /// The handler, unless its owner is gone.
    fn live(&self) -> Option<&PlanHandler> {
        match &self.owner {
            Some(owner) if owner.strong_count() == 0 => None,
            _ => Some(&self.handler),
        }
    }
}

struct Shared {
    state: Mutex<State>,
    abort: AbortSignal,
    mount_dir: RwLock<String>,
}

/// What a preview staged from outside this process brings along (see
/// [`Session::stage_from_outside`]); nothing, for one staged in process.
#[derive(Default)]
pub(crate) struct Outside {
    /// Takes an apply back until it has reached its applier.
    pub(crate) take_back: Option<TakeBackFn>,
    /// The agent process whose call this is (a hook's preview).
    pub(crate) agent: Option<AgentProcess>,
}

/// A session that does not keep it alive (for handlers the session itself
/// holds, which would otherwise keep it alive forever).
#[derive(Clone)]
pub(crate) struct WeakSession {
    shared: std::sync::Weak<Shared>,
}

impl WeakSession {
    /// The session, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Session> {
        self.shared.upgrade().map(|shared| Session { shared })
    }
}

/// One agent session's queue. Cheap to clone; every clone is the same
/// session, usable from any thread or tokio task.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Session")
            .field("pending", &state.pending.waiting())
            .field("in_progress", &state.pending.in_progress())
            .field("directives", &state.directives.len())
            .finish_non_exhaustive()
    }
}

/// Builds an event about `preview`.
/// An event about plan mode or a plan (no preview: `id` is empty and the
/// source tool is `plan`).
fn plan_event(
    kind: EventKind,
    text: Option<&str>,
    plan: Option<PlanApprovalDetails>,
    ok: bool,
) -> Event {
    Event {
        kind,
        id: String::new(),
        label: plan.as_ref().map_or_else(
            || crate::texts::PLAN_MODE_LABEL.to_string(),
            |plan| plan.title.clone(),
        ),
        source_tool: "plan".to_string(),
        reason: None,
        text: text.map(str::to_string),
        ok,
        abandoned: false,
        plan,
        origin: None,
        time: SystemTime::now(),
    }
}

fn event(
    kind: EventKind,
    preview: &Preview,
    reason: Option<&str>,
    text: Option<&str>,
    ok: bool,
) -> Event {
    Event {
        kind,
        id: preview.id.to_string(),
        label: preview.label.clone(),
        source_tool: preview.source_tool.clone(),
        reason: reason.map(str::to_string),
        text: text.map(str::to_string),
        ok,
        abandoned: false,
        plan: None,
        origin: preview.origin(),
        time: SystemTime::now(),
    }
}

/// Identifies one claim of a preview: the claimed `Preview` itself, which
/// the decision holds until it ends (a re-registered id is a new one).
fn claim_key(preview: &Preview) -> usize {
    preview as *const Preview as usize
}

/// The event of a decision's outcome, marked when its caller had stopped
/// waiting for it.
fn outcome(
    state: &mut State,
    kind: EventKind,
    preview: &Preview,
    reason: &str,
    text: &str,
    ok: bool,
) -> Event {
    Event {
        abandoned: state.abandoned.remove(&claim_key(preview)),
        ..event(kind, preview, Some(reason), Some(text), ok)
    }
}

/// `name` made path-safe, with a warning when that changed it (the caller
/// then finds its preview under another name than it gave).
fn safe_source_tool(name: String) -> String {
    let safe = path_safe_source_tool(&name);
    if safe == name {
        return name;
    }
    tracing::warn!(given = %name.escape_debug(), used = %safe, "source tool made path-safe");
    safe.into_owned()
}

impl Session {
    /// A new, empty session whose texts name the default mount point `/xdev`.
    pub fn new() -> Self {
        Session {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                abort: AbortSignal::default(),
                mount_dir: RwLock::new(DEFAULT_MOUNT_DIR.to_string()),
            }),
        }
    }

    /// This session, without keeping it alive.
    pub(crate) fn downgrade(&self) -> WeakSession {
        WeakSession {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// The mount point named in texts (as the user gave it).
    pub fn mount_dir(&self) -> String {
        self.shared.mount_dir.read().clone()
    }

    /// Sets the mount point named in texts.
    pub fn set_mount_dir(&self, dir: impl Into<String>) {
        *self.shared.mount_dir.write() = dir.into();
    }

    // ----- staging -------------------------------------------------------

    /// Stages a preview at the head of the stack and returns its id: a
    /// fresh `pending-action:<source_tool>:<seq>`, or `options.id`.
    /// Staging never applies anything. `apply` makes the change; `reject`
    /// (when given) discards it, else a discard answers `Discarded:
    /// <label>. Reason: <reason>`.
    ///
    /// The caller is trusted code, so nothing is refused: `source_tool` is
    /// made path-safe (see [`path_safe_source_tool`]: it names a directory
    /// under `pending/`), and `label` is kept as given; the mount's
    /// line-oriented files show it escaped.
    ///
    /// ```
    /// use xdev::{apply_fn, Session, StageOptions, ToolResult};
    ///
    /// let session = Session::new();
    /// let apply = apply_fn(|_reason, _extra| async { Ok(ToolResult::ok("applied")) });
    /// let id = session.stage("edit a.rs", "edit", apply.clone(), None, StageOptions::default());
    /// assert!(id.starts_with("pending-action:edit:"));
    ///
    /// // Staging an id again moves it to the head, with the new callbacks.
    /// let again = StageOptions { id: Some(id.clone()), ..StageOptions::default() };
    /// assert_eq!(session.stage("edit a.rs, v2", "edit", apply, None, again), id);
    /// assert_eq!(session.pending_count(), 1);
    /// ```
    pub fn stage(
        &self,
        label: impl Into<String>,
        source_tool: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
        options: StageOptions,
    ) -> String {
        self.stage_from_outside(
            label,
            source_tool,
            apply,
            reject,
            options,
            Outside::default(),
        )
    }

    /// [`Session::stage`], for a preview staged from outside this process:
    /// its apply may be carried out elsewhere (`take_back` takes it back
    /// until it has reached its applier, see [`Session::take_back_apply`]),
    /// and a hook's call names the agent whose own processes may not
    /// decide it.
    pub(crate) fn stage_from_outside(
        &self,
        label: impl Into<String>,
        source_tool: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
        options: StageOptions,
        outside: Outside,
    ) -> String {
        let source_tool = safe_source_tool(source_tool.into());
        let StageOptions {
            id,
            detail,
            diff,
            cwd,
            origin,
        } = options;
        // Shown in a many-line file: nothing in it may forge a line or
        // move a terminal's cursor.
        let diff = diff.map(|diff| printable_lines(&diff).into_owned());
        let id = id.unwrap_or_else(|| next_preview_id(&source_tool));
        let preview = Arc::new(Preview {
            id: Arc::from(id.as_str()),
            label: label.into(),
            source_tool,
            apply,
            reject,
            take_back: outside.take_back,
            extras: PreviewExtras::of(detail, diff, cwd, origin, outside.agent),
        });
        let mut state = self.shared.state.lock();
        state.pending.register(Arc::clone(&preview));
        state
            .subscribers
            .publish(event(EventKind::Staged, &preview, None, None, true));
        id
    }

    /// The seed runtime's name for [`Session::stage`] with no options,
    /// kept on purpose: agent runtimes ported to xdev call it by this name.
    pub fn queue_resolve_handler(
        &self,
        label: impl Into<String>,
        source_tool: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
    ) -> String {
        self.stage(label, source_tool, apply, reject, StageOptions::default())
    }

    /// The seed runtime's call for a custom tool's preview, kept on purpose
    /// with its name and argument order (`source_tool` last, `custom_tool`
    /// unless given): [`Session::stage`] into the same stack. Its apply and
    /// reject results are forwarded unchanged, their details included
    /// (`sourceResultDetails`).
    pub fn push_pending_action(
        &self,
        label: impl Into<String>,
        apply: ApplyFn,
        reject: Option<RejectFn>,
        source_tool: Option<&str>,
    ) -> String {
        let source_tool = source_tool.unwrap_or(CUSTOM_TOOL);
        self.stage(label, source_tool, apply, reject, StageOptions::default())
    }

    /// Moves a pending id to the head. False if it is not waiting (unknown,
    /// or being applied or discarded right now: it stays claimed).
    pub fn restage(&self, id: &str) -> bool {
        let mut state = self.shared.state.lock();
        let Some(preview) = state.pending.get_waiting(id).cloned() else {
            return false;
        };
        state.pending.register(Arc::clone(&preview));
        state
            .subscribers
            .publish(event(EventKind::Staged, &preview, None, None, true));
        true
    }

    /// Removes a pending preview by id without deciding it, as its producer
    /// does when it goes away. False if it was not pending.
    pub fn withdraw(&self, id: &str, why: &str) -> bool {
        self.withdraw_if(id, why, |_| true)
    }

    /// Takes back the apply under way of preview `id` if it has not
    /// reached whoever carries it out: an external producer that has not
    /// read its apply line. The preview is then withdrawn (reason `why`)
    /// and its decision fails with `error`. Returns whether it was taken
    /// back: nothing was applied nor will be, and the decision ends by
    /// itself. Never for an in-process callback, which has its apply once
    /// it runs, nor for a preview no longer staged (cleared, or withdrawn
    /// while its callback ends), whose callback cannot be reached.
    // The mount's shutdown is its one caller.
    #[cfg_attr(not(feature = "mount"), allow(dead_code))]
    pub(crate) fn take_back_apply(&self, id: &str, why: &str, error: Error) -> bool {
        let state = self.shared.state.lock();
        let take_back = state
            .pending
            .get(id)
            .and_then(|preview| preview.take_back.clone());
        drop(state);
        // Called outside the lock: taking back withdraws the preview.
        take_back.is_some_and(|take_back| take_back(why, error))
    }

    /// [`Session::withdraw`], but only a preview waiting for a decision:
    /// one being applied or discarded right now is left alone.
    pub fn withdraw_waiting(&self, id: &str, why: &str) -> bool {
        self.withdraw_if(id, why, |pending| pending.get_waiting(id).is_some())
    }

    fn withdraw_if(
        &self,
        id: &str,
        why: &str,
        allowed: impl FnOnce(&PendingStack) -> bool,
    ) -> bool {
        let mut state = self.shared.state.lock();
        if !allowed(&state.pending) {
            return false;
        }
        let Some(preview) = state.pending.remove(id) else {
            return false;
        };
        state
            .subscribers
            .publish(event(EventKind::Withdrawn, &preview, Some(why), None, true));
        true
    }

    // ----- reading the stack --------------------------------------------

    /// The newest preview waiting to be decided.
    pub fn pending_head(&self) -> Option<PreviewInfo> {
        let state = self.shared.state.lock();
        state
            .pending
            .head()
            .map(|preview| PreviewInfo::from(&**preview))
    }

    /// Every preview waiting to be decided, head first.
    pub fn pending(&self) -> Vec<PreviewInfo> {
        let state = self.shared.state.lock();
        state
            .pending
            .iter_head_first()
            .map(|preview| PreviewInfo::from(&**preview))
            .collect()
    }

    /// How many previews wait to be decided (not counting ones being applied
    /// or discarded right now).
    pub fn pending_count(&self) -> usize {
        self.shared.state.lock().pending.waiting()
    }

    /// How many previews are being applied or discarded right now.
    pub fn in_progress_count(&self) -> usize {
        self.shared.state.lock().pending.in_progress()
    }

    /// Whether this id is being applied or discarded right now.
    pub fn is_in_progress(&self, id: &str) -> bool {
        self.shared.state.lock().pending.is_claimed(id)
    }

    /// Whether this id is still staged (waiting or in progress).
    pub fn is_pending(&self, id: &str) -> bool {
        self.shared.state.lock().pending.get(id).is_some()
    }

    /// The preview staged under this id (waiting or in progress).
    pub fn preview(&self, id: &str) -> Option<PreviewInfo> {
        let state = self.shared.state.lock();
        state
            .pending
            .get(id)
            .map(|preview| PreviewInfo::from(&**preview))
    }

    /// The `detail` text of the preview staged under this id (waiting or in
    /// progress), when it carries one.
    pub fn detail(&self, id: &str) -> Option<String> {
        let state = self.shared.state.lock();
        let preview = state.pending.get(id)?;
        preview.extras.as_ref()?.detail.clone()
    }

    /// The `diff` text of the preview staged under this id (waiting or in
    /// progress), when it carries one.
    pub fn diff(&self, id: &str) -> Option<String> {
        let state = self.shared.state.lock();
        let preview = state.pending.get(id)?;
        preview.extras.as_ref()?.diff.clone()
    }

    /// The agent's working directory the preview staged under this id
    /// (waiting or in progress) was staged with, if any.
    pub fn cwd(&self, id: &str) -> Option<String> {
        let state = self.shared.state.lock();
        let preview = state.pending.get(id)?;
        preview.extras.as_ref()?.cwd.clone()
    }

    /// Whether the preview staged under this id carries a `diff`.
    pub fn has_diff(&self, id: &str) -> bool {
        let state = self.shared.state.lock();
        state
            .pending
            .get(id)
            .and_then(|preview| preview.extras.as_ref())
            .is_some_and(|extras| extras.diff.is_some())
    }

    /// The agent process whose own processes may not decide the preview
    /// staged under this id (waiting or in progress), if a hook staged it.
    #[cfg(feature = "mount")]
    pub(crate) fn agent_of(&self, id: &str) -> Option<AgentProcess> {
        let state = self.shared.state.lock();
        state.pending.get(id)?.agent().cloned()
    }

    /// Whether the preview staged under this id hands its apply to a
    /// producer outside this process (it came through the mount's `stage`
    /// file), rather than running a callback in it.
    #[cfg(feature = "mount")]
    pub(crate) fn applied_outside(&self, id: &str) -> bool {
        let state = self.shared.state.lock();
        state
            .pending
            .get(id)
            .is_some_and(|preview| preview.take_back.is_some())
    }

    /// Whether the preview staged under this id carries a `detail`.
    pub fn has_detail(&self, id: &str) -> bool {
        let state = self.shared.state.lock();
        state
            .pending
            .get(id)
            .and_then(|preview| preview.extras.as_ref())
            .is_some_and(|extras| extras.detail.is_some())
    }

    /// The agent sessions with previews waiting, by id.
    pub fn pending_sessions(&self) -> Vec<SessionSummary> {
        let state = self.shared.state.lock();
        let mut sessions: Vec<SessionSummary> = state
            .pending
            .groups()
            .filter_map(|(id, pending, head)| {
                Some(SessionSummary {
                    id: id?.to_string(),
                    pending,
                    head: PreviewInfo::from(&**head),
                })
            })
            .collect();
        sessions.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        sessions
    }

    /// The previews of agent session `session` waiting to be decided, head
    /// first.
    pub fn pending_in(&self, session: &str) -> Vec<PreviewInfo> {
        let state = self.shared.state.lock();
        state
            .pending
            .iter_in(session)
            .map(|preview| PreviewInfo::from(&**preview))
            .collect()
    }

    /// The newest preview of agent session `session` waiting to be decided.
    pub fn pending_head_in(&self, session: &str) -> Option<PreviewInfo> {
        let state = self.shared.state.lock();
        let head = state.pending.head_in(session)?;
        Some(PreviewInfo::from(&**head))
    }

    /// Whether the preview staged under `id` (waiting or in progress)
    /// belongs to agent session `session`.
    pub fn belongs_to(&self, id: &str, session: &str) -> bool {
        let state = self.shared.state.lock();
        state
            .pending
            .get(id)
            .is_some_and(|preview| preview.session_id() == Some(session))
    }

    // ----- claims, used by dispatch -------------------------------------

    pub(crate) fn claim(&self, id: &str) -> Option<Arc<Preview>> {
        self.shared.state.lock().pending.claim(id)
    }

    /// A claim given up before its callback ran (the decision was refused):
    /// the preview is back where it stood, as if never claimed.
    pub(crate) fn release_claim(&self, preview: &Preview) {
        self.shared.state.lock().pending.unclaim(preview);
    }

    /// A decided preview leaves the stack; the event says how.
    pub(crate) fn consume(
        &self,
        preview: &Preview,
        kind: EventKind,
        reason: &str,
        text: &str,
        ok: bool,
    ) {
        let mut state = self.shared.state.lock();
        let decided = outcome(&mut state, kind, preview, reason, text, ok);
        if state.pending.remove_decided(preview) {
            state.subscribers.publish(decided);
        }
    }

    /// The caller deciding `preview` stopped waiting; the decision runs on,
    /// and its outcome event will say so.
    pub(crate) fn abandon(&self, preview: &Preview) {
        self.shared
            .state
            .lock()
            .abandoned
            .insert(claim_key(preview));
    }

    /// A failed apply: the same invoker goes back to the head, unclaimed.
    pub(crate) fn requeue_after_failure(&self, preview: &Preview, reason: &str, text: &str) {
        let mut state = self.shared.state.lock();
        let failed = outcome(&mut state, EventKind::Failed, preview, reason, text, false);
        state.subscribers.publish(failed);
        if state.pending.requeue_at_head(preview) {
            state.subscribers.publish(event(
                EventKind::Requeued,
                preview,
                Some(reason),
                Some(text),
                false,
            ));
        }
    }

    /// A failed reject: the preview stays pending where it stood.
    pub(crate) fn keep_after_failure(&self, preview: &Preview, reason: &str, text: &str) {
        let mut state = self.shared.state.lock();
        let failed = outcome(&mut state, EventKind::Failed, preview, reason, text, false);
        state.subscribers.publish(failed);
        state.pending.unclaim(preview);
    }

    // ----- directives ----------------------------------------------------

    /// Queues a hard directive behind the ones already queued.
    pub fn enqueue_directive(&self, directive: Directive) -> DirectiveId {
        self.shared.state.lock().directives.enqueue(directive)
    }

    /// Removes a directive (rejecting its in-flight choice `removed`).
    pub fn remove_directive(&self, id: DirectiveId) -> bool {
        self.shared.state.lock().directives.remove(id)
    }

    /// Serves the next hard tool choice for this turn (or returns the one
    /// already in flight).
    pub fn serve_tool_choice(&self) -> Option<ToolChoice> {
        self.shared.state.lock().directives.serve()
    }

    /// Ends the in-flight choice's turn; returns the reject reason if it
    /// was rejected (including `not_invoked`).
    pub fn finish_turn(&self, end: TurnEnd) -> Option<directives::RejectReason> {
        self.shared.state.lock().directives.finish(end)
    }

    /// Drops every directive, rejecting the in-flight one `cleared`.
    pub fn clear_directives(&self) {
        self.shared.state.lock().directives.clear();
    }

    pub(crate) fn hard_tool(&self) -> Option<String> {
        self.shared
            .state
            .lock()
            .directives
            .peek_tool()
            .map(str::to_string)
    }

    /// What a resolve or reject decides, under one lock: the in-flight
    /// queue invoker (with its tool's name) if there is one, else the head
    /// of the pending stack, claimed.
    pub(crate) fn take_next(&self) -> Option<Next> {
        let mut state = self.shared.state.lock();
        if let Some((invoker, tool_name)) = state.directives.take_invoker() {
            return Some(Next::Invoker(invoker, tool_name));
        }
        state.pending.claim_head().map(Next::Preview)
    }

    /// What a resolve or reject within `scope` decides, under one lock.
    ///
    /// [`Scope::AgentSession`] claims the newest waiting preview of that
    /// session and nothing else (a hard directive's queue invoker belongs
    /// to the in-process harness, not to an agent session).
    ///
    /// [`Scope::Mount`] is [`Session::take_next`] with one refusal: when
    /// the previews *waiting* (not those being decided right now) belong
    /// to more than one group, it takes nothing and names the groups. A
    /// group is one agent session, or all the previews of no session
    /// together. Only waiting previews count, because only they could be
    /// decided by mistake; the count and the claim are made under the same
    /// lock, so no preview of another session can slip in between. The
    /// queue invoker still comes first, as always: it is no agent
    /// session's call.
    pub(crate) fn take_next_in(&self, scope: Scope<'_>) -> Result<Option<Next>, SeveralSessions> {
        let mut state = self.shared.state.lock();
        if let Scope::AgentSession(session) = scope {
            return Ok(state.pending.claim_head_in(session).map(Next::Preview));
        }
        if let Some((invoker, tool_name)) = state.directives.take_invoker() {
            return Ok(Some(Next::Invoker(invoker, tool_name)));
        }
        if state.pending.group_count() > 1 {
            let mut groups: Vec<Option<String>> = state
                .pending
                .groups()
                .map(|(id, _, _)| id.map(str::to_string))
                .collect();
            groups.sort_unstable();
            return Err(SeveralSessions(groups));
        }
        Ok(state.pending.claim_head().map(Next::Preview))
    }

    // ----- handler slots -------------------------------------------------

    /// Installs the standing resolve handler (used only by the resolve tool).
    pub fn set_standing_resolve_handler(&self, handler: StandingHandler) {
        self.shared.state.lock().standing = Some(handler);
    }

    /// Removes the standing resolve handler.
    pub fn clear_standing_resolve_handler(&self) {
        self.shared.state.lock().standing = None;
    }

    pub(crate) fn standing_handler(&self) -> Option<StandingHandler> {
        self.shared.state.lock().standing.clone()
    }

    /// Enters plan mode with this proposal handler (replacing any other).
    pub fn set_plan_proposal_handler(&self, handler: PlanHandler) {
        let slot = PlanHandlerSlot {
            handler,
            owner: None,
        };
        self.put_plan_handler(Some(slot));
    }

    /// Sets (or clears) the plan handler slot; entering or leaving plan
    /// mode is an event.
    fn put_plan_handler(&self, slot: Option<PlanHandlerSlot>) {
        let mut state = self.shared.state.lock();
        let was = state.plan_mode_on();
        state.plan_handler = slot;
        let now = state.plan_mode_on();
        if was != now {
            let kind = if now {
                EventKind::PlanModeEntered
            } else {
                EventKind::PlanModeLeft
            };
            state
                .subscribers
                .publish(plan_event(kind, None, None, true));
        }
    }

    /// Enters plan mode with this proposal handler for as long as `owner`
    /// lives (replacing any other).
    pub(crate) fn set_plan_proposal_handler_owned(
        &self,
        handler: PlanHandler,
        owner: std::sync::Weak<dyn std::any::Any + Send + Sync>,
    ) {
        let slot = PlanHandlerSlot {
            handler,
            owner: Some(owner),
        };
        self.put_plan_handler(Some(slot));
    }

    /// Clears a plan handler whose owner is gone (plan mode ended with
    /// it), so that its end is an event like any other.
    pub(crate) fn forget_gone_plan_handler(&self) {
        let mut state = self.shared.state.lock();
        let gone = state
            .plan_handler
            .as_ref()
            .is_some_and(|slot| slot.live().is_none());
        if gone {
            state.plan_handler = None;
            let event = plan_event(EventKind::PlanModeLeft, None, None, true);
            state.subscribers.publish(event);
        }
    }

    /// Leaves plan mode.
    pub fn clear_plan_proposal_handler(&self) {
        self.put_plan_handler(None);
    }

    /// Leaves plan mode if `handler` is the one installed (another may
    /// have replaced it since, and must stay).
    pub(crate) fn clear_plan_proposal_handler_if(&self, handler: &PlanHandler) {
        let installed = self
            .shared
            .state
            .lock()
            .plan_handler
            .as_ref()
            .is_some_and(|installed| Arc::ptr_eq(&installed.handler, handler));
        if installed {
            self.put_plan_handler(None);
        }
    }

    /// The plan proposal handler, if plan mode is on.
    pub fn plan_proposal_handler(&self) -> Option<PlanHandler> {
        let state = self.shared.state.lock();
        state.plan_handler.as_ref()?.live().cloned()
    }

    /// Whether plan mode is on (a plan proposal handler is set).
    pub fn plan_mode(&self) -> bool {
        self.shared.state.lock().plan_mode_on()
    }

    /// A plan under review was decided with no proposal waiting for it
    /// (an `async` desk): the event names the plan and the decision.
    pub(crate) fn plan_decided(&self, text: &str, plan: PlanApprovalDetails) {
        let event = plan_event(EventKind::PlanDecided, Some(text), Some(plan), true);
        self.shared.state.lock().subscribers.publish(event);
    }

    /// A plan proposal's handler answered: the event names the plan when
    /// the handler did. No preview is involved, so `id` is empty.
    pub(crate) fn proposed(
        &self,
        body: &str,
        text: &str,
        ok: bool,
        plan: Option<PlanApprovalDetails>,
    ) {
        let event = Event {
            kind: EventKind::Proposed,
            id: String::new(),
            label: plan
                .as_ref()
                .map_or_else(|| body.to_string(), |plan| plan.title.clone()),
            source_tool: "propose".to_string(),
            reason: Some(body.to_string()),
            text: Some(text.to_string()),
            ok,
            abandoned: false,
            plan,
            origin: None,
            time: SystemTime::now(),
        };
        self.shared.state.lock().subscribers.publish(event);
    }

    // ----- boundaries, abort, events ------------------------------------

    /// A session boundary (a new agent session, a switch, a branch): clears
    /// every pending preview, as [`Session::clear_pending`] does, *and*
    /// every hard directive, as [`Session::clear_directives`] does (the
    /// in-flight choice is rejected `cleared`). The standing resolve
    /// handler, plan mode and the subscribers stay.
    ///
    /// ```
    /// use xdev::harness::{Directive, ToolChoice};
    /// use xdev::{apply_fn, Session, StageOptions, ToolResult};
    ///
    /// let session = Session::new();
    /// let apply = apply_fn(|_reason, _extra| async { Ok(ToolResult::ok("applied")) });
    /// session.stage("edit a.rs", "edit", apply.clone(), None, StageOptions::default());
    /// session.enqueue_directive(Directive::new([ToolChoice::new("write")]));
    ///
    /// session.clear_pending(); // the previews only
    /// assert_eq!(session.pending_count(), 0);
    /// assert!(session.serve_tool_choice().is_some());
    ///
    /// session.stage("edit b.rs", "edit", apply, None, StageOptions::default());
    /// session.clear(); // the previews and the directives
    /// assert_eq!(session.pending_count(), 0);
    /// assert!(session.serve_tool_choice().is_none());
    /// ```
    pub fn clear(&self) {
        self.clear_pending();
        self.clear_directives();
    }

    /// Clears every pending preview, each with a `cleared` event and
    /// without running its reject callback; the hard directives stay
    /// queued. [`Session::clear`] is the session boundary that clears both.
    pub fn clear_pending(&self) {
        let mut state = self.shared.state.lock();
        let State {
            pending,
            subscribers,
            ..
        } = &mut *state;
        for preview in pending.clear() {
            subscribers.publish(event(EventKind::Cleared, &preview, None, None, true));
        }
    }

    /// Aborts every dispatch waiting right now: each returns
    /// `Aborted: <why>` at once while its callback runs on.
    pub fn abort(&self, why: &str) {
        self.shared.abort.abort(why);
    }

    pub(crate) fn abort_waiter(&self) -> AbortWaiter {
        self.shared.abort.waiter()
    }

    /// Subscribes to every event from now on.
    pub fn subscribe(&self) -> EventStream {
        self.shared.state.lock().subscribers.subscribe()
    }

    /// Calls `hook` with every event from now on, in order, as it happens
    /// (under the session's lock: it must be quick and must not call back
    /// into the session), until it returns false.
    pub fn on_event(&self, hook: impl FnMut(&Event) -> bool + Send + 'static) {
        self.shared.state.lock().subscribers.hook(Box::new(hook));
    }
}
