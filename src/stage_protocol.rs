//! The stage protocol: the lines an external producer and the mount's
//! `stage` file exchange, defined once for both sides. The daemon reads
//! [`StageRequest`] and [`ProducerReport`] and writes [`ProducerMessage`]
//! (see [`crate::producer`]); the client (`crate::client`) writes the
//! first two and reads the third, with the same types.
//!
//! The protocol, one JSON object per line:
//! 1. the producer writes `{"label": "...", "sourceTool": "...", "deadlineMs": 30000}`
//!    (`sourceTool` defaults to `external`; `deadlineMs`, `detail` (any JSON
//!    value: the full request, shown as `pending/<id>/detail`), `diff` (a
//!    string: what the preview would change, shown as `pending/<id>/diff`), `sessionId`
//!    and `toolUseId` (the agent call it answers, kept in the journal) and
//!    `agent` (`"parent"`: the producer is that agent's hook, and the
//!    agent's own processes may not decide the call) are optional; see [`StageRequest::parse`] for what each may be), as the
//!    one line of one write;
//! 2. it reads `{"event": "staged", "id": "pending-action:<tool>:<seq>"}`;
//! 3. it reads (blocking) `{"event": "apply", "reason": "...", "extra": ...}`,
//!    `{"event": "discard", "reason": "..."}` or `{"event": "withdrawn", "why": "..."}`;
//! 4. after `apply` it must write `{"ok": true|false, "text": "..."}`: `ok`
//!    finishes the preview, `false` is an apply failure (the preview goes
//!    back to the head and the producer waits for the next decision); after
//!    `discard` a result is optional (closing gives the default discard text);
//! 5. once finished, reads return end of file. Closing before a decision
//!    withdraws the preview; closing during an apply answers it
//!    `outcome unknown: producer died during apply` (EIO) once a read has
//!    returned any of the apply line, else withdraws it (ENOENT: nothing
//!    was applied). A mount whose shutdown grace period ends before the
//!    apply line is read takes it back: the producer reads end of file.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::error::Error;
use crate::safe_text::{
    describe_char, is_source_tool_char, is_unprintable, MAX_LABEL_BYTES, MAX_SOURCE_TOOL,
};
use crate::session::preview::{Origin, StageOptions};
use crate::texts;

/// The source tool of an external producer that names none.
pub const EXTERNAL_TOOL: &str = "external";

/// The most a stage request's `detail` may take, as compact JSON: half a
/// message, so that a label and the rest of the line always fit beside it.
pub const MAX_DETAIL_BYTES: usize = 32 * 1024;

/// The most a stage request's `diff` may take, as a JSON string (quotes
/// and escapes counted): with a whole [`MAX_DETAIL_BYTES`] detail and the
/// longest label beside it, the line still fits one message.
pub const MAX_DIFF_BYTES: usize = 24 * 1024;

/// The longest `cwd`, in bytes: Linux's `PATH_MAX`.
pub const MAX_CWD_BYTES: usize = 4096;

/// The longest `sessionId` or `toolUseId`, in bytes (agents' ids are UUIDs
/// or `toolu_...` strings, far shorter).
pub const MAX_ORIGIN_BYTES: usize = 256;

/// The longest deadline a stage request may ask for: 7 days. Longer is
/// more likely a unit mistake than a wish, and a preview pending for more
/// than a week is better staged again.
pub const MAX_DEADLINE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// One line of the protocol: compact JSON and a newline.
fn json_line(value: &impl Serialize) -> String {
    // These types hold only strings, numbers and JSON values, which always
    // serialize; the fallback is never sent in practice.
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string());
    format!("{json}\n")
}

/// What a producer asks for when it stages: the first line it writes.
/// Optional fields that are `None` are left out of the line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageRequest {
    /// The preview's label.
    pub label: String,
    /// The tool that made it; [`EXTERNAL_TOOL`] when `None` (see
    /// [`StageRequest::source_tool`]).
    #[serde(
        default,
        deserialize_with = "present_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_tool: Option<String>,
    /// Withdraw the preview if no decision has come after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// The full request the preview stands for, shown as pretty JSON in
    /// `pending/<id>/detail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
    /// What the preview would change (a unified diff, or one line saying
    /// why there is none), shown in `pending/<id>/diff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The working directory of the agent whose call it is: an absolute
    /// path, shown in `pending/<id>/cwd` and `status.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The agent session the preview answers, for the journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's tool call the preview answers, for the journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Where the agent whose call this is runs, when the producer is its
    /// hook: decisions from that agent's own processes are then refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<StagerAgent>,
}

/// Where the mount finds the agent process a hook's preview belongs to.
/// The stager names only the relation; the mount finds the process itself,
/// from the stager's pid as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StagerAgent {
    /// The process that ran the stager, as an agent runs its hook
    /// (`"parent"`), looking through wrappers that hand the stager their
    /// standard input (`sh -c`, `bash -lc`, `timeout`).
    Parent,
}

/// A `sourceTool` that is present must be a string: `null` is refused as
/// any other non-string is, rather than meaning "the default".
fn present_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
}

impl StageRequest {
    /// Parses the first line a producer writes, and checks its fields:
    /// `label` is one line of printable text of at most
    /// [`MAX_LABEL_BYTES`] bytes, `sourceTool` is `[A-Za-z0-9_.-]{1,64}`,
    /// `deadlineMs` is from 1 to [`MAX_DEADLINE`], `detail` is at most
    /// [`MAX_DETAIL_BYTES`] of JSON, `diff` is at most [`MAX_DIFF_BYTES`]
    /// as a JSON string, `sessionId` and `toolUseId` are one
    /// line of printable text of at most [`MAX_ORIGIN_BYTES`]. A broken rule
    /// is `EINVAL`, with a message naming it.
    pub fn parse(line: &str) -> Result<StageRequest, Error> {
        let request: StageRequest =
            serde_json::from_str(line.trim()).map_err(|err| bad_request(format!("{err}.")))?;
        check_label(&request.label)?;
        check_source_tool(request.source_tool())?;
        if let Some(millis) = request.deadline_ms {
            check_deadline(millis)?;
        }
        if let Some(detail) = &request.detail {
            check_detail(detail)?;
        }
        if let Some(diff) = &request.diff {
            check_diff(diff)?;
        }
        if let Some(broken) = request.cwd.as_deref().and_then(cwd_breaks) {
            let rule = texts::stage_cwd_rule(MAX_CWD_BYTES);
            return Err(bad_request(texts::rule_broken(&rule, &broken)));
        }
        check_origin_field("sessionId", request.session_id.as_deref())?;
        check_origin_field("toolUseId", request.tool_use_id.as_deref())?;
        Ok(request)
    }

    /// The tool that made the preview: the one named, else
    /// [`EXTERNAL_TOOL`].
    pub fn source_tool(&self) -> &str {
        self.source_tool.as_deref().unwrap_or(EXTERNAL_TOOL)
    }

    /// The line a producer writes to stage this request.
    pub fn line(&self) -> String {
        json_line(self)
    }

    /// How the preview is staged: with its detail and the agent call it
    /// answers, under a fresh id.
    pub fn stage_options(&self) -> StageOptions {
        let origin = Origin {
            session_id: self.session_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
        };
        StageOptions {
            id: None,
            detail: self.detail.as_ref().map(render_detail),
            diff: self.diff.clone(),
            cwd: self.cwd.clone(),
            origin: (!origin.is_empty()).then_some(origin),
        }
    }
}

/// A detail as the `detail` file shows it: pretty JSON and a newline.
fn render_detail(detail: &Value) -> String {
    let pretty = serde_json::to_string_pretty(detail).unwrap_or_else(|_| detail.to_string());
    format!("{pretty}\n")
}

fn check_detail(detail: &Value) -> Result<(), Error> {
    if detail_fits(detail) {
        return Ok(());
    }
    let size = detail.to_string().len();
    Err(bad_request(texts::stage_detail_too_big(
        MAX_DETAIL_BYTES,
        size,
    )))
}

fn check_diff(diff: &str) -> Result<(), Error> {
    let size = diff_json_len(diff);
    if size <= MAX_DIFF_BYTES {
        return Ok(());
    }
    Err(bad_request(texts::stage_diff_too_big(MAX_DIFF_BYTES, size)))
}

/// How many bytes `text` takes as a JSON string, quotes and escapes
/// counted: what a `diff` is measured by.
pub fn diff_json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(usize::MAX, |json| json.len())
}

/// Whether `diff` is within [`MAX_DIFF_BYTES`] (as a JSON string).
pub fn diff_fits(diff: &str) -> bool {
    diff_json_len(diff) <= MAX_DIFF_BYTES
}

/// Whether `detail` is within [`MAX_DETAIL_BYTES`] (compact JSON).
pub fn detail_fits(detail: &Value) -> bool {
    detail.to_string().len() <= MAX_DETAIL_BYTES
}

/// How an id the journal quotes (`sessionId`, `toolUseId`) breaks its rule
/// (one line of printable text, not empty, at most [`MAX_ORIGIN_BYTES`]),
/// if it does.
fn origin_breaks(value: &str) -> Option<String> {
    if value.is_empty() {
        Some(texts::IT_IS_EMPTY.to_string())
    } else if value.len() > MAX_ORIGIN_BYTES {
        Some(texts::it_has_bytes(value.len()))
    } else {
        let c = value.chars().find(|c| is_unprintable(*c))?;
        Some(texts::it_contains(&describe_char(c)))
    }
}

/// How a `cwd` breaks its rule (an absolute path of at most
/// [`MAX_CWD_BYTES`] of printable text), if it does.
fn cwd_breaks(cwd: &str) -> Option<String> {
    if !cwd.starts_with('/') {
        Some(texts::IT_IS_RELATIVE.to_string())
    } else if cwd.len() > MAX_CWD_BYTES {
        Some(texts::it_has_bytes(cwd.len()))
    } else {
        let c = cwd.chars().find(|c| is_unprintable(*c))?;
        Some(texts::it_contains(&describe_char(c)))
    }
}

/// Whether `cwd` may be a stage request's `cwd`.
pub fn cwd_fits(cwd: &str) -> bool {
    cwd_breaks(cwd).is_none()
}

/// Whether `value` may be a `sessionId` or `toolUseId`.
pub fn origin_fits(value: &str) -> bool {
    origin_breaks(value).is_none()
}

fn check_origin_field(name: &str, value: Option<&str>) -> Result<(), Error> {
    let Some(broken) = value.and_then(origin_breaks) else {
        return Ok(());
    };
    let rule = texts::stage_origin_rule(name, MAX_ORIGIN_BYTES);
    Err(bad_request(texts::rule_broken(&rule, &broken)))
}

fn bad_request(why: impl fmt::Display) -> Error {
    Error::InvalidRequest(texts::bad_stage_request(why))
}

/// A label is what a reviewer reads in line-oriented files: one line of
/// printable text, not blank, at most [`MAX_LABEL_BYTES`].
fn check_label(label: &str) -> Result<(), Error> {
    const RULE: &str = texts::STAGE_LABEL_RULE;
    if label.trim().is_empty() {
        return Err(bad_request(texts::rule_broken(RULE, texts::IT_IS_EMPTY)));
    }
    if label.len() > MAX_LABEL_BYTES {
        return Err(bad_request(texts::stage_label_too_long(
            MAX_LABEL_BYTES,
            label.len(),
        )));
    }
    match label.chars().find(|c| is_unprintable(*c)) {
        Some(c) => Err(bad_request(texts::rule_broken(
            RULE,
            &texts::it_contains_unprintable(&describe_char(c)),
        ))),
        None => Ok(()),
    }
}

/// A source tool names a directory under `pending/` (in the preview's id).
fn check_source_tool(tool: &str) -> Result<(), Error> {
    const RULE: &str = texts::STAGE_SOURCE_TOOL_RULE;
    let broken = if tool.is_empty() {
        texts::IT_IS_EMPTY.to_string()
    } else if let Some(c) = tool.chars().find(|c| !is_source_tool_char(*c)) {
        texts::it_contains(&describe_char(c))
    } else if tool.len() > MAX_SOURCE_TOOL {
        texts::it_has_characters(tool.len())
    } else {
        return Ok(());
    };
    Err(bad_request(texts::rule_broken(RULE, &broken)))
}

fn check_deadline(millis: u64) -> Result<(), Error> {
    if !is_stage_deadline(u128::from(millis)) {
        let max = MAX_DEADLINE.as_millis();
        return Err(bad_request(texts::stage_deadline_out_of_range(max, millis)));
    }
    Ok(())
}

/// Whether a stage request may ask for a deadline of `millis`
/// milliseconds (whole ones, as the wire carries it): from 1 to
/// [`MAX_DEADLINE`]. Zero is refused too: it would withdraw the preview
/// before anyone could decide it, which is never what a producer means.
/// `xdev stage --deadline` and `xdev hook --deadline` are checked by it
/// before anything is staged.
pub fn is_stage_deadline(millis: u128) -> bool {
    millis != 0 && millis <= MAX_DEADLINE.as_millis()
}

/// Why a preview was taken back without a decision. On the wire (the
/// `why` of a `withdrawn` line) and in the journal's `reason` it is
/// [`WithdrawReason::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum WithdrawReason {
    /// The producer's deadline passed first; never an approval.
    Deadline,
    /// The producer closed its stage file before a decision.
    ProducerExited,
    /// The producer went away while it was applying the preview: the
    /// outcome is unknown, and the preview must not come back.
    DiedDuringApply,
}

impl WithdrawReason {
    /// Every reason, for tests and tables.
    pub const ALL: [WithdrawReason; 3] = [
        WithdrawReason::Deadline,
        WithdrawReason::ProducerExited,
        WithdrawReason::DiedDuringApply,
    ];

    /// The reason as the protocol and the journal spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawReason::Deadline => "deadline",
            WithdrawReason::ProducerExited => "producer exited",
            WithdrawReason::DiedDuringApply => "producer died during apply",
        }
    }
}

impl fmt::Display for WithdrawReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<WithdrawReason> for &'static str {
    fn from(reason: WithdrawReason) -> &'static str {
        reason.as_str()
    }
}

/// A withdraw reason this crate does not know.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", texts::unknown_withdraw_reason(.0))]
pub struct UnknownWithdrawReason(pub String);

impl FromStr for WithdrawReason {
    type Err = UnknownWithdrawReason;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        WithdrawReason::ALL
            .into_iter()
            .find(|reason| reason.as_str() == text)
            .ok_or_else(|| UnknownWithdrawReason(text.to_string()))
    }
}

impl TryFrom<String> for WithdrawReason {
    type Error = UnknownWithdrawReason;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

/// A line the producer reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra: Option<Value>,
    },
    /// It was discarded; a result is optional.
    Discard {
        /// The reason given.
        reason: String,
    },
    /// It was taken back without a decision.
    Withdrawn {
        /// Why.
        why: WithdrawReason,
    },
}

impl ProducerMessage {
    /// The line the producer reads.
    pub fn line(&self) -> String {
        json_line(self)
    }
}

/// What the producer reports after a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
            .map_err(|err| Error::InvalidRequest(texts::bad_result_line(err)))
    }

    /// The line a producer writes to report.
    pub fn line(&self) -> String {
        json_line(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(label: &str) -> StageRequest {
        StageRequest::parse(&format!("{{\"label\": \"{label}\"}}\n")).expect("valid request")
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
        assert_eq!(request("x").source_tool(), EXTERNAL_TOOL);
        for bad in [
            "",
            "{}",
            "{\"label\": \"\"}",
            "{\"label\": \"x\", \"sourceTool\": \"a:b\"}",
            "{\"label\": \"x\", \"nope\": 1}",
            "{\"label\": \"x\", \"sourceTool\": null}",
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
            assert_eq!(request.source_tool(), tool);
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
            (
                "zero\u{200b}width",
                "; it contains the unprintable character U+200B.",
            ),
            (
                "\u{feff}bom",
                "; it contains the unprintable character U+FEFF.",
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
        let options = StageRequest::parse(&line).expect("request").stage_options();
        assert_eq!(
            options.detail.as_deref(),
            Some("{\n  \"command\": \"ls\"\n}\n")
        );
        let origin = options.origin.expect("origin");
        assert_eq!(origin.session_id.as_deref(), Some("s-1"));
        assert_eq!(origin.tool_use_id.as_deref(), Some("toolu_1"));
        assert_eq!(request("x").stage_options(), StageOptions::default());

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

    #[test]
    fn a_diff_is_carried_as_text_within_its_limit_and_a_full_line_fits_a_message() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        let line = serde_json::json!({"label": "Edit: x", "diff": diff}).to_string();
        let options = StageRequest::parse(&line).expect("request").stage_options();
        assert_eq!(options.diff.as_deref(), Some(diff));

        // Measured as JSON: a quote takes two bytes there.
        let quotes = "\"".repeat(MAX_DIFF_BYTES / 2);
        assert_eq!(
            refusal(serde_json::json!({"label": "x", "diff": quotes})),
            format!("Bad stage request: diff must be at most {MAX_DIFF_BYTES} bytes as a JSON string; it has {} bytes (cut it, and say so in it).", MAX_DIFF_BYTES + 2)
        );
        assert_eq!(
            refusal(serde_json::json!({"label": "x", "diff": 1})),
            "Bad stage request: invalid type: integer `1`, expected a string at line 1 column 9."
        );

        // The largest of every field together is still one message.
        let request = StageRequest {
            cwd: Some(format!("/{}", "c".repeat(MAX_CWD_BYTES - 1))),
            label: "\"".repeat(crate::safe_text::MAX_LABEL_BYTES),
            source_tool: Some("t".repeat(crate::safe_text::MAX_SOURCE_TOOL)),
            deadline_ms: Some(u64::MAX),
            detail: Some(Value::String("x".repeat(MAX_DETAIL_BYTES - 2))),
            diff: Some("x".repeat(MAX_DIFF_BYTES - 2)),
            session_id: Some("s".repeat(MAX_ORIGIN_BYTES)),
            tool_use_id: Some("u".repeat(MAX_ORIGIN_BYTES)),
            agent: Some(StagerAgent::Parent),
        };
        assert!(request.line().len() <= crate::device::MAX_MESSAGE);
    }

    #[test]
    fn a_cwd_is_an_absolute_path_of_printable_text() {
        let line = serde_json::json!({"label": "x", "cwd": "/work/app"}).to_string();
        let options = StageRequest::parse(&line).expect("request").stage_options();
        assert_eq!(options.cwd.as_deref(), Some("/work/app"));
        let rule = format!("Bad stage request: cwd must be an absolute path of at most {MAX_CWD_BYTES} bytes of printable text; ");
        for (cwd, broken) in [
            ("work/app".to_string(), "it is relative.".to_string()),
            ("/a\nb".to_string(), "it contains U+000A.".to_string()),
            (
                format!("/{}", "c".repeat(MAX_CWD_BYTES)),
                format!("it has {} bytes.", MAX_CWD_BYTES + 1),
            ),
        ] {
            assert_eq!(
                refusal(serde_json::json!({"label": "x", "cwd": cwd})),
                format!("{rule}{broken}")
            );
        }
    }

    #[test]
    fn withdraw_reasons_are_spelled_as_on_the_wire() {
        for reason in WithdrawReason::ALL {
            assert_eq!(reason.as_str().parse(), Ok(reason));
            assert_eq!(reason.to_string(), reason.as_str());
        }
        assert_eq!(WithdrawReason::Deadline.as_str(), "deadline");
        assert_eq!(WithdrawReason::ProducerExited.as_str(), "producer exited");
        assert_eq!(
            WithdrawReason::DiedDuringApply.as_str(),
            "producer died during apply"
        );
        assert_eq!(
            "later".parse::<WithdrawReason>(),
            Err(UnknownWithdrawReason("later".into()))
        );
    }

    #[test]
    fn messages_read_back_as_they_were_sent() {
        let lines = [
            (
                ProducerMessage::Staged {
                    id: "pending-action:x:1".into(),
                },
                "{\"event\":\"staged\",\"id\":\"pending-action:x:1\"}\n",
            ),
            (
                ProducerMessage::Apply {
                    reason: "go".into(),
                    extra: None,
                },
                "{\"event\":\"apply\",\"reason\":\"go\"}\n",
            ),
            (
                ProducerMessage::Apply {
                    reason: "go".into(),
                    extra: Some(serde_json::json!({"k": 1})),
                },
                "{\"event\":\"apply\",\"reason\":\"go\",\"extra\":{\"k\":1}}\n",
            ),
            (
                ProducerMessage::Discard {
                    reason: "no".into(),
                },
                "{\"event\":\"discard\",\"reason\":\"no\"}\n",
            ),
            (
                ProducerMessage::Withdrawn {
                    why: WithdrawReason::Deadline,
                },
                "{\"event\":\"withdrawn\",\"why\":\"deadline\"}\n",
            ),
        ];
        for (message, line) in lines {
            assert_eq!(message.line(), line);
            let read: ProducerMessage = serde_json::from_str(line.trim()).expect("json");
            assert_eq!(read, message);
        }
        let report = ProducerReport {
            ok: true,
            text: "done".into(),
        };
        assert_eq!(report.line(), "{\"ok\":true,\"text\":\"done\"}\n");
        assert_eq!(
            ProducerReport::parse(&report.line()).expect("report"),
            report
        );
    }

    #[test]
    fn a_hook_says_its_agent_is_its_parent_and_names_no_pid() {
        let hook = StageRequest::parse(r#"{"label": "Bash: ls", "agent": "parent"}"#)
            .expect("a hook's request");
        assert_eq!(hook.agent, Some(StagerAgent::Parent));
        assert_eq!(
            hook.line(),
            "{\"label\":\"Bash: ls\",\"agent\":\"parent\"}\n"
        );
        assert_eq!(request("edit").agent, None);
        use serde_json::json;
        for agent in [json!("self"), json!(4242), json!({"pid": 4242})] {
            let refused = refusal(json!({"label": "x", "agent": agent}));
            assert!(refused.starts_with("Bad stage request: "), "{refused}");
        }
    }

    #[test]
    fn request_lines_leave_out_what_is_not_given() {
        let request = StageRequest {
            label: "edit a".into(),
            ..StageRequest::default()
        };
        assert_eq!(request.line(), "{\"label\":\"edit a\"}\n");
        assert_eq!(
            StageRequest::parse(&request.line()).expect("request"),
            request
        );
    }
}
