//! What the review shows, as plain data: a pending preview, the plan
//! under review, a row's key, a decision of the trail and who made it, and
//! an age as the list writes it. The app's state is made of these; the
//! components draw them; nothing here draws or changes anything.

use std::fmt;
use std::sync::Arc;

use crate::texts;

/// A pending preview as the list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its id (`pending-action:<tool>:<seq>`).
    pub id: Arc<str>,
    /// Its label.
    pub label: String,
    /// The tool that staged it.
    pub tool: String,
    /// Its agent session, if any.
    pub session: Option<Arc<str>>,
    /// When it was staged (seconds since the epoch), when the journal says.
    pub staged_at: Option<f64>,
    /// Its place in its group: higher is nearer the head (set by the list).
    pub rank: u64,
}

impl Item {
    /// Whether the (lowercase) filter is in its label, tool or session.
    pub fn matches(&self, filter: &str) -> bool {
        if filter.is_empty() {
            return true;
        }
        let has = |text: &str| text.to_lowercase().contains(filter);
        has(&self.label) || has(&self.tool) || self.session.as_deref().is_some_and(has)
    }
}

/// The plan under review on the plan desk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInfo {
    /// Its slug.
    pub slug: String,
    /// Its file.
    pub path: String,
    /// Its markdown, or why it could not be read.
    pub markdown: Result<String, String>,
}

/// What a selectable row shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RowKey {
    /// The plan under review.
    Plan,
    /// A preview, by id.
    Item(Arc<str>),
}

/// Who made a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decider {
    /// This `xdev review`.
    ThisReview,
    /// The mount's policy, with the rule that matched when known.
    Policy(Option<String>),
    /// A shell (`echo ... > resolve`).
    Shell(String),
    /// The deadline passed.
    Timeout,
    /// Another program, by name.
    Process(String),
    /// Nobody known.
    Unknown,
}

impl fmt::Display for Decider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decider::ThisReview => f.write_str(texts::REVIEW_BY_THIS_REVIEW),
            Decider::Policy(Some(rule)) => f.write_str(&texts::review_by_policy_rule(rule)),
            Decider::Policy(None) => f.write_str(texts::REVIEW_BY_POLICY),
            Decider::Shell(name) => f.write_str(&texts::review_by_shell(name)),
            Decider::Timeout => f.write_str(texts::REVIEW_BY_TIMEOUT),
            Decider::Process(name) => f.write_str(&crate::safe_text::one_line(name)),
            Decider::Unknown => f.write_str(texts::REVIEW_UNKNOWN),
        }
    }
}

/// One decision of the trail.
#[derive(Debug, Clone, PartialEq)]
pub struct TrailEntry {
    /// When (seconds since the epoch).
    pub time: f64,
    /// `applied`, `rejected`, `withdrawn`, `plan approved`, ...
    pub verdict: String,
    /// The preview's label.
    pub label: String,
    /// Who.
    pub decider: Decider,
}

/// An age as the list shows it: `12s`, `3m`, `2h`, `4d`; `?` when unknown.
pub fn age(since: Option<f64>, now: f64) -> String {
    let Some(since) = since else {
        return texts::REVIEW_UNKNOWN.to_string();
    };
    let seconds = (now - since).max(0.0) as u64;
    match seconds {
        0..=59 => format!("{seconds}s"),
        60..=3599 => format!("{}m", seconds / 60),
        3600..=86_399 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}
