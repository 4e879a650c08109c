//! Waiting for a mount to answer, for shells and CI jobs that start
//! `xdev mount` in the background: [`wait_for_mount`] returns once the
//! directory is a live xdev mount, and fails at once when the daemon it
//! waits for has exited (a mount that failed), never hanging on a ready line
//! that will not come.

use std::path::Path;
use std::time::{Duration, Instant};

use super::ClientError;
use crate::mount_point::{probe_mount_point, MountPointState};

/// How often the directory and the daemon are looked at.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// Waits until `dir` is a live xdev mount, at most `timeout`. With
/// `daemon`, the process id of the `xdev mount` that should serve it, the
/// mount must be that process's (its `status.json` names its server), not
/// one another daemon already serves there; and once that process has
/// exited (or is a zombie its shell has not reaped yet), the wait fails at
/// once. A wait that fails while another process serves `dir` says so
/// ([`ClientError::ServedByAnother`]), since "not mounted" would be untrue.
pub fn wait_for_mount(
    dir: &Path,
    daemon: Option<i32>,
    timeout: Duration,
) -> Result<(), ClientError> {
    let started = Instant::now();
    loop {
        let mounted = matches!(probe_mount_point(dir), MountPointState::Xdev);
        let server = if mounted { served_by(dir) } else { None };
        if mounted && daemon.is_none_or(|pid| server == Some(pid)) {
            return Ok(());
        }
        let exited = daemon.filter(|pid| !is_running(*pid));
        let timed_out = started.elapsed() >= timeout;
        if exited.is_some() || timed_out {
            return Err(wait_failed(
                dir,
                daemon,
                mounted.then_some(server),
                exited.is_some(),
                timeout,
            ));
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// Why a wait failed: `daemon` (if given) has `exited`, or the `timeout`
/// passed; `server` is `Some` when `dir` is an xdev mount (served by that
/// process, when its `status.json` names one).
fn wait_failed(
    dir: &Path,
    daemon: Option<i32>,
    server: Option<Option<i32>>,
    exited: bool,
    timeout: Duration,
) -> ClientError {
    let shown = dir.display().to_string();
    match (daemon, server) {
        (Some(pid), Some(server)) => ClientError::ServedByAnother {
            dir: shown,
            daemon: pid,
            server,
            exited,
        },
        (Some(pid), None) if exited => ClientError::DaemonExited { pid, dir: shown },
        _ => ClientError::NotMountedInTime {
            dir: shown,
            waited: timeout,
        },
    }
}

/// The process serving the mount at `dir`, as its `status.json` says.
fn served_by(dir: &Path) -> Option<i32> {
    let status = std::fs::read_to_string(dir.join("status.json")).ok()?;
    let status: serde_json::Value = serde_json::from_str(&status).ok()?;
    i32::try_from(status.get("serverPid")?.as_u64()?).ok()
}

/// Whether process `pid` runs: it exists and is not a zombie.
fn is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_that_has_exited_ends_the_wait_at_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id() as i32;
        // Not reaped yet: a zombie counts as exited.
        while is_running(pid) {
            std::thread::sleep(LOOK_EVERY);
        }
        let waited = wait_for_mount(dir.path(), Some(pid), Duration::from_secs(3600));
        assert!(
            matches!(waited, Err(ClientError::DaemonExited { .. })),
            "{waited:?}"
        );
        let _ = child.wait();
        assert!(is_running(std::process::id() as i32));
    }

    #[test]
    fn a_failed_wait_says_who_serves_the_mount() {
        let dir = Path::new("/m");
        let timeout = Duration::from_secs(2);
        let failed = |daemon, server, exited| wait_failed(dir, daemon, server, exited, timeout);
        assert!(matches!(
            failed(Some(7), Some(Some(9)), false),
            ClientError::ServedByAnother {
                daemon: 7,
                server: Some(9),
                exited: false,
                ..
            }
        ));
        assert!(matches!(
            failed(Some(7), Some(None), true),
            ClientError::ServedByAnother {
                server: None,
                exited: true,
                ..
            }
        ));
        assert!(matches!(
            failed(Some(7), None, true),
            ClientError::DaemonExited { pid: 7, .. }
        ));
        assert!(matches!(
            failed(Some(7), None, false),
            ClientError::NotMountedInTime { .. }
        ));
        assert!(matches!(
            failed(None, None, false),
            ClientError::NotMountedInTime { .. }
        ));
        let text = failed(Some(7), Some(Some(9)), false).to_string();
        assert_eq!(
            text,
            "/m is an xdev mount, but served by pid 9, not by pid 7 (which still runs)"
        );
    }

    #[test]
    fn without_a_daemon_the_timeout_ends_the_wait() {
        let dir = tempfile::tempdir().expect("temp dir");
        let waited = wait_for_mount(dir.path(), None, Duration::ZERO);
        assert!(
            matches!(waited, Err(ClientError::NotMountedInTime { .. })),
            "{waited:?}"
        );
    }
}
