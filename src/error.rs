//! One error type for every failure a user of xdev can see.
//!
//! Each variant's `Display` is the text the writer reads back (the
//! message the failure carries), and [`Error::errno`] is the errno its
//! `write(2)` fails with: the mount turns an error into a `write(2)` result
//! through this one method and nowhere else.

use thiserror::Error;

/// Everything that can go wrong when finalizing a preview or writing a device.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// `resolve` (device or tool) found nothing pending.
    #[error("{0}")]
    NothingToResolve(String),
    /// `propose` while no plan proposal handler is set.
    #[error("{0}")]
    NotInPlanMode(String),
    /// A plan title that fails the plan-title rules.
    #[error("{0}")]
    InvalidPlanTitle(String),
    /// The named plan file does not exist.
    #[error("{0}")]
    PlanNotFound(String),
    /// An apply or reject callback failed: `Apply failed: <message>` for
    /// an apply's [`CallbackError::Failed`], else the callback's own
    /// message (see [`CallbackError`]).
    #[error("{0}")]
    CallbackFailed(String),
    /// Nobody can tell whether the apply happened: whoever was applying it
    /// went away before reporting (an external producer that died after it
    /// read the apply), or the mount stopped while it ran.
    #[error("{0}")]
    OutcomeUnknown(String),
    /// The apply callback returned an error result; the preview was consumed.
    #[error("{0}")]
    ErrorResult(String),
    /// A malformed request on a protocol file (a stage request, a result
    /// line, a control command).
    #[error("{0}")]
    InvalidRequest(String),
    /// A device body that is not UTF-8.
    #[error("{}", crate::texts::MESSAGE_NOT_UTF8)]
    NotUtf8,
    /// A device body holding a NUL byte: never a reason, but what glibc's
    /// `posix_fallocate` fallback writes.
    #[error("{}", crate::texts::MESSAGE_HOLDS_NUL)]
    NulInMessage,
    /// A device body over the 64 KiB limit.
    #[error("{}", crate::texts::message_too_long(*.limit))]
    MessageTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// The dispatch was raced against an abort signal and lost.
    #[error("{}", crate::texts::aborted(.0))]
    Aborted(String),
    /// The writer got a signal while waiting for the handler.
    #[error("{}", crate::texts::INTERRUPTED)]
    Interrupted,
    /// `propose` while another plan is under review, or a root `resolve`
    /// or `reject` while previews of several agent sessions wait.
    #[error("{0}")]
    Busy(String),
    /// A handler deadline passed.
    #[error("{0}")]
    TimedOut(String),
    /// The caller may not do this.
    #[error("{0}")]
    PermissionDenied(String),
    /// A decision of an agent's call, written by that agent's own process
    /// or one it started (an agent does not decide its own calls): refused,
    /// nothing was decided, and the preview stays pending.
    #[error("{0}")]
    AgentsOwnCall(String),
    /// The journal file could not record a decision before it ran, so it was
    /// refused and nothing was applied or discarded (`ENOSPC` when the disk
    /// is full, else `EIO`).
    #[error("{}", crate::texts::journal_refused(.cause))]
    JournalUnwritable {
        /// The errno of the failed write or sync.
        errno: i32,
        /// What the system said.
        cause: String,
    },
}

impl Error {
    /// A decision refused because the journal could not record it first.
    pub fn journal(error: &std::io::Error) -> Error {
        Error::JournalUnwritable {
            errno: error.raw_os_error().unwrap_or(libc::EIO),
            cause: describe(error),
        }
    }

    /// The errno the mount answers a device `write(2)` with: `ENOENT`
    /// nothing to resolve or no plan file, `EPERM` outside plan mode or for
    /// an agent's own call, `EINVAL` a bad title or body, `EIO` a failed
    /// callback, `EMSGSIZE` over 64 KiB, `ECANCELED` aborted, `EINTR` a
    /// signal, `EBUSY` a plan under review, `ETIMEDOUT` a deadline, `EACCES`
    /// no permission.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NothingToResolve(_) | Error::PlanNotFound(_) => libc::ENOENT,
            Error::NotInPlanMode(_) | Error::AgentsOwnCall(_) => libc::EPERM,
            Error::InvalidPlanTitle(_)
            | Error::InvalidRequest(_)
            | Error::NotUtf8
            | Error::NulInMessage => libc::EINVAL,
            Error::CallbackFailed(_) | Error::ErrorResult(_) | Error::OutcomeUnknown(_) => {
                libc::EIO
            }
            Error::MessageTooLong { .. } => libc::EMSGSIZE,
            Error::Aborted(_) => libc::ECANCELED,
            Error::Interrupted => libc::EINTR,
            Error::Busy(_) => libc::EBUSY,
            Error::TimedOut(_) => libc::ETIMEDOUT,
            Error::PermissionDenied(_) => libc::EACCES,
            Error::JournalUnwritable { errno, .. } if *errno == libc::ENOSPC => libc::ENOSPC,
            Error::JournalUnwritable { .. } => libc::EIO,
        }
    }

    /// The symbolic name of [`Error::errno`], for journals and CLI messages.
    pub fn errno_name(&self) -> String {
        errno_name(self.errno())
    }
}

/// The symbolic name of an errno (`"EIO"`), or `errno N` for a number
/// the system does not know.
pub fn errno_name(errno: i32) -> String {
    match symbol(errno) {
        Some(name) => name.to_string(),
        None => format!("errno {errno}"),
    }
}

/// Matches an errno against the `libc` constants it names.
macro_rules! errno_symbols {
    ($errno:expr; $($name:ident)*) => {
        match $errno {
            $(libc::$name => Some(stringify!($name)),)*
            _ => None,
        }
    };
}

/// The symbol `<errno.h>` gives an errno; of two names for one number (say
/// `EAGAIN` and `EWOULDBLOCK`) the first one. The same table nix has, so the
/// core needs no nix to name an errno.
fn symbol(errno: i32) -> Option<&'static str> {
    errno_symbols!(errno;
        EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES
        EFAULT ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY
        ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK
        ENOSYS ENOTEMPTY ELOOP ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI
        EL2HLT EBADE EBADR EXFULL ENOANO EBADRQC EBADSLT EBFONT ENOSTR ENODATA ETIME ENOSR
        ENONET ENOPKG EREMOTE ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG
        EOVERFLOW ENOTUNIQ EBADFD EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ
        ERESTART ESTRPIPE EUSERS ENOTSOCK EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT
        EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE
        EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN
        ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY
        EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL EISNAM EREMOTEIO EDQUOT ENOMEDIUM
        EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED EKEYREJECTED EOWNERDEAD
        ENOTRECOVERABLE ERFKILL EHWPOISON
    )
}

/// An I/O error as one short phrase: `No such file or directory` rather
/// than `No such file or directory (os error 2)`.
pub(crate) fn describe(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

/// How an apply or reject callback failed. The decision fails with `EIO`
/// and reads back:
///
/// | the callback fails with | from apply | from reject |
/// |---|---|---|
/// | [`CallbackError::Failed`] | `Apply failed: <message>` ([`Error::CallbackFailed`]) | `<message>` ([`Error::CallbackFailed`]) |
/// | [`CallbackError::Tool`] | `<message>` ([`Error::CallbackFailed`]) | `<message>` ([`Error::CallbackFailed`]) |
/// | [`CallbackError::OutcomeUnknown`] | `<message>` ([`Error::OutcomeUnknown`]) | `<message>` ([`Error::OutcomeUnknown`]) |
///
/// After a failed apply the preview is back at the head of the stack; after
/// a failed reject it stays pending where it stood.
///
/// ```
/// use xdev::{apply_fn, reject_fn, CallbackError, Device, Dispatch, Error, Session, StageOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let session = Session::new();
/// let apply = apply_fn(|_reason, _extra| async { Err(CallbackError::Failed("disk full".into())) });
/// let reject = reject_fn(|_reason, _extra| async { Err(CallbackError::Failed("still locked".into())) });
/// session.stage("edit a.rs", "edit", apply, Some(reject), StageOptions::default());
///
/// let applying = Dispatch::device(Device::Resolve, "go").run(&session).await;
/// assert_eq!(applying.result(), Err(&Error::CallbackFailed("Apply failed: disk full".into())));
/// let rejecting = Dispatch::device(Device::Reject, "no").run(&session).await;
/// assert_eq!(rejecting.result(), Err(&Error::CallbackFailed("still locked".into())));
/// assert_eq!(rejecting.errno(), libc::EIO);
/// assert_eq!(session.pending_count(), 1);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CallbackError {
    /// A tool error whose message is shown as is.
    #[error("{0}")]
    Tool(String),
    /// Any other failure (I/O, a crashed command, ...).
    #[error("{0}")]
    Failed(String),
    /// Whoever was applying went away before reporting: it may or may not
    /// have happened. The message is shown as is.
    #[error("{0}")]
    OutcomeUnknown(String),
    /// Nothing was done, nor will be: the decision never reached whoever
    /// carries it out (an external producer that closed its stage file
    /// before it read the apply, a mount that stopped first). The decision
    /// fails with this error as is, and the preview is not requeued: it
    /// stays where it stood, unless the callback withdrew it.
    #[error("{0}")]
    NotDone(Error),
}

impl From<std::io::Error> for CallbackError {
    fn from(err: std::io::Error) -> Self {
        CallbackError::Failed(err.to_string())
    }
}

impl From<String> for CallbackError {
    fn from(message: String) -> Self {
        CallbackError::Failed(message)
    }
}

impl From<&str> for CallbackError {
    fn from(message: &str) -> Self {
        CallbackError::Failed(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_its_documented_errno() {
        let table = [
            (Error::NothingToResolve(String::new()), libc::ENOENT),
            (Error::PlanNotFound(String::new()), libc::ENOENT),
            (Error::NotInPlanMode(String::new()), libc::EPERM),
            (Error::AgentsOwnCall(String::new()), libc::EPERM),
            (Error::InvalidPlanTitle(String::new()), libc::EINVAL),
            (Error::NotUtf8, libc::EINVAL),
            (Error::NulInMessage, libc::EINVAL),
            (Error::InvalidRequest(String::new()), libc::EINVAL),
            (Error::CallbackFailed(String::new()), libc::EIO),
            (Error::ErrorResult(String::new()), libc::EIO),
            (Error::OutcomeUnknown(String::new()), libc::EIO),
            (Error::MessageTooLong { limit: 1 }, libc::EMSGSIZE),
            (Error::Aborted(String::new()), libc::ECANCELED),
            (Error::Interrupted, libc::EINTR),
            (Error::Busy(String::new()), libc::EBUSY),
            (Error::TimedOut(String::new()), libc::ETIMEDOUT),
            (Error::PermissionDenied(String::new()), libc::EACCES),
            (
                Error::JournalUnwritable {
                    errno: libc::ENOSPC,
                    cause: String::new(),
                },
                libc::ENOSPC,
            ),
            (
                Error::JournalUnwritable {
                    errno: libc::EROFS,
                    cause: String::new(),
                },
                libc::EIO,
            ),
        ];
        for (error, errno) in table {
            assert_eq!(error.errno(), errno, "{error:?}");
            assert!(error.errno_name().starts_with('E'), "{error:?}");
        }
    }

    #[test]
    fn errnos_are_named_by_their_symbols() {
        assert_eq!(errno_name(libc::EIO), "EIO");
        assert_eq!(errno_name(libc::ENOTCONN), "ENOTCONN");
        assert_eq!(errno_name(9999), "errno 9999");
        assert_eq!(errno_name(0), "errno 0");
    }

    /// The table names every errno exactly as nix does.
    #[cfg(feature = "mount")]
    #[test]
    fn errno_names_agree_with_nix() {
        for errno in -1..=300 {
            let nix_name = match nix::errno::Errno::from_raw(errno) {
                nix::errno::Errno::UnknownErrno => format!("errno {errno}"),
                known => format!("{known:?}"),
            };
            assert_eq!(errno_name(errno), nix_name, "errno {errno}");
        }
    }

    #[test]
    fn aborted_text_names_the_reason() {
        assert_eq!(
            Error::Aborted("daemon shutdown".into()).to_string(),
            "Aborted: daemon shutdown"
        );
    }
}
