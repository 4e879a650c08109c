//! External producers: a process outside the session stages a preview and is
//! told, as lines of JSON, when it is applied or discarded; it answers with
//! the result. The mount's `stage` file carries the lines; this module knows
//! nothing of files.
//!
//! It knows whether an apply reached its producer: a read that took any
//! part of the apply line delivered it, and from then on only the producer
//! can tell what it did. An apply line no read has taken can still be
//! taken back (the mount stopping), and a producer that leaves before
//! reading it has applied nothing.
//!
//! The protocol the lines follow is [`crate::stage_protocol`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use crate::error::{CallbackError, Error};
use crate::session::answer::ToolResult;
use crate::session::preview::{apply_fn, reject_fn, AgentProcess, TakeBackFn};
use crate::session::{Outside, Session, StageOptions};
use crate::stage_protocol::{ProducerMessage, ProducerReport, StageRequest, WithdrawReason};
use crate::texts;

/// The shared state between a staged preview's callbacks and its producer.
struct Link {
    session: Session,
    id: String,
    /// The conversation, under one lock, so that a read, an ask, a take-back
    /// and the producer leaving never cross.
    talk: Mutex<Conversation>,
    /// Wakes the producer's reads once a line is queued or nothing more
    /// will come.
    more: Notify,
}

/// The lines for the producer, and where the decision asked stands.
#[derive(Default)]
struct Conversation {
    /// Lines no read has begun yet.
    queued: VecDeque<Line>,
    /// The rest of the line a read began.
    unread: Vec<u8>,
    /// Nothing more will be queued: reads get end of file after the rest.
    finished: bool,
    /// The producer closed its stage file.
    gone: bool,
    /// Where the decision waiting for the producer's report is answered.
    answer: Option<oneshot::Sender<Answer>>,
    /// How far the latest apply line got.
    apply: Delivery,
}

struct Line {
    bytes: Vec<u8>,
    /// The line of an apply.
    apply: bool,
}

/// How far an apply line got: a read that took any of it delivered it, so
/// the producer may have begun applying.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// No apply asked.
    #[default]
    None,
    /// Queued, no read has taken any of it.
    Queued,
    /// A read took (some of) it.
    Delivered,
    /// Taken back before any read took it.
    TakenBack,
}

/// How the decision asked of the producer ends.
enum Answer {
    /// The producer reported its result.
    Report(ProducerReport),
    /// The producer closed its stage file first; whether it had read the
    /// decision's line.
    Gone { delivered: bool },
    /// The mount took the apply back before the producer read it; the
    /// preview is withdrawn with this reason, the decision fails so.
    TakenBack { why: String, error: Error },
}

impl Conversation {
    fn queue(&mut self, message: &ProducerMessage, apply: bool) {
        if !self.finished {
            let bytes = message.line().into_bytes();
            self.queued.push_back(Line { bytes, apply });
        }
    }

    /// The next bytes for a read of at most `max` (empty at end of file),
    /// or `None` if there are none yet: the rest of the line a read began,
    /// or as many queued lines as fit whole (the `staged` line and a
    /// decision made as it was staged come in one read), or the start of
    /// one that does not fit.
    fn take(&mut self, max: usize) -> Option<Vec<u8>> {
        if max == 0 {
            return Some(Vec::new());
        }
        if self.unread.is_empty() {
            if self.queued.is_empty() {
                return self.finished.then(Vec::new);
            }
            let mut bytes = Vec::new();
            while let Some(line) = self.queued.front() {
                if !bytes.is_empty() && bytes.len() + line.bytes.len() > max {
                    break;
                }
                let Some(line) = self.queued.pop_front() else {
                    break;
                };
                if line.apply && self.apply == Delivery::Queued {
                    self.apply = Delivery::Delivered;
                }
                bytes.extend_from_slice(&line.bytes);
            }
            self.unread = bytes;
        }
        if max >= self.unread.len() {
            return Some(std::mem::take(&mut self.unread));
        }
        Some(self.unread.drain(..max).collect())
    }

    /// Whether a read would not wait.
    fn readable(&self) -> bool {
        self.finished || !self.unread.is_empty() || !self.queued.is_empty()
    }
}

impl Link {
    /// Runs `change` on the conversation and wakes the producer's reads.
    fn talk<T>(&self, change: impl FnOnce(&mut Conversation) -> T) -> T {
        let changed = change(&mut self.talk.lock());
        self.more.notify_waiters();
        changed
    }

    /// Sends the last message: the producer then reads end of file.
    fn finish(&self, last: Option<ProducerMessage>) {
        self.talk(|talk| {
            if let Some(message) = last {
                talk.queue(&message, false);
            }
            talk.finished = true;
        });
    }

    /// Waits until `ready` holds of the conversation, and returns what it
    /// gives.
    async fn when<T>(&self, mut ready: impl FnMut(&mut Conversation) -> Option<T>) -> T {
        loop {
            let more = self.more.notified();
            tokio::pin!(more);
            // Registered before looking, so no wake-up is missed between.
            more.as_mut().enable();
            if let Some(ready) = ready(&mut self.talk.lock()) {
                return ready;
            }
            more.await;
        }
    }

    /// Asks the producer to apply (or discard) and waits for how that ends.
    async fn ask(&self, message: ProducerMessage) -> Answer {
        let apply = matches!(message, ProducerMessage::Apply { .. });
        let (answer, answered) = oneshot::channel();
        let asked = self.talk(|talk| {
            if talk.gone || talk.finished {
                return false;
            }
            talk.answer = Some(answer);
            talk.apply = if apply {
                Delivery::Queued
            } else {
                Delivery::None
            };
            talk.queue(&message, apply);
            true
        });
        if !asked {
            // The producer left (or the mount took its apply back) before
            // the line could be sent: it never had it.
            return Answer::Gone { delivered: false };
        }
        // Every way the ask ends sends an answer; should none come, the
        // producer may have had the line.
        answered.await.unwrap_or(Answer::Gone { delivered: true })
    }

    async fn apply(
        self: Arc<Self>,
        reason: String,
        extra: Option<Value>,
    ) -> Result<ToolResult, CallbackError> {
        let answer = self.ask(ProducerMessage::Apply { reason, extra }).await;
        // A preview nobody is left to apply must not come back to the head:
        // withdrawing it now makes the requeue find nothing.
        match answer {
            Answer::Report(report) if report.ok => {
                self.finish(None);
                Ok(ToolResult::ok(report.text))
            }
            Answer::Report(report) => Err(CallbackError::Failed(report.text)),
            Answer::Gone { delivered: true } => {
                // It may have been half applied: that is no plain failure.
                let why = WithdrawReason::DiedDuringApply;
                self.session.withdraw(&self.id, why.as_str());
                Err(CallbackError::OutcomeUnknown(
                    texts::PRODUCER_DIED.to_string(),
                ))
            }
            Answer::Gone { delivered: false } => {
                // It never read the apply: nothing was applied.
                let why = WithdrawReason::ProducerExited;
                self.session.withdraw(&self.id, why.as_str());
                let text = texts::withdrawn_before_apply(&self.id, why);
                Err(CallbackError::NotDone(Error::NothingToResolve(text)))
            }
            Answer::TakenBack { why, error } => {
                self.session.withdraw(&self.id, &why);
                Err(CallbackError::NotDone(error))
            }
        }
    }

    /// A failed discard keeps the preview pending and the conversation
    /// open: the producer waits for the next decision.
    async fn discard(self: Arc<Self>, reason: String) -> Result<Option<ToolResult>, CallbackError> {
        let report = match self.ask(ProducerMessage::Discard { reason }).await {
            Answer::Report(report) if !report.ok => return Err(CallbackError::Failed(report.text)),
            Answer::Report(report) => Some(report),
            // Gone: a discard needs no producer.
            _ => None,
        };
        self.finish(None);
        match report {
            Some(report) if !report.text.is_empty() => Ok(Some(ToolResult::ok(report.text))),
            _ => Ok(None),
        }
    }

    /// Takes the apply under way back if no read has taken any of its
    /// line: the producer then reads end of file instead, and the apply
    /// fails with `error` (the preview withdrawn, reason `why`). True if
    /// nothing was applied nor will be; false once the line was delivered.
    fn take_back(&self, why: &str, error: Error) -> bool {
        self.talk(|talk| match talk.apply {
            Delivery::Delivered => false,
            Delivery::Queued => {
                talk.queued.retain(|line| !line.apply);
                talk.apply = Delivery::TakenBack;
                talk.finished = true;
                if let Some(answer) = talk.answer.take() {
                    let why = why.to_string();
                    let _ = answer.send(Answer::TakenBack { why, error });
                }
                true
            }
            // A discard is asked: there is no apply to take back.
            Delivery::None if talk.answer.is_some() => false,
            // No apply line was sent: the producer left first, or it was
            // taken back already.
            Delivery::None | Delivery::TakenBack => true,
        })
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
        let id = crate::session::preview::next_preview_id(request.source_tool());
        before_staging(&id);
        let link = Arc::new(Link {
            session: session.clone(),
            id: id.clone(),
            talk: Mutex::new(Conversation::default()),
            more: Notify::new(),
        });
        link.talk(|talk| talk.queue(&ProducerMessage::Staged { id: id.clone() }, false));
        let (on_apply, on_discard) = (Arc::clone(&link), Arc::clone(&link));
        let on_take_back = Arc::clone(&link);
        let take_back: TakeBackFn = Arc::new(move |why, error| on_take_back.take_back(why, error));
        let options = StageOptions {
            id: Some(id),
            ..request.stage_options()
        };
        session.stage_from_outside(
            request.label.clone(),
            request.source_tool(),
            apply_fn(move |reason, extra| Arc::clone(&on_apply).apply(reason, extra)),
            Some(reject_fn(move |reason, _| {
                Arc::clone(&on_discard).discard(reason)
            })),
            options,
            Outside {
                take_back: Some(take_back),
                agent,
            },
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
        Producer { link }
    }

    /// The staged preview's id.
    pub fn id(&self) -> &str {
        &self.link.id
    }

    /// Takes the producer's report of the decision it was given. `EINVAL`
    /// when no decision is waiting for one.
    pub fn report(&self, report: ProducerReport) -> Result<(), Error> {
        let answer = self.link.talk.lock().answer.take();
        match answer {
            Some(answer) => {
                let _ = answer.send(Answer::Report(report));
                Ok(())
            }
            None => Err(Error::InvalidRequest(
                texts::NO_DECISION_AWAITING_RESULT.into(),
            )),
        }
    }

    /// The next bytes for the producer to read, at most `max`: waits for the
    /// next message; empty once nothing more will come (end of file). Bytes
    /// are taken only when the future completes: one dropped before then
    /// (a read cancelled) took nothing, so an apply line counts as
    /// delivered only once a read has it.
    pub fn read(&self, max: usize) -> impl std::future::Future<Output = Vec<u8>> + Send + 'static {
        let link = Arc::clone(&self.link);
        async move { link.when(|talk| talk.take(max)).await }
    }

    /// Completes once [`Producer::read`] would not wait: a message is
    /// queued, or nothing more will come.
    pub fn readable(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let link = Arc::clone(&self.link);
        async move { link.when(|talk| talk.readable().then_some(())).await }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // A decision under way ends without this producer: an apply whose
        // line it had read has an unknown outcome, one it never read was
        // not applied (both withdraw the preview); a discard takes the
        // default text. A preview still waiting is withdrawn.
        self.link.talk(|talk| {
            talk.gone = true;
            if let Some(answer) = talk.answer.take() {
                let delivered = talk.apply == Delivery::Delivered;
                let _ = answer.send(Answer::Gone { delivered });
            }
        });
        self.link.withdraw_waiting(WithdrawReason::ProducerExited);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dispatch::{Decision, Dispatch};
    use crate::session::events::EventKind;

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

    /// A resolver deciding the producer's preview, once its apply line is
    /// queued for the producer (not read yet).
    async fn applying(session: &Session, producer: &Producer) -> tokio::task::JoinHandle<Decision> {
        read_line(producer).await;
        let resolver = writing(session, Device::Resolve, "go");
        producer.readable().await;
        resolver
    }

    #[tokio::test]
    async fn closing_before_reading_the_apply_withdraws_it_and_nothing_is_applied() {
        let session = Session::new();
        let mut events = session.subscribe();
        let producer = Producer::stage(&session, &request("edit"));
        let id = producer.id().to_string();
        let resolver = applying(&session, &producer).await;
        drop(producer);
        let decision = resolver.await.expect("resolver");
        assert_eq!(decision.errno(), libc::ENOENT);
        assert_eq!(
            decision.text(),
            texts::withdrawn_before_apply(&id, WithdrawReason::ProducerExited)
        );
        assert_eq!(session.pending_count(), 0);
        assert_eq!(session.in_progress_count(), 0);
        let kinds: Vec<_> = std::iter::from_fn(|| events.try_recv())
            .map(|event| (event.kind, event.reason))
            .collect();
        assert_eq!(
            kinds,
            [
                (EventKind::Staged, None),
                (EventKind::Withdrawn, Some("producer exited".to_string())),
            ],
            "withdrawn, never failed nor requeued"
        );
    }

    /// A decision made as the preview was staged (a policy's) is read
    /// with the `staged` line: lines queued together come in one read, as
    /// many as fit whole.
    #[tokio::test]
    async fn queued_lines_are_read_together_as_far_as_they_fit_whole() {
        for room_for_both in [true, false] {
            let session = Session::new();
            let producer = Producer::stage(&session, &request("edit"));
            let resolver = writing(&session, Device::Resolve, "go");
            while session.in_progress_count() == 0 {
                tokio::task::yield_now().await;
            }
            let staged = format!("{{\"event\":\"staged\",\"id\":\"{}\"}}\n", producer.id());
            let apply = "{\"event\":\"apply\",\"reason\":\"go\"}\n";
            if room_for_both {
                assert_eq!(read_line(&producer).await, format!("{staged}{apply}"));
            } else {
                let room = staged.len() + apply.len() - 1;
                assert_eq!(producer.read(room).await, staged.as_bytes());
                assert_eq!(read_line(&producer).await, apply);
            }
            report(&producer, true, "applied");
            let decision = resolver.await.expect("resolver");
            assert_eq!(decision.text(), "applied");
        }
    }

    #[tokio::test]
    async fn a_partly_read_apply_line_was_delivered() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        let resolver = applying(&session, &producer).await;
        assert_eq!(producer.read(3).await, b"{\"e");
        drop(producer);
        let decision = resolver.await.expect("resolver");
        assert_eq!(decision.text(), texts::PRODUCER_DIED);
        assert_eq!(decision.errno(), libc::EIO);
    }

    #[tokio::test]
    async fn an_apply_is_taken_back_only_until_the_producer_reads_it() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        let resolver = applying(&session, &producer).await;
        let cancelled = Error::Aborted("stopping".into());
        assert!(session.take_back_apply(producer.id(), "mount stopped", cancelled.clone()));
        let decision = resolver.await.expect("resolver");
        assert_eq!(decision.error(), Some(&cancelled));
        assert_eq!(
            read_line(&producer).await,
            "",
            "end of file, never the apply"
        );
        assert_eq!(session.pending_count(), 0, "withdrawn");
        assert!(
            !session.take_back_apply(producer.id(), "mount stopped", cancelled.clone()),
            "no longer staged"
        );

        let producer = Producer::stage(&session, &request("edit"));
        let resolver = applying(&session, &producer).await;
        assert!(read_line(&producer)
            .await
            .starts_with("{\"event\":\"apply\""));
        assert!(
            !session.take_back_apply(producer.id(), "mount stopped", cancelled),
            "the producer has it"
        );
        report(&producer, true, "done");
        assert_eq!(resolver.await.expect("resolver").text(), "done");
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
