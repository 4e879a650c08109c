//! The journal as `log` and `events` serve it: the newest records in
//! memory, at most a fixed number of bytes, addressed by absolute byte
//! offset (since the mount started) and by record number.

use std::collections::VecDeque;

/// How many bytes of records `log` keeps in memory; older ones are only in
/// the `--journal` file, when there is one.
pub const LOG_MEMORY_CAP: usize = 8 << 20;

/// The same with a `--journal` file, which holds every record: memory need
/// only serve `tail -f` and `events` readers, so a daemon that once held
/// thousands of previews goes back to about its fresh size.
pub const LOG_MEMORY_CAP_WITH_FILE: usize = 512 << 10;

/// The kept tail of the journal. Always whole lines: the oldest ones go
/// first, and the newest one stays even when it alone is over the cap.
#[derive(Debug)]
pub(crate) struct Memory {
    bytes: VecDeque<u8>,
    /// The absolute offset of `bytes[0]`.
    base: u64,
    /// The absolute offset at which each kept record starts.
    starts: VecDeque<u64>,
    /// The record number of the oldest kept record.
    first: usize,
    cap: usize,
}

impl Memory {
    pub(crate) fn new(cap: usize) -> Self {
        Memory {
            bytes: VecDeque::new(),
            base: 0,
            starts: VecDeque::new(),
            first: 0,
            cap,
        }
    }

    /// Appends one newline-terminated record, dropping the oldest ones
    /// beyond the cap.
    pub(crate) fn push(&mut self, line: &[u8]) {
        self.starts.push_back(self.end());
        self.bytes.extend(line);
        while self.bytes.len() > self.cap && self.starts.len() > 1 {
            self.starts.pop_front();
            let next = self.starts.front().copied().unwrap_or(self.end());
            self.bytes.drain(..(next - self.base) as usize);
            self.base = next;
            self.first += 1;
        }
    }

    /// How many records were ever pushed.
    pub(crate) fn records(&self) -> usize {
        self.first + self.starts.len()
    }

    /// The absolute size of the journal (what `log`'s size shows).
    pub(crate) fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The kept bytes from absolute `start` to `end`.
    fn copy(&self, start: u64, end: u64) -> Vec<u8> {
        let (from, to) = ((start - self.base) as usize, (end - self.base) as usize);
        let (front, back) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(to - from);
        if from < front.len() {
            out.extend_from_slice(&front[from..to.min(front.len())]);
        }
        if to > front.len() {
            out.extend_from_slice(&back[from.saturating_sub(front.len())..to - front.len()]);
        }
        out
    }

    /// A read of at most `size` bytes at absolute `offset`: the bytes and
    /// where they really start (the oldest kept line, when `offset` is
    /// older than that).
    pub(crate) fn read_at(&self, offset: u64, size: u32) -> (Vec<u8>, u64) {
        let start = offset.clamp(self.base, self.end());
        let end = start.saturating_add(u64::from(size)).min(self.end());
        (self.copy(start, end), start)
    }

    /// The records from `at` on, at most `max` bytes: whole lines where
    /// they fit. When not even the rest of the first line fits, its next
    /// `max` bytes, and the next read goes on inside it: a reader that takes
    /// one byte at a time (a shell's `read`) loses nothing. Records no
    /// longer kept are never skipped silently: in their place comes one
    /// `{"event":"lost","count":N}` line (after a newline, if the reader
    /// was inside one of them). Returns the bytes and where the next read
    /// starts.
    pub(crate) fn lines_from(&self, at: EventsAt, max: usize) -> (Vec<u8>, EventsAt) {
        let at = if at.record < self.first {
            EventsAt {
                record: self.first,
                skip: 0,
                lost: Some(Lost {
                    count: self.first - at.record + at.lost.map_or(0, |lost| lost.count),
                    inside_a_line: at.skip > 0,
                    read: 0,
                }),
            }
        } else {
            at
        };
        if let Some(lost) = at.lost {
            return lost.take(at.record, max);
        }
        let Some(line_start) = self.starts.get(at.record - self.first) else {
            return (Vec::new(), at);
        };
        let start = line_start + at.skip as u64;
        let line_end = |record: usize| {
            self.starts
                .get(record - self.first + 1)
                .copied()
                .unwrap_or(self.end())
        };
        let first_end = line_end(at.record);
        if (first_end - start) as usize > max {
            let part = EventsAt {
                skip: at.skip + max,
                ..at
            };
            return (self.copy(start, start + max as u64), part);
        }
        let (mut end, mut next) = (first_end, at.record + 1);
        while next - self.first < self.starts.len() && (line_end(next) - start) as usize <= max {
            end = line_end(next);
            next += 1;
        }
        (self.copy(start, end), EventsAt::record(next))
    }
}

/// Where a reader of `events` is: a record number, and how many bytes of
/// that record it has read already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventsAt {
    /// The record the next read starts in.
    pub record: usize,
    /// The bytes of it already read.
    pub skip: usize,
    /// Records the reader fell too far behind to get, told before `record`.
    lost: Option<Lost>,
}

impl EventsAt {
    /// The start of record `record`.
    pub fn record(record: usize) -> Self {
        EventsAt {
            record,
            skip: 0,
            lost: None,
        }
    }
}

/// The `lost` line a reader that fell behind gets in place of the records
/// it missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lost {
    count: usize,
    /// The reader had read part of a record now gone: the line starts with
    /// a newline, so the `lost` record stands on a line of its own.
    inside_a_line: bool,
    /// The bytes of the line already read.
    read: usize,
}

impl Lost {
    fn line(&self) -> Vec<u8> {
        let newline = if self.inside_a_line { "\n" } else { "" };
        format!("{newline}{{\"event\":\"lost\",\"count\":{}}}\n", self.count).into_bytes()
    }

    /// At most `max` bytes of the line, and where the reader is then: still
    /// inside it, or at `record`.
    fn take(self, record: usize, max: usize) -> (Vec<u8>, EventsAt) {
        let line = self.line();
        let end = line.len().min(self.read + max);
        let lost = (end < line.len()).then_some(Lost { read: end, ..self });
        let at = EventsAt {
            record,
            skip: 0,
            lost,
        };
        (line[self.read..end].to_vec(), at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Vec<u8> {
        format!("{{\"n\":{n:04}}}\n").into_bytes() // 11 bytes
    }

    #[test]
    fn the_oldest_whole_lines_go_beyond_the_cap_and_offsets_stay_absolute() {
        let mut memory = Memory::new(40);
        for n in 0..10 {
            memory.push(&line(n));
        }
        assert_eq!(memory.records(), 10);
        assert_eq!(
            memory.end(),
            110,
            "log's size counts every byte since mount"
        );
        // 3 lines (33 bytes) fit in 40: records 7, 8, 9 at offsets 77..110.
        let (bytes, start) = memory.read_at(0, 1000);
        assert_eq!(start, 77, "an old offset reads from the oldest kept line");
        assert_eq!(bytes, [line(7), line(8), line(9)].concat());
        assert_eq!(memory.read_at(88, 11), (line(8), 88));
        assert_eq!(memory.read_at(110, 11), (Vec::new(), 110));
        let (lost, at) = memory.lines_from(EventsAt::record(2), 1000);
        assert_eq!(
            (lost, at),
            (
                b"{\"event\":\"lost\",\"count\":5}\n".to_vec(),
                EventsAt::record(7)
            ),
            "records dropped from memory are told, not skipped"
        );
        let (events, next) = memory.lines_from(at, 1000);
        assert_eq!(next, EventsAt::record(10));
        assert_eq!(events, [line(7), line(8), line(9)].concat());
        assert_eq!(
            memory.lines_from(EventsAt::record(8), 15),
            (line(8), EventsAt::record(9)),
            "whole lines where they fit"
        );
        assert_eq!(
            memory.lines_from(EventsAt::record(10), 15),
            (Vec::new(), EventsAt::record(10))
        );
    }

    #[test]
    fn a_line_over_the_cap_alone_is_kept() {
        let mut memory = Memory::new(5);
        memory.push(&line(1));
        memory.push(&line(2));
        assert_eq!(memory.read_at(0, 100), (line(2), 11));
        let (part, at) = memory.lines_from(EventsAt::record(1), 4);
        assert_eq!(
            (part, at),
            (
                line(2)[..4].to_vec(),
                EventsAt {
                    skip: 4,
                    ..EventsAt::record(1)
                }
            )
        );
        assert_eq!(
            memory.lines_from(at, 100),
            (line(2)[4..].to_vec(), EventsAt::record(2)),
            "the next read goes on inside the line"
        );
    }

    #[test]
    fn a_reader_one_byte_at_a_time_inside_a_dropped_line_gets_its_lost_line_whole() {
        let mut memory = Memory::new(1000);
        memory.push(&line(0));
        let (part, at) = memory.lines_from(EventsAt::default(), 3);
        assert_eq!(part, line(0)[..3].to_vec());
        let mut memory = Memory::new(11);
        for n in 0..4 {
            memory.push(&line(n));
        }
        let (mut at, mut read) = (at, Vec::new());
        while at.record < 4 {
            let (byte, next) = memory.lines_from(at, 1);
            read.extend(byte);
            at = next;
        }
        let expected = [b"\n{\"event\":\"lost\",\"count\":3}\n".to_vec(), line(3)].concat();
        assert_eq!(
            String::from_utf8_lossy(&read),
            String::from_utf8_lossy(&expected)
        );
    }

    #[test]
    fn a_reader_one_byte_at_a_time_gets_every_byte() {
        let mut memory = Memory::new(1000);
        for n in 0..3 {
            memory.push(&line(n));
        }
        let (mut at, mut read) = (EventsAt::default(), Vec::new());
        while at.record < 3 {
            let (byte, next) = memory.lines_from(at, 1);
            read.extend(byte);
            at = next;
        }
        assert_eq!(read, [line(0), line(1), line(2)].concat());
    }
}
