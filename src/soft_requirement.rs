//! The next tool-choice directive and the soft-requirement tracker a
//! harness drives turn by turn.

use crate::session::Session;
use crate::texts;

/// The tool a soft requirement asks for.
pub(crate) const WRITE_TOOL: &str = "write";

/// How many forced turns one head id gets before the run stops.
pub const MAX_FORCED_TURNS: u32 = 3;

/// What the model should be steered to call next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoiceDirective {
    /// A hard directive from the queue: the model must call this tool.
    Hard {
        /// The tool to call.
        tool_name: String,
    },
    /// A preview is pending: the model should `write` to a resolution device.
    Soft(SoftRequirement),
}

/// The soft requirement that stands while a preview is pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftRequirement {
    /// The head preview's id.
    pub id: String,
    /// Always `write`.
    pub tool_name: String,
    /// The reminder text to show the model.
    pub reminder: String,
    mount_dir: String,
}

impl SoftRequirement {
    /// Whether a tool call satisfies the requirement: a `write` whose path
    /// is the mount's `resolve` or `reject`.
    pub fn accepts(&self, tool_name: &str, path: Option<&str>) -> bool {
        tool_name == self.tool_name
            && path.is_some_and(|path| is_device_path(&self.mount_dir, path))
    }
}

/// Whether `path` names the mount's `resolve` or `reject`: under the mount
/// point, or as `xd://resolve` / `xd://reject`, the scheme in any case (as
/// the agent runtime accepts it).
fn is_device_path(mount_dir: &str, path: &str) -> bool {
    let dir = mount_dir.trim_end_matches('/');
    let scheme = "xd://";
    let short = path
        .get(..scheme.len())
        .filter(|prefix| prefix.eq_ignore_ascii_case(scheme))
        .and_then(|_| path.get(scheme.len()..));
    ["resolve", "reject"]
        .iter()
        .any(|device| path == format!("{dir}/{device}") || short == Some(*device))
}

impl Session {
    /// The next tool-choice directive: a hard one from the queue first;
    /// otherwise, while a preview is pending, the soft requirement to
    /// `write` a resolution device. Asking consumes nothing.
    pub fn next_tool_choice_directive(&self) -> Option<ToolChoiceDirective> {
        if let Some(tool_name) = self.hard_tool() {
            return Some(ToolChoiceDirective::Hard { tool_name });
        }
        let head = self.pending_head()?;
        let mount_dir = self.mount_dir();
        Some(ToolChoiceDirective::Soft(SoftRequirement {
            reminder: texts::reminder(&head.source_tool, &mount_dir),
            id: head.id,
            tool_name: WRITE_TOOL.to_string(),
            mount_dir,
        }))
    }

    /// Whether a tool call finalizes a preview: a `write` to this mount's
    /// `resolve` or `reject` (or `xd://resolve`, `xd://reject`).
    pub fn is_preview_resolution_tool_call(&self, tool_name: &str, path: Option<&str>) -> bool {
        tool_name == WRITE_TOOL && path.is_some_and(|path| is_device_path(&self.mount_dir(), path))
    }
}

/// One tool call of a model turn, as the tracker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The tool called.
    pub name: String,
    /// The `path` argument, if the call has one.
    pub path: Option<String>,
}

impl ToolCall {
    /// A call of `name` with an optional path argument.
    pub fn new(name: impl Into<String>, path: Option<&str>) -> Self {
        ToolCall {
            name: name.into(),
            path: path.map(str::to_string),
        }
    }
}

/// What to do before the next model call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelCallPlan {
    /// A reminder to inject (once per head id).
    pub reminder: Option<String>,
    /// A tool the model call must be forced to use.
    pub force_tool: Option<String>,
}

/// How the harness must treat a finished model turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnVerdict {
    /// No requirement stands, or the turn complied: run its calls.
    Run,
    /// A detour: run none of the calls; give each this result; the next
    /// model call is forced.
    Detour {
        /// One result text per call, in order.
        results: Vec<String>,
    },
    /// Stop the run with this text.
    Stop(String),
}

/// Tracks one soft requirement across turns: reminds once per head id,
/// turns detours into one forced turn each, and stops after
/// [`MAX_FORCED_TURNS`] forced turns for the same head.
#[derive(Debug, Clone, Default)]
pub struct SoftRequirementTracker {
    head_id: Option<String>,
    reminded: bool,
    forced_turns: u32,
    force_next: bool,
}

impl SoftRequirementTracker {
    /// A tracker with no history.
    pub fn new() -> Self {
        SoftRequirementTracker::default()
    }

    /// Follows the requirement's head id; a new id resets the count and
    /// re-arms the reminder.
    fn follow(&mut self, requirement: Option<&SoftRequirement>) {
        let id = requirement.map(|requirement| requirement.id.as_str());
        if self.head_id.as_deref() != id {
            *self = SoftRequirementTracker {
                head_id: id.map(str::to_string),
                ..SoftRequirementTracker::default()
            };
        }
    }

    /// Call before each model call with the current soft requirement.
    pub fn before_model_call(&mut self, requirement: Option<&SoftRequirement>) -> ModelCallPlan {
        self.follow(requirement);
        let Some(requirement) = requirement else {
            return ModelCallPlan::default();
        };
        let reminder = (!self.reminded).then(|| requirement.reminder.clone());
        self.reminded = true;
        let force_tool = self.force_next.then(|| requirement.tool_name.clone());
        if self.force_next {
            self.force_next = false;
            self.forced_turns += 1;
        }
        ModelCallPlan {
            reminder,
            force_tool,
        }
    }

    /// Call after each model turn with its tool calls (empty for bare text).
    pub fn after_model_turn(
        &mut self,
        requirement: Option<&SoftRequirement>,
        calls: &[ToolCall],
    ) -> TurnVerdict {
        self.follow(requirement);
        let Some(requirement) = requirement else {
            return TurnVerdict::Run;
        };
        let complies = !calls.is_empty()
            && calls
                .iter()
                .all(|call| requirement.accepts(&call.name, call.path.as_deref()));
        if complies {
            return TurnVerdict::Run;
        }
        if self.forced_turns >= MAX_FORCED_TURNS {
            return TurnVerdict::Stop(texts::force_loop_abort(
                &requirement.tool_name,
                self.forced_turns,
            ));
        }
        self.force_next = true;
        TurnVerdict::Detour {
            results: vec![texts::DETOUR_RESULT.to_string(); calls.len()],
        }
    }

    /// Forced turns spent on the current head id.
    pub fn forced_turns(&self) -> u32 {
        self.forced_turns
    }
}
