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
/// once.
pub fn wait_for_mount(
    dir: &Path,
    daemon: Option<i32>,
    timeout: Duration,
) -> Result<(), ClientError> {
    let started = Instant::now();
    loop {
        if matches!(probe_mount_point(dir), MountPointState::Xdev)
            && daemon.is_none_or(|pid| served_by(dir) == Some(pid))
        {
            return Ok(());
        }
        if let Some(pid) = daemon.filter(|pid| !is_running(*pid)) {
            return Err(ClientError::DaemonExited {
                pid,
                dir: dir.display().to_string(),
            });
        }
        if started.elapsed() >= timeout {
            return Err(ClientError::NotMountedInTime {
                dir: dir.display().to_string(),
                waited: timeout,
            });
        }
        std::thread::sleep(LOOK_EVERY);
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
    fn without_a_daemon_the_timeout_ends_the_wait() {
        let dir = tempfile::tempdir().expect("temp dir");
        let waited = wait_for_mount(dir.path(), None, Duration::ZERO);
        assert!(
            matches!(waited, Err(ClientError::NotMountedInTime { .. })),
            "{waited:?}"
        );
    }
}
