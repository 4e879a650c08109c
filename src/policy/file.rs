//! Loading a rules file: opened safely (no symbolic link followed, no
//! waiting on a FIFO, a regular file, at most [`MAX_POLICY_BYTES`]), read
//! as UTF-8 JSON, its rules parsed and its examples run. Claude Code's
//! `settings.json` loads as is: only its `permissions` are read.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use thiserror::Error;

use super::evaluation::{Effect, Evaluation, ExampleReport, ExampleResult};
use super::matching::Entry;
use super::rules::{parse_rule, Anchors, Family, ToolMatch};
use super::Call;
use crate::texts;

/// The largest rules file that loads (1 MiB).
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// Keys of Claude Code's `permissions` that the policy ignores, with a
/// warning: they configure Claude Code itself.
const IGNORED_PERMISSION_KEYS: [&str; 3] = [
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
];

/// Why a rules file did not load. Its `Display` is one paragraph naming
/// the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be opened or read (a symbolic link is refused
    /// here too: `ELOOP`).
    #[error("{}", texts::policy_cannot_read(.path, .source))]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The path is not a regular file.
    #[error("{}", texts::policy_not_regular(.path))]
    NotRegular {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than [`MAX_POLICY_BYTES`].
    #[error("{}", texts::policy_too_large(.path, *.size, MAX_POLICY_BYTES))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (at least).
        size: u64,
    },
    /// The file is not UTF-8.
    #[error("{}", texts::policy_not_utf8(.path))]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The file is not JSON.
    #[error("{}", texts::policy_bad_json(.path, .message))]
    Json {
        /// The file.
        path: PathBuf,
        /// serde_json's message (with line and column).
        message: String,
    },
    /// The JSON is not shaped as a rules file.
    #[error("{}", texts::policy_bad_shape(.path, .what))]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// `permissions` (or a rule object) holds a key the policy does not know.
    #[error("{}", texts::policy_unknown_key(.path, .key))]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key (`permissions.x`, or `allow[2].x`).
        key: String,
    },
    /// A rule does not parse.
    #[error("{}", texts::policy_bad_rule(.path, .list, .rule, .why))]
    Rule {
        /// The file.
        path: PathBuf,
        /// Its list (`allow`, `ask`, `deny`).
        list: String,
        /// The rule as written.
        rule: String,
        /// Why.
        why: String,
    },
    /// An example cannot be made into a call.
    #[error("{}", texts::policy_bad_example(.path, .rule, .example, .why))]
    Example {
        /// The file.
        path: PathBuf,
        /// The rule.
        rule: String,
        /// The example as written.
        example: String,
        /// Why.
        why: String,
    },
    /// Examples were not decided as their rules say.
    #[error("{}", examples_failed(.path, .report))]
    Examples {
        /// The file.
        path: PathBuf,
        /// Every example's result (the failed ones have `passed: false`).
        report: ExampleReport,
    },
}

impl LoadError {
    pub(crate) fn examples(path: &Path, report: &ExampleReport) -> LoadError {
        LoadError::Examples {
            path: path.to_path_buf(),
            report: report.clone(),
        }
    }
}

fn examples_failed(path: &Path, report: &ExampleReport) -> String {
    let failures: Vec<&ExampleResult> = report.failures().collect();
    let Some(first) = failures.first() else {
        return texts::policy_examples_failed(path, "", "", true, "", None, 0);
    };
    texts::policy_examples_failed(
        path,
        &first.rule,
        &first.example,
        first.must_match,
        first.got.name(),
        first.decided_by.as_deref(),
        failures.len() - 1,
    )
}

/// Reads a rules file safely: `O_NOFOLLOW` (a symbolic link is refused),
/// `O_NONBLOCK` (a FIFO does not hold the open), `fstat` on the open
/// descriptor (a regular file, no larger than the cap), at most the cap
/// read (a file growing meanwhile is refused too), UTF-8.
pub(crate) fn read_policy_file(path: &Path) -> Result<String, LoadError> {
    let read_error = |source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if !metadata.is_file() {
        return Err(LoadError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    if metadata.len() > MAX_POLICY_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
            size: metadata.len(),
        });
    }
    let bytes = read_capped(file).map_err(read_error)?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
        });
    }
    String::from_utf8(bytes).map_err(|_| LoadError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

fn read_capped(file: File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A file's rules, warnings and examples.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) entries: Vec<Entry>,
    pub(crate) warnings: Vec<String>,
    pub(crate) examples: Vec<Example>,
}

/// One example of one rule, made into a call.
#[derive(Debug)]
pub(crate) struct Example {
    rule_id: usize,
    rule: String,
    effect: Effect,
    must_match: bool,
    written: String,
    call: Call,
}

/// The lists in the order their rules are numbered: a tie between rules
/// of one effect goes to the first.
const LISTS: [(&str, Effect); 3] = [
    ("deny", Effect::Deny),
    ("ask", Effect::Ask),
    ("allow", Effect::Allow),
];

/// Parses a rules file's text.
pub(crate) fn parse_rules(
    text: &str,
    origin: &Path,
    anchors: &Anchors,
) -> Result<Parsed, LoadError> {
    let shape = |what: String| LoadError::Shape {
        path: origin.to_path_buf(),
        what,
    };
    let value: Value = serde_json::from_str(text).map_err(|error| LoadError::Json {
        path: origin.to_path_buf(),
        message: error.to_string(),
    })?;
    let Value::Object(top) = value else {
        return Err(shape(texts::POLICY_NOT_AN_OBJECT.into()));
    };
    let Some(permissions) = top.get("permissions") else {
        return Err(shape(texts::POLICY_NO_PERMISSIONS.into()));
    };
    let Value::Object(permissions) = permissions else {
        return Err(shape(texts::POLICY_PERMISSIONS_NOT_AN_OBJECT.into()));
    };
    let mut parsed = Parsed {
        entries: Vec::new(),
        warnings: Vec::new(),
        examples: Vec::new(),
    };
    for key in permissions.keys() {
        if IGNORED_PERMISSION_KEYS.contains(&key.as_str()) {
            parsed.warnings.push(texts::policy_ignored_key(key));
        } else if !LISTS.iter().any(|(list, _)| list == key) {
            return Err(LoadError::UnknownKey {
                path: origin.to_path_buf(),
                key: format!("permissions.{key}"),
            });
        }
    }
    for (list, effect) in LISTS {
        let Some(items) = permissions.get(list) else {
            continue;
        };
        let Value::Array(items) = items else {
            return Err(shape(texts::policy_list_not_an_array(list)));
        };
        for (at, item) in items.iter().enumerate() {
            parse_entry(item, list, at, effect, origin, anchors, &mut parsed)?;
        }
    }
    Ok(parsed)
}

fn parse_entry(
    item: &Value,
    list: &str,
    at: usize,
    effect: Effect,
    origin: &Path,
    anchors: &Anchors,
    parsed: &mut Parsed,
) -> Result<(), LoadError> {
    let empty = Map::new();
    let (text, fields) = match item {
        Value::String(text) => (text.as_str(), &empty),
        Value::Object(fields) => match fields.get("rule").and_then(Value::as_str) {
            Some(text) => (text, fields),
            None => {
                return Err(LoadError::Shape {
                    path: origin.to_path_buf(),
                    what: texts::policy_entry_without_rule(list, at),
                })
            }
        },
        _ => {
            return Err(LoadError::Shape {
                path: origin.to_path_buf(),
                what: texts::policy_entry_not_a_rule(list, at),
            })
        }
    };
    for key in fields.keys() {
        if !matches!(key.as_str(), "rule" | "reason" | "match" | "notMatch") {
            return Err(LoadError::UnknownKey {
                path: origin.to_path_buf(),
                key: format!("{list}[{at}].{key}"),
            });
        }
    }
    let rule = parse_rule(text, anchors).map_err(|why| LoadError::Rule {
        path: origin.to_path_buf(),
        list: list.to_string(),
        rule: text.to_string(),
        why,
    })?;
    let reason = match fields.get("reason") {
        None => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => {
            return Err(LoadError::Shape {
                path: origin.to_path_buf(),
                what: texts::policy_reason_not_a_string(list, at),
            })
        }
    };
    let rule_id = parsed.entries.len();
    for (key, must_match) in [("match", true), ("notMatch", false)] {
        let examples = match fields.get(key) {
            None => continue,
            Some(Value::Array(examples)) => examples,
            Some(_) => {
                return Err(LoadError::Shape {
                    path: origin.to_path_buf(),
                    what: texts::policy_examples_not_a_list(list, at, key),
                })
            }
        };
        for example in examples {
            let call = example_call(&rule.tool, example).map_err(|why| LoadError::Example {
                path: origin.to_path_buf(),
                rule: rule.text.clone(),
                example: written(example),
                why,
            })?;
            parsed.examples.push(Example {
                rule_id,
                rule: rule.text.clone(),
                effect,
                must_match,
                written: written(example),
                call,
            });
        }
    }
    parsed.entries.push(Entry {
        rule,
        effect,
        reason,
    });
    Ok(())
}

fn written(example: &Value) -> String {
    match example {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The call an example stands for: a string is the tool's natural input
/// (a command, a path, a URL, a subagent's name; for other tools their
/// input as JSON), an object names the tool, input and cwd.
fn example_call(tool: &ToolMatch, example: &Value) -> Result<Call, String> {
    match example {
        Value::String(text) => string_example(tool, text),
        Value::Object(fields) => {
            for key in fields.keys() {
                if !matches!(key.as_str(), "tool" | "input" | "cwd") {
                    return Err(texts::policy_example_unknown_key(key));
                }
            }
            let Some(name) = fields.get("tool").and_then(Value::as_str) else {
                return Err(texts::POLICY_EXAMPLE_NO_TOOL.into());
            };
            let input = fields
                .get("input")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let mut call = Call::new(name, input);
            match fields.get("cwd") {
                None => {}
                Some(Value::String(cwd)) => call.cwd = Some(PathBuf::from(cwd)),
                Some(_) => return Err(texts::POLICY_EXAMPLE_CWD.into()),
            }
            Ok(call)
        }
        _ => Err(texts::POLICY_EXAMPLE_SHAPE.into()),
    }
}

fn string_example(tool: &ToolMatch, text: &str) -> Result<Call, String> {
    let json = |name: &str| -> Result<Call, String> {
        let input = serde_json::from_str(text)
            .map_err(|error| texts::policy_example_not_json(&error.to_string()))?;
        Ok(Call::new(name, input))
    };
    match tool {
        ToolMatch::Family(family) => Call::from_text(example_tool(*family), text)
            .ok_or_else(|| texts::POLICY_EXAMPLE_SHAPE.to_string()),
        ToolMatch::Named(name) => json(name),
        ToolMatch::McpServer(server) => json(&format!("mcp__{server}")),
    }
}

/// The tool a string example of a family's rule is a call of.
fn example_tool(family: Family) -> &'static str {
    match family {
        Family::Shell => "Bash",
        Family::Read => "Read",
        Family::Edit => "Edit",
        Family::WebFetch => "WebFetch",
        Family::Agent => "Task",
        Family::Other => "",
    }
}

/// Runs the examples through `evaluate`.
pub(crate) fn run_examples(
    examples: &[Example],
    evaluate: impl Fn(&Call) -> Evaluation,
) -> ExampleReport {
    let results = examples
        .iter()
        .map(|example| {
            let evaluation = evaluate(&example.call);
            let by_this_rule = evaluation.effect == example.effect
                && evaluation.parts.iter().any(|part| {
                    part.effect == evaluation.effect && part.deciders.contains(&example.rule_id)
                });
            ExampleResult {
                rule: example.rule.clone(),
                effect: example.effect,
                must_match: example.must_match,
                example: example.written.clone(),
                got: evaluation.effect,
                decided_by: evaluation.rule.clone(),
                passed: by_this_rule == example.must_match,
            }
        })
        .collect();
    ExampleReport { results }
}
