//! The last messages in full: the status line's message and the trail's
//! decisions, which the screen cuts to one line each (saying so with
//! `…` and the key that opens this). Opened by the app with the texts;
//! any key closes it, as the help does.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::detail::{screen_line, wrap};
use super::{Action, CommandInfo, Component, EventState, Theme};
use crate::texts;

/// The overlay's state: closed, or the status message and the trail's
/// lines (newest first) it shows, and where the whole record is.
#[derive(Debug, Default)]
pub struct MessagesComponent {
    shown: Option<Messages>,
}

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

impl MessagesComponent {
    /// Opens it with `messages`.
    pub fn open(&mut self, messages: Messages) {
        self.shown = Some(messages);
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        self.shown.is_some()
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

impl Component for MessagesComponent {
    fn event(&mut self, _key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        if self.shown.take().is_some() {
            EventState::Consumed
        } else {
            EventState::NotConsumed
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let Some(messages) = &self.shown else { return };
        let shown = overlay_lines(
            messages,
            usize::from(area.width.saturating_sub(4)),
            usize::from(area.height.saturating_sub(2)),
        );
        let height = (shown.len() as u16 + 2).min(area.height);
        let popup = Rect {
            x: area.x + 1,
            y: area.y + area.height.saturating_sub(height) / 2,
            width: area.width.saturating_sub(2),
            height,
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(texts::REVIEW_MESSAGES_TITLE, theme.heading()));
        let inner = block.inner(popup);
        let lines: Vec<Line<'_>> = shown.into_iter().map(Line::from).collect();
        frame.render_widget(Clear, popup);
        frame.render_widget(block, popup);
        frame.render_widget(Paragraph::new(lines), inner);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
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
