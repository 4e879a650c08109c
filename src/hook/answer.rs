//! The two agents' answers: the verdict, rendered as the JSON line each
//! agent reads for its event, and the texts an allow or a deny carries.

use serde::Serialize;
use serde_json::Value;

use super::{Agent, HookEvent, HookInput};
use crate::plan_desk::ContinueMode;
use crate::texts;

/// What the hook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Let the call run; the text is the reason.
    Allow(String),
    /// Let an approved plan's `ExitPlanMode` run, and continue in this
    /// mode; the text is the reason.
    AllowIn(String, ContinueMode),
    /// Refuse it; the text is what the model reads.
    Deny(String),
    /// Say nothing: the agent's own approval flow decides.
    Quiet,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    hook_specific_output: Specific,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Specific {
    #[serde(rename_all = "camelCase")]
    PreToolUse {
        hook_event_name: &'static str,
        permission_decision: &'static str,
        permission_decision_reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        updated_input: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    PermissionRequest {
        hook_event_name: &'static str,
        decision: Behavior,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Behavior {
    behavior: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    updated_permissions: Vec<PermissionUpdate>,
}

/// A permission update an allow carries: the mode to continue in.
#[derive(Serialize)]
struct PermissionUpdate {
    #[serde(rename = "type")]
    kind: &'static str,
    mode: ContinueMode,
    destination: &'static str,
}

/// The input an allow of `input` passes back: for `ExitPlanMode`, the
/// call's own input unchanged. Claude Code ignores an allow of it without
/// one (its dialog asks the user anyway: the call "requires user
/// interaction", which a hook satisfies through `updatedInput`); any other
/// `plan` there would replace the approved plan, so it is never rewritten.
fn updated_input(input: &HookInput) -> Option<Value> {
    (input.tool_name == "ExitPlanMode").then(|| input.tool_input.clone())
}

/// The JSON line the agent reads for `verdict`, or `None` when the hook
/// prints nothing.
pub fn render(input: &HookInput, verdict: &Verdict) -> Option<String> {
    let hook_event_name = input.event.name();
    let specific = match (input.event, verdict) {
        (_, Verdict::Quiet) => return None,
        // Codex refuses a PreToolUse allow without a rewritten input; its
        // "no opinion" lets the call go on.
        (HookEvent::PreToolUse, Verdict::Allow(_) | Verdict::AllowIn(..))
            if input.agent == Agent::Codex =>
        {
            return None
        }
        (HookEvent::PreToolUse, Verdict::Allow(reason) | Verdict::AllowIn(reason, _)) => {
            Specific::PreToolUse {
                hook_event_name,
                permission_decision: "allow",
                permission_decision_reason: reason.clone(),
                updated_input: updated_input(input),
            }
        }
        (HookEvent::PreToolUse, Verdict::Deny(reason)) => Specific::PreToolUse {
            hook_event_name,
            permission_decision: "deny",
            permission_decision_reason: reason.clone(),
            updated_input: None,
        },
        (HookEvent::PermissionRequest, Verdict::Allow(_) | Verdict::AllowIn(..)) => {
            let continue_in = match verdict {
                Verdict::AllowIn(_, mode) => Some(*mode),
                _ => None,
            };
            Specific::PermissionRequest {
                hook_event_name,
                decision: Behavior {
                    behavior: "allow",
                    message: None,
                    updated_input: updated_input(input),
                    updated_permissions: continue_in
                        .map(|mode| PermissionUpdate {
                            kind: "setMode",
                            mode,
                            destination: "session",
                        })
                        .into_iter()
                        .collect(),
                },
            }
        }
        (HookEvent::PermissionRequest, Verdict::Deny(message)) => Specific::PermissionRequest {
            hook_event_name,
            decision: Behavior {
                behavior: "deny",
                message: Some(message.clone()),
                updated_input: None,
                updated_permissions: Vec::new(),
            },
        },
    };
    let answer = Answer {
        hook_specific_output: specific,
    };
    serde_json::to_string(&answer).ok()
}

/// The reason an allow carries: the one written, or a plain statement (an
/// empty reason is valid on the devices).
pub(super) fn allow_reason(reason: &str) -> String {
    if reason.trim().is_empty() {
        texts::HOOK_ALLOWED_WITHOUT_REASON.to_string()
    } else {
        reason.to_string()
    }
}

/// The message a deny carries: never empty, since an empty one reads as no
/// reason at all to the model (and Codex replaces it with its own).
pub(super) fn deny_message(reason: &str) -> String {
    if reason.trim().is_empty() {
        texts::HOOK_DENIED_WITHOUT_REASON.to_string()
    } else {
        reason.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::input::fixtures::input;
    use super::*;

    #[test]
    fn answers_are_each_agents_json() {
        let pre = input("PreToolUse", "Bash", json!({"command": "ls"}));
        let perm = input("PermissionRequest", "Bash", json!({"command": "ls"}));
        let allow = Verdict::Allow("ok".into());
        let deny = Verdict::Deny("no".into());
        assert_eq!(
            render(&pre, &allow).as_deref(),
            Some(
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok"}}"#
            )
        );
        assert_eq!(
            render(&pre, &deny).as_deref(),
            Some(
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
            )
        );
        assert_eq!(
            render(&perm, &allow).as_deref(),
            Some(
                r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#
            )
        );
        assert_eq!(
            render(&perm, &deny).as_deref(),
            Some(
                r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no"}}}"#
            )
        );
        assert_eq!(render(&pre, &Verdict::Quiet), None);
        let codex_pre = HookInput {
            agent: Agent::Codex,
            ..pre
        };
        assert_eq!(
            render(&codex_pre, &allow),
            None,
            "Codex: allow is no opinion"
        );
        assert!(render(&codex_pre, &deny).is_some());
        assert_eq!(deny_message(" "), "Denied through xdev (no reason given).");
        assert_eq!(allow_reason(""), "Approved through xdev.");
    }
}
