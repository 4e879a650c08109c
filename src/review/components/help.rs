//! The list of keys, made from every component's `commands()` when it
//! opens, so it shows exactly the bindings the components match.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::{Action, CommandInfo, Component, EventState, Theme};
use crate::review::components::list::fit;
use crate::texts;

/// The help's state: closed, or the commands it lists.
#[derive(Debug, Default)]
pub struct HelpComponent {
    shown: Option<Vec<CommandInfo>>,
}

impl HelpComponent {
    /// Opens it with `commands`.
    pub fn open(&mut self, commands: Vec<CommandInfo>) {
        self.shown = Some(commands);
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        self.shown.is_some()
    }
}

impl Component for HelpComponent {
    fn event(&mut self, _key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        if self.shown.take().is_some() {
            EventState::Consumed
        } else {
            EventState::NotConsumed
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let Some(commands) = &self.shown else { return };
        let keys_width = commands
            .iter()
            .map(|c| c.keys.chars().count())
            .max()
            .unwrap_or(0);
        let height = (commands.len() as u16 + 2).min(area.height);
        let popup = Rect {
            x: area.x + 1,
            y: area.y + area.height.saturating_sub(height) / 2,
            width: area.width.saturating_sub(2),
            height,
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(texts::REVIEW_HELP_TITLE, theme.heading()));
        let inner = block.inner(popup);
        let width = usize::from(inner.width);
        let lines: Vec<Line<'_>> = commands
            .iter()
            .map(|command| {
                let text = format!("{:<keys_width$}  {}", command.keys, command.what);
                Line::from(fit(&text, width))
            })
            .collect();
        frame.render_widget(Clear, popup);
        frame.render_widget(block, popup);
        frame.render_widget(Paragraph::new(lines), inner);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
}
