//! The daemon decides with a policy (`xdev mount --policy FILE`): every
//! preview is evaluated by [`crate::policy`] when it is staged, whoever
//! staged it (a hook, an `xdev stage` producer, a `stage` file writer, an
//! embedder's `Session::stage`). In `enforce` mode an allow resolves it and
//! a deny rejects it, by id, through the same [`Dispatch`] a person's
//! write to `pending/<id>/resolve` takes, so its stager is told and the
//! journal records it (with `"decider": "policy"` and the rule); an ask
//! leaves it for a person. In `shadow` mode a `policy` record says what it
//! would have decided, and nothing is decided.
//!
//! The rules file is hostile input: [`Policy::load`] refuses links,
//! irregular files and large ones; [`check_file_modes`] also refuses a
//! file or directory that a user other than root and the daemon's could
//! write. It is reloaded when it changes (inotify on its directory) and on
//! [`PolicyState::reload`]; a reload is all or nothing, and one that fails
//! keeps the rules in force and says why.

use std::ffi::OsString;
use std::future::Future;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use parking_lot::RwLock;
use serde_json::Value;

use crate::client::ClientError;
use crate::dispatch::{Dispatch, DispatchHooks};
use crate::journal::{Decider, Journal, Record};
use crate::mount::PolicyControl;
use crate::policy::{Call, Effect, Evaluation, Policy};
use crate::session::events::{EventKind, EventStream};
use crate::session::request::{Action, ResolveRequest};
use crate::session::Session;
use crate::texts;
use crate::who::Who;

/// What the daemon does with the policy's verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyMode {
    /// Allow resolves, deny rejects, ask leaves the preview for a person.
    #[default]
    Enforce,
    /// Journal what it would decide; decide nothing.
    Shadow,
}

impl PolicyMode {
    fn name(self) -> &'static str {
        match self {
            PolicyMode::Enforce => "enforce",
            PolicyMode::Shadow => "shadow",
        }
    }
}

/// The daemon's policy: its rules file and mode.
#[derive(Debug, Clone)]
pub struct PolicyOptions {
    /// The rules file (see `docs/policy.md`).
    pub file: PathBuf,
    /// Enforce or shadow.
    pub mode: PolicyMode,
}

/// How often the file watcher looks whether the daemon is stopping.
const WATCH_POLL: Duration = Duration::from_millis(250);

/// How long the watcher lets a burst of changes settle (an editor's
/// write, rename and chmod) before it reloads once.
const SETTLE: Duration = Duration::from_millis(50);

/// The rules in force, and what the last load said.
#[derive(Debug)]
struct Loaded {
    policy: Arc<Policy>,
    at: SystemTime,
    error: Option<String>,
}

/// A daemon's policy: the rules in force (swapped whole on a reload) and
/// what the last load said. Shared by the decider, the file watcher and
/// whoever asks for a reload.
#[derive(Debug)]
pub struct PolicyState {
    path: PathBuf,
    mode: PolicyMode,
    loaded: RwLock<Loaded>,
    /// The decider's judge and runtime, once it runs: what judges a
    /// preview staged through the mount's `stage` file on the thread that
    /// staged it (see [`PolicyControl::judge_staged`]).
    at_staging: OnceLock<(Judge, tokio::runtime::Handle)>,
}

impl PolicyState {
    /// Loads the rules file of `options`; a file that cannot be used
    /// (unsafe modes, unreadable, invalid) fails the daemon's start.
    pub fn load(options: &PolicyOptions) -> Result<Arc<PolicyState>, ClientError> {
        let path = std::path::absolute(&options.file)
            .map_err(|err| ClientError::io(texts::cannot_use_policy(&options.file), err))?;
        let policy = load_checked(&path).map_err(ClientError::Policy)?;
        for warning in policy.warnings() {
            tracing::warn!(file = %path.display(), %warning, "policy");
        }
        Ok(Arc::new(PolicyState {
            path,
            mode: options.mode,
            loaded: RwLock::new(Loaded {
                policy: Arc::new(policy),
                at: SystemTime::now(),
                error: None,
            }),
            at_staging: OnceLock::new(),
        }))
    }

    /// Loads the file again: on success its rules replace the old ones at
    /// once (a decision under way keeps the rules it began with) and the
    /// rule count is returned; on failure the old rules stay, and the
    /// error is kept (see [`PolicyState::problem`]), logged and returned.
    pub fn reload(&self) -> Result<usize, String> {
        match load_checked(&self.path) {
            Ok(policy) => {
                let count = policy.rule_count();
                for warning in policy.warnings() {
                    tracing::warn!(file = %self.path.display(), %warning, "policy");
                }
                *self.loaded.write() = Loaded {
                    policy: Arc::new(policy),
                    at: SystemTime::now(),
                    error: None,
                };
                tracing::info!(file = %self.path.display(), rules = count, "policy reloaded");
                Ok(count)
            }
            Err(error) => {
                tracing::error!(file = %self.path.display(), %error, "policy not reloaded; the rules loaded before stay in force");
                self.loaded.write().error = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The rules in force.
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.loaded.read().policy)
    }

    /// The mode.
    pub fn mode(&self) -> PolicyMode {
        self.mode
    }

    /// The rules file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the last load failed, while the rules of an earlier one stay in
    /// force; `None` once a load succeeds.
    pub fn problem(&self) -> Option<String> {
        self.loaded.read().error.clone()
    }

    /// What the mount's `policy` file shows: the file, the mode, the rule
    /// count, when they were loaded, and the last load's error if any.
    pub fn description(&self) -> String {
        let loaded = self.loaded.read();
        let at = humantime::format_rfc3339_seconds(loaded.at).to_string();
        texts::policy_description(
            &self.path,
            self.mode.name(),
            loaded.policy.rule_count(),
            &at,
            loaded.error.as_deref(),
        )
    }
}

impl PolicyControl for PolicyState {
    fn describe(&self) -> String {
        self.description()
    }

    fn summary(&self) -> String {
        let loaded = self.loaded.read();
        texts::policy_summary(
            &self.path,
            self.mode.name(),
            loaded.policy.rule_count(),
            loaded.error.as_deref(),
        )
    }

    fn reload(&self) -> Result<String, String> {
        PolicyState::reload(self).map(texts::policy_reloaded)
    }

    /// Judges a preview as its producer's `stage` write stages it, so that
    /// an allow or a deny is queued before the write returns and the
    /// producer's next read finds it beside the `staged` line, with no
    /// other thread to wait for. The decision begins on this thread and
    /// goes on, when it must wait (for the producer's report), on the
    /// decider's. Such previews are judged here only: the decider's
    /// following of the staged events leaves them (see [`Judge::follow`]).
    fn judge_staged(&self, id: &str) {
        if let Some((judge, runtime)) = self.at_staging.get() {
            if let Some(deciding) = judge.judge(self, id) {
                start_here(runtime, deciding);
            }
        }
    }
}

/// Runs `task` on this thread as far as it goes without waiting, and the
/// rest as a task on `runtime`.
fn start_here(runtime: &tokio::runtime::Handle, task: impl Future<Output = ()> + Send + 'static) {
    let _entered = runtime.enter();
    let mut task = Box::pin(task);
    if task.as_mut().now_or_never().is_none() {
        runtime.spawn(task);
    }
}

/// The rules file at `path`, checked and loaded; the error is one line a
/// person reads (it names the file).
fn load_checked(path: &Path) -> Result<Policy, String> {
    check_file_modes(path)?;
    Policy::load(path).map_err(|error| error.to_string())
}

/// Refuses a rules file, or the directory that holds it, that a user
/// other than root and the daemon's own could change: one they own, or
/// one their group or everyone may write (as sshd's StrictModes refuses an
/// `authorized_keys`). Whoever could write it could allow anything.
pub fn check_file_modes(path: &Path) -> Result<(), String> {
    let me = nix::unistd::geteuid().as_raw();
    let dir = path.parent().unwrap_or(Path::new("/"));
    // The file itself is not followed: a link is refused by the load.
    let checks = [
        (path, std::fs::symlink_metadata(path)),
        (dir, std::fs::metadata(dir)),
    ];
    for (checked, metadata) in checks {
        let metadata =
            metadata.map_err(|err| texts::policy_unusable(path, &crate::error::describe(&err)))?;
        if metadata.file_type().is_symlink() {
            continue;
        }
        if let Some(why) = unsafe_modes(metadata.uid(), metadata.mode(), me) {
            return Err(texts::policy_unsafe(path, checked, &why));
        }
    }
    Ok(())
}

/// Why a file owned by `uid` with `mode` is one another user could
/// change, for a daemon running as `me`.
fn unsafe_modes(uid: u32, mode: u32, me: u32) -> Option<String> {
    if uid != 0 && uid != me {
        return Some(texts::policy_owned_by(uid));
    }
    if mode & 0o022 != 0 {
        return Some(texts::policy_writable_by_others(mode & 0o7777));
    }
    None
}

/// The decider: follows the session's events and judges each preview as
/// it is staged; and, with it, the rules file's watcher. Both stop when
/// this is dropped.
#[derive(Debug)]
pub(crate) struct PolicyDecider {
    stopping: Arc<AtomicBool>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl PolicyDecider {
    /// Starts judging the previews `events` tells of (subscribed before
    /// the mount was made, so none staged since is missed), recording in
    /// `journal`, and watching the rules file.
    pub(crate) fn start(
        session: Session,
        journal: Journal,
        state: Arc<PolicyState>,
        events: EventStream,
    ) -> Result<PolicyDecider, ClientError> {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| ClientError::io(texts::CANNOT_START, err))?;
        let judge = Judge {
            session,
            journal,
            who: Who::current(),
        };
        // Set once: a daemon starts one decider for its policy.
        let _ = state
            .at_staging
            .set((judge.clone(), runtime.handle().clone()));
        let following = Arc::clone(&state);
        let decider = std::thread::Builder::new()
            .name("xdev-policy".into())
            .spawn(move || runtime.block_on(judge.follow(following, events, stopped)))
            .map_err(|err| ClientError::io(texts::CANNOT_START, err))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let mut threads = vec![decider];
        match watch(state, Arc::clone(&stopping)) {
            Ok(watcher) => threads.push(watcher),
            // The rules still apply; only an edit is not noticed by itself.
            Err(error) => {
                tracing::warn!(%error, "cannot watch the policy file; write `reload` to the mount's policy file after editing it")
            }
        }
        Ok(PolicyDecider {
            stopping,
            stop: Some(stop),
            threads,
        })
    }
}

impl Drop for PolicyDecider {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// What judges a preview: on the decider's thread for a staged event, or
/// on the staging thread (see [`PolicyControl::judge_staged`]).
#[derive(Clone)]
struct Judge {
    session: Session,
    journal: Journal,
    /// The daemon, as the journal names the writer of its decisions.
    who: Who,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge").finish_non_exhaustive()
    }
}

impl Judge {
    /// Judges every preview staged from now on under the rules of `state`,
    /// each decision in a task of its own (a decision waits for its
    /// producer's report), until `stopped`. A preview whose apply goes to a
    /// producer outside this process came through the mount's `stage` file,
    /// whose write judged it already ([`PolicyControl::judge_staged`]); the
    /// rest (staged on the daemon's session in process) are judged here.
    async fn follow(
        self,
        state: Arc<PolicyState>,
        mut events: EventStream,
        stopped: tokio::sync::oneshot::Receiver<()>,
    ) {
        tokio::pin!(stopped);
        loop {
            let event = tokio::select! {
                _ = &mut stopped => return,
                event = events.recv() => event,
            };
            let Some(event) = event else { return };
            if event.kind != EventKind::Staged
                || event.id.is_empty()
                || self.session.applied_outside(&event.id)
            {
                continue;
            }
            if let Some(deciding) = self.judge(&state, &event.id) {
                tokio::spawn(deciding);
            }
        }
    }

    /// Evaluates preview `id` under the rules of `state`: the decision to
    /// run for an allow or a deny in enforce mode; nothing for an ask, and
    /// in shadow mode, where a record says what would have been decided.
    fn judge(
        &self,
        state: &PolicyState,
        id: &str,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        // Decided or withdrawn meanwhile: nothing left to judge.
        let preview = self.session.preview(id)?;
        let tool = &preview.source_tool;
        let call = call_of(tool, self.session.detail(id), self.session.cwd(id));
        let evaluation = state.policy().evaluate(&call);
        tracing::debug!(id, tool, effect = ?evaluation.effect, rule = ?evaluation.rule, why = %evaluation.why, "policy");
        let rule = evaluation.rule.clone().unwrap_or_default();
        let (action, reason) = match (state.mode(), evaluation.effect) {
            (PolicyMode::Shadow, _) => {
                self.note_shadow(&preview, &evaluation);
                return None;
            }
            (PolicyMode::Enforce, Effect::Ask) => return None,
            (PolicyMode::Enforce, Effect::Allow) => (Action::Apply, texts::policy_reason(&rule)),
            (PolicyMode::Enforce, Effect::Deny) => (
                Action::Discard,
                evaluation
                    .reason
                    .unwrap_or_else(|| texts::policy_reason(&rule)),
            ),
        };
        let (judge, id) = (self.clone(), id.to_string());
        Some(async move { judge.decide(&id, action, reason, rule).await })
    }

    /// Decides preview `id` as a write of `reason` to its
    /// `pending/<id>/resolve` (or `reject`) would: the same dispatch, the
    /// same intent record first with a journal file, and the decision's
    /// record after, naming the policy and the rule.
    async fn decide(&self, id: &str, action: Action, reason: String, rule: String) {
        let file = match action {
            Action::Apply => "resolve",
            Action::Discard => "reject",
        };
        let device = format!("pending/{id}/{file}");
        let hooks = DispatchHooks {
            before_decision: self
                .journal
                .before_decision(|| device.clone(), Some(&self.who)),
            ..DispatchHooks::default()
        };
        let request = ResolveRequest {
            action,
            reason: reason.clone(),
            extra: None,
        };
        let decision = Dispatch::by_id(id, request)
            .hooks(hooks)
            .run(&self.session)
            .await;
        // A person (or the preview's withdrawal) came first: theirs is the
        // decision, and its record is theirs.
        if decision.errno() == libc::ENOENT {
            return;
        }
        let decider = Decider {
            decider: "policy".into(),
            rule: Some(rule),
            would_decide: None,
        };
        drop(self.journal.append_decision_by(
            &device,
            &reason,
            &decision,
            Some(&self.who),
            &decider,
        ));
    }

    /// In shadow mode: a `policy` record of what the policy would decide.
    fn note_shadow(&self, preview: &crate::session::preview::PreviewInfo, evaluation: &Evaluation) {
        let rule = evaluation.rule.clone();
        let reason = match evaluation.effect {
            Effect::Allow => rule.as_deref().map(texts::policy_reason),
            Effect::Deny => evaluation
                .reason
                .clone()
                .or_else(|| rule.as_deref().map(texts::policy_reason)),
            Effect::Ask => evaluation.reason.clone(),
        };
        let record = Record {
            time: crate::journal::now(),
            event: "policy".into(),
            id: Some(preview.id.clone()),
            label: Some(preview.label.clone()),
            source_tool: Some(preview.source_tool.clone()),
            device: None,
            reason,
            outcome: "ok".into(),
            text: Some(evaluation.why.clone()),
            errno: None,
            origin: None,
            who: Some(self.who.clone()),
            plan: None,
            decider: Some(Decider {
                decider: "policy".into(),
                rule,
                would_decide: Some(effect_name(evaluation.effect).into()),
            }),
        };
        drop(self.journal.append(&record));
    }
}

/// `allow`, `deny` or `ask`.
fn effect_name(effect: Effect) -> &'static str {
    match effect {
        Effect::Allow => "allow",
        Effect::Ask => "ask",
        Effect::Deny => "deny",
    }
}

/// The call a preview asks for: its source tool, and its detail as the
/// tool's input (a detail that is no JSON is its text; none is `null`,
/// which the policy asks about, as it does a cut one).
fn call_of(tool: &str, detail: Option<String>, cwd: Option<String>) -> Call {
    let input = match detail {
        Some(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        None => Value::Null,
    };
    Call {
        tool: tool.to_string(),
        input,
        cwd: cwd.map(PathBuf::from),
    }
}

/// Watches the rules file's directory (an editor replaces a file by a
/// rename, which a watch on the file itself would lose) and reloads when
/// the file is written, replaced, removed or its modes change; stops once
/// `stopping` is set.
fn watch(
    state: Arc<PolicyState>,
    stopping: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let dir = state.path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name: Option<OsString> = state.path.file_name().map(OsString::from);
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
    inotify.add_watch(
        &dir,
        AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_ATTRIB,
    )?;
    std::thread::Builder::new()
        .name("xdev-policy-watch".into())
        .spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                if !changed(&inotify, name.as_deref(), WATCH_POLL) {
                    continue;
                }
                // Let the rest of the burst arrive, then reload once.
                std::thread::sleep(SETTLE);
                while changed(&inotify, None, Duration::ZERO) {}
                let _ = state.reload();
            }
        })
}

/// Whether an event about `name` (any, with `None`) came within `wait`.
fn changed(
    inotify: &nix::sys::inotify::Inotify,
    name: Option<&std::ffi::OsStr>,
    wait: Duration,
) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut fds, timeout), Ok(ready) if ready > 0) {
        return false;
    }
    let Ok(events) = inotify.read_events() else {
        return false;
    };
    events
        .iter()
        .any(|event| name.is_none() || event.name.as_deref() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_another_user_could_change_is_refused() {
        let me = 1000;
        assert_eq!(unsafe_modes(1000, 0o100600, me), None);
        assert_eq!(unsafe_modes(0, 0o100644, me), None, "root's own");
        assert_eq!(unsafe_modes(1000, 0o040755, me), None);
        assert!(unsafe_modes(1001, 0o100600, me).is_some(), "another's");
        assert!(unsafe_modes(1000, 0o100620, me).is_some(), "group-writable");
        assert!(unsafe_modes(1000, 0o041777, me).is_some(), "/tmp-like");
    }

    #[test]
    fn a_previews_detail_is_the_calls_input() {
        let call = call_of(
            "Bash",
            Some(r#"{"command": "ls"}"#.into()),
            Some("/src".into()),
        );
        assert_eq!(call.tool, "Bash");
        assert_eq!(call.input, serde_json::json!({"command": "ls"}));
        assert_eq!(call.cwd.as_deref(), Some(Path::new("/src")));
        assert_eq!(call_of("x", Some("plain".into()), None).input, "plain");
        assert_eq!(call_of("x", None, None).input, Value::Null);
    }
}
