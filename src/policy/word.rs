//! A word of a simple command as the walk sees it: its text with quotes
//! removed and whether it could expand. The shell walk makes words; the
//! table of programs that write their arguments reads them.

/// A word of a simple command as the walk sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word with quotes removed (as written, if it expands).
    pub(crate) text: String,
    /// Whether the word is the same whatever the environment (no
    /// parameter, command, arithmetic or glob expansion).
    pub(crate) literal: bool,
    /// Whether its only expansion is a leading `~` or `~/` (the home
    /// directory, which a path rule can judge).
    pub(crate) home: bool,
}

impl Word {
    /// A literal word (an argv element).
    pub(crate) fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            literal: true,
            home: false,
        }
    }
}
