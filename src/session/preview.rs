//! A staged preview and the callbacks that finalize it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::error::{CallbackError, Error};
use crate::session::answer::ToolResult;

/// A boxed, sendable future, the shape of every callback's answer.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Applies a preview: `(reason, extra)`. `Err` means the apply failed and
/// the preview stays pending; `Ok` with an error result consumes it.
pub type ApplyFn = Arc<
    dyn Fn(String, Option<Value>) -> BoxFuture<Result<ToolResult, CallbackError>> + Send + Sync,
>;

/// Discards a preview: `(reason, extra)`. `Ok(None)` means "use the default
/// discard text"; `Err` leaves the preview pending.
pub type RejectFn = Arc<
    dyn Fn(String, Option<Value>) -> BoxFuture<Result<Option<ToolResult>, CallbackError>>
        + Send
        + Sync,
>;

/// Takes back an apply that has not reached whoever carries it out (an
/// external producer that has not read its apply line): `(why, error)`,
/// the reason its preview is withdrawn with and the error its decision then
/// fails with. Returns whether nothing was applied, nor will be (the
/// decision then ends by itself, not applied); `false` once the apply has
/// reached its applier.
pub(crate) type TakeBackFn = Arc<dyn Fn(&str, Error) -> bool + Send + Sync>;

/// Wraps an async closure as an [`ApplyFn`].
pub fn apply_fn<F, Fut>(f: F) -> ApplyFn
where
    F: Fn(String, Option<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolResult, CallbackError>> + Send + 'static,
{
    Arc::new(move |reason, extra| Box::pin(f(reason, extra)))
}

/// Wraps an async closure as a [`RejectFn`].
pub fn reject_fn<F, Fut>(f: F) -> RejectFn
where
    F: Fn(String, Option<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Option<ToolResult>, CallbackError>> + Send + 'static,
{
    Arc::new(move |reason, extra| Box::pin(f(reason, extra)))
}

/// The source tool name used for custom tools.
pub const CUSTOM_TOOL: &str = "custom_tool";

/// The process-wide sequence behind preview ids: starts at 0, never reused.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// Builds a fresh id `pending-action:<sourceTool>:<seq>`.
pub(crate) fn next_preview_id(source_tool: &str) -> String {
    let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
    format!("pending-action:{source_tool}:{seq}")
}

/// Which agent call a preview answers: a coding agent's hook names its
/// session and its tool call, and the journal keeps both with every record
/// of the preview, so a decision can be matched to the agent's transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The agent's session id (Claude Code's and Codex's `session_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's id of the tool call (Claude Code's `tool_use_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

impl Origin {
    /// Whether it names nothing.
    pub fn is_empty(&self) -> bool {
        self.session_id.is_none() && self.tool_use_id.is_none()
    }
}

/// How a preview is staged, beyond its label, source tool and callbacks
/// (see [`Session::stage`](crate::Session::stage)). The default stages it
/// under a fresh id, with no detail, answering no agent call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageOptions {
    /// Stage under this id instead of a fresh
    /// `pending-action:<sourceTool>:<seq>`. An id already pending moves to
    /// the head with the new callbacks. It should be one this crate formed
    /// (those are path-safe): the mount does not list an id holding `/` or
    /// NUL under `pending/`.
    pub id: Option<String>,
    /// The full request the preview stands for, as the text of its
    /// `pending/<id>/detail` file (pretty JSON).
    pub detail: Option<String>,
    /// What the preview would change, as the text of its
    /// `pending/<id>/diff` file: a unified diff against the file as it is
    /// (or one line saying why there is none). Shown as given, but with
    /// every unprintable character other than a newline or a tab made
    /// visible (see [`printable_lines`](crate::safe_text::printable_lines)).
    pub diff: Option<String>,
    /// The working directory of the agent whose call it is (an absolute
    /// path), as `pending/<id>/cwd` and `status.json` show it: what
    /// relative paths in the call are relative to.
    pub cwd: Option<String>,
    /// The agent call it answers: its session id puts the preview under
    /// `sessions/<session-id>/`, and the journal names both ids in the
    /// preview's records.
    pub origin: Option<Origin>,
}

/// The agent process whose call a preview stands for, as the mount found
/// it when a hook staged the call: a decision of the preview written by
/// this process, or by any process it started, is refused (an agent does
/// not decide its own calls). The start time tells it apart from a later
/// process given the same pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentProcess {
    /// Its process id.
    pub(crate) pid: u32,
    /// When it started, in clock ticks since boot (`/proc/<pid>/stat`).
    pub(crate) started: u64,
    /// Its name when the call was staged (`/proc/<pid>/comm`).
    pub(crate) name: String,
}

/// What a staged preview carries beside its label: its detail and diff,
/// the agent call it answers, and the agent process its decisions may not
/// come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PreviewExtras {
    pub(crate) detail: Option<String>,
    pub(crate) diff: Option<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) origin: Option<Origin>,
    pub(crate) agent: Option<AgentProcess>,
}

impl PreviewExtras {
    /// What a preview staged with these carries; `None` when that is
    /// nothing (no preview pays for an empty allocation).
    pub(crate) fn of(
        detail: Option<String>,
        diff: Option<String>,
        cwd: Option<String>,
        origin: Option<Origin>,
        agent: Option<AgentProcess>,
    ) -> Option<Arc<Self>> {
        let empty = detail.is_none()
            && diff.is_none()
            && cwd.is_none()
            && origin.as_ref().is_none_or(Origin::is_empty)
            && agent.is_none();
        (!empty).then(|| {
            Arc::new(PreviewExtras {
                detail,
                diff,
                cwd,
                origin,
                agent,
            })
        })
    }
}

/// A staged preview: what it is, and how to apply or discard it.
pub struct Preview {
    /// `pending-action:<sourceTool>:<seq>`.
    pub id: Arc<str>,
    /// A short human description ("edit src/main.rs").
    pub label: String,
    /// The tool that staged it.
    pub source_tool: String,
    pub(crate) apply: ApplyFn,
    pub(crate) reject: Option<RejectFn>,
    /// How an apply handed to someone outside this process is taken back
    /// before it reaches them; `None` for an in-process callback, which
    /// has its apply once it runs.
    #[cfg_attr(not(feature = "mount"), allow(dead_code))]
    pub(crate) take_back: Option<TakeBackFn>,
    /// Its detail and origin, when it carries any.
    pub(crate) extras: Option<Arc<PreviewExtras>>,
}

impl Preview {
    /// The agent session it belongs to, if it names one: an empty id
    /// names nothing, so such a preview belongs to no session.
    pub(crate) fn session_id(&self) -> Option<&str> {
        let origin = self.extras.as_ref()?.origin.as_ref()?;
        origin.session_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The agent process its decisions may not come from, if a hook
    /// staged it.
    #[cfg(feature = "mount")]
    pub(crate) fn agent(&self) -> Option<&AgentProcess> {
        self.extras.as_ref()?.agent.as_ref()
    }

    /// The agent call it answers, if known.
    pub(crate) fn origin(&self) -> Option<Origin> {
        self.extras
            .as_ref()
            .and_then(|extras| extras.origin.clone())
    }
}

impl std::fmt::Debug for Preview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preview")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("source_tool", &self.source_tool)
            .finish_non_exhaustive()
    }
}

/// A read-only view of one pending preview, for status and listings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewInfo {
    /// The preview's id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// The tool that staged it.
    pub source_tool: String,
    /// The working directory of the agent whose call it is, when its
    /// stager named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl From<&Preview> for PreviewInfo {
    fn from(preview: &Preview) -> Self {
        PreviewInfo {
            id: preview.id.to_string(),
            label: preview.label.clone(),
            source_tool: preview.source_tool.clone(),
            cwd: preview
                .extras
                .as_ref()
                .and_then(|extras| extras.cwd.clone()),
        }
    }
}
