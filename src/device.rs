//! The three device files and the rules every message to them obeys,
//! whether it comes as a write or as a draft renamed onto a device: at most
//! [`MAX_MESSAGE`] bytes of UTF-8.

use serde::Serialize;

use crate::error::Error;
use crate::texts;

/// The three device files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// Apply the head preview.
    Resolve,
    /// Discard the head preview.
    Reject,
    /// Submit a plan for approval.
    Propose,
}

impl Device {
    /// The device's file name.
    pub fn name(self) -> &'static str {
        match self {
            Device::Resolve => "resolve",
            Device::Reject => "reject",
            Device::Propose => "propose",
        }
    }

    /// The usage line read from the device before writing.
    pub fn usage(self, dir: &str) -> String {
        match self {
            Device::Resolve => texts::resolve_usage(dir),
            Device::Reject => texts::reject_usage(dir),
            Device::Propose => texts::propose_usage(dir),
        }
    }
}

/// The largest message a device accepts.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The text of a message of these bytes (untrimmed), or why there is
/// none: over [`MAX_MESSAGE`] or not UTF-8. A write and a draft's
/// delivery obey the same rules.
pub fn message_text(data: &[u8]) -> Result<String, Error> {
    if data.len() > MAX_MESSAGE {
        return Err(Error::MessageTooLong { limit: MAX_MESSAGE });
    }
    if data.contains(&0) {
        return Err(Error::NulInMessage);
    }
    std::str::from_utf8(data)
        .map(str::to_string)
        .map_err(|_| Error::NotUtf8)
}
