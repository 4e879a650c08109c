//! Several agent sessions on one mount, against real writes: each session's
//! `sessions/<session-id>/` decides its own previews, the root devices
//! refuse while more than one session waits, and two real `xdev hook`
//! processes are answered each through its own session.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use xdev::session::Origin;
use xdev::{apply_fn, Session, StageOptions, ToolResult};

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// Stages a preview of agent session `agent` (as `xdev hook` would) whose
/// callbacks the test counts.
fn stage_in(session: &Session, agent: &str, label: &str) -> (String, Arc<Calls>) {
    let (calls, apply, reject) = counting_callbacks(label);
    let id = format!("pending-action:edit:{}-{label}", agent.replace('/', "_"));
    let extras = StageOptions {
        origin: Some(Origin {
            session_id: Some(agent.to_string()),
            tool_use_id: Some(format!("toolu-{label}")),
        }),
        ..StageOptions::default()
    };
    session.stage(
        label,
        "edit",
        apply,
        Some(reject),
        StageOptions {
            id: Some(id.clone()),
            ..extras
        },
    );
    (id, calls)
}

fn pending_ids(session: &Session) -> Vec<String> {
    session.pending().into_iter().map(|info| info.id).collect()
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[test]
fn each_session_decides_its_own_preview_through_its_own_resolve() {
    let fx = Fixture::new();
    let (a, a_calls) = stage_in(&fx.session, "s-a", "edit a.rs");
    let (b, b_calls) = stage_in(&fx.session, "s-b", "edit b.rs");
    assert_eq!(sorted(dir_names(&fx.path("sessions"))), ["s-a", "s-b"]);
    assert_eq!(
        sorted(dir_names(&fx.path("sessions/s-a"))),
        ["pending", "reject", "resolve", "status"]
    );
    assert_eq!(dir_names(&fx.path("sessions/s-a/pending")), [a.as_str()]);
    assert_eq!(
        fx.read("sessions/s-a/status"),
        format!("session: s-a\npending: 1\nhead: {a} (source: edit) edit a.rs\n")
    );

    assert_eq!(
        write_once(&fx.path("sessions/s-a/resolve"), b"a is fine\n"),
        Ok(10)
    );
    assert_eq!((a_calls.applied(), b_calls.applied()), (1, 0));
    assert_eq!(a_calls.reasons(), ["a is fine"]);
    assert_eq!(
        pending_ids(&fx.session),
        [b.as_str()],
        "s-b's stays untouched"
    );
    assert_eq!(fx.read("last"), "applied: edit a.rs\n");
    assert_eq!(fx.status_json()["last"]["device"], "sessions/s-a/resolve");
    let decided = fx
        .log_records()
        .into_iter()
        .rev()
        .find(|record| record["id"] == a.as_str() && record["event"] != "staged")
        .expect("a record of a's decision");
    assert_eq!(decided["device"], "sessions/s-a/resolve");
    assert_eq!(dir_names(&fx.path("sessions")), ["s-b"]);

    let reject = Fd::open(&fx.path("sessions/s-b/reject"), libc::O_RDWR).expect("open");
    assert_eq!(reject.write(b"no"), Ok(2));
    assert_eq!(reject.read_to_string(), "rejected: edit b.rs\n");
    assert_eq!((a_calls.applied(), b_calls.rejected()), (1, 1));
    assert!(dir_names(&fx.path("sessions")).is_empty());

    // With nothing pending, a session's devices answer as the root's do.
    assert_eq!(
        write_once(&fx.path("sessions/s-a/resolve"), b"again"),
        Err(libc::ENOENT)
    );
    assert_eq!(
        fx.read("last"),
        format!("{}\n", expected("nothing-to-resolve", &fx.dir))
    );
}

#[test]
fn a_sessions_pending_items_decide_that_item() {
    let fx = Fixture::new();
    let (older, older_calls) = stage_in(&fx.session, "s-a", "older");
    let (newer, newer_calls) = stage_in(&fx.session, "s-a", "newer");
    let (other, _) = stage_in(&fx.session, "s-b", "other");
    assert_eq!(
        dir_names(&fx.path("sessions/s-a/pending")),
        [newer.clone(), older.clone()],
        "head first, and only s-a's"
    );
    assert!(!fx.path(&format!("sessions/s-a/pending/{other}")).exists());
    assert_eq!(
        fx.read(&format!("sessions/s-a/pending/{older}/label")),
        "older\n"
    );
    let item = fx.path(&format!("sessions/s-a/pending/{older}/resolve"));
    assert_eq!(write_once(&item, b"the older one"), Ok(13));
    assert_eq!((older_calls.applied(), newer_calls.applied()), (1, 0));
    assert_eq!(pending_ids(&fx.session), [other, newer]);
}

#[test]
fn the_root_resolve_works_as_before_with_one_session_and_refuses_with_two() {
    let fx = Fixture::new();
    let (a, a_calls) = stage_in(&fx.session, "s-a", "edit a.rs");
    assert_eq!(write_once(&fx.path("resolve"), b"ok"), Ok(2));
    assert_eq!(
        a_calls.applied(),
        1,
        "one session: the root decides as before"
    );
    assert!(!fx.session.is_pending(&a));

    let (_, a_calls) = stage_in(&fx.session, "s-a", "edit a2.rs");
    let (_, b_calls) = stage_in(&fx.session, "s-b", "edit b.rs");
    let before = pending_ids(&fx.session);
    for device in ["resolve", "reject"] {
        let fd = Fd::open(&fx.path(device), libc::O_RDWR).expect("open");
        assert_eq!(fd.write(b"ok"), Err(libc::EBUSY), "{device}");
        let text = fd.read_to_string();
        let dir = fx.dir.display();
        for named in [
            "(s-a, s-b)".to_string(),
            format!("{dir}/sessions/s-a/{device}"),
            format!("{dir}/sessions/s-b/{device}"),
        ] {
            assert!(text.contains(&named), "{named} not in {text}");
        }
        assert_eq!(fx.read("last"), text);
        assert_eq!(pending_ids(&fx.session), before, "nothing decided");
    }
    assert_eq!((a_calls.applied(), b_calls.applied()), (0, 0));
    assert_eq!((a_calls.rejected(), b_calls.rejected()), (0, 0));

    let status = fx.status_json();
    let sessions = status["sessions"].as_array().expect("a sessions array");
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["id"], "s-a");
    assert_eq!(sessions[0]["pending"], 1);
    assert_eq!(sessions[0]["head"]["label"], "edit a2.rs");
    assert!(fx.read("status").contains("session: s-b pending: 1 head: "));
}

#[test]
fn a_thousand_sessions_are_listed() {
    let fx = Fixture::new();
    for n in 0..1000 {
        stage_in(&fx.session, &format!("session-{n:04}"), "edit");
    }
    let names = dir_names(&fx.path("sessions"));
    assert_eq!(names.len(), 1000);
    assert_eq!(sorted(names)[999], "session-0999");
    let ls = fx.sh("ls \"$D/sessions\" | wc -l");
    assert_eq!(String::from_utf8_lossy(&ls.stdout).trim(), "1000");
}

#[test]
fn an_id_that_is_not_path_safe_is_never_listed() {
    let fx = Fixture::new();
    let (unsafe_id, _) = stage_in(&fx.session, "a/b", "edit");
    stage_in(&fx.session, "s-ok", "edit");
    assert_eq!(dir_names(&fx.path("sessions")), ["s-ok"]);
    // Its preview is still one session's among others: the root refuses,
    // naming it, and its own `pending/<id>/` decides it.
    let fd = Fd::open(&fx.path("resolve"), libc::O_RDWR).expect("open");
    assert_eq!(fd.write(b"ok"), Err(libc::EBUSY));
    let text = fd.read_to_string();
    assert!(text.contains("(a/b, s-ok)"), "{text}");
    assert!(!text.contains("sessions/a/b"), "{text}");
    let item = fx.path(&format!("pending/{unsafe_id}/resolve"));
    assert_eq!(write_once(&item, b"ok"), Ok(2));
    assert_eq!(write_once(&fx.path("resolve"), b"ok"), Ok(2));
}

// ----- two real hooks -------------------------------------------------------

/// `xdev hook --mount DIR` with `input` on its stdin.
fn spawn_hook(mount: &Path, input: &[u8]) -> KillOnDrop {
    spawn_hook_with(Command::new(env!("CARGO_BIN_EXE_xdev")), mount, &[], input)
}

/// The hook's exit code and stdout once it ends.
fn finish(mut hook: KillOnDrop) -> (i32, String) {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = hook.0.try_wait().expect("wait for xdev hook") {
            break status;
        }
        assert!(Instant::now() < deadline, "xdev hook did not end");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    if let Some(pipe) = hook.0.stdout.as_mut() {
        pipe.read_to_string(&mut stdout).expect("read stdout");
    }
    (status.code().unwrap_or(-1), stdout)
}

/// The recorded Claude Code `PreToolUse` event, as agent session `agent`.
fn event_of(agent: &str, tool_use_id: &str) -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/claude-pretooluse-bash.json");
    let mut event: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read the fixture")).expect("JSON");
    event["session_id"] = Value::from(agent);
    event["tool_use_id"] = Value::from(tool_use_id);
    serde_json::to_vec(&event).expect("JSON")
}

#[test]
fn two_hooks_of_two_sessions_are_answered_each_through_its_own_session() {
    let fx = Fixture::new();
    let first = spawn_hook(&fx.dir, &event_of("agent-one", "toolu_one"));
    let second = spawn_hook(&fx.dir, &event_of("agent-two", "toolu_two"));
    assert!(
        eventually(PATIENCE, || fx.session.pending_count() == 2),
        "both hooks staged"
    );
    assert_eq!(
        sorted(dir_names(&fx.path("sessions"))),
        ["agent-one", "agent-two"]
    );
    assert_eq!(
        write_once(&fx.path("resolve"), b"which one?"),
        Err(libc::EBUSY),
        "the root decides neither"
    );

    assert_eq!(
        write_once(&fx.path("sessions/agent-two/reject"), b"too risky"),
        Ok(9)
    );
    let (code, stdout) = finish(second);
    assert_eq!(code, 0);
    let denied: Value = serde_json::from_str(stdout.trim()).expect("JSON");
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(fx.session.pending_count(), 1, "agent-one still waits");

    assert_eq!(
        write_once(&fx.path("sessions/agent-one/resolve"), b"tests pass"),
        Ok(10)
    );
    let (code, stdout) = finish(first);
    assert_eq!(code, 0);
    let allowed: Value = serde_json::from_str(stdout.trim()).expect("JSON");
    assert_eq!(allowed["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(fx.session.pending_count(), 0);
}

/// A session's `resolve` with a slow apply under way: a second writer of it
/// is handed a fresh inode, as the root devices do, so it never queues in
/// the kernel behind the first (out of reach of its signals). It decides the
/// session's next preview at once; the first gets its own answer later. A
/// reopen of the old inode (through /proc) fails with ESTALE at once.
#[test]
fn a_second_writer_of_a_busy_session_device_gets_a_fresh_inode() {
    let _quiet = quiet();
    let fx = Fixture::new();
    let (_, older) = stage_in(&fx.session, "s-a", "older");
    let gate = Arc::new(tokio::sync::Notify::new());
    let opened = Arc::clone(&gate);
    fx.session.stage(
        "slow",
        "edit",
        apply_fn(move |_, _| {
            let gate = Arc::clone(&opened);
            async move {
                let _ = tokio::time::timeout(Duration::from_secs(60), gate.notified()).await;
                Ok(ToolResult::ok("slow apply done"))
            }
        }),
        None,
        StageOptions {
            id: Some("pending-action:edit:slow".to_string()),
            ..StageOptions {
                origin: Some(Origin {
                    session_id: Some("s-a".into()),
                    tool_use_id: None,
                }),
                ..StageOptions::default()
            }
        },
    );
    let device = fx.path("sessions/s-a/resolve");
    // Opened before the write below waits: the device's inode at that time.
    let early = Fd::open(&device, libc::O_RDONLY).expect("open");
    let first = {
        let device = device.clone();
        std::thread::spawn(move || write_once(&device, b"first"))
    };
    fx.wait_until_deciding("pending-action:edit:slow");
    let old = PathBuf::from(format!("/proc/self/fd/{}", early.0));
    let reopened = Fd::open(&old, libc::O_WRONLY | libc::O_TRUNC);
    assert_eq!(reopened.err(), Some(libc::ESTALE), "the old inode is busy");
    // `>` opens with O_TRUNC: what would have queued behind the first write.
    let second = fx.sh("echo second > \"$D/sessions/s-a/resolve\"");
    assert!(second.status.success(), "{second:?}");
    assert_eq!(
        older.applied(),
        1,
        "the second writer decided the next preview"
    );
    assert!(!first.is_finished(), "the first still waits for its apply");
    gate.notify_one();
    assert_eq!(first.join().expect("first writer"), Ok(5));
    assert_eq!(pending_ids(&fx.session), Vec::<String>::new());
    // The name still leads to a working device.
    let (_, again) = stage_in(&fx.session, "s-a", "again");
    assert_eq!(write_once(&device, b"again"), Ok(5));
    assert_eq!(again.applied(), 1);
}

#[test]
fn xdev_resolve_and_reject_take_a_session() {
    let fx = Fixture::new();
    let (_, a) = stage_in(&fx.session, "s-a", "edit a");
    let (_, b) = stage_in(&fx.session, "s-b", "edit b");
    let xdev = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xdev"))
            .args(args)
            .arg("--mount")
            .arg(&fx.dir)
            .output()
            .expect("xdev")
    };
    let applied = xdev(&["resolve", "--session", "s-a", "looks right"]);
    assert!(applied.status.success(), "{applied:?}");
    assert_eq!(
        String::from_utf8_lossy(&applied.stdout),
        "applied: edit a\n"
    );
    let rejected = xdev(&["reject", "--session", "s-b", "not now"]);
    assert!(rejected.status.success(), "{rejected:?}");
    assert_eq!((a.applied(), b.rejected()), (1, 1));
    let both = xdev(&["resolve", "--session", "s-a", "--id", "x", "go"]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "--id and --session exclude each other"
    );
}
