//! Where a write goes: a device-like file's descriptor turns its writes
//! into one message (see [`super::message`]), a draft takes bytes at any
//! offset, and `stage` takes a producer's lines. Any other descriptor is
//! `EBADF`.

use fuser::{Errno, FileHandle};

use super::message::WriteStep;
use super::target::Target;
use super::{errno_of, Handle, Shared};

/// What a write that is not refused at once leads to.
pub(super) enum Written {
    /// A write on a device-like file: what it does with `target`'s message.
    Message(Target, WriteStep),
    /// The bytes were taken (a draft): all of them are written.
    Taken,
    /// A producer's line was taken on `stage`: all of it is written, once
    /// the journal records it made (staging, withdrawing), if any, are on
    /// disk. A line that made none (an apply's answer) waits for nothing.
    Staged { recorded: bool },
}

impl Shared {
    /// Decides a write of `data` at `offset` through `fh` by thread `tid`
    /// of `uid`.
    pub(super) fn write(
        &self,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        uid: u32,
        tid: u32,
    ) -> Result<Written, Errno> {
        if let Some((target, step)) = self.handles.write(fh, offset, data) {
            return Ok(Written::Message(target, step));
        }
        if let Some(draft) = self.handles.draft(fh) {
            self.drafts.write(&draft, offset, data)?;
            return Ok(Written::Taken);
        }
        let who = self.who.who(uid, tid);
        // Records of others made meanwhile count too: the line then waits
        // for a sync it did not need, never the other way round.
        let records_before = self.journal.len();
        let staged = self.handles.with(fh, |handle| match handle {
            Handle::Stage(channel) => {
                let _entered = self.runtime.enter();
                Some(channel.write(
                    &self.session,
                    &self.journal,
                    &who,
                    data,
                    self.control.refusal(),
                ))
            }
            _ => None,
        });
        match staged.flatten() {
            Some(Ok(())) => Ok(Written::Staged {
                recorded: self.journal.len() != records_before,
            }),
            Some(Err(error)) => Err(errno_of(&error)),
            None => Err(Errno::EBADF),
        }
    }
}
