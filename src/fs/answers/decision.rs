//! Answering a message's writer: a device write's outcome (the handler may
//! take its time), a later write's (the first's, waited for if need be),
//! a renamed draft's. Only a signal that stops the writer, or the mount
//! closing, lets it go before the outcome.

use std::sync::Arc;

use fuser::{Errno, FileHandle, INodeNo};

use super::deliver::{Claimed, Progress};
use crate::dispatch::Decision;
use crate::error::Error;
use crate::fs::handles::message::WriteStep;
use crate::fs::handles::table::Outcome;
use crate::fs::kernel::busy::{Held, Writing};
use crate::fs::kernel::control::InFlight;
use crate::fs::refusal::errno_of;
use crate::fs::requests::draft_ops::Renaming;
use crate::fs::requests::write::Delivery;
use crate::fs::state::XdevFs;
use crate::fs::tree::target::Target;
use crate::journal::Commit;
use crate::texts;
use crate::who::Who;

/// A write on a device-like descriptor, as the adapter hands it on.
#[derive(Debug)]
pub(crate) struct MessageWrite {
    /// The writer: its uid and thread.
    pub(crate) uid: u32,
    pub(crate) tid: u32,
    /// The inode written, which a dispatched message keeps busy while it
    /// waits, and the descriptor.
    pub(crate) ino: INodeNo,
    pub(crate) fh: FileHandle,
    /// What the write does with `target`'s message (the write decision's).
    pub(crate) target: Target,
    pub(crate) step: WriteStep,
    /// The descriptor's hold on a device inode, which a dispatched
    /// message turns into its write in flight.
    pub(crate) held: Option<Held>,
    /// How many bytes the write carried.
    pub(crate) bytes: u32,
}

/// What becomes of a decision whose writer is let go before it ends (see
/// [`XdevFs::unfinished`]).
#[derive(Debug, PartialEq, Eq)]
enum Unfinished {
    /// A proposal: withdrawn (nothing is staged), its writer told `EINTR`.
    Withdraw,
    /// It goes on; the journal notes that its writer left, and its own
    /// record follows when it ends.
    GoesOn,
    /// The mount stopped before this preview's decision began (its intent
    /// record was being written): dropped, nothing ran.
    NotStarted(String),
    /// The mount stopped, and the outcome is known or comes at once (the
    /// callback has answered and only its record is being written, or its
    /// apply was taken back before its producer read it): its writer waits
    /// for it.
    Finishing,
    /// The mount stopped while an apply ran where it was handed: its
    /// outcome is unknown, and it goes on.
    Unknown,
}

impl XdevFs {
    /// Answers a write on a device-like descriptor: the first write's
    /// message is dispatched (or refused), a later one gets its outcome.
    pub(crate) fn answer_write(
        self: &Arc<Self>,
        write: MessageWrite,
        answer: impl FnOnce(Outcome) + Send + 'static,
    ) {
        let MessageWrite {
            uid,
            tid,
            ino,
            fh,
            target,
            step,
            held,
            bytes,
        } = write;
        let who = self.who.who(uid, tid);
        match step {
            WriteStep::Repeat => self.repeat_outcome(tid, fh, &who, answer),
            WriteStep::Refuse(error) => {
                let refused = self.refuse(&target, Some(fh), error, who, "");
                self.answer_refused(refused, answer);
            }
            WriteStep::Dispatch(text) => {
                if let Some(stopping) = self.control.refusal() {
                    // A mount that is stopping takes no new decisions.
                    let refused = self.refuse(&target, Some(fh), stopping, who, &text);
                    return self.answer_refused(refused, answer);
                }
                // The kernel holds the inode's lock until this is answered:
                // openers are sent elsewhere meanwhile (see `busy`). A
                // descriptor's first message takes over its open's hold; a
                // later one (after a withdrawn proposal) begins anew.
                let writing = match held {
                    Some(held) => Some(held.write()),
                    None => matches!(target, Target::Device(_) | Target::Session { .. })
                        .then(|| self.busy.begin(ino)),
                };
                let delivery = Delivery {
                    target,
                    text,
                    bytes: u64::from(bytes),
                    fh: Some(fh),
                };
                self.decide(tid, who, delivery, writing, answer);
            }
        }
    }

    /// Answers a rename of a draft by thread `tid` of `uid`: a move at
    /// once; a delivery with its outcome, as a write would be (the journal
    /// names the renaming process); a draft that breaks a message's rules
    /// with its refusal, recorded as the device's result.
    pub(crate) fn answer_rename(
        self: &Arc<Self>,
        (uid, tid): (u32, u32),
        renaming: Renaming,
        answer: impl FnOnce(Outcome) + Send + 'static,
    ) {
        let delivery = match renaming {
            Renaming::Moved => return answer(Ok(())),
            Renaming::Deliver(delivery) => delivery,
            Renaming::Refused { target, error } => {
                let who = self.who.who(uid, tid);
                let refused = self.refuse(&target, None, error, who, "");
                return self.answer_refused(refused, answer);
            }
        };
        let who = self.who.who(uid, tid);
        if let Some(stopping) = self.control.refusal() {
            // A mount that is stopping takes no new decisions.
            let refused = self.refuse(&delivery.target, None, stopping, who, &delivery.text);
            return self.answer_refused(refused, answer);
        }
        self.decide(tid, who, delivery, None, answer);
    }

    /// Answers a message refused before dispatch with its errno, once its
    /// record's `commit` is ready.
    fn answer_refused(
        &self,
        (errno, commit): (Errno, Commit),
        answer: impl FnOnce(Outcome) + Send + 'static,
    ) {
        self.answer_after(commit, move || answer(Err(errno)));
    }

    /// Dispatches `delivery` for thread `tid` of `who` and hands the outcome
    /// to `answer`, at once when the handler answers at once. `writing` is
    /// the device inode a write keeps busy while it waits.
    ///
    /// Only a signal that stops the writer (or the mount closing) lets it
    /// go before the outcome: a proposal is then withdrawn (`EINTR` is
    /// true, and a retry proposes again); any other decision goes on, the
    /// journal notes that its writer left, and a retry on the descriptor
    /// joins it. When the mount closes, the writer is told what became of
    /// the decision (see [`XdevFs::unfinished`]). A signal the writer merely
    /// handles changes nothing: it is delivered once the outcome is.
    fn decide(
        self: &Arc<Self>,
        tid: u32,
        who: Who,
        delivery: Delivery,
        writing: Option<Writing>,
        answer: impl FnOnce(Outcome) + Send + 'static,
    ) {
        let fs = Arc::clone(self);
        let waiting = InFlight::decision(&self.control);
        let mut stop = self.control.stop_for(tid);
        self.answer_soon(async move {
            let _waiting = waiting;
            let Delivery {
                target,
                text,
                bytes,
                fh,
            } = delivery;
            let pid = who.pid;
            let claimed = Claimed::default();
            let mut decision = Box::pin({
                let (fs, target, text) = (Arc::clone(&fs), target.clone(), text.clone());
                let (who, claimed) = (who.clone(), Arc::clone(&claimed));
                async move { fs.dispatch(&target, &text, fh, Some(who), claimed).await }
            });
            let ended = tokio::select! {
                biased;
                decided = &mut decision => Ok(decided),
                why = &mut stop => Err(why),
            };
            // Free before the answer: the writer's next open may come at
            // once, and must not be sent elsewhere. A withdrawn message's
            // descriptor holds the inode again, for the retry on it.
            match (writing, fh) {
                (Some(writing), Some(fh)) if ended.is_err() && target.withdrawable() => {
                    let held = writing.hold_again();
                    fs.handles.with(fh, |handle| handle.hold(held));
                }
                (writing, _) => drop(writing),
            }
            let why = match ended {
                Ok(decided) => return answer(fs.outcome_of(&decided, target, pid, bytes)),
                Err(why) => why,
            };
            let outcome = match fs.unfinished(&target, &claimed) {
                Unfinished::Withdraw => {
                    let errno = errno_of(&why);
                    drop(decision);
                    let _ = fs.withdrawn(&target, fh, &text, why, who).await;
                    Err(errno)
                }
                Unfinished::GoesOn => {
                    let errno = errno_of(&why);
                    fs.writer_left(&target, &text, &claimed, why, who);
                    fs.runtime.spawn(decision);
                    Err(errno)
                }
                Unfinished::NotStarted(id) => {
                    // Dropped before its callback ran: the claim goes back.
                    drop(decision);
                    let _ = fs
                        .not_started_at_shutdown(&target, fh, &text, &id, who)
                        .await;
                    Err(Errno::ECANCELED)
                }
                Unfinished::Finishing => {
                    let decided = decision.await;
                    fs.outcome_of(&decided, target, pid, bytes)
                }
                Unfinished::Unknown => {
                    let commit = fs.outcome_unknown_at_shutdown(&target, fh, &text, &claimed, who);
                    fs.runtime.spawn(decision);
                    let _ = commit.await;
                    Err(Errno::EIO)
                }
            };
            answer(outcome);
        });
    }

    /// A decision's outcome for its writer; a success also tells the
    /// writer sizes how much `pid` wrote to `target`.
    fn outcome_of(&self, decided: &Decision, target: Target, pid: u32, bytes: u64) -> Outcome {
        let errno = decided.error().map(errno_of);
        if errno.is_none() {
            self.writer_sizes.record(target, pid, bytes);
        }
        errno.map_or(Ok(()), Err)
    }

    /// What becomes of a decision written to `target` whose writer is let
    /// go before it ends (a signal stopped the writer, or the mount's
    /// grace period ended), given how far it came (`claimed`).
    ///
    /// When the mount stops, its writer is told the truth: `ECANCELED` only
    /// where nothing was handed to an applier (the decision had not begun,
    /// or its producer had not read the apply, which is then taken back),
    /// `EIO` "outcome unknown" where an apply had reached its applier (an
    /// in-process callback runs, or its producer read the line).
    fn unfinished(&self, target: &Target, claimed: &Claimed) -> Unfinished {
        if target.withdrawable() {
            return Unfinished::Withdraw;
        }
        if !self.control.is_closed() {
            return Unfinished::GoesOn;
        }
        let progress = claimed.lock().clone();
        match progress {
            Progress::Recording(id) => Unfinished::NotStarted(id),
            Progress::Decided(_) => Unfinished::Finishing,
            // A discard applies nothing, whatever its callback does.
            _ if !target.applies() => Unfinished::GoesOn,
            // A queue invoker's apply runs from the start.
            Progress::Unclaimed => Unfinished::Unknown,
            Progress::Running(id) => {
                let error = Error::Aborted(texts::APPLY_TAKEN_BACK_AT_SHUTDOWN.into());
                let session = &self.session;
                if session.take_back_apply(&id, texts::WITHDRAWN_AT_SHUTDOWN, error) {
                    Unfinished::Finishing
                } else {
                    Unfinished::Unknown
                }
            }
        }
    }

    /// Answers a later write on a device descriptor with the first write's
    /// outcome (success, or the same errno), waiting for it if the first is
    /// still being decided: the writer (thread `tid`) may go on a signal
    /// that stops it (`EINTR`), and ask again.
    fn repeat_outcome(
        &self,
        tid: u32,
        fh: FileHandle,
        who: &Who,
        answer: impl FnOnce(Outcome) + Send + 'static,
    ) {
        let Some(mut first) = self.handles.first_outcome(fh, who) else {
            return answer(Err(Errno::EBADF));
        };
        let known = *first.borrow();
        if let Some(outcome) = known {
            return answer(outcome);
        }
        let stop = self.control.stop_for(tid);
        let in_flight = InFlight::start(&self.control);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            tokio::select! {
                biased;
                outcome = first.wait_for(Option::is_some) => {
                    let outcome = outcome.ok().and_then(|outcome| *outcome);
                    answer(outcome.unwrap_or(Err(Errno::EBADF)))
                }
                why = stop => answer(Err(errno_of(&why))),
            }
        });
    }
}
