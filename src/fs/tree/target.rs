//! What a message written to a device-like file does: the three devices,
//! an agent session's `resolve`/`reject`, a per-item `resolve`/`reject`,
//! and the plan control file.

use std::sync::Arc;

use crate::device::Device;
use crate::dispatch::{decide_pending_with, dispatch_device_in, DispatchHooks, Resolution};
use crate::plan_command::PlanCommand;
use crate::plan_desk::{Decision, PlanDesk};
use crate::session::plan::PlanApprovalDetails;
use crate::session::request::{Action, ResolveRequest};
use crate::session::{Scope, Session};
use crate::texts;

/// A file whose message is dispatched.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// `resolve`, `reject`, `propose` at the root.
    Device(Device),
    /// `sessions/<session-id>/resolve` or `.../reject`.
    Session { session: Arc<str>, device: Device },
    /// `pending/<id>/resolve` or `pending/<id>/reject`.
    Item { id: Arc<str>, action: Action },
    /// `plan/ctl`.
    PlanCtl,
}

impl Target {
    /// The path under the mount, as the status files and journal name it.
    pub(crate) fn name(&self) -> String {
        match self {
            Target::Device(device) => device.name().to_string(),
            Target::Session { session, device } => format!("sessions/{session}/{}", device.name()),
            Target::Item { id, action } => format!("pending/{id}/{}", action_file(*action)),
            Target::PlanCtl => "plan/ctl".to_string(),
        }
    }

    /// Whether a decision written here may be withdrawn when its writer
    /// stops waiting: a proposal (nothing is staged; its review is
    /// cancelled). Any other decision goes on once it has begun.
    pub(crate) fn withdrawable(&self) -> bool {
        matches!(self, Target::Device(Device::Propose))
    }

    /// The usage line read before writing.
    pub(crate) fn usage(&self, dir: &str) -> String {
        match self {
            Target::Device(device) => device.usage(dir),
            Target::Session { session, device } => {
                let verb = match device {
                    Device::Resolve => texts::ITEM_APPLY,
                    _ => texts::ITEM_DISCARD,
                };
                texts::session_device_usage(dir, session, device.name(), verb)
            }
            Target::Item { id, action } => {
                let verb = match action {
                    Action::Apply => texts::ITEM_APPLY,
                    Action::Discard => texts::ITEM_DISCARD,
                };
                texts::item_usage(dir, &self.name(), verb, id)
            }
            Target::PlanCtl => texts::plan_ctl_usage(dir),
        }
    }

    /// Dispatches one complete message with `hooks` (a preview's
    /// decision may be refused by them before it runs).
    pub(crate) async fn dispatch(
        &self,
        session: &Session,
        plan: Option<&PlanDesk>,
        text: &str,
        hooks: DispatchHooks,
    ) -> Resolution {
        match self {
            Target::Device(device) => {
                dispatch_device_in(session, Scope::Mount, *device, text, hooks).await
            }
            Target::Session {
                session: agent,
                device,
            } => {
                dispatch_device_in(session, Scope::AgentSession(agent), *device, text, hooks).await
            }
            Target::Item { id, action } => {
                let request = ResolveRequest {
                    action: *action,
                    reason: text.trim().to_string(),
                    extra: None,
                };
                decide_pending_with(session, id, request, hooks).await
            }
            Target::PlanCtl => {
                // `plan/ctl` has an inode only on a mount with a plan desk
                // (see `Inodes::new`), and only its node makes this target.
                let Some(desk) = plan else {
                    unreachable!("plan/ctl exists only with a plan desk")
                };
                plan_control(desk, text)
            }
        }
    }
}

/// The file of an item that takes this action.
pub(crate) fn action_file(action: Action) -> &'static str {
    match action {
        Action::Apply => "resolve",
        Action::Discard => "reject",
    }
}

/// Runs one `plan/ctl` command: `enter`, `exit`, `approve [feedback]`,
/// `refine <feedback>`.
fn plan_control(desk: &PlanDesk, text: &str) -> Resolution {
    let outcome = text.parse().and_then(|command| match command {
        PlanCommand::Enter => {
            desk.enter();
            Ok((texts::PLAN_MODE_ENTERED.to_string(), None))
        }
        PlanCommand::Exit => {
            desk.exit();
            Ok((texts::PLAN_MODE_EXITED.to_string(), None))
        }
        PlanCommand::Approve { feedback, mode } => {
            desk.approve_plan(feedback.as_deref(), mode).map(decided)
        }
        PlanCommand::Refine(feedback) => desk.refine_plan(&feedback).map(decided),
    });
    match outcome {
        Ok((text, plan)) => {
            // A review UI reading `last` or the journal learns which plan
            // the reviewer decided.
            let mut resolution = Resolution::ok(text, None);
            resolution.plan = plan;
            resolution
        }
        Err(error) => Resolution::failed(error, None),
    }
}

/// A reviewer's decision, with the plan it was about.
fn decided((text, plan): Decision) -> (String, Option<PlanApprovalDetails>) {
    (text, Some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_items_and_plan_ctls_usage_lines_say_what_to_write_where() {
        let resolve = Target::Item {
            id: Arc::from("p1"),
            action: Action::Apply,
        };
        assert_eq!(
            resolve.usage("/xdev"),
            "Write a one-sentence reason as plain text to /xdev/pending/p1/resolve to APPLY p1 (head or not)."
        );
        let reject = Target::Item {
            id: Arc::from("p1"),
            action: Action::Discard,
        };
        assert_eq!(
            reject.usage("/xdev"),
            "Write a one-sentence reason as plain text to /xdev/pending/p1/reject to DISCARD p1 (head or not)."
        );
        assert_eq!(
            Target::PlanCtl.usage("/xdev"),
            "Write one command to /xdev/plan/ctl: enter | exit | approve [feedback] | refine <feedback>."
        );
    }
}
