//! Telling the kernel that a decided preview's directory is gone, from a
//! thread of its own.
//!
//! `ls -l pending` lets the kernel cache each listed item's directory for a
//! moment (see `Node::listed_ttl`), so that it needs no lookup per item.
//! Once a preview is decided, its name must go at once: this thread asks the
//! kernel to forget it. To do that the kernel takes `pending/`'s lock, and
//! whoever holds it may be waiting for a request loop to answer a lookup. So
//! no request loop, and nothing a request loop waits on, ever sends such a
//! notification (that is how the mount once deadlocked): only this thread,
//! which answers nothing, and which nothing waits for.

use std::ffi::OsStr;
use std::sync::mpsc::{channel, Receiver, Sender};

use fuser::{INodeNo, Notifier};
use parking_lot::Mutex;

/// The names to forget, and the thread that tells the kernel.
#[derive(Debug, Default)]
pub(crate) struct Forgetter {
    queue: Mutex<Option<Sender<(INodeNo, String)>>>,
}

impl Forgetter {
    /// Starts the thread that sends the notifications through `notifier`.
    pub(crate) fn start(&self, notifier: Notifier) -> std::io::Result<()> {
        let (sender, receiver) = channel();
        std::thread::Builder::new()
            .name("xdev-forget".into())
            .spawn(move || forget_all(&notifier, &receiver))?;
        *self.queue.lock() = Some(sender);
        Ok(())
    }

    /// Has the kernel forget `name` in directory `parent`, soon. Never
    /// waits (it may be called under the session's lock).
    pub(crate) fn forget(&self, parent: INodeNo, name: &str) {
        if let Some(queue) = self.queue.lock().as_ref() {
            // Fails only once the thread is gone, with the mount.
            let _ = queue.send((parent, name.to_string()));
        }
    }

    /// Stops the thread once it has sent what is queued.
    pub(crate) fn stop(&self) {
        self.queue.lock().take();
    }
}

fn forget_all(notifier: &Notifier, receiver: &Receiver<(INodeNo, String)>) {
    while let Ok((parent, name)) = receiver.recv() {
        if let Err(err) = notifier.inval_entry(parent, OsStr::new(&name)) {
            // ENOENT: the kernel had forgotten it already.
            tracing::trace!(%err, name, "name not invalidated");
        }
    }
}
