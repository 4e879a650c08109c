//! The replies that may have to wait: a device write's outcome (the
//! handler may take its time), a later write's (the first's), a read of
//! `events` or `stage`, a rename onto a device, an open of a busy device.
//! Each runs inline when it can finish at once, else on the runtime, so a
//! request thread never waits; a wait ends with the asker's signal or the
//! mount closing. The adapter hands each an `answer` closure that replies;
//! nothing here knows a fuser reply type.
//!
//! | module | answers |
//! |---|---|
//! | [`decision`] | a message's writer, once its decision is made (or the writer stops waiting) |
//! | [`deliver`] | a message's dispatch, and where its result is recorded: descriptor, status files, journal |
//! | [`ready`] | a read of a stream, an open of a busy device, once ready |
//!
//! This file holds how an answer runs: at once, or later on the runtime.

pub(crate) mod decision;
pub(crate) mod deliver;
pub(crate) mod ready;

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;

use crate::dispatch::Cancel;
use crate::fs::kernel::control::InFlight;
use crate::fs::state::XdevFs;
use crate::journal::Commit;

impl XdevFs {
    /// Runs `answer` on the runtime: inline if it finishes at once (no
    /// thread hop for a fast handler), else as a task, so a slow handler
    /// never blocks a request thread.
    fn answer_soon<F>(&self, answer: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let _entered = self.runtime.enter();
        let mut answer = Box::pin(answer);
        if answer.as_mut().now_or_never().is_some() {
            return;
        }
        self.runtime.spawn(answer);
    }

    /// Answers once `commit` is ready (at once without a journal file): a
    /// reply that must follow its journal record never holds a request
    /// thread while the record is synced.
    pub(crate) fn answer_after(&self, commit: Commit, answer: impl FnOnce() + Send + 'static) {
        self.answer_soon(async move {
            // The answer goes out whatever the file did: the status files
            // and the next record the file takes say what went wrong.
            let _ = commit.await;
            answer();
        });
    }

    /// Answers once every journal record made so far is on disk (a line
    /// on `stage` that staged or withdrew a preview).
    pub(crate) fn answer_when_flushed(&self, answer: impl FnOnce() + Send + 'static) {
        self.answer_after(self.journal.flushed(), answer);
    }

    /// Runs `answer` (built from the mount's state and the cancel of thread
    /// `tid`: its signal or the mount closing) through
    /// [`XdevFs::answer_soon`]; the mount counts it in flight until it ends,
    /// so unmounting waits for it.
    fn answer_waiting<F, Fut>(self: &Arc<Self>, tid: u32, answer: F)
    where
        F: FnOnce(Arc<XdevFs>, Cancel) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let cancel = self.control.cancel_for(tid);
        let in_flight = InFlight::start(&self.control);
        let answering = answer(Arc::clone(self), cancel);
        self.answer_soon(async move {
            let _in_flight = in_flight;
            answering.await;
        });
    }
}
