//! `xdev policy import`: an agent's own permission rules made into one
//! xdev rules file. Claude Code's `settings.json` keeps its
//! `permissions` rules as they are (xdev reads the same syntax) and
//! drops what configures Claude Code itself; Codex's execpolicy `.rules`
//! files ([`codex_rules`](super::codex_rules)) become `Bash(<prefix> *)`
//! rules, one per alternative of their pattern, with their justification
//! as the reason and their examples as examples. What cannot be mapped is
//! left out and said ([`Import::notes`]); the file made always loads and
//! its examples pass ([`Import::finish`]).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use thiserror::Error;

use super::codex_rules::{self, Example, PrefixRule};
use super::rules::pattern_words;
use super::{Effect, LoadError, Policy};
use crate::texts;

/// Where the rules come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// Claude Code's `settings.json` (its `permissions`).
    Claude,
    /// Codex's execpolicy `.rules` (`prefix_rule(...)` calls).
    Codex,
}

impl ImportFormat {
    /// The format a file's name suggests: `.rules` (and the older
    /// `.codexpolicy`, `.execpolicy`) is Codex's, anything else Claude
    /// Code's.
    pub fn of_path(path: &Path) -> ImportFormat {
        match path.extension().and_then(|extension| extension.to_str()) {
            Some("rules" | "codexpolicy" | "execpolicy") => ImportFormat::Codex,
            _ => ImportFormat::Claude,
        }
    }
}

/// Why a file could not be imported at all.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] LoadError),
    /// A Claude Code settings file that is not JSON, or not an object.
    #[error("{}", texts::import_not_settings(.path, .why))]
    Settings {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A Codex rules file with something other than `prefix_rule` calls.
    #[error("{}", texts::import_codex_syntax(.path, *.line, .what))]
    Codex {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// What is there.
        what: String,
    },
    /// The rules made do not load (a bug: each rule was checked).
    #[error("{0}")]
    Made(LoadError),
}

/// One rule of the file being made.
#[derive(Debug, Clone)]
struct Made {
    rule: String,
    effect: Effect,
    reason: Option<String>,
    matches: Vec<String>,
    not_matches: Vec<String>,
}

/// The rules file being made from one or more imported files.
#[derive(Debug, Default)]
pub struct Import {
    rules: Vec<Made>,
    notes: Vec<String>,
}

impl Import {
    /// Nothing imported yet.
    pub fn new() -> Import {
        Import::default()
    }

    /// Reads the file at `path` (as a rules file is read: no link
    /// followed, at most 1 MiB of UTF-8) and adds its rules.
    pub fn add_file(&mut self, path: &Path, format: ImportFormat) -> Result<(), ImportError> {
        let text = super::file::read_policy_file(path)?;
        match format {
            ImportFormat::Claude => self.add_claude(&text, path),
            ImportFormat::Codex => self.add_codex(&text, path),
        }
    }

    /// Adds the `permissions` of a Claude Code settings file's `text`.
    pub fn add_claude(&mut self, text: &str, path: &Path) -> Result<(), ImportError> {
        let not_settings = |why: String| ImportError::Settings {
            path: path.to_path_buf(),
            why,
        };
        let value: Value =
            serde_json::from_str(text).map_err(|error| not_settings(error.to_string()))?;
        let Value::Object(top) = value else {
            return Err(not_settings(texts::POLICY_NOT_AN_OBJECT.into()));
        };
        for key in top.keys().filter(|key| *key != "permissions") {
            self.note(texts::import_ignored_setting(path, key));
        }
        let empty = Map::new();
        let permissions = match top.get("permissions") {
            Some(Value::Object(permissions)) => permissions,
            Some(_) => return Err(not_settings(texts::POLICY_PERMISSIONS_NOT_AN_OBJECT.into())),
            None => &empty,
        };
        for (key, items) in permissions {
            let effect = match key.as_str() {
                "allow" => Effect::Allow,
                "ask" => Effect::Ask,
                "deny" => Effect::Deny,
                _ => {
                    self.note(texts::import_ignored_setting(
                        path,
                        &format!("permissions.{key}"),
                    ));
                    continue;
                }
            };
            let Value::Array(items) = items else {
                self.note(texts::import_not_a_list(path, key));
                continue;
            };
            for item in items {
                let Value::String(rule) = item else {
                    self.note(texts::import_not_a_rule(path, key, &item.to_string()));
                    continue;
                };
                self.add_rule(path, Made::plain(rule, effect));
            }
        }
        Ok(())
    }

    /// Adds the `prefix_rule`s of a Codex rules file's `text`.
    pub fn add_codex(&mut self, text: &str, path: &Path) -> Result<(), ImportError> {
        let rules = codex_rules::parse(text).map_err(|error| ImportError::Codex {
            path: path.to_path_buf(),
            line: error.line,
            what: error.what,
        })?;
        for rule in &rules {
            match prefix_rules(rule) {
                Ok(made) => {
                    for made in made {
                        self.add_rule(path, made);
                    }
                }
                Err(why) => self.note(texts::import_codex_unmapped(path, rule.line, &why)),
            }
        }
        Ok(())
    }

    /// What could not be mapped, or was left out, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The rules file made: JSON text that loads (its directory taken to
    /// be `dir`, for relative path rules), whose examples pass. An example
    /// the rules made decide otherwise (another rule is stricter, say) is
    /// left out, with a note.
    pub fn finish(&mut self, dir: &Path) -> Result<String, ImportError> {
        let origin = dir.join("imported-policy.json");
        loop {
            let text = self.render();
            match Policy::parse(&text, &origin) {
                Ok(_) => return Ok(text),
                Err(LoadError::Examples { report, .. }) => {
                    let mut dropped = false;
                    for failure in report.failures() {
                        dropped |= self.drop_example(
                            &failure.rule,
                            failure.effect,
                            &failure.example,
                            failure.must_match,
                        );
                        self.note(texts::import_example_dropped(
                            &failure.rule,
                            &failure.example,
                            failure.got.name(),
                            failure.decided_by.as_deref(),
                        ));
                    }
                    if !dropped {
                        return Err(ImportError::Made(LoadError::Examples {
                            path: origin,
                            report,
                        }));
                    }
                }
                Err(error) => return Err(ImportError::Made(error)),
            }
        }
    }

    fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Adds `made` unless it does not parse as an xdev rule (then a note)
    /// or the same rule is in the same list already (its examples join).
    fn add_rule(&mut self, path: &Path, made: Made) {
        let alone = serde_json::json!({ "permissions": { made.effect.name(): [made.rule] } });
        if let Err(error) = Policy::parse(&alone.to_string(), path) {
            self.note(texts::import_rule_refused(
                path,
                &made.rule,
                &error.to_string(),
            ));
            return;
        }
        let twin = self
            .rules
            .iter_mut()
            .find(|rule| rule.rule == made.rule && rule.effect == made.effect);
        match twin {
            Some(twin) => {
                twin.matches.extend(made.matches);
                twin.not_matches.extend(made.not_matches);
                if twin.reason.is_none() {
                    twin.reason = made.reason;
                }
            }
            None => self.rules.push(made),
        }
    }

    fn drop_example(
        &mut self,
        rule: &str,
        effect: Effect,
        example: &str,
        must_match: bool,
    ) -> bool {
        let Some(made) = self
            .rules
            .iter_mut()
            .find(|made| made.rule == rule && made.effect == effect)
        else {
            return false;
        };
        let list = if must_match {
            &mut made.matches
        } else {
            &mut made.not_matches
        };
        let before = list.len();
        list.retain(|written| written != example);
        list.len() != before
    }

    /// The file as JSON text: `permissions` with the lists that hold a
    /// rule, a rule with no reason and no examples as its string, a rule
    /// object's `rule` first.
    fn render(&self) -> String {
        let list = |effect: Effect| -> Vec<Entry<'_>> {
            self.rules
                .iter()
                .filter(|made| made.effect == effect)
                .map(Made::entry)
                .collect()
        };
        let file = File {
            permissions: Lists {
                allow: list(Effect::Allow),
                ask: list(Effect::Ask),
                deny: list(Effect::Deny),
            },
        };
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The rules file as written.
#[derive(Serialize)]
struct File<'a> {
    permissions: Lists<'a>,
}

#[derive(Serialize)]
struct Lists<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    allow: Vec<Entry<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ask: Vec<Entry<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    deny: Vec<Entry<'a>>,
}

/// A rule alone, or with its reason and examples.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Rule(&'a str),
    Object {
        rule: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
        #[serde(rename = "match", skip_serializing_if = "<[String]>::is_empty")]
        matches: &'a [String],
        #[serde(rename = "notMatch", skip_serializing_if = "<[String]>::is_empty")]
        not_matches: &'a [String],
    },
}

impl Made {
    fn plain(rule: &str, effect: Effect) -> Made {
        Made {
            rule: rule.trim().to_string(),
            effect,
            reason: None,
            matches: Vec::new(),
            not_matches: Vec::new(),
        }
    }

    fn entry(&self) -> Entry<'_> {
        if self.reason.is_none() && self.matches.is_empty() && self.not_matches.is_empty() {
            return Entry::Rule(&self.rule);
        }
        Entry::Object {
            rule: &self.rule,
            reason: self.reason.as_deref(),
            matches: &self.matches,
            not_matches: &self.not_matches,
        }
    }
}

/// A Codex rule as `Bash(<prefix> *)` rules, one per alternative prefix;
/// a `match` example goes to the rule whose prefix it starts with, a
/// `not_match` one to each (none of them may decide it). The error says
/// why the rule cannot be written as xdev rules.
fn prefix_rules(rule: &PrefixRule) -> Result<Vec<Made>, String> {
    let mut prefixes: Vec<Vec<String>> = vec![Vec::new()];
    for alternatives in &rule.pattern {
        prefixes = prefixes
            .iter()
            .flat_map(|prefix| {
                alternatives.iter().map(move |word| {
                    let mut longer = prefix.clone();
                    longer.push(word.clone());
                    longer
                })
            })
            .collect();
    }
    let mut made = Vec::new();
    for prefix in &prefixes {
        let words = prefix
            .iter()
            .map(|word| pattern_word(word))
            .collect::<Result<Vec<_>, _>>()?;
        made.push(Made {
            rule: format!("Bash({} *)", words.join(" ")),
            effect: rule.effect,
            reason: rule.justification.clone(),
            matches: Vec::new(),
            not_matches: rule.not_matches.iter().map(command_line).collect(),
        });
    }
    for example in &rule.matches {
        let line = command_line(example);
        let words = pattern_words(&line);
        let at = prefixes
            .iter()
            .position(|prefix| words.starts_with(prefix))
            .unwrap_or(0);
        made[at].matches.push(line);
    }
    Ok(made)
}

/// A pattern word as a Bash rule writes it: as it is when it holds
/// nothing a rule reads specially, else quoted. A `*` cannot be written:
/// in a rule it is a wildcard, in Codex's pattern a literal.
fn pattern_word(word: &str) -> Result<String, String> {
    if word.contains('*') {
        return Err(texts::import_codex_star(word));
    }
    let plain = !word.is_empty()
        && !word
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')'));
    if plain {
        Ok(word.to_string())
    } else if !word.contains('"') {
        Ok(format!("\"{word}\""))
    } else if !word.contains('\'') {
        Ok(format!("'{word}'"))
    } else {
        Err(texts::import_codex_quotes(word))
    }
}

/// An example as one command line: a string as it is, tokens quoted for
/// the shell where they need it.
fn command_line(example: &Example) -> String {
    match example {
        Example::Line(line) => line.clone(),
        Example::Tokens(tokens) => tokens
            .iter()
            .map(|token| shell_word(token))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// `token` as one shell word.
fn shell_word(token: &str) -> String {
    let plain = !token.is_empty()
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        token.to_string()
    } else {
        format!("'{}'", token.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Call;

    fn import_codex(text: &str) -> (Policy, Vec<String>) {
        let mut import = Import::new();
        import
            .add_codex(text, Path::new("/home/dev/.codex/rules/default.rules"))
            .expect("parses");
        let made = import.finish(Path::new("/home/dev")).expect("loads");
        let policy = Policy::parse(&made, Path::new("/home/dev/policy.json")).expect("loads");
        (policy, import.notes().to_vec())
    }

    #[test]
    fn alternatives_expand_and_examples_follow_their_prefix() {
        let (policy, notes) = import_codex(
            r#"prefix_rule(
                pattern = ["git", ["push", "fetch"]],
                decision = "prompt",
                justification = "talks to the remote",
                match = [["git", "push", "origin", "main"], "git fetch --all"],
                not_match = ["git status"],
            )
            prefix_rule(pattern = ["cargo", "test"], match = ["cargo test --release"])
            prefix_rule(pattern = ["rm", "-rf"], decision = "forbidden")"#,
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(policy.rule_count(), 4);
        assert_eq!(policy.test_examples().results.len(), 5);
        let ask = policy.evaluate(&Call::bash("git push origin main"));
        assert_eq!(ask.effect, Effect::Ask);
        assert_eq!(ask.reason.as_deref(), Some("talks to the remote"));
        assert_eq!(
            policy.evaluate(&Call::bash("cargo test")).effect,
            Effect::Allow
        );
        assert_eq!(
            policy.evaluate(&Call::bash("rm -rf /")).effect,
            Effect::Deny
        );
    }

    #[test]
    fn what_cannot_be_written_is_said() {
        let (policy, notes) = import_codex(
            r#"prefix_rule(pattern = ["ls", "*"])
            prefix_rule(pattern = ["echo", "it's \"x\""])
            prefix_rule(pattern = ["git", "log"], match = ["git log"])
            prefix_rule(pattern = ["git"], decision = "forbidden", not_match = ["git log"])"#,
        );
        assert_eq!(policy.rule_count(), 2);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(notes[0].contains("default.rules:1:"), "{}", notes[0]);
        assert!(notes[1].contains("default.rules:2:"), "{}", notes[1]);
    }

    #[test]
    fn claude_settings_keep_their_rules_and_drop_the_rest() {
        let mut import = Import::new();
        import
            .add_claude(
                r#"{"model": "opus", "permissions": {"allow": ["Bash(npm run test:*)", "Read(src/**)"],
                    "deny": ["Read(./.env)", "Bash(("], "defaultMode": "acceptEdits"}}"#,
                Path::new("/work/app/.claude/settings.json"),
            )
            .expect("reads");
        let made = import.finish(Path::new("/work/app")).expect("loads");
        let policy = Policy::parse(&made, Path::new("/work/app/policy.json")).expect("loads");
        assert_eq!(policy.rule_count(), 3);
        assert_eq!(import.notes().len(), 3, "{:?}", import.notes());
    }
}
