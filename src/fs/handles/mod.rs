//! What each open descriptor holds, and the state it keeps between
//! requests.
//!
//! | module | holds |
//! |---|---|
//! | [`table`] | the table of open descriptors and what each is in the middle of |
//! | [`message`] | a device descriptor's one message: its first write |
//! | [`stage`] | a `stage` descriptor's conversation with a producer |
//! | [`drafts`] | the writers' drafts: small files in memory, bounded per uid |
//! | [`writer_sizes`] | the size a process just delivered to a device, shown to it alone |

pub(crate) mod drafts;
pub(crate) mod message;
pub(crate) mod stage;
pub(crate) mod table;
pub(crate) mod writer_sizes;

/// The part of `bytes` a read at `offset` of at most `size` bytes returns:
/// the rule of every file whose content is held in memory (a draft, a
/// snapshot, a device's result).
pub(crate) fn slice_at(bytes: &[u8], offset: u64, size: u32) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let end = start.saturating_add(size as usize).min(bytes.len());
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_respect_offset_and_size() {
        assert_eq!(slice_at(b"hello", 0, 3), b"hel");
        assert_eq!(slice_at(b"hello", 3, 10), b"lo");
        assert_eq!(slice_at(b"hello", 9, 10), b"");
    }
}
