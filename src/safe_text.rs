//! Names and texts that come from outside, made safe for a path and for a
//! line-oriented file.
//!
//! A source tool forms part of a preview's id, and the id is a directory
//! name under `pending/`: it must never hold `/` or NUL, or one preview makes
//! `ls pending` fail for everyone. Free text (labels, reasons, result texts)
//! is shown inside line-oriented files (`status`, `pending/<id>/label`, the
//! reminder): a newline or an escape sequence in it could forge a line such
//! as `plan mode: on`, so it is shown escaped there, one field on one line.

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

/// The longest agent session id that names a directory under `sessions/`,
/// in bytes: the longest file name on Linux.
pub const MAX_SESSION_DIR_BYTES: usize = 255;

/// Whether agent session id `id` can name a directory `sessions/<id>/`:
/// one line of printable text (the rule the stage protocol and `xdev hook`
/// already hold a session id to), at most [`MAX_SESSION_DIR_BYTES`] bytes,
/// no `/`, and neither `.` nor `..`. Unlike a source tool, an id is never
/// rewritten to fit: a made-up name could be another session's real one.
pub fn is_path_safe_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_DIR_BYTES
        && id != "."
        && id != ".."
        && !id.contains('/')
        && !id.chars().any(is_unprintable)
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
    fn session_ids_name_a_directory_only_when_path_safe() {
        let longest = "s".repeat(MAX_SESSION_DIR_BYTES);
        for id in ["s-1", "0b7c-41d2", "a.b_c", longest.as_str(), "naïve id"] {
            assert!(is_path_safe_session_id(id), "{id:?}");
        }
        let too_long = "s".repeat(MAX_SESSION_DIR_BYTES + 1);
        for id in [
            "",
            ".",
            "..",
            "a/b",
            "a\nb",
            "nul\0",
            "\u{202e}x",
            too_long.as_str(),
        ] {
            assert!(!is_path_safe_session_id(id), "{id:?}");
        }
    }

    #[test]
    fn characters_are_described_readably() {
        for (c, shown) in [('/', "'/'"), ('\u{1b}', "U+001B"), ('\0', "U+0000")] {
            assert_eq!(describe_char(c), shown);
        }
    }
}
