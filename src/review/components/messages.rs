//! The last messages in full: the status line's message and the trail's
//! decisions, which the screen cuts to one line each (saying so with
//! `…` and the key that opens this). Opened by the app with the texts;
//! any key closes it, as the help does.

use super::overlay::{Overlay, OverlayText};
use super::text::{screen_line, wrap};
use crate::texts;

/// The last messages: an overlay of the status line's message and the
/// trail, whole.
pub type MessagesComponent = Overlay<Messages>;

/// What the overlay shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Messages {
    /// The status line's message, if any.
    pub status: Option<String>,
    /// The trail's decisions, newest first, each whole.
    pub trail: Vec<String>,
    /// The mount (its `log` holds every decision).
    pub dir: String,
}

impl OverlayText for Messages {
    fn title(&self) -> &str {
        texts::REVIEW_MESSAGES_TITLE
    }

    fn lines(&self, width: usize, most: usize) -> Vec<String> {
        overlay_lines(self, width, most)
    }
}

/// The overlay's lines, wrapped at `width`, at most `height` of them: as
/// many decisions as fit, and a last line naming how many did not and
/// where they are.
fn overlay_lines(messages: &Messages, width: usize, height: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let wrapped = |text: &str| wrap(&screen_line(text), width.max(1));
    lines.extend(wrapped(&format!(
        "{}: {}",
        texts::REVIEW_MESSAGES_STATUS,
        messages
            .status
            .as_deref()
            .unwrap_or(texts::REVIEW_TRAIL_EMPTY)
    )));
    lines.extend(wrapped(&format!("{}:", texts::REVIEW_TRAIL_TITLE)));
    let mut left = messages.trail.len();
    // Room kept for the lines that say where the rest is, at their longest.
    let rest_room = wrapped(&texts::review_messages_more(left, &messages.dir)).len();
    for entry in &messages.trail {
        let entry_lines = wrapped(&format!("  {entry}"));
        let after = if left > 1 { rest_room } else { 0 };
        if lines.len() + entry_lines.len() + after > height {
            break;
        }
        lines.extend(entry_lines);
        left -= 1;
    }
    if left > 0 {
        let rest = texts::review_messages_more(left, &messages.dir);
        lines.extend(wrapped(&rest));
    }
    lines.truncate(height.max(1));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_does_not_fit_is_counted_and_its_place_named() {
        let messages = Messages {
            status: Some("z".repeat(50)),
            trail: (0..10).map(|n| format!("entry {n}")).collect(),
            dir: "/xdev".into(),
        };
        let lines = overlay_lines(&messages, 20, 12);
        assert_eq!(lines.len(), 12, "{lines:?}");
        assert_eq!(lines.concat().matches('z').count(), 50, "the status whole");
        let shown = lines.iter().filter(|l| l.contains("entry")).count();
        let rest = texts::review_messages_more(10 - shown, "/xdev");
        assert_eq!(
            lines[lines.len() - wrap(&rest, 20).len()..],
            wrap(&rest, 20)[..]
        );
    }
}
