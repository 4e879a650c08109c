//! Answers that may have to wait: a device write's outcome (the handler
//! may take its time), a later write's (the first's), a read of `events`
//! or `stage`, a rename onto a device, an open of a busy device. Each runs
//! inline when it can finish at once, else on the runtime, so the request
//! loop never blocks; a wait ends with the asker's signal or the mount
//! closing.

use std::future::Future;
use std::sync::Arc;

use fuser::{Errno, FileHandle, INodeNo, ReplyData, ReplyEmpty, ReplyOpen, ReplyWrite, Request};
use futures::FutureExt;

use super::busy::Writing;
use super::control::InFlight;
use super::deliver::{Claimed, Delivery};
use super::handles::Outcome;
use super::message::WriteStep;
use super::open::Opened;
use super::read::Waiting;
use super::target::Target;
use super::{errno_of, XdevFs};
use crate::journal::Commit;
use crate::who::Who;

impl XdevFs {
    /// Runs `answer` on the runtime: inline if it finishes at once (no
    /// thread hop for a fast handler), else as a task, so a slow handler
    /// never blocks the request loop. Returns whether it had to wait.
    pub(super) fn answer_soon<F>(&self, answer: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let _entered = self.shared.runtime.enter();
        let mut answer = Box::pin(answer);
        if answer.as_mut().now_or_never().is_some() {
            return false;
        }
        self.shared.runtime.spawn(answer);
        true
    }

    /// Answers once `commit` is ready (at once without a journal file): a
    /// reply that must follow its journal record never holds the request
    /// loop while the record is synced.
    pub(super) fn answer_after(&self, commit: Commit, answer: impl FnOnce() + Send + 'static) {
        self.answer_soon(async move {
            // The answer goes out whatever the file did: the status files
            // and the next record the file takes say what went wrong.
            let _ = commit.await;
            answer();
        });
    }

    /// Runs `answer` (built from the mount's state and the asker's cancel:
    /// its signal or the mount closing) through [`XdevFs::answer_soon`]; the
    /// mount counts it in flight until it ends, so unmounting waits for it.
    fn answer_waiting<F, Fut>(&self, req: &Request, answer: F)
    where
        F: FnOnce(Arc<super::Shared>, crate::dispatch::Cancel) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let cancel = self.shared.control.cancel_for(req.pid());
        let in_flight = InFlight::start(&self.shared.control);
        let answering = answer(Arc::clone(&self.shared), cancel);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            answering.await;
        });
    }

    /// Answers a write on a device-like descriptor: the first write's
    /// message is dispatched (or refused), a later one gets its outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_target(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        target: Target,
        step: WriteStep,
        written: u32,
        reply: ReplyWrite,
    ) {
        let who = self.shared.who.who(req.uid(), req.pid());
        match step {
            WriteStep::Repeat => self.repeat_outcome(req, fh, &who, written, reply),
            WriteStep::Refuse(error) => {
                let (errno, commit) = self.shared.refuse(&target, Some(fh), error, who, "");
                self.answer_after(commit, move || reply.error(errno));
            }
            WriteStep::Dispatch(text) => {
                if let Some(refusal) = self.shared.control.refusal() {
                    // A mount that is stopping takes no new decisions.
                    let (errno, commit) =
                        self.shared.refuse(&target, Some(fh), refusal, who, &text);
                    return self.answer_after(commit, move || reply.error(errno));
                }
                // The kernel holds the inode's lock until this is answered:
                // from now on, openers are sent elsewhere (see `busy`).
                let writing = matches!(target, Target::Device(_) | Target::Session { .. })
                    .then(|| self.shared.busy.begin(ino));
                let delivery = Delivery {
                    target,
                    text,
                    bytes: u64::from(written),
                    fh: Some(fh),
                };
                self.decide(
                    req.pid(),
                    who,
                    delivery,
                    writing,
                    move |errno| match errno {
                        None => reply.written(written),
                        Some(errno) => reply.error(errno),
                    },
                );
            }
        }
    }

    /// Dispatches `delivery` for thread `tid` of `who` and hands the outcome
    /// (`None` for success, else the errno) to `answer`, at once when the
    /// handler answers at once. `writing` is the device inode a write keeps
    /// busy while it waits.
    ///
    /// Only a signal that stops the writer (or the mount closing) lets it
    /// go before the outcome: a proposal is then withdrawn (`EINTR` is
    /// true, and a retry proposes again); any other decision goes on, the
    /// journal notes that its writer left, and a retry on the descriptor
    /// joins it. A signal the writer merely handles changes nothing: it is
    /// delivered once the outcome is.
    fn decide(
        &self,
        tid: u32,
        who: Who,
        delivery: Delivery,
        writing: Option<Writing>,
        answer: impl FnOnce(Option<Errno>) + Send + 'static,
    ) {
        let shared = Arc::clone(&self.shared);
        let waiting = InFlight::decision(&self.shared.control);
        let mut stop = self.shared.control.stop_for(tid);
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
                let (shared, target, text) = (Arc::clone(&shared), target.clone(), text.clone());
                let (who, claimed) = (who.clone(), Arc::clone(&claimed));
                async move {
                    shared
                        .dispatch(&target, &text, fh, Some(who), claimed)
                        .await
                }
            });
            let ended = tokio::select! {
                biased;
                decided = &mut decision => Ok(decided),
                why = &mut stop => Err(why),
            };
            // Free before the answer: the writer's next open may
            // come at once, and must not be sent elsewhere.
            drop(writing);
            match ended {
                Ok(decided) => {
                    let errno = decided.error().map(errno_of);
                    if errno.is_none() {
                        shared.delivered.record(target, pid, bytes);
                    }
                    answer(errno);
                }
                Err(why) => {
                    let errno = errno_of(&why);
                    if target.withdrawable() {
                        drop(decision);
                        let _ = shared.withdrawn(&target, fh, &text, why, who).await;
                    } else {
                        shared.writer_left(&target, &text, &claimed, why, who);
                        shared.runtime.spawn(decision);
                    }
                    answer(Some(errno));
                }
            }
        });
    }

    /// Answers a later write on a device descriptor with the first write's
    /// outcome (its own byte count on success, the same errno otherwise),
    /// waiting for it if the first is still being decided: the writer may
    /// go on a signal that stops it (`EINTR`), and ask again.
    fn repeat_outcome(
        &self,
        req: &Request,
        fh: FileHandle,
        who: &Who,
        written: u32,
        reply: ReplyWrite,
    ) {
        let Some(mut first) = self.shared.handles.first_outcome(fh, who) else {
            return reply.error(Errno::EBADF);
        };
        let answer = move |outcome: Option<Outcome>, reply: ReplyWrite| match outcome {
            Some(Ok(())) => reply.written(written),
            Some(Err(errno)) => reply.error(errno),
            None => reply.error(Errno::EBADF),
        };
        let known = *first.borrow();
        if known.is_some() {
            return answer(known, reply);
        }
        let stop = self.shared.control.stop_for(req.pid());
        let in_flight = InFlight::start(&self.shared.control);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            tokio::select! {
                biased;
                outcome = first.wait_for(Option::is_some) => {
                    answer(outcome.ok().and_then(|outcome| *outcome), reply)
                }
                why = stop => reply.error(errno_of(&why)),
            }
        });
    }

    /// Answers a read that has to wait (events, stage, a status file
    /// rendered for another user), cancelled by the reader's signal or the
    /// mount closing.
    pub(super) fn read_when_ready(
        &self,
        req: &Request,
        fh: FileHandle,
        size: u32,
        waiting: Waiting,
        reply: ReplyData,
    ) {
        let uid = req.uid();
        self.answer_waiting(req, move |shared, cancel| async move {
            let bytes = match waiting {
                Waiting::Events(at) => {
                    tokio::select! {
                        () = shared.journal.wait_beyond(at.record) => Ok(shared.take_events(fh, at, size)),
                        error = cancel => Err(errno_of(&error)),
                    }
                }
                Waiting::Stage(read) => {
                    tokio::select! {
                        biased;
                        bytes = read => Ok(bytes),
                        error = cancel => Err(errno_of(&error)),
                    }
                }
                Waiting::Rendering { offset } => {
                    // Yielded first, so that the rendering runs on the
                    // runtime, never inline on the request loop.
                    tokio::task::yield_now().await;
                    shared
                        .read_rendered(fh, offset, size, uid)
                        .ok_or(Errno::EBADF)
                }
            };
            match bytes {
                Ok(bytes) => reply.data(&bytes),
                Err(errno) => reply.error(errno),
            }
        });
    }

    /// Delivers a renamed draft's text to `target` as one message: the
    /// rename is answered with the outcome, as a write would be, and the
    /// journal names the renaming process.
    pub(super) fn deliver_draft(
        &self,
        req: &Request,
        target: Target,
        text: String,
        bytes: u64,
        reply: ReplyEmpty,
    ) {
        let who = self.shared.who.who(req.uid(), req.pid());
        if let Some(refusal) = self.shared.control.refusal() {
            // A mount that is stopping takes no new decisions.
            let (errno, commit) = self.shared.refuse(&target, None, refusal, who, &text);
            return self.answer_after(commit, move || reply.error(errno));
        }
        let delivery = Delivery {
            target,
            text,
            bytes,
            fh: None,
        };
        self.decide(req.pid(), who, delivery, None, move |errno| match errno {
            None => reply.ok(),
            Some(errno) => reply.error(errno),
        });
    }

    /// Opens a device inode for writing once no write on it is in flight,
    /// cancelled by the opener's signal or the mount closing.
    pub(super) fn open_when_free(
        &self,
        req: &Request,
        ino: INodeNo,
        opened: Opened,
        reply: ReplyOpen,
    ) {
        self.answer_waiting(req, move |shared, cancel| async move {
            tokio::select! {
                () = shared.busy.until_free(ino) => {
                    reply.opened(shared.handles.insert(opened.handle), opened.flags)
                }
                error = cancel => reply.error(errno_of(&error)),
            }
        });
    }
}
