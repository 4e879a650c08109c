//! The mount against real processes: shells, cat, python3 and raw syscalls
//! (docs/semantics.md: Writing, Reading, Attributes and Errors).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use xdev::session::plan_handler;
use xdev::{
    apply_fn, reject_fn, CallbackError, Error, MountOptions, Session, StageOptions, ToolResult,
};

/// `last` after a resolve with nothing pending (`nothing-to-resolve` of
/// mount-tests/expected-texts).
fn nothing_to_resolve(fx: &Fixture) -> String {
    format!("{}\n", expected("nothing-to-resolve", &fx.dir))
}

fn last_json(fx: &Fixture) -> serde_json::Value {
    fx.status_json()["last"].clone()
}

// ----- the errno table, one row at a time ---------------------------------

#[test]
fn success_returns_the_byte_count_and_the_text_everywhere() {
    let fx = Fixture::new();
    stage_recording(&fx.session, "edit a.rs");
    let fd = Fd::open(&fx.path("resolve"), libc::O_RDWR).expect("open");
    assert_eq!(fd.write(b"tests pass\n"), Ok(11));
    assert_eq!(fd.read_to_string(), "applied: edit a.rs\n");
    assert_eq!(fx.read("last"), "applied: edit a.rs\n");
    assert!(fx
        .read("status")
        .contains("last: resolve ok: applied: edit a.rs"));
    let last = last_json(&fx);
    assert_eq!(last["ok"], true);
    assert_eq!(last["device"], "resolve");
}

#[test]
fn bad_plan_title_is_einval_and_the_handler_gets_the_normalized_title() {
    let fx = Fixture::new();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    fx.session
        .set_plan_proposal_handler(plan_handler(move |proposal| {
            let record = Arc::clone(&record);
            async move {
                let title = proposal.require_title()?.clone();
                record.lock().push(title.file_name());
                Ok(ToolResult::ok(format!("Plan approved: {}", title.slug)))
            }
        }));
    assert_eq!(
        write_once(&fx.path("propose"), b"../etc/passwd"),
        Err(libc::EINVAL)
    );
    assert_eq!(
        fx.read("last"),
        "Plan title must not contain path separators or '..'.\n"
    );
    assert_eq!(write_once(&fx.path("propose"), b"Auth Refactor\n"), Ok(14));
    assert_eq!(
        seen.lock().clone(),
        vec!["Auth-Refactor-plan.md".to_string()]
    );
}

#[test]
fn plan_handler_errors_map_to_enoent_ebusy_etimedout() {
    let fx = Fixture::new();
    fx.session
        .set_plan_proposal_handler(plan_handler(|proposal| async move {
            match proposal.require_title()?.slug.as_str() {
                "missing" => Err(Error::PlanNotFound(
                    "Plan file not found at /p/missing-plan.md.".into(),
                )),
                "busy" => Err(Error::Busy("Another plan is under review.".into())),
                _ => Err(Error::TimedOut(
                    "The reviewer did not answer in time.".into(),
                )),
            }
        }));
    assert_eq!(
        write_once(&fx.path("propose"), b"missing"),
        Err(libc::ENOENT)
    );
    assert_eq!(
        fx.read("last"),
        "Plan file not found at /p/missing-plan.md.\n"
    );
    assert_eq!(write_once(&fx.path("propose"), b"busy"), Err(libc::EBUSY));
    assert_eq!(last_json(&fx)["errno"], "EBUSY");
    assert_eq!(
        write_once(&fx.path("propose"), b"slow"),
        Err(libc::ETIMEDOUT)
    );
    assert_eq!(last_json(&fx)["errno"], "ETIMEDOUT");
}

#[test]
fn failing_callbacks_and_error_results_are_eio() {
    let fx = Fixture::new();
    fx.session.queue_resolve_handler(
        "stale edit",
        "edit",
        apply_fn(|_, _| async { Ok(ToolResult::error("The file changed since the preview.")) }),
        None,
    );
    assert_eq!(write_once(&fx.path("resolve"), b"go"), Err(libc::EIO));
    assert_eq!(fx.read("last"), "The file changed since the preview.\n");
    assert_eq!(
        fx.session.pending_count(),
        0,
        "an error result consumes the preview"
    );

    let id = fx.session.queue_resolve_handler(
        "locked edit",
        "edit",
        apply_fn(|_, _| async { Ok(ToolResult::ok("never")) }),
        Some(reject_fn(|_, _| async {
            Err(CallbackError::Failed("lock held".into()))
        })),
    );
    assert_eq!(write_once(&fx.path("reject"), b"no"), Err(libc::EIO));
    assert_eq!(fx.read("last"), "lock held\n");
    assert_eq!(
        fx.session.pending_head().map(|head| head.id),
        Some(id),
        "a failed reject keeps it"
    );
}

#[test]
fn non_utf8_body_is_einval_and_dispatches_nothing() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    assert_eq!(
        write_once(&fx.path("resolve"), &[0xff, 0xfe, b'\n']),
        Err(libc::EINVAL)
    );
    assert_eq!(calls.applied(), 0);
    assert_eq!(fx.session.pending_count(), 1);
    assert_eq!(last_json(&fx)["errno"], "EINVAL");
}

#[test]
fn oversized_messages_are_emsgsize_and_dispatch_nothing() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let over = vec![b'a'; 64 * 1024 + 1];
    assert_eq!(write_once(&fx.path("resolve"), &over), Err(libc::EMSGSIZE));
    let huge = vec![b'a'; 1024 * 1024];
    assert_eq!(write_once(&fx.path("resolve"), &huge), Err(libc::EMSGSIZE));
    assert_eq!(calls.applied(), 0);
    assert_eq!(fx.session.pending_count(), 1);
    assert_eq!(last_json(&fx)["errno"], "EMSGSIZE");

    let mut exact = vec![b'r'; 64 * 1024 - 1];
    exact.push(b'\n');
    assert_eq!(write_once(&fx.path("resolve"), &exact), Ok(64 * 1024));
    assert_eq!(
        calls.reasons(),
        vec!["r".repeat(64 * 1024 - 1)],
        "64 KiB arrives whole"
    );
}

#[test]
fn a_second_write_on_one_descriptor_repeats_the_first_outcome_and_dispatches_nothing() {
    let fx = Fixture::new();
    stage_recording(&fx.session, "first");
    let (_, second) = stage_recording(&fx.session, "second");
    let fd = Fd::open(&fx.path("resolve"), libc::O_RDWR).expect("open");
    assert_eq!(fd.write(b"one\n"), Ok(4));
    assert_eq!(
        fd.write(b"two, longer\n"),
        Ok(12),
        "the same success, its own count"
    );
    assert_eq!(second.applied(), 1, "only the first message was dispatched");
    assert_eq!(fx.session.pending_count(), 1);
    assert_eq!(
        fd.read_to_string(),
        "applied: second\n",
        "the first result stays readable"
    );
    assert_eq!(
        fx.read("last"),
        "applied: second\n",
        "later writes leave last alone"
    );
    drop(fd);
    // The note is written at release, which the kernel sends after close
    // returns: wait for it.
    assert!(eventually(Duration::from_secs(10), || !ignored_notes(&fx).is_empty()));
    let notes = ignored_notes(&fx);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["device"], "resolve");
    assert_eq!(
        (&notes[0]["label"], &notes[0]["sourceTool"]),
        (&serde_json::json!("second"), &serde_json::json!("edit")),
        "the note names the preview the message decided"
    );
    assert!(notes[0]["text"]
        .as_str()
        .unwrap_or_default()
        .starts_with("12 bytes"));

    let fd = Fd::open(&fx.path("reject"), libc::O_RDWR).expect("open");
    fx.session.clear_pending();
    assert_eq!(
        fd.write(b"x\n"),
        Ok(2),
        "reject with nothing pending succeeds"
    );
    let fd = Fd::open(&fx.path("resolve"), libc::O_RDWR).expect("open");
    assert_eq!(fd.write(b"go\n"), Err(libc::ENOENT));
    assert_eq!(
        fd.write(b"go again\n"),
        Err(libc::ENOENT),
        "the same errno again"
    );
    assert_eq!(fx.read("last"), nothing_to_resolve(&fx));
}

/// Claude Code's Read tool reads a file with `pread` at 0, then on from
/// there: the usage line arrives whole, in order; write-then-read on one
/// descriptor still reads the whole result.
#[test]
fn device_reads_honour_their_offset() {
    let fx = Fixture::new();
    let out = fx.python(
        r#"
import os
D = os.environ['D']
fd = os.open(D + '/resolve', os.O_RDWR)
head = os.pread(fd, 16, 0)
os.lseek(fd, 16, os.SEEK_SET)
rest = os.read(fd, 4096)
again = os.pread(fd, 4096, 0)
print(repr(head + rest == again), again.decode().startswith('Write a one-sentence'))
print(repr(os.pread(fd, 5, 6)))
os.lseek(fd, 0, os.SEEK_SET)
try:
    os.write(fd, b'go\n')
except OSError as e:
    print('write', e.errno)
print(repr(os.read(fd, 4096)))
print(repr(os.pread(fd, 2, 0)))
"#,
    );
    let nothing = expected("nothing-to-resolve", &fx.dir);
    assert_eq!(
        stdout(&out),
        format!("True True\nb'a one'\nwrite 2\nb'{nothing}\\n'\nb'No'\n"),
        "{out:?}"
    );
}

/// The journal's notes of bytes written after a message.
fn ignored_notes(fx: &Fixture) -> Vec<serde_json::Value> {
    fx.read("log")
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|record| record["event"] == "ignored")
        .collect()
}

/// Shell and stdio patterns that write one descriptor more than once:
/// exactly one preview is applied and the writer is told success.
#[test]
fn writers_that_split_their_output_apply_one_preview_and_succeed() {
    let fx = Fixture::new();
    let patterns = [
        "{ echo \"README looks good\"; echo \"ship it\"; } > \"$D/resolve\"",
        "exec 3>\"$D/resolve\"; echo one >&3; echo two >&3; exec 3>&-",
        "python3 -u -c 'print(\"one\"); print(\"two\")' > \"$D/resolve\"",
        "printf 'ship it\\n' | dd bs=1 of=\"$D/resolve\" 2>/dev/null",
    ];
    for pattern in patterns {
        let (_, older) = stage_recording(&fx.session, "migrate prod DB");
        let (_, newer) = stage_recording(&fx.session, "edit README");
        let out = fx.bash(pattern);
        assert!(out.status.success(), "{pattern}: {out:?}");
        assert_eq!(newer.applied(), 1, "{pattern}");
        assert_eq!(
            older.applied(),
            0,
            "{pattern}: the next preview is untouched"
        );
        assert_eq!(fx.session.pending_count(), 1, "{pattern}");
        fx.session.clear_pending();
    }
    let (_, dd) = stage_recording(&fx.session, "dd");
    assert!(fx
        .bash("printf 'ship it\\n' | dd bs=1 of=\"$D/resolve\" 2>/dev/null")
        .status
        .success());
    assert_eq!(
        dd.reasons(),
        vec!["s".to_string()],
        "dd bs=1: the first byte is the message"
    );
}

/// Node.js writers: `fs.writeFileSync` is told the real error (ENOENT with
/// nothing pending) and applies one preview; two `fs.writeSync` calls on
/// one descriptor apply one preview and both succeed.
#[test]
fn node_writers_are_told_the_truth_and_apply_one_preview() {
    let fx = Fixture::new();
    let node = |script: &str| {
        let out = std::process::Command::new("node")
            .arg("-e")
            .arg(script)
            .env("D", &fx.dir)
            .output()
            .expect("node is required for this test (apt-get install -y nodejs)");
        stdout(&out)
    };
    let write_file = "const fs = require('fs');
try { fs.writeFileSync(process.env.D + '/resolve', 'looks right\\n'); console.log('ok'); }
catch (e) { console.log(e.code); }";
    assert_eq!(node(write_file), "ENOENT\n");
    let (_, older) = stage_recording(&fx.session, "migrate prod DB");
    let (_, newer) = stage_recording(&fx.session, "edit README");
    assert_eq!(node(write_file), "ok\n");
    assert_eq!((newer.applied(), older.applied()), (1, 0));
    assert_eq!(newer.reasons(), vec!["looks right".to_string()]);
    let two_writes = "const fs = require('fs');
const fd = fs.openSync(process.env.D + '/resolve', 'w');
console.log(fs.writeSync(fd, 'one\\n'), fs.writeSync(fd, 'two\\n'));
fs.closeSync(fd);";
    assert_eq!(node(two_writes), "4 4\n");
    assert_eq!(
        older.applied(),
        1,
        "the first write applied the next preview"
    );
    assert_eq!(fx.session.pending_count(), 0, "and nothing else");
}

/// Python's `with open(p, "w")` writes at close and retries a failed
/// flush: the writer sees the real error, and `last` keeps its message.
#[test]
fn python_with_open_reports_the_real_error_and_last_keeps_it() {
    let fx = Fixture::new();
    let code = "import os\ntry:\n    with open(os.environ['D'] + '/resolve', 'w') as f:\n        f.write('looks right\\n')\n    print('ok')\nexcept OSError as e:\n    print(type(e).__name__, e.errno)\n";
    let out = fx.python(code);
    assert_eq!(stdout(&out), "FileNotFoundError 2\n", "{out:?}");
    assert_eq!(fx.read("last"), nothing_to_resolve(&fx));

    let (_, calls) = stage_failing_first(
        &fx.session,
        "flaky",
        1,
        CallbackError::Failed("disk full".into()),
    );
    let out = fx.python(code);
    assert_eq!(stdout(&out), "OSError 5\n", "{out:?}");
    assert_eq!(calls.applied(), 1);
    assert_eq!(fx.read("last"), "Apply failed: disk full\n");
    assert_eq!(
        fx.session.pending_count(),
        1,
        "the preview stays for a retry"
    );

    let out = fx.python(code);
    assert_eq!(stdout(&out), "ok\n", "{out:?}");
    assert_eq!(calls.applied(), 2);
}

/// Bodies of a whole number of pages are the message at their write: the
/// writer is told the outcome, never success for a later dispatch.
#[test]
fn page_sized_bodies_are_decided_at_their_write() {
    let fx = Fixture::new();
    for size in [4096usize, 8192, 65536] {
        let body = vec![b'p'; size];
        assert_eq!(
            write_once(&fx.path("resolve"), &body),
            Err(libc::ENOENT),
            "{size} bytes, nothing pending"
        );
        let (_, flaky) = stage_failing_first(
            &fx.session,
            "flaky",
            1,
            CallbackError::Failed("disk full".into()),
        );
        assert_eq!(
            write_once(&fx.path("resolve"), &body),
            Err(libc::EIO),
            "{size} bytes, failing apply"
        );
        assert_eq!(
            write_once(&fx.path("resolve"), &body),
            Ok(size),
            "{size} bytes, applied"
        );
        assert_eq!(flaky.reasons().last().map(String::len), Some(size));
    }
}

#[test]
fn session_abort_cancels_a_blocked_writer_with_ecanceled() {
    let fx = Fixture::new();
    let (id, calls, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = std::thread::spawn(move || write_once(&path, b"go"));
    fx.wait_until_deciding(&id);
    fx.session.abort("session aborted by user");
    assert_eq!(writer.join().expect("writer"), Err(libc::ECANCELED));
    assert_eq!(fx.read("last"), "Aborted: session aborted by user\n");
    // The late apply still consumes it.
    open_gate(&fx.session, &id, &calls, &gate);
}

/// A mount whose decisions under way get `grace` when it stops.
fn with_grace(grace: Duration) -> Fixture {
    Fixture::with_options(xdev::MountOptions {
        grace,
        ..xdev::MountOptions::default()
    })
}

/// A mount with `grace` that journals to a file in a temp dir of its own:
/// the mount, the journal file, and the dir (kept until the test ends).
fn journaled(grace: Duration) -> (Fixture, std::path::PathBuf, tempfile::TempDir) {
    let journal = tempfile::tempdir().expect("journal dir");
    let journal_file = journal.path().join("journal.jsonl");
    let fx = Fixture::with_options(xdev::MountOptions {
        grace,
        journal_file: Some(journal_file.clone()),
        ..xdev::MountOptions::default()
    });
    (fx, journal_file, journal)
}

#[test]
fn unmount_lets_a_running_decision_finish_and_refuses_new_ones() {
    let _quiet = quiet();
    let (mut fx, journal_file, _journal) = journaled(Duration::from_secs(30));
    stage_recording(&fx.session, "older");
    let (_, slow, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = std::thread::spawn(move || write_once(&path, b"go"));
    assert!(eventually(Duration::from_secs(10), || fx.status_json()
        ["inProgress"]
        == 1));
    let mount = fx.mount.take().expect("mounted");
    let unmounting = std::thread::spawn(move || mount.unmount());
    // A propose outside plan mode decides nothing (EPERM) until the mount
    // is stopping; then it is refused like every new decision.
    assert!(eventually(Duration::from_secs(10), || write_once(
        &fx.path("propose"),
        b"probe"
    ) == Err(
        libc::ECANCELED
    )));
    assert_eq!(
        write_once(&fx.path("reject"), b"not now"),
        Err(libc::ECANCELED),
        "no new decisions while stopping"
    );
    let stage = Fd::open(&fx.path("stage"), libc::O_RDWR).expect("open stage");
    assert_eq!(
        stage.write(b"{\"label\": \"too late\"}\n"),
        Err(libc::ECANCELED),
        "no new stagings while stopping: nobody could decide them"
    );
    assert!(
        !fx.session.pending().iter().any(|p| p.label == "too late"),
        "nothing was staged"
    );
    gate.notify_one();
    assert_eq!(writer.join().expect("writer"), Ok(2), "the real outcome");
    assert_eq!(slow.applied(), 1);
    unmounting.join().expect("unmount").expect("unmounted");
    assert!(!xdev::mount::is_stale_mount(&fx.dir));
    let journal = std::fs::read_to_string(&journal_file).expect("journal file");
    let refused: Vec<serde_json::Value> = journal
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|record| record["event"] == "reject")
        .collect();
    assert_eq!(refused.len(), 1, "{journal}");
    assert_eq!(
        (&refused[0]["reason"], &refused[0]["errno"]),
        (
            &serde_json::json!("not now"),
            &serde_json::json!("ECANCELED")
        ),
        "a write refused at shutdown keeps its reason"
    );
}

/// The records `journal` holds about preview `id`.
fn records_of(journal: &xdev::journal::Journal, id: &str) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&journal.bytes())
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a record is JSON"))
        .filter(|record| record["id"] == id)
        .collect()
}

#[test]
fn the_grace_period_ending_on_a_running_apply_tells_its_writer_the_outcome_is_unknown() {
    let _quiet = quiet();
    let mut fx = with_grace(Duration::from_millis(300));
    // Gated: the apply outlasts the grace period however slow the machine.
    let (id, calls, _gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = std::thread::spawn(move || write_once(&path, b"go"));
    fx.wait_until_deciding(&id);
    let mount = fx.mount.take().expect("mounted");
    let journal = mount.journal().clone();
    mount.unmount().expect("unmount");
    // The callback had its apply: it may have made the change, so the
    // writer is not told "cancelled" (nothing done).
    assert_eq!(writer.join().expect("writer"), Err(libc::EIO));
    assert!(!xdev::mount::is_stale_mount(&fx.dir));
    assert_eq!(calls.applied(), 0, "the apply never reported");
    let records = records_of(&journal, &id);
    let told: Vec<_> = records
        .iter()
        .filter(|record| record["event"] != "staged")
        .map(|record| {
            (
                record["event"].clone(),
                record["outcome"].clone(),
                record["errno"].clone(),
                record["text"].clone(),
            )
        })
        .collect();
    assert_eq!(
        told,
        [(
            serde_json::json!("writer-left"),
            serde_json::json!("unknown"),
            serde_json::json!("EIO"),
            serde_json::json!(expected("outcome-unknown-at-shutdown", &fx.dir)),
        )],
        "the log tells what the writer was told: {records:?}"
    );
}

extern "C" fn ignore_signal(_: i32) {}

#[test]
fn a_handled_signal_during_an_apply_changes_nothing_for_the_writer() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (id, calls) = stage_slow(&fx.session, "slow", Duration::from_millis(1500));
    // SAFETY: installing a handler that does nothing, without SA_RESTART.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore_signal as *const () as usize;
        libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut());
    }
    let path = fx.path("resolve");
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        // SAFETY: pthread_self has no preconditions.
        tx.send(unsafe { libc::pthread_self() })
            .expect("send thread id");
        write_once(&path, b"go")
    });
    let thread = rx.recv().expect("writer thread");
    fx.wait_until_deciding(&id);
    // SAFETY: the thread is alive: it is blocked in write until answered.
    unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
    assert_eq!(writer.join().expect("writer"), Ok(2));
    assert_eq!(calls.applied(), 1);
    assert_eq!(last_json(&fx)["ok"], true);
    let decisions: Vec<(serde_json::Value, serde_json::Value)> = fx
        .log_records()
        .iter()
        .filter(|record| record["event"] != "staged")
        .map(|record| (record["event"].clone(), record["outcome"].clone()))
        .collect();
    assert_eq!(
        decisions,
        [(serde_json::json!("resolve"), serde_json::json!("ok"))],
        "one decision, a success"
    );
}

#[test]
fn other_users_may_neither_write_devices_nor_read_status_unless_shared() {
    let fx = Fixture::with_options(xdev::MountOptions {
        allow_other: true,
        ..xdev::MountOptions::default()
    });
    let (_, calls) = stage_recording(&fx.session, "edit");
    // The temp dir above the mount must be traversable by the other user.
    let parent = fx.dir.parent().expect("parent");
    std::fs::set_permissions(parent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let nobody = |script: &str| {
        std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sh",
                "-c",
                script,
            ])
            .env("D", &fx.dir)
            .output()
            .expect("setpriv")
    };
    let read = nobody("cat \"$D/status\"");
    assert!(!read.status.success(), "{read:?}");
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("Permission denied"),
        "{read:?}"
    );
    let write = nobody("echo go > \"$D/resolve\"");
    assert!(!write.status.success());
    assert!(
        String::from_utf8_lossy(&write.stderr).contains("Permission denied"),
        "{write:?}"
    );
    let python = nobody(
        "python3 -c \"import os,errno\ntry:\n os.open(os.environ['D']+'/resolve', os.O_WRONLY)\nexcept OSError as e:\n print(errno.errorcode[e.errno])\"",
    );
    assert_eq!(stdout(&python), "EACCES\n");
    assert_eq!(calls.applied(), 0);
}

// ----- callbacks, order, failure and retry ----------------------------------

#[test]
fn callbacks_see_the_trimmed_reason() {
    let fx = Fixture::new();
    let (_, applied) = stage_recording(&fx.session, "a");
    assert!(fx
        .sh("echo '  tests pass  ' > \"$D/resolve\"")
        .status
        .success());
    assert_eq!(applied.reasons(), vec!["tests pass".to_string()]);
    let (_, rejected) = stage_recording(&fx.session, "b");
    assert!(fx
        .sh("printf '\\n wrong approach \\n\\n' > \"$D/reject\"")
        .status
        .success());
    assert_eq!(rejected.rejected(), 1);
    assert_eq!(rejected.reasons(), vec!["wrong approach".to_string()]);
}

#[test]
fn three_previews_resolve_newest_first() {
    let fx = Fixture::new();
    for label in ["one", "two", "three"] {
        stage_recording(&fx.session, label);
    }
    let out = fx.sh("for i in 1 2 3; do echo ok > \"$D/resolve\" && cat \"$D/last\"; done");
    assert_eq!(stdout(&out), "applied: three\napplied: two\napplied: one\n");
}

#[test]
fn failed_apply_keeps_the_same_id_at_the_head_and_a_retry_applies() {
    let fx = Fixture::new();
    stage_recording(&fx.session, "older");
    let (id, calls) = stage_failing_first(
        &fx.session,
        "flaky",
        1,
        CallbackError::Failed("disk full".into()),
    );
    assert_eq!(write_once(&fx.path("resolve"), b"go\n"), Err(libc::EIO));
    assert_eq!(fx.read("last"), "Apply failed: disk full\n");
    let status = fx.status_json();
    assert_eq!(status["head"]["id"], id.as_str());
    assert_eq!(status["stack"][0]["id"], id.as_str());
    assert_eq!(status["pending"], 2);
    assert_eq!(write_once(&fx.path("resolve"), b"again\n"), Ok(6));
    assert_eq!(calls.applied(), 2);
    assert_eq!(fx.read("last"), "applied on attempt 2\n");
    assert_eq!(fx.session.pending_count(), 1);
}

// ----- how messages are cut -------------------------------------------------

#[test]
fn an_8_kib_bash_echo_arrives_as_one_message_and_20_kib_in_one_write_too() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "big");
    let (_, untouched) = stage_recording(&fx.session, "bigger");
    let out = fx.bash("echo \"$(head -c 8191 /dev/zero | tr '\\0' r)\" > \"$D/resolve\"");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(untouched.reasons(), vec!["r".repeat(8191)]);
    assert_eq!(calls.applied(), 0, "one message applies one preview");
    let body = "s".repeat(20480);
    assert_eq!(write_once(&fx.path("resolve"), body.as_bytes()), Ok(20480));
    assert_eq!(calls.reasons(), vec![body]);
}

#[test]
fn printf_without_newline_dispatches_at_its_write() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let out = fx.sh("exec 3>\"$D/resolve\"; printf %s reason >&3; cat \"$D/last\"; exec 3>&-");
    assert_eq!(
        stdout(&out),
        "applied: edit\n",
        "dispatched before the close"
    );
    assert_eq!(calls.reasons(), vec!["reason".to_string()]);
}

#[test]
fn truncating_open_and_close_dispatch_nothing() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    assert!(fx.sh(": > \"$D/resolve\"").status.success());
    assert!(fx.sh("truncate -s 0 \"$D/resolve\"").status.success());
    let refused = fx.sh("truncate -s 5 \"$D/resolve\"");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Invalid argument"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(calls.applied(), 0);
    assert_eq!(fx.read("last"), "");
}

/// oh-my-pi's write tool writes in place: `open(O_WRONLY|O_CREAT)`, one
/// write, then `ftruncate(fd, len)`. That truncate changes nothing and
/// succeeds; any other size stays EINVAL. `O_CREAT|O_EXCL` on a device is
/// EEXIST, as on any existing file, and a stat after the write shows the
/// bytes written.
#[test]
fn an_in_place_writer_may_truncate_to_what_it_wrote() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let out = fx.python(
        r#"
import os
p = os.environ['D'] + '/resolve'
body = b'tests pass'
fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
print(os.write(fd, body))
os.ftruncate(fd, len(body))
print('truncated', os.fstat(fd).st_size)
try:
    os.ftruncate(fd, 3)
except OSError as e:
    print('ftruncate 3:', e.errno)
os.close(fd)
try:
    os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
except OSError as e:
    print('O_EXCL:', e.errno)
"#,
    );
    assert_eq!(
        stdout(&out),
        format!(
            "10\ntruncated 10\nftruncate 3: {}\nO_EXCL: {}\n",
            libc::EINVAL,
            libc::EEXIST
        ),
        "{out:?}"
    );
    assert_eq!(calls.reasons(), vec!["tests pass".to_string()]);
}

#[test]
fn append_and_offsets_are_ignored() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    assert!(fx.sh("echo appended >> \"$D/resolve\"").status.success());
    assert_eq!(calls.reasons(), vec!["appended".to_string()]);
    let (_, second) = stage_recording(&fx.session, "second");
    let py = fx.python("import os\nfd=os.open(os.environ['D']+'/resolve', os.O_WRONLY)\nprint(os.pwrite(fd, b'at offset', 4096))");
    assert_eq!(stdout(&py), "9\n");
    assert_eq!(second.reasons(), vec!["at offset".to_string()]);
}

#[test]
fn python_reads_the_usage_then_the_result_on_one_descriptor() {
    let fx = Fixture::new();
    stage_recording(&fx.session, "edit");
    let py = fx.python(
        "import os\nfd=os.open(os.environ['D']+'/resolve', os.O_RDWR)\nprint(os.read(fd, 4096).decode().strip())\nos.write(fd, b'looks right\\n')\nprint(os.read(fd, 4096).decode(), end='')",
    );
    assert_eq!(
        stdout(&py),
        format!("{}\napplied: edit\n", expected("usage-resolve", &fx.dir))
    );
}

// ----- the rest of the mount --------------------------------------------------

#[test]
fn nothing_can_be_created_removed_renamed_linked_or_chmodded() {
    // Beyond drafts (tests/drafts.rs): files a writer creates in the root
    // or an item's directory, and may rename onto a device.
    let fx = Fixture::new();
    for script in [
        "touch \"$D/pending/new\"",
        "mkdir \"$D/dir\"",
        "rm \"$D/status\"",
        "rm \"$D/resolve\"",
        "mv \"$D/resolve\" \"$D/moved\"",
        "ln -s \"$D/resolve\" \"$D/link\"",
        "ln \"$D/resolve\" \"$D/hard\"",
        "chmod 666 \"$D/resolve\"",
        "chown 1:1 \"$D/resolve\"",
        "touch \"$D/resolve\"",
        "mknod \"$D/fifo\" p",
    ] {
        let out = fx.sh(script);
        assert!(!out.status.success(), "{script} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Operation not permitted"),
            "{script}: {stderr}"
        );
    }
    let write_status = fx.sh("echo x > \"$D/status\"");
    assert!(!write_status.status.success());
    let listing = fx.sh("ls \"$D\"");
    assert_eq!(
        stdout(&listing),
        "events\nlast\nlog\npending\npropose\nreject\nreminder\nresolve\nsessions\nstage\nstatus\nstatus.json\n"
    );
}

#[test]
fn a_held_status_descriptor_rereads_fresh_from_offset_0() {
    let fx = Fixture::new();
    let mut child = fx
        .command("python3", "import os, sys\nfd = os.open(os.environ['D'] + '/status', os.O_RDONLY)\nprint(os.pread(fd, 4096, 0).decode().splitlines()[0], flush=True)\nsys.stdin.readline()\nprint(os.pread(fd, 4096, 0).decode().splitlines()[0], flush=True)")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let first = next_line(&mut out);
    stage_recording(&fx.session, "edit");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), b"\n").expect("go on");
    let second = next_line(&mut out);
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("pending: 0\n", "pending: 1\n")
    );
    child.wait().expect("python");
}

#[test]
fn status_files_are_always_fresh() {
    let fx = Fixture::new();
    assert_eq!(fx.read("reminder"), "");
    let size_before = std::fs::metadata(fx.path("status")).expect("stat").len();
    let (id, _) = stage_recording(&fx.session, "edit src/lib.rs");
    let status = fx.read("status");
    assert!(status.contains("pending: 1"), "{status}");
    assert!(
        status.contains(&format!("head: {id} (source: edit) edit src/lib.rs")),
        "{status}"
    );
    let size_after = std::fs::metadata(fx.path("status")).expect("stat").len();
    assert_eq!(
        size_after as usize,
        status.len(),
        "stat shows the fresh size"
    );
    assert_ne!(size_before, size_after);
    let line = expected_text("reminder", &fx.dir, &[("source-tool", "edit")]);
    assert_eq!(
        fx.read("reminder"),
        format!("<system-reminder>\n{line}\n</system-reminder>\n")
    );
    let json = fx.status_json();
    assert_eq!(json["pending"], 1);
    assert_eq!(json["planMode"], false);
    assert_eq!(json["stack"][0]["label"], "edit src/lib.rs");
    let cat = fx.sh("cat \"$D/status\"; echo go > \"$D/resolve\"; cat \"$D/status\"");
    let text = stdout(&cat);
    assert!(
        text.contains("pending: 1") && text.contains("pending: 0"),
        "{text}"
    );
}

// ----- the mount point: one mount at a time, removal from outside --------------

#[test]
fn of_two_threads_mounting_one_directory_at_once_exactly_one_mounts() {
    let (_tmp, dir) = temp_mount_point("xdev-twice-");
    require_fuse();
    for round in 0..20 {
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let mounts: Vec<_> = (0..2)
            .map(|_| {
                let (barrier, dir) = (Arc::clone(&barrier), dir.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    xdev::mount(&Session::new(), &dir, MountOptions::default())
                })
            })
            .collect();
        let (mounted, refused): (Vec<_>, Vec<_>) = mounts
            .into_iter()
            .map(|thread| thread.join().expect("mount thread"))
            .partition(Result::is_ok);
        assert_eq!((mounted.len(), refused.len()), (1, 1), "round {round}");
        assert!(
            matches!(refused[0], Err(xdev::MountError::AlreadyServed(_))),
            "round {round}: {:?}",
            refused[0]
        );
        for mount in mounted {
            mount.expect("mounted").unmount().expect("unmount");
        }
        assert!(!is_mounted(&dir), "round {round}");
    }
}

#[test]
fn a_lazy_unmount_from_outside_wakes_removed_and_the_running_decision_still_finishes() {
    let _quiet = quiet();
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (umount -l, mount -t tmpfs)"
    );
    let (mut fx, journal_file, _journal) = journaled(Duration::from_secs(30));
    let (id, slow, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = std::thread::spawn(move || write_once(&path, b"go"));
    fx.wait_until_deciding(&id);
    let mount = fx.mount.take().expect("mounted");
    assert!(!mount.is_removed());
    let unmounted = std::process::Command::new("umount")
        .arg("-l")
        .arg(&fx.dir)
        .status()
        .expect("umount -l");
    assert!(unmounted.success());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let removed = mount.removed();
    let woken =
        runtime.block_on(async { tokio::time::timeout(Duration::from_secs(20), removed).await });
    assert!(woken.is_ok(), "removed() completes after umount -l");
    assert!(mount.is_removed());
    // Something else is mounted there now: not the mount's to remove.
    let tmpfs = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "other", "--"])
        .arg(&fx.dir)
        .status()
        .expect("mount tmpfs");
    assert!(tmpfs.success());
    let unmounting = std::thread::spawn(move || mount.unmount());
    // The writer's descriptor still reaches the detached mount: it gets
    // the real outcome once the apply finishes within the grace period.
    assert_eq!(slow.applied(), 0);
    gate.notify_one();
    assert_eq!(writer.join().expect("writer"), Ok(2), "the real outcome");
    unmounting.join().expect("unmount").expect("unmounted");
    let still = is_mounted(&fx.dir);
    let _ = std::process::Command::new("umount").arg(&fx.dir).status();
    assert!(
        still,
        "the tmpfs mounted over the directory since is left alone"
    );
    let journal = std::fs::read_to_string(&journal_file).expect("journal file");
    assert!(
        journal.lines().any(|line| {
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|record| {
                record["event"] == "resolve"
                    && record["outcome"] == "ok"
                    && record["text"] == "gated apply done"
            })
        }),
        "the journal has the decision that finished: {journal}"
    );
}

// ----- never block the request loop -----------------------------------------

#[test]
fn a_slow_apply_does_not_delay_status_reads() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (id, calls, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let writer = std::thread::spawn(move || write_once(&path, b"go"));
    fx.wait_until_deciding(&id);
    // The apply waits for the gate: every read below is answered while it
    // runs, or the test would hang here. (How fast is the benchmark's job.)
    for _ in 0..5 {
        let out = fx.sh("cat \"$D/status\" >/dev/null && ls \"$D\" >/dev/null");
        assert!(out.status.success());
    }
    assert!(fx.read("status").contains("in progress: 1"));
    assert_eq!(calls.applied(), 0, "still applying");
    gate.notify_one();
    assert_eq!(writer.join().expect("writer"), Ok(2));
}

/// The slow apply of [`slow_write_waiting`] is still running; opening its
/// gate lets the waiting write finish, whole.
fn let_the_slow_write_finish(
    slow: &Calls,
    gate: &tokio::sync::Notify,
    blocked: std::thread::JoinHandle<WriteResult>,
) {
    assert_eq!(slow.applied(), 0, "the slow apply is still running");
    gate.notify_one();
    assert_eq!(blocked.join().expect("writer"), Ok(8));
}

/// Stages a gated preview and starts `echo "slow one" > resolve` on it;
/// returns once that write is waiting on the apply (the gate releases it).
fn slow_write_waiting(
    fx: &Fixture,
) -> (
    Arc<Calls>,
    Arc<tokio::sync::Notify>,
    std::thread::JoinHandle<WriteResult>,
) {
    let (_, slow, gate) = stage_gated(&fx.session, "slow");
    let path = fx.path("resolve");
    let blocked = std::thread::spawn(move || write_once(&path, b"slow one"));
    assert!(eventually(Duration::from_secs(10), || fx
        .session
        .in_progress_count()
        == 1));
    (slow, gate, blocked)
}

#[test]
fn writers_of_the_same_device_do_not_queue_behind_a_slow_one() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (slow, gate, blocked) = slow_write_waiting(&fx);
    // Later writers of the same device: shell `>` (O_TRUNC), python
    // O_WRONLY, and raw O_WRONLY|O_TRUNC, each answered at once.
    // The slow one waits for its gate, so each of these finishing at all
    // shows it did not queue behind it.
    for index in 0..3 {
        let (_, fast) = stage_recording(&fx.session, &format!("fast {index}"));
        let written = match index {
            0 => fx.sh("echo fast > \"$D/resolve\"").status.success(),
            1 => {
                let code = "import os\nfd = os.open(os.environ['D'] + '/resolve', os.O_WRONLY)\nprint(os.write(fd, b'fast'))";
                stdout(&fx.python(code)) == "4\n"
            }
            _ => write_once(&fx.path("resolve"), b"fast") == Ok(4),
        };
        assert!(written, "writer {index}");
        assert_eq!(fast.applied(), 1);
    }
    let_the_slow_write_finish(&slow, &gate, blocked);
}

/// Two descriptors opened for writing before either writes (two shells'
/// `>` at the same moment, or `exec 3>resolve 4>resolve`) lead to inodes of
/// their own: the second write decides at once while the first waits for
/// a slow apply, instead of queueing behind it in the kernel, where no
/// signal reaches it.
#[test]
fn descriptors_opened_before_either_writes_decide_side_by_side() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (_, fast) = stage_recording(&fx.session, "fast");
    let (slow_id, slow, gate) = stage_gated(&fx.session, "slow");
    let flags = libc::O_WRONLY | libc::O_TRUNC;
    let first = Fd::open(&fx.path("resolve"), flags).expect("open the first");
    let second = Fd::open(&fx.path("resolve"), flags).expect("open the second");
    let blocked = std::thread::spawn(move || first.write(b"slow one"));
    fx.wait_until_deciding(&slow_id);
    let quick = std::thread::spawn(move || second.write(b"fast"));
    assert!(
        eventually(Duration::from_secs(10), || quick.is_finished()),
        "the second descriptor's write queued behind the slow one"
    );
    assert_eq!(quick.join().expect("second writer"), Ok(4));
    assert_eq!(fast.reasons(), ["fast"]);
    let_the_slow_write_finish(&slow, &gate, blocked);
}

#[test]
fn reopening_a_device_through_an_old_descriptor_while_a_write_waits_fails_at_once() {
    let _quiet = quiet();
    let fx = Fixture::new();
    // Opened before the write below waits: the device's inode at that time.
    let early = Fd::open(&fx.path("resolve"), libc::O_RDONLY).expect("open");
    let (slow, gate, blocked) = slow_write_waiting(&fx);
    // That inode is locked in the kernel by the waiting write; reopened for
    // writing through /proc it would queue behind it, uninterruptibly.
    let old = std::path::PathBuf::from(format!("/proc/self/fd/{}", early.0));
    // Answered while the slow write still waits for its gate.
    let reopened = Fd::open(&old, libc::O_WRONLY | libc::O_TRUNC);
    assert_eq!(reopened.err(), Some(libc::ESTALE));
    // The name leads to the device's fresh inode.
    let (_, fast) = stage_recording(&fx.session, "fast");
    assert_eq!(write_once(&fx.path("resolve"), b"fast"), Ok(4));
    assert_eq!(fast.applied(), 1);
    let_the_slow_write_finish(&slow, &gate, blocked);
}

#[test]
fn a_writer_who_saw_a_slow_write_in_status_or_pending_is_never_queued_behind_it() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let listed = |id: &str| {
        std::fs::read_dir(fx.path("pending"))
            .expect("list pending/")
            .any(|entry| entry.map(|e| e.file_name() == id).unwrap_or(false))
    };
    for round in 0..40 {
        let (slow_id, _slow, gate) = stage_gated(&fx.session, "slow");
        let path = fx.path("resolve");
        let blocked = std::thread::spawn(move || write_once(&path, b"slow"));
        // Watch as fast as possible (status, or the slow item leaving
        // pending/): the earliest moment the slow write shows is the
        // riskiest moment to open the device.
        let seen = Instant::now();
        let showing = |round: usize| {
            if round % 2 == 0 {
                fx.read("status").contains("in progress: 1")
            } else {
                !listed(&slow_id)
            }
        };
        while !showing(round) {
            assert!(seen.elapsed() < Duration::from_secs(20), "round {round}");
        }
        let (_, fast) = stage_recording(&fx.session, "fast");
        let (done, answer) = std::sync::mpsc::channel();
        let path = fx.path("resolve");
        std::thread::spawn(move || {
            let _ = done.send(write_once(&path, b"fast"));
        });
        let written = answer.recv_timeout(Duration::from_secs(3));
        // Let the slow write finish either way, so a failure cannot hang.
        gate.notify_one();
        assert_eq!(
            written,
            Ok(Ok(4)),
            "round {round}: the second writer queued behind the slow one"
        );
        assert_eq!(fast.applied(), 1);
        assert_eq!(blocked.join().expect("writer"), Ok(4));
    }
}

// ----- concurrency ------------------------------------------------------------

#[test]
fn eight_threads_apply_8000_previews_exactly_once() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let counts: Arc<Vec<AtomicUsize>> = Arc::new((0..8000).map(|_| AtomicUsize::new(0)).collect());
    for index in 0..8000 {
        let counts = Arc::clone(&counts);
        fx.session.queue_resolve_handler(
            format!("preview {index}"),
            "edit",
            apply_fn(move |_, _| {
                counts[index].fetch_add(1, Ordering::SeqCst);
                async { Ok(ToolResult::ok("ok")) }
            }),
            None,
        );
    }
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let path = fx.path("resolve");
            std::thread::spawn(move || {
                (0..1000)
                    .filter(|_| write_once(&path, b"go\n") != Ok(3))
                    .count()
            })
        })
        .collect();
    let errors: usize = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert_eq!(errors, 0);
    assert!(counts.iter().all(|count| count.load(Ordering::SeqCst) == 1));
    assert_eq!(fx.session.pending_count(), 0);
}

#[test]
fn eight_writers_racing_on_one_preview_one_wins() {
    let fx = Fixture::new();
    let (_, calls) = stage_slow(&fx.session, "only", Duration::from_millis(100));
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let path = fx.path("resolve");
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let fd = Fd::open(&path, libc::O_WRONLY | libc::O_TRUNC).expect("open");
                barrier.wait();
                fd.write(b"mine")
            })
        })
        .collect();
    let results: Vec<_> = writers
        .into_iter()
        .map(|w| w.join().expect("writer"))
        .collect();
    assert_eq!(
        results.iter().filter(|r| **r == Ok(4)).count(),
        1,
        "{results:?}"
    );
    assert_eq!(
        results.iter().filter(|r| **r == Err(libc::ENOENT)).count(),
        7,
        "{results:?}"
    );
    assert_eq!(calls.applied(), 1);
}

// ----- blocked writers stay killable ------------------------------------------

#[test]
fn a_blocked_writer_dies_promptly_on_sigint_and_sigkill() {
    let _quiet = quiet();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let fx = Fixture::new();
        let (id, calls, gate) = stage_gated(&fx.session, "slow");
        let mut child = fx
            .command("sh", "echo go > \"$D/resolve\"")
            .spawn()
            .expect("spawn writer");
        assert!(eventually(Duration::from_secs(10), || fx
            .session
            .in_progress_count()
            == 1));
        signal_and_see_it_go(&mut child, signal, "writer");
        assert_eq!(
            calls.applied(),
            0,
            "the apply is not cancelled, only no longer awaited"
        );
        let left = fx.log_records().pop().expect("a record");
        assert_eq!(
            (&left["event"], &left["id"], &left["errno"]),
            (
                &serde_json::json!("writer-left"),
                &serde_json::json!(id),
                &serde_json::json!("EINTR")
            ),
            "signal {signal}"
        );
        open_gate(&fx.session, &id, &calls, &gate);
        assert!(
            eventually(Duration::from_secs(10), || last_json(&fx)["ok"] == true),
            "the apply's own outcome is recorded when it ends"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_can_mount_and_unmount_inside_async_code() {
    let fx = Fixture::new();
    let (_, calls) = stage_recording(&fx.session, "edit");
    let path = fx.path("resolve");
    let written = tokio::task::spawn_blocking(move || write_once(&path, b"from async"))
        .await
        .expect("writer");
    assert_eq!(written, Ok(10));
    assert_eq!(calls.applied(), 1);
    drop(fx); // unmounts from inside the runtime without panicking
}

/// What user 65534 (nobody) gets opening each of `files` under the mount:
/// `ok` and whether the content holds `secret`, or the errno name.
fn as_nobody(fx: &Fixture, files: &[&str], secret: &str) -> Vec<String> {
    let code = r#"
import errno, os, sys
secret = sys.argv[1]
for name in sys.argv[2:]:
    path = os.path.join(os.environ["D"], name)
    if os.path.isdir(path):
        print(name, "listed", len(os.listdir(path)))
        continue
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
        continue
    # `events` blocks until the next record: opening it is the test.
    data = b"" if name == "events" else os.read(fd, 1 << 20)
    os.close(fd)
    print(name, "ok", "secret" if secret.encode() in data else "clean")
"#;
    let output = std::process::Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-c", code, secret])
        .args(files)
        .env("D", &fx.dir)
        .output()
        .expect("run setpriv");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout(&output).lines().map(str::to_string).collect()
}

/// Every source of private text on one mount: a reject reason quoted by
/// the default discard text, a handler's result text, a pending item's
/// label, detail, diff and cwd, and a plan reviewer's feedback.
fn fill_with_secrets(fx: &Fixture, desk: &xdev::PlanDesk, plans: &std::path::Path, secret: &str) {
    // No reject callback: the default text quotes the reason.
    stage_counted(&fx.session, "edit", |_| async {
        Ok(ToolResult::ok("done"))
    });
    assert!(write_once(&fx.path("reject"), secret.as_bytes()).is_ok());
    let answer = format!("applied with {secret}");
    stage_counted(&fx.session, "apply", move |_| {
        let answer = answer.clone();
        async move { Ok(ToolResult::ok(answer)) }
    });
    assert!(write_once(&fx.path("resolve"), b"go").is_ok());
    fx.session.stage(
        format!("write .env ({secret})"),
        "write",
        apply_fn(|_, _| async { Ok(ToolResult::ok("written")) }),
        None,
        StageOptions {
            id: Some("pending-action:write:secret".to_string()),
            detail: Some(format!("{{\"content\": \"{secret}\"}}")),
            diff: Some(format!(
                "--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+{secret}\n"
            )),
            cwd: Some(format!("/work/{secret}")),
            origin: None,
        },
    );
    desk.enter();
    std::fs::write(plans.join("auth-plan.md"), "# plan").expect("plan file");
    let propose = fx.path("propose");
    let proposer = std::thread::spawn(move || write_once(&propose, b"auth"));
    assert!(eventually(Duration::from_secs(10), || fx
        .read("plan/status")
        .contains("auth-plan.md")));
    let refine = format!("refine {secret}");
    assert!(write_once(&fx.path("plan/ctl"), refine.as_bytes()).is_ok());
    assert!(proposer.join().expect("proposer").is_ok());
}

#[test]
fn other_users_read_nothing_of_the_session_unless_the_owner_shares_it() {
    let secret = "API_KEY=hunter2";
    let files = [
        "log",
        "events",
        "last",
        "status",
        "status.json",
        "reminder",
        "plan/status",
        "pending/pending-action:write:secret/label",
        "pending/pending-action:write:secret/source",
        "pending/pending-action:write:secret/detail",
        "pending/pending-action:write:secret/diff",
        "pending/pending-action:write:secret/cwd",
        "pending",
    ];
    for share_journal in [false, true] {
        let plans = tempfile::tempdir().expect("plan dir");
        let session = xdev::Session::new();
        let desk = xdev::PlanDesk::new(
            session.clone(),
            plans.path().to_path_buf(),
            xdev::PlanHandlerKind::Review,
            None,
        );
        let fx = Fixture::with_session(
            session,
            xdev::MountOptions {
                allow_other: true,
                share_journal,
                plan: Some(desk.clone()),
                ..xdev::MountOptions::default()
            },
        );
        // The fixture's temp dir is private (0700); nobody must reach the mount.
        let parent = fx.dir.parent().expect("temp dir");
        std::fs::set_permissions(parent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod temp dir");
        fill_with_secrets(&fx, &desk, plans.path(), secret);
        let seen = as_nobody(&fx, &files, secret);
        let (opened, listed) = seen.split_at(files.len() - 1);
        assert_eq!(listed, ["pending listed 1"], "directories list ids");
        if share_journal {
            assert!(
                opened.iter().all(|line| line.contains(" ok ")),
                "shared: every file is readable: {opened:?}"
            );
        } else {
            let refused: Vec<String> = files[..files.len() - 1]
                .iter()
                .map(|name| format!("{name} EACCES"))
                .collect();
            assert_eq!(opened, refused, "nothing of the session for others");
        }
        // The owner reads everything, in full.
        assert!(fx.read("log").contains(secret));
        assert!(fx.read("last").contains(secret));
        assert!(fx.read("plan/status").contains(secret));
        let detail = fx.read("pending/pending-action:write:secret/detail");
        assert!(detail.contains(secret));
        let diff = fx.read("pending/pending-action:write:secret/diff");
        assert!(diff.contains(&format!("+{secret}\n")), "{diff}");
        let mode = std::fs::metadata(fx.path("pending/pending-action:write:secret/diff"))
            .expect("stat diff");
        let detail_mode = std::fs::metadata(fx.path("pending/pending-action:write:secret/detail"))
            .expect("stat detail");
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()),
            std::os::unix::fs::PermissionsExt::mode(&detail_mode.permissions()),
            "diff is kept as detail is"
        );
        assert_eq!(
            fx.read("pending/pending-action:write:secret/cwd"),
            format!("/work/{secret}\n")
        );
        let head = &fx.status_json()["stack"][0];
        assert_eq!(head["cwd"], format!("/work/{secret}").as_str(), "{head}");
    }
}

/// A small tmpfs mounted for one test (needs root), unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn new(size: &str) -> SmallDisk {
        let dir = tempfile::Builder::new()
            .prefix("xdev-disk-")
            .tempdir()
            .expect("temp dir");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "mounting a tmpfs needs root");
        SmallDisk { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Fills the disk with `name` until a write fails with ENOSPC.
    fn fill(&self, name: &str) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.path(name)).expect("filler");
        let chunk = [b'x'; 512];
        loop {
            match filler.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) => {
                    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
                    break;
                }
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// Every line of the journal file, parsed: a torn line fails the test.
fn journal_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("journal file");
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    text.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("torn line {line:?}: {err}"))
        })
        .collect()
}

#[test]
fn a_full_disk_refuses_decisions_before_they_run_and_tears_no_line() {
    let disk = SmallDisk::new("64k");
    let journal = disk.path("journal.jsonl");
    // An earlier session's record fills the journal's first page exactly,
    // so the next record needs a page of its own.
    let padding = "x".repeat(4096 - "{\"event\":\"earlier\",\"text\":\"\"}\n".len());
    std::fs::write(
        &journal,
        format!("{{\"event\":\"earlier\",\"text\":\"{padding}\"}}\n"),
    )
    .expect("earlier journal");
    let fx = Fixture::with_options(xdev::MountOptions {
        journal_file: Some(journal.clone()),
        ..xdev::MountOptions::default()
    });
    assert!(fx.read("status").ends_with("journal: ok\n"));
    disk.fill("filler");
    let (id, calls) = stage_counted(&fx.session, "migrate", |_| async {
        Ok(ToolResult::ok("migrated"))
    });

    // Write ahead: the intent cannot be recorded, so nothing runs.
    assert_eq!(write_once(&fx.path("resolve"), b"go"), Err(libc::ENOSPC));
    assert_eq!(calls.applied(), 0, "the apply callback never ran");
    assert_eq!(
        fx.session.pending_count(),
        1,
        "the preview is still pending"
    );
    assert_eq!(
        fx.read("last"),
        "Refused: the journal could not record this decision (No space left on device); nothing was applied or discarded.\n"
    );
    assert!(
        fx.read("status")
            .ends_with("journal: failing (No space left on device)\n"),
        "{}",
        fx.read("status")
    );
    // Decisions with nothing to decide need no intent: they still answer.
    fx.session.withdraw(&id, "test");
    for _ in 0..30 {
        assert_eq!(write_once(&fx.path("reject"), b"nothing"), Ok(7));
    }
    assert!(journal_lines(&journal)
        .iter()
        .all(|line| line["event"] != "intent"));

    // Room again: the next record says what was lost, then all goes on.
    std::fs::remove_file(disk.path("filler")).expect("free the disk");
    let (id, calls) = stage_counted(&fx.session, "migrate again", |_| async {
        Ok(ToolResult::ok("migrated"))
    });
    assert_eq!(write_once(&fx.path("resolve"), b"go"), Ok(2));
    assert_eq!(calls.applied(), 1);
    assert!(fx.read("status").ends_with("journal: ok\n"));
    let lines = journal_lines(&journal);
    let lost = lines
        .iter()
        .find(|line| line["event"] == "lost")
        .expect("a lost record");
    assert!(
        lost["text"].as_str().is_some_and(|text| text
            .starts_with("33 record(s) could not be written to the journal file: staged")),
        "{lost}"
    );
    let of_id: Vec<&str> = lines
        .iter()
        .filter(|line| line["id"] == id.as_str())
        .filter_map(|line| line["event"].as_str())
        .collect();
    assert_eq!(of_id, ["staged", "intent", "resolve"]);

    // Nearly full: records fail at a page boundary, none is torn.
    disk.fill("filler");
    std::fs::remove_file(disk.path("filler")).expect("free a little");
    disk.fill("filler");
    for n in 0..200 {
        let reason = format!("reject number {n} with a longer reason to fill pages faster");
        assert!(write_once(&fx.path("reject"), reason.as_bytes()).is_ok());
    }
    journal_lines(&journal);
}

#[test]
fn records_staged_in_a_burst_onto_a_nearly_full_disk_are_kept_whole_or_told_lost() {
    const STAGED: usize = 300;
    let disk = SmallDisk::new("64k");
    let journal = disk.path("journal.jsonl");
    // An earlier record leaves most of the journal's first page free.
    std::fs::write(&journal, "{\"event\":\"earlier\"}\n").expect("earlier journal");
    let fx = Fixture::with_options(xdev::MountOptions {
        journal_file: Some(journal.clone()),
        ..xdev::MountOptions::default()
    });
    disk.fill("filler");
    // Staged in one burst: the journal's thread writes them in groups of
    // whatever has queued, and the free page runs out inside one of them.
    for n in 0..STAGED {
        stage_counted(
            &fx.session,
            &format!("edit {n}, with a label long enough to fill a page soon"),
            |_| async { Ok(ToolResult::ok("")) },
        );
    }
    let mount = fx.mount.as_ref().expect("mounted");
    let _ = mount.journal().flushed().wait();
    let kept = journal_lines(&journal)
        .iter()
        .filter(|line| line["event"] == "staged")
        .count();
    assert!(
        0 < kept && kept < STAGED,
        "{kept} of {STAGED} staged records fit"
    );

    // Room again: the next record says how many went missing, no more and
    // no fewer than the file lacks.
    std::fs::remove_file(disk.path("filler")).expect("free the disk");
    assert_eq!(write_once(&fx.path("reject"), b"room again"), Ok(10));
    let lines = journal_lines(&journal);
    let lost = lines
        .iter()
        .find(|line| line["event"] == "lost")
        .expect("a lost record");
    let told = format!(
        "{} record(s) could not be written to the journal file: staged",
        STAGED - kept
    );
    assert!(
        lost["text"]
            .as_str()
            .is_some_and(|text| text.starts_with(&told)),
        "{lost}"
    );
}

// ----- odd and hostile input ---------------------------------------------------

#[test]
fn names_over_255_bytes_are_enametoolong_everywhere() {
    let fx = Fixture::new();
    let long = "d".repeat(256);
    let out = fx.python(&format!(
        r#"
import errno, os
D = os.environ["D"]
name = "{long}"
for what, call in [
    ("create", lambda: os.open(os.path.join(D, name), os.O_CREAT | os.O_WRONLY, 0o600)),
    ("stat", lambda: os.stat(os.path.join(D, name))),
    ("rename", lambda: os.rename(os.path.join(D, "status"), os.path.join(D, name))),
]:
    try:
        call()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
print("statfs", os.statvfs(D).f_namemax)
"#
    ));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        "create ENAMETOOLONG\nstat ENAMETOOLONG\nrename ENAMETOOLONG\nstatfs 255\n"
    );
    let fits = "d".repeat(255);
    let made = fx.sh(&format!("echo draft > \"$D/{fits}\" && rm \"$D/{fits}\""));
    assert!(made.status.success(), "255 bytes fit: {made:?}");
}

#[test]
fn fallocate_on_a_device_is_refused_and_decides_nothing() {
    let fx = Fixture::new();
    let (id, calls) = stage_recording(&fx.session, "edit");
    // util-linux asks the kernel directly.
    let direct = fx.sh("fallocate -l 4096 \"$D/resolve\"");
    assert!(!direct.status.success());
    assert!(
        String::from_utf8_lossy(&direct.stderr).contains("Operation not supported"),
        "{direct:?}"
    );
    // glibc's posix_fallocate falls back to reading and writing NUL bytes,
    // which no device takes as a message.
    let out = fx.python(
        r#"
import errno, os
for flags in (os.O_WRONLY, os.O_RDWR):
    fd = os.open(os.environ["D"] + "/resolve", flags)
    try:
        os.posix_fallocate(fd, 0, 65536)
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
"#,
    );
    assert_eq!(stdout(&out), "EBADF\nEINVAL\n", "{out:?}");
    assert_eq!(calls.applied(), 0);
    assert!(fx.session.is_pending(&id), "nothing was decided");
    assert_eq!(
        write_once(&fx.path("resolve"), b"go\0on"),
        Err(libc::EINVAL),
        "a NUL byte is never part of a reason"
    );
    assert!(fx.read("last").contains("NUL byte"));
}

#[test]
fn another_users_mount_without_allow_other_is_named_as_such_with_the_fix() {
    let fx = Fixture::new();
    let parent = fx.dir.parent().expect("parent");
    std::fs::set_permissions(parent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_xdev"))
        .args(["status", "--mount"])
        .arg(&fx.dir)
        .output()
        .expect("setpriv");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "xdev: EACCES: the xdev mount at {} lets only its owner in: it was mounted without --allow-other; its owner can start it with `xdev mount --allow-other` (and --share-journal to let others read its files)\n",
            fx.dir.display()
        )
    );
}

#[test]
fn unmount_returns_once_the_journal_file_holds_every_record_made_so_far() {
    let (mut fx, journal_file, _journal) = journaled(xdev::MountOptions::default().grace);
    for n in 0..200 {
        stage_recording(&fx.session, &format!("edit {n}"));
    }
    fx.mount
        .take()
        .expect("mounted")
        .unmount()
        .expect("unmount");
    // Read at once: the process could exit here, and nothing may be lost.
    let staged = std::fs::read_to_string(&journal_file)
        .expect("journal file")
        .lines()
        .filter(|line| line.contains("\"event\":\"staged\""))
        .count();
    assert_eq!(staged, 200, "every staged record is in the file");
}
