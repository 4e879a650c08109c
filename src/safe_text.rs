//! Names and texts that come from outside, made safe for a path and for a
//! line-oriented file.
//!
//! A source tool forms part of a preview's id, and the id is a directory
//! name under `pending/`: it must never hold `/` or NUL, or one preview makes
//! `ls pending` fail for everyone. Free text (labels, reasons, result texts)
//! is shown inside line-oriented files (`status`, `pending/<id>/label`, the
//! reminder): a newline or an escape sequence in it could forge a line such
//! as `plan mode: on`, so it is shown escaped there, one field on one line.
//!
//! The directories the mount lists (`pending/<id>/`, `sessions/<id>/`) and
//! every name a client turns into such a path follow one rule,
//! [`path_name_problem`]: a name that breaks it is neither listed nor
//! looked up by the mount, and refused by the `xdev` command before it
//! builds a path, so `--session ..` can never reach the root's devices.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The longest source tool name, in characters.
pub const MAX_SOURCE_TOOL: usize = 64;

/// The longest label a stage request may carry, in bytes of UTF-8.
pub const MAX_LABEL_BYTES: usize = 1024;

/// What a source tool name may be made of: `[A-Za-z0-9_.-]`.
pub fn is_source_tool_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Characters that are not printable text: control characters (C0, DEL,
/// C1), the Unicode line and paragraph separators (line breaks to many
/// readers), the bidirectional marks, embedding, override and isolate
/// controls (they make text display in another order than it reads), and
/// the invisible ones: zero-width space and non-joiner, word joiner and the
/// invisible operators, and the byte order mark (a label that looks like
/// another). The zero-width joiner stays: emoji sequences are made of it.
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'
                | '\u{200c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `c` as a message shows it: `'/'` when printable, else `U+001B`.
pub fn describe_char(c: char) -> String {
    if is_unprintable(c) {
        format!("U+{:04X}", c as u32)
    } else {
        format!("'{c}'")
    }
}

/// A source tool name safe for an id and a path, for names from trusted
/// in-process code (the stage protocol refuses bad names instead): each
/// character outside `[A-Za-z0-9_.-]` becomes `_`, the name is cut to
/// [`MAX_SOURCE_TOOL`] characters, and an empty name becomes `_`.
pub fn path_safe_source_tool(name: &str) -> Cow<'_, str> {
    let fits =
        !name.is_empty() && name.len() <= MAX_SOURCE_TOOL && name.chars().all(is_source_tool_char);
    if fits {
        return Cow::Borrowed(name);
    }
    let safe: String = name
        .chars()
        .take(MAX_SOURCE_TOOL)
        .map(|c| if is_source_tool_char(c) { c } else { '_' })
        .collect();
    if safe.is_empty() {
        Cow::Borrowed("_")
    } else {
        Cow::Owned(safe)
    }
}

/// The longest name the mount lists, in bytes: the longest file name on
/// Linux.
pub const MAX_NAME_BYTES: usize = 255;

/// The longest agent session id that names a directory under `sessions/`.
#[deprecated(note = "the one rule is `is_path_safe_name`'s: use `MAX_NAME_BYTES`")]
pub const MAX_SESSION_DIR_BYTES: usize = MAX_NAME_BYTES;

/// Why a name cannot be one the mount lists (see [`path_name_problem`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    /// It is empty.
    Empty,
    /// It is `.` or `..`: a path would go to this directory or its parent.
    Dots(&'static str),
    /// It is longer than [`MAX_NAME_BYTES`]; the field is its length.
    TooLong(usize),
    /// It holds a `/`: a path would go below it.
    Slash,
    /// It holds a character that is not printable text (see
    /// [`is_unprintable`]).
    Unprintable(char),
}

/// The one rule for the names the mount lists as directories, a pending id
/// under `pending/` or an agent session's id under `sessions/`, and so for
/// every value a client turns into such a path (`xdev resolve --id`,
/// `--session`): one line of printable text (the rule the stage protocol and
/// `xdev hook` already hold a session id to), 1 to [`MAX_NAME_BYTES`]
/// bytes, no `/`, and neither `.` nor `..`. `None` when `name` follows it.
/// A name is never rewritten to fit: a made-up name could be another
/// preview's or session's real one.
pub fn path_name_problem(name: &str) -> Option<NameProblem> {
    if name.is_empty() {
        return Some(NameProblem::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(NameProblem::TooLong(name.len()));
    }
    match name {
        "." => return Some(NameProblem::Dots(".")),
        ".." => return Some(NameProblem::Dots("..")),
        _ => {}
    }
    if name.contains('/') {
        return Some(NameProblem::Slash);
    }
    name.chars()
        .find(|c| is_unprintable(*c))
        .map(NameProblem::Unprintable)
}

/// Whether `name` can be a directory the mount lists (see
/// [`path_name_problem`]).
pub fn is_path_safe_name(name: &str) -> bool {
    path_name_problem(name).is_none()
}

/// Whether agent session id `id` can name a directory `sessions/<id>/`.
#[deprecated(note = "the one rule for every name the mount lists: use `is_path_safe_name`")]
pub fn is_path_safe_session_id(id: &str) -> bool {
    is_path_safe_name(id)
}

/// `text` as printable text for a terminal, without escapes of its own:
/// each control character as its Unicode control picture (a newline `␊`,
/// a tab `␉`, ESC `␛`, DEL `␡`), any other unprintable character (a line
/// separator, a bidirectional override) as `�`. What a terminal UI shows of
/// a tool input goes through it, so an escape sequence in the input never
/// reaches the terminal.
pub fn control_pictures(text: &str) -> String {
    text.chars().map(visible_char).collect()
}

/// `text` as one line of printable text: a backslash becomes `\\`, a
/// newline `\n`, a carriage return `\r`, a tab `\t`, any other unprintable
/// character below U+0100 `\xNN` (ESC is `\x1b`), and above it `\u{NNNN}`.
/// Escaping the backslash too keeps the escaping unambiguous.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut escaped, c);
    }
    Cow::Owned(escaped)
}

/// `c` as a reader may see it without it acting on their terminal or
/// their reading: a control character as its Unicode control picture (a
/// newline `␊`, ESC `␛`, DEL `␡`), any other unprintable character (a line
/// separator, a bidirectional override) as `�`, anything else as itself.
pub fn visible_char(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        c if is_unprintable(c) => '\u{fffd}',
        c => c,
    }
}

/// `text` as many lines of printable text (a diff, a file's content): its
/// newlines and tabs stay, every other unprintable character is made
/// visible ([`visible_char`]), so a carriage return or an escape sequence
/// in it can neither hide a line nor forge one.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    let keeps = |c: char| c == '\n' || c == '\t' || !is_unprintable(c);
    if text.chars().all(keeps) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if keeps(c) { c } else { visible_char(c) })
            .collect(),
    )
}

/// How many characters of `text` [`printable_lines`] shows otherwise.
pub fn unprintable_count(text: &str) -> usize {
    text.chars()
        .filter(|c| *c != '\n' && *c != '\t' && is_unprintable(*c))
        .count()
}

fn needs_escape(c: char) -> bool {
    c == '\\' || is_unprintable(c)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if !is_unprintable(c) => out.push(c),
        // Writing to a String cannot fail.
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_pictures_show_what_a_terminal_would_obey() {
        assert_eq!(control_pictures("a\tb\nc\u{1b}[2J\u{7f}"), "a␉b␊c␛[2J␡");
        assert_eq!(control_pictures("x\u{202e}y"), "x\u{fffd}y");
        assert_eq!(control_pictures("héllo 👋"), "héllo 👋");
    }

    #[test]
    fn one_line_escapes_what_could_break_or_forge_a_line() {
        assert_eq!(one_line("edit a.rs"), "edit a.rs");
        assert!(matches!(one_line("edit a.rs"), Cow::Borrowed(_)));
        assert_eq!(
            one_line("x\nplan mode: on\r\tend"),
            "x\\nplan mode: on\\r\\tend"
        );
        assert_eq!(one_line("\u{1b}[2Jgone\0"), "\\x1b[2Jgone\\x00");
        assert_eq!(one_line("a\u{85}b\u{7f}"), "a\\x85b\\x7f");
        assert_eq!(one_line("a\u{2028}b\u{202e}c"), "a\\u{2028}b\\u{202e}c");
        assert_eq!(
            one_line("C:\\n"),
            "C:\\\\n",
            "a literal backslash-n stays distinct"
        );
        assert_eq!(one_line("naïve — ok"), "naïve — ok");
    }

    #[test]
    fn many_lines_keep_newlines_and_tabs_and_show_the_rest() {
        assert_eq!(printable_lines("a\tb\nc\n"), "a\tb\nc\n");
        assert_eq!(
            printable_lines("ok\r\n\u{1b}[2Jgone\u{202e}x\u{7f}"),
            "ok\u{240d}\n\u{241b}[2Jgone\u{fffd}x\u{2421}"
        );
        assert_eq!(unprintable_count("ok\r\n\u{1b}[2J\t"), 2);
        assert!(matches!(printable_lines("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn library_source_tools_become_path_safe() {
        let long = "x".repeat(70);
        for (given, safe) in [
            ("custom_tool", "custom_tool"),
            ("a/b", "a_b"),
            ("nul\0x", "nul_x"),
            ("a:b c", "a_b_c"),
            ("", "_"),
            ("é", "_"),
            (long.as_str(), &long[..64]),
        ] {
            assert_eq!(path_safe_source_tool(given), safe, "{given:?}");
        }
    }

    #[test]
    fn zero_width_characters_and_the_bom_are_unprintable_but_emoji_joiners_are_not() {
        for c in ['\u{200b}', '\u{200c}', '\u{2060}', '\u{feff}', '\u{200f}'] {
            assert!(is_unprintable(c), "{}", describe_char(c));
        }
        assert!(
            !is_unprintable('\u{200d}'),
            "the zero-width joiner builds emoji"
        );
        assert_eq!(one_line("ok\u{200b}\u{feff}"), "ok\\u{200b}\\u{feff}");
    }

    #[test]
    fn names_are_path_safe_only_by_the_one_rule() {
        let longest = "s".repeat(MAX_NAME_BYTES);
        for id in [
            "s-1",
            "0b7c-41d2",
            "a.b_c",
            longest.as_str(),
            "naïve id",
            "pending-action:edit:3",
            "...",
            ".hidden",
        ] {
            assert_eq!(path_name_problem(id), None, "{id:?}");
            assert!(is_path_safe_name(id), "{id:?}");
        }
        let too_long = "s".repeat(MAX_NAME_BYTES + 1);
        // 128 two-byte characters: 256 bytes, though only 128 characters.
        let too_long_in_bytes = "é".repeat(128);
        for (id, problem) in [
            ("", NameProblem::Empty),
            (".", NameProblem::Dots(".")),
            ("..", NameProblem::Dots("..")),
            ("a/b", NameProblem::Slash),
            ("/", NameProblem::Slash),
            ("a\nb", NameProblem::Unprintable('\n')),
            ("nul\0", NameProblem::Unprintable('\0')),
            ("\u{1}x", NameProblem::Unprintable('\u{1}')),
            ("\u{202e}x", NameProblem::Unprintable('\u{202e}')),
            (too_long.as_str(), NameProblem::TooLong(256)),
            (too_long_in_bytes.as_str(), NameProblem::TooLong(256)),
        ] {
            assert_eq!(path_name_problem(id), Some(problem), "{id:?}");
            assert!(!is_path_safe_name(id), "{id:?}");
        }
    }

    #[test]
    fn characters_are_described_readably() {
        for (c, shown) in [('/', "'/'"), ('\u{1b}', "U+001B"), ('\0', "U+0000")] {
            assert_eq!(describe_char(c), shown);
        }
    }
}
