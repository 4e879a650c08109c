//! Shared fixtures for the mount tests: a session mounted in a temp dir,
//! previews whose callbacks the test controls, and raw syscall helpers.
#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use xdev::{apply_fn, reject_fn, CallbackError, Mount, MountOptions, Session, ToolResult};

mod expected_texts;
pub(crate) mod policy_mount;
mod staging;
// Each test file that includes this module uses a part of it.
#[allow(unused_imports)]
pub(crate) use expected_texts::{expected, expected_text};
#[allow(unused_imports)]
pub(crate) use staging::{failing_apply, stage_failing_first, Calls};

/// Fails loudly (never skips) when FUSE is not usable here.
pub(crate) fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "FUSE is required for this test: /dev/fuse is missing (run scripts/setup.sh)"
    );
    let fusermount = Command::new("fusermount3").arg("-V").output();
    assert!(
        fusermount.is_ok(),
        "FUSE is required for this test: fusermount3 is missing (apt-get install -y fuse3)"
    );
}

/// A fresh temp dir (named `prefix...`, removed on drop) holding an empty
/// directory `mnt` to mount on.
pub(crate) fn temp_mount_point(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("temp dir");
    let dir = tmp.path().join("mnt");
    std::fs::create_dir(&dir).expect("mount dir");
    (tmp, dir)
}

/// Lazily unmounts `dir` if something is still mounted there (a daemon
/// that a failing test left behind).
pub(crate) fn unmount_leftover(dir: &Path) {
    if is_mounted(dir) {
        let _ = Command::new("fusermount3")
            .args(["-u", "-z", "-q", "--"])
            .arg(dir)
            .status();
    }
}

/// The exit code of `child` (128 + N for signal N) once it exits, or
/// `None` if it is still running after `limit`.
pub(crate) fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(xdev::client::exit_code_of(status));
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A session mounted in a fresh temp dir; unmounted on drop.
pub(crate) struct Fixture {
    pub session: Session,
    pub mount: Option<Mount>,
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture::with_options(MountOptions::default())
    }

    pub(crate) fn with_options(options: MountOptions) -> Fixture {
        Fixture::with_session(Session::new(), options)
    }

    pub(crate) fn with_session(session: Session, options: MountOptions) -> Fixture {
        require_fuse();
        let (tmp, dir) = temp_mount_point("xdev-test-");
        let mount = xdev::mount(&session, &dir, options).expect("mount");
        Fixture {
            session,
            mount: Some(mount),
            dir,
            _tmp: tmp,
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub(crate) fn path_str(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("read status file")
    }

    /// The journal's records (`log`), oldest first.
    pub(crate) fn log_records(&self) -> Vec<serde_json::Value> {
        self.read("log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a log line is JSON"))
            .collect()
    }

    /// A session with a plan desk of `kind` over a fresh plan dir, mounted.
    pub(crate) fn with_plan(
        kind: xdev::PlanHandlerKind,
    ) -> (Fixture, xdev::PlanDesk, tempfile::TempDir) {
        require_fuse();
        let plans = tempfile::tempdir().expect("plan dir");
        let session = Session::new();
        let desk = xdev::PlanDesk::new(
            session.clone(),
            plans.path().to_path_buf(),
            kind,
            Some("codex".into()),
        );
        let options = MountOptions {
            plan: Some(desk.clone()),
            ..MountOptions::default()
        };
        (Fixture::with_session(session, options), desk, plans)
    }

    pub(crate) fn status_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.read("status.json")).expect("status.json is JSON")
    }

    /// `program -c script` with `$D` set to the mount dir, not started yet:
    /// for a test that spawns it and talks to it.
    pub(crate) fn command(&self, program: &str, script: &str) -> Command {
        let mut command = Command::new(program);
        command.arg("-c").arg(script).env("D", &self.dir);
        with_default_stop_signals(&mut command);
        command
    }

    /// Runs `script` with `sh -c`, `$D` set to the mount dir.
    pub(crate) fn sh(&self, script: &str) -> Output {
        self.command("sh", script).output().expect("run sh")
    }

    /// Runs `script` with `bash -c`, `$D` set to the mount dir.
    pub(crate) fn bash(&self, script: &str) -> Output {
        self.command("bash", script).output().expect("run bash")
    }

    /// Runs a Python snippet with `D` set to the mount dir; returns stdout.
    pub(crate) fn python(&self, code: &str) -> Output {
        self.command("python3", code).output().expect("run python3")
    }

    /// Runs a Python program that prints one result per line, and returns
    /// those lines; fails the test with its stderr if it crashes.
    pub(crate) fn python_lines(&self, program: &str) -> Vec<String> {
        let output = self.python(program);
        assert!(
            output.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout(&output).lines().map(str::to_string).collect()
    }
}

/// A finished process's stdout, as text.
pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mount) = self.mount.take() {
            let _ = mount.unmount();
        }
    }
}

/// Stages a preview (tool `edit`) whose apply answers `applied: <label>`
/// and whose reject answers `rejected: <label>`, recording every call and
/// its reason.
pub(crate) fn stage_recording(session: &Session, label: &str) -> (String, Arc<Calls>) {
    let (calls, apply, reject) = counting_callbacks(label);
    let id = session.queue_resolve_handler(label, "edit", apply, Some(reject));
    (id, calls)
}

/// Callbacks whose apply answers `applied: <label>` and whose reject
/// answers `rejected: <label>`, and what counts their calls.
pub(crate) fn counting_callbacks(label: &str) -> (Arc<Calls>, xdev::ApplyFn, xdev::RejectFn) {
    let calls = Arc::new(Calls::default());
    let (on_apply, on_reject) = (Arc::clone(&calls), Arc::clone(&calls));
    let (apply_label, reject_label) = (label.to_string(), label.to_string());
    (
        Arc::clone(&calls),
        apply_fn(move |reason, _| {
            let calls = Arc::clone(&on_apply);
            let label = apply_label.clone();
            async move {
                calls.applied.fetch_add(1, Ordering::SeqCst);
                calls.reasons.lock().push(reason);
                Ok(ToolResult::ok(format!("applied: {label}")))
            }
        }),
        reject_fn(move |reason, _| {
            let calls = Arc::clone(&on_reject);
            let label = reject_label.clone();
            async move {
                calls.rejected.fetch_add(1, Ordering::SeqCst);
                calls.reasons.lock().push(reason);
                Ok(Some(ToolResult::ok(format!("rejected: {label}"))))
            }
        }),
    )
}

/// An agent stand-in: a shell that runs its arguments as its child with
/// its own standard input (the hook's event) handed to it, and exits with
/// the child's status. Its own standard input is then another file, as an
/// agent's is: the mount takes this shell for the agent that ran the hook.
const AGENT_STAND_IN: &str = r#"exec 3<&0 </dev/null
"$@" <&3 3<&- &
wait $!"#;

/// `xdev hook --mount MOUNT ARGS...` run by `xdev` (the binary, or a
/// command that runs it as another user), with `input` on its stdin, as an
/// agent runs its hook: the child of an agent stand-in (see
/// [`AGENT_STAND_IN`]). The test process is outside that agent's processes,
/// so its decisions are a person's, which the mount takes. The handle is
/// the stand-in's: its output and exit status are the hook's, and killing
/// it kills the hook (`setpriv --pdeathsig`); [`hook_pid`] finds the hook.
/// A command that runs `xdev-hook` (which is `xdev hook`) gets no `hook`
/// word.
pub(crate) fn spawn_hook_with(
    xdev: Command,
    mount: &Path,
    args: &[&str],
    input: &[u8],
) -> KillOnDrop {
    let runs_xdev_hook = std::iter::once(xdev.get_program())
        .chain(xdev.get_args())
        .any(|word| word.to_string_lossy().ends_with("xdev-hook"));
    let subcommand: &[&str] = if runs_xdev_hook { &[] } else { &["hook"] };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(AGENT_STAND_IN)
        .arg("agent-stand-in")
        .args(["setpriv", "--pdeathsig", "KILL"])
        .arg(xdev.get_program())
        .args(xdev.get_args())
        .args(subcommand)
        .arg("--mount")
        .arg(mount)
        .args(args)
        .env_remove("XDEV_DIR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn xdev hook under an agent stand-in");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(input).expect("write the hook input");
    }
    KillOnDrop(child)
}

/// The pid of the hook an agent stand-in of [`spawn_hook_with`] runs, once
/// it runs.
pub(crate) fn hook_pid(agent: &KillOnDrop) -> u32 {
    let agent = agent.0.id();
    let children = format!("/proc/{agent}/task/{agent}/children");
    let mut hook = None;
    assert!(
        eventually(Duration::from_secs(10), || {
            hook = std::fs::read_to_string(&children)
                .ok()
                .and_then(|pids| pids.split_whitespace().next()?.parse().ok());
            hook.is_some()
        }),
        "the agent stand-in {agent} runs no hook"
    );
    hook.unwrap_or_default()
}

/// Stages a preview (no reject callback) whose apply runs `finish(attempt)`
/// (`attempt` counts earlier applies from 0), then counts the call and
/// records the reason, so `applied()` stays 0 while `finish` is waiting.
pub(crate) fn stage_counted<F, Fut>(
    session: &Session,
    label: &str,
    finish: F,
) -> (String, Arc<Calls>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolResult, CallbackError>> + Send + 'static,
{
    let calls = Arc::new(Calls::default());
    let counted = Arc::clone(&calls);
    let finish = Arc::new(finish);
    let id = session.queue_resolve_handler(
        label,
        "edit",
        apply_fn(move |reason, _| {
            let calls = Arc::clone(&counted);
            let outcome = finish(calls.applied());
            async move {
                let outcome = outcome.await;
                calls.applied.fetch_add(1, Ordering::SeqCst);
                calls.reasons.lock().push(reason);
                outcome
            }
        }),
        None,
    );
    (id, calls)
}

/// Stages a preview whose apply sleeps `delay` before succeeding.
pub(crate) fn stage_slow(session: &Session, label: &str, delay: Duration) -> (String, Arc<Calls>) {
    stage_counted(session, label, move |_| async move {
        tokio::time::sleep(delay).await;
        Ok(ToolResult::ok("slow apply done"))
    })
}

/// The result of a raw `write(2)`: the byte count or the errno.
pub(crate) type WriteResult = Result<usize, i32>;

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

/// A raw open file descriptor, closed on drop.
pub(crate) struct Fd(pub i32);

impl Fd {
    pub(crate) fn open(path: &Path, flags: i32) -> Result<Fd, i32> {
        let path = c_path(path);
        // SAFETY: path is a valid C string; open has no other preconditions.
        let fd = unsafe { libc::open(path.as_ptr(), flags) };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(Fd(fd))
        }
    }

    pub(crate) fn write(&self, data: &[u8]) -> WriteResult {
        // SAFETY: data is a valid buffer of data.len() bytes.
        let n = unsafe { libc::write(self.0, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            Err(errno())
        } else {
            Ok(n as usize)
        }
    }

    pub(crate) fn read_to_string(&self) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: buf is a valid writable buffer of buf.len() bytes.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

/// The names in directory `dir`, in the order it lists them.
pub(crate) fn dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list a directory")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// open(O_WRONLY|O_TRUNC) + one write + close: what `echo x > dev` does.
pub(crate) fn write_once(path: &Path, data: &[u8]) -> WriteResult {
    let fd = Fd::open(path, libc::O_WRONLY | libc::O_TRUNC)?;
    fd.write(data)
}

/// Polls `done` every 10 ms for up to `limit`.
pub(crate) fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stages a preview whose apply waits until `gate` is notified (at most
/// 30 s), so a test decides when it finishes.
pub(crate) fn stage_gated(
    session: &Session,
    label: &str,
) -> (String, Arc<Calls>, Arc<tokio::sync::Notify>) {
    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = Arc::clone(&gate);
    let (id, calls) = stage_counted(session, label, move |_| {
        let gate = Arc::clone(&opened);
        async move {
            let _ = tokio::time::timeout(Duration::from_secs(30), gate.notified()).await;
            Ok(ToolResult::ok("gated apply done"))
        }
    });
    (id, calls, gate)
}

/// Opens the gate of a [`stage_gated`] preview: its apply runs once, and
/// its outcome is recorded though nobody waits for it any more.
pub(crate) fn open_gate(session: &Session, id: &str, calls: &Calls, gate: &tokio::sync::Notify) {
    gate.notify_one();
    assert!(eventually(Duration::from_secs(10), || calls.applied() == 1));
    assert!(
        eventually(Duration::from_secs(10), || !session.is_pending(id)),
        "its outcome is still recorded"
    );
}

/// Sends `signal` to `child` (which the test spawned and has not reaped)
/// and asserts that it goes while what it waited for has not ended. The
/// bound is generous (a busy machine); how fast it goes is a benchmark's
/// question.
pub(crate) fn signal_and_see_it_go(child: &mut std::process::Child, signal: i32, what: &str) {
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(child.id() as i32, signal) };
    assert!(
        eventually(Duration::from_secs(10), || matches!(
            child.try_wait(),
            Ok(Some(_))
        )),
        "{what} still blocked 10 s after signal {signal}"
    );
}

/// The next line a child printed (empty once it has ended).
pub(crate) fn next_line(lines: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    lines.read_line(&mut line).expect("read a line");
    line
}

/// Whether `dir` is a mount point now (per /proc/self/mounts).
pub(crate) fn is_mounted(dir: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.display().to_string();
    mounts
        .lines()
        .any(|line| line.split(' ').nth(1) == Some(dir.as_str()))
}

/// A child process killed (and reaped) when the test ends, even when it
/// fails, so no daemon outlives its test.
pub(crate) struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Serialises the tests that measure latency with the ones that load the
/// machine, so a 2-core CI box does not turn one into the other's flake.
pub(crate) fn quiet() -> parking_lot::MutexGuard<'static, ()> {
    static QUIET: Mutex<()> = Mutex::new(());
    QUIET.lock()
}

impl Fixture {
    /// Waits (up to 10 s) until a writer's dispatch has claimed preview
    /// `id`: the writer is then blocked in its `write(2)`, waiting on the
    /// apply. The condition itself, not a guess at how long that takes.
    pub(crate) fn wait_until_deciding(&self, id: &str) {
        assert!(
            eventually(Duration::from_secs(10), || self.session.is_in_progress(id)),
            "no writer started deciding {id}"
        );
    }
}

/// Waits (up to 10 s) until some process holds `path` open (per
/// /proc/*/fd): a reader started in the background has then opened it,
/// so whatever happens next is after its open.
pub(crate) fn wait_until_opened(path: &Path) {
    let opened = || {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return false;
        };
        procs.flatten().any(|process| {
            std::fs::read_dir(process.path().join("fd")).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == path))
            })
        })
    };
    assert!(
        eventually(Duration::from_secs(10), opened),
        "nothing opened {} within 10 s",
        path.display()
    );
}

/// Starts `command` with SIGINT and SIGQUIT at their default actions, as a
/// terminal's foreground job has them. A test run in the background of a
/// non-interactive shell (`cargo test &`, some CI runners) inherits both
/// ignored, and the kernel discards an ignored signal: a test that stops
/// its writer with Ctrl-C's signal would then wait for nothing.
pub(crate) fn with_default_stop_signals(command: &mut Command) -> &mut Command {
    // SAFETY: the closure only calls signal(2), which is async-signal-safe,
    // as code between fork and exec must be.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        })
    }
}
