//! The `stage` file: an external producer's conversation, as lines of JSON
//! (the protocol is described in [`crate::producer`]).

use super::message::is_full_chunk;
use crate::device::MAX_MESSAGE;
use crate::error::Error;
use crate::journal::Journal;
use crate::producer::Producer;
use crate::session::Session;
use crate::stage_protocol::{ProducerReport, StageRequest};
use crate::texts::STAGE_SEVERAL_LINES;
use crate::who::Who;

/// One open `stage` descriptor: the line being written and, once staged,
/// the producer's preview. Closing it withdraws a preview still pending.
#[derive(Debug, Default)]
pub(crate) struct StageChannel {
    partial: Vec<u8>,
    producer: Option<Producer>,
    /// Why the stage request was refused, readable before anything is staged.
    refusal: Vec<u8>,
}

impl StageChannel {
    /// Takes one write. A write carries one line (or part of one, when it
    /// is a full chunk without a newline): before anything is staged it is
    /// the request, afterwards a result report. A write is taken whole or
    /// refused whole: one carrying two lines stages nothing. Before anything
    /// is staged, why a write was refused is readable on the descriptor.
    ///
    /// `stopping` is why the mount takes no new stagings (it is stopping):
    /// a preview staged then could never be decided. A producer already
    /// staged still reports its results, so a decision under way finishes.
    pub(crate) fn write(
        &mut self,
        session: &Session,
        journal: &Journal,
        who: &Who,
        data: &[u8],
        stopping: Option<Error>,
    ) -> Result<(), Error> {
        let taken = match (stopping, &self.producer) {
            (Some(refusal), None) => Err(refusal),
            _ => self.take_write(session, journal, who, data),
        };
        if let (Err(error), None) = (&taken, &self.producer) {
            self.refusal = format!("{error}\n").into_bytes();
        }
        taken
    }

    fn take_write(
        &mut self,
        session: &Session,
        journal: &Journal,
        who: &Who,
        data: &[u8],
    ) -> Result<(), Error> {
        if self.partial.len() + data.len() > MAX_MESSAGE {
            self.partial.clear();
            return Err(Error::MessageTooLong { limit: MAX_MESSAGE });
        }
        self.partial.extend_from_slice(data);
        if has_several_lines(&self.partial) {
            self.partial.clear();
            return Err(Error::InvalidRequest(STAGE_SEVERAL_LINES.into()));
        }
        if self.partial.contains(&b'\n') || !is_full_chunk(data) {
            let line = std::mem::take(&mut self.partial);
            self.take_line(session, journal, who, line)?;
        }
        Ok(())
    }

    fn take_line(
        &mut self,
        session: &Session,
        journal: &Journal,
        who: &Who,
        line: Vec<u8>,
    ) -> Result<(), Error> {
        let line = String::from_utf8(line).map_err(|_| Error::NotUtf8)?;
        if line.trim().is_empty() {
            return Ok(());
        }
        match &self.producer {
            Some(producer) => producer.report(ProducerReport::parse(&line)?),
            None => {
                let request = StageRequest::parse(&line)?;
                let producer = Producer::stage_noting(session, &request, |id| {
                    journal.expect_stager(id, who.clone())
                });
                self.producer = Some(producer);
                Ok(())
            }
        }
    }

    /// The next read's bytes (waiting for the next message), or `None`
    /// before anything is staged.
    pub(crate) fn read(
        &self,
        max: usize,
    ) -> Option<impl std::future::Future<Output = Vec<u8>> + Send + 'static> {
        self.producer.as_ref().map(|producer| producer.read(max))
    }

    /// Completes once a read would not wait (a message is queued, or the
    /// conversation is over); `None` before anything is staged, when reads
    /// never wait.
    pub(crate) fn readable(
        &self,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        self.producer.as_ref().map(Producer::readable)
    }

    /// Before anything is staged, reads return why the last request was
    /// refused (once, at most `max` bytes at a time), then end of file.
    pub(crate) fn take_refusal(&mut self, max: usize) -> Vec<u8> {
        let take = max.min(self.refusal.len());
        self.refusal.drain(..take).collect()
    }
}

/// Whether `bytes` hold more than one line with something on it (blank
/// lines do not count, so `echo`'s newline or a `\r\n` ending is fine).
fn has_several_lines(bytes: &[u8]) -> bool {
    bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .nth(1)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_write_blank_lines_aside() {
        assert!(!has_several_lines(b"{\"label\": \"x\"}\n"));
        assert!(!has_several_lines(b"\n{\"label\": \"x\"}\r\n\n"));
        assert!(!has_several_lines(b"{\"label\": \"x\""));
        assert!(has_several_lines(
            b"{\"label\": \"x\"}\n{\"label\": \"y\"}\n"
        ));
        assert!(has_several_lines(b"{\"label\": \"x\"}\n{\"ok\""));
    }
}
