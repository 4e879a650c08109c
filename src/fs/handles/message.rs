//! Turning the writes on one open device descriptor into one message: the
//! first write is the message and its call returns the outcome; later
//! writes on the same descriptor dispatch nothing and get the same outcome
//! again, so a writer that splits its output, or retries a failed flush,
//! can never apply a preview while reporting failure. Pure logic: no FUSE,
//! no session.

use crate::device::message_text;
use crate::error::Error;

/// The chunk size shells and stdio split long output into (the `stage`
/// file's lines still arrive so).
const CHUNK: usize = 4096;

/// What a write on a device descriptor leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteStep {
    /// The first write is the message: dispatch this (untrimmed) text.
    Dispatch(String),
    /// The first write, refused with this error: nothing is dispatched.
    Refuse(Error),
    /// A later write: nothing is dispatched, and it gets the first write's
    /// outcome (its bytes are counted as ignored).
    Repeat,
}

/// A write that a shell or stdio would follow with more of the same
/// line: a multiple of 4096 bytes not ending in a newline.
pub(crate) fn is_full_chunk(data: &[u8]) -> bool {
    !data.is_empty() && data.len() % CHUNK == 0 && data.last() != Some(&b'\n')
}

/// The one message of a device descriptor: its first write. Nothing is
/// ever held for a later write or for the release, where nobody would be
/// told the outcome.
#[derive(Debug, Default)]
pub(crate) struct Message {
    sent: bool,
    /// The bytes of the first write.
    length: usize,
    /// The bytes of later writes, which dispatch nothing.
    ignored: usize,
}

impl Message {
    /// Takes one `write(2)`'s bytes.
    pub(crate) fn write(&mut self, data: &[u8]) -> WriteStep {
        if self.sent {
            self.ignored += data.len();
            return WriteStep::Repeat;
        }
        self.sent = true;
        self.length = data.len();
        match message_text(data) {
            Ok(text) => WriteStep::Dispatch(text),
            Err(error) => WriteStep::Refuse(error),
        }
    }

    /// How many bytes later writes brought, all ignored.
    pub(crate) fn ignored(&self) -> usize {
        self.ignored
    }

    /// How many bytes were written on the descriptor in all.
    pub(crate) fn written(&self) -> usize {
        self.length + self.ignored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MAX_MESSAGE;

    #[test]
    fn the_first_write_is_the_message_whatever_its_size() {
        for size in [1, 4096, 8192, MAX_MESSAGE] {
            let mut message = Message::default();
            let body = vec![b'a'; size];
            assert!(
                matches!(message.write(&body), WriteStep::Dispatch(text) if text.len() == size),
                "{size} bytes"
            );
        }
    }

    #[test]
    fn later_writes_repeat_and_are_counted_as_ignored() {
        let mut message = Message::default();
        assert_eq!(message.write(b"one\n"), WriteStep::Dispatch("one\n".into()));
        assert_eq!(message.write(b"two\n"), WriteStep::Repeat);
        assert_eq!(message.write(b"x"), WriteStep::Repeat);
        assert_eq!(message.ignored(), 5);
        assert_eq!(message.written(), 9);
    }

    #[test]
    fn one_byte_over_64_kib_is_refused_and_later_writes_repeat_that() {
        let mut message = Message::default();
        let over = vec![b'a'; MAX_MESSAGE + 1];
        assert_eq!(
            message.write(&over),
            WriteStep::Refuse(Error::MessageTooLong { limit: MAX_MESSAGE })
        );
        assert_eq!(message.write(b"more"), WriteStep::Repeat);
    }

    #[test]
    fn non_utf8_is_refused() {
        let mut message = Message::default();
        assert_eq!(
            message.write(&[0xff, 0xfe]),
            WriteStep::Refuse(Error::NotUtf8)
        );
    }
}
