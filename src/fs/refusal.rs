//! How a decision says no: a [`Refusal`] carries the errno the caller gets
//! and the rule that fired, so that the adapter can log why (at debug, in
//! one place) before it replies with the errno. The reason is a short
//! static text: building a refusal costs no allocation and no formatting.
//!
//! A domain error (a handler's failure, a message broken) is not a
//! refusal: it is an outcome, recorded in the journal and the status files;
//! [`errno_of`] turns it into the errno of the reply.

use fuser::Errno;

use crate::error::Error;

/// A request refused by a decision: the errno it is answered with, and the
/// rule that refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The errno the caller gets.
    pub(crate) errno: Errno,
    /// The rule that fired, in a few words.
    pub(crate) why: &'static str,
}

/// `refuse!(EPERM, "only drafts are renamed")`: a [`Refusal`] with that
/// errno (a constant of [`fuser::Errno`]) and that rule.
macro_rules! refuse {
    ($errno:ident, $why:expr) => {
        $crate::fs::refusal::Refusal {
            errno: ::fuser::Errno::$errno,
            why: $why,
        }
    };
}
pub(crate) use refuse;

/// Turns a domain error into the errno of the reply.
pub(crate) fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}
