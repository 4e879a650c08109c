//! Turning the writes on one open device descriptor into one message
//! (SPEC section 4). Pure logic: no FUSE, no session.

use crate::error::Error;

/// The largest message a device accepts.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The chunk size shells and stdio split long output into.
const CHUNK: usize = 4096;

/// What a write on a device descriptor leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteStep {
    /// A full chunk: accepted, the message continues with the next write.
    Hold,
    /// The message is complete: dispatch this (untrimmed) text.
    Dispatch(String),
    /// Refused with this error; nothing is dispatched.
    Refuse(Error),
}

/// A write that a shell or stdio would follow with more of the same
/// message: a multiple of 4096 bytes not ending in a newline.
pub(crate) fn is_full_chunk(data: &[u8]) -> bool {
    !data.is_empty() && data.len() % CHUNK == 0 && data.last() != Some(&b'\n')
}

/// The message being written on one descriptor, and whether it has been
/// dispatched already (one message per open).
#[derive(Debug, Default)]
pub(crate) struct Message {
    buffer: Vec<u8>,
    finished: bool,
}

impl Message {
    /// Takes one `write(2)`'s bytes.
    pub(crate) fn write(&mut self, data: &[u8]) -> WriteStep {
        if self.finished {
            return WriteStep::Refuse(Error::AlreadyDispatched);
        }
        if self.buffer.len() + data.len() > MAX_MESSAGE {
            self.finish();
            return WriteStep::Refuse(Error::MessageTooLong { limit: MAX_MESSAGE });
        }
        self.buffer.extend_from_slice(data);
        if is_full_chunk(data) {
            return WriteStep::Hold;
        }
        self.complete()
    }

    /// The descriptor is being released: a message still held is
    /// dispatched now; nothing written means nothing to dispatch.
    pub(crate) fn release(&mut self) -> Option<WriteStep> {
        if self.finished || self.buffer.is_empty() {
            return None;
        }
        Some(self.complete())
    }

    fn complete(&mut self) -> WriteStep {
        let bytes = std::mem::take(&mut self.buffer);
        self.finish();
        match String::from_utf8(bytes) {
            Ok(text) => WriteStep::Dispatch(text),
            Err(_) => WriteStep::Refuse(Error::NotUtf8),
        }
    }

    fn finish(&mut self) {
        self.finished = true;
        self.buffer = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_write_dispatches_at_once() {
        let mut message = Message::default();
        assert_eq!(message.write(b"ok\n"), WriteStep::Dispatch("ok\n".into()));
        assert_eq!(message.release(), None);
    }

    #[test]
    fn full_chunks_are_held_until_the_write_that_completes_them() {
        let mut message = Message::default();
        let chunk = vec![b'a'; 8192];
        assert_eq!(message.write(&chunk), WriteStep::Hold);
        assert_eq!(message.write(&chunk), WriteStep::Hold);
        let WriteStep::Dispatch(text) = message.write(b"end\n") else {
            panic!("third write should complete the message");
        };
        assert_eq!(text.len(), 16384 + 4);
    }

    #[test]
    fn a_chunk_ending_in_newline_completes() {
        let mut message = Message::default();
        let mut chunk = vec![b'a'; 4095];
        chunk.push(b'\n');
        assert!(matches!(message.write(&chunk), WriteStep::Dispatch(_)));
    }

    #[test]
    fn a_held_message_is_dispatched_on_release() {
        let mut message = Message::default();
        assert_eq!(message.write(&[b'x'; 4096]), WriteStep::Hold);
        assert!(matches!(message.release(), Some(WriteStep::Dispatch(text)) if text.len() == 4096));
        assert_eq!(message.release(), None);
    }

    #[test]
    fn a_second_message_is_refused() {
        let mut message = Message::default();
        assert!(matches!(message.write(b"one"), WriteStep::Dispatch(_)));
        assert_eq!(
            message.write(b"two"),
            WriteStep::Refuse(Error::AlreadyDispatched)
        );
    }

    #[test]
    fn exactly_64_kib_is_accepted_and_one_more_byte_refused() {
        let mut message = Message::default();
        let mut body = vec![b'a'; MAX_MESSAGE - 1];
        body.push(b'\n');
        assert!(matches!(message.write(&body), WriteStep::Dispatch(_)));

        let mut message = Message::default();
        let over = vec![b'a'; MAX_MESSAGE + 1];
        assert_eq!(
            message.write(&over),
            WriteStep::Refuse(Error::MessageTooLong { limit: MAX_MESSAGE })
        );
        assert_eq!(
            message.release(),
            None,
            "an oversized message dispatches nothing"
        );
    }

    #[test]
    fn chunks_adding_up_past_the_limit_are_refused() {
        let mut message = Message::default();
        for _ in 0..16 {
            assert_eq!(message.write(&[b'a'; 4096]), WriteStep::Hold);
        }
        assert!(matches!(
            message.write(b"b"),
            WriteStep::Refuse(Error::MessageTooLong { .. })
        ));
        assert_eq!(message.release(), None);
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
