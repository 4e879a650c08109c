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
use crate::who::Who;

/// The id of the preview a decision decides, once its callback runs: what
/// the journal names when the writer stops waiting before the decision ends.
pub(super) type Claimed = Arc<Mutex<Option<String>>>;

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
        let hooks = DispatchHooks {
            cancel: None,
            before_decision: self.before_decision(target, who.as_ref()),
            on_claim: Some(Box::new(move |id| *claimed.lock() = Some(id.to_string()))),
        };
        let decision = target
            .dispatch(&self.session, self.plan.as_ref(), text, hooks)
            .await;
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
        // The preview is still staged (in progress): its label and tool
        // come from the session, only when a writer leaves.
        let preview = claimed
            .lock()
            .take()
            .map(|id| self.session.preview(&id).ok_or(id));
        let record = Record::writer_left(&target.name(), text.trim(), preview, &why, Some(who));
        // Nobody waits for it: the writer is let go at once.
        drop(self.journal.append(&record));
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
