//! Every user-facing text of the crate, in one place: what the devices
//! answer, the usage lines, the reminder, the plan review and the stage
//! protocol texts.
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

/// What follows a mount the system refused: who may mount, and how a
/// container lets it.
pub const MOUNT_NOT_PERMITTED_HINT: &str = "; mounting needs root with CAP_SYS_ADMIN, or fusermount3 (setuid, package fuse3) for a user; in a container start it with `--device /dev/fuse --cap-add SYS_ADMIN --security-opt apparmor:unconfined` (Docker), and check that no AppArmor or seccomp profile denies mount(2)";

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

/// The default discard text.
pub fn discarded(label: &str, reason: &str) -> String {
    format!("Discarded: {label}. Reason: {reason}")
}

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

/// The usage line of `sessions/<session>/resolve` or `.../reject`: `device`
/// is the file's name, `verb` [`ITEM_APPLY`] or [`ITEM_DISCARD`].
pub fn session_device_usage(dir: &str, session: &str, device: &str, verb: &str) -> String {
    format!(
        "Write a one-sentence reason as plain text to {dir}/sessions/{session}/{device} to {verb} the newest pending staged action of agent session {session}."
    )
}

/// How many sessions the refusal of a root device names at most; the
/// rest are counted, so that a thousand sessions make no huge message.
pub const MAX_SESSIONS_NAMED: usize = 8;

/// The name of the group of previews of no agent session, in texts.
pub const NO_SESSION: &str = "(no session)";

/// Why root `device` (`resolve` or `reject`) decided nothing: previews of
/// several agent sessions wait. `sessions` are the groups (`None` for the
/// previews of no session); only path-safe ids have a directory to point
/// at (`has_dir`), and every preview also has its own `pending/<id>/`.
pub fn several_sessions_pending(
    dir: &str,
    device: &str,
    sessions: &[Option<String>],
    has_dir: impl Fn(&str) -> bool,
) -> String {
    let more = sessions.len().saturating_sub(MAX_SESSIONS_NAMED);
    let shown = &sessions[..sessions.len() - more];
    let mut names: Vec<String> = shown
        .iter()
        .map(|session| {
            session
                .as_deref()
                .map_or(NO_SESSION.into(), |id| one_line(id).into_owned())
        })
        .collect();
    let mut paths: Vec<String> = shown
        .iter()
        .flatten()
        .filter(|id| has_dir(id))
        .map(|id| format!("{dir}/sessions/{id}/{device}"))
        .collect();
    if more > 0 {
        names.push(format!("and {more} more"));
        paths.push(format!("{dir}/sessions/<session-id>/{device}"));
    }
    if paths.is_empty() {
        paths.push(format!("{dir}/sessions/<session-id>/{device}"));
    }
    format!(
        "Previews of {} agent sessions are pending ({}): {dir}/{device} decides none of them while more than one session waits. Write to one session's {device} instead: {}; or to {dir}/pending/<id>/{device} for one item.",
        sessions.len(),
        names.join(", "),
        paths.join(", ")
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

// Plan review texts.

/// What the `async` handler answers a `propose` with.
pub const PLAN_READY: &str = "Plan ready for review.";
/// What `approve` or `refine` fail with when no plan is under review.
pub const NOTHING_UNDER_REVIEW: &str = "No plan is under review.";
/// The `yolo` target when no `--execute-with` is given.
pub const DEFAULT_PLAN_TARGET: &str = "the current agent";
/// Why a waiting `review` write is aborted when plan mode is exited.
pub const REVIEW_CANCELLED: &str = "plan mode exited; the review was cancelled";
/// Why a waiting `review` proposal ended when its plan desk went away.
pub const REVIEW_DESK_GONE: &str =
    "the plan desk was closed (its owner let it go); plan mode ended and the review was cancelled";
/// A plan title with nothing in it.
pub const EMPTY_PLAN_TITLE: &str = "Plan title is required and must not be empty.";
/// A plan title that would reach outside the plan directory.
pub const PLAN_TITLE_WITH_PATH: &str = "Plan title must not contain path separators or '..'.";
/// A plan title with nothing left after sanitization.
pub const PLAN_TITLE_EMPTY_AFTER_SANITIZING: &str =
    "Plan title must contain at least one letter, number, underscore, or hyphen after sanitization.";

/// How every approval of a plan begins (`xdev hook` tells one by it).
pub const PLAN_APPROVED: &str = "Plan approved";
/// How every request for a better plan begins (its feedback follows on the
/// next lines).
pub const PLAN_REFINEMENT_REQUESTED: &str = "Plan refinement requested.";

/// The `yolo` handler's answer.
pub fn plan_approved_at_once(target: &str) -> String {
    format!("{PLAN_APPROVED}. Implementing now with {target}.")
}

/// A reviewer approved the plan at `path`.
pub fn plan_approved_at(path: &str) -> String {
    format!("{PLAN_APPROVED} at {path}. Plan mode exited; proceed with the implementation.")
}

/// A reviewer asked for a better plan (`slug`'s feedback follows on the next line).
pub fn plan_refinement_requested(slug: &str, dir: &str) -> String {
    format!("{PLAN_REFINEMENT_REQUESTED} Update the plan file, then write {slug} to {dir}/propose again when ready.")
}

/// `plan/ctl` on a mount without a plan desk.
pub const NO_PLAN_DESK: &str = "This mount has no plan desk (mount with --plan-dir).";
/// `plan/ctl` answered `enter`.
pub const PLAN_MODE_ENTERED: &str = "Plan mode entered.";
/// `plan/ctl` answered `exit`.
pub const PLAN_MODE_EXITED: &str = "Plan mode exited.";

/// A named plan whose file is missing.
pub fn plan_file_not_found(path: &str) -> String {
    format!("Plan file not found at {path}. Write the finalized plan to {path} before requesting approval.")
}

/// An empty `propose` with no plan file in the plan directory.
pub fn no_plan_file_in(dir: &str) -> String {
    format!("No plan file (*plan.md) found in {dir}. Write the finalized plan there before requesting approval.")
}

/// A `propose` while another plan is under review.
pub fn another_plan_under_review(slug: &str, path: &str) -> String {
    format!("Another plan is under review: {slug} ({path}). Wait for the reviewer to approve or refine it before proposing again.")
}

/// A per-item write to a preview that is gone.
pub fn no_pending_action_with_id(id: &str) -> String {
    format!("No pending action with id {id}; it was already decided or withdrawn.")
}

// Stage protocol and client texts.

/// The answer to an apply whose producer went away without reporting: it
/// may or may not have made the change.
pub const PRODUCER_DIED: &str = "outcome unknown: producer died during apply";

/// A stage request that breaks a rule; `why` names the rule.
pub fn bad_stage_request(why: impl std::fmt::Display) -> String {
    format!("Bad stage request: {why}")
}

/// The rule a stage request's label breaks (what it breaks follows).
pub const STAGE_LABEL_RULE: &str = "label must be one line of printable text";

/// The rule a stage request's `sourceTool` breaks (what it breaks follows).
pub const STAGE_SOURCE_TOOL_RULE: &str =
    "sourceTool must be 1 to 64 characters of A-Z a-z 0-9 _ . -";

/// The rule a stage request's `sessionId` or `toolUseId` (`name`) breaks.
pub fn stage_origin_rule(name: &str, max_bytes: usize) -> String {
    format!("{name} must be 1 to {max_bytes} bytes of printable text")
}

/// A stage request's `deadlineMs` out of its range (`max` is 7 days).
pub fn stage_deadline_out_of_range(max: u128, millis: u64) -> String {
    format!("deadlineMs must be from 1 to {max} (7 days); it is {millis}.")
}

/// A stage request whose `detail` is too big.
pub fn stage_detail_too_big(max_bytes: usize, size: usize) -> String {
    format!(
        "detail must be at most {max_bytes} bytes of JSON; it has {size} bytes (shorten its long strings)."
    )
}

/// A producer's result line that does not parse.
pub fn bad_result_line(error: impl std::fmt::Display) -> String {
    format!("Bad result line: {error}.")
}

/// A producer reports a result when no decision asked for one.
pub const NO_DECISION_AWAITING_RESULT: &str =
    "No decision is waiting for a result on this descriptor.";

/// The reason of an allow `xdev hook` passes on when none was written.
pub const HOOK_ALLOWED_WITHOUT_REASON: &str = "Approved through xdev.";
/// The message of a deny `xdev hook` passes on when none was written.
pub const HOOK_DENIED_WITHOUT_REASON: &str = "Denied through xdev (no reason given).";

/// `xdev hook --on-timeout deny`: what the agent is told.
pub fn hook_denied_after(waited: impl std::fmt::Display) -> String {
    format!("No decision came through xdev within {waited}; denied.")
}

/// The result text of a tool call `xdev hook` let through.
pub fn hook_allowed(label: &str, reason: &str) -> String {
    format!("Allowed: {label}. Reason: {reason}")
}

/// The result text of a tool call `xdev hook` denied.
pub fn hook_denied(label: &str, reason: &str) -> String {
    format!("Denied: {label}. Reason: {reason}")
}

/// Why `xdev hook` will not read the plan file an event names: it is a
/// symbolic link (which could point anywhere, a secret included).
pub const PLAN_FILE_SYMLINK: &str = "it is a symbolic link";
/// Why `xdev hook` will not read the plan file an event names: it is not
/// there.
pub const PLAN_FILE_MISSING: &str = "it does not exist";
/// Why `xdev hook` will not read the plan file an event names: the hook
/// may not read it.
pub const PLAN_FILE_PERMISSION_DENIED: &str = "permission denied";
/// Why `xdev hook` will not read the plan file an event names: it is not
/// text.
pub const PLAN_FILE_NOT_UTF8: &str = "it is not UTF-8 text";
/// Why `xdev hook` will not read the plan file an event names: it holds
/// no plan.
pub const PLAN_FILE_EMPTY: &str = "it is empty";

/// Why `xdev hook` will not read the plan file an event names: it is
/// `kind` (`a FIFO`, `a character device`, ...).
pub fn plan_file_not_regular(kind: &str) -> String {
    format!("it is not a regular file but {kind}")
}

/// Why `xdev hook` will not read the plan file an event names: it has
/// more than `max_kib` KiB (`size` bytes when known; else it grew while
/// being read).
pub fn plan_file_too_large(max_kib: u64, size: Option<u64>) -> String {
    match size {
        Some(size) => format!("it is larger than {max_kib} KiB ({size} bytes)"),
        None => format!("it grew past {max_kib} KiB while being read"),
    }
}

/// Why `xdev hook` will not read the plan file an event names: the
/// system's word for it.
pub fn plan_file_unreadable(errno: &str, description: &str) -> String {
    format!("{errno}: {description}")
}

/// `xdev hook` will not read the plan file at `path` (shown escaped, on
/// one line) for the reason `why`.
pub fn plan_file_refused(path: &str, why: &str) -> String {
    format!("will not read the plan file {}: {why}", one_line(path))
}

/// The line `xdev hook` prints on stderr when an `ExitPlanMode` call has
/// no plan of its own and its plan file is refused (`refused` says which
/// and why).
pub fn hook_plan_refused(refused: impl std::fmt::Display) -> String {
    format!("xdev hook: {refused}; the call carries no plan of its own, so nothing was staged and the agent decides as usual")
}

/// `plan/ctl` got `refine` without feedback.
pub const REFINE_NEEDS_FEEDBACK: &str = "refine needs the reviewer's feedback: refine <feedback>";

/// `plan/ctl` got `enter` or `exit` followed by more text: a second command
/// in one write is refused whole rather than half carried out.
pub fn plan_command_takes_nothing_more(command: &str, rest: &str) -> String {
    format!("{command} takes nothing after it, and {rest:?} followed; write one command per write.")
}

/// A mode to continue in that the agents do not have.
pub fn unknown_continue_mode(mode: &str) -> String {
    format!("Unknown mode {mode:?}: use acceptEdits, auto, bypassPermissions, default, dontAsk or plan.")
}

/// What an agent's model reads when the reviewer asks for a better plan
/// (in its own terms: the plan came through `ExitPlanMode`, so it presents
/// the plan again; it never writes a device).
pub fn hook_plan_refined(feedback: &str) -> String {
    let ask = "The reviewer asked for changes to the plan. Revise the plan and present it again with ExitPlanMode.";
    if feedback.is_empty() {
        ask.to_string()
    } else {
        format!("{ask}\n\nReviewer feedback: {feedback}")
    }
}

/// `plan/ctl` got a command it does not know.
pub fn unknown_plan_command(command: &str) -> String {
    format!(
        "Unknown plan command {command:?}: use enter, exit, approve [feedback] or refine <feedback>."
    )
}

/// A staged preview taken back for a reason other than its deadline.
pub fn preview_withdrawn(id: &str, why: impl std::fmt::Display) -> String {
    format!("the preview {id} was withdrawn: {why}")
}

// Daemon texts: why a `--journal FILE` is refused (each names the file and
// says what to do; the mount error puts them after "cannot use the journal
// file: ").

/// `path` is a symbolic link (never followed: a link could point the
/// journal's writes anywhere).
pub fn journal_is_symlink(path: &str) -> String {
    format!("{path} is a symbolic link; give the journal's real path")
}

/// `path` is a directory.
pub fn journal_is_directory(path: &str) -> String {
    format!("{path} is a directory")
}

/// `path` is a FIFO or socket (found when opening it).
pub fn journal_is_fifo_or_socket(path: &str) -> String {
    format!("{path} is not a regular file (a FIFO or socket)")
}

/// `path` is `what` (`a FIFO`, `a device`, ...), not a regular file.
pub fn journal_not_regular(path: &str, what: &str) -> String {
    format!("{path} is {what}; the journal must be a regular file")
}

/// `path` is writable by others than its owner (`mode` has `g+w` or
/// `o+w`): they could forge or erase the record of decisions.
pub fn journal_writable_by_others(path: &str, mode: u32) -> String {
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "its group and everyone",
        (true, false) => "its group",
        _ => "everyone",
    };
    format!(
        "{path} is writable by {who} (mode {:04o}), who could forge or erase records; run `chmod go-w {}` or choose a file only you can write",
        mode & 0o7777,
        shell_quoted(path)
    )
}

/// `path` belongs to uid `owner`, neither xdev's user (`euid`) nor root.
pub fn journal_owned_by_another_user(path: &str, owner: u32, euid: u32) -> String {
    format!(
        "{path} belongs to uid {owner}, not to uid {euid} that xdev runs as, and its owner could forge or erase records; choose a file you own"
    )
}

/// `path` quoted for a POSIX shell, for a command a text suggests.
fn shell_quoted(path: &str) -> String {
    format!("'{}'", path.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_word_for_word() {
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
