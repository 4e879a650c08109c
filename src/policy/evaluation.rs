//! What a decision is: the [`Effect`], and the [`Evaluation`] of one call
//! with a [`PartEvaluation`] per part, which serialise (camelCase) to the
//! JSON `xdev policy check --json` prints; and the [`ExampleReport`] of a
//! file's examples.

use serde::Serialize;

/// What a rule (or the policy) says of a call. Ordered by strictness:
/// `Allow < Ask < Deny`, so the strictest of several is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Effect {
    /// Let the call run.
    Allow,
    /// Leave the call for a person.
    Ask,
    /// Refuse the call.
    Deny,
}

impl Effect {
    /// The name of the effect as the rules file spells its list.
    pub fn name(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The policy's decision on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// The strictest of the parts' effects (`Ask` when there is no part).
    pub effect: Effect,
    /// The rule that decided (the strictest part's), as written; `None`
    /// when no rule matched (the effect is then `Ask`).
    pub rule: Option<String>,
    /// That rule's reason, if the file gave it one.
    pub reason: Option<String>,
    /// One line a person reads.
    pub why: String,
    /// One per simple command or redirection of a shell command, one per
    /// file of a patch, else one for the call.
    pub parts: Vec<PartEvaluation>,
}

/// The decision on one part of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartEvaluation {
    /// The part as a person reads it (a simple command, `write <path>`, ...).
    pub text: String,
    /// What the rules say of it.
    pub effect: Effect,
    /// The rule that decided it, as written.
    pub rule: Option<String>,
    /// One line: which rule, or why no rule could decide.
    pub why: String,
    /// Every rule that decided it (ties of the same effect), in file
    /// order; examples check against these.
    #[serde(skip)]
    pub(crate) deciders: Vec<usize>,
}

/// The outcome of a rules file's examples, as `xdev policy test` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExampleReport {
    /// One result per example, in file order.
    pub results: Vec<ExampleResult>,
}

impl ExampleReport {
    /// Whether every example was decided as its rule says.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|result| result.passed)
    }

    /// The examples that were not decided as their rule says.
    pub fn failures(&self) -> impl Iterator<Item = &ExampleResult> {
        self.results.iter().filter(|result| !result.passed)
    }
}

/// One example of one rule, and what the policy made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExampleResult {
    /// The rule, as written.
    pub rule: String,
    /// The rule's list (its effect).
    pub effect: Effect,
    /// `true` for a `match` example, `false` for a `notMatch` one.
    pub must_match: bool,
    /// The example as written (a string, or the object as JSON).
    pub example: String,
    /// What the policy decided of it.
    pub got: Effect,
    /// The rule that decided it, if any.
    pub decided_by: Option<String>,
    /// Whether the example holds.
    pub passed: bool,
}
