//! The review screen's components. A component has state, handles key
//! events and draws itself:
//!
//! - [`Component::event`] takes a key and says whether it was consumed
//!   ([`EventState`]), so the app offers a key to one component after
//!   another until one takes it; what the key asks of the app beyond the
//!   component (decide, quit, open a prompt) it pushes as an [`Action`];
//! - [`Component::draw`] reads the state and changes nothing (so a
//!   `TestBackend` snapshot needs no mount, and a redraw costs only the
//!   cells it paints);
//! - [`Component::commands`] lists the component's keys from the same
//!   table its `event` matches, so the help and the key bar can never drift
//!   from the bindings.
//!
//! The parent ([`crate::review::app::App`]) composes them by code: it
//! forwards keys and draws explicitly.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::Frame;

pub mod detail;
pub mod help;
pub mod list;
pub mod messages;
pub mod overlay;
pub mod prompt;
pub mod status_line;
pub mod text;
pub mod trail;

/// Whether a component took a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventState {
    /// Taken: no other component sees it.
    Consumed,
    /// Not this component's key.
    NotConsumed,
}

/// What a key asks of the app, beyond the component that took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Approve the selection (or the marked items): opens the reason prompt.
    Approve,
    /// Reject the selection (or the marked items): opens the reason prompt.
    Reject,
    /// Open the filter prompt.
    Filter,
    /// Show the last messages (status line, trail) in full.
    Messages,
    /// Show the keys.
    Help,
    /// Leave.
    Quit,
    /// The selection moved: the detail pane shows another item.
    SelectionChanged,
    /// A prompt was submitted with this text.
    Submit(String),
    /// A prompt was cancelled.
    Cancel,
    /// The filter prompt's text changed.
    FilterEdited(String),
}

/// One key binding: the keys, how the help shows them, what they do, and
/// what the component does with them.
#[derive(Debug, Clone, Copy)]
pub struct Binding<A: 'static> {
    /// The keys that trigger it.
    pub keys: &'static [KeyCode],
    /// The keys as the help shows them.
    pub shown: &'static str,
    /// What it does, in a few words.
    pub what: &'static str,
    /// What the component does.
    pub action: A,
}

/// A binding as the help lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    /// The keys as shown.
    pub keys: &'static str,
    /// What they do.
    pub what: &'static str,
}

/// The bindings of `table` as the help lists them.
pub fn commands_of<A>(table: &[Binding<A>]) -> Vec<CommandInfo> {
    table
        .iter()
        .map(|binding| CommandInfo {
            keys: binding.shown,
            what: binding.what,
        })
        .collect()
}

/// The binding of `table` that `key` triggers, if any (keys with Ctrl or
/// Alt held are nobody's but the app's).
pub fn binding_for<A: Copy>(table: &[Binding<A>], key: &KeyEvent) -> Option<A> {
    use crossterm::event::KeyModifiers;
    if key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return None;
    }
    table
        .iter()
        .find(|binding| binding.keys.contains(&key.code))
        .map(|binding| binding.action)
}

/// A part of the review screen (see the module docs).
pub trait Component {
    /// Offers `key`; actions for the app go to `actions`.
    fn event(&mut self, key: &KeyEvent, actions: &mut Vec<Action>) -> EventState;
    /// Draws into `area`, reading the state only.
    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme);
    /// The component's keys (empty when it has none of its own).
    fn commands(&self) -> Vec<CommandInfo>;
}

/// How the screen is styled: in colour, or (`NO_COLOR` set) with no style
/// at all, where markers (`>`, `*`) alone show the selection and the marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether styles are used at all.
    pub color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to anything non-empty (no-color.org).
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Theme { color: !no_color }
    }

    fn pick(self, style: Style) -> Style {
        if self.color {
            style
        } else {
            Style::default()
        }
    }

    /// The selected row.
    pub fn selected(self) -> Style {
        self.pick(Style::default().add_modifier(Modifier::REVERSED))
    }
    /// A group header, the plan row, a pane's title.
    pub fn heading(self) -> Style {
        self.pick(Style::default().add_modifier(Modifier::BOLD))
    }
    /// A marked row.
    pub fn marked(self) -> Style {
        self.pick(Style::default().fg(Color::Yellow))
    }
    /// Quieter text (ages, ids, scroll positions).
    pub fn dim(self) -> Style {
        self.pick(Style::default().fg(Color::DarkGray))
    }
    /// An added line of a diff; a success.
    pub fn added(self) -> Style {
        self.pick(Style::default().fg(Color::Green))
    }
    /// A removed line of a diff; a failure.
    pub fn removed(self) -> Style {
        self.pick(Style::default().fg(Color::Red))
    }
    /// A hunk header of a diff.
    pub fn hunk(self) -> Style {
        self.pick(Style::default().fg(Color::Cyan))
    }
}
