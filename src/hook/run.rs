//! The loop: one event in, staged as a preview (or filed with the plan
//! desk), waited on within the deadline, and the verdict out; every
//! problem (a bad event, no mount, no decision in time) becomes a line for
//! stderr.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::answer::{allow_reason, deny_message, render, Verdict};
use super::input::read_event;
use super::label::preview_request;
use super::plan_file::{write_plan, Plan, PlanFileRefused};
use super::{HookInput, HookOptions, OnTimeout};
use crate::client::{
    check_mount, is_mount_gone, plan_control, read_text, write_device, ClientError, StagedPreview,
};
use crate::plan_command::PlanCommand;
use crate::plan_desk::{ContinueMode, PlanStatus};
use crate::stage_protocol::{ProducerMessage, WithdrawReason};
use crate::texts;

/// How long past the deadline the hook still waits for the mount's own
/// withdrawal before it stops waiting by itself (a wedged mount).
const GRACE: Duration = Duration::from_secs(1);

/// The watchdog's stack: it only sleeps, then renders one answer.
const WATCHDOG_STACK: usize = 256 * 1024;

/// How often an `async` plan review is looked at.
const PLAN_POLL: Duration = Duration::from_millis(200);

/// How the decision came out, before it is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decided {
    Allowed(String),
    /// A plan approved through the desk, to continue in this mode.
    PlanApproved(String, Option<ContinueMode>),
    Denied(String),
    TimedOut,
    /// Nothing was staged: the call's plan file was refused.
    PlanRefused(PlanFileRefused),
}

/// What `xdev hook` prints: the answer for stdout, and lines for stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookRun {
    /// The JSON line for the agent, if any.
    pub stdout: Option<String>,
    /// What went wrong, one line each (without a trailing newline).
    pub stderr: Vec<String>,
}

impl HookRun {
    /// Prints it as the hook does: the lines for stderr, then the answer
    /// for the agent, each with its newline. A stream that cannot be
    /// written is left: there is nobody else to tell.
    pub fn print(&self) {
        use std::io::Write;
        let mut stderr = std::io::stderr().lock();
        for line in &self.stderr {
            let _ = writeln!(stderr, "{line}");
        }
        if let Some(answer) = &self.stdout {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
        }
    }
}

/// What answers the agent when the deadline passes first (see
/// [`run_reading`]): it is handed that run, from the watchdog's thread,
/// while the deciding thread may still wait on a mount that hangs, so it
/// must end the process (`xdev hook` prints the run and exits).
pub type LateAnswer = fn(HookRun) -> !;

/// The [`LateAnswer`] of `xdev hook` and `xdev-hook`: prints the run and
/// ends the process (the thread that asked may be stuck on a mount that
/// hangs).
pub fn answer_late(run: HookRun) -> ! {
    run.print();
    std::process::exit(0)
}

/// Runs one hook event read from `input` (the hook's stdin): at most
/// [`MAX_EVENT_BYTES`](super::MAX_EVENT_BYTES) of it are kept; a longer
/// input is read to its end and dropped (so the agent writing it never
/// meets a closed pipe), decides nothing, and says why on stderr.
///
/// The decision is waited for on this thread. A call staged as a preview
/// asks the mount to withdraw it at `options.deadline`, and the hook then
/// answers that time ran out. Only a mount that hangs (its daemon stopped)
/// could hold the hook longer; a watchdog thread bounds that, at the
/// deadline plus a moment for the mount's own withdrawal, where the answer
/// matters: when it must be a deny (`--on-timeout deny`, `--strict`), and
/// for a plan, whose review the mount does not time. If the watchdog comes
/// first, it hands the timeout's run to `late` (which ends the process) and
/// this thread's own answer is never given. Otherwise the wait on a hung
/// mount lasts until the agent's own hook timeout ends the hook (600 s in
/// the shipped configurations, above the default deadline of 590 s), which
/// the agent takes as no opinion, as it would the hook's empty answer.
/// (Starting the thread cost a tenth of an allowed call.)
pub fn run_reading(options: &HookOptions, input: impl Read, late: LateAnswer) -> HookRun {
    let event = match read_event(input) {
        Ok(event) => event,
        Err(why) => {
            return HookRun {
                stdout: None,
                stderr: vec![why],
            }
        }
    };
    let input = match HookInput::parse(&event, options.agent) {
        Ok(input) => input,
        Err(error) => {
            return HookRun {
                stdout: None,
                stderr: vec![texts::hook_bad_input(error)],
            }
        }
    };
    let answered = Arc::new(AtomicBool::new(false));
    if needs_a_watchdog(options, &input) {
        watch_the_deadline(options, &input, Arc::clone(&answered), late);
    }
    let mut notes = Vec::new();
    let decided = decide(options, &input, &mut notes);
    let mut run = answer(options, &input, decided);
    run.stderr.extend(notes);
    if answered.swap(true, Ordering::AcqRel) {
        // The watchdog answered first and is ending the process.
        loop {
            std::thread::park();
        }
    }
    run
}

/// Whether the wait needs the hook's own bound (see [`run_reading`]).
fn needs_a_watchdog(options: &HookOptions, input: &HookInput) -> bool {
    options.on_timeout == OnTimeout::Deny || options.strict || input.tool_name == "ExitPlanMode"
}

/// Starts the watchdog: after the deadline and the grace, unless the
/// deciding thread has answered, it answers that time ran out. A thread
/// that cannot be started leaves the deadline to the mount alone.
fn watch_the_deadline(
    options: &HookOptions,
    input: &HookInput,
    answered: Arc<AtomicBool>,
    late: LateAnswer,
) {
    let (options, input) = (options.clone(), input.clone());
    let watchdog = std::thread::Builder::new()
        .stack_size(WATCHDOG_STACK)
        .spawn(move || {
            std::thread::sleep(options.deadline + GRACE);
            if !answered.swap(true, Ordering::AcqRel) {
                late(answer(&options, &input, Ok(Decided::TimedOut)));
            }
        });
    if let Err(error) = watchdog {
        tracing::debug!(%error, "no watchdog for the deadline");
    }
}

/// What to print for how the decision came out.
fn answer(
    options: &HookOptions,
    input: &HookInput,
    decided: Result<Decided, ClientError>,
) -> HookRun {
    let (verdict, problem) = match decided {
        Ok(Decided::Allowed(reason) | Decided::PlanApproved(reason, None)) => {
            (Verdict::Allow(allow_reason(&reason)), None)
        }
        Ok(Decided::PlanApproved(reason, Some(mode))) => {
            (Verdict::AllowIn(allow_reason(&reason), mode), None)
        }
        Ok(Decided::Denied(reason)) => (Verdict::Deny(deny_message(&reason)), None),
        Ok(Decided::TimedOut) => timed_out(options),
        // Like a bad input: nothing to decide, so no opinion, even with
        // --strict (which is about a mount that cannot be asked).
        Ok(Decided::PlanRefused(refused)) => {
            (Verdict::Quiet, Some(texts::hook_plan_refused(refused)))
        }
        Err(error) => unreachable_mount(options, &error),
    };
    HookRun {
        stdout: render(input, &verdict),
        stderr: problem.into_iter().collect(),
    }
}

fn timed_out(options: &HookOptions) -> (Verdict, Option<String>) {
    let waited = humantime::format_duration(options.deadline);
    match options.on_timeout {
        OnTimeout::Ask => (Verdict::Quiet, Some(texts::hook_timed_out_asking(waited))),
        OnTimeout::Deny => (
            Verdict::Deny(texts::hook_denied_after(&waited)),
            Some(texts::hook_timed_out_denying(waited)),
        ),
    }
}

fn unreachable_mount(options: &HookOptions, error: &ClientError) -> (Verdict, Option<String>) {
    if options.strict {
        (
            Verdict::Deny(texts::hook_could_not_ask(error)),
            Some(texts::hook_denying_strict(error)),
        )
    } else {
        (Verdict::Quiet, Some(texts::hook_asks_as_usual(error)))
    }
}

/// Asks the mount; `notes` collects what went wrong without changing the
/// decision, as lines for stderr.
fn decide(
    options: &HookOptions,
    input: &HookInput,
    notes: &mut Vec<String>,
) -> Result<Decided, ClientError> {
    check_mount(&options.mount)?;
    // The plan file is read only for a desk to file it; without one the
    // call is a preview whose label and detail the event alone makes.
    if input.tool_name == "ExitPlanMode" {
        if let Some(desk) = desk_status(&options.mount)? {
            match input.plan() {
                Ok(Some(plan)) => return decide_plan(options, &plan, &desk),
                Ok(None) => {}
                Err(refused) => return Ok(Decided::PlanRefused(refused)),
            }
        }
    }
    decide_preview(options, input, notes)
}

/// Stages the call as a preview and waits for its decision. The result
/// text (what `last` shows) says what was decided.
fn decide_preview(
    options: &HookOptions,
    input: &HookInput,
    notes: &mut Vec<String>,
) -> Result<Decided, ClientError> {
    let mut request = preview_request(input, options.deadline);
    if options.agent_may_decide {
        request.agent = None;
    }
    let mut staged = StagedPreview::stage(&options.mount, &request)?;
    tracing::debug!(id = staged.id(), "staged");
    let label = &request.label;
    match staged.next_decision()? {
        ProducerMessage::Apply { reason, .. } => {
            notes.extend(report(&staged, &texts::hook_allowed(label, &reason)));
            Ok(Decided::Allowed(reason))
        }
        ProducerMessage::Discard { reason } => {
            notes.extend(report(&staged, &texts::hook_denied(label, &reason)));
            Ok(Decided::Denied(reason))
        }
        ProducerMessage::Withdrawn {
            why: WithdrawReason::Deadline,
        } => Ok(Decided::TimedOut),
        other => Err(staged.unexpected(other)),
    }
}

/// Reports a decision's result text. The decision stands even if the
/// report cannot be made: the line for stderr that says so, unless the
/// mount stopped meanwhile.
fn report(staged: &StagedPreview, text: &str) -> Option<String> {
    match staged.report(true, text) {
        Err(error) if !is_mount_gone(&error) => Some(texts::hook_cannot_report(staged.id(), error)),
        _ => None,
    }
}

// ----- plans --------------------------------------------------------------

/// The plan desk's status, or `None` when the mount has none.
fn desk_status(mount: &Path) -> Result<Option<PlanStatus>, ClientError> {
    let path = mount.join("plan").join("status");
    if !path.exists() {
        return Ok(None);
    }
    let text = read_text(&path)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|err| ClientError::Protocol(texts::unexpected_content(&path, err)))
}

/// Writes the plan as `<slug>-plan.md`, proposes it (entering plan mode
/// first when the desk is not in it: the agent is) and waits for `xdev
/// plan approve` or `refine`.
fn decide_plan(
    options: &HookOptions,
    plan: &Plan,
    desk: &PlanStatus,
) -> Result<Decided, ClientError> {
    let dir = options
        .plan_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&desk.plan_dir));
    let slug = &plan.slug;
    write_plan(&dir.join(format!("{slug}-plan.md")), &plan.text)?;
    if !desk.plan_mode {
        plan_control(&options.mount, &PlanCommand::Enter)?;
    }
    let answer = write_device(&options.mount.join("propose"), slug.as_bytes())?;
    let decision = if answer == texts::PLAN_READY {
        wait_for_review(&options.mount, slug, desk.decisions)?
    } else {
        answer
    };
    let mode = continue_in(&options.mount, slug, desk.decisions);
    plan_decided(&decision, mode)
}

/// The mode the desk's decision about plan `slug` (made after `before`
/// decisions) said to continue in, if it said one.
fn continue_in(mount: &Path, slug: &str, before: u64) -> Option<ContinueMode> {
    let desk = desk_status(mount).ok().flatten()?;
    decided_since(&desk, slug, before)
        .then_some(desk.continue_in)
        .flatten()
}

/// Whether the desk's latest decision is a new one (made after `before`
/// decisions) about plan `slug`: counted, since two decisions may read the
/// same, and by plan, so another plan's decision is never taken for it.
fn decided_since(desk: &PlanStatus, slug: &str, before: u64) -> bool {
    let ours = desk
        .last_decided
        .as_ref()
        .is_some_and(|plan| plan.slug == slug);
    ours && desk.decisions > before
}

/// Waits for the `async` review of plan `slug` to end; its decision is the
/// desk's latest, unless the desk has made no decision since `before`
/// (counted: two decisions may read the same) or its latest was about
/// another plan: then this review was cancelled, and another plan's
/// approval is never taken for this one's.
fn wait_for_review(mount: &Path, slug: &str, before: u64) -> Result<String, ClientError> {
    loop {
        std::thread::sleep(PLAN_POLL);
        let Some(desk) = desk_status(mount)? else {
            return Err(ClientError::Protocol(texts::PLAN_DESK_WENT_AWAY.into()));
        };
        if desk.under_review.is_none() {
            return review_decision(desk, slug, before);
        }
    }
}

/// What ended the review of plan `slug`, once nothing is under review: the
/// desk's latest decision if it is a new one about this plan, else the
/// review was cancelled.
fn review_decision(desk: PlanStatus, slug: &str, before: u64) -> Result<String, ClientError> {
    let new = decided_since(&desk, slug, before);
    match desk.last_decision {
        Some(decision) if new => Ok(decision),
        _ => Err(ClientError::Protocol(texts::REVIEW_CANCELLED.into())),
    }
}

/// Approve allows; refine denies with the reviewer's feedback (the lines
/// after the desk's first sentence, which tells a device writer how to
/// propose again and means nothing to the agent).
fn plan_decided(decision: &str, mode: Option<ContinueMode>) -> Result<Decided, ClientError> {
    if decision.starts_with(texts::PLAN_APPROVED) {
        return Ok(Decided::PlanApproved(decision.to_string(), mode));
    }
    if let Some(rest) = decision.strip_prefix(texts::PLAN_REFINEMENT_REQUESTED) {
        let feedback = rest
            .split_once('\n')
            .map_or("", |(_, feedback)| feedback.trim());
        return Ok(Decided::Denied(texts::hook_plan_refined(feedback)));
    }
    Err(ClientError::Protocol(texts::unexpected_plan_decision(
        decision,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The desk after `decisions` decisions, the latest about `slug`.
    fn desk_after(decisions: u64, slug: &str) -> PlanStatus {
        PlanStatus {
            plan_mode: false,
            handler: crate::PlanHandlerKind::Async,
            plan_dir: "/p".into(),
            under_review: None,
            last_decision: Some(format!("{} at /p/{slug}-plan.md.", texts::PLAN_APPROVED)),
            last_decided: Some(crate::plan_desk::PlanUnderReview {
                slug: slug.into(),
                path: format!("/p/{slug}-plan.md"),
            }),
            decisions,
            continue_in: None,
        }
    }

    #[test]
    fn only_a_new_decision_about_its_own_plan_ends_a_review() {
        let decided = review_decision(desk_after(3, "auth"), "auth", 2);
        assert!(
            matches!(&decided, Ok(text) if text.contains("auth-plan.md")),
            "{decided:?}"
        );
        // Another plan's approval, made after this one was filed (and then
        // cancelled), is not this plan's.
        let other = review_decision(desk_after(3, "billing"), "auth", 2);
        assert!(matches!(other, Err(ClientError::Protocol(_))), "{other:?}");
        // No decision since the proposal: cancelled.
        let none = review_decision(desk_after(2, "auth"), "auth", 2);
        assert!(matches!(none, Err(ClientError::Protocol(_))), "{none:?}");
    }

    #[test]
    fn plans_are_decided_by_the_desk() {
        let plan_decided = |text: &str| plan_decided(text, None).ok();
        assert_eq!(
            plan_decided(
                "Plan approved at /p/a-plan.md. Plan mode exited; proceed with the implementation."
            ),
            Some(Decided::PlanApproved(
                "Plan approved at /p/a-plan.md. Plan mode exited; proceed with the implementation."
                    .into(),
                None
            ))
        );
        let revise = "The reviewer asked for changes to the plan. Revise the plan and present it again with ExitPlanMode.";
        assert_eq!(
            plan_decided("Plan refinement requested. Update the plan file, then write a to /x/propose again when ready.\nadd tests"),
            Some(Decided::Denied(format!("{revise}\n\nReviewer feedback: add tests")))
        );
        assert_eq!(
            plan_decided("Plan refinement requested. Update the plan file, then write a to /x/propose again when ready."),
            Some(Decided::Denied(revise.into()))
        );
        assert_eq!(plan_decided("something else"), None);
    }
}
