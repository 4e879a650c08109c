//! External producers: a process outside the session stages a preview and is
//! told, as lines of JSON, when it is applied or discarded; it answers with
//! the result. The mount's `stage` file carries the lines; this module knows
//! nothing of files.
//!
//! The protocol the lines follow is [`crate::stage_protocol`].

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::{CallbackError, Error};
use crate::session::answer::ToolResult;
use crate::session::preview::{apply_fn, reject_fn, AgentProcess};
use crate::session::{Session, StageOptions};
use crate::stage_protocol::{ProducerMessage, ProducerReport, StageRequest, WithdrawReason};
use crate::texts;

/// The shared state between a staged preview's callbacks and its producer.
struct Link {
    session: Session,
    id: String,
    /// Lines for the producer; dropped once nothing more will come.
    outbox: Mutex<Option<mpsc::UnboundedSender<ProducerMessage>>>,
    /// Where the producer's next report goes, and whether the producer is
    /// gone (one lock, so an ask and the producer leaving cannot cross).
    awaiting: Mutex<Awaiting>,
}

#[derive(Default)]
struct Awaiting {
    answer: Option<oneshot::Sender<ProducerReport>>,
    gone: bool,
}

impl Link {
    fn send(&self, message: ProducerMessage) {
        if let Some(outbox) = self.outbox.lock().as_ref() {
            let _ = outbox.send(message);
        }
    }

    /// Sends the last message: the producer then reads end of file.
    fn finish(&self, last: Option<ProducerMessage>) {
        if let Some(outbox) = self.outbox.lock().take() {
            if let Some(message) = last {
                let _ = outbox.send(message);
            }
        }
    }

    /// Asks the producer something and waits for its report (`None` if it
    /// went away first).
    async fn ask(&self, message: ProducerMessage) -> Option<ProducerReport> {
        let (answer, report) = oneshot::channel();
        {
            let mut awaiting = self.awaiting.lock();
            if awaiting.gone {
                return None;
            }
            awaiting.answer = Some(answer);
        }
        self.send(message);
        report.await.ok()
    }

    async fn apply(
        self: Arc<Self>,
        reason: String,
        extra: Option<Value>,
    ) -> Result<ToolResult, CallbackError> {
        match self.ask(ProducerMessage::Apply { reason, extra }).await {
            Some(report) if report.ok => {
                self.finish(None);
                Ok(ToolResult::ok(report.text))
            }
            Some(report) => Err(CallbackError::Failed(report.text)),
            None => {
                // Nobody is left to apply it: it must not come back to the
                // head. Removing it now makes the requeue find nothing. It
                // may have been half applied: that is no plain failure.
                let why = WithdrawReason::DiedDuringApply;
                self.session.withdraw(&self.id, why.as_str());
                Err(CallbackError::OutcomeUnknown(
                    texts::PRODUCER_DIED.to_string(),
                ))
            }
        }
    }

    /// A failed discard keeps the preview pending and the conversation
    /// open: the producer waits for the next decision.
    async fn discard(self: Arc<Self>, reason: String) -> Result<Option<ToolResult>, CallbackError> {
        let report = self.ask(ProducerMessage::Discard { reason }).await;
        if let Some(report) = report.as_ref().filter(|report| !report.ok) {
            return Err(CallbackError::Failed(report.text.clone()));
        }
        self.finish(None);
        match report {
            Some(report) if !report.text.is_empty() => Ok(Some(ToolResult::ok(report.text))),
            _ => Ok(None),
        }
    }

    /// Takes the preview back (deadline, producer gone) if it is waiting
    /// for a decision. One being applied or discarded right now is left to
    /// that decision. Returns whether it was withdrawn.
    fn withdraw_waiting(&self, why: WithdrawReason) -> bool {
        let withdrawn = self.session.withdraw_waiting(&self.id, why.as_str());
        if withdrawn {
            self.finish(Some(ProducerMessage::Withdrawn { why }));
        }
        withdrawn
    }

    /// The deadline passed: withdraw the preview as soon as it is waiting
    /// (a decision under way when the deadline passes stands; if it fails,
    /// the preview is withdrawn then rather than offered again).
    async fn expire(self: Arc<Self>) {
        while self.session.is_pending(&self.id) && !self.withdraw_waiting(WithdrawReason::Deadline)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// One external producer's staged preview, as its stage file holds it.
/// Dropping it (the producer closed the file) withdraws a preview still
/// waiting for a decision.
pub struct Producer {
    link: Arc<Link>,
    inbox: Arc<tokio::sync::Mutex<Inbox>>,
}

struct Inbox {
    receiver: mpsc::UnboundedReceiver<ProducerMessage>,
    unread: Vec<u8>,
}

impl Inbox {
    /// Waits for the next message unless some bytes are still unread;
    /// leaves `unread` empty at end of file.
    async fn fill(&mut self) {
        if self.unread.is_empty() {
            if let Some(message) = self.receiver.recv().await {
                self.unread = message.line().into_bytes();
            }
        }
    }
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("id", &self.link.id)
            .finish_non_exhaustive()
    }
}

impl Producer {
    /// Stages a preview whose decisions go to this producer. A deadline
    /// (which needs a tokio runtime) withdraws it if it is still pending then.
    pub fn stage(session: &Session, request: &StageRequest) -> Producer {
        Producer::stage_noting(session, request, |_| {})
    }

    /// [`Producer::stage`], calling `before_staging` with the new id just
    /// before the preview is staged (the journal notes who stages it).
    pub fn stage_noting(
        session: &Session,
        request: &StageRequest,
        before_staging: impl FnOnce(&str),
    ) -> Producer {
        Producer::stage_for_agent(session, request, None, before_staging)
    }

    /// [`Producer::stage_noting`], for a call of the agent process `agent`
    /// (the stager is its hook), whose own processes may not decide it.
    pub(crate) fn stage_for_agent(
        session: &Session,
        request: &StageRequest,
        agent: Option<AgentProcess>,
        before_staging: impl FnOnce(&str),
    ) -> Producer {
        let (outbox, receiver) = mpsc::unbounded_channel();
        let id = crate::session::preview::next_preview_id(request.source_tool());
        before_staging(&id);
        let link = Arc::new(Link {
            session: session.clone(),
            id: id.clone(),
            outbox: Mutex::new(Some(outbox)),
            awaiting: Mutex::new(Awaiting::default()),
        });
        link.send(ProducerMessage::Staged { id: id.clone() });
        let (on_apply, on_discard) = (Arc::clone(&link), Arc::clone(&link));
        let options = StageOptions {
            id: Some(id),
            ..request.stage_options()
        };
        session.stage_for_agent(
            request.label.clone(),
            request.source_tool(),
            apply_fn(move |reason, extra| Arc::clone(&on_apply).apply(reason, extra)),
            Some(reject_fn(move |reason, _| {
                Arc::clone(&on_discard).discard(reason)
            })),
            options,
            agent,
        );
        if let Some(deadline) = request.deadline_ms {
            let weak = Arc::downgrade(&link);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(deadline)).await;
                if let Some(link) = weak.upgrade() {
                    link.expire().await;
                }
            });
        }
        Producer {
            link,
            inbox: Arc::new(tokio::sync::Mutex::new(Inbox {
                receiver,
                unread: Vec::new(),
            })),
        }
    }

    /// The staged preview's id.
    pub fn id(&self) -> &str {
        &self.link.id
    }

    /// Takes the producer's report of the decision it was given. `EINVAL`
    /// when no decision is waiting for one.
    pub fn report(&self, report: ProducerReport) -> Result<(), Error> {
        let awaiting = self.link.awaiting.lock().answer.take();
        match awaiting {
            Some(answer) => {
                let _ = answer.send(report);
                Ok(())
            }
            None => Err(Error::InvalidRequest(
                texts::NO_DECISION_AWAITING_RESULT.into(),
            )),
        }
    }

    /// The next bytes for the producer to read, at most `max`: waits for the
    /// next message; empty once nothing more will come (end of file).
    pub fn read(&self, max: usize) -> impl std::future::Future<Output = Vec<u8>> + Send + 'static {
        let inbox = Arc::clone(&self.inbox);
        async move {
            let mut inbox = inbox.lock().await;
            inbox.fill().await;
            let take = max.min(inbox.unread.len());
            inbox.unread.drain(..take).collect()
        }
    }

    /// Completes once [`Producer::read`] would not wait: a message is
    /// queued, or nothing more will come.
    pub fn readable(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let inbox = Arc::clone(&self.inbox);
        async move { inbox.lock().await.fill().await }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // A decision under way ends without this producer: an apply waiting
        // for its report fails (and withdraws the preview), a discard takes
        // the default text. A preview still waiting is withdrawn.
        {
            let mut awaiting = self.link.awaiting.lock();
            awaiting.gone = true;
            awaiting.answer = None;
        }
        self.link.withdraw_waiting(WithdrawReason::ProducerExited);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dispatch::{Decision, Dispatch};

    fn request(label: &str) -> StageRequest {
        StageRequest::parse(&format!("{{\"label\": \"{label}\"}}\n")).expect("valid request")
    }

    /// A device write, answered in the background.
    fn writing(
        session: &Session,
        device: Device,
        body: &'static str,
    ) -> tokio::task::JoinHandle<Decision> {
        let session = session.clone();
        tokio::spawn(async move { Dispatch::device(device, body).run(&session).await })
    }

    /// The producer reports its result.
    fn report(producer: &Producer, ok: bool, text: &str) {
        let text = text.to_string();
        producer
            .report(ProducerReport { ok, text })
            .expect("report");
    }

    async fn read_line(producer: &Producer) -> String {
        String::from_utf8(producer.read(4096).await).expect("utf-8")
    }

    #[tokio::test]
    async fn apply_goes_to_the_producer_and_its_result_to_the_resolver() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        let staged = read_line(&producer).await;
        assert_eq!(
            staged,
            format!("{{\"event\":\"staged\",\"id\":\"{}\"}}\n", producer.id())
        );
        let resolver = writing(&session, Device::Resolve, "ship it");
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"apply\",\"reason\":\"ship it\"}\n"
        );
        report(&producer, true, "done");
        let decision = resolver.await.expect("resolver");
        assert_eq!(decision.text(), "done");
        assert!(decision.is_ok());
        assert_eq!(read_line(&producer).await, "", "end of file once finished");
        assert_eq!(session.pending_count(), 0);
    }

    #[tokio::test]
    async fn a_failed_apply_keeps_the_preview_and_the_producer_waits_again() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        read_line(&producer).await;
        let failing = writing(&session, Device::Resolve, "go");
        read_line(&producer).await;
        report(&producer, false, "tests failed");
        let decision = failing.await.expect("resolver");
        assert_eq!(decision.text(), "Apply failed: tests failed");
        assert_eq!(decision.errno(), libc::EIO);
        assert_eq!(
            session.pending_head().map(|head| head.id),
            Some(producer.id().to_string())
        );
        let rejecting = writing(&session, Device::Reject, "never mind");
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"discard\",\"reason\":\"never mind\"}\n"
        );
        drop(producer);
        let decision = rejecting.await.expect("rejecter");
        assert_eq!(decision.text(), "Discarded: edit. Reason: never mind");
    }

    #[tokio::test]
    async fn closing_withdraws_and_closing_mid_apply_fails_it() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        drop(producer);
        assert_eq!(session.pending_count(), 0, "withdrawn");

        let producer = Producer::stage(&session, &request("edit"));
        read_line(&producer).await;
        let resolver = writing(&session, Device::Resolve, "go");
        read_line(&producer).await;
        drop(producer);
        let decision = resolver.await.expect("resolver");
        assert_eq!(decision.text(), texts::PRODUCER_DIED);
        assert_eq!(decision.errno(), libc::EIO);
        assert_eq!(
            session.pending_count(),
            0,
            "a gone producer's preview does not come back"
        );
        assert_eq!(session.in_progress_count(), 0);
    }

    #[tokio::test]
    async fn a_failed_discard_keeps_the_preview_and_the_conversation() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        read_line(&producer).await;
        let rejecting = writing(&session, Device::Reject, "no");
        read_line(&producer).await;
        report(&producer, false, "cannot revert");
        let decision = rejecting.await.expect("rejecter");
        assert_eq!(decision.text(), "cannot revert");
        assert_eq!(session.pending_count(), 1);
        let resolver = writing(&session, Device::Resolve, "then apply");
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"apply\",\"reason\":\"then apply\"}\n"
        );
        report(&producer, true, "applied");
        assert_eq!(resolver.await.expect("resolver").text(), "applied");
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_withdraws_and_is_never_an_approval() {
        let session = Session::new();
        let request =
            StageRequest::parse("{\"label\": \"x\", \"deadlineMs\": 1000}").expect("request");
        let producer = Producer::stage(&session, &request);
        read_line(&producer).await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"withdrawn\",\"why\":\"deadline\"}\n"
        );
        assert_eq!(read_line(&producer).await, "");
        assert_eq!(session.pending_count(), 0);
    }

    #[test]
    fn reports_without_a_decision_are_refused() {
        let session = Session::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let _entered = runtime.enter();
        let producer = Producer::stage(&session, &request("edit"));
        let refused = producer.report(ProducerReport {
            ok: true,
            text: String::new(),
        });
        assert_eq!(refused.map_err(|err| err.errno()), Err(libc::EINVAL));
    }
}
