//! The list of keys, made from every component's `commands()` when it
//! opens, so it shows exactly the bindings the components match.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::{Action, CommandInfo, Component, EventState, Theme};
use crate::review::components::detail::wrap;
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

/// The help's lines at `width`, at most `most` of them: each key and what
/// it does, wrapped under its description; when not all fit, the last
/// line says how many keys a taller terminal would show.
fn help_lines(commands: &[CommandInfo], width: usize, most: usize) -> Vec<String> {
    let keys_width = commands
        .iter()
        .map(|c| c.keys.chars().count())
        .max()
        .unwrap_or(0);
    let indent = " ".repeat(keys_width + 2);
    let room = width.saturating_sub(keys_width + 2).max(1);
    let mut lines = Vec::new();
    for (index, command) in commands.iter().enumerate() {
        let parts = wrap(command.what, room);
        let left = commands.len() - index;
        let needed = parts.len() + usize::from(left > 1);
        if lines.len() + needed > most && left > 0 {
            lines.push(fit(&texts::review_help_more(left), width));
            break;
        }
        for (at, part) in parts.into_iter().enumerate() {
            let lead = if at == 0 {
                format!("{:<keys_width$}  ", command.keys)
            } else {
                indent.clone()
            };
            lines.push(fit(&format!("{lead}{part}"), width));
        }
    }
    lines
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
        let width = usize::from(area.width.saturating_sub(4));
        let most = usize::from(area.height.saturating_sub(2));
        let shown = help_lines(commands, width, most);
        let height = (shown.len() as u16 + 2).min(area.height);
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
        let lines: Vec<Line<'_>> = shown.into_iter().map(Line::from).collect();
        frame.render_widget(Clear, popup);
        frame.render_widget(block, popup);
        frame.render_widget(Paragraph::new(lines), inner);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
}
