//! The `stage` file: an external producer's conversation, as lines of JSON
//! (the protocol is described in [`crate::producer`]).

use super::message::is_full_chunk;
use crate::device::MAX_MESSAGE;
use crate::error::Error;
use crate::journal::Journal;
use crate::producer::Producer;
use crate::session::Session;
use crate::stage_protocol::{ProducerReport, StageRequest, StagerAgent};
use crate::texts::{self, STAGE_SEVERAL_LINES};
use crate::who::{agent_of_stager, no_agent_of_its_own, Who};

/// What a write on `stage` that was taken did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StageWrite {
    /// It staged the producer's preview: the journal has just been given
    /// its `staged` record.
    Staged,
    /// It recorded nothing: a result report (whose decision records its
    /// own outcome), part of a line, or a blank line.
    Unrecorded,
}

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
    ) -> Result<StageWrite, Error> {
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
    ) -> Result<StageWrite, Error> {
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
            return self.take_line(session, journal, who, line);
        }
        Ok(StageWrite::Unrecorded)
    }

    fn take_line(
        &mut self,
        session: &Session,
        journal: &Journal,
        who: &Who,
        line: Vec<u8>,
    ) -> Result<StageWrite, Error> {
        let line = String::from_utf8(line).map_err(|_| Error::NotUtf8)?;
        if line.trim().is_empty() {
            return Ok(StageWrite::Unrecorded);
        }
        match &self.producer {
            Some(producer) => producer
                .report(ProducerReport::parse(&line)?)
                .map(|()| StageWrite::Unrecorded),
            None => {
                let request = StageRequest::parse(&line)?;
                let agent = request.agent.and_then(|StagerAgent::Parent| {
                    // Found from the stager's pid as the kernel reported
                    // it: never a pid the stager names.
                    agent_of_stager(who.pid)
                });
                if let Some(problem) = agent.as_ref().and_then(no_agent_of_its_own) {
                    return Err(Error::InvalidRequest(texts::bad_stage_request(problem)));
                }
                let producer = Producer::stage_for_agent(session, &request, agent, |id| {
                    journal.expect_stager(id, who.clone())
                });
                self.producer = Some(producer);
                Ok(StageWrite::Staged)
            }
        }
    }

    /// The id of the preview this descriptor staged, once it has.
    pub(crate) fn staged_id(&self) -> Option<&str> {
        self.producer.as_ref().map(Producer::id)
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
    use crate::device::Device;
    use crate::dispatch::dispatch_resolution_device;

    /// A producer's conversation: the request, then a result report for the
    /// apply it is asked for. Only the request records anything, so only
    /// its write waits for the journal's sync: a report never waits for
    /// records others made meanwhile.
    #[tokio::test]
    async fn only_the_line_that_stages_makes_a_record_to_wait_for() {
        let session = Session::new();
        let journal = Journal::new(None).expect("a journal without a file");
        journal.follow(&session);
        let who = Who::current();
        let mut channel = StageChannel::default();
        let write = |channel: &mut StageChannel, line: &[u8]| {
            channel
                .write(&session, &journal, &who, line, None)
                .map_err(|error| error.to_string())
        };

        assert_eq!(
            write(&mut channel, b"\n"),
            Ok(StageWrite::Unrecorded),
            "a blank line"
        );
        assert_eq!(
            write(&mut channel, b"{\"label\": \"edit\"}\n"),
            Ok(StageWrite::Staged)
        );
        assert_eq!(journal.len(), 1, "the staged record");

        let deciding = tokio::spawn({
            let session = session.clone();
            async move { dispatch_resolution_device(&session, Device::Resolve, "go").await }
        });
        // The `staged` message first, then the apply.
        let mut messages = String::new();
        while !messages.contains("\"apply\"") {
            let more = channel.read(4096).expect("staged").await;
            messages.push_str(&String::from_utf8(more).expect("UTF-8"));
        }
        assert_eq!(
            write(&mut channel, b"{\"ok\": true, \"text\": \"applied\"}\n"),
            Ok(StageWrite::Unrecorded),
            "a result report records nothing itself"
        );
        let decision = deciding.await.expect("the decision ends");
        assert!(decision.is_ok(), "{}", decision.text());
        assert_eq!(decision.text(), "applied");
    }

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
