//! `xdev policy`: decide one call by a rules file and say why, part by
//! part (`check`); run a rules file's examples (`test`); reload a mount's
//! rules (`reload`); make a rules file from an agent's own rules
//! (`import`). Thin over [`xdev::policy`] and [`xdev::client`]: this file
//! turns arguments into calls and prints what comes back.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum, ValueHint};
use serde_json::Value;
use xdev::client::{self, ClientError};
use xdev::policy::{
    Call, Effect, Evaluation, ExampleReport, Import, ImportFormat, LoadError, Policy,
};
use xdev::texts;

use super::{answer, print, MountArg};

/// The environment variable that names the rules file `xdev policy check`
/// uses when `--policy` is not given.
pub(crate) const POLICY_ENV: &str = "XDEV_POLICY";

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyAction {
    /// Decide one tool call by the rules, and say why, part by part.
    ///
    /// TOOL is the tool's name as the agent sends it (`Bash`, `Write`,
    /// `Edit`, `Read`, `WebFetch`, `mcp__server__tool`, Codex's `shell`,
    /// `exec_command`, `apply_patch`). INPUT is the command of a shell
    /// tool, the path of a file tool, the patch of `apply_patch`, the URL
    /// of `WebFetch`, or the tool's input as a JSON object when it starts
    /// with `{` (a shell command that starts with `{` and is not JSON is
    /// taken as the command). Prints the decision, then each part (each
    /// simple command after unwrapping, each redirection as a write) with
    /// its decision and the rule that decided it, or why none could.
    ///
    /// The rules file is --policy FILE, else $XDEV_POLICY, else the file
    /// the mount's `policy` file names (--mount, else $XDEV_DIR, else
    /// /xdev). Exit codes: 0 allow, 10 ask, 11 deny, 1 the rules file
    /// does not load, 2 usage (no rules file found, an INPUT that is not
    /// the tool's).
    Check {
        /// The rules file.
        #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
        policy: Option<PathBuf>,
        /// Print the evaluation as one JSON object (decision, rule,
        /// reason, why, and each part's).
        #[arg(long)]
        json: bool,
        /// The directory the call runs in: relative paths are relative to
        /// it [default: the current directory].
        #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
        cwd: Option<PathBuf>,
        /// The tool's name.
        #[arg(value_name = "TOOL")]
        tool: String,
        /// The tool's input (a command, a path, a URL, or JSON); a tool
        /// judged by its name alone (`mcp__s__t`) needs none.
        #[arg(value_name = "INPUT", allow_hyphen_values = true)]
        input: Option<String>,
    },
    /// Run every example of a rules file's rules and print each result.
    ///
    /// Prints one line per example (pass or FAIL, the rule, the example,
    /// what the rules decided and by which rule), then a summary. A file
    /// whose examples fail does not load into a daemon; this lists every
    /// failure, not only the first. Exit codes: 0 all pass (or there are
    /// none), 1 an example fails or the file does not load.
    Test {
        /// The rules file.
        #[arg(value_name = "FILE", value_hint = ValueHint::FilePath)]
        file: PathBuf,
    },
    /// Load the mount's rules file again (write `reload` to its `policy`
    /// file) and print the result.
    ///
    /// Exit codes: 0 reloaded; 1 with `xdev: ERRNO: message` when the file
    /// does not load (EINVAL: the rules in force stay) or the mount has no
    /// policy.
    Reload {
        /// The mount [default: --mount, else $XDEV_DIR, else /xdev].
        #[arg(value_name = "DIR", value_hint = ValueHint::DirPath)]
        dir: Option<PathBuf>,
    },
    /// Make one xdev rules file (on stdout) from Claude Code settings and
    /// Codex execpolicy rules files.
    ///
    /// A Claude Code settings.json keeps its `permissions` allow, ask and
    /// deny rules as they are; every other key configures Claude Code and
    /// is left out, with a line on stderr. A Codex `.rules` file's
    /// `prefix_rule(...)` calls become `Bash(<prefix> *)` rules, one per
    /// alternative of the pattern: `prompt` is ask, `forbidden` deny, the
    /// justification the reason, `match`/`not_match` the examples. What
    /// cannot be mapped is left out and said on stderr. The file printed
    /// loads and its examples pass. Exit codes: 0 done, 1 a file cannot be
    /// read (a Codex file holding anything but prefix_rule calls: its line
    /// is named).
    Import {
        /// The files' format [default: codex for *.rules, *.codexpolicy
        /// and *.execpolicy, else claude].
        #[arg(long, value_enum, value_name = "FORMAT")]
        from: Option<ImportFrom>,
        /// The files to import, in order.
        #[arg(required = true, value_name = "FILE", value_hint = ValueHint::FilePath)]
        files: Vec<PathBuf>,
    },
}

/// `xdev policy import --from`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ImportFrom {
    /// Claude Code's settings.json.
    Claude,
    /// Codex's execpolicy .rules files.
    Codex,
}

impl From<ImportFrom> for ImportFormat {
    fn from(from: ImportFrom) -> Self {
        match from {
            ImportFrom::Claude => ImportFormat::Claude,
            ImportFrom::Codex => ImportFormat::Codex,
        }
    }
}

/// Runs `xdev policy ACTION`.
pub(crate) fn run(action: PolicyAction, target: &MountArg) -> Result<u8, ClientError> {
    match action {
        PolicyAction::Check {
            policy,
            json,
            cwd,
            tool,
            input,
        } => {
            let call = call_of(&tool, input.as_deref(), cwd)?;
            let file = rules_file(policy, target)?;
            check(&file, &call, json)
        }
        PolicyAction::Test { file } => test(&file),
        PolicyAction::Reload { dir } => {
            let dir = match dir {
                Some(dir) => {
                    client::check_mount(&dir)?;
                    dir
                }
                None => target.dir()?,
            };
            answer(client::write_device(&dir.join("policy"), b"reload")?)
        }
        PolicyAction::Import { from, files } => import(from, &files),
    }
}

/// The exit code of a decision.
fn exit_code(effect: Effect) -> u8 {
    match effect {
        Effect::Allow => 0,
        Effect::Ask => client::EXIT_POLICY_ASK,
        Effect::Deny => client::EXIT_POLICY_DENY,
    }
}

/// The call `xdev policy check TOOL INPUT` asks about.
fn call_of(tool: &str, input: Option<&str>, cwd: Option<PathBuf>) -> Result<Call, ClientError> {
    let text = input.unwrap_or("");
    let natural = Call::from_text(tool, text);
    let call = if text.trim_start().starts_with('{') {
        match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => Call::new(tool, object),
            Ok(_) => {
                return Err(ClientError::BadArgument(
                    texts::POLICY_CHECK_INPUT_NOT_OBJECT.into(),
                ))
            }
            // A shell's brace group (`{ make; }`) is a command.
            Err(error) => natural.ok_or_else(|| {
                ClientError::BadArgument(texts::policy_check_input_not_json(
                    tool,
                    &error.to_string(),
                ))
            })?,
        }
    } else {
        match (natural, input) {
            (Some(call), Some(_)) => call,
            (Some(_), None) => {
                return Err(ClientError::BadArgument(texts::policy_check_needs_input(
                    tool,
                )))
            }
            (None, None) => Call::new(tool, Value::Object(serde_json::Map::new())),
            (None, Some(_)) => {
                return Err(ClientError::BadArgument(
                    texts::policy_check_input_not_json(tool, texts::POLICY_CHECK_INPUT_NOT_OBJECT),
                ))
            }
        }
    };
    let cwd = match cwd {
        Some(cwd) => Some(cwd),
        None => std::env::current_dir().ok(),
    };
    Ok(match cwd {
        Some(cwd) => call.in_dir(cwd),
        None => call,
    })
}

/// The rules file to check with: `--policy`, else `$XDEV_POLICY`, else
/// the one the mount's `policy` file names.
fn rules_file(policy: Option<PathBuf>, target: &MountArg) -> Result<PathBuf, ClientError> {
    if let Some(file) = policy {
        return Ok(file);
    }
    if let Some(file) = std::env::var_os(POLICY_ENV).filter(|file| !file.is_empty()) {
        return Ok(PathBuf::from(file));
    }
    let dir = client::mount_dir(target.mount.as_deref());
    if client::check_mount(&dir).is_err() {
        return Err(ClientError::BadArgument(texts::POLICY_CHECK_NO_FILE.into()));
    }
    let status = dir.join("policy");
    let Ok(text) = client::read_text(&status) else {
        return Err(ClientError::BadArgument(texts::POLICY_CHECK_NO_FILE.into()));
    };
    text.lines()
        .find_map(|line| line.strip_prefix("file: "))
        .map(PathBuf::from)
        .ok_or_else(|| ClientError::Protocol(texts::policy_file_unnamed(&status)))
}

/// Loads `file`, or says why not on stderr (`None`).
fn load(file: &Path) -> Option<Policy> {
    match Policy::load(file) {
        Ok(policy) => {
            for warning in policy.warnings() {
                complain(warning);
            }
            Some(policy)
        }
        Err(error) => {
            complain(&error.to_string());
            None
        }
    }
}

/// One line on stderr, as `xdev` says its errors.
fn complain(line: &str) {
    let _ = writeln!(std::io::stderr(), "xdev: {line}");
}

/// `xdev policy check`.
fn check(file: &Path, call: &Call, json: bool) -> Result<u8, ClientError> {
    let Some(policy) = load(file) else {
        return Ok(client::EXIT_ERROR);
    };
    let evaluation = policy.evaluate(call);
    let text = if json {
        let mut line = serde_json::to_string(&evaluation)
            .map_err(|error| ClientError::Protocol(error.to_string()))?;
        line.push('\n');
        line
    } else {
        describe(&evaluation)
    };
    print(&text)?;
    Ok(exit_code(evaluation.effect))
}

/// The evaluation as a person reads it: the decision, its reason, then
/// each part.
fn describe(evaluation: &Evaluation) -> String {
    let mut text = texts::policy_check_decision(
        evaluation.effect.name(),
        &evaluation.why,
        evaluation.reason.as_deref(),
    );
    text.push('\n');
    for part in &evaluation.parts {
        let why = if part.rule.is_none() && part.why == texts::POLICY_NO_RULE {
            texts::POLICY_CHECK_NO_RULE
        } else {
            &part.why
        };
        text.push_str(&texts::policy_check_part(
            part.effect.name(),
            &part.text,
            part.rule.as_deref(),
            why,
        ));
        text.push('\n');
    }
    text
}

/// `xdev policy test`: every example's result, also of a file that does
/// not load because some fail.
fn test(file: &Path) -> Result<u8, ClientError> {
    let report = match Policy::load(file) {
        Ok(policy) => policy.test_examples(),
        Err(LoadError::Examples { report, .. }) => report,
        Err(error) => {
            complain(&error.to_string());
            return Ok(client::EXIT_ERROR);
        }
    };
    print(&report_text(file, &report))?;
    Ok(if report.passed() {
        0
    } else {
        client::EXIT_ERROR
    })
}

fn report_text(file: &Path, report: &ExampleReport) -> String {
    let mut text = String::new();
    for result in &report.results {
        text.push_str(&texts::policy_test_line(
            result.passed,
            result.effect.name(),
            &result.rule,
            result.must_match,
            &result.example,
            result.got.name(),
            result.decided_by.as_deref(),
        ));
        text.push('\n');
    }
    let failed = report.failures().count();
    text.push_str(&texts::policy_test_summary(
        file,
        report.results.len(),
        failed,
    ));
    text.push('\n');
    text
}

/// `xdev policy import`.
fn import(from: Option<ImportFrom>, files: &[PathBuf]) -> Result<u8, ClientError> {
    let mut import = Import::new();
    for file in files {
        let format = from.map_or_else(|| ImportFormat::of_path(file), ImportFormat::from);
        if let Err(error) = import.add_file(file, format) {
            complain(&error.to_string());
            return Ok(client::EXIT_ERROR);
        }
    }
    let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let made = import.finish(&dir);
    for note in import.notes() {
        complain(note);
    }
    match made {
        Ok(text) => print(&text),
        Err(error) => {
            complain(&error.to_string());
            Ok(client::EXIT_ERROR)
        }
    }
}
