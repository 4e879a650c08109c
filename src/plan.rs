//! Plan titles and the plan proposal handler, under their historical path.
//!
//! They live in [`crate::session::plan`]: the session holds the plan
//! proposal handler, and the session must not import from the layers above it.

pub use crate::session::plan::{
    plan_handler, plan_reply_handler, PlanApprovalDetails, PlanHandler, PlanOutcome, PlanProposal,
    PlanReply, PlanTitle,
};
