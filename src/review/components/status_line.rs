//! The status line: the result of the last decision written (the mount's
//! answer, or the errno and its message), or any other notice; and below
//! it the key bar, made from the components' commands. Either, cut to the
//! screen's width, ends saying which key shows it whole.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::text::fit_saying;
use super::{Action, CommandInfo, Component, EventState, Theme};
use crate::texts;

/// The status line's state.
#[derive(Debug, Default)]
pub struct StatusLineComponent {
    message: Option<(bool, String)>,
    keys: String,
}

impl StatusLineComponent {
    /// Shows `text`, as a success (`ok`) or a failure.
    pub fn set(&mut self, ok: bool, text: String) {
        self.message = Some((ok, text));
    }

    /// The message shown, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_ref().map(|(_, text)| text.as_str())
    }

    /// Sets the key bar from `commands`.
    pub fn set_keys(&mut self, commands: &[CommandInfo]) {
        self.keys = commands
            .iter()
            .map(|command| format!("{} {}", command.keys, short(command.what)))
            .collect::<Vec<_>>()
            .join("  ");
    }
}

/// A command's description's first word, for the key bar (the help has
/// the whole of it).
fn short(what: &str) -> &str {
    what.split_whitespace()
        .next()
        .unwrap_or(what)
        .trim_end_matches(':')
}

impl Component for StatusLineComponent {
    fn event(&mut self, _key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        EventState::NotConsumed
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let width = usize::from(area.width);
        let message = match &self.message {
            Some((true, text)) => Span::styled(
                fit_saying(text, width, texts::REVIEW_CUT_HINT),
                theme.added(),
            ),
            Some((false, text)) => Span::styled(
                fit_saying(text, width, texts::REVIEW_CUT_HINT),
                theme.removed(),
            ),
            None => Span::styled(String::new(), Style::default()),
        };
        let lines = vec![
            Line::from(message),
            Line::from(Span::styled(
                fit_saying(&self.keys, width, texts::REVIEW_KEYS_CUT_HINT),
                theme.dim(),
            )),
        ];
        frame.render_widget(Paragraph::new(lines), area);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
}
