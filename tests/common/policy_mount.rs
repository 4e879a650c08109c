//! A daemon started with `xdev mount --policy`, its rules file and its
//! journal file in a temp dir of their own: what the policy tests (the
//! daemon's and the CLI's) run against.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{eventually, require_fuse, unmount_leftover, wait_exit, KillOnDrop};

/// Waiting for something that should happen soon, on a loaded machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// The `xdev` binary (built with the `cli` feature, which the test
/// binaries that start a policy mount have).
fn xdev() -> Command {
    match option_env!("CARGO_BIN_EXE_xdev") {
        Some(binary) => Command::new(binary),
        None => panic!("no xdev binary: build the tests with the feature cli"),
    }
}

/// A daemon mounted with a policy, its journal file and its rules file,
/// in a temp dir of their own.
pub(crate) struct PolicyMount {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) dir: PathBuf,
    pub(crate) daemon: Option<KillOnDrop>,
}

impl PolicyMount {
    /// Writes `rules` (mode 0600) and mounts with `--policy`, a journal
    /// file, and `extra`.
    pub(crate) fn start(rules: &Value, extra: &[&str]) -> PolicyMount {
        PolicyMount::launch(rules, extra, true)
    }

    /// [`PolicyMount::start`] with the journal in memory only (read from
    /// the mount's `log`): no decision waits for a record to be synced.
    #[allow(dead_code)] // Not every test binary that uses a policy mount needs it.
    pub(crate) fn start_without_journal_file(rules: &Value) -> PolicyMount {
        PolicyMount::launch(rules, &[], false)
    }

    fn launch(rules: &Value, extra: &[&str], journal_file: bool) -> PolicyMount {
        require_fuse();
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("xdev");
        let mut mount = PolicyMount {
            dir,
            tmp,
            daemon: None,
        };
        mount.write_rules(&rules.to_string());
        let mut command = xdev();
        command
            .arg("mount")
            .arg(&mount.dir)
            .arg("--policy")
            .arg(mount.rules());
        if journal_file {
            command.arg("--journal").arg(mount.journal());
        }
        command
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = KillOnDrop(command.spawn().expect("spawn xdev mount"));
        let stdout = child.0.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("ready line");
        assert!(line.starts_with("xdev: mounted"), "{line:?}");
        mount.daemon = Some(child);
        mount
    }

    pub(crate) fn rules(&self) -> PathBuf {
        self.tmp.path().join("policy.json")
    }

    pub(crate) fn journal(&self) -> PathBuf {
        self.tmp.path().join("journal.jsonl")
    }

    /// Replaces the rules file as an editor does: a new file renamed over.
    pub(crate) fn write_rules(&self, text: &str) {
        let draft = self.tmp.path().join(".policy.json.new");
        std::fs::write(&draft, text).expect("write the rules");
        std::fs::set_permissions(&draft, std::fs::Permissions::from_mode(0o600))
            .expect("chmod the rules");
        std::fs::rename(&draft, self.rules()).expect("rename the rules");
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
    }

    /// The journal's records about preview `id`: its file's, or the
    /// mount's `log` without one.
    pub(crate) fn records_of(&self, id: &str) -> Vec<Value> {
        std::fs::read_to_string(self.journal())
            .or_else(|_| std::fs::read_to_string(self.path("log")))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|record| record["id"] == id)
            .collect()
    }

    /// The id of the one preview pending, once there is one.
    pub(crate) fn pending_id(&self) -> String {
        let mut id = None;
        assert!(
            eventually(PATIENCE, || {
                id = std::fs::read_dir(self.path("pending"))
                    .ok()
                    .and_then(|mut entries| entries.next())
                    .and_then(|entry| entry.ok())
                    .map(|entry| entry.file_name().to_string_lossy().into_owned());
                id.is_some()
            }),
            "nothing was staged"
        );
        id.unwrap_or_default()
    }
}

impl Drop for PolicyMount {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            // SAFETY: signalling the daemon this test spawned.
            unsafe { libc::kill(daemon.0.id() as i32, libc::SIGTERM) };
            let mut daemon = daemon;
            let _ = wait_exit(&mut daemon.0, PATIENCE);
        }
        unmount_leftover(&self.dir);
    }
}
