//! What a message written to a device-like file does: the three devices,
//! an agent session's `resolve`/`reject`, a per-item `resolve`/`reject`,
//! and the plan control file.

use std::sync::Arc;

use crate::device::Device;
use crate::dispatch::{Decision, Dispatch, DispatchHooks};
use crate::error::Error;
use crate::fs::PolicyControl;
use crate::plan_command::PlanCommand;
use crate::plan_desk::PlanDesk;
use crate::session::answer::ToolResult;
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
    /// `policy`.
    PolicyCtl,
}

impl Target {
    /// The path under the mount, as the status files and journal name it.
    pub(crate) fn name(&self) -> String {
        match self {
            Target::Device(device) => device.name().to_string(),
            Target::Session { session, device } => format!("sessions/{session}/{}", device.name()),
            Target::Item { id, action } => format!("pending/{id}/{}", action_file(*action)),
            Target::PlanCtl => "plan/ctl".to_string(),
            Target::PolicyCtl => "policy".to_string(),
        }
    }

    /// Whether a decision written here may be withdrawn when its writer
    /// stops waiting: a proposal (nothing is staged; its review is
    /// cancelled). Any other decision goes on once it has begun.
    pub(crate) fn withdrawable(&self) -> bool {
        matches!(self, Target::Device(Device::Propose))
    }

    /// Whether a decision written here applies a preview (or runs a queue
    /// invoker's apply), rather than discarding one or proposing a plan.
    pub(crate) fn applies(&self) -> bool {
        matches!(
            self,
            Target::Device(Device::Resolve)
                | Target::Session {
                    device: Device::Resolve,
                    ..
                }
                | Target::Item {
                    action: Action::Apply,
                    ..
                }
        )
    }

    /// What a read before writing gets: the usage line, after the
    /// description of the rules in force for `policy`.
    pub(crate) fn usage(&self, dir: &str, policy: Option<&dyn PolicyControl>) -> String {
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
            Target::PolicyCtl => {
                let described = policy.map(PolicyControl::describe).unwrap_or_default();
                format!("{described}{}", texts::policy_ctl_usage(dir))
            }
        }
    }

    /// Dispatches one complete message with `hooks` (a preview's
    /// decision may be refused by them before it runs).
    pub(crate) async fn dispatch(
        &self,
        session: &Session,
        controls: Controls<'_>,
        text: &str,
        hooks: DispatchHooks,
    ) -> Decision {
        let dispatch = match self {
            Target::Device(device) => Dispatch::device(*device, text),
            Target::Session {
                session: agent,
                device,
            } => Dispatch::device_in(Scope::AgentSession(agent), *device, text),
            Target::Item { id, action } => {
                let request = ResolveRequest {
                    action: *action,
                    reason: text.trim().to_string(),
                    extra: None,
                };
                Dispatch::by_id(id, request)
            }
            Target::PlanCtl => {
                // `plan/ctl` has an inode only on a mount with a plan desk
                // (see `Inodes::new`), and only its node makes this target;
                // should that ever change, the writer is told, not hung up
                // on by a panicking request thread.
                let Some(desk) = controls.plan else {
                    let error = Error::NotInPlanMode(texts::NO_PLAN_DESK.into());
                    return Decision::failed(error, None, None);
                };
                return plan_control(desk, text);
            }
            // Likewise, `policy` has an inode only on a mount with a policy.
            Target::PolicyCtl => {
                let dir = session.mount_dir();
                return match controls.policy {
                    Some(policy) => policy_control(policy, text, &dir),
                    None => Decision::failed(
                        Error::InvalidRequest(texts::policy_ctl_unknown(&dir)),
                        None,
                        None,
                    ),
                };
            }
        };
        dispatch.hooks(hooks).run(session).await
    }
}

/// What a message to a mount's own control files may reach: the plan desk
/// and the policy, where the mount has them.
#[derive(Clone, Copy, Default)]
pub(crate) struct Controls<'a> {
    pub(crate) plan: Option<&'a PlanDesk>,
    pub(crate) policy: Option<&'a dyn PolicyControl>,
}

/// Runs one `policy` command: `reload`, whose outcome is the write's (a
/// file that fails to load is `EINVAL` with why; the rules in force stay).
fn policy_control(policy: &dyn PolicyControl, text: &str, dir: &str) -> Decision {
    let answer = match text.trim() {
        "reload" => policy
            .reload()
            .map(ToolResult::ok)
            .map_err(Error::InvalidRequest),
        _ => Err(Error::InvalidRequest(texts::policy_ctl_unknown(dir))),
    };
    Decision::answered(answer, None, None)
}

/// The file of an item that takes this action.
pub(crate) fn action_file(action: Action) -> &'static str {
    match action {
        Action::Apply => "resolve",
        Action::Discard => "reject",
    }
}

/// Runs one `plan/ctl` command: `enter`, `exit`, `approve [feedback]`,
/// `refine <feedback>`. A reviewer's decision names the plan it was about,
/// so a review UI reading `last` or the journal learns which plan was decided.
fn plan_control(desk: &PlanDesk, text: &str) -> Decision {
    let answer = text.parse().and_then(|command| match command {
        PlanCommand::Enter => {
            desk.enter();
            Ok(ToolResult::ok(texts::PLAN_MODE_ENTERED))
        }
        PlanCommand::Exit => {
            desk.exit();
            Ok(ToolResult::ok(texts::PLAN_MODE_EXITED))
        }
        PlanCommand::Approve { feedback, mode } => desk.approve_plan(feedback.as_deref(), mode),
        PlanCommand::Refine(feedback) => desk.refine_plan(&feedback),
    });
    Decision::answered(answer, None, None)
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
            resolve.usage("/xdev", None),
            "Write a one-sentence reason as plain text to /xdev/pending/p1/resolve to APPLY p1 (head or not)."
        );
        let reject = Target::Item {
            id: Arc::from("p1"),
            action: Action::Discard,
        };
        assert_eq!(
            reject.usage("/xdev", None),
            "Write a one-sentence reason as plain text to /xdev/pending/p1/reject to DISCARD p1 (head or not)."
        );
        assert_eq!(
            Target::PlanCtl.usage("/xdev", None),
            "Write one command to /xdev/plan/ctl: enter | exit | approve [feedback] | refine <feedback>."
        );
    }
}
