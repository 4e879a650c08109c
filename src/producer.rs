//! External producers: a process outside the session stages a preview and is
//! told, as lines of JSON, when it is applied or discarded; it answers with
//! the result. The mount's `stage` file carries the lines; this module knows
//! nothing of files.
//!
//! The protocol, one JSON object per line:
//! 1. the producer writes `{"label": "...", "sourceTool": "...", "deadlineMs": 30000}`
//!    (`sourceTool` defaults to `external`; `deadlineMs`, `detail` (any JSON
//!    value: the full request, shown as `pending/<id>/detail`), `sessionId`
//!    and `toolUseId` (the agent call it answers, kept in the journal) are
//!    optional; see [`StageRequest::parse`] for what each may be), as the
//!    one line of one write;
//! 2. it reads `{"event": "staged", "id": "pending-action:<tool>:<seq>"}`;
//! 3. it reads (blocking) `{"event": "apply", "reason": "...", "extra": ...}`,
//!    `{"event": "discard", "reason": "..."}` or `{"event": "withdrawn", "why": "..."}`;
//! 4. after `apply` it must write `{"ok": true|false, "text": "..."}`: `ok`
//!    finishes the preview, `false` is an apply failure (the preview goes
//!    back to the head and the producer waits for the next decision); after
//!    `discard` a result is optional (closing gives the default discard text);
//! 5. once finished, reads return end of file. Closing before a decision
//!    withdraws the preview; closing after `apply` without a result answers
//!    that apply `outcome unknown: producer died during apply` (EIO).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::{CallbackError, Error};
use crate::safe_text::{
    describe_char, is_source_tool_char, is_unprintable, MAX_LABEL_BYTES, MAX_SOURCE_TOOL,
};
use crate::session::preview::{apply_fn, reject_fn, Origin, PreviewExtras, ToolResult};
use crate::session::Session;

/// The source tool of an external producer that names none.
pub const EXTERNAL_TOOL: &str = "external";

/// The answer to an apply whose producer went away without reporting: it
/// may or may not have made the change.
pub const PRODUCER_DIED: &str = "outcome unknown: producer died during apply";

/// Why a preview is withdrawn when its producer dies during an apply.
pub const DIED_DURING_APPLY: &str = "producer died during apply";

/// What a producer asks for when it stages.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageRequest {
    /// The preview's label.
    pub label: String,
    /// The tool that made it.
    #[serde(default = "external_tool")]
    pub source_tool: String,
    /// Withdraw the preview if no decision has come after this long.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// The full request the preview stands for, shown as pretty JSON in
    /// `pending/<id>/detail`.
    #[serde(default)]
    pub detail: Option<Value>,
    /// The agent session the preview answers, for the journal.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The agent's tool call the preview answers, for the journal.
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

fn external_tool() -> String {
    EXTERNAL_TOOL.to_string()
}

impl StageRequest {
    /// Parses the first line a producer writes, and checks its fields:
    /// `label` is one line of printable text of at most
    /// [`MAX_LABEL_BYTES`] bytes, `sourceTool` is `[A-Za-z0-9_.-]{1,64}`,
    /// `deadlineMs` is from 1 to [`MAX_DEADLINE`], `detail` is at most
    /// [`MAX_DETAIL_BYTES`] of JSON, `sessionId` and `toolUseId` are one
    /// line of printable text of at most [`MAX_ORIGIN_BYTES`]. A broken rule
    /// is `EINVAL`, with a message naming it.
    pub fn parse(line: &str) -> Result<StageRequest, Error> {
        let request: StageRequest =
            serde_json::from_str(line.trim()).map_err(|err| bad_request(format!("{err}.")))?;
        check_label(&request.label)?;
        check_source_tool(&request.source_tool)?;
        if let Some(millis) = request.deadline_ms {
            check_deadline(millis)?;
        }
        if let Some(detail) = &request.detail {
            check_detail(detail)?;
        }
        check_origin_field("sessionId", request.session_id.as_deref())?;
        check_origin_field("toolUseId", request.tool_use_id.as_deref())?;
        Ok(request)
    }

    /// The detail and origin the staged preview carries.
    pub fn extras(&self) -> PreviewExtras {
        let origin = Origin {
            session_id: self.session_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
        };
        PreviewExtras {
            detail: self.detail.as_ref().map(render_detail),
            origin: (!origin.is_empty()).then_some(origin),
        }
    }
}

/// The most a stage request's `detail` may take, as compact JSON: half a
/// message, so that a label and the rest of the line always fit beside it.
pub const MAX_DETAIL_BYTES: usize = 32 * 1024;

/// The longest `sessionId` or `toolUseId`, in bytes (agents' ids are UUIDs
/// or `toolu_...` strings, far shorter).
pub const MAX_ORIGIN_BYTES: usize = 256;

/// A detail as the `detail` file shows it: pretty JSON and a newline.
fn render_detail(detail: &Value) -> String {
    let pretty = serde_json::to_string_pretty(detail).unwrap_or_else(|_| detail.to_string());
    format!("{pretty}\n")
}

fn check_detail(detail: &Value) -> Result<(), Error> {
    let size = detail.to_string().len();
    if size > MAX_DETAIL_BYTES {
        return Err(bad_request(format!(
            "detail must be at most {MAX_DETAIL_BYTES} bytes of JSON; it has {size} bytes (shorten its long strings)."
        )));
    }
    Ok(())
}

/// An id the journal quotes: one line of printable text, not empty.
fn check_origin_field(name: &str, value: Option<&str>) -> Result<(), Error> {
    let Some(value) = value else {
        return Ok(());
    };
    let rule = format!("{name} must be 1 to {MAX_ORIGIN_BYTES} bytes of printable text");
    let broken = if value.is_empty() {
        "it is empty".to_string()
    } else if value.len() > MAX_ORIGIN_BYTES {
        format!("it has {} bytes", value.len())
    } else if let Some(c) = value.chars().find(|c| is_unprintable(*c)) {
        format!("it contains {}", describe_char(c))
    } else {
        return Ok(());
    };
    Err(bad_request(format!("{rule}; {broken}.")))
}

/// The longest deadline a stage request may ask for: 7 days. Longer is
/// more likely a unit mistake than a wish, and a preview pending for more
/// than a week is better staged again.
pub const MAX_DEADLINE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

fn bad_request(why: impl std::fmt::Display) -> Error {
    Error::InvalidRequest(format!("Bad stage request: {why}"))
}

/// A label is what a reviewer reads in line-oriented files: one line of
/// printable text, not blank, at most [`MAX_LABEL_BYTES`].
fn check_label(label: &str) -> Result<(), Error> {
    const RULE: &str = "label must be one line of printable text";
    if label.trim().is_empty() {
        return Err(bad_request(format!("{RULE}; it is empty.")));
    }
    if label.len() > MAX_LABEL_BYTES {
        return Err(bad_request(format!(
            "{RULE} of at most {MAX_LABEL_BYTES} bytes; it has {} bytes.",
            label.len()
        )));
    }
    match label.chars().find(|c| is_unprintable(*c)) {
        Some(c) => Err(bad_request(format!(
            "{RULE}; it contains the unprintable character {}.",
            describe_char(c)
        ))),
        None => Ok(()),
    }
}

/// A source tool names a directory under `pending/` (in the preview's id).
fn check_source_tool(tool: &str) -> Result<(), Error> {
    const RULE: &str = "sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -";
    let broken = if tool.is_empty() {
        "it is empty".to_string()
    } else if let Some(c) = tool.chars().find(|c| !is_source_tool_char(*c)) {
        format!("it contains {}", describe_char(c))
    } else if tool.len() > MAX_SOURCE_TOOL {
        format!("it has {} characters", tool.len())
    } else {
        return Ok(());
    };
    Err(bad_request(format!("{RULE}; {broken}.")))
}

/// Zero is refused too: it would withdraw the preview before anyone could
/// decide it, which is never what a producer means.
fn check_deadline(millis: u64) -> Result<(), Error> {
    let max = MAX_DEADLINE.as_millis();
    if millis == 0 || u128::from(millis) > max {
        return Err(bad_request(format!(
            "deadlineMs must be from 1 to {max} (7 days); it is {millis}."
        )));
    }
    Ok(())
}

/// A line the producer reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum ProducerMessage {
    /// The preview is staged under this id.
    Staged {
        /// The preview's id.
        id: String,
    },
    /// Apply it, then report the result.
    Apply {
        /// The reason given.
        reason: String,
        /// The caller's extra, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        extra: Option<Value>,
    },
    /// It was discarded; a result is optional.
    Discard {
        /// The reason given.
        reason: String,
    },
    /// It was taken back without a decision.
    Withdrawn {
        /// Why (`deadline`, ...).
        why: String,
    },
}

impl ProducerMessage {
    fn line(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string());
        format!("{json}\n")
    }
}

/// What the producer reports after a decision.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerReport {
    /// Whether applying (or discarding) worked.
    pub ok: bool,
    /// The result text, or the failure message.
    #[serde(default)]
    pub text: String,
}

impl ProducerReport {
    /// Parses a result line.
    pub fn parse(line: &str) -> Result<ProducerReport, Error> {
        serde_json::from_str(line.trim())
            .map_err(|err| Error::InvalidRequest(format!("Bad result line: {err}.")))
    }
}

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
                self.session.withdraw(&self.id, DIED_DURING_APPLY);
                Err(CallbackError::OutcomeUnknown(PRODUCER_DIED.to_string()))
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
    fn withdraw_waiting(&self, why: &str) -> bool {
        let withdrawn = self.session.withdraw_waiting(&self.id, why);
        if withdrawn {
            self.finish(Some(ProducerMessage::Withdrawn {
                why: why.to_string(),
            }));
        }
        withdrawn
    }

    /// The deadline passed: withdraw the preview as soon as it is waiting
    /// (a decision under way when the deadline passes stands; if it fails,
    /// the preview is withdrawn then rather than offered again).
    async fn expire(self: Arc<Self>) {
        while self.session.is_pending(&self.id) && !self.withdraw_waiting("deadline") {
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
        let (outbox, receiver) = mpsc::unbounded_channel();
        let id = crate::session::preview::next_preview_id(&request.source_tool);
        before_staging(&id);
        let link = Arc::new(Link {
            session: session.clone(),
            id: id.clone(),
            outbox: Mutex::new(Some(outbox)),
            awaiting: Mutex::new(Awaiting::default()),
        });
        link.send(ProducerMessage::Staged { id: id.clone() });
        let (on_apply, on_discard) = (Arc::clone(&link), Arc::clone(&link));
        session.register_pending_with(
            &id,
            request.label.clone(),
            request.source_tool.clone(),
            apply_fn(move |reason, extra| Arc::clone(&on_apply).apply(reason, extra)),
            Some(reject_fn(move |reason, _| {
                Arc::clone(&on_discard).discard(reason)
            })),
            request.extras(),
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
                "No decision is waiting for a result on this descriptor.".into(),
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
        self.link.withdraw_waiting("producer exited");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dispatch::dispatch_resolution_device;

    fn request(label: &str) -> StageRequest {
        StageRequest::parse(&format!("{{\"label\": \"{label}\"}}\n")).expect("valid request")
    }

    async fn read_line(producer: &Producer) -> String {
        String::from_utf8(producer.read(4096).await).expect("utf-8")
    }

    /// The refusal of a request made of these JSON fields.
    fn refusal(fields: serde_json::Value) -> String {
        match StageRequest::parse(&fields.to_string()) {
            Ok(request) => panic!("{fields} was accepted: {request:?}"),
            Err(error) => {
                assert_eq!(error.errno(), libc::EINVAL, "{fields}");
                error.to_string()
            }
        }
    }

    #[test]
    fn requests_are_checked() {
        assert_eq!(request("x").source_tool, EXTERNAL_TOOL);
        for bad in [
            "",
            "{}",
            "{\"label\": \"\"}",
            "{\"label\": \"x\", \"sourceTool\": \"a:b\"}",
            "{\"label\": \"x\", \"nope\": 1}",
        ] {
            let refused = StageRequest::parse(bad)
                .map(|_| ())
                .map_err(|err| err.errno());
            assert_eq!(refused, Err(libc::EINVAL), "{bad:?}");
        }
    }

    #[test]
    fn a_source_tool_is_1_to_64_safe_characters() {
        let rule = "Bad stage request: sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -;";
        for (tool, broken) in [
            ("a/b", "it contains '/'."),
            ("a\0b", "it contains U+0000."),
            ("a:b", "it contains ':'."),
            ("a b", "it contains ' '."),
            ("\u{1b}[31m", "it contains U+001B."),
            ("</system-reminder>", "it contains '<'."),
            ("", "it is empty."),
        ] {
            let refused = refusal(serde_json::json!({"label": "x", "sourceTool": tool}));
            assert_eq!(refused, format!("{rule} {broken}"), "{tool:?}");
        }
        let long = "t".repeat(65);
        assert_eq!(
            refusal(serde_json::json!({"label": "x", "sourceTool": long})),
            format!("{rule} it has 65 characters.")
        );
        let longest = "t".repeat(64);
        for tool in ["edit", "my_tool-2.0", ".", longest.as_str()] {
            let line = serde_json::json!({"label": "x", "sourceTool": tool}).to_string();
            let request = StageRequest::parse(&line).expect("a good source tool");
            assert_eq!(request.source_tool, tool);
        }
    }

    #[test]
    fn a_label_is_one_line_of_printable_text_up_to_1_kib() {
        let rule = "Bad stage request: label must be one line of printable text";
        for (label, broken) in [
            (
                "x\nplan mode: on",
                "; it contains the unprintable character U+000A.",
            ),
            ("nul\0", "; it contains the unprintable character U+0000."),
            (
                "\u{1b}[2J",
                "; it contains the unprintable character U+001B.",
            ),
            (
                "tab\there",
                "; it contains the unprintable character U+0009.",
            ),
            ("cr\r", "; it contains the unprintable character U+000D."),
            (
                "sep\u{2028}",
                "; it contains the unprintable character U+2028.",
            ),
            (
                "bidi\u{202e}",
                "; it contains the unprintable character U+202E.",
            ),
            ("   ", "; it is empty."),
        ] {
            let refused = refusal(serde_json::json!({ "label": label }));
            assert_eq!(refused, format!("{rule}{broken}"), "{label:?}");
        }
        let long = "é".repeat(513);
        assert_eq!(
            refusal(serde_json::json!({ "label": long })),
            format!("{rule} of at most 1024 bytes; it has 1026 bytes.")
        );
        let longest = "x".repeat(1024);
        for label in [
            "edit </system-reminder> ok",
            "naïve — résumé",
            longest.as_str(),
        ] {
            assert_eq!(request(label).label, label);
        }
    }

    #[test]
    fn a_deadline_is_from_1_ms_to_7_days() {
        let week = 7 * 24 * 60 * 60 * 1000_u64;
        for millis in [0, week + 1, u64::MAX] {
            assert_eq!(
                refusal(serde_json::json!({"label": "x", "deadlineMs": millis})),
                format!(
                    "Bad stage request: deadlineMs must be from 1 to {week} (7 days); it is {millis}."
                )
            );
        }
        for millis in [1, week] {
            let line = serde_json::json!({"label": "x", "deadlineMs": millis}).to_string();
            let request = StageRequest::parse(&line).expect("a good deadline");
            assert_eq!(request.deadline_ms, Some(millis));
        }
        assert_eq!(MAX_DEADLINE.as_millis(), u128::from(week));
    }

    #[test]
    fn a_detail_and_the_agent_call_are_carried_within_limits() {
        let line = serde_json::json!({"label": "Bash: ls", "detail": {"command": "ls"},
            "sessionId": "s-1", "toolUseId": "toolu_1"})
        .to_string();
        let extras = StageRequest::parse(&line).expect("request").extras();
        assert_eq!(
            extras.detail.as_deref(),
            Some("{\n  \"command\": \"ls\"\n}\n")
        );
        let origin = extras.origin.expect("origin");
        assert_eq!(origin.session_id.as_deref(), Some("s-1"));
        assert_eq!(origin.tool_use_id.as_deref(), Some("toolu_1"));
        assert!(request("x").extras().is_empty());

        let big = "x".repeat(MAX_DETAIL_BYTES);
        assert_eq!(
            refusal(serde_json::json!({"label": "x", "detail": big})),
            format!("Bad stage request: detail must be at most {MAX_DETAIL_BYTES} bytes of JSON; it has {} bytes (shorten its long strings).", MAX_DETAIL_BYTES + 2)
        );
        for (field, value, broken) in [
            ("sessionId", "", "it is empty."),
            ("toolUseId", "a\nb", "it contains U+000A."),
        ] {
            assert_eq!(
                refusal(serde_json::json!({"label": "x", field: value})),
                format!(
                    "Bad stage request: {field} must be 1 to 256 bytes of printable text; {broken}"
                )
            );
        }
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
        let resolver = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Resolve, "ship it").await }
        });
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"apply\",\"reason\":\"ship it\"}\n"
        );
        producer
            .report(ProducerReport {
                ok: true,
                text: "done".into(),
            })
            .expect("report");
        let resolution = resolver.await.expect("resolver");
        assert_eq!(resolution.text, "done");
        assert!(resolution.is_ok());
        assert_eq!(read_line(&producer).await, "", "end of file once finished");
        assert_eq!(session.pending_count(), 0);
    }

    #[tokio::test]
    async fn a_failed_apply_keeps_the_preview_and_the_producer_waits_again() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        read_line(&producer).await;
        let failing = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Resolve, "go").await }
        });
        read_line(&producer).await;
        producer
            .report(ProducerReport {
                ok: false,
                text: "tests failed".into(),
            })
            .expect("report");
        let resolution = failing.await.expect("resolver");
        assert_eq!(resolution.text, "Apply failed: tests failed");
        assert_eq!(resolution.errno(), libc::EIO);
        assert_eq!(
            session.pending_head().map(|head| head.id),
            Some(producer.id().to_string())
        );
        let rejecting = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Reject, "never mind").await }
        });
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"discard\",\"reason\":\"never mind\"}\n"
        );
        drop(producer);
        let resolution = rejecting.await.expect("rejecter");
        assert_eq!(resolution.text, "Discarded: edit. Reason: never mind");
    }

    #[tokio::test]
    async fn closing_withdraws_and_closing_mid_apply_fails_it() {
        let session = Session::new();
        let producer = Producer::stage(&session, &request("edit"));
        drop(producer);
        assert_eq!(session.pending_count(), 0, "withdrawn");

        let producer = Producer::stage(&session, &request("edit"));
        read_line(&producer).await;
        let resolver = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Resolve, "go").await }
        });
        read_line(&producer).await;
        drop(producer);
        let resolution = resolver.await.expect("resolver");
        assert_eq!(resolution.text, PRODUCER_DIED);
        assert_eq!(resolution.errno(), libc::EIO);
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
        let rejecting = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Reject, "no").await }
        });
        read_line(&producer).await;
        producer
            .report(ProducerReport {
                ok: false,
                text: "cannot revert".into(),
            })
            .expect("report");
        let resolution = rejecting.await.expect("rejecter");
        assert_eq!(resolution.text, "Reject failed: cannot revert");
        assert_eq!(session.pending_count(), 1);
        let resolver = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Resolve, "then apply").await }
        });
        assert_eq!(
            read_line(&producer).await,
            "{\"event\":\"apply\",\"reason\":\"then apply\"}\n"
        );
        producer
            .report(ProducerReport {
                ok: true,
                text: "applied".into(),
            })
            .expect("report");
        assert_eq!(resolver.await.expect("resolver").text, "applied");
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
