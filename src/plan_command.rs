//! The commands `plan/ctl` takes, as one type for both sides: the client
//! writes a [`PlanCommand`] with `Display`, the mount reads it back with
//! `FromStr`.
//!
//! ```
//! use xdev::plan_command::PlanCommand;
//!
//! let command: PlanCommand = "approve  looks good ".parse().expect("a command");
//! assert_eq!(command, PlanCommand::Approve(Some("looks good".into())));
//! assert_eq!(command.to_string(), "approve looks good");
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::texts;

/// One line of `plan/ctl`: `enter`, `exit`, `approve [feedback]` or
/// `refine <feedback>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanCommand {
    /// Turn plan mode on.
    Enter,
    /// Turn plan mode off (cancels a review under way).
    Exit,
    /// Approve the plan under review, with optional feedback.
    Approve(Option<String>),
    /// Ask for a better plan, with the reviewer's feedback.
    Refine(String),
}

impl fmt::Display for PlanCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanCommand::Enter => f.write_str("enter"),
            PlanCommand::Exit => f.write_str("exit"),
            PlanCommand::Approve(None) => f.write_str("approve"),
            PlanCommand::Approve(Some(feedback)) => write!(f, "approve {feedback}"),
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
            "approve" => Ok(PlanCommand::Approve(
                (!argument.is_empty()).then(|| argument.to_string()),
            )),
            "refine" if argument.is_empty() => {
                Err(Error::InvalidRequest(texts::REFINE_NEEDS_FEEDBACK.into()))
            }
            "refine" => Ok(PlanCommand::Refine(argument.to_string())),
            _ => Err(Error::InvalidRequest(texts::unknown_plan_command(command))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_read_back_as_they_are_written() {
        for command in [
            PlanCommand::Enter,
            PlanCommand::Exit,
            PlanCommand::Approve(None),
            PlanCommand::Approve(Some("looks good".into())),
            PlanCommand::Refine("split step 2".into()),
        ] {
            assert_eq!(command.to_string().parse::<PlanCommand>(), Ok(command));
        }
        assert_eq!(PlanCommand::Enter.to_string(), "enter");
        assert_eq!(PlanCommand::Approve(None).to_string(), "approve");
        assert_eq!(
            PlanCommand::Approve(Some("looks good".into())).to_string(),
            "approve looks good"
        );
        assert_eq!(
            PlanCommand::Refine("more".into()).to_string(),
            "refine more"
        );
    }

    #[test]
    fn whitespace_around_and_between_does_not_count() {
        assert_eq!(" exit\n".parse(), Ok(PlanCommand::Exit));
        assert_eq!("approve \n".parse(), Ok(PlanCommand::Approve(None)));
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
}
