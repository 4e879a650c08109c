//! A message on its way to a handler (by a write or a renamed draft), and
//! where its result is recorded: on its descriptor, in the status files,
//! and in the journal, before the writer gets its answer. A refusal before
//! dispatch, a writer that stops waiting and a withdrawn proposal are
//! recorded here too.

use std::sync::Arc;

use fuser::{Errno, FileHandle};
use parking_lot::Mutex;

use crate::dispatch::{BeforeDecision, Decision, DeviceResult, DispatchHooks};
use crate::error::Error;
use crate::fs::handles::table::Decided;
use crate::fs::refusal::{agents_own_call, errno_of};
use crate::fs::state::XdevFs;
use crate::fs::tree::target::Target;
use crate::journal::{Commit, Record};
use crate::texts;
use crate::who::Who;

/// How far a decision has come: what the mount needs to tell a writer it
/// lets go before the decision ends, and the preview the journal then names.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) enum Progress {
    /// No preview claimed: a handler with none behind it (a queue invoker),
    /// which runs from the start.
    #[default]
    Unclaimed,
    /// This preview is claimed, and the journal file is taking its intent
    /// record: nothing runs yet.
    Recording(String),
    /// This preview's callback runs (for an external producer: its line is
    /// on the way, or read).
    Running(String),
    /// The decision (of this preview, if one) has its outcome: only its
    /// record is being written.
    Decided(Option<String>),
}

impl Progress {
    /// The preview claimed, if any.
    pub(super) fn preview_id(&self) -> Option<&str> {
        match self {
            Progress::Unclaimed | Progress::Decided(None) => None,
            Progress::Recording(id) | Progress::Running(id) | Progress::Decided(Some(id)) => {
                Some(id)
            }
        }
    }
}

/// A decision's [`Progress`], shared by the dispatch that makes it and the
/// writer waiting for it.
pub(super) type Claimed = Arc<Mutex<Progress>>;

/// `before`, noting first that the decision of the claimed preview waits
/// for its intent record.
fn noting_recording(before: BeforeDecision, claimed: Claimed) -> BeforeDecision {
    Box::new(move |id, details| {
        *claimed.lock() = Progress::Recording(id.to_string());
        before(id, details)
    })
}

impl XdevFs {
    /// Dispatches one complete message and records its result. Nothing here
    /// gives up on a decision: the caller may stop waiting for it (see
    /// [`XdevFs::decide`]), and the result is still recorded when it comes.
    pub(super) async fn dispatch(
        &self,
        target: &Target,
        text: &str,
        fh: Option<FileHandle>,
        who: Option<Who>,
        claimed: Claimed,
    ) -> Decision {
        let before_decision = self
            .before_decision(target, who.as_ref())
            .map(|before| noting_recording(before, Arc::clone(&claimed)));
        let running = Arc::clone(&claimed);
        let hooks = DispatchHooks {
            cancel: None,
            before_decision,
            on_claim: Some(Box::new(move |id| {
                *running.lock() = Progress::Running(id.to_string())
            })),
        };
        let decision = target
            .dispatch(&self.session, self.controls(), text, hooks)
            .await;
        // From here only the record is awaited: a mount stopping now lets
        // the writer wait for this outcome rather than call it unknown.
        {
            let mut progress = claimed.lock();
            *progress = Progress::Decided(progress.preview_id().map(str::to_string));
        }
        // The writer gets its outcome even if the journal file fails: the
        // status files say so, and the next record written names the loss.
        let _ = self.note(target, text, &decision, who).await;
        // Only now may a later write on the descriptor learn the outcome:
        // nobody is told before the journal has it.
        self.keep_outcome(fh, &decision);
        decision
    }

    /// What a decision written to `target` by `who` passes once its preview
    /// is claimed, before anything of it runs: the rule that an agent does
    /// not decide its own calls, then (with a journal file) its intent
    /// record. A refusal releases the preview where it stood and is the
    /// decision's outcome.
    fn before_decision(&self, target: &Target, who: Option<&Who>) -> Option<BeforeDecision> {
        let intent = self.journal.before_decision(|| target.name(), who);
        let Some(writer) = who.cloned() else {
            return intent;
        };
        let session = self.session.clone();
        Some(Box::new(move |id, details| {
            if let Some(refused) = agents_own_call(&session, id, &writer) {
                return Box::pin(std::future::ready(Err(refused)));
            }
            match intent {
                Some(intent) => intent(id, details),
                None => Box::pin(std::future::ready(Ok(()))),
            }
        }))
    }

    /// Records a result: on its descriptor (`fh`), in the status files, and
    /// in the journal; the writer is answered once the commit is ready.
    fn record(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        reason: &str,
        decision: &Decision,
        who: Option<Who>,
    ) -> Commit {
        self.keep_outcome(fh, decision);
        self.note(target, reason, decision, who)
    }

    /// Keeps a result on its descriptor (`fh`), for the later writes and
    /// reads of that descriptor.
    fn keep_outcome(&self, fh: Option<FileHandle>, decision: &Decision) {
        if let Some(fh) = fh {
            let outcome = decision
                .error()
                .map_or(Ok(()), |error| Err(errno_of(error)));
            let details = decision.details();
            let decided = Decided {
                id: decision.shared_id(),
                label: details.map(|details| details.label.clone()),
                source_tool: details.map(|details| details.source_tool_name.clone()),
            };
            self.handles
                .set_result(fh, outcome, decision.text(), decided);
        }
    }

    /// Records a result in the journal and the status files only.
    fn note(&self, target: &Target, reason: &str, decision: &Decision, who: Option<Who>) -> Commit {
        let name = target.name();
        let commit = self
            .journal
            .append_decision(&name, reason.trim(), decision, who.as_ref());
        tracing::debug!(target = %name, ok = decision.is_ok(), text = %decision.text(), "device result");
        self.last.record(DeviceResult::new(name, decision));
        commit
    }

    /// A write refused before dispatch still counts as the device's result;
    /// its reason (`text`, the message that was refused) is kept. The
    /// refusal is answered once its record's commit is ready.
    pub(super) fn refuse(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        error: Error,
        who: Who,
        text: &str,
    ) -> (Errno, Commit) {
        let errno = errno_of(&error);
        let refused = Decision::failed(error, None, None);
        (errno, self.record(target, fh, text, &refused, Some(who)))
    }

    /// The writer of a decision that goes on stopped waiting (a signal that
    /// stops it, the mount closing): the journal says so, naming the
    /// preview if one was claimed. The descriptor's outcome stays unknown,
    /// so a retry on it joins the decision and gets its real outcome, which
    /// is recorded when it comes.
    pub(super) fn writer_left(
        &self,
        target: &Target,
        text: &str,
        claimed: &Claimed,
        why: Error,
        who: Who,
    ) {
        let id = claimed.lock().preview_id().map(str::to_string);
        // Nobody waits for it: the writer is let go at once.
        drop(self.note_left(target, text, id, &why, who));
    }

    /// The record that the writer of a decision under way was let go,
    /// told `why`, while preview `id` (if any) was being decided.
    fn note_left(
        &self,
        target: &Target,
        text: &str,
        id: Option<String>,
        why: &Error,
        who: Who,
    ) -> Commit {
        // The preview is still staged (in progress): its label and tool
        // come from the session, only when a writer leaves.
        let preview = id.map(|id| self.session.preview(&id).ok_or(id));
        let record = Record::writer_left(&target.name(), text.trim(), preview, why, Some(who));
        self.journal.append(&record)
    }

    /// The mount stopped while an apply it had handed out (to an
    /// in-process callback, or in a line its producer read) still ran: its
    /// writer is told the outcome is unknown (`EIO`), on its descriptor,
    /// in `last` and in the journal (a `writer-left` record with outcome
    /// `unknown`). The apply runs on; its own record follows if it ends
    /// before the process does. The writer is answered once the record's
    /// commit is ready.
    pub(super) fn outcome_unknown_at_shutdown(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        text: &str,
        claimed: &Claimed,
        who: Who,
    ) -> Commit {
        let error = Error::OutcomeUnknown(texts::OUTCOME_UNKNOWN_AT_SHUTDOWN.into());
        let id = claimed.lock().preview_id().map(str::to_string);
        let unknown = Decision::failed(error.clone(), id.as_deref().map(Arc::from), None);
        self.keep_outcome(fh, &unknown);
        self.last.record(DeviceResult::new(target.name(), &unknown));
        self.note_left(target, text, id, &error, who)
    }

    /// The mount stopped before the decision of preview `id` began (its
    /// intent record was still being written): nothing ran, and its writer
    /// is told `ECANCELED`. Recorded as its result; the writer is answered
    /// once the record's commit is ready.
    pub(super) fn not_started_at_shutdown(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        text: &str,
        id: &str,
        who: Who,
    ) -> Commit {
        let error = Error::Aborted(texts::NOT_STARTED_AT_SHUTDOWN.into());
        let cancelled = Decision::failed(error, Some(Arc::from(id)), None);
        self.record(target, fh, text, &cancelled, Some(who))
    }

    /// The writer stopped waiting for a decision that can be withdrawn (a
    /// proposal): it is, the writer is told `EINTR`, and the descriptor
    /// takes its message again, so a retry asks again. The writer is
    /// answered once the record's commit is ready.
    pub(super) fn withdrawn(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        text: &str,
        why: Error,
        who: Who,
    ) -> Commit {
        let withdrawn = Decision::failed(why, None, None);
        if let Some(fh) = fh {
            self.handles.forget_message(fh);
        }
        self.note(target, text, &withdrawn, Some(who))
    }
}
