//! A staged preview and the callbacks that finalize it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::error::CallbackError;

/// A boxed, sendable future, the shape of every callback's answer.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a callback (or any handler) answers: text for the user, optional
/// structured details, and whether it is an error result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    /// The text shown to the user (and read back from the mount).
    pub text: String,
    /// The callback's own structured details, if any.
    pub details: Option<Value>,
    /// An error *result*: the call ran and reports a failure (a stale
    /// preview, say). For an apply, the preview is still consumed.
    pub is_error: bool,
    /// The label a handler with no preview behind it (a queue invoker, the
    /// standing handler) gives itself in the result details; a preview's
    /// callbacks are named by their preview, so theirs is ignored.
    pub label: Option<String>,
    /// The `sourceToolName` such a handler gives itself (a plan approval
    /// handler reports `plan_approval`); ignored for a preview's callbacks.
    pub source_tool_name: Option<String>,
}

impl ToolResult {
    /// A successful result with this text.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            ..ToolResult::default()
        }
    }

    /// An error result with this text.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: true,
            ..ToolResult::default()
        }
    }

    /// The same result carrying these details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same result naming its handler: the `label` and
    /// `sourceToolName` of the result details (see [`ToolResult::label`]).
    pub fn named(mut self, label: impl Into<String>, source_tool_name: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self.source_tool_name = Some(source_tool_name.into());
        self
    }
}

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

/// What a preview may carry beside its label: the whole request it stands
/// for (shown as `pending/<id>/detail`) and the agent call it answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviewExtras {
    /// The full request, as the text of the `detail` file (pretty JSON).
    pub detail: Option<String>,
    /// The agent call it answers.
    pub origin: Option<Origin>,
}

impl PreviewExtras {
    /// Whether it carries nothing.
    pub fn is_empty(&self) -> bool {
        self.detail.is_none() && self.origin.as_ref().is_none_or(Origin::is_empty)
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
}

impl From<&Preview> for PreviewInfo {
    fn from(preview: &Preview) -> Self {
        PreviewInfo {
            id: preview.id.to_string(),
            label: preview.label.clone(),
            source_tool: preview.source_tool.clone(),
        }
    }
}
