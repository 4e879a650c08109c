//! Where a write goes: a device-like file's descriptor turns its writes
//! into one message (see [`crate::fs::handles::message`]), a draft takes
//! bytes at any offset, and `stage` takes a producer's lines. Any other
//! descriptor is `EBADF`. A message then goes on its way as a
//! [`Delivery`], which a renamed draft makes too.

use fuser::FileHandle;

use crate::dispatch::{Decision, DeviceResult};
use crate::error::Error;
use crate::fs::handles::message::WriteStep;
use crate::fs::handles::stage::StageWrite;
use crate::fs::handles::table::Handle;
use crate::fs::kernel::busy::Held;
use crate::fs::refusal::{errno_of, refuse, Refusal};
use crate::fs::state::XdevFs;
use crate::fs::tree::node::STAGE_FILE;
use crate::fs::tree::target::Target;

/// One message on its way to a handler: by a write (on descriptor `fh`)
/// or by renaming a draft of `bytes` bytes onto the device.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub(crate) target: Target,
    pub(crate) text: String,
    pub(crate) bytes: u64,
    pub(crate) fh: Option<FileHandle>,
}

/// What a write that is not refused at once leads to.
pub(crate) enum Written {
    /// A write on a device-like file: what it does with `target`'s
    /// message, and the descriptor's hold on its inode if the message goes
    /// out now.
    Message(Target, WriteStep, Option<Held>),
    /// The bytes were taken (a draft): all of them are written.
    Taken,
    /// A producer's line was taken on `stage`: all of it is written, once
    /// the record it made (its `staged` record), if any, is on disk. A line
    /// that made none (a result report) waits for nothing, not even for
    /// records others made meanwhile.
    Staged(StageWrite),
}

impl XdevFs {
    /// Decides a write of `data` at `offset` through `fh` by thread `tid`
    /// of `uid`.
    pub(crate) fn write(
        &self,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        uid: u32,
        tid: u32,
    ) -> Result<Written, Refusal> {
        if let Some((target, step, held)) = self.handles.write(fh, offset, data) {
            return Ok(Written::Message(target, step, held));
        }
        if let Some(draft) = self.handles.draft(fh) {
            self.drafts.write(&draft, offset, data)?;
            return Ok(Written::Taken);
        }
        let who = self.who.who(uid, tid);
        let staged = self.handles.with(fh, |handle| match handle {
            Handle::Stage(channel) => {
                let _entered = self.runtime.enter();
                let took = channel.write(
                    &self.session,
                    &self.journal,
                    &who,
                    data,
                    self.control.refusal(),
                );
                // The id of a preview this write staged, for a policy to
                // judge; most writes stage nothing, or have no policy.
                let judged = match (&took, &self.policy) {
                    (Ok(StageWrite::Staged), Some(_)) => channel.staged_id().map(str::to_string),
                    _ => None,
                };
                Some(took.map(|took| (took, judged)))
            }
            _ => None,
        });
        match staged.flatten() {
            Some(Ok((took, judged))) => {
                // Judged here, out of the handles' lock, before the reply.
                if let (Some(id), Some(policy)) = (judged, &self.policy) {
                    policy.judge_staged(&id);
                }
                Ok(Written::Staged(took))
            }
            Some(Err(error)) => {
                let errno = errno_of(&error);
                self.note_stage_refusal(error);
                Err(Refusal {
                    errno,
                    why: "stage refused the line (the reason is in last)",
                })
            }
            None => Err(refuse!(EBADF, "not a writable descriptor of this mount")),
        }
    }

    /// A line refused on `stage` is the mount's latest result, as a
    /// device's refusal is: `last` and the status files say why (a
    /// producer reading its own descriptor before anything is staged reads
    /// it there too). It stages and decides nothing, so the journal, which
    /// records stagings and decisions, has no record of it.
    fn note_stage_refusal(&self, error: Error) {
        let refused = Decision::failed(error, None, None);
        self.last
            .record(DeviceResult::new(STAGE_FILE.to_string(), &refused));
    }
}
