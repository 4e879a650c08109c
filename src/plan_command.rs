//! The commands `plan/ctl` takes, as one type for both sides: the client
//! writes a [`PlanCommand`] with `Display`, the mount reads it back with
//! `FromStr`.
//!
//! ```
//! use xdev::plan_command::PlanCommand;
//!
//! use xdev::plan_desk::ContinueMode;
//!
//! let command: PlanCommand = "approve  looks good ".parse().expect("a command");
//! assert_eq!(command, PlanCommand::Approve { feedback: Some("looks good".into()), mode: None });
//! assert_eq!(command.to_string(), "approve looks good");
//! let command: PlanCommand = "approve --mode acceptEdits".parse().expect("a command");
//! assert_eq!(command, PlanCommand::Approve { feedback: None, mode: Some(ContinueMode::AcceptEdits) });
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::plan_desk::ContinueMode;
use crate::texts;

/// One line of `plan/ctl`: `enter`, `exit`, `approve [--mode MODE]
/// [feedback]` or `refine <feedback>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanCommand {
    /// Turn plan mode on.
    Enter,
    /// Turn plan mode off (cancels a review under way).
    Exit,
    /// Approve the plan under review, with optional feedback and the mode
    /// the agent continues in.
    Approve {
        /// Feedback for the implementer.
        feedback: Option<String>,
        /// The mode the agent continues in.
        mode: Option<ContinueMode>,
    },
    /// Ask for a better plan, with the reviewer's feedback.
    Refine(String),
}

impl fmt::Display for PlanCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanCommand::Enter => f.write_str("enter"),
            PlanCommand::Exit => f.write_str("exit"),
            PlanCommand::Approve { feedback, mode } => {
                f.write_str("approve")?;
                if let Some(mode) = mode {
                    write!(f, " --mode {mode}")?;
                }
                if let Some(feedback) = feedback {
                    write!(f, " {feedback}")?;
                }
                Ok(())
            }
            PlanCommand::Refine(feedback) => write!(f, "refine {feedback}"),
        }
    }
}

impl FromStr for PlanCommand {
    type Err = Error;

    /// Reads one command; surrounding whitespace, and the whitespace
    /// between the command and its feedback, do not count. An unknown
    /// command, or `refine` without feedback, is `EINVAL`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (command, argument) = match text.split_once(char::is_whitespace) {
            Some((command, argument)) => (command, argument.trim()),
            None => (text, ""),
        };
        match command {
            "enter" | "exit" if !argument.is_empty() => Err(Error::InvalidRequest(
                texts::plan_command_takes_nothing_more(command, argument),
            )),
            "enter" => Ok(PlanCommand::Enter),
            "exit" => Ok(PlanCommand::Exit),
            "approve" => approve(argument),
            "refine" if argument.is_empty() => {
                Err(Error::InvalidRequest(texts::REFINE_NEEDS_FEEDBACK.into()))
            }
            "refine" => Ok(PlanCommand::Refine(argument.to_string())),
            _ => Err(Error::InvalidRequest(texts::unknown_plan_command(command))),
        }
    }
}

/// `approve [--mode MODE] [feedback]`, from what follows `approve`.
fn approve(argument: &str) -> Result<PlanCommand, Error> {
    let (mode, feedback) = match argument.strip_prefix("--mode") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
            let rest = rest.trim_start();
            let (mode, feedback) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (Some(mode.parse::<ContinueMode>()?), feedback.trim())
        }
        _ => (None, argument),
    };
    Ok(PlanCommand::Approve {
        feedback: (!feedback.is_empty()).then(|| feedback.to_string()),
        mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_back_as_they_are_written() {
        for command in [
            PlanCommand::Enter,
            PlanCommand::Exit,
            PlanCommand::Approve {
                feedback: None,
                mode: None,
            },
            PlanCommand::Approve {
                feedback: Some("looks good".into()),
                mode: None,
            },
            PlanCommand::Approve {
                feedback: Some("looks good".into()),
                mode: Some(ContinueMode::DontAsk),
            },
            PlanCommand::Refine("split step 2".into()),
        ] {
            assert_eq!(command.to_string().parse::<PlanCommand>(), Ok(command));
        }
        assert_eq!(PlanCommand::Enter.to_string(), "enter");
        let approve = |feedback: Option<&str>, mode| PlanCommand::Approve {
            feedback: feedback.map(str::to_string),
            mode,
        };
        assert_eq!(approve(None, None).to_string(), "approve");
        assert_eq!(
            approve(Some("looks good"), None).to_string(),
            "approve looks good"
        );
        assert_eq!(
            approve(Some("go"), Some(ContinueMode::AcceptEdits)).to_string(),
            "approve --mode acceptEdits go"
        );
        assert_eq!(
            PlanCommand::Refine("more".into()).to_string(),
            "refine more"
        );
    }

    #[test]
    fn whitespace_around_and_between_does_not_count() {
        assert_eq!(" exit\n".parse(), Ok(PlanCommand::Exit));
        assert_eq!(
            "approve \n".parse(),
            Ok(PlanCommand::Approve {
                feedback: None,
                mode: None
            })
        );
        assert_eq!(
            "refine\t a  b \n".parse(),
            Ok(PlanCommand::Refine("a  b".into()))
        );
    }

    fn refusal(text: &str) -> (i32, String) {
        let error = text.parse::<PlanCommand>().expect_err(text);
        (error.errno(), error.to_string())
    }

    #[test]
    fn every_refusal_is_einval_with_its_text() {
        let needs = "refine needs the reviewer's feedback: refine <feedback>";
        assert_eq!(refusal("refine"), (libc::EINVAL, needs.to_string()));
        assert_eq!(refusal(" refine  \n"), (libc::EINVAL, needs.to_string()));
        let unknown = |command: &str| {
            format!("Unknown plan command {command:?}: use enter, exit, approve [feedback] or refine <feedback>.")
        };
        assert_eq!(refusal("go now"), (libc::EINVAL, unknown("go")));
        assert_eq!(refusal(""), (libc::EINVAL, unknown("")));
        assert_eq!(refusal("APPROVE"), (libc::EINVAL, unknown("APPROVE")));
    }

    #[test]
    fn enter_and_exit_refuse_trailing_text_rather_than_ignore_it() {
        let (errno, text) = refusal("enter\nexit");
        assert_eq!(errno, libc::EINVAL);
        assert_eq!(
            text,
            "enter takes nothing after it, and \"exit\" followed; write one command per write."
        );
        assert_eq!(refusal("exit now").0, libc::EINVAL);
        assert_eq!(
            "refine add tests\nand docs".parse(),
            Ok(PlanCommand::Refine("add tests\nand docs".into())),
            "feedback may span lines"
        );
    }

    #[test]
    fn approve_takes_a_mode_the_agents_have_and_refuses_others() {
        assert_eq!(
            "approve --mode dontAsk ship it".parse(),
            Ok(PlanCommand::Approve {
                feedback: Some("ship it".into()),
                mode: Some(ContinueMode::DontAsk)
            })
        );
        let (errno, text) = refusal("approve --mode yolo");
        assert_eq!(errno, libc::EINVAL);
        assert_eq!(
            text,
            "Unknown mode \"yolo\": use acceptEdits, auto, bypassPermissions, default, dontAsk or plan."
        );
        assert_eq!(refusal("approve --mode").0, libc::EINVAL);
        assert_eq!(
            "approve --moderate".parse(),
            Ok(PlanCommand::Approve {
                feedback: Some("--moderate".into()),
                mode: None
            }),
            "only the --mode word takes a mode"
        );
    }
}
