//! The policy: `allow`, `ask` and `deny` rules in Claude Code's syntax
//! that decide a tool call the moment it is staged, as a person would.
//!
//! - **Rules are data.** A rules file (JSON: Claude Code's `settings.json`
//!   works as is, its `permissions` read) loads into a [`Policy`]: each
//!   rule parsed once ([`rules`](self) module: `Tool`, `Tool(specifier)`),
//!   its examples run at load, so a file whose examples disagree with its
//!   rules is refused ([`LoadError`]). See `docs/policy.md`.
//! - **Evaluation is a pure function.** [`Policy::evaluate`] cuts a
//!   [`Call`] into parts (a shell command's every simple command after
//!   unwrapping, its redirections as writes; a patch's files; else the
//!   call), judges each by the rules that match it, and answers an
//!   [`Evaluation`]: no filesystem, no environment, no panics.
//! - **Strictest wins.** [`Effect`] is ordered `Allow < Ask < Deny`; a
//!   part takes the strictest of its matching rules, a call the strictest
//!   of its parts. No rule matches: `Ask`. What cannot be resolved without
//!   running the command (an expansion in command position, an alias, a
//!   cut input, too deep, too large) is never `Allow`.
//!
//! ```
//! use std::path::Path;
//! use xdev::policy::{Call, Effect, Policy};
//!
//! let policy = Policy::parse(
//!     r#"{"permissions": {"allow": ["Bash(cargo test *)"], "deny": ["Bash(rm -rf *)"]}}"#,
//!     Path::new("/repo/.xdev/policy.json"),
//! )?;
//! assert_eq!(policy.evaluate(&Call::bash("cargo test --release")).effect, Effect::Allow);
//! assert_eq!(policy.evaluate(&Call::bash("rm -rf /")).effect, Effect::Deny);
//! assert_eq!(policy.evaluate(&Call::bash("ls")).effect, Effect::Ask);
//! # Ok::<(), xdev::policy::LoadError>(())
//! ```

mod codex_rules;
mod command;
mod evaluation;
mod file;
mod import;
mod matching;
mod rules;
mod word;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

pub use evaluation::{Effect, Evaluation, ExampleReport, ExampleResult, PartEvaluation};
pub use file::{LoadError, MAX_POLICY_BYTES};
pub use import::{Import, ImportError, ImportFormat};

use matching::{Entry, RuleIndex};
use rules::{Anchors, Family};

/// A loaded rules file. Cheap to clone (the rules are shared), usable
/// from any thread.
#[derive(Debug, Clone)]
pub struct Policy {
    inner: Arc<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    entries: Vec<Entry>,
    index: RuleIndex,
    anchors: Anchors,
    warnings: Vec<String>,
    report: ExampleReport,
}

impl Policy {
    /// Loads the rules file at `path`: opened without following a
    /// symbolic link, a regular file of at most [`MAX_POLICY_BYTES`] of
    /// UTF-8 JSON, its examples run.
    pub fn load(path: &Path) -> Result<Policy, LoadError> {
        let text = file::read_policy_file(path)?;
        Policy::parse(&text, path)
    }

    /// Parses a rules file's text; `origin` is its path (relative path
    /// rules are relative to its directory; errors name it).
    pub fn parse(text: &str, origin: &Path) -> Result<Policy, LoadError> {
        let anchors = Anchors::for_origin(origin);
        let parsed = file::parse_rules(text, origin, &anchors)?;
        let index = RuleIndex::new(&parsed.entries);
        let mut loaded = Loaded {
            entries: parsed.entries,
            index,
            anchors,
            warnings: parsed.warnings,
            report: ExampleReport {
                results: Vec::new(),
            },
        };
        let policy_examples = parsed.examples;
        let report = file::run_examples(&policy_examples, |call| {
            matching::evaluate(&loaded.entries, &loaded.index, &loaded.anchors, call)
        });
        if !report.passed() {
            return Err(LoadError::examples(origin, &report));
        }
        loaded.report = report;
        Ok(Policy {
            inner: Arc::new(loaded),
        })
    }

    /// The policy's decision on `call`. Pure: reads nothing but the call
    /// and the rules.
    pub fn evaluate(&self, call: &Call) -> Evaluation {
        let loaded = &self.inner;
        matching::evaluate(&loaded.entries, &loaded.index, &loaded.anchors, call)
    }

    /// How many rules the file holds.
    pub fn rule_count(&self) -> usize {
        self.inner.entries.len()
    }

    /// What loading noticed but did not refuse (ignored settings keys).
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The file's examples and what the rules made of each (all passed: a
    /// file whose examples fail does not load).
    pub fn test_examples(&self) -> ExampleReport {
        self.inner.report.clone()
    }
}

/// A tool call to decide: the tool's name as the agent (or the stager)
/// gave it, its input, and the directory it runs in when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name (`Bash`, `Edit`, `exec_command`, `mcp__s__t`, ...).
    pub tool: String,
    /// The tool's input (Claude Code's `tool_input`, a preview's detail).
    pub input: Value,
    /// The call's working directory: relative paths are relative to it.
    pub cwd: Option<PathBuf>,
}

impl Call {
    /// A `Bash` call of `command`.
    pub fn bash(command: &str) -> Call {
        Call::new("Bash", serde_json::json!({ "command": command }))
    }

    /// A call of `tool` with `input`, no cwd.
    pub fn new(tool: impl Into<String>, input: Value) -> Call {
        Call {
            tool: tool.into(),
            input,
            cwd: None,
        }
    }

    /// A call of `tool` whose input is the tool's natural text, as a
    /// person types it: the command of a shell tool, the path of a file
    /// tool, the patch of `apply_patch`, the URL of `WebFetch`, the
    /// subagent of `Task`/`Agent`. `None` for any other tool, whose input
    /// is a JSON object.
    pub fn from_text(tool: &str, text: &str) -> Option<Call> {
        let input = match rules::family(tool) {
            Family::Shell => serde_json::json!({ "command": text }),
            Family::Read | Family::Edit if tool == "apply_patch" => {
                serde_json::json!({ "input": text })
            }
            Family::Read | Family::Edit => serde_json::json!({ "file_path": text }),
            Family::WebFetch => serde_json::json!({ "url": text }),
            Family::Agent => serde_json::json!({ "subagent_type": text }),
            Family::Other => return None,
        };
        Some(Call::new(tool, input))
    }

    /// The same call, run in `cwd`.
    pub fn in_dir(mut self, cwd: impl Into<PathBuf>) -> Call {
        self.cwd = Some(cwd.into());
        self
    }
}

#[cfg(test)]
mod tests;
