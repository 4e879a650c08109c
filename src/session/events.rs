//! Session events: every change to the pending stack, in order, to every
//! subscriber, none dropped.
//!
//! Subscribers get an unbounded channel rather than a lossy broadcast
//! because the decision journal is built on them and must not skip records.

use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::mpsc;

/// What happened to a preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Staged (or re-registered) at the head.
    Staged,
    /// Applied and consumed. `ok` is false when apply returned an error result.
    Applied,
    /// Discarded and consumed.
    Discarded,
    /// An apply or reject callback failed; the preview stays pending.
    Failed,
    /// Put back at the head after a failed apply.
    Requeued,
    /// Taken back by its producer (it exited, or its deadline passed).
    Withdrawn,
    /// Cleared by a session boundary.
    Cleared,
    /// A plan was proposed and its handler answered; `plan` names the plan
    /// when the handler did. No preview is involved: `id` is empty and
    /// `sourceTool` is `propose`.
    Proposed,
    /// A plan under review was decided while no proposal waited for it (an
    /// `async` desk): `plan` names it, `text` is the decision.
    PlanDecided,
    /// Plan mode was entered (a plan proposal handler set).
    PlanModeEntered,
    /// Plan mode was left (the handler cleared, or its desk gone).
    PlanModeLeft,
}

/// One event on a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The preview's id.
    pub id: String,
    /// The preview's label.
    pub label: String,
    /// The tool that staged it.
    pub source_tool: String,
    /// The reason given with the decision, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The result text of the decision, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// False when the outcome is an error.
    pub ok: bool,
    /// The decision's caller stopped waiting (aborted, interrupted) before
    /// it finished: this event is the only report of its outcome.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
    /// The plan a [`EventKind::Proposed`] event is about, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::session::answer::PlanApprovalDetails>,
    /// The agent call the preview answers, when its producer named one.
    #[serde(flatten)]
    pub origin: Option<crate::session::preview::Origin>,
    /// When it happened.
    #[serde(skip)]
    pub time: SystemTime,
}

/// A stream of a session's events from the moment of subscribing.
#[derive(Debug)]
pub struct EventStream {
    receiver: mpsc::UnboundedReceiver<Event>,
}

impl EventStream {
    /// Waits for the next event; `None` once the session is gone.
    pub async fn recv(&mut self) -> Option<Event> {
        self.receiver.recv().await
    }

    /// The next event if one is already there.
    pub fn try_recv(&mut self) -> Option<Event> {
        self.receiver.try_recv().ok()
    }
}

/// The subscribers of one session.
#[derive(Default)]
pub(crate) struct Subscribers {
    senders: Vec<mpsc::UnboundedSender<Event>>,
    hooks: Vec<EventHook>,
}

/// Called with every event as it happens (under the session's lock, so it
/// must be quick and must not call back into the session); returns whether
/// it wants more.
pub(crate) type EventHook = Box<dyn FnMut(&Event) -> bool + Send>;

impl Subscribers {
    pub(crate) fn subscribe(&mut self) -> EventStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.senders.push(sender);
        EventStream { receiver }
    }

    pub(crate) fn hook(&mut self, hook: EventHook) {
        self.hooks.push(hook);
    }

    /// Runs every hook and sends to every live subscriber, forgetting the
    /// ones that went away.
    pub(crate) fn publish(&mut self, event: Event) {
        self.hooks.retain_mut(|hook| hook(&event));
        if !self.senders.is_empty() {
            self.senders
                .retain(|sender| sender.send(event.clone()).is_ok());
        }
    }
}
