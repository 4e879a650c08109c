//! The daemon side of the `xdev` command: `xdev mount` ([`serve`]) mounts
//! a fresh session and serves it until SIGINT or SIGTERM; `xdev run`
//! ([`run`]) serves one for the life of a command. [`start`] is the mount
//! both make, for embedding.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::client::{exit_code_of, ClientError, MOUNT_ENV};
use crate::mount::{mount, Mount, MountOptions};
use crate::plan_desk::{PlanDesk, PlanHandlerKind};
use crate::session::Session;

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

/// How the daemon (or `xdev run`) mounts.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// Let other users read the status files.
    pub allow_other: bool,
    /// Also append the journal to this file.
    pub journal_file: Option<PathBuf>,
    /// Let other users read `log` and `events` (see
    /// [`MountOptions::share_journal`]).
    pub share_journal: bool,
    /// Plan review, when a plan directory is given.
    pub plan: Option<PlanOptions>,
    /// How long decisions under way may take to finish at shutdown.
    pub grace: Duration,
    /// Create a missing mount point, and remove it when done (see
    /// [`MountOptions::create_dir`]).
    pub create_dir: bool,
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
}

/// Mounts a fresh session at `dir` with `options` and waits until the mount
/// answers.
pub fn start(dir: &Path, options: &DaemonOptions) -> Result<Daemon, ClientError> {
    let session = Session::new();
    let desk = match &options.plan {
        Some(plan) => {
            let plan_dir = std::path::absolute(&plan.plan_dir).map_err(|err| {
                ClientError::io(
                    format!("cannot use plan directory {}", plan.plan_dir.display()),
                    err,
                )
            })?;
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
        allow_other: options.allow_other,
        journal_file: options.journal_file.clone(),
        share_journal: options.share_journal,
        plan: desk.clone(),
        grace: options.grace,
        create_dir: options.create_dir,
        ..MountOptions::default()
    };
    let mount = mount(&session, dir, mount_options)?;
    // The mount answers once a lookup through it does.
    std::fs::metadata(dir.join("status")).map_err(|err| {
        ClientError::io(format!("mount at {} does not answer", dir.display()), err)
    })?;
    Ok(Daemon {
        session,
        desk,
        mount,
    })
}

fn signal_runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| ClientError::io("cannot start", err))
}

/// `xdev mount`: mounts at `dir`, calls `ready` once the mount answers, serves
/// until SIGINT or SIGTERM, then unmounts (blocked writers get
/// `ECANCELED`).
pub fn serve(dir: &Path, options: &DaemonOptions, ready: impl FnOnce()) -> Result<(), ClientError> {
    use tokio::signal::unix::{signal, SignalKind};
    // Signals are caught before the mount exists, so a signal sent the
    // moment the ready line appears still unmounts cleanly.
    let runtime = signal_runtime()?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            Ok::<_, io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|err| ClientError::io("cannot catch signals", err))?;
    let daemon = start(dir, options)?;
    ready();
    runtime.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    daemon
        .mount
        .unmount()
        .map_err(|err| ClientError::io(format!("unmount of {} failed", dir.display()), err))
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
                    std::fs::create_dir_all(dir).map_err(|err| {
                        ClientError::io(format!("cannot create {}", dir.display()), err)
                    })?;
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
                .map_err(|err| ClientError::io("cannot create a temporary mount point", err)),
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
/// command's exit code (128 + the signal if it was killed). SIGTERM and
/// SIGHUP are passed on to the command; SIGINT is left to it (a terminal
/// sends it to the whole process group) and the mount stays until it ends.
pub fn run(
    dir: Option<&Path>,
    options: &DaemonOptions,
    command: &[OsString],
) -> Result<i32, ClientError> {
    use tokio::signal::unix::{signal, SignalKind};
    let Some(program) = command.first() else {
        return Err(ClientError::Protocol("no command to run".into()));
    };
    let runtime = signal_runtime()?;
    let mut signals = runtime
        .block_on(async {
            Ok::<_, io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
                signal(SignalKind::hangup())?,
            ))
        })
        .map_err(|err| ClientError::io("cannot catch signals", err))?;
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
        let (interrupt, terminate, hangup) = &mut signals;
        loop {
            let forward = tokio::select! {
                status = child.wait() => {
                    return status.map_err(|err| ClientError::io("cannot wait for the command", err));
                }
                _ = interrupt.recv() => None,
                _ = terminate.recv() => Some(Signal::SIGTERM),
                _ = hangup.recv() => Some(Signal::SIGHUP),
            };
            let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
            if let (Some(signal), Some(pid)) = (forward, pid) {
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
            format!(
                "unmount after the command (exit {}) failed",
                exit_code_of(status)
            ),
            err,
        )
    })?;
    Ok(exit_code_of(status))
}
