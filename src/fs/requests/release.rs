//! What a release (the last close of a descriptor) does: the descriptor
//! goes, with its poller; the bytes written on a device descriptor after
//! its message, which nothing dispatched, are noted in the journal. A
//! stage descriptor dropped here withdraws its preview.

use fuser::FileHandle;

use crate::fs::handles::table::Handle;
use crate::fs::state::XdevFs;
use crate::journal::Record;

impl XdevFs {
    /// Closes descriptor `fh`, and returns what it held.
    pub(crate) fn release(&self, fh: FileHandle) -> Option<Handle> {
        let handle = self.handles.remove(fh);
        self.pollers.forget(fh);
        handle
    }

    /// Notes in the journal the bytes written on a closed device descriptor
    /// after its message, which nothing dispatched: no message is ever
    /// dispatched where nobody would be told its outcome. (A stage handle
    /// dropped here withdraws its preview.)
    pub(crate) fn note_released(&self, handle: Option<Handle>) {
        if let Some(Handle::Target {
            target,
            message,
            decided,
            writer,
            ..
        }) = handle
        {
            if message.ignored() > 0 {
                let decided = decided.unwrap_or_default();
                let note = Record::ignored(
                    &target.name(),
                    decided.id.as_deref().map(str::to_string),
                    (decided.label, decided.source_tool),
                    message.ignored(),
                    writer,
                );
                // A note the file cannot take is counted as lost there.
                drop(self.journal.append(&note));
            }
        }
    }
}
