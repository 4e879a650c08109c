//! The two agents' input: one hook event of Claude Code or Codex, read
//! from stdin and parsed.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

use super::Agent;
use crate::error::describe;
use crate::stage_protocol::origin_fits;
use crate::texts;

/// The most of its stdin `xdev hook` takes as one event: 16 MiB, far more
/// than any tool call an agent sends (a `Write` of a large file included),
/// and a bound on what the hook holds in memory. A longer input decides
/// nothing.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The hook events `xdev hook` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before every tool call.
    PreToolUse,
    /// When the agent would show its approval prompt.
    PermissionRequest,
}

impl HookEvent {
    pub(super) fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
        }
    }
}

/// One hook event, as read from stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    /// Whose protocol it is.
    pub agent: Agent,
    /// Which event.
    pub event: HookEvent,
    /// The agent's session.
    pub session_id: Option<String>,
    /// The agent's id of the tool call (absent for `PermissionRequest`).
    pub tool_use_id: Option<String>,
    /// The tool asked for (`Bash`, `Write`, `mcp__server__tool`, ...).
    pub tool_name: String,
    /// The tool's arguments.
    pub tool_input: Value,
    /// The agent's working directory (paths in labels are shown relative
    /// to it).
    pub cwd: Option<PathBuf>,
}

/// Why stdin is not a hook event `xdev hook` can decide.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum InputError {
    /// Not JSON at all.
    #[error("{}", texts::hook_input_not_json(.0))]
    NotJson(String),
    /// JSON, but no object.
    #[error("{}", texts::HOOK_INPUT_NOT_AN_OBJECT)]
    NotObject,
    /// A field the decision needs is missing or of the wrong type.
    #[error("{}", texts::hook_input_missing(.0))]
    Missing(&'static str),
    /// An event this command does not decide.
    #[error("{}", texts::hook_event_unsupported(.0))]
    Unsupported(String),
    /// More than [`MAX_EVENT_BYTES`] on stdin (this many bytes).
    #[error("{}", texts::hook_input_too_large(*.0, MAX_EVENT_BYTES))]
    TooLarge(u64),
}

impl HookInput {
    /// Parses one hook event. The agent is Codex when the input carries
    /// `turn_id` (only Codex sends it), else `agent`, else Claude Code.
    pub fn parse(stdin: &[u8], agent: Option<Agent>) -> Result<HookInput, InputError> {
        let value: Value =
            serde_json::from_slice(stdin).map_err(|err| InputError::NotJson(err.to_string()))?;
        let fields = value.as_object().ok_or(InputError::NotObject)?;
        let text = |key: &str| fields.get(key).and_then(Value::as_str);
        let event = match text("hook_event_name") {
            Some("PreToolUse") => HookEvent::PreToolUse,
            Some("PermissionRequest") => HookEvent::PermissionRequest,
            Some(other) => return Err(InputError::Unsupported(other.to_string())),
            None => return Err(InputError::Missing("hook_event_name (a string)")),
        };
        let tool_name = text("tool_name").ok_or(InputError::Missing("tool_name (a string)"))?;
        let tool_input = fields
            .get("tool_input")
            .cloned()
            .ok_or(InputError::Missing("tool_input"))?;
        let agent = if fields.contains_key("turn_id") {
            Agent::Codex
        } else {
            agent.unwrap_or(Agent::Claude)
        };
        Ok(HookInput {
            agent,
            event,
            session_id: text("session_id").and_then(journal_id),
            tool_use_id: text("tool_use_id").and_then(journal_id),
            tool_name: tool_name.to_string(),
            tool_input,
            cwd: text("cwd").map(PathBuf::from),
        })
    }

    pub(super) fn field(&self, key: &str) -> Option<&str> {
        self.tool_input.get(key).and_then(Value::as_str)
    }

    /// A path from the tool input, relative to the agent's working
    /// directory when it lies inside it.
    pub(super) fn shown_path(&self, key: &str) -> Option<String> {
        let path = Path::new(self.field(key)?);
        let relative = self
            .cwd
            .as_deref()
            .and_then(|cwd| path.strip_prefix(cwd).ok())
            .filter(|relative| !relative.as_os_str().is_empty());
        Some(relative.unwrap_or(path).display().to_string())
    }

    /// The plan text the event carries itself (`tool_input.plan`), if
    /// any.
    pub(super) fn own_plan(&self) -> Option<&str> {
        self.field("plan").filter(|plan| !plan.trim().is_empty())
    }
}

/// The event on `input`, or the stderr line that says why there is none.
pub(super) fn read_event(mut input: impl Read) -> Result<Vec<u8>, String> {
    let cannot_read = |error: io::Error| texts::hook_cannot_read_stdin(describe(&error));
    let mut event = Vec::new();
    let limit = u64::try_from(MAX_EVENT_BYTES).unwrap_or(u64::MAX);
    (&mut input)
        .take(limit + 1)
        .read_to_end(&mut event)
        .map_err(cannot_read)?;
    if event.len() <= MAX_EVENT_BYTES {
        return Ok(event);
    }
    let rest = io::copy(&mut input, &mut io::sink()).map_err(cannot_read)?;
    let size = u64::try_from(event.len()).unwrap_or(u64::MAX) + rest;
    Err(texts::hook_bad_input(InputError::TooLarge(size)))
}

/// An id the journal may quote (see the stage protocol's rules); an agent's
/// id that breaks them is left out rather than failing the hook.
fn journal_id(id: &str) -> Option<String> {
    origin_fits(id).then(|| id.to_string())
}

#[cfg(test)]
pub(super) mod fixtures {
    use serde_json::{json, Value};

    use super::HookInput;

    /// A Claude Code event of `event` asking for `tool` with `tool_input`,
    /// from `/work/app`.
    pub(in crate::hook) fn input(event: &str, tool: &str, tool_input: Value) -> HookInput {
        let line = json!({"session_id": "s-1", "transcript_path": "/t.jsonl", "cwd": "/work/app",
            "hook_event_name": event, "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": "toolu_01"});
        HookInput::parse(line.to_string().as_bytes(), None).expect("parses")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fixtures::input;
    use super::*;

    #[test]
    fn inputs_tell_the_agent_and_the_event() {
        let claude = input("PreToolUse", "Bash", json!({"command": "ls"}));
        assert_eq!(claude.agent, Agent::Claude);
        assert_eq!(claude.event, HookEvent::PreToolUse);
        assert_eq!(claude.session_id.as_deref(), Some("s-1"));
        assert_eq!(claude.tool_use_id.as_deref(), Some("toolu_01"));
        let codex = json!({"session_id": "s", "turn_id": "t", "hook_event_name": "PermissionRequest",
            "tool_name": "Bash", "tool_input": {"command": "ls"}});
        let codex =
            HookInput::parse(codex.to_string().as_bytes(), Some(Agent::Claude)).expect("parses");
        assert_eq!(
            codex.agent,
            Agent::Codex,
            "turn_id tells, whatever --agent says"
        );
        assert_eq!(codex.tool_use_id, None);
        let untold =
            json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {}});
        let untold =
            HookInput::parse(untold.to_string().as_bytes(), Some(Agent::Codex)).expect("parses");
        assert_eq!(
            untold.agent,
            Agent::Codex,
            "--agent when the input does not tell"
        );
    }

    #[test]
    fn stdin_is_taken_up_to_16_mib_and_a_longer_one_is_read_to_its_end_and_refused() {
        let whole = vec![b' '; MAX_EVENT_BYTES];
        assert_eq!(
            read_event(io::Cursor::new(&whole)).map(|event| event.len()),
            Ok(MAX_EVENT_BYTES)
        );
        let mut longer = io::Cursor::new(vec![b' '; MAX_EVENT_BYTES + 5]);
        let refused = read_event(&mut longer);
        assert_eq!(
            refused,
            Err(format!(
                "xdev hook: bad hook input: stdin holds {} bytes, more than the 16 MiB a hook event may take; printing nothing, so the agent decides as usual",
                MAX_EVENT_BYTES + 5
            ))
        );
        assert_eq!(
            longer.position(),
            u64::try_from(MAX_EVENT_BYTES + 5).expect("fits"),
            "read to its end"
        );
    }

    #[test]
    fn bad_inputs_say_what_is_wrong() {
        let refused = |text: &str| {
            HookInput::parse(text.as_bytes(), None)
                .map(|_| ())
                .map_err(|err| err.to_string())
        };
        assert!(refused("not json").is_err_and(|err| err.starts_with("stdin is not JSON (")));
        assert_eq!(
            refused("[1]"),
            Err("the hook input is not a JSON object".into())
        );
        assert_eq!(
            refused(r#"{"tool_name": "Bash", "tool_input": {}}"#),
            Err("the hook input has no hook_event_name (a string)".into())
        );
        assert_eq!(
            refused(r#"{"hook_event_name": "PreToolUse", "tool_input": {}}"#),
            Err("the hook input has no tool_name (a string)".into())
        );
        assert_eq!(
            refused(r#"{"hook_event_name": "PreToolUse", "tool_name": "Bash"}"#),
            Err("the hook input has no tool_input".into())
        );
        assert_eq!(
            refused(r#"{"hook_event_name": "Stop", "tool_name": "x", "tool_input": {}}"#),
            Err("hook_event_name \"Stop\" is not one xdev hook decides (PreToolUse, PermissionRequest)".into())
        );
    }
}
