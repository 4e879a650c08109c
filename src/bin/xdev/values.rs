//! The value parsers of `xdev`'s flags. Each checks a value by the rule the
//! mount (or the stage protocol) holds it to, so a bad one is a usage error
//! in the flag's own words (exit 2) before any mount is looked for, and
//! before a name becomes part of a path: `--session ..` must never reach
//! `sessions/../resolve`, which is the root's device.

use std::ffi::OsStr;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use xdev::safe_text::{path_name_problem, NameProblem};
use xdev::stage_protocol::{is_stage_deadline, MAX_DEADLINE};
use xdev::texts;

/// The largest process id Linux hands out (`PID_MAX_LIMIT` on 64-bit).
const PID_MAX_LIMIT: i32 = 4 * 1024 * 1024;

/// `--id ID`: a name `pending/` could list.
pub(crate) fn pending_id() -> NameParser {
    NameParser(texts::not_a_pending_id)
}

/// `--session SESSION`: a name `sessions/` could list.
pub(crate) fn session_dir() -> NameParser {
    NameParser(texts::not_a_session_dir)
}

/// A flag whose value is a name the mount lists, refused (with the text
/// the function makes of the rule it breaks) unless it is one. Unlike a
/// plain value parser's, its error shows the value escaped: a name is
/// refused for holding control characters, which must not reach the
/// terminal as they are.
#[derive(Clone, Copy)]
pub(crate) struct NameParser(fn(NameProblem) -> String);

impl TypedValueParser for NameParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        let value = value.to_string_lossy();
        match path_name_problem(&value) {
            None => Ok(value.into_owned()),
            Some(problem) => {
                let flag = arg.map(ToString::to_string).unwrap_or_default();
                let why = (self.0)(problem);
                let message = format!(
                    "invalid value '{}' for '{flag}': {why}\n",
                    value.escape_debug()
                );
                Err(clap::Error::raw(ErrorKind::ValueValidation, message).with_cmd(cmd))
            }
        }
    }
}

/// Any duration flag (`--grace`, `--timeout`): `300ms`, `30s`, `5m`, ...
pub(crate) fn duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value).map_err(texts::not_a_duration)
}

/// `--deadline` of `xdev stage` and `xdev hook`: a duration a stage request
/// may ask for (1 ms to 7 days).
pub(crate) fn stage_deadline(value: &str) -> Result<Duration, String> {
    let deadline = duration(value)?;
    if is_stage_deadline(deadline.as_millis()) {
        Ok(deadline)
    } else {
        Err(texts::deadline_flag_out_of_range(
            value,
            humantime::format_duration(MAX_DEADLINE),
        ))
    }
}

/// `xdev wait --pid PID`: a process id, which 0 and negative numbers are
/// not (`kill(2)` would take them for process groups).
pub(crate) fn process_id(value: &str) -> Result<i32, String> {
    let not_one = |why: &str| texts::not_a_process_id(why, PID_MAX_LIMIT);
    let pid: i64 = value
        .trim()
        .parse()
        .map_err(|_| not_one("it is not a number"))?;
    match i32::try_from(pid) {
        Ok(pid) if (1..=PID_MAX_LIMIT).contains(&pid) => Ok(pid),
        _ => Err(not_one(&format!("{pid} is out of range"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `xdev --session VALUE` parsed by a command whose flag uses `parser`.
    fn parse(parser: NameParser, value: &str) -> Result<String, String> {
        let flag = clap::Arg::new("session")
            .long("session")
            .value_name("SESSION")
            .value_parser(parser);
        clap::Command::new("xdev")
            .arg(flag)
            .try_get_matches_from(["xdev", "--session", value])
            .map(|matches| {
                matches
                    .get_one::<String>("session")
                    .cloned()
                    .unwrap_or_default()
            })
            .map_err(|error| error.to_string())
    }

    #[test]
    fn names_that_the_mount_never_lists_are_refused() {
        let long = "x".repeat(256);
        for bad in ["..", ".", "a/b", "", long.as_str(), "a\u{1}b"] {
            assert!(parse(pending_id(), bad).is_err(), "--id {bad:?}");
            let refused = parse(session_dir(), bad).expect_err(bad);
            assert!(refused.contains("xdev resolve --id <id>"), "{refused}");
        }
        assert_eq!(
            parse(pending_id(), "pending-action:edit:3").as_deref(),
            Ok("pending-action:edit:3")
        );
        assert_eq!(
            parse(session_dir(), "0b7c-41d2").as_deref(),
            Ok("0b7c-41d2")
        );
    }

    #[test]
    fn a_refused_name_reaches_the_terminal_escaped() {
        let refused = parse(session_dir(), "a\u{1b}[2Jb").expect_err("refused");
        assert!(!refused.contains('\u{1b}'), "{refused:?}");
        assert!(
            refused.contains("invalid value 'a\\u{1b}[2Jb' for '--session <SESSION>'"),
            "{refused}"
        );
    }

    #[test]
    fn deadlines_are_from_a_millisecond_to_seven_days() {
        assert_eq!(stage_deadline("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(stage_deadline("7d"), Ok(MAX_DEADLINE));
        for bad in ["10d", "0s", "500us", "7d 1ms"] {
            let refused = stage_deadline(bad).expect_err(bad);
            assert!(refused.contains("from 1ms to 7days"), "{bad}: {refused}");
        }
        assert!(stage_deadline("soon")
            .expect_err("soon")
            .starts_with("not a duration"));
    }

    #[test]
    fn process_ids_start_at_1() {
        assert_eq!(process_id("1"), Ok(1));
        assert_eq!(process_id("4194304"), Ok(4194304));
        for bad in ["0", "-1", "4194305", "99999999999", "abc", ""] {
            assert!(process_id(bad).is_err(), "{bad:?}");
        }
    }
}
