//! Every user-facing text of the crate, in one place: what the devices
//! answer and their usage lines, the reminder, what a refused message or
//! an ended wait reads back, the plan review, the stage protocol, the
//! journal's own records, and what the `xdev` command, its daemon, its
//! client side and `xdev hook` print or fail with. The tests read them
//! from here or from `mount-tests/expected-texts`.
//!
//! Not here: the CLI's help (the argument definitions in `bin/xdev.rs`,
//! which the man page and completions are made from), log messages
//! (`tracing` events with their fields) and protocol words (JSON keys,
//! event names, outcome keywords).
//!
//! `dir` is always the mount point as the user gave it (for example `/xdev`).

use std::path::Path;

use crate::safe_text::{describe_char, one_line, NameProblem, MAX_NAME_BYTES};

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

/// The answer to an apply still running when the shutdown's grace period
/// ended: it had reached its applier, who may or may not have made the
/// change.
pub const OUTCOME_UNKNOWN_AT_SHUTDOWN: &str =
    "outcome unknown: the mount stopped during apply (its grace period ended first)";

/// Why an apply whose producer had not read it yet when the shutdown's
/// grace period ended is cancelled (after `Aborted: `).
pub const APPLY_TAKEN_BACK_AT_SHUTDOWN: &str =
    "the mount stopped before the producer read the apply; nothing was applied";

/// Why a decision whose journal intent was still being written when the
/// shutdown's grace period ended is cancelled (after `Aborted: `).
pub const NOT_STARTED_AT_SHUTDOWN: &str =
    "the mount stopped before this decision began; nothing was applied or discarded";

/// The reason a preview is withdrawn with when the mount stops before its
/// producer read the apply.
pub const WITHDRAWN_AT_SHUTDOWN: &str = "mount stopped";

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
        "Previews of {} agent sessions are pending ({}): {dir}/{device} decides none of them while more than one session waits. Write to one session's {device} instead: {} (from a shell: `xdev {device} --session <session-id>`); or to {dir}/pending/<id>/{device} for one item (`xdev {device} --id <id>`).",
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

/// The failure of a callback that panicked with no message.
pub const CALLBACK_PANICKED: &str = "the callback panicked";

/// The result each call of a detour turn gets instead of running.
pub const DETOUR_RESULT: &str =
    "Not executed: call the `write` tool to resolve the pending action before using other tools.";

/// Why a harness run stops after too many forced turns.
pub fn force_loop_abort(tool_name: &str, forced_turns: u32) -> String {
    format!(
        "Soft tool requirement '{tool_name}' was not satisfied after {forced_turns} forced turns; aborting to avoid an unbounded force loop."
    )
}

// What a writer reads back when its message is refused or its wait ends
// before an answer (the `Display` of [`crate::Error`]).

/// A device body that is not UTF-8.
pub const MESSAGE_NOT_UTF8: &str = "The message must be UTF-8 text.";

/// A device body that holds a NUL byte.
pub const MESSAGE_HOLDS_NUL: &str = "The message holds a NUL byte; a reason is plain text.";

/// A device body over `limit` bytes.
pub fn message_too_long(limit: usize) -> String {
    format!("The message is longer than {limit} bytes.")
}

/// A decision that lost its race against an abort signal, which said `why`.
pub fn aborted(why: &str) -> String {
    format!("Aborted: {why}")
}

/// A writer that got a signal while it waited, before anything was started.
pub const INTERRUPTED: &str = "Interrupted: the writer received a signal while waiting.";

/// A decision refused because the journal file could not record it first
/// (`cause` is what the system said).
pub fn journal_refused(cause: &str) -> String {
    format!(
        "Refused: the journal could not record this decision ({cause}); nothing was applied or discarded."
    )
}

/// A decision of preview `id`, a call of the agent process named `agent`
/// (pid `agent_pid`), refused because its writer `writer` (pid
/// `writer_pid`) is that agent or runs under it. The names are shown
/// escaped: a process names itself.
pub fn agents_own_call(
    id: &str,
    (agent, agent_pid): (&str, u32),
    (writer, writer_pid): (&str, u32),
    dir: &str,
) -> String {
    let (agent, writer) = (one_line(agent), one_line(writer));
    format!(
        "Refused: {id} is a call of the agent {agent} (pid {agent_pid}), and {writer} (pid {writer_pid}) is that agent or runs under it: an agent does not decide its own calls. Nothing was applied or discarded. Decide it from a process the agent did not start (a terminal of your own): echo REASON > {dir}/pending/{id}/resolve, or reject."
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

/// An approval's `text` followed by the reviewer's `feedback`.
pub fn with_reviewer_feedback(text: &str, feedback: &str) -> String {
    format!("{text}\n\nReviewer feedback: {feedback}")
}

/// A plan handler name that is not `yolo`, `review` or `async`.
pub fn unknown_plan_handler(name: &str) -> String {
    format!("unknown plan handler {name:?}; expected yolo, review or async")
}

/// The label of a plan mode event that names no plan (entering or leaving
/// plan mode), in the journal.
pub const PLAN_MODE_LABEL: &str = "plan mode";

/// `plan/ctl` on a mount without a plan desk (which has no `plan/ctl`).
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

// Stage protocol, producer and `xdev hook` texts.

/// The answer to an apply whose producer went away without reporting: it
/// may or may not have made the change.
pub const PRODUCER_DIED: &str = "outcome unknown: producer died during apply";

/// The answer to an apply whose producer closed its stage file before it
/// read the apply line: the preview `id` was withdrawn (`why`), and nothing
/// was applied.
pub fn withdrawn_before_apply(id: &str, why: impl std::fmt::Display) -> String {
    format!("No pending action with id {id}; it was withdrawn ({why}) before its producer read the apply, so nothing was applied.")
}

/// Why a stage request naming its agent (`"agent": "parent"`) is refused
/// when the process found is init, `name`: every process descends from it.
pub fn stager_under_init(name: &str) -> String {
    format!(
        "agent \"parent\" names the process that ran the stager, but its nearest ancestor with another standard input is init ({name}, pid 1), whose processes are every process here, so nobody could decide the call; stage from the agent's own hook (not started detached), or without \"agent\""
    )
}

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

/// A stage request's field breaks `rule`, as `broken` says
/// ([`IT_IS_EMPTY`], [`it_has_bytes`], ...).
pub fn rule_broken(rule: &str, broken: &str) -> String {
    format!("{rule}; {broken}.")
}

/// How a field breaks its rule: it is empty.
pub const IT_IS_EMPTY: &str = "it is empty";

/// The rule of a stage request's `cwd`.
pub fn stage_cwd_rule(max_bytes: usize) -> String {
    format!("cwd must be an absolute path of at most {max_bytes} bytes of printable text")
}

/// How a `cwd` breaks its rule: it does not start with `/`.
pub const IT_IS_RELATIVE: &str = "it is relative";

/// How a field breaks its rule: it is `bytes` long.
pub fn it_has_bytes(bytes: usize) -> String {
    format!("it has {bytes} bytes")
}

/// How a field breaks its rule: it is `count` characters long.
pub fn it_has_characters(count: usize) -> String {
    format!("it has {count} characters")
}

/// How a field breaks its rule: it holds `character` (described).
pub fn it_contains(character: &str) -> String {
    format!("it contains {character}")
}

/// How a label breaks its rule: it holds an unprintable `character`.
pub fn it_contains_unprintable(character: &str) -> String {
    format!("it contains the unprintable character {character}")
}

/// A label of `len` bytes, over `max`.
pub fn stage_label_too_long(max: usize, len: usize) -> String {
    format!("{STAGE_LABEL_RULE} of at most {max} bytes; it has {len} bytes.")
}

/// A `why` of a `withdrawn` line that this crate does not know.
pub fn unknown_withdraw_reason(why: &str) -> String {
    format!("unknown withdraw reason {why:?}")
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

/// A stage request's `diff` over the limit (`size` bytes as a JSON string).
pub fn stage_diff_too_big(max_bytes: usize, size: usize) -> String {
    format!(
        "diff must be at most {max_bytes} bytes as a JSON string; it has {size} bytes (cut it, and say so in it)."
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

/// How every `diff` that is a refusal begins: one line saying why no diff
/// could be made (readers, `xdev review` among them, look for it).
pub const DIFF_REFUSAL_START: &str = "No diff: ";
/// How the last line of a `diff` cut to the stage protocol's limit begins.
pub const DIFF_CUT_START: &str = "[Diff cut here: ";

/// The `diff` of a preview whose file is not read (`path` shown on one
/// line; `why` as [`crate::safe_file::FileProblem`] puts it).
pub fn diff_not_read(path: &str, why: &str) -> String {
    format!("{DIFF_REFUSAL_START}{} is not read: {why}.", one_line(path))
}

/// The `diff` of a call whose tool input lacks `field` (or has it of
/// another type).
pub fn diff_input_missing(field: &str) -> String {
    format!("{DIFF_REFUSAL_START}the call has no {field}.")
}

/// The `diff` of a call that changes nothing in the file as it is.
pub const DIFF_NO_CHANGE: &str = "No change: the file already holds exactly this.";

/// The `diff` of an edit that cannot be made to the file as it is (`why`,
/// one of the `DIFF_EDIT_*` texts).
pub fn diff_edit_fails(path: &str, why: &str) -> String {
    format!(
        "{DIFF_REFUSAL_START}the edit cannot be made to {} as it is: {why}.",
        one_line(path)
    )
}

/// Why an edit cannot be made: its `old_string` is not in the file.
pub const DIFF_EDIT_NOT_FOUND: &str = "old_string does not occur in it";

/// Why an edit cannot be made: an empty `old_string` (which creates a
/// file) on a file that holds text.
pub const DIFF_EDIT_EMPTY_OLD: &str = "old_string is empty and the file already holds text";

/// Why an edit cannot be made: its `old_string` occurs `count` times and
/// `replace_all` is not set.
pub fn diff_edit_ambiguous(count: usize) -> String {
    format!("old_string occurs {count} times in it and replace_all is not set")
}

/// Why edit `index` of `count` of a `MultiEdit` cannot be made.
pub fn diff_edit_of(index: usize, count: usize, why: &str) -> String {
    format!("edit {index} of {count}: {why}")
}

/// The `diff` of an `apply_patch` call without patch text.
pub const DIFF_NO_PATCH: &str = "No diff: the call carries no patch text.";

/// The first line of an `apply_patch` diff whose patch is not of Codex's
/// shape: what follows is the patch as the agent sent it.
pub const DIFF_PATCH_AS_GIVEN: &str =
    "[The patch as the agent sent it: it is not of the shape *** Begin Patch ... *** End Patch.]";

/// The line before a patch section shown as the agent sent it (`why` it
/// is not shown as a diff against the file).
pub fn diff_section_as_given(why: &str) -> String {
    format!("[This part as the agent sent it, not as a diff against the file: {why}]")
}

/// Why a patch section is not diffed: its change `index` does not occur
/// in the file as it is.
pub fn diff_chunk_not_found(index: usize) -> String {
    format!("change {index} does not occur in the file as it is.")
}

/// The last line of a diff that showed `count` characters otherwise.
pub fn diff_unprintable(count: usize) -> String {
    format!(
        "[{count} unprintable characters are shown as pictures: a carriage return as \u{240d}, ESC as \u{241b}, others as \u{fffd}.]"
    )
}

/// The last line of a diff cut to the stage protocol's limit: `lines`
/// more lines were not shown; the whole call is in the preview's detail
/// (`whole_detail`), else only with the agent.
pub fn diff_cut(lines: u64, whole_detail: bool) -> String {
    let whole = if whole_detail {
        "the whole call is in detail beside this file"
    } else {
        "the whole call is only with the agent (detail is cut too)"
    };
    format!("{DIFF_CUT_START}{lines} more lines not shown; {whole}.]")
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
/// `kind` (`a FIFO`, `a character device`, ...; see [`file_kind`]).
pub fn plan_file_not_regular(kind: &str) -> String {
    format!("it is not a regular file but {kind}")
}

/// What a file that is not a regular file is, in [`plan_file_not_regular`]:
/// `a directory`, `a FIFO`, `a character device`, `a block device`, `a
/// socket`, or `of an unknown kind`.
pub fn file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "of an unknown kind"
    }
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
        with_reviewer_feedback(ask, feedback)
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

// Journal file texts: why a `--journal FILE` is refused (each names the file and
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

/// `path` is `what` (`a FIFO`, `a device`, ...; see [`journal_file_kind`]),
/// not a regular file.
pub fn journal_not_regular(path: &str, what: &str) -> String {
    format!("{path} is {what}; the journal must be a regular file")
}

/// What a journal file that is not a regular file is, in
/// [`journal_not_regular`]: `a FIFO`, `a device`, or `not a regular file`.
pub fn journal_file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

// Status texts: the lines of `status` and `sessions/<id>/status`. Every
// field a writer chose (an id, a label, a result text) is kept to one line,
// so that it cannot add a line such as `plan mode: on`.

/// `status`: how many previews wait.
pub fn status_pending(count: usize) -> String {
    format!("pending: {count}\n")
}

/// `status`: how many previews are being decided right now (shown only
/// when some are).
pub fn status_in_progress(count: usize) -> String {
    format!("in progress: {count}\n")
}

/// `status`: the head of the stack (`id`, `source` tool, `label`), or none.
pub fn status_head(head: Option<(&str, &str, &str)>) -> String {
    match head {
        Some((id, source, label)) => format!(
            "head: {} (source: {}) {}\n",
            one_line(id),
            one_line(source),
            one_line(label)
        ),
        None => "head: none\n".to_string(),
    }
}

/// `status`: one agent session with `pending` previews, and its head.
pub fn status_session(agent: &str, pending: usize, head: (&str, &str, &str)) -> String {
    let (id, source, label) = head;
    format!(
        "session: {} pending: {pending} head: {} (source: {}) {}\n",
        one_line(agent),
        one_line(id),
        one_line(source),
        one_line(label)
    )
}

/// `sessions/<agent>/status`: its first two lines.
pub fn session_status_header(agent: &str, pending: usize) -> String {
    format!("session: {}\npending: {pending}\n", one_line(agent))
}

/// `status`: whether plan mode is on.
pub fn status_plan_mode(on: bool) -> String {
    format!("plan mode: {}\n", if on { "on" } else { "off" })
}

/// `status`: the plan a proposal waits on the plan desk with.
pub fn status_plan_under_review(slug: &str, path: &str) -> String {
    format!(
        "plan under review: {} ({})\n",
        one_line(slug),
        one_line(path)
    )
}

/// `status`: the last device result, a success.
pub fn status_last_ok(device: &str, text: &str) -> String {
    format!("last: {} ok: {}\n", one_line(device), one_line(text))
}

/// `status`: the last device result, a failure with its errno's name.
pub fn status_last_error(device: &str, errno: &str, text: &str) -> String {
    format!(
        "last: {} error {errno}: {}\n",
        one_line(device),
        one_line(text)
    )
}

/// `status`: no device has been written yet.
pub const STATUS_LAST_NONE: &str = "last: none\n";

/// `status`: the journal file's health, when it has something to say.
pub fn status_journal(health: &str) -> String {
    format!("journal: {health}\n")
}

/// `status`'s policy line: the rules in force (see `policy_summary`).
pub fn status_policy(summary: &str) -> String {
    format!("policy: {}\n", one_line(summary))
}

/// The one-line summary of a mount's policy, for `status`.
pub fn policy_summary(path: &Path, mode: &str, rules: usize, error: Option<&str>) -> String {
    let mut text = format!("{mode}, {rules} rules from {}", path.display());
    if let Some(error) = error {
        text.push_str(&format!(
            "; the last reload failed and the rules loaded before stay in force: {error}"
        ));
    }
    text
}

/// The usage line of the mount's `policy` file, after its description.
pub fn policy_ctl_usage(dir: &str) -> String {
    format!("Write `reload` to {dir}/policy to load the rules file again.")
}

/// A write to `policy` that is not `reload`.
pub fn policy_ctl_unknown(dir: &str) -> String {
    format!("Unknown policy command. {}", policy_ctl_usage(dir))
}

/// A reload through the `policy` file succeeded.
pub fn policy_reloaded(rules: usize) -> String {
    format!("policy reloaded: {rules} rules in force")
}

// Journal texts: what `log`, `events` and the status files say of the
// journal itself.

/// The text of the record noting that `bytes` written after a device's
/// message were ignored.
pub fn bytes_ignored(bytes: usize) -> String {
    format!("{bytes} bytes written after the message were ignored (one message per open)")
}

/// The journal file's health while its writes fail with `error`.
pub fn journal_file_failing(error: &str) -> String {
    format!("failing ({error})")
}

/// The text of the `lost` record: `count` records could not be written to
/// the journal file; `named` names the first few (`event id (outcome)`),
/// `more` counts the others.
pub fn journal_records_lost(count: usize, named: &str, more: usize) -> String {
    let text = if more > 0 {
        format!("{named} and {more} more")
    } else {
        named.to_string()
    };
    format!("{count} record(s) could not be written to the journal file: {text}")
}

/// Why a record's write has no outcome: the journal's writer thread is gone.
pub const JOURNAL_WRITER_STOPPED: &str = "the journal writer stopped";

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

/// `--owner SPEC` that is not `USER[:GROUP]`.
pub fn owner_malformed(spec: &str) -> String {
    format!("'{spec}' is not USER[:GROUP]: a user's name or uid, then optionally a colon and a group's name or gid (alice, alice:devs, 1000:1000)")
}

/// `--owner` names a user the user database does not know.
pub fn owner_unknown_user(name: &str) -> String {
    format!("no user named '{name}' here (`getent passwd {name}` finds none): give an existing user's name, or a uid")
}

/// `--owner` names a group the group database does not know.
pub fn owner_unknown_group(name: &str) -> String {
    format!("no group named '{name}' here (`getent group {name}` finds none): give an existing group's name, or a gid")
}

/// `--owner UID` for a uid with no entry, hence no login group.
pub fn owner_without_login_group(uid: u32) -> String {
    format!("uid {uid} has no entry in the user database, so no login group to give the files: name the group too ({uid}:GROUP)")
}

/// A process other than root (`uid`) asked to hand its mount to `owner`.
pub fn owner_needs_root(owner: &str, uid: u32) -> String {
    format!("only root can hand a mount to another user, and xdev runs as uid {uid}, not as {owner}: run it as root (the system unit xdev@.service does), or as that user for a mount of their own (the user unit: `systemctl --user start xdev@NAME`)")
}

/// A process other than root asked to give its files to `group`, which it
/// is not in.
pub fn owner_group_not_yours(group: &str) -> String {
    format!("only root can give a mount's files to a group it is not in (as with chgrp), and xdev is not in {group}: give one of your groups (`id -Gn`), or run it as root")
}

/// A group was given for a mount the kernel would keep it out of.
pub fn owner_group_kept_out(group: &str) -> String {
    format!("{group} could read nothing: without --allow-other the kernel lets only the user who mounts in; add --allow-other (other users then list ids, and read nothing private unless --share-journal)")
}

/// `path` quoted for a POSIX shell, for a command a text suggests.
fn shell_quoted(path: &str) -> String {
    format!("'{}'", path.replace('\'', "'\\''"))
}

// What the `xdev` command prints besides a device's answer (its help, man
// page and completions are the argument definitions in `bin/xdev.rs`).

/// The line `xdev mount` prints once the mount at `dir` answers.
pub fn mounted(dir: &Path) -> String {
    format!("xdev: mounted {}", dir.display())
}

/// `xdev mount` with neither a directory nor an instance.
pub const MOUNT_NEEDS_A_PLACE: &str = "xdev mount needs DIR or --instance NAME";

/// `xdev stage`, after an apply failed: it keeps waiting.
pub const STAGE_APPLY_FAILED: &str = "xdev: apply failed; the preview is pending again, waiting";

/// `xdev stage`, after its `--on-reject` command failed: it keeps waiting.
pub const STAGE_REJECT_FAILED: &str =
    "xdev: --on-reject failed; the preview stays pending, waiting";

/// `xdev stage`, when the mount went away before the applied command's
/// result could be reported.
pub const STAGE_APPLIED_UNREPORTED: &str =
    "xdev: the command ran and succeeded; the mount went away before its result could be reported";

/// `xdev stage`, when its deadline passed.
pub const STAGE_DEADLINE_PASSED: &str = "xdev: deadline passed; the preview was withdrawn";

/// `xdev man` could not render the page.
pub const CANNOT_RENDER_MAN_PAGE: &str = "cannot render the man page";

/// `xdev resolve`, `reject` or `propose` could not read the message from stdin.
pub const CANNOT_READ_MESSAGE: &str = "cannot read the message from stdin";

/// A command could not print what it answers.
pub const CANNOT_WRITE_STDOUT: &str = "cannot write to stdout";

/// What is wrong with a name the mount would never list (see
/// [`crate::safe_text::path_name_problem`]).
pub fn name_problem(problem: NameProblem) -> String {
    match problem {
        NameProblem::Empty => "it is empty".into(),
        NameProblem::Dots(dots) => format!("it is `{dots}`"),
        NameProblem::TooLong(bytes) => format!("it is {bytes} bytes long"),
        NameProblem::Slash => "it contains '/'".into(),
        NameProblem::Unprintable(c) => format!("it contains {}", describe_char(c)),
    }
}

/// The one rule for the names the mount lists, as refusals state it.
pub fn path_safe_name_rule() -> String {
    format!("1 to {MAX_NAME_BYTES} bytes of printable text, without '/', and neither `.` nor `..`")
}

/// `--id` is no name `pending/` could list (`problem`).
pub fn not_a_pending_id(problem: NameProblem) -> String {
    format!(
        "{}, and no pending id is: the ids under pending/ are {} (`xdev status --json` shows them)",
        name_problem(problem),
        path_safe_name_rule()
    )
}

/// `--session` is no name `sessions/` could list (`problem`); such a
/// session's previews are decided by id.
pub fn not_a_session_dir(problem: NameProblem) -> String {
    format!(
        "{}, so no sessions/<SESSION>/ has this name (sessions/ names a session only by {}); decide a session with such an id one preview at a time through the root's pending/<id>/: `xdev resolve --id <id>` or `xdev reject --id <id>` (its newest preview is its `head` in the `sessions` of `xdev status --json`)",
        name_problem(problem),
        path_safe_name_rule()
    )
}

/// The mount directory `dir` (`--mount`, `XDEV_DIR`) is a path inside the
/// mount at `root` through `name`, which the mount never lists (`problem`).
pub fn mount_tail_not_listed(dir: &str, root: &str, name: &str, problem: NameProblem) -> String {
    format!(
        "the mount directory {dir} goes through {} below the xdev mount {root}, a name the mount never lists ({}; names there are {}): use --mount {root} (or XDEV_DIR={root}), and --session or --id to decide one session's or one preview's",
        describe_name(name),
        name_problem(problem),
        path_safe_name_rule()
    )
}

/// A name as a message shows it: quoted, and escaped when it holds
/// anything unprintable.
fn describe_name(name: &str) -> String {
    format!("'{}'", one_line(name))
}

/// `--deadline` (of `xdev stage` or `xdev hook`) is a duration a stage
/// request may not ask for (`given`, shown as written); `max` is the
/// longest.
pub fn deadline_flag_out_of_range(given: &str, max: impl std::fmt::Display) -> String {
    format!("a deadline is from 1ms to {max} (for example `300ms`, `30s`, `5m`, `2h`); {given} is outside that")
}

/// A `--deadline`, `--grace` or `--timeout` that is no duration (`why`).
pub fn not_a_duration(why: impl std::fmt::Display) -> String {
    format!("not a duration such as `300ms`, `30s`, `5m` or `2h`: {why}")
}

/// `xdev wait --pid` is no process id (`why`); `max` is the largest the
/// kernel hands out.
pub fn not_a_process_id(why: &str, max: i32) -> String {
    format!("a process id is a number from 1 to {max} (the daemon's, in a shell `$!`): {why}")
}

/// `xdev propose SLUG`: the words given are no plan slug (`why`: the plan
/// title rule they break).
pub fn bad_plan_slug(slug: &str, why: impl std::fmt::Display) -> String {
    format!("cannot propose {}: {why}", describe_name(slug))
}

/// `xdev resolve --reason ...` (or `reject`): the reason is the command's
/// TEXT.
pub fn reason_is_text(command: &str) -> String {
    format!("unexpected argument '--reason': the reason is TEXT, after the options or on stdin, as in `xdev {command} 'tests pass'`")
}

/// The mount's files, as `xdev man` lists them under FILES: each path
/// below the mount (`<id>` a pending preview's id, `<session-id>` an agent
/// session's) and what it is. Every name of the mount's tree is here, in
/// listing order (a test holds this to the tree's own tables).
pub const MOUNT_FILES: &[(&str, &str)] = &[
    ("resolve", "write a reason to apply the newest pending preview; the write's result is the outcome, read back on the same descriptor"),
    ("reject", "write a reason to discard the newest pending preview"),
    ("propose", "write a plan slug to submit that plan for approval (plan mode only)"),
    ("status", "pending count, head, plan mode, last result"),
    ("status.json", "the same as one JSON object, with the whole pending stack and the serving process"),
    ("last", "the text of the most recent device result"),
    ("reminder", "the reminder an agent harness shows for the current head; empty when none"),
    ("log", "the journal: one JSON line per staging and decision"),
    ("events", "the journal's records made after the open, blocking until there is one"),
    ("stage", "where external producers stage previews, one JSON line per request"),
    ("pending/", "one directory per pending preview, head first"),
    ("pending/<id>/label", "the preview's label"),
    ("pending/<id>/source", "the tool that staged it"),
    ("pending/<id>/resolve", "apply this preview, head or not"),
    ("pending/<id>/reject", "discard this preview, head or not"),
    ("pending/<id>/detail", "the full request as JSON, when the preview carries one"),
    ("pending/<id>/diff", "what the preview would change, as a unified diff, when it carries one (a file tool's call staged by xdev hook)"),
    ("pending/<id>/cwd", "the working directory of the agent whose call it is, when its stager named one"),
    ("sessions/", "one directory per agent session with previews pending"),
    ("sessions/<session-id>/resolve", "apply that session's newest preview"),
    ("sessions/<session-id>/reject", "discard that session's newest preview"),
    ("sessions/<session-id>/status", "that session's pending count and head"),
    ("sessions/<session-id>/pending/", "that session's previews, as pending/ lists them"),
    ("plan/", "plan review, only with --plan-dir"),
    ("plan/ctl", "write enter, exit, approve [feedback] or refine <feedback>"),
    ("plan/status", "the plan desk's state as one JSON line"),
    ("policy", "the rules that decide previews as they are staged, only with --policy; write reload to load them again"),
];

/// `xdev hook` could not read its input (`error`); it prints nothing.
pub fn hook_cannot_read_stdin(error: impl std::fmt::Display) -> String {
    format!("xdev hook: cannot read stdin: {error}; printing nothing")
}

// Daemon texts: what `xdev mount` and `xdev run` fail with, and what they
// tell a service manager.

/// A directory (a mount point, or what holds an instance's) could not be
/// created.
pub fn cannot_create(dir: &Path) -> String {
    format!("cannot create {}", dir.display())
}

/// `xdev run` could not make a private mount point.
pub const CANNOT_CREATE_TEMPORARY_MOUNT_POINT: &str = "cannot create a temporary mount point";

/// The plan directory given could not be made absolute.
pub fn cannot_use_plan_dir(path: &Path) -> String {
    format!("cannot use plan directory {}", path.display())
}

/// `--policy FILE` could not be made absolute.
pub fn cannot_use_policy(path: &Path) -> String {
    format!("cannot use the policy file {}", path.display())
}

/// The policy file `path` (or its directory) cannot be looked at.
pub fn policy_unusable(path: &Path, why: &str) -> String {
    format!("cannot use the policy file {}: {why}", path.display())
}

/// The policy file `path` is refused because `checked` (the file or its
/// directory) could be changed by another user (`why`).
pub fn policy_unsafe(path: &Path, checked: &Path, why: &str) -> String {
    let what = if checked == path {
        "it".to_string()
    } else {
        format!("its directory {}", checked.display())
    };
    format!(
        "refusing the policy file {}: {what} {why}, so another user could change the rules; \
         keep the file and its directory owned by you (or root) and writable by no one else \
         (chmod go-w)",
        path.display()
    )
}

/// Why a policy file is unsafe: another user owns it.
pub fn policy_owned_by(uid: u32) -> String {
    format!("belongs to uid {uid}")
}

/// Why a policy file is unsafe: its group or everyone may write it.
pub fn policy_writable_by_others(mode: u32) -> String {
    format!("is writable by its group or everyone (mode {mode:04o})")
}

/// The reason of a decision the policy made by `rule`.
pub fn policy_reason(rule: &str) -> String {
    format!("policy: {rule}")
}

/// What the mount's `policy` file shows.
pub fn policy_description(
    path: &Path,
    mode: &str,
    rules: usize,
    loaded_at: &str,
    error: Option<&str>,
) -> String {
    let mut text = format!(
        "file: {}\nmode: {mode}\nrules: {rules}\nloaded: {loaded_at}\n",
        one_line(&path.display().to_string())
    );
    if let Some(error) = error {
        text.push_str(&format!(
            "last load failed: {}\n(the rules loaded before stay in force)\n",
            one_line(error)
        ));
    }
    text
}

/// The mount at `dir` was made but a lookup through it failed.
pub fn mount_does_not_answer(dir: &Path) -> String {
    format!("mount at {} does not answer", dir.display())
}

/// An instance name that is empty or longer than `max` bytes.
pub fn instance_name_length(max: usize) -> String {
    format!("an instance name is 1 to {max} characters long")
}

/// An instance name with a character it may not hold.
pub fn not_an_instance_name(name: &str) -> String {
    format!("{name:?} is not an instance name: use A-Z a-z 0-9 _ . : - (not starting with a dot)")
}

/// The daemon's runtime could not start.
pub const CANNOT_START: &str = "cannot start";

/// The daemon could not catch the signals it handles.
pub const CANNOT_CATCH_SIGNALS: &str = "cannot catch signals";

/// `xdev mount` could not unmount `dir` when it stopped.
pub fn unmount_failed(dir: &Path) -> String {
    format!("unmount of {} failed", dir.display())
}

/// `xdev run` (or `xdev stage`) was given no command.
pub const NO_COMMAND_TO_RUN: &str = "no command to run";

/// A command's end could not be waited for.
pub const CANNOT_WAIT_FOR_COMMAND: &str = "cannot wait for the command";

/// `xdev run` could not unmount after its command exited with `exit`.
pub fn unmount_after_command_failed(exit: i32) -> String {
    format!("unmount after the command (exit {exit}) failed")
}

/// Why a notification did not reach the service manager: the datagram
/// was cut short.
pub const NOTIFICATION_CUT_SHORT: &str = "the notification was cut short";

/// Why a notification did not reach the service manager: `variable` holds
/// `value`, which names no socket.
pub fn not_a_notify_socket(variable: &str, value: &str) -> String {
    format!("{variable}={value} is neither a socket path nor an @abstract socket")
}

/// What a service manager shows while the daemon serves `dir`.
pub fn serving(dir: &str) -> String {
    format!("Serving {dir}")
}

/// What a service manager shows once the daemon stops on `signal`.
pub fn stopping_on(signal: &str) -> String {
    format!("Stopping on {signal}")
}

/// A caught signal nix has no name for, in the service manager's status.
pub fn unnamed_signal(number: i32) -> String {
    format!("signal {number}")
}

// Client texts: what a command that talks to a mount fails with.

/// `dir` is not a live xdev mount (it is `found`); `env` is the variable
/// that names the mount.
pub fn no_xdev_mount(dir: &str, found: impl std::fmt::Display, env: &str) -> String {
    format!("no xdev mount at {dir}: {found} (use --mount DIR or set {env}, or start one with `xdev mount DIR`)")
}

/// `dir` is an xdev mount whose daemon is gone.
pub fn stale_mount(dir: &str) -> String {
    format!("ENOTCONN: the xdev mount at {dir} is stale (its daemon is gone); run `xdev mount {dir}` to clear it and serve again")
}

/// `dir` is another user's xdev mount, which lets only its owner in.
pub fn closed_mount(dir: &str) -> String {
    format!("EACCES: the xdev mount at {dir} lets only its owner in: it was mounted without --allow-other; its owner can start it with `xdev mount --allow-other` (and --share-journal to let others read its files)")
}

/// `xdev wait`: the daemon `pid` exited before `dir` was mounted.
pub fn daemon_exited(pid: i32, dir: &str) -> String {
    format!("the xdev daemon (pid {pid}) exited before {dir} was mounted; its own error says why")
}

/// `xdev wait --pid daemon`: `dir` is an xdev mount served by `server`
/// (when its `status.json` names it), not by `daemon`, which has `exited`
/// or still runs.
pub fn served_by_another(dir: &str, daemon: i32, server: Option<i32>, exited: bool) -> String {
    let by = server.map_or(
        "by a process its status.json does not name".to_string(),
        |pid| format!("by pid {pid}"),
    );
    let daemon_is = if exited {
        "which has exited; its own error says why"
    } else {
        "which still runs"
    };
    format!("{dir} is an xdev mount, but served {by}, not by pid {daemon} ({daemon_is})")
}

/// `xdev wait`: `dir` did not answer within `waited`.
pub fn not_mounted_in_time(dir: &str, waited: impl std::fmt::Display) -> String {
    format!("{dir} was not mounted within {waited}")
}

/// The plan directory `path` is missing, or not a directory.
pub fn bad_plan_dir(path: &str, missing: bool) -> String {
    let what = if missing {
        "does not exist"
    } else {
        "is not a directory"
    };
    format!("plan directory {path} {what}")
}

/// `xdev stage`: the command to run on apply, `program`, cannot be run
/// (`why`: [`COMMAND_NOT_EXECUTABLE`], ...); nothing was staged.
pub fn command_not_found(program: &str, why: &str) -> String {
    format!("cannot stage: command {program} {why}; nothing was staged")
}

/// Why a command named by a path cannot be run: it is no executable file.
pub const COMMAND_NOT_EXECUTABLE: &str = "is not an executable file";
/// Why a command named by a path cannot be run: nothing is there.
pub const COMMAND_MISSING: &str = "does not exist";
/// Why a command named bare cannot be run.
pub const COMMAND_NOT_ON_PATH: &str = "not found on PATH";

/// The mount at `dir` went away while preview `id` waited.
pub fn mount_gone(dir: &str, id: &str) -> String {
    format!("the xdev mount at {dir} went away while {id} waited for a decision; its command did not run")
}

/// `program` could not be started (`why` is what the system said).
pub fn cannot_run(program: &str, why: &str) -> String {
    format!("cannot run {program}: {why}")
}

/// What `xdev watch` could not set up (a thread, a pipe, its signal
/// handlers), before watching anything.
pub const WATCH_NO_RUNTIME: &str = "cannot set up the watch";

/// The line `xdev watch` prints on stderr when the mount it watched went
/// away: it ends, with exit code 0.
pub fn watch_mount_gone(dir: &Path) -> String {
    format!(
        "xdev: the mount at {} went away; watch ends",
        one_line(&dir.display().to_string())
    )
}

/// A file of a mount could not be opened.
pub fn cannot_open(path: &Path) -> String {
    format!("cannot open {}", path.display())
}

/// A file of a mount that belongs to `owner`, another user, refused this one.
pub fn another_users_file(path: &Path, owner: &str) -> String {
    format!(
        "this mount belongs to {owner}, who alone decides (and reads, unless the mount shares its journal): run this as that user; cannot open {}",
        path.display()
    )
}

/// A preview's device could not be opened: another writer is deciding it.
pub fn item_busy(path: &Path) -> String {
    format!(
        "another writer is deciding this preview right now; cannot open {}",
        path.display()
    )
}

/// A file could not be opened because `mount` is no mount (`env` names
/// the mount).
pub fn no_mount_to_open(mount: &Path, env: &str, path: &Path) -> String {
    format!(
        "no xdev mount at {} (use --mount DIR or set {env}); cannot open {}",
        mount.display(),
        path.display()
    )
}

/// The `policy` file could not be opened: the mount has no policy.
pub fn no_policy_to_open(path: &Path) -> String {
    format!(
        "this mount has no policy (mount it with --policy FILE); cannot open {}",
        path.display()
    )
}

/// A file of `plan/` could not be opened: the mount has no plan desk.
pub fn no_plan_desk_to_open(path: &Path) -> String {
    format!(
        "this mount has no plan desk (mount it with --plan-dir); cannot open {}",
        path.display()
    )
}

/// A file of `pending/<id>/` could not be opened: no such preview.
pub fn no_item_to_open(path: &Path) -> String {
    format!(
        "no such pending preview (already decided or withdrawn?); cannot open {}",
        path.display()
    )
}

/// A file of a mount could not be read.
pub fn cannot_read(path: &Path) -> String {
    format!("cannot read {}", path.display())
}

/// A file of a mount could not be written.
pub fn cannot_write(path: &Path) -> String {
    format!("cannot write {}", path.display())
}

/// A device's answer could not be read back.
pub fn cannot_read_answer(path: &Path) -> String {
    format!("cannot read the answer from {}", path.display())
}

/// A write took only `count` of `len` bytes.
pub fn short_write(path: &Path, count: usize, len: usize) -> String {
    format!("short write to {}: {count} of {len} bytes", path.display())
}

/// The stage file answered `got` where the staged id was due.
pub fn expected_staged_id(path: &Path, got: impl std::fmt::Debug) -> String {
    format!(
        "expected the staged id from {}, got {got:?}",
        path.display()
    )
}

/// The stage file ended before it staged the preview.
pub fn ended_before_staging(path: &Path) -> String {
    format!("{} ended before staging the preview", path.display())
}

/// The stage file staged a second preview on one descriptor.
pub fn staged_twice(path: &Path) -> String {
    format!("{} staged a second time on one descriptor", path.display())
}

/// The stage file sent `message` where none was due.
pub fn unexpected_message(path: &Path, message: impl std::fmt::Debug) -> String {
    format!("unexpected message from {}: {message:?}", path.display())
}

/// The stage file sent a line that does not parse (`error`).
pub fn unexpected_line(path: &Path, line: &str, error: impl std::fmt::Display) -> String {
    format!("unexpected line from {}: {line} ({error})", path.display())
}

/// The stage file refused `line` (`why` is what the system said).
pub fn line_refused(path: &Path, line: &str, why: &str) -> String {
    format!("{} refused {line}: {why}", path.display())
}

/// `xdev stage` was given no command to run on apply.
pub const NO_COMMAND_ON_APPLY: &str = "no command to run on apply";

/// How a command that failed ended: it exited with `code`.
pub fn exit_status(code: i32) -> String {
    format!("exit status {code}")
}

/// How a command that failed ended: `signal` killed it.
pub fn killed_by_signal(signal: i32) -> String {
    format!("killed by signal {signal}")
}

/// How a command that failed ended, when the system does not say.
pub const EXIT_STATUS_UNKNOWN: &str = "exit status unknown";

// Mount point texts: why a directory cannot be mounted on, what it is when
// it is not the xdev mount a command looked for, and why FUSE cannot be
// used.

/// `xdev mount DIR` where `dir` does not exist.
pub fn mount_point_does_not_exist(dir: &str) -> String {
    format!("mount point {dir} does not exist")
}

/// `xdev mount DIR` where `dir` is a file.
pub fn mount_point_not_a_directory(dir: &str) -> String {
    format!("mount point {dir} is not a directory")
}

/// `xdev mount DIR` where `dir` has `entries` entries in it, of which
/// `shown` are named (the first few by name, already made one line each).
pub fn mount_point_not_empty(dir: &str, entries: usize, shown: &[String]) -> String {
    let more = entries.saturating_sub(shown.len());
    let names = if more == 0 {
        shown.join(", ")
    } else {
        format!("{} and {more} more", shown.join(", "))
    };
    let (counted, them) = if entries == 1 {
        ("1 entry".to_string(), "it")
    } else {
        (format!("{entries} entries"), "them")
    };
    format!("mount point {dir} is not empty: it holds {counted} ({names}); mount on an empty directory, or move {them} out first")
}

/// `xdev mount DIR` where the parent directory of `dir` does not exist.
pub fn mount_point_parent_missing(dir: &str, parent: &str) -> String {
    format!("cannot create mount point {dir}: its parent directory {parent} does not exist (create it first: mkdir -p -- '{parent}')")
}

/// The directory where xdev keeps its mount point locks and notes cannot
/// be used (`why` says why, `fix` what to do).
pub fn cannot_use_runtime_dir(dir: &str, why: &str, fix: &str) -> String {
    format!("cannot use {dir}, where xdev keeps a lock for each mount point: {why}; {fix}")
}

/// The fix for an unusable runtime directory, for root.
pub const RUNTIME_DIR_FIX_ROOT: &str =
    "it must be a directory owned by root that only root may write";

/// The fix for an unusable runtime directory, for other users.
pub const RUNTIME_DIR_FIX_USER: &str =
    "set XDG_RUNTIME_DIR to a directory that only you may write (systemd-logind makes /run/user/UID)";

/// A runtime directory that is not a directory (a file, a symlink).
pub const RUNTIME_DIR_NOT_A_DIRECTORY: &str = "it is not a directory";

/// A runtime directory owned by another user.
pub const RUNTIME_DIR_NOT_OURS: &str = "it belongs to another user";

/// A runtime directory others may write.
pub const RUNTIME_DIR_SHARED: &str = "other users may write it";

/// The lock file of a mount point keeps being replaced under xdev.
pub const LOCK_FILE_REPLACED: &str = "the lock file keeps being replaced";

/// `xdev mount`: another process unmounted `dir` (the daemon then stops).
pub fn mount_removed_from_outside(dir: &str) -> String {
    format!("mount point {dir} was unmounted by another process (fusermount3 -u, umount); stopped serving it")
}

/// What a service manager shows once the mount was removed from outside.
pub const STOPPING_UNMOUNTED: &str = "Stopping: unmounted from outside";

/// `xdev mount DIR` where a running xdev serves `dir` already.
pub fn mount_point_already_served(dir: &str) -> String {
    format!("mount point {dir} is already served by a running xdev (stop that daemon first, or use another directory)")
}

/// `xdev mount DIR` where `dir` holds regular files named like the
/// devices (`files`), left by writes while nothing was mounted there.
pub fn leftover_device_files(dir: &str, files: &[String]) -> String {
    let found = match files {
        [one] => format!("a file named like a device ({one})"),
        many => format!(
            "{} files named like devices ({})",
            many.len(),
            many.join(", ")
        ),
    };
    let paths: Vec<String> = files
        .iter()
        .map(|file| format!("'{}'", Path::new(dir).join(file).display()))
        .collect();
    format!(
        "mount point {dir} holds {found} left by writes while nothing was mounted there; check them, remove them (rm -- {}), then mount again",
        paths.join(" ")
    )
}

/// The missing mount point `dir` could not be created (`why` is what the
/// system said).
pub fn cannot_create_mount_point(dir: &str, why: &str) -> String {
    format!("cannot create mount point {dir}: {why}")
}

/// The `--journal` file cannot be used (`why` names it and says why).
pub fn cannot_use_journal_file(why: impl std::fmt::Display) -> String {
    format!("cannot use the journal file: {why}")
}

/// `dir` could not be mounted (`why` is what the system said, `hint`
/// [`MOUNT_NOT_PERMITTED_HINT`] when mounting was not permitted, else empty).
pub fn cannot_mount(dir: &str, why: &str, hint: &str) -> String {
    format!("cannot mount {dir}: {why}{hint}")
}

/// A mount point path with a NUL byte, which no system call can take.
pub const MOUNT_POINT_WITH_NUL: &str = "a mount point path cannot hold a NUL byte";

/// A live xdev mount.
pub const MOUNT_POINT_XDEV: &str = "it is a live xdev mount";
/// A FUSE mount whose server is gone.
pub const MOUNT_POINT_STALE: &str = "it is a stale FUSE mount";
/// Nothing there.
pub const MOUNT_POINT_MISSING: &str = "it does not exist";
/// A file, not a directory.
pub const MOUNT_POINT_NOT_A_DIRECTORY: &str = "it is not a directory";
/// A directory that no FUSE file system is mounted on.
pub const MOUNT_POINT_NOT_FUSE: &str = "it is not a FUSE mount";
/// Another user's xdev mount, which lets only its owner in.
pub const MOUNT_POINT_CLOSED: &str =
    "it is another user's xdev mount, which lets only its owner in";

/// Another FUSE file system (`fstype`, mounted from `source`).
pub fn mount_point_other_fuse(fstype: &str, source: &str) -> String {
    format!("it is a {fstype} mount of {source}, not an xdev one")
}

/// A directory that could not be looked at (`why` is what the system said).
pub fn mount_point_unreadable(why: &str) -> String {
    format!("it cannot be looked at: {why}")
}

/// What is at the FUSE device's path is not the FUSE device.
pub const NOT_THE_FUSE_DEVICE: &str = "it is not the FUSE character device (10, 229)";

/// The FUSE device `path` is missing.
pub fn fuse_device_missing(path: &str) -> String {
    format!("FUSE is not available: {path} is missing (load the module with `modprobe fuse`; in a container, pass the device in, e.g. `--device /dev/fuse`)")
}

/// The FUSE device `path` may not be opened (`why` is what the system said).
pub fn fuse_device_not_accessible(path: &str, why: &str) -> String {
    format!("FUSE is not available: {path} is not accessible: {why}")
}

/// The FUSE device `path` cannot be used (`why` is what the system said).
pub fn fuse_device_unusable(path: &str, why: &str) -> String {
    format!("FUSE is not available: {path}: {why}")
}

/// What follows a FUSE device problem (`what`) for a user other than root.
pub fn fuse_device_for_users(what: &str, path: &str) -> String {
    format!("{what}; as a user other than root, xdev needs fusermount3 (package fuse3) and a {path} that everyone may read and write (crw-rw-rw-)")
}

/// Even a lazy `fusermount3 -uz` of `dir` failed.
pub fn lazy_unmount_failed(dir: &Path) -> String {
    format!("fusermount3 -uz {} failed", dir.display())
}

// Review texts: what `xdev review` shows (its keys, prompts, panes and the
// status line after a decision).

/// The reason an approval carries when the reviewer typed none.
pub const REVIEW_DEFAULT_APPROVAL: &str = "approved in xdev review";
/// The list's title line when nothing waits.
pub const REVIEW_NOTHING_PENDING: &str =
    "Nothing pending. New previews appear here as they are staged.";
/// The detail pane while an item's files are being read.
pub const REVIEW_LOADING: &str = "reading the preview's files...";
/// The detail pane of a preview whose producer sent only a label.
pub const REVIEW_NO_DETAIL: &str = "(no detail: the producer sent only its label)";
/// The note above a Write's content (shown when there is no diff, or the
/// call itself is asked for).
pub const REVIEW_WRITE_CONTENT: &str = "the whole new content of the file follows";
/// The note above an Edit's strings (shown when there is no diff, or the
/// call itself is asked for).
pub const REVIEW_EDIT_STRINGS: &str = "the strings replaced (-) and their replacements (+) follow";
/// The note above a diff cut to the stage protocol's limit.
pub const REVIEW_DIFF_CUT_NOTE: &str =
    "this diff is cut (see its last line): c shows the whole call";
/// The note above the call itself, shown instead of its diff.
pub const REVIEW_SHOWING_CALL: &str = "the call itself: c shows its diff again";
/// The group of previews staged without an agent session.
pub const REVIEW_NO_SESSION: &str = "(no session)";
/// The prompt that asks a reason for approving.
pub const REVIEW_PROMPT_APPROVE: &str =
    "Approve: reason (Enter with none: \"approved in xdev review\"; Esc cancels)";
/// The prompt that asks a reason for rejecting.
pub const REVIEW_PROMPT_REJECT: &str = "Reject: reason the model reads (required; Esc cancels)";
/// The filter prompt.
pub const REVIEW_PROMPT_FILTER: &str =
    "Filter (label, tool or session; Esc puts back the filter as it was)";
/// The prompt that asks feedback for approving a plan.
pub const REVIEW_PROMPT_PLAN_APPROVE: &str =
    "Approve the plan: feedback for the implementer (optional; Esc cancels)";
/// The prompt that asks feedback for sending a plan back.
pub const REVIEW_PROMPT_PLAN_REFINE: &str =
    "Send the plan back: what to change (required; Esc cancels)";
/// The status line when a reject prompt is submitted empty.
pub const REVIEW_REASON_REQUIRED: &str = "A rejection needs a reason: the model reads it.";
/// The status line when a refine prompt is submitted empty.
pub const REVIEW_FEEDBACK_REQUIRED: &str =
    "Sending a plan back needs feedback: the planner reads it.";
/// The status line when a key decides and nothing is selected.
pub const REVIEW_NOTHING_SELECTED: &str = "Nothing selected.";
/// The last line of the help when `count` keys do not fit the terminal.
pub fn review_help_more(count: usize) -> String {
    format!("{count} more key(s): a taller terminal shows them")
}

/// The help overlay's title.
pub const REVIEW_HELP_TITLE: &str = "Keys (any key closes)";
/// The title of the overlay that shows the last messages in full.
pub const REVIEW_MESSAGES_TITLE: &str = "The last messages in full (any key closes)";
/// The overlay's name for the status line's message.
pub const REVIEW_MESSAGES_STATUS: &str = "Status line";
/// What ends a line the screen cut: the key that shows it whole.
pub const REVIEW_CUT_HINT: &str = " [l: whole]";
/// What ends the key bar when it is cut: the key that lists every key.
pub const REVIEW_KEYS_CUT_HINT: &str = " [?: all]";
/// The trail's title.
pub const REVIEW_TRAIL_TITLE: &str = "Last decisions";
/// The trail when nothing was decided yet.
pub const REVIEW_TRAIL_EMPTY: &str = "none yet";

/// The trail's and the status line's word for an applied preview.
pub const REVIEW_APPLIED: &str = "applied";
/// ... for a rejected one.
pub const REVIEW_REJECTED: &str = "rejected";
/// ... for an approved plan.
pub const REVIEW_PLAN_APPROVED: &str = "plan approved";
/// ... for a plan sent back.
pub const REVIEW_PLAN_SENT_BACK: &str = "plan sent back";
/// ... for a preview withdrawn at its deadline.
pub const REVIEW_WITHDRAWN: &str = "withdrawn";
/// Who decided: this review.
pub const REVIEW_BY_THIS_REVIEW: &str = "this review";
/// Who decided: the policy (its rule is [`review_by_policy_rule`]).
pub const REVIEW_BY_POLICY: &str = "policy";
/// Who decided: the deadline.
pub const REVIEW_BY_TIMEOUT: &str = "timeout";
/// Who decided, or how old: not known.
pub const REVIEW_UNKNOWN: &str = "?";
/// Why `xdev review` cannot start a thread of its own.
pub const REVIEW_CANNOT_START_THREAD: &str = "cannot start a thread of xdev review";
/// Why `xdev review` cannot use the terminal.
pub const REVIEW_CANNOT_USE_TERMINAL: &str = "cannot use the terminal";

/// One decision of the trail: how long ago, what, of which preview, by whom.
pub fn review_trail_entry(ago: &str, verdict: &str, label: &str, decider: &str) -> String {
    format!("{ago} ago {verdict} {label} by {decider}")
}

/// A preview withdrawn for `reason` (its producer exited, ...).
pub fn review_withdrawn_because(reason: &str) -> String {
    format!("{REVIEW_WITHDRAWN} ({})", one_line(reason))
}

/// The last line of the messages overlay when `count` decisions do not
/// fit: where every decision is.
pub fn review_messages_more(count: usize, dir: &str) -> String {
    format!("{count} older decision(s) not shown here: every decision is in {dir}/log")
}

/// Who decided: the policy, by `rule`.
pub fn review_by_policy_rule(rule: &str) -> String {
    format!("{REVIEW_BY_POLICY} ({})", one_line(rule))
}

/// Who decided: a shell named `name`.
pub fn review_by_shell(name: &str) -> String {
    format!("a shell ({})", one_line(name))
}

/// The prompt for deciding `count` marked previews at once, `hidden` of
/// them not shown by the filter.
pub fn review_prompt_marked(approve: bool, count: usize, hidden: usize) -> String {
    let hidden = if hidden > 0 {
        format!(" ({hidden} hidden by the filter)")
    } else {
        String::new()
    };
    if approve {
        format!("Approve {count} marked previews{hidden}: reason (Enter with none: \"{REVIEW_DEFAULT_APPROVAL}\"; Esc cancels)")
    } else {
        format!("Reject {count} marked previews{hidden}: reason the model reads (required; Esc cancels)")
    }
}

/// The title line: the mount, how many previews wait, in how many groups,
/// and the filter when one is set.
pub fn review_title(dir: &str, pending: usize, groups: usize, filter: &str) -> String {
    let mut title = format!("xdev review {dir}: {pending} pending in {groups} group(s)");
    if !filter.is_empty() {
        title.push_str(&format!(" [filter: {filter}]"));
    }
    title
}

/// The detail pane's position line: which lines show, of how many.
pub fn review_scroll(first: usize, last: usize, total: usize) -> String {
    if total == 0 {
        return "empty".to_string();
    }
    if first == 1 && last == total {
        return format!("{total} lines, all shown");
    }
    format!("lines {first}-{last} of {total} (PgUp/PgDn)")
}

/// The status line after a decision written through the mount succeeded.
pub fn review_decided(verdict: &str, id: &str, answer: &str) -> String {
    format!("{verdict} {id}: {}", one_line(answer))
}

/// The status line after a decision failed: the errno and the mount's text.
pub fn review_refused(verdict: &str, id: &str, error: &str) -> String {
    format!("{verdict} {id} failed: {}", one_line(error))
}

/// The status line when the mount cannot be read any more.
pub fn review_source_failed(error: &str) -> String {
    format!("cannot follow the mount: {}", one_line(error))
}

/// The list's row of a plan under review.
pub fn review_plan_row(slug: &str) -> String {
    format!("PLAN under review: {slug}")
}

/// A group's header row: its session (or none) and its count.
pub fn review_group_row(session: &str, count: usize) -> String {
    format!("{session} ({count})")
}

// Hook texts: what `xdev hook` says on stderr, and what it tells an agent.

/// The hook input is not JSON (`error` says where).
pub fn hook_input_not_json(error: &str) -> String {
    format!("stdin is not JSON ({error})")
}

/// The hook input is JSON, but no object.
pub const HOOK_INPUT_NOT_AN_OBJECT: &str = "the hook input is not a JSON object";

/// The hook input lacks `field` (or has it of the wrong type).
pub fn hook_input_missing(field: &str) -> String {
    format!("the hook input has no {field}")
}

/// The hook's stdin held `size` bytes, more than `limit`.
pub fn hook_input_too_large(size: u64, limit: usize) -> String {
    let mib = limit / (1024 * 1024);
    format!("stdin holds {size} bytes, more than the {mib} MiB a hook event may take")
}

/// The hook input is an event `xdev hook` does not decide.
pub fn hook_event_unsupported(name: &str) -> String {
    format!("hook_event_name {name:?} is not one xdev hook decides (PreToolUse, PermissionRequest)")
}

/// The `detail` of a tool call whose input (`bytes` of JSON) is too large
/// even with its strings cut.
pub fn tool_input_too_large(bytes: usize) -> String {
    format!("the tool input ({bytes} bytes of JSON) is too large to show; only the agent's transcript has it whole")
}

/// The first line of an `xdev stage` result text whose start is cut (the
/// result is one message, and the command's output was longer): only its
/// end follows, and nothing holds the rest.
pub const STAGE_RESULT_CUT: &str = "[… cut: only the end of the command's output fits one message; xdev stage kept no more of it]\n";

/// The first line of an `xdev stage` apply failure whose stderr is cut to
/// its last lines: the whole stderr went to `xdev stage`'s own stderr.
pub const STDERR_TAIL_CUT: &str =
    "[… cut: only the last lines follow; the whole stderr went to xdev stage's own stderr]\n";

/// A long string of a tool call's input, cut to `kept`, `more` bytes gone.
pub fn string_cut(kept: &str, more: usize) -> String {
    format!("{kept}… [cut: {more} more bytes; only the agent's transcript has the whole call]")
}

/// What every cut string of a tool call's input holds ([`string_cut`]):
/// the policy asks about an input that holds it.
pub const CUT_MARK: &str = "… [cut: ";

// ----- the policy -------------------------------------------------------

/// A rules file could not be opened or read.
pub fn policy_cannot_read(path: &Path, error: &std::io::Error) -> String {
    if error.raw_os_error() == Some(libc::ELOOP) {
        return format!(
            "The policy file {} is a symbolic link, which the policy does not follow: name the file itself.",
            path.display()
        );
    }
    format!(
        "The policy file {} cannot be read: {error}.",
        path.display()
    )
}

/// A rules file is not a regular file.
pub fn policy_not_regular(path: &Path) -> String {
    format!("The policy file {} is not a regular file.", path.display())
}

/// A rules file is larger than the cap.
pub fn policy_too_large(path: &Path, size: u64, limit: u64) -> String {
    format!(
        "The policy file {} holds {size} bytes, more than the {} MiB a rules file may have.",
        path.display(),
        limit / (1024 * 1024)
    )
}

/// A rules file is not UTF-8.
pub fn policy_not_utf8(path: &Path) -> String {
    format!("The policy file {} is not UTF-8 text.", path.display())
}

/// A rules file is not JSON.
pub fn policy_bad_json(path: &Path, message: &str) -> String {
    format!("The policy file {} is not JSON: {message}.", path.display())
}

/// A rules file's JSON is not shaped as one.
pub fn policy_bad_shape(path: &Path, what: &str) -> String {
    format!("The policy file {}: {what}.", path.display())
}

/// The top of a rules file is not an object.
pub const POLICY_NOT_AN_OBJECT: &str =
    "its top is not a JSON object (write {\"permissions\": {\"allow\": [...], \"ask\": [...], \"deny\": [...]}})";

/// A rules file without `permissions`.
pub const POLICY_NO_PERMISSIONS: &str =
    "it has no \"permissions\" object (the rules are read from permissions.allow, permissions.ask and permissions.deny, as in Claude Code's settings.json)";

/// `permissions` is not an object.
pub const POLICY_PERMISSIONS_NOT_AN_OBJECT: &str = "\"permissions\" is not an object";

/// A list of rules is not an array.
pub fn policy_list_not_an_array(list: &str) -> String {
    format!("permissions.{list} is not a list")
}

/// A list entry is neither a string nor an object.
pub fn policy_entry_not_a_rule(list: &str, at: usize) -> String {
    format!("{list}[{at}] is neither a rule (a string) nor an object with a \"rule\"")
}

/// A rule object without its `rule`.
pub fn policy_entry_without_rule(list: &str, at: usize) -> String {
    format!("{list}[{at}] has no \"rule\" string")
}

/// A rule's `reason` is not a string.
pub fn policy_reason_not_a_string(list: &str, at: usize) -> String {
    format!("{list}[{at}].reason is not a string")
}

/// A rule's examples are not a list.
pub fn policy_examples_not_a_list(list: &str, at: usize, key: &str) -> String {
    format!("{list}[{at}].{key} is not a list of examples")
}

/// A key the rules file may not hold.
pub fn policy_unknown_key(path: &Path, key: &str) -> String {
    format!(
        "The policy file {} holds {key}, which the policy does not know (permissions holds allow, ask and deny; a rule object rule, reason, match and notMatch).",
        path.display()
    )
}

/// A settings key the policy ignores.
pub fn policy_ignored_key(key: &str) -> String {
    format!("permissions.{key} configures Claude Code itself; the policy ignores it")
}

/// A rule that does not parse.
pub fn policy_bad_rule(path: &Path, list: &str, rule: &str, why: &str) -> String {
    format!(
        "The policy file {}: the {list} rule {rule:?} does not parse: {why}.",
        path.display()
    )
}

/// An example that cannot be made into a call.
pub fn policy_bad_example(path: &Path, rule: &str, example: &str, why: &str) -> String {
    format!(
        "The policy file {}: the example {example:?} of the rule {rule:?} is not a call: {why}.",
        path.display()
    )
}

/// An example object's unknown key.
pub fn policy_example_unknown_key(key: &str) -> String {
    format!("an example object holds tool, input and cwd, not {key}")
}

/// An example object without `tool`.
pub const POLICY_EXAMPLE_NO_TOOL: &str = "an example object names its \"tool\"";

/// An example object's `cwd` is not a string.
pub const POLICY_EXAMPLE_CWD: &str = "an example's \"cwd\" is a path";

/// An example of the wrong kind.
pub const POLICY_EXAMPLE_SHAPE: &str =
    "an example of this rule is an object {\"tool\": ..., \"input\": {...}}";

/// A string example of a tool whose input is JSON, not JSON.
pub fn policy_example_not_json(error: &str) -> String {
    format!("this tool's example is its input as JSON ({error})")
}

/// Examples that were not decided as their rule says: the first, and how
/// many others.
pub fn policy_examples_failed(
    path: &Path,
    rule: &str,
    example: &str,
    must_match: bool,
    got: &str,
    decided_by: Option<&str>,
    others: usize,
) -> String {
    let decided = match decided_by {
        Some(other) if other == rule => format!("this rule decided it ({got})"),
        Some(other) => format!("it came out {got}, decided by {other:?}"),
        None => format!("it came out {got}, no rule deciding"),
    };
    let expected = if must_match {
        "must be decided by"
    } else {
        "must not be decided by"
    };
    let more = match others {
        0 => String::new(),
        1 => " One other example fails too (`xdev policy test` lists them).".to_string(),
        n => format!(" {n} other examples fail too (`xdev policy test` lists them)."),
    };
    format!(
        "The policy file {}: the example {example:?} {expected} the rule {rule:?}, but {decided}.{more}",
        path.display()
    )
}

/// A part a rule decided.
pub fn policy_part_decided(effect: &str, rule: &str) -> String {
    format!("{effect}: {rule}")
}

/// A part no rule matches.
pub const POLICY_NO_RULE: &str = "no rule matches";

/// A call with no part to judge (an empty command).
pub const POLICY_NOTHING_TO_JUDGE: &str = "nothing in it to judge";

/// Every part of a call is allowed.
pub fn policy_all_parts_allowed(count: usize) -> String {
    format!("allow: each of its {count} parts")
}

/// The part of several that decided the call.
pub fn policy_part_of(at: usize, count: usize, text: &str, why: &str) -> String {
    format!("part {at} of {count} ({text}): {why}")
}

/// A tool input lacks the field a rule judges.
pub fn policy_missing_field(field: &str) -> String {
    format!("the tool input has no {field} to judge")
}

/// A relative path, or a search with no path, in a call with no cwd.
pub const POLICY_NO_CWD: &str = "the call says no directory it searches";

/// A `~/` path, and no home directory known.
pub const POLICY_NO_HOME: &str = "a ~/ path, and no home directory is known";

/// A `~user/` path.
pub const POLICY_OTHER_HOME: &str = "a ~user/ path names another user's home";

/// A URL whose host the policy cannot tell.
pub const POLICY_URL_HOST: &str = "not an http(s) URL with a host";

/// A shell argv that is not a list of strings.
pub const POLICY_ARGV_NOT_STRINGS: &str = "the command is not a list of strings";

/// A patch that names no file.
pub const POLICY_PATCH_NAMES_NOTHING: &str =
    "the patch names no file (*** Add/Update/Delete File:)";

/// A tool input the stager cut.
pub const POLICY_INPUT_CUT: &str =
    "the tool input was cut to be staged; what was cut cannot be judged";

// ----- xdev policy: check, test, import ---------------------------------

/// `xdev policy check` found no rules file to use.
pub const POLICY_CHECK_NO_FILE: &str = "no rules file: give --policy FILE, or set XDEV_POLICY, or run it where the mount (--mount, XDEV_DIR) has a policy";

/// `xdev policy check TOOL INPUT` for a tool whose input is JSON, given
/// something else.
pub fn policy_check_input_not_json(tool: &str, error: &str) -> String {
    format!("{tool}'s input is a JSON object (such as '{{\"key\": \"value\"}}'): {error}")
}

/// `xdev policy check TOOL` without the INPUT the tool is judged by.
pub fn policy_check_needs_input(tool: &str) -> String {
    format!("{tool} is judged by its input: give INPUT (a command, a path, a URL, or the input as JSON)")
}

/// `xdev policy check` given JSON that is not an object.
pub const POLICY_CHECK_INPUT_NOT_OBJECT: &str = "a tool's input given as JSON is an object";

/// The mount's `policy` file names no rules file.
pub fn policy_file_unnamed(path: &Path) -> String {
    format!("{} names no rules file (no `file:` line)", path.display())
}

/// A part of a call as `xdev policy check` prints it: its decision and
/// text, then the rule that decided it or why none could.
pub fn policy_check_part(effect: &str, text: &str, rule: Option<&str>, why: &str) -> String {
    match rule {
        Some(rule) => format!("  {effect:<5}  {text}\n         rule: {rule}"),
        None => format!("  {effect:<5}  {text}\n         {why}"),
    }
}

/// `xdev policy check`'s first lines: the decision, why, and the rule's
/// reason if it has one.
pub fn policy_check_decision(effect: &str, why: &str, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("decision: {effect}\nwhy: {why}\nreason: {reason}\nparts:"),
        None => format!("decision: {effect}\nwhy: {why}\nparts:"),
    }
}

/// A part no rule matched, as `xdev policy check` explains it.
pub const POLICY_CHECK_NO_RULE: &str = "no rule matched: ask";

/// One example's result as `xdev policy test` prints it.
pub fn policy_test_line(
    passed: bool,
    effect: &str,
    rule: &str,
    must_match: bool,
    example: &str,
    got: &str,
    decided_by: Option<&str>,
) -> String {
    let verdict = if passed { "pass" } else { "FAIL" };
    let kind = if must_match { "match" } else { "notMatch" };
    let by = match decided_by {
        Some(by) => format!("{got} by {by}"),
        None => format!("{got}, no rule matched"),
    };
    format!("{verdict}  {effect} {rule}  {kind} {example:?}: {by}")
}

/// `xdev policy test`'s last line.
pub fn policy_test_summary(path: &Path, total: usize, failed: usize) -> String {
    match (total, failed) {
        (0, _) => format!("{}: no examples to run", path.display()),
        (_, 0) => format!("{}: all {total} examples pass", path.display()),
        _ => format!("{}: {failed} of {total} examples fail", path.display()),
    }
}

/// A settings file `xdev policy import` cannot read as one.
pub fn import_not_settings(path: &Path, why: &str) -> String {
    format!(
        "{} is not a Claude Code settings file: {why}",
        path.display()
    )
}

/// A Codex rules file with more than `prefix_rule` calls.
pub fn import_codex_syntax(path: &Path, line: usize, what: &str) -> String {
    format!(
        "{}:{line}: {what} (xdev reads Codex rules files made of prefix_rule(...) calls with string and list values only)",
        path.display()
    )
}

/// A settings key that configures Claude Code, left out of the import.
pub fn import_ignored_setting(path: &Path, key: &str) -> String {
    format!(
        "{}: {key} configures Claude Code itself; left out",
        path.display()
    )
}

/// A `permissions` list that is not a list.
pub fn import_not_a_list(path: &Path, list: &str) -> String {
    format!(
        "{}: permissions.{list} is not a list; left out",
        path.display()
    )
}

/// A `permissions` entry that is not a string.
pub fn import_not_a_rule(path: &Path, list: &str, entry: &str) -> String {
    format!(
        "{}: {entry} in permissions.{list} is not a rule; left out",
        path.display()
    )
}

/// A rule xdev's syntax refuses.
pub fn import_rule_refused(path: &Path, rule: &str, why: &str) -> String {
    format!("{}: the rule {rule:?} is left out: {why}", path.display())
}

/// A Codex rule that cannot be written as xdev rules.
pub fn import_codex_unmapped(path: &Path, line: usize, why: &str) -> String {
    format!(
        "{}:{line}: this prefix_rule is left out: {why}",
        path.display()
    )
}

/// A Codex pattern word with a `*`.
pub fn import_codex_star(word: &str) -> String {
    format!("its pattern word {word:?} holds a `*`, which an xdev rule reads as a wildcard")
}

/// A Codex pattern word with both quote characters.
pub fn import_codex_quotes(word: &str) -> String {
    format!("its pattern word {word:?} holds both ' and \", which an xdev rule cannot quote")
}

/// An example left out because the rules made decide it otherwise.
pub fn import_example_dropped(rule: &str, example: &str, got: &str, by: Option<&str>) -> String {
    let by = by.map_or_else(|| "no rule".to_string(), |by| format!("{by:?}"));
    format!(
        "the example {example:?} of {rule:?} is left out: with the other rules it comes out {got}, decided by {by}"
    )
}

/// Codex rules: something other than a `prefix_rule` call.
pub fn codex_rules_unexpected(what: &str) -> String {
    format!("{what} is not part of a prefix_rule(...) call")
}

/// Codex rules: one token where another belongs.
pub fn codex_rules_expected(want: &str, found: &str) -> String {
    format!("expected {want}, found {found}")
}

/// Codex rules: the file ends inside a call.
pub fn codex_rules_ends_early(want: &str) -> String {
    format!("the file ends where {want} belongs")
}

/// Codex rules: an argument given twice.
pub fn codex_rules_twice(name: &str) -> String {
    format!("{name} is given twice")
}

/// Codex rules: an argument with a value of the wrong kind.
pub fn codex_rules_wrong_value(name: &str, want: &str) -> String {
    format!("{name} is {want}")
}

/// Codex rules: an argument prefix_rule does not take.
pub fn codex_rules_unknown_argument(name: &str) -> String {
    format!("prefix_rule takes pattern, decision, justification, match and not_match, not {name}")
}

/// Codex rules: a prefix_rule without a pattern.
pub const CODEX_RULES_NO_PATTERN: &str = "a prefix_rule needs a pattern";

/// Codex rules: a string not closed on its line.
pub const CODEX_RULES_OPEN_STRING: &str = "a string is not closed on its line";

/// Codex rules: a triple-quoted string.
pub const CODEX_RULES_TRIPLE_QUOTE: &str = "a triple-quoted string is not read";

/// Codex rules: an escape other than \\ \" \' \n \t.
pub const CODEX_RULES_ESCAPE: &str = "an escape other than \\\\ \\\" \\' \\n \\t";

/// What stands in a hook's label for the part cut out, when the preview's
/// detail holds the whole call.
pub const LABEL_CUT_WHOLE_IN_DETAIL: &str =
    " … [cut: the whole call is in this preview's pending/<id>/detail] … ";

/// What stands in a hook's label for the part cut out, when the call is
/// too long for the preview's detail too.
pub const LABEL_CUT_WHOLE_WITH_AGENT: &str =
    " … [cut: the call is too long to show whole; only the agent's transcript has it] … ";

/// The summary of a `Write` call in its label: `path` and its line count.
pub fn write_summary(path: &str, lines: usize) -> String {
    let unit = if lines == 1 { "line" } else { "lines" };
    format!("{path} ({lines} {unit})")
}

/// The summary of a `MultiEdit` call in its label.
pub fn multi_edit_summary(path: &str, edits: usize) -> String {
    format!("{path} ({edits} edits)")
}

/// `xdev hook` got an input it cannot decide (`error`); the agent decides.
pub fn hook_bad_input(error: impl std::fmt::Display) -> String {
    format!("xdev hook: bad hook input: {error}; printing nothing, so the agent decides as usual")
}

/// `xdev hook` waited `waited` for nothing; the agent asks as usual.
pub fn hook_timed_out_asking(waited: impl std::fmt::Display) -> String {
    format!("xdev hook: no decision within {waited}; the preview was withdrawn and the agent asks as usual")
}

/// `xdev hook --on-timeout deny` waited `waited` for nothing.
pub fn hook_timed_out_denying(waited: impl std::fmt::Display) -> String {
    format!("xdev hook: no decision within {waited}; the preview was withdrawn and the call denied (--on-timeout deny)")
}

/// `xdev hook --strict`: what the agent is told when the mount cannot be
/// asked (`error`).
pub fn hook_could_not_ask(error: impl std::fmt::Display) -> String {
    format!("xdev could not ask for a decision: {error}")
}

/// `xdev hook --strict`: what it says on stderr when the mount cannot be
/// asked.
pub fn hook_denying_strict(error: impl std::fmt::Display) -> String {
    format!("xdev hook: {error}; denying (--strict)")
}

/// `xdev hook`: the mount cannot be asked (`error`); the agent asks as usual.
pub fn hook_asks_as_usual(error: impl std::fmt::Display) -> String {
    format!("xdev hook: {error}; printing nothing, so the agent asks as usual")
}

/// `xdev hook` was given decision `id` but could not report its result
/// text to the mount (`error`); the decision stands.
pub fn hook_cannot_report(id: &str, error: impl std::fmt::Display) -> String {
    format!(
        "xdev hook: {id} was decided, but its result could not be reported to the mount: {error}"
    )
}

/// A file of the mount that does not hold what it should (`error`).
pub fn unexpected_content(path: &Path, error: impl std::fmt::Display) -> String {
    format!("unexpected {}: {error}", path.display())
}

/// `xdev hook` could not write the plan to `path`.
pub fn cannot_write_plan(path: &Path) -> String {
    format!("cannot write the plan to {}", path.display())
}

/// `xdev hook` found no free scratch name beside a plan file.
pub const NO_SCRATCH_NAME: &str = "every scratch name tried beside it was taken";

/// `xdev hook`: the plan desk went away while a plan waited.
pub const PLAN_DESK_WENT_AWAY: &str = "the plan desk went away";

/// `xdev hook`: the plan desk decided something it does not know.
pub fn unexpected_plan_decision(decision: &str) -> String {
    format!("unexpected plan decision: {decision}")
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
