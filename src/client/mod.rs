//! The `xdev` command's work as a client of a mount, as a library: finding
//! the mount, writing a device and reading its answer back ([`write_device`]),
//! running a command for a decision ([`run_command`]) and speaking the stage
//! protocol for it ([`stage`]), and following `events` to tell a person
//! that a preview waits ([`watch`]). The daemon side (`xdev mount`, `xdev run`)
//! is [`crate::daemon`]. The binary only parses arguments and prints what
//! these functions return.
//!
//! Every client function takes the mount directory; [`mount_dir`] finds it
//! the way the CLI does (`--mount`, else `$XDEV_DIR`, else `/xdev`).
//!
//! ```no_run
//! use xdev::client::{mount_dir, write_device, ClientError};
//!
//! let dir = mount_dir(None);
//! match write_device(&dir.join("resolve"), b"tests pass") {
//!     Ok(text) => println!("{text}"),
//!     Err(ClientError::Refused { errno, text }) => {
//!         eprintln!("{}: {text}", xdev::error::errno_name(errno))
//!     }
//!     Err(other) => eprintln!("{other}"),
//! }
//! ```

mod command;
mod device;
mod stager;
mod wait;
mod watch;

pub use command::{
    describe_status, exit_code_of, plan_control, run_command, stderr_tail, CommandOutput,
    STDOUT_KEEP, TAIL_BYTES, TAIL_LINES,
};
pub use device::{check_mount, mount_dir, read_text, write_device, ClientError};
pub use stager::{
    is_mount_gone, stage, PreviewRequest, StageNotice, StageOptions, StageOutcome, StagedPreview,
};
pub use wait::wait_for_mount;
pub use watch::{
    watch, WatchEnd, WatchOptions, LABEL_ENV, MAX_QUEUED, SESSION_ENV, TOOL_ENV, WAITED_ENV,
};

/// The environment variable that names the mount (and that `xdev run`
/// exports to its command).
pub const MOUNT_ENV: &str = "XDEV_DIR";
/// The environment variable that holds the preview's id, for the commands
/// `xdev stage` runs.
pub const ID_ENV: &str = "XDEV_ID";
/// The environment variable that holds the decision's reason, for the
/// commands `xdev stage` runs.
pub const REASON_ENV: &str = "XDEV_REASON";

/// Exit code of `xdev stage` when the preview was applied.
pub const EXIT_APPLIED: u8 = 0;
/// Exit code of any command that failed (bad mount, protocol or I/O error,
/// a device that refused the message).
pub const EXIT_ERROR: u8 = 1;
/// Exit code of a command given an argument it refuses before doing
/// anything: an unknown option, a malformed value, a name the mount never
/// lists (`--session ..`).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of `xdev stage` when the preview was discarded.
pub const EXIT_DISCARDED: u8 = 3;
/// Exit code of `xdev stage` when its deadline passed first.
pub const EXIT_DEADLINE: u8 = 4;
/// Exit code of `xdev stage` when the mount went away while it waited for a
/// decision (its command did not run), and of `xdev mount` when another
/// process unmounted its mount.
pub const EXIT_MOUNT_GONE: u8 = 5;
/// Exit code of `xdev policy check` when the rules ask a person (0 is
/// allow): apart from the codes of errors (1), usage (2) and `xdev
/// stage`'s outcomes (3 to 5), so a script tells a decision from a
/// failure.
pub const EXIT_POLICY_ASK: u8 = 10;
/// Exit code of `xdev policy check` when the rules deny the call.
pub const EXIT_POLICY_DENY: u8 = 11;
/// `xdev run`: the command was not found (as shells and `env` say).
pub const EXIT_NOT_FOUND: u8 = 127;
/// `xdev run`: the command was found but could not be run (not
/// executable, no permission).
pub const EXIT_CANNOT_RUN: u8 = 126;
