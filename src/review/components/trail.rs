//! The trail: the last decisions on the mount and who made them (this
//! review, the policy, a shell, a timeout, another program), newest first;
//! a line cut to the screen's width says which key shows it whole.

use std::collections::VecDeque;

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::text::fit_saying;
use super::{Action, CommandInfo, Component, EventState, Theme};
use crate::review::model::{age, TrailEntry};
use crate::texts;

/// How many decisions the trail keeps.
const KEEP: usize = 50;

/// The trail's state.
#[derive(Debug, Default)]
pub struct TrailComponent {
    entries: VecDeque<TrailEntry>,
    now: f64,
}

impl TrailComponent {
    /// Adds a decision (the newest).
    pub fn push(&mut self, entry: TrailEntry) {
        self.entries.push_front(entry);
        self.entries.truncate(KEEP);
    }

    /// Replaces the trail (oldest first in `entries`).
    pub fn replace(&mut self, entries: Vec<TrailEntry>) {
        self.entries.clear();
        for entry in entries {
            self.push(entry);
        }
    }

    /// The decisions kept, newest first.
    pub fn entries(&self) -> impl Iterator<Item = &TrailEntry> {
        self.entries.iter()
    }

    /// One decision as the trail says it, whole.
    pub fn entry_text(&self, entry: &TrailEntry) -> String {
        texts::review_trail_entry(
            &age(Some(entry.time), self.now),
            &entry.verdict,
            &entry.label,
            &entry.decider.to_string(),
        )
    }

    /// Sets the clock the ages are counted from.
    pub fn set_now(&mut self, now: f64) {
        self.now = now;
    }
}

impl Component for TrailComponent {
    fn event(&mut self, _key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        EventState::NotConsumed
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let width = usize::from(area.width);
        let title = format!("{}: ", texts::REVIEW_TRAIL_TITLE);
        let indent = " ".repeat(title.chars().count());
        let mut lines: Vec<Line<'_>> = self
            .entries
            .iter()
            .take(usize::from(area.height))
            .enumerate()
            .map(|(index, entry)| {
                let lead = if index == 0 {
                    title.clone()
                } else {
                    indent.clone()
                };
                let text = self.entry_text(entry);
                let room = width.saturating_sub(lead.chars().count());
                Line::from(vec![
                    Span::styled(lead, theme.heading()),
                    Span::raw(fit_saying(&text, room, texts::REVIEW_CUT_HINT)),
                ])
            })
            .collect();
        if lines.is_empty() {
            lines.push(Line::from(vec![
                Span::styled(title, theme.heading()),
                Span::styled(texts::REVIEW_TRAIL_EMPTY, theme.dim()),
            ]));
        }
        frame.render_widget(Paragraph::new(lines), area);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
}
