//! `xdev hook`'s usual command lines, read without the CLI's parser.
//!
//! An agent runs its hook once for every tool call, so the hook's start-up
//! is most of what it costs; building the CLI's whole command tree to
//! read `hook --mount DIR` was a third of the instructions the process ran.
//! [`plain_hook_args`] reads the command lines a hook's configuration
//! usually holds (each option at most once, every value one the CLI
//! accepts) and answers `None` for anything else: then the CLI's parser
//! reads it, with its help, its errors and their exit codes.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::ValueEnum;

use super::{Agent, HookOptions, OnTimeout};

/// The options of a plain `xdev hook` command line (the deadline is the
/// default one: a line that gives `--deadline` is left to the CLI).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainHookArgs {
    /// `--mount DIR`.
    pub mount: Option<PathBuf>,
    /// `--agent AGENT`.
    pub agent: Option<Agent>,
    /// `--on-timeout WHAT`.
    pub on_timeout: OnTimeout,
    /// `--strict`.
    pub strict: bool,
    /// `--plan-dir DIR`.
    pub plan_dir: Option<PathBuf>,
    /// `--agent-may-decide`.
    pub agent_may_decide: bool,
}

impl PlainHookArgs {
    /// The hook's options these ask for: the mount from `--mount`, else
    /// `$XDEV_DIR`, else `/xdev`, and the default deadline.
    pub fn into_options(self) -> HookOptions {
        HookOptions {
            mount: crate::client::mount_dir(self.mount.as_deref()),
            agent: self.agent,
            deadline: super::DEFAULT_DEADLINE,
            on_timeout: self.on_timeout,
            strict: self.strict,
            plan_dir: self.plan_dir,
            agent_may_decide: self.agent_may_decide,
        }
    }
}

/// Reads `args` (the words after the program's name) when they are
/// `hook` and options the hook takes, each once, with valid values;
/// `None` otherwise.
pub fn plain_hook_args(args: impl IntoIterator<Item = OsString>) -> Option<PlainHookArgs> {
    let words: Vec<String> = args
        .into_iter()
        .map(OsString::into_string)
        .collect::<Result<_, _>>()
        .ok()?;
    let (first, rest) = words.split_first()?;
    if first != "hook" {
        return None;
    }
    let mut read = PlainHookArgs::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let (name, attached) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (word.as_str(), None),
        };
        if seen.contains(&name) {
            return None;
        }
        seen.push(name);
        match name {
            "--strict" if attached.is_none() => read.strict = true,
            "--agent-may-decide" if attached.is_none() => read.agent_may_decide = true,
            "--mount" => read.mount = Some(value(attached, &mut words)?.into()),
            "--plan-dir" => read.plan_dir = Some(value(attached, &mut words)?.into()),
            "--agent" => {
                read.agent = Some(Agent::from_str(&value(attached, &mut words)?, false).ok()?)
            }
            "--on-timeout" => {
                read.on_timeout = OnTimeout::from_str(&value(attached, &mut words)?, false).ok()?
            }
            _ => return None,
        }
    }
    Some(read)
}

/// An option's value: attached (`--mount=DIR`) or the next word; one the
/// CLI would take (not empty, not an option).
fn value<'a>(
    attached: Option<String>,
    words: &mut impl Iterator<Item = &'a String>,
) -> Option<String> {
    let value = match attached {
        Some(value) => value,
        None => words.next()?.clone(),
    };
    (!value.is_empty() && !value.starts_with('-')).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<PlainHookArgs> {
        plain_hook_args(
            line.split(' ')
                .filter(|word| !word.is_empty())
                .map(OsString::from),
        )
    }

    #[test]
    fn usual_lines_are_read() {
        assert_eq!(read("hook"), Some(PlainHookArgs::default()));
        let full = read("hook --mount /x --agent codex --on-timeout deny --strict --plan-dir /p --agent-may-decide")
            .expect("read");
        assert_eq!(full.mount, Some(PathBuf::from("/x")));
        assert_eq!(full.agent, Some(Agent::Codex));
        assert_eq!(full.on_timeout, OnTimeout::Deny);
        assert!(full.strict && full.agent_may_decide);
        assert_eq!(full.plan_dir, Some(PathBuf::from("/p")));
        assert_eq!(
            read("hook --mount=/y").and_then(|args| args.mount),
            Some("/y".into())
        );
    }

    #[test]
    fn anything_else_is_left_to_the_cli() {
        for line in [
            "",
            "status",
            "--mount /x hook",
            "hook --help",
            "hook -h",
            "hook --deadline 5s",
            "hook --agent gemini",
            "hook --on-timeout maybe",
            "hook --mount",
            "hook --mount --strict",
            "hook --mount=",
            "hook --strict --strict",
            "hook --mount /a --mount /b",
            "hook --strict=yes",
            "hook extra",
            "hook --bogus",
        ] {
            assert_eq!(read(line), None, "{line:?}");
        }
        let not_utf8 = OsString::from(String::from_utf8_lossy(b"\xff").into_owned());
        assert!(
            plain_hook_args([OsString::from("hook"), OsString::from("--mount"), not_utf8])
                .is_some()
        );
        use std::os::unix::ffi::OsStringExt;
        let raw = OsString::from_vec(vec![0xff]);
        assert_eq!(
            plain_hook_args([OsString::from("hook"), OsString::from("--mount"), raw]),
            None
        );
    }
}
