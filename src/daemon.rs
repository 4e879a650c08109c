//! The daemon side of the `xdev` command: `xdev mount` ([`serve`]) mounts
//! a fresh session and serves it until SIGHUP, SIGINT, SIGQUIT or SIGTERM;
//! `xdev run` ([`run`]) serves one for the life of a command. [`start`] is
//! the mount both make, for embedding.
//!
//! No signal a terminal, a supervisor or logrotate sends kills either of
//! them outright, which would leave a stale mount behind: see
//! [`SIGNALS`]. Under a service manager, `xdev mount` reports `READY=1`
//! and `STOPPING=1` to it ([`notify`]).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, SignalKind};

use crate::client::{exit_code_of, ClientError, MOUNT_ENV};
use crate::mount::{mount, Mount, MountOptions};
use crate::plan_desk::{PlanDesk, PlanHandlerKind};
use crate::safe_text::one_line;
use crate::session::Session;
use crate::texts;

pub mod notify;
pub mod policy;

pub use policy::{PolicyMode, PolicyOptions, PolicyState};

/// Plan review for a daemon's mount.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Where `<slug>-plan.md` files are looked up.
    pub plan_dir: PathBuf,
    /// How proposals are decided.
    pub handler: PlanHandlerKind,
    /// Who implements a `yolo` approval (default: the current agent).
    pub execute_with: Option<String>,
    /// Start in plan mode.
    pub plan_mode: bool,
}

/// How the daemon (or `xdev run`) mounts: the mount's own options and the
/// plan review it sets up. The CLI builds one from the flags of `xdev
/// mount` and `xdev run`; [`start`] hands `mount` on to the mount.
#[derive(Debug, Clone, Default)]
pub struct DaemonOptions {
    /// How the mount is set up. Its `plan` is not read: [`start`] makes the
    /// session, so it also makes the plan desk (from [`DaemonOptions::plan`])
    /// and puts that desk there.
    pub mount: MountOptions,
    /// Plan review, when a plan directory is given.
    pub plan: Option<PlanOptions>,
    /// The policy that decides previews as they are staged, when given
    /// (see [`policy`]).
    pub policy: Option<PolicyOptions>,
}

/// A mount made by [`start`], with its session and plan desk.
#[derive(Debug)]
pub struct Daemon {
    /// The session the mount serves.
    pub session: Session,
    /// The plan desk, when mounted with one.
    pub desk: Option<PlanDesk>,
    /// The mount (unmounted when dropped).
    pub mount: Mount,
    /// The policy, when mounted with one: its rules and what their last
    /// load said.
    pub policy: Option<Arc<PolicyState>>,
    /// Judges the previews by the policy until dropped.
    _decider: Option<policy::PolicyDecider>,
}

/// Mounts a fresh session at `dir` with `options` and waits until the mount
/// answers.
pub fn start(dir: &Path, options: &DaemonOptions) -> Result<Daemon, ClientError> {
    if options.mount.plan.is_some() {
        tracing::warn!("DaemonOptions::mount.plan is not read: the daemon makes its own plan desk from DaemonOptions::plan");
    }
    // A rules file that cannot be used stops the daemon before it mounts.
    let policy = options.policy.as_ref().map(PolicyState::load).transpose()?;
    let session = Session::new();
    // Subscribed before the mount exists: no preview staged through it is
    // missed.
    let events = policy.as_ref().map(|_| session.subscribe());
    let desk = match &options.plan {
        Some(plan) => {
            let plan_dir = std::path::absolute(&plan.plan_dir)
                .map_err(|err| ClientError::io(texts::cannot_use_plan_dir(&plan.plan_dir), err))?;
            if !plan_dir.is_dir() {
                return Err(ClientError::PlanDir {
                    path: plan.plan_dir.display().to_string(),
                    missing: !plan_dir.exists(),
                });
            }
            let desk = PlanDesk::new(
                session.clone(),
                plan_dir,
                plan.handler,
                plan.execute_with.clone(),
            );
            if plan.plan_mode {
                desk.enter();
            }
            Some(desk)
        }
        None => None,
    };
    let mount_options = MountOptions {
        plan: desk.clone(),
        policy: policy
            .clone()
            .map(|state| state as Arc<dyn crate::mount::PolicyControl>),
        ..options.mount.clone()
    };
    let mount = mount(&session, dir, mount_options)?;
    // The mount answers once a lookup through it does.
    std::fs::metadata(dir.join("status"))
        .map_err(|err| ClientError::io(texts::mount_does_not_answer(dir), err))?;
    let decider = match (&policy, events) {
        (Some(state), Some(events)) => Some(policy::PolicyDecider::start(
            session.clone(),
            mount.journal().clone(),
            Arc::clone(state),
            events,
        )?),
        _ => None,
    };
    Ok(Daemon {
        session,
        desk,
        mount,
        policy,
        _decider: decider,
    })
}

/// The instance whose mount is the conventional `/xdev`
/// (`systemctl start xdev@xdev`).
pub const DEFAULT_INSTANCE: &str = "xdev";

/// Where every other instance is mounted, one directory per instance.
pub const INSTANCE_DIR: &str = "/run/xdev";

/// The longest instance name, in bytes.
const MAX_INSTANCE: usize = 64;

/// The mount point of the instance `name`, what `xdev mount --instance
/// NAME` (and so the unit `xdev@NAME`) serves: [`DEFAULT_INSTANCE`] is
/// `/xdev`, any other name `/run/xdev/NAME`.
///
/// A name is 1 to 64 characters of `A-Z a-z 0-9 _ . : -`, not starting
/// with a dot: it becomes one directory under `/run/xdev`, so `/`, `..`
/// and hidden names are refused, and so is the `\` of a systemd-escaped
/// name (`%i` of `xdev@a\x2db`), which would make an unexpected path.
pub fn instance_mount_point(name: &str) -> Result<PathBuf, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
    if name.is_empty() || name.len() > MAX_INSTANCE {
        return Err(texts::instance_name_length(MAX_INSTANCE));
    }
    if name.starts_with('.') || !name.chars().all(allowed) {
        return Err(texts::not_an_instance_name(name));
    }
    if name == DEFAULT_INSTANCE {
        return Ok(PathBuf::from(crate::session::DEFAULT_MOUNT_DIR));
    }
    Ok(Path::new(INSTANCE_DIR).join(name))
}

fn signal_runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| ClientError::io(texts::CANNOT_START, err))
}

/// What `xdev mount` and `xdev run` do when a signal comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalReaction {
    /// Stop gracefully: decisions under way get the grace period, the mount
    /// is removed (with the directory, if xdev created it), exit 0. `xdev
    /// run` passes SIGTERM and SIGHUP on to its command instead and stops
    /// when the command ends.
    Stop,
    /// Close the `--journal` file and open it again by its path (after
    /// logrotate renamed it away).
    ReopenJournal,
    /// Nothing: caught only so that it cannot kill the daemon.
    Ignore,
}

/// The signals the daemon handles, and how: every signal whose default
/// action ends the process, but those that report a fault of the process
/// itself (SIGSEGV, SIGBUS, SIGABRT, ...) and the real-time ones (which
/// nothing sends a daemon unasked). Caught, none can kill the daemon and
/// leave a stale mount. A signal xdev has no use for stops it like SIGTERM,
/// except those that come with a failed write (SIGPIPE, SIGXFSZ: the write
/// reports its error anyway) and the interval timers' (a library may arm
/// one), which are ignored. (Caught, not set to `SIG_IGN`, because an
/// ignored disposition would be inherited by `xdev run`'s command.)
pub const SIGNALS: [(SignalKind, SignalReaction); 14] = [
    (SignalKind::hangup(), SignalReaction::Stop),
    (SignalKind::interrupt(), SignalReaction::Stop),
    (SignalKind::quit(), SignalReaction::Stop),
    (SignalKind::terminate(), SignalReaction::Stop),
    (SignalKind::from_raw(libc::SIGPWR), SignalReaction::Stop),
    (SignalKind::from_raw(libc::SIGXCPU), SignalReaction::Stop),
    (SignalKind::io(), SignalReaction::Stop),
    (SignalKind::user_defined1(), SignalReaction::ReopenJournal),
    (SignalKind::user_defined2(), SignalReaction::Ignore),
    (SignalKind::alarm(), SignalReaction::Ignore),
    (
        SignalKind::from_raw(libc::SIGVTALRM),
        SignalReaction::Ignore,
    ),
    (SignalKind::from_raw(libc::SIGPROF), SignalReaction::Ignore),
    (SignalKind::pipe(), SignalReaction::Ignore),
    (SignalKind::from_raw(libc::SIGXFSZ), SignalReaction::Ignore),
];

/// The stop signals `xdev run` passes on to its command. SIGINT and SIGQUIT
/// are left to it: a terminal sends them (Ctrl-C, Ctrl-\) to the whole
/// foreground process group, so the command has them already.
const FORWARDED: [SignalKind; 2] = [SignalKind::terminate(), SignalKind::hangup()];

/// The handled signals ([`SIGNALS`]), caught from the moment this exists.
struct Signals {
    streams: Vec<(SignalKind, SignalReaction, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Catches every signal of [`SIGNALS`]; needs the runtime that will
    /// wait for them.
    fn catch(runtime: &tokio::runtime::Runtime) -> Result<Signals, ClientError> {
        let _entered = runtime.enter();
        let streams = SIGNALS
            .iter()
            .map(|&(kind, reaction)| Ok((kind, reaction, signal(kind)?)))
            .collect::<io::Result<_>>()
            .map_err(|err| ClientError::io(texts::CANNOT_CATCH_SIGNALS, err))?;
        Ok(Signals { streams })
    }

    /// The next signal that comes, and what to do about it. Cancel-safe
    /// (a signal not taken is taken by the next call).
    async fn next(&mut self) -> (SignalKind, SignalReaction) {
        let waits = self.streams.iter_mut().map(|(kind, reaction, stream)| {
            Box::pin(async move {
                if stream.recv().await.is_none() {
                    // The runtime's signal driver is gone: nothing more can
                    // come from this stream.
                    std::future::pending::<()>().await;
                }
                (*kind, *reaction)
            })
        });
        futures::future::select_all(waits).await.0
    }
}

/// `SIGHUP` for a caught signal (its number if nix does not know it).
fn signal_name(kind: SignalKind) -> String {
    let number = kind.as_raw_value();
    Signal::try_from(number).map_or_else(
        |_| texts::unnamed_signal(number),
        |signal| signal.as_str().to_string(),
    )
}

/// Acts on a signal that does not stop the daemon.
fn on_signal(kind: SignalKind, reaction: SignalReaction, mount: &Mount) {
    let signal = signal_name(kind);
    match reaction {
        SignalReaction::ReopenJournal => match mount.journal().reopen_file() {
            Ok(Some(path)) => {
                tracing::info!(%signal, path = %path.display(), "journal file reopened")
            }
            Ok(None) => tracing::info!(%signal, "no journal file to reopen"),
            // The error names the path; records keep going to the old file,
            // which is still there (only renamed, if rotated).
            Err(error) => {
                tracing::error!(%signal, %error, "cannot reopen the journal file; records still go to the file open before")
            }
        },
        SignalReaction::Stop | SignalReaction::Ignore => {
            tracing::debug!(%signal, "signal ignored");
        }
    }
}

/// `xdev mount`: mounts at `dir`, calls `ready` once the mount answers,
/// serves until a stop signal of [`SIGNALS`] (SIGHUP, SIGINT, SIGQUIT,
/// SIGTERM, ...), then unmounts: new decisions are refused, decisions under way
/// get the grace period, what still waits then is told what is known (see
/// [`MountOptions::grace`](crate::MountOptions::grace)). SIGUSR1
/// reopens the journal file; other signals of the table are ignored.
///
/// When another process unmounts `dir` (`fusermount3 -u`, `umount`, also
/// lazily), the daemon stops the same way (without unmounting anything
/// itself) and fails with [`ClientError::MountRemoved`] (exit code
/// [`EXIT_MOUNT_GONE`](crate::client::EXIT_MOUNT_GONE)), so that a
/// supervisor sees it end instead of serving nothing.
///
/// A service manager that passed `$NOTIFY_SOCKET` is sent `READY=1` right
/// after `ready` (the mount answers by then) and `STOPPING=1` when a stop
/// signal comes, before the grace period.
pub fn serve(dir: &Path, options: &DaemonOptions, ready: impl FnOnce()) -> Result<(), ClientError> {
    // Signals are caught before the mount exists, so a signal sent the
    // moment the ready line appears still unmounts cleanly.
    let runtime = signal_runtime()?;
    let mut signals = Signals::catch(&runtime)?;
    let daemon = start(dir, options)?;
    ready();
    tell_manager(&format!(
        "READY=1\nSTATUS={}",
        texts::serving(&one_line(&dir.display().to_string()))
    ));
    let removed = daemon.mount.removed();
    let stop = runtime.block_on(async {
        tokio::pin!(removed);
        loop {
            let (kind, reaction) = tokio::select! {
                () = &mut removed => {
                    tracing::info!(dir = %dir.display(), "unmounted from outside; stopping");
                    tell_manager(&format!("STOPPING=1\nSTATUS={}", texts::STOPPING_UNMOUNTED));
                    return Stop::Removed;
                }
                caught = signals.next() => caught,
            };
            if reaction != SignalReaction::Stop {
                on_signal(kind, reaction, &daemon.mount);
                continue;
            }
            let signal = signal_name(kind);
            tracing::info!(%signal, "stopping");
            tell_manager(&format!(
                "STOPPING=1\nSTATUS={}",
                texts::stopping_on(&signal)
            ));
            return Stop::Signal;
        }
    });
    let unmounted = daemon
        .mount
        .unmount()
        .map_err(|err| ClientError::io(texts::unmount_failed(dir), err));
    match stop {
        Stop::Signal => unmounted,
        // What became of the mount is the news; an unmount error after it
        // would only hide it.
        Stop::Removed => Err(ClientError::MountRemoved {
            dir: dir.display().to_string(),
        }),
    }
}

/// Why `xdev mount` stops serving.
enum Stop {
    /// A stop signal came.
    Signal,
    /// Another process unmounted the mount.
    Removed,
}

/// Sends `state` to the service manager, if one started the daemon. A
/// manager that cannot be told is no reason to stop serving: systemd
/// notices a missing `READY=1` itself (its start times out), so the failure
/// is only logged.
fn tell_manager(state: &str) {
    if let Err(error) = notify::notify(state) {
        tracing::error!(%error, state, "cannot notify the service manager");
    }
}

/// A mount point for `xdev run`: the directory given (created, and removed
/// afterwards, when missing) or a private temporary one.
enum RunDir {
    Given { dir: PathBuf, created: bool },
    Private(tempfile::TempDir),
}

impl RunDir {
    fn new(dir: Option<&Path>) -> Result<RunDir, ClientError> {
        match dir {
            Some(dir) => {
                let created = !dir.exists();
                if created {
                    std::fs::create_dir_all(dir)
                        .map_err(|err| ClientError::io(texts::cannot_create(dir), err))?;
                }
                Ok(RunDir::Given {
                    dir: dir.to_path_buf(),
                    created,
                })
            }
            None => tempfile::Builder::new()
                .prefix("xdev-run-")
                .tempdir()
                .map(RunDir::Private)
                .map_err(|err| ClientError::io(texts::CANNOT_CREATE_TEMPORARY_MOUNT_POINT, err)),
        }
    }

    fn path(&self) -> &Path {
        match self {
            RunDir::Given { dir, .. } => dir,
            RunDir::Private(tmp) => tmp.path(),
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let RunDir::Given { dir, created: true } = self {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// `xdev run`: mounts at `dir` (or a private temporary directory), runs
/// `command` with `XDEV_DIR` set to the mount, unmounts, and returns the
/// command's exit code (128 + the signal if it was killed). Of the stop
/// signals of [`SIGNALS`], SIGTERM and SIGHUP are passed on to the command
/// and the others left to it (a terminal sends SIGINT and SIGQUIT to the
/// whole process group); either way the mount stays until the command
/// ends. SIGUSR1 reopens the journal file; the other signals are ignored.
pub fn run(
    dir: Option<&Path>,
    options: &DaemonOptions,
    command: &[OsString],
) -> Result<i32, ClientError> {
    let Some(program) = command.first() else {
        return Err(ClientError::Protocol(texts::NO_COMMAND_TO_RUN.into()));
    };
    let runtime = signal_runtime()?;
    let mut signals = Signals::catch(&runtime)?;
    let place = RunDir::new(dir)?;
    let daemon = start(place.path(), options)?;
    let mut child = Command::new(program);
    child.args(&command[1..]).env(MOUNT_ENV, place.path());
    let status = runtime.block_on(async {
        let mut child = tokio::process::Command::from(child)
            .spawn()
            .map_err(|source| ClientError::Spawn {
                program: program.to_string_lossy().into_owned(),
                source,
            })?;
        loop {
            let (kind, reaction) = tokio::select! {
                status = child.wait() => {
                    return status.map_err(|err| ClientError::io(texts::CANNOT_WAIT_FOR_COMMAND, err));
                }
                caught = signals.next() => caught,
            };
            if reaction != SignalReaction::Stop {
                on_signal(kind, reaction, &daemon.mount);
                continue;
            }
            if !FORWARDED.contains(&kind) {
                continue;
            }
            let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
            if let (Ok(signal), Some(pid)) = (Signal::try_from(kind.as_raw_value()), pid) {
                // Our own child, not yet reaped (it has an id): the pid is
                // still its. A child that just exited is no error here.
                let _ = kill(Pid::from_raw(pid), signal);
            }
        }
    });
    let unmounted = daemon.mount.unmount();
    drop(place);
    let status = status?;
    unmounted.map_err(|err| {
        ClientError::io(
            texts::unmount_after_command_failed(exit_code_of(status)),
            err,
        )
    })?;
    Ok(exit_code_of(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_xdev_instance_is_mounted_at_slash_xdev_and_others_under_run_xdev() {
        assert_eq!(instance_mount_point("xdev"), Ok(PathBuf::from("/xdev")));
        assert_eq!(
            instance_mount_point("agent-1"),
            Ok(PathBuf::from("/run/xdev/agent-1"))
        );
        assert_eq!(
            instance_mount_point("ci:job_2.a"),
            Ok(PathBuf::from("/run/xdev/ci:job_2.a"))
        );
        assert_eq!(
            instance_mount_point(&"a".repeat(64)),
            Ok(Path::new("/run/xdev").join("a".repeat(64)))
        );
    }

    #[test]
    fn an_instance_name_is_one_plain_path_component() {
        for name in [
            "", ".", "..", ".hidden", "a/b", "../etc", "a\\x2db", "a b", "a\nb", "é",
        ] {
            let error = instance_mount_point(name).expect_err(name);
            assert!(error.contains("instance name"), "{name:?}: {error}");
        }
        assert!(instance_mount_point(&"a".repeat(65)).is_err());
    }
}
