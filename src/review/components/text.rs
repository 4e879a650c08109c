//! Text as the review's panes show it: one line fitted to a width (cut
//! with `…`, or with a hint of where the whole is), a line made safe for
//! the terminal (tabs expanded, control characters as their pictures), a
//! line wrapped at a width. Every component draws through these.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::safe_text::control_pictures;

/// `text` on one line of `width` columns: control characters as their
/// pictures (nothing from the mount reaches the terminal as a control),
/// cut with `…` where it does not fit (the detail pane shows the whole
/// label).
pub fn fit(text: &str, width: usize) -> String {
    let text = control_pictures(text);
    if text.width() <= width {
        return text;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `text` on one line of `width` columns as [`fit`] makes it, but when
/// it is cut, ending in `…` and `hint` (which says where the whole is).
pub fn fit_saying(text: &str, width: usize, hint: &str) -> String {
    let whole = fit(text, usize::MAX);
    if whole.width() <= width {
        return whole;
    }
    let room = width.saturating_sub(hint.width());
    let mut cut = fit(&whole, room);
    cut.push_str(hint);
    fit(&cut, width)
}

/// One line of text as the terminal may show it: tabs as spaces (to the
/// next multiple of 4), any other control character as its visible picture
/// (an escape sequence in a tool input must never reach the terminal).
pub fn screen_line(line: &str) -> String {
    let mut expanded = String::with_capacity(line.len());
    let mut column = 0;
    for c in line.chars() {
        if c == '\t' {
            let spaces = 4 - column % 4;
            expanded.extend(std::iter::repeat_n(' ', spaces));
            column += spaces;
        } else {
            expanded.push(c);
            column += 1;
        }
    }
    control_pictures(&expanded)
}

/// `line` wrapped at `width` display columns; an empty line stays one line.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut used = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width && !part.is_empty() {
            parts.push(std::mem::take(&mut part));
            used = 0;
        }
        part.push(c);
        used += w;
    }
    parts.push(part);
    parts
}
