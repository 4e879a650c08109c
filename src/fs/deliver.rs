//! A message on its way to a handler (by a write or a renamed draft), and
//! where its result is recorded: on its descriptor, in the status files,
//! and in the journal, before the writer gets its answer.

use fuser::{Errno, FileHandle};

use super::handles::Handle;
use super::target::Target;
use super::{errno_of, Shared};
use crate::dispatch::{DeviceResult, DispatchHooks, Resolution};
use crate::error::Error;
use crate::journal::Record;
use crate::who::Who;

/// One message on its way to a handler: by a write (on descriptor `fh`)
/// or by renaming a draft of `bytes` bytes onto the device.
pub(super) struct Delivery {
    pub(super) target: Target,
    pub(super) text: String,
    pub(super) bytes: u64,
    pub(super) fh: Option<FileHandle>,
}

impl Shared {
    /// Dispatches one complete message and records its result.
    pub(super) async fn dispatch(
        &self,
        target: &Target,
        text: &str,
        fh: Option<FileHandle>,
        tid: u32,
        who: Option<Who>,
    ) -> Resolution {
        let hooks = DispatchHooks {
            cancel: Some(self.control.cancel_for(tid)),
            before_decision: self.journal.before_decision(|| target.name(), who.as_ref()),
        };
        let resolution = target
            .dispatch(&self.session, self.plan.as_ref(), text, hooks)
            .await;
        self.record(target, fh, text, &resolution, who);
        resolution
    }

    /// Records a result: on its descriptor (`fh`), in the status files, and
    /// in the journal (before the writer gets its answer).
    fn record(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        reason: &str,
        resolution: &Resolution,
        who: Option<Who>,
    ) {
        if let Some(fh) = fh {
            let outcome = resolution
                .error
                .as_ref()
                .map_or(Ok(()), |error| Err(errno_of(error)));
            let id = resolution.id.as_deref();
            self.handles.set_result(fh, outcome, &resolution.text, id);
        }
        let name = target.name();
        let record = Record::decision(&name, reason.trim(), resolution, who);
        // The writer gets its outcome even if the journal file fails: the
        // status files say so, and the next record written names the loss.
        let _ = self.journal.append(&record);
        let withhold = self.owner.withholds_reasons();
        self.last
            .record(DeviceResult::new(name, resolution, withhold));
        tracing::debug!(target = %target.name(), ok = resolution.is_ok(), text = %resolution.text, "device result");
    }

    /// A write refused before dispatch still counts as the device's result.
    pub(super) fn refuse(
        &self,
        target: &Target,
        fh: Option<FileHandle>,
        error: Error,
        who: Who,
    ) -> Errno {
        let errno = errno_of(&error);
        let refused = Resolution::failed(error, None);
        self.record(target, fh, "", &refused, Some(who));
        errno
    }

    /// Closes descriptor `fh`, and returns what it held.
    pub(super) fn release(&self, fh: FileHandle) -> Option<Handle> {
        let handle = self.handles.remove(fh);
        self.pollers.forget(fh);
        handle
    }

    /// Notes in the journal the bytes written on a closed device descriptor
    /// after its message, which nothing dispatched: no message is ever
    /// dispatched where nobody would be told its outcome. (A stage handle
    /// dropped here withdraws its preview.)
    pub(super) fn note_released(&self, handle: Option<Handle>) {
        if let Some(Handle::Target {
            target,
            message,
            decided,
            writer,
            ..
        }) = handle
        {
            if message.ignored() > 0 {
                let note = Record::ignored(&target.name(), decided, message.ignored(), writer);
                // A note the file cannot take is counted as lost there.
                let _ = self.journal.append(&note);
            }
        }
    }
}
