//! What an agent harness uses beside the session's queue, to steer its
//! model turn by turn.
//!
//! - **Hard directives**: a [`Directive`] queued with
//!   `Session::enqueue_directive` yields one [`ToolChoice`] per turn that
//!   the model must make; `Session::serve_tool_choice` serves it and
//!   `Session::finish_turn` ends its turn ([`TurnEnd`]). A choice may carry
//!   a [`QueueInvoker`] that answers resolve and reject before the pending
//!   stack while it is in flight.
//! - **The soft requirement**: while a preview is pending,
//!   `Session::next_tool_choice_directive` asks the model to `write` to
//!   the mount's `resolve` or `reject` ([`ToolChoiceDirective`],
//!   [`SoftRequirement`]), and a [`SoftRequirementTracker`] enforces it:
//!   a turn that does something else is a detour ([`TurnVerdict`]), and
//!   after [`MAX_FORCED_TURNS`] forced turns for one head the run stops.

pub use crate::session::directives::{
    queue_invoker, Directive, DirectiveId, QueueInvoker, RejectAction, RejectReason, ToolChoice,
    TurnEnd,
};
pub use crate::soft_requirement::{
    ModelCallPlan, SoftRequirement, SoftRequirementTracker, ToolCall, ToolChoiceDirective,
    TurnVerdict, MAX_FORCED_TURNS,
};
