//! The `stage` file: an external producer's conversation, as lines of JSON
//! (the protocol is described in [`crate::producer`]).

use crate::error::Error;
use crate::fs::message::{is_full_chunk, MAX_MESSAGE};
use crate::journal::{Journal, Who};
use crate::producer::{Producer, ProducerReport, StageRequest};
use crate::session::Session;

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
    /// Takes one write. Each complete line (or a write that ends without a
    /// newline and is not a full chunk) is a request: the first stages the
    /// preview, later ones report results.
    pub(crate) fn write(
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
        while let Some(end) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.take_line(session, journal, who, line)?;
        }
        if !self.partial.is_empty() && !is_full_chunk(data) {
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
                let request = StageRequest::parse(&line).inspect_err(|error| {
                    self.refusal = format!("{error}\n").into_bytes();
                })?;
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
