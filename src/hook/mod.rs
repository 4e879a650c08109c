//! `xdev hook`: a coding agent's permission hook that asks the devices.
//!
//! Claude Code and Codex run a command hook before a tool call (or before
//! their approval prompt) with one JSON event on stdin, and read the hook's
//! decision as JSON on stdout. `xdev hook` stages the call as a preview
//! through the mount's `stage` file, waits until someone writes `resolve`
//! or `reject`, and answers the agent: allow with the reason, or deny with
//! the reason as the message the model reads. An `ExitPlanMode` call goes to
//! the plan desk instead, when the mount has one.
//!
//! A hook must never wedge its agent: whatever goes wrong (no mount, a bad
//! event, no decision in time) ends with exit 0 and nothing on stdout, which
//! both agents read as "no opinion" (their own approval flow goes on), plus
//! one line on stderr naming the problem. Only a mount that hangs (its
//! daemon stopped) may hold the hook until the agent's own hook timeout,
//! which the agent reads the same way (see [`run_reading`]).
//!
//! The shapes, as checked against the agents themselves:
//!
//! - Claude Code 2.1.332 (npm `@anthropic-ai/claude-code-linux-x64`, the
//!   zod schemas inside its `claude` binary): every hook input has
//!   `session_id`, `transcript_path`, `cwd`; `PreToolUse` adds
//!   `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`;
//!   `PermissionRequest` adds `tool_name`, `tool_input`,
//!   `permission_suggestions` and has no `tool_use_id`. Output
//!   `hookSpecificOutput` for `PreToolUse`: `permissionDecision`
//!   (allow/deny/ask/defer), `permissionDecisionReason`; for
//!   `PermissionRequest`: `decision` is `{behavior: "allow", updatedInput?,
//!   updatedPermissions?}` or `{behavior: "deny", message?, interrupt?}`
//!   (so an allow carries no message). A command hook's timeout defaults to
//!   600 s (`e.timeout ? e.timeout*1000 : 600000` in the same binary). The
//!   `ExitPlanMode` input carries `plan` and `planFilePath`, "injected by
//!   normalizeToolInput from disk" (same binary; `sdk-tools.d.ts` of
//!   `@anthropic-ai/claude-code` 2.1.332 types the tool's own input).
//! - Codex (openai/codex, `codex-rs/hooks/src/schema.rs` and
//!   `schema/generated/permission-request.command.{input,output}.schema.json`):
//!   `PermissionRequest` input has `session_id`, `turn_id`,
//!   `transcript_path`, `cwd`, `hook_event_name`, `model`,
//!   `permission_mode`, `tool_name` (`Bash`, ...), `tool_input`
//!   (`command`, `description`) and no `tool_use_id`; `PreToolUse` input
//!   adds `tool_use_id`. Output: `hookSpecificOutput.decision.behavior`
//!   allow/deny with `message`; a deny without a non-empty message becomes
//!   "PermissionRequest hook denied approval", and a `PreToolUse`
//!   `permissionDecision: allow` without `updatedInput` is refused as
//!   unsupported (`codex-rs/hooks/src/engine/output_parser.rs`), so an
//!   allowed Codex `PreToolUse` prints nothing. Command hooks time out after
//!   `timeout_sec.unwrap_or(600)` (`engine/discovery.rs`). Only Codex sends
//!   `turn_id`: that is how the input tells the agent.
//!
//! The module's files follow its concerns: `args` reads the hook's usual
//! command lines without the CLI's parser (start-up is most of a hook's
//! cost), `input` reads the agents' events, `plan_file` reads the plan
//! files they name and writes the plans the desk files, `label` makes
//! what a person sees of a call, `answer` what the agent reads back, and
//! `run` the loop that stages, waits and decides.

use std::path::PathBuf;
use std::time::Duration;

mod answer;
mod args;
mod input;
mod label;
mod plan_file;
mod run;

pub use answer::{render, Verdict};
pub use args::{plain_hook_args, PlainHookArgs};
pub use input::{HookEvent, HookInput, InputError, MAX_EVENT_BYTES};
pub use label::{detail, label, preview_request};
pub use plan_file::{
    file_slug, plan_slug, Plan, PlanFileProblem, PlanFileRefused, MAX_PLAN_FILE_BYTES,
};
pub use run::{answer_late, run_reading, HookRun, LateAnswer};

/// The default `--deadline`: a little under both agents' default hook
/// timeout of 600 s, so the hook answers before it is killed.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(590);

/// The agent whose hook protocol is spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// OpenAI Codex.
    Codex,
}

/// What to answer when no decision comes before the deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OnTimeout {
    /// Print nothing: the agent falls back to its own approval prompt.
    #[default]
    Ask,
    /// Deny the call.
    Deny,
}

/// How `xdev hook` runs.
#[derive(Debug, Clone)]
pub struct HookOptions {
    /// The mount to ask.
    pub mount: PathBuf,
    /// The agent, when the input does not tell.
    pub agent: Option<Agent>,
    /// How long to wait for a decision.
    pub deadline: Duration,
    /// What to answer when the deadline passes.
    pub on_timeout: OnTimeout,
    /// Deny, rather than stay quiet, when the mount cannot be asked.
    pub strict: bool,
    /// Where plans are written for the plan desk (default: the desk's own
    /// plan directory, from `plan/status`).
    pub plan_dir: Option<PathBuf>,
    /// Let the agent's own processes decide its calls (for a harness that
    /// runs the hook and decides from within by design); by default the
    /// mount refuses their decisions.
    pub agent_may_decide: bool,
}
