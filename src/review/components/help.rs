//! The list of keys, made from every component's `commands()` when it
//! opens, so it shows exactly the bindings the components match.

use super::overlay::{Overlay, OverlayText};
use super::text::{fit, wrap};
use super::CommandInfo;
use crate::texts;

/// The help: an overlay of every key.
pub type HelpComponent = Overlay<Keys>;

/// The keys the help lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys(pub Vec<CommandInfo>);

impl OverlayText for Keys {
    fn title(&self) -> &str {
        texts::REVIEW_HELP_TITLE
    }

    fn lines(&self, width: usize, most: usize) -> Vec<String> {
        help_lines(&self.0, width, most)
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
