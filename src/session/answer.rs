//! What a callback or handler answers: one [`ToolResult`], whether it comes
//! from a preview's apply or reject callback, a queue invoker, the standing
//! handler, a plan proposal handler or the plan desk's reviewer. A dispatch
//! turns it into its `Decision`.

use serde::Serialize;
use serde_json::Value;

/// What a callback (or any handler) answers: text for the user, optional
/// structured details, whether it is an error result, and what a handler
/// with no preview behind it says about itself (its names, its plan).
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
    /// The plan the answer is about (a plan handler's, or the reviewer's
    /// decision): the status files and the journal name it, whichever
    /// handler or callback answered with it.
    pub plan: Option<PlanApprovalDetails>,
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

    /// The same result about this plan.
    pub fn with_plan(mut self, plan: PlanApprovalDetails) -> Self {
        self.plan = Some(plan);
        self
    }
}

/// How a plan handler decided a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanOutcome {
    /// The plan is approved; plan mode is over.
    Approved,
    /// The reviewer asked for a better plan; plan mode stays on.
    Refine,
    /// The plan waits for a reviewer, who decides later.
    PendingReview,
}

/// What a review UI needs to know about a decided (or filed) proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalDetails {
    /// The plan's title (its slug).
    pub title: String,
    /// The plan file's path.
    pub plan_path: String,
    /// How it was decided.
    pub outcome: PlanOutcome,
}
