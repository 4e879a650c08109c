//! A box over the middle of the screen that shows some text until any key
//! closes it: the help and the last messages are two of them. What it
//! shows makes its own lines to fit the box, saying what did not fit.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::{Action, CommandInfo, Component, EventState, Theme};

/// What an overlay shows.
pub trait OverlayText {
    /// The box's title.
    fn title(&self) -> &str;
    /// The lines for a box `width` columns wide inside, at most `most` of
    /// them.
    fn lines(&self, width: usize, most: usize) -> Vec<String>;
}

/// An overlay's state: closed, or what it shows.
#[derive(Debug)]
pub struct Overlay<T> {
    shown: Option<T>,
}

impl<T> Default for Overlay<T> {
    fn default() -> Self {
        Overlay { shown: None }
    }
}

impl<T> Overlay<T> {
    /// Opens it with `text`.
    pub fn open(&mut self, text: T) {
        self.shown = Some(text);
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        self.shown.is_some()
    }
}

impl<T: OverlayText> Component for Overlay<T> {
    fn event(&mut self, _key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        if self.shown.take().is_some() {
            EventState::Consumed
        } else {
            EventState::NotConsumed
        }
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let Some(text) = &self.shown else { return };
        let shown = text.lines(
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
            .title(Span::styled(text.title(), theme.heading()));
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
