//! Answers that wait until something is ready, cancelled by the asker's
//! signal or the mount closing: a read of `events` (its next record) or
//! `stage` (the producer's next message), a status file rendered for
//! another user, an open of a device inode another writer holds.

use std::sync::Arc;

use fuser::{Errno, FileHandle, FopenFlags, INodeNo};

use crate::fs::refusal::errno_of;
use crate::fs::requests::open::Opened;
use crate::fs::requests::read::Waiting;
use crate::fs::state::XdevFs;

impl XdevFs {
    /// Answers an allowed open of `ino` by thread `tid` with its descriptor
    /// and open flags: at once, or (the kernel's retry met a busy device
    /// again) once no write on it is in flight.
    pub(crate) fn answer_open(
        self: &Arc<Self>,
        tid: u32,
        ino: INodeNo,
        opened: Opened,
        answer: impl FnOnce(Result<(FileHandle, FopenFlags), Errno>) + Send + 'static,
    ) {
        if !opened.when_free {
            return answer(Ok((self.handles.insert(opened.handle), opened.flags)));
        }
        self.answer_waiting(tid, move |fs, cancel| async move {
            tokio::select! {
                held = fs.busy.hold_when_free(ino) => {
                    let mut opened = opened;
                    opened.handle.hold(held);
                    answer(Ok((fs.handles.insert(opened.handle), opened.flags)))
                }
                error = cancel => answer(Err(errno_of(&error))),
            }
        });
    }

    /// Answers a read of at most `size` bytes through `fh` by thread `tid`
    /// of `uid` that has to wait (events, stage, a status file rendered for
    /// another user).
    pub(crate) fn answer_read(
        self: &Arc<Self>,
        (uid, tid): (u32, u32),
        (fh, size): (FileHandle, u32),
        waiting: Waiting,
        answer: impl FnOnce(Result<Vec<u8>, Errno>) + Send + 'static,
    ) {
        self.answer_waiting(tid, move |fs, cancel| async move {
            let bytes = match waiting {
                Waiting::Events(at) => {
                    tokio::select! {
                        () = fs.journal.wait_beyond(at.record) => Ok(fs.take_events(fh, at, size)),
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
                    // runtime, never inline on a request thread.
                    tokio::task::yield_now().await;
                    fs.read_rendered(fh, offset, size, uid).ok_or(Errno::EBADF)
                }
            };
            answer(bytes);
        });
    }
}
