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

    /// Whole records from record number `from` on (records no longer kept
    /// are skipped), at most `max` bytes but at least one record (which may
    /// be cut); returns them and the next record number.
    pub(crate) fn lines_from(&self, from: usize, max: usize) -> (Vec<u8>, usize) {
        let mut next = from.max(self.first);
        let first_start = match self.starts.get(next - self.first) {
            Some(start) => *start,
            None => return (Vec::new(), next),
        };
        let mut end = first_start;
        while next - self.first < self.starts.len() {
            let line_end = self
                .starts
                .get(next - self.first + 1)
                .copied()
                .unwrap_or(self.end());
            if end > first_start && (line_end - first_start) as usize > max {
                break;
            }
            end = line_end;
            next += 1;
        }
        let mut out = self.copy(first_start, end);
        out.truncate(max);
        (out, next)
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
        let (events, next) = memory.lines_from(2, 1000);
        assert_eq!(next, 10, "records dropped from memory are skipped");
        assert_eq!(events, [line(7), line(8), line(9)].concat());
        assert_eq!(memory.lines_from(8, 15), (line(8), 9), "whole lines only");
        assert_eq!(memory.lines_from(10, 15), (Vec::new(), 10));
    }

    #[test]
    fn a_line_over_the_cap_alone_is_kept() {
        let mut memory = Memory::new(5);
        memory.push(&line(1));
        memory.push(&line(2));
        assert_eq!(memory.read_at(0, 100), (line(2), 11));
        assert_eq!(memory.lines_from(0, 4), (line(2)[..4].to_vec(), 2));
    }
}
