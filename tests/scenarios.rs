//! The behaviour suite: every shell scenario of `mount-tests/`, one test
//! each, run the way `mount-tests/run.sh` runs it (bash, from that
//! directory, within its `# time limit: N s`, default 20 s) against a fresh
//! `xdev mount` of the built binary. A failing scenario fails its test with
//! the scenario's output. After it, the daemon must exit 0 on SIGTERM and
//! leave nothing mounted.
//!
//! The scenarios are the single copy of the behaviour they check; the other
//! Rust tests keep only what needs in-process hooks (gated callbacks,
//! counters, abort, a `Session` held by the test).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{is_mounted, require_fuse, temp_mount_point, unmount_leftover, wait_exit, KillOnDrop};

/// How long a scenario may take without a `# time limit:` line (run.sh's too).
const DEFAULT_LIMIT_SECS: u64 = 20;

/// How long the daemon may take to say it is mounted, or to exit on SIGTERM,
/// on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);

macro_rules! scenarios {
    ($($test:ident => $script:literal,)*) => {
        /// Every scenario with a test of its own.
        const SCRIPTS: &[&str] = &[$($script),*];
        $(
            #[test]
            fn $test() {
                run_scenario($script);
            }
        )*
    };
}

scenarios! {
    s01_listing => "01-listing.sh",
    s02_resolve_nothing_pending => "02-resolve-nothing-pending.sh",
    s03_reject_nothing_pending => "03-reject-nothing-pending.sh",
    s04_propose_outside_plan_mode => "04-propose-outside-plan-mode.sh",
    s05_usage_lines => "05-usage-lines.sh",
    s06_readback_same_descriptor => "06-readback-same-descriptor.sh",
    s07_write_errnos => "07-write-errnos.sh",
    s08_truncate => "08-truncate.sh",
    s09_refusals => "09-refusals.sh",
    s10_status_files => "10-status-files.sh",
    s11_one_message_per_open => "11-one-message-per-open.sh",
    s12_stage_resolve_runs_cmd_once => "12-stage-resolve-runs-cmd-once.sh",
    s13_stage_failing_cmd_keeps_pending => "13-stage-failing-cmd-keeps-pending.sh",
    s14_stage_discard_exit_3 => "14-stage-discard-exit-3.sh",
    s15_stage_deadline_exit_4 => "15-stage-deadline-exit-4.sh",
    s16_stage_sigkill_withdraws => "16-stage-sigkill-withdraws.sh",
    s17_pending_per_item => "17-pending-per-item.sh",
    s18_journal_who => "18-journal-who.sh",
    s19_events_poll => "19-events-poll.sh",
    s20_plan_yolo => "20-plan-yolo.sh",
    s21_plan_review => "21-plan-review.sh",
    s22_xdev_run => "22-xdev-run.sh",
    s23_cli_exit_codes => "23-cli-exit-codes.sh",
    s24_slow_apply_holds_nobody_up => "24-slow-apply-holds-nobody-up.sh",
    s25_names_cannot_forge => "25-names-cannot-forge.sh",
    s26_closed_stdout_keeps_serving => "26-closed-stdout-keeps-serving.sh",
    s27_concurrent_writers_never_wedge => "27-concurrent-writers-never-wedge.sh",
    s28_memory_stays_bounded => "28-memory-stays-bounded.sh",
    s29_shutdown_lets_a_running_apply_finish => "29-shutdown-lets-a-running-apply-finish.sh",
    s30_stage_killed_during_apply => "30-stage-killed-during-apply.sh",
    s31_mcp_filesystem_server_writes_and_edits_devices =>
        "31-mcp-filesystem-server-writes-and-edits-devices.sh",
    s32_write_file_atomic_renames_onto_devices => "32-write-file-atomic-renames-onto-devices.sh",
    s33_python_tempfile_replace_onto_devices => "33-python-tempfile-replace-onto-devices.sh",
    s34_oh_my_pi_in_place_write_applies_once => "34-oh-my-pi-in-place-write-applies-once.sh",
    s35_agent_hook_allow_and_deny => "35-agent-hook-allow-and-deny.sh",
    s36_codex_hook => "36-codex-hook.sh",
    s37_descriptors_opened_together_decide_apart => "37-descriptors-opened-together-decide-apart.sh",
    s40_bare_mount_point => "40-bare-mount-point.sh",
    s41_ci_recipe => "41-ci-recipe.sh",
    s42_ci_policy_allow_list => "42-ci-policy-allow-list.sh",
    s43_unmounted_from_outside => "43-unmounted-from-outside.sh",
    s44_one_daemon_per_mount_point => "44-one-daemon-per-mount-point.sh",
    s45_an_agent_cannot_approve_its_own_call => "45-an-agent-cannot-approve-its-own-call.sh",
    s46_policy_decides => "46-policy-decides.sh",
    s47_codex_under_policy => "47-codex-under-policy.sh",
    s48_review_in_tmux => "48-review-in-tmux.sh",
    s49_the_installed_hook => "49-the-installed-hook.sh",
}

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mount-tests")
}

/// The scenarios in `mount-tests/` (`NN-*.sh`, as run.sh picks them).
fn scripts_on_disk() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scenario_dir())
        .expect("list mount-tests/")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            let bytes = name.as_bytes();
            name.ends_with(".sh")
                && bytes.len() > 3
                && bytes[0].is_ascii_digit()
                && bytes[1].is_ascii_digit()
                && bytes[2] == b'-'
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_scenario_in_mount_tests_has_a_test() {
    let on_disk = scripts_on_disk();
    let listed: Vec<String> = SCRIPTS.iter().map(|name| name.to_string()).collect();
    let missing: Vec<&String> = on_disk
        .iter()
        .filter(|name| !listed.contains(name))
        .collect();
    let gone: Vec<&String> = listed
        .iter()
        .filter(|name| !on_disk.contains(name))
        .collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "add to scenarios! in tests/scenarios.rs: {missing:?}; remove from it: {gone:?}"
    );
}

/// A scenario's `# time limit: N s` line, else the default.
fn time_limit(script: &str) -> u64 {
    script
        .lines()
        .find_map(|line| {
            line.strip_prefix("# time limit: ")?
                .strip_suffix(" s")?
                .parse()
                .ok()
        })
        .unwrap_or(DEFAULT_LIMIT_SECS)
}

#[test]
fn time_limits_are_read_as_run_sh_reads_them() {
    assert_eq!(time_limit("#!/bin/bash\n# time limit: 90 s\n"), 90);
    assert_eq!(time_limit("# time limit: 90s\n"), DEFAULT_LIMIT_SECS);
    assert_eq!(time_limit("echo hi\n"), DEFAULT_LIMIT_SECS);
}

/// An `xdev mount` on a fresh temp dir, for one scenario.
struct Daemon {
    child: KillOnDrop,
    dir: PathBuf,
    tmp: tempfile::TempDir,
    /// The daemon's stdout lines after the ready line.
    more_lines: mpsc::Receiver<String>,
}

impl Daemon {
    fn start() -> Daemon {
        require_fuse();
        let (tmp, dir) = temp_mount_point("xdev-scenario-");
        let stderr = std::fs::File::create(tmp.path().join("daemon.err")).expect("stderr file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_xdev"))
            .arg("mount")
            .arg(&dir)
            .env_remove("XDEV_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn xdev mount");
        let stdout = child.stdout.take().expect("daemon stdout");
        let (lines, more_lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let child = KillOnDrop(child);
        let ready = more_lines.recv_timeout(PATIENCE);
        assert_eq!(
            ready.as_deref(),
            Ok(format!("xdev: mounted {}", dir.display()).as_str()),
            "xdev mount did not come up; its stderr: {}",
            std::fs::read_to_string(tmp.path().join("daemon.err")).unwrap_or_default()
        );
        Daemon {
            child,
            dir,
            tmp,
            more_lines,
        }
    }

    /// SIGTERM: it must exit 0, unmounted, having printed nothing more.
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("daemon.err")).unwrap_or_default()
    }

    fn stop(mut self) {
        // SAFETY: signalling the daemon this test spawned.
        unsafe { libc::kill(self.child.0.id() as i32, libc::SIGTERM) };
        let code = wait_exit(&mut self.child.0, PATIENCE);
        assert_eq!(
            code,
            Some(0),
            "the daemon's exit after SIGTERM; its stderr: {}",
            self.stderr()
        );
        assert!(
            !is_mounted(&self.dir),
            "still mounted after the daemon exited"
        );
        let extra: Vec<String> = self.more_lines.try_iter().collect();
        assert!(extra.is_empty(), "the daemon printed more lines: {extra:?}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        unmount_leftover(&self.dir);
    }
}

/// Runs `mount-tests/<name>` as run.sh does, against a fresh mount.
fn run_scenario(name: &str) {
    // One at a time, as run.sh runs them: several measure latency, one
    // loads the machine on purpose, and a 2-core box must not turn one
    // scenario into another's flake.
    let _one_at_a_time = common::quiet();
    let path = scenario_dir().join(name);
    let script = std::fs::read_to_string(&path).expect("read the scenario");
    let limit = time_limit(&script);
    let daemon = Daemon::start();
    let started = Instant::now();
    // `2>&1` as in run.sh, so the output reads in order.
    let output = Command::new("sh")
        .args(["-c", "exec timeout -k 2 \"$1\" bash \"$2\" 2>&1", "sh"])
        .arg(limit.to_string())
        .arg(&path)
        .current_dir(scenario_dir())
        .env("XDEV_DIR", &daemon.dir)
        .env("XDEV_BIN", env!("CARGO_BIN_EXE_xdev"))
        .env_remove("D")
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&output.stdout);
    let code = output.status.code();
    let timed_out = if code == Some(124) {
        format!("\ntimed out after {limit} s")
    } else {
        String::new()
    };
    assert!(
        output.status.success(),
        "{name} failed (exit {code:?}, after {:?}):\n{text}{timed_out}\nthe daemon's stderr:\n{}",
        started.elapsed(),
        daemon.stderr()
    );
    daemon.stop();
}
