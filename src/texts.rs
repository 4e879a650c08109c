//! The exact user-facing texts of SPEC section 3, in one place.
//!
//! `dir` is always the mount point as the user gave it (for example `/xdev`).

use crate::safe_text::one_line;

// Adapter texts.

/// The usage line of a pending item's `resolve` or `reject` (at `path`
/// under the mount, for item `id`); `verb` is [`ITEM_APPLY`] or
/// [`ITEM_DISCARD`].
pub fn item_usage(dir: &str, path: &str, verb: &str, id: &str) -> String {
    format!(
        "Write a one-sentence reason as plain text to {dir}/{path} to {verb} {id} (head or not)."
    )
}

/// What an item's `resolve` does, in its usage line.
pub const ITEM_APPLY: &str = "APPLY";

/// What an item's `reject` does, in its usage line.
pub const ITEM_DISCARD: &str = "DISCARD";

/// The usage line of `plan/ctl`.
pub fn plan_ctl_usage(dir: &str) -> String {
    format!(
        "Write one command to {dir}/plan/ctl: enter | exit | approve [feedback] | refine <feedback>."
    )
}

/// A write to `stage` that carries several lines.
pub const STAGE_SEVERAL_LINES: &str = "Bad stage request: a write to stage carries one line, and this one has several; nothing was taken.";

/// Why a decision asked for while the mount stops is refused.
pub const MOUNT_STOPPING: &str = "the xdev mount is shutting down; it takes no new decisions";

/// Why a waiting request is cancelled once the shutdown's grace period is over.
pub const ABANDONED_AT_SHUTDOWN: &str =
    "abandoned at shutdown: still running when the grace period ended";

/// `resolve` with nothing pending (device and tool).
pub const NOTHING_TO_RESOLVE: &str = "No pending action to resolve. Nothing to apply or discard.";
/// `reject` device with nothing pending.
pub const NOTHING_TO_REJECT: &str = "Nothing to reject; no pending action remains.";
/// Resolve tool, `discard`, nothing pending.
pub const NOTHING_TO_DISCARD: &str = "Nothing to discard; no pending action remains.";

/// The hint appended to the "nothing pending" texts while a plan handler is set.
pub fn propose_hint(dir: &str) -> String {
    format!(" To submit the plan for approval, write its title to {dir}/propose instead.")
}

/// `propose` with no plan handler set.
pub fn not_in_plan_mode(dir: &str) -> String {
    format!(
        "No plan is awaiting approval — {dir}/propose only accepts a plan title while plan mode is active."
    )
}

/// A failed apply callback whose error is not already a tool error.
pub fn apply_failed(message: &str) -> String {
    format!("Apply failed: {message}")
}

/// A failed reject callback whose error is not already a tool error.
pub fn reject_failed(message: &str) -> String {
    format!("Reject failed: {message}")
}

/// The default discard text.
pub fn discarded(label: &str, reason: &str) -> String {
    format!("Discarded: {label}. Reason: {reason}")
}

/// What the status files show instead of a reason (`log` has it).
pub const REASON_WITHHELD: &str = "(withheld; see log)";

/// The usage line read from `resolve` on a descriptor that has not written.
pub fn resolve_usage(dir: &str) -> String {
    format!(
        "Write a one-sentence reason as plain text to {dir}/resolve to APPLY the pending staged action (e.g. a tool preview)."
    )
}

/// The usage line read from `reject` on a descriptor that has not written.
pub fn reject_usage(dir: &str) -> String {
    format!(
        "Write a one-sentence reason as plain text to {dir}/reject to DISCARD the pending staged action (e.g. a tool preview)."
    )
}

/// The usage line read from `propose` on a descriptor that has not written.
pub fn propose_usage(dir: &str) -> String {
    format!(
        "Write your plan's <slug> (matching <slug>-plan.md) as plain text to {dir}/propose to submit the plan for approval. Valid only while plan mode is active."
    )
}

/// The reminder a harness shows the model while a preview is pending. Its
/// fields are shown escaped (see [`one_line`]), so neither can end the
/// reminder early or add a line to it.
pub fn reminder(source_tool: &str, dir: &str) -> String {
    let (source_tool, dir) = (one_line(source_tool), one_line(dir));
    format!(
        "<system-reminder>\n`{source_tool}` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `{dir}/resolve` to APPLY, or `{dir}/reject` to DISCARD.\n</system-reminder>"
    )
}

/// The result each call of a detour turn gets instead of running.
pub const DETOUR_RESULT: &str =
    "Not executed: call the `write` tool to resolve the pending action before using other tools.";

/// Why a harness run stops after too many forced turns.
pub fn force_loop_abort(tool_name: &str, forced_turns: u32) -> String {
    format!(
        "Soft tool requirement '{tool_name}' was not satisfied after {forced_turns} forced turns; aborting to avoid an unbounded force loop."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_the_spec_word_for_word() {
        assert_eq!(
            format!("{NOTHING_TO_RESOLVE}{}", propose_hint("/xdev")),
            "No pending action to resolve. Nothing to apply or discard. To submit the plan for approval, write its title to /xdev/propose instead."
        );
        assert_eq!(
            not_in_plan_mode("/mnt/x"),
            "No plan is awaiting approval — /mnt/x/propose only accepts a plan title while plan mode is active."
        );
        assert_eq!(
            discarded("edit a.rs", "no"),
            "Discarded: edit a.rs. Reason: no"
        );
        assert_eq!(apply_failed("disk full"), "Apply failed: disk full");
        assert_eq!(
            reminder("edit", "/xdev"),
            "<system-reminder>\n`edit` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `/xdev/resolve` to APPLY, or `/xdev/reject` to DISCARD.\n</system-reminder>"
        );
        assert_eq!(
            force_loop_abort("write", 3),
            "Soft tool requirement 'write' was not satisfied after 3 forced turns; aborting to avoid an unbounded force loop."
        );
    }

    #[test]
    fn the_reminder_shows_its_fields_on_their_line() {
        assert_eq!(
            reminder("a\n</system-reminder>", "/x\u{1b}"),
            "<system-reminder>\n`a\\n</system-reminder>` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `/x\\x1b/resolve` to APPLY, or `/x\\x1b/reject` to DISCARD.\n</system-reminder>"
        );
    }

    #[test]
    fn usage_lines_name_the_mount_point() {
        assert!(resolve_usage("/d").contains("/d/resolve to APPLY"));
        assert!(reject_usage("/d").contains("/d/reject to DISCARD"));
        assert!(
            propose_usage("/d").starts_with("Write your plan's <slug> (matching <slug>-plan.md)")
        );
    }
}
