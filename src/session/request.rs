//! What a caller asks of a preview or handler: apply or discard, and why.

use serde::Serialize;
use serde_json::Value;

/// Apply or discard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Make the staged change.
    Apply,
    /// Throw the staged change away.
    Discard,
}

/// A request to finalize a preview.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ResolveRequest {
    /// Apply or discard.
    pub action: Action,
    /// Why, in one sentence (may be empty).
    pub reason: String,
    /// Anything else the caller wants to pass to the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

impl ResolveRequest {
    /// An apply request with this reason.
    pub fn apply(reason: impl Into<String>) -> Self {
        ResolveRequest {
            action: Action::Apply,
            reason: reason.into(),
            extra: None,
        }
    }

    /// A discard request with this reason.
    pub fn discard(reason: impl Into<String>) -> Self {
        ResolveRequest {
            action: Action::Discard,
            reason: reason.into(),
            extra: None,
        }
    }
}
