//! The queue of hard tool-choice directives.
//!
//! A directive yields one or more tool choices, one per turn. The choice
//! being served is *in flight*; at the end of the turn the harness resolves
//! it or rejects it with a reason, and the directive's reject callback picks
//! what happens to it. A choice may carry an invoker: while it is in flight,
//! device and tool dispatches call that invoker before the pending stack.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::error::Error;
use crate::session::answer::ToolResult;
use crate::session::preview::BoxFuture;
use crate::session::request::ResolveRequest;

/// Answers a resolve or reject while its tool choice is in flight.
pub type QueueInvoker =
    Arc<dyn Fn(ResolveRequest) -> BoxFuture<Result<ToolResult, Error>> + Send + Sync>;

/// Wraps an async closure as a [`QueueInvoker`].
pub fn queue_invoker<F, Fut>(f: F) -> QueueInvoker
where
    F: Fn(ResolveRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolResult, Error>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(f(request)))
}

/// Why an in-flight tool choice was rejected at the end of its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The run was aborted.
    Aborted,
    /// The turn failed.
    Error,
    /// The queue was cleared (a session boundary or `clear_directives`).
    Cleared,
    /// The directive was removed.
    Removed,
    /// The tool is not available this turn.
    Unavailable,
    /// It carried an invoker that was never invoked.
    NotInvoked,
}

/// What a directive's reject callback wants done with the rejected choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RejectAction {
    /// Put the choice back at the head of the queue.
    Requeue,
    /// Drop this choice; the directive's later choices stay.
    #[default]
    Drop,
    /// Drop this choice and the rest of its directive.
    DropSequence,
}

/// Decides the fate of a rejected choice.
pub(crate) type RejectCallback =
    Arc<dyn Fn(&ToolChoice, RejectReason) -> RejectAction + Send + Sync>;

/// One forced tool call.
#[derive(Clone)]
pub struct ToolChoice {
    /// The tool the model must call.
    pub tool_name: String,
    /// Answers resolve/reject while this choice is in flight.
    pub invoker: Option<QueueInvoker>,
}

impl ToolChoice {
    /// A choice without an invoker.
    pub fn new(tool_name: impl Into<String>) -> Self {
        ToolChoice {
            tool_name: tool_name.into(),
            invoker: None,
        }
    }

    /// The same choice carrying an invoker.
    pub fn with_invoker(mut self, invoker: QueueInvoker) -> Self {
        self.invoker = Some(invoker);
        self
    }
}

impl std::fmt::Debug for ToolChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolChoice")
            .field("tool_name", &self.tool_name)
            .field("has_invoker", &self.invoker.is_some())
            .finish()
    }
}

/// A hard directive: a sequence of tool choices served one per turn.
#[derive(Clone, Default)]
pub struct Directive {
    choices: VecDeque<ToolChoice>,
    on_reject: Option<RejectCallback>,
}

impl std::fmt::Debug for Directive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directive")
            .field("choices", &self.choices)
            .field("on_reject", &self.on_reject.is_some())
            .finish()
    }
}

impl Directive {
    /// A directive yielding these choices in order.
    pub fn new(choices: impl IntoIterator<Item = ToolChoice>) -> Self {
        Directive {
            choices: choices.into_iter().collect(),
            on_reject: None,
        }
    }

    /// The same directive with a reject callback (the default drops).
    pub fn on_reject<F>(mut self, callback: F) -> Self
    where
        F: Fn(&ToolChoice, RejectReason) -> RejectAction + Send + Sync + 'static,
    {
        self.on_reject = Some(Arc::new(callback));
        self
    }
}

/// Identifies a directive in the queue.
pub type DirectiveId = u64;

struct Queued {
    id: DirectiveId,
    directive: Directive,
}

/// The choice being served and where it came from.
struct InFlight {
    id: DirectiveId,
    choice: ToolChoice,
    on_reject: Option<RejectCallback>,
    invoked: bool,
}

/// How a turn that served a tool choice ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The choice was honoured.
    Resolved,
    /// The choice was not honoured, for this reason.
    Rejected(RejectReason),
}

/// The hard-directive queue of one session.
#[derive(Default)]
pub(crate) struct DirectiveQueue {
    queue: VecDeque<Queued>,
    in_flight: Option<InFlight>,
    next_id: DirectiveId,
}

impl DirectiveQueue {
    pub(crate) fn enqueue(&mut self, directive: Directive) -> DirectiveId {
        self.next_id += 1;
        if !directive.choices.is_empty() {
            self.queue.push_back(Queued {
                id: self.next_id,
                directive,
            });
        }
        self.next_id
    }

    /// The tool the model must call next: the in-flight choice, else the
    /// head directive's next choice. Consumes nothing.
    pub(crate) fn peek_tool(&self) -> Option<&str> {
        if let Some(in_flight) = &self.in_flight {
            return Some(&in_flight.choice.tool_name);
        }
        self.queue
            .front()
            .and_then(|queued| queued.directive.choices.front())
            .map(|choice| choice.tool_name.as_str())
    }

    /// Starts serving the head directive's next choice (if nothing is in
    /// flight already) and returns the choice in flight.
    pub(crate) fn serve(&mut self) -> Option<ToolChoice> {
        if self.in_flight.is_none() {
            let queued = self.queue.front_mut()?;
            let choice = queued.directive.choices.pop_front()?;
            self.in_flight = Some(InFlight {
                id: queued.id,
                choice,
                on_reject: queued.directive.on_reject.clone(),
                invoked: false,
            });
            if queued.directive.choices.is_empty() {
                self.queue.pop_front();
            }
        }
        self.in_flight
            .as_ref()
            .map(|in_flight| in_flight.choice.clone())
    }

    /// The in-flight invoker, marked as invoked.
    pub(crate) fn take_invoker(&mut self) -> Option<(QueueInvoker, String)> {
        let in_flight = self.in_flight.as_mut()?;
        let invoker = in_flight.choice.invoker.clone()?;
        in_flight.invoked = true;
        Some((invoker, in_flight.choice.tool_name.clone()))
    }

    /// Ends the in-flight choice's turn. A choice served with an invoker
    /// that was never invoked counts as rejected `not_invoked`. Returns the
    /// reason it was rejected, if it was.
    pub(crate) fn finish(&mut self, end: TurnEnd) -> Option<RejectReason> {
        let in_flight = self.in_flight.take()?;
        let reason = match end {
            TurnEnd::Rejected(reason) => reason,
            TurnEnd::Resolved if in_flight.choice.invoker.is_some() && !in_flight.invoked => {
                RejectReason::NotInvoked
            }
            TurnEnd::Resolved => return None,
        };
        let action = in_flight
            .on_reject
            .as_ref()
            .map(|callback| callback(&in_flight.choice, reason))
            .unwrap_or_default();
        self.apply_reject_action(in_flight, action);
        Some(reason)
    }

    fn apply_reject_action(&mut self, in_flight: InFlight, action: RejectAction) {
        match action {
            RejectAction::Drop => {}
            RejectAction::Requeue => self.requeue(in_flight),
            RejectAction::DropSequence => self.queue.retain(|queued| queued.id != in_flight.id),
        }
    }

    /// Puts a rejected choice back at the head, in front of the rest of its
    /// own directive if that is still queued.
    fn requeue(&mut self, in_flight: InFlight) {
        match self.queue.front_mut() {
            Some(queued) if queued.id == in_flight.id => {
                queued.directive.choices.push_front(in_flight.choice)
            }
            _ => self.queue.push_front(Queued {
                id: in_flight.id,
                directive: Directive {
                    choices: VecDeque::from([in_flight.choice]),
                    on_reject: in_flight.on_reject,
                },
            }),
        }
    }

    /// Removes a directive; if its choice is in flight, that choice is
    /// rejected `removed` (and cannot be requeued into a removed directive).
    pub(crate) fn remove(&mut self, id: DirectiveId) -> bool {
        let queued_before = self.queue.len();
        self.queue.retain(|queued| queued.id != id);
        let mut removed = self.queue.len() != queued_before;
        if self.in_flight.as_ref().is_some_and(|f| f.id == id) {
            if let Some(in_flight) = self.in_flight.take() {
                if let Some(callback) = &in_flight.on_reject {
                    callback(&in_flight.choice, RejectReason::Removed);
                }
            }
            removed = true;
        }
        removed
    }

    /// Drops every directive; the in-flight one is rejected `cleared`
    /// whatever its callback answers.
    pub(crate) fn clear(&mut self) {
        if let Some(in_flight) = self.in_flight.take() {
            if let Some(callback) = &in_flight.on_reject {
                callback(&in_flight.choice, RejectReason::Cleared);
            }
        }
        self.queue.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len() + usize::from(self.in_flight.is_some())
    }
}
