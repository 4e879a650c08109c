//! The one-line prompt at the bottom: the reason for a decision, the
//! feedback for a plan, or the filter (which applies as it is typed).
//! What the text is for stays with the app, which opened the prompt.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::text::{fit, screen_line};
use super::{binding_for, commands_of, Action, Binding, CommandInfo, Component, EventState, Theme};

/// What an editing key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Submit,
    Cancel,
    Erase,
}

const BINDINGS: &[Binding<Edit>] = &[
    Binding {
        keys: &[KeyCode::Enter],
        shown: "Enter",
        what: "(in a prompt) submit",
        action: Edit::Submit,
    },
    Binding {
        keys: &[KeyCode::Esc],
        shown: "Esc",
        what: "(in a prompt) cancel; in the filter: put back the one before",
        action: Edit::Cancel,
    },
    Binding {
        keys: &[KeyCode::Backspace],
        shown: "Backspace",
        what: "(in a prompt) erase a character",
        action: Edit::Erase,
    },
];

/// The prompt's state: closed, or its question and what was typed.
#[derive(Debug, Default)]
pub struct PromptComponent {
    question: Option<String>,
    input: String,
    /// Whether each edit is reported (the filter).
    live: bool,
}

impl PromptComponent {
    /// Opens the prompt with `question` and `initial` text.
    pub fn open(&mut self, question: &str, initial: &str, live: bool) {
        self.question = Some(question.to_string());
        self.input = initial.to_string();
        self.live = live;
    }

    /// Closes it.
    pub fn close(&mut self) {
        self.question = None;
        self.input.clear();
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        self.question.is_some()
    }

    /// What was typed.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl Component for PromptComponent {
    fn event(&mut self, key: &KeyEvent, actions: &mut Vec<Action>) -> EventState {
        if !self.is_open() {
            return EventState::NotConsumed;
        }
        match binding_for(BINDINGS, key) {
            Some(Edit::Submit) => actions.push(Action::Submit(self.input.clone())),
            Some(Edit::Cancel) => actions.push(Action::Cancel),
            Some(Edit::Erase) => {
                self.input.pop();
                if self.live {
                    actions.push(Action::FilterEdited(self.input.clone()));
                }
            }
            None => {
                let KeyCode::Char(c) = key.code else {
                    return EventState::Consumed;
                };
                if key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
                {
                    return EventState::NotConsumed;
                }
                self.input.push(c);
                if self.live {
                    actions.push(Action::FilterEdited(self.input.clone()));
                }
            }
        }
        EventState::Consumed
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let Some(question) = &self.question else {
            return;
        };
        let width = usize::from(area.width);
        let question_line = Line::from(Span::styled(fit(question, width), theme.heading()));
        // The end of a long input stays in view: that is where one types.
        let shown = screen_line(&self.input);
        let room = width.saturating_sub(3);
        let chars: Vec<char> = shown.chars().collect();
        let tail: String = chars[chars.len().saturating_sub(room)..].iter().collect();
        let input_line = Line::from(vec![Span::raw("> "), Span::raw(tail), Span::raw("_")]);
        frame.render_widget(Paragraph::new(vec![question_line, input_line]), area);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        commands_of(BINDINGS)
    }
}
