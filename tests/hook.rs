//! `xdev hook` against a real mount: recorded hook inputs of Claude Code and
//! Codex (tests/fixtures/hooks/, made from the agents' schemas) fed to the
//! real binary, decided by writes to the devices or the plan desk.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{dir_names, eventually, require_fuse, Fixture, KillOnDrop};
use serde_json::Value;
use xdev::{MountOptions, PlanDesk, PlanHandlerKind, Session};

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

const ALLOW_PRE: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"tests pass"}}"#;
const DENY_PRE: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"too risky"}}"#;
const ALLOW_REQUEST: &str = r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}"#;

fn fixture_input(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// `xdev hook --mount DIR ARGS` with `input` on its stdin.
fn spawn_hook(mount: &Path, args: &[&str], input: &[u8]) -> KillOnDrop {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xdev"))
        .arg("hook")
        .arg("--mount")
        .arg(mount)
        .args(args)
        .env_remove("XDEV_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xdev hook");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).expect("write the hook input");
    }
    KillOnDrop(child)
}

/// What a finished hook printed.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn finish(mut hook: KillOnDrop) -> Ran {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = hook.0.try_wait().expect("wait for xdev hook") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "xdev hook did not end within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // What a hook prints fits in a pipe's buffer: reading after the exit
    // cannot block.
    let read = |pipe: Option<&mut dyn Read>| {
        let mut text = String::new();
        if let Some(pipe) = pipe {
            pipe.read_to_string(&mut text).expect("read a pipe");
        }
        text
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: read(hook.0.stdout.as_mut().map(|pipe| pipe as &mut dyn Read)),
        stderr: read(hook.0.stderr.as_mut().map(|pipe| pipe as &mut dyn Read)),
    }
}

/// Runs the hook to the end with `input`, nothing deciding.
fn run_hook(mount: &Path, args: &[&str], input: &[u8]) -> Ran {
    finish(spawn_hook(mount, args, input))
}

/// The id of the one pending preview, once the hook has staged it.
fn staged_id(fixture: &Fixture) -> String {
    assert!(
        eventually(PATIENCE, || fixture.session.pending_count() == 1),
        "the hook staged nothing"
    );
    fixture.session.pending_head().expect("a head").id
}

/// Starts the hook on `input` and waits until it has staged its preview:
/// the hook, and the preview's id.
fn staged_hook(fixture: &Fixture, args: &[&str], input: &[u8]) -> (KillOnDrop, String) {
    let hook = spawn_hook(&fixture.dir, args, input);
    let id = staged_id(fixture);
    (hook, id)
}

/// Writes `reason` to the device at `path` and returns what the waiting
/// hook did.
fn answer(hook: KillOnDrop, path: &Path, reason: &str) -> Ran {
    write_device(path, reason);
    finish(hook)
}

/// Runs the hook on `input`, waits for its preview, answers it by writing
/// `reason` to `device`, and returns what the hook did.
fn decide_hook(fixture: &Fixture, input: &[u8], device: &str, reason: &str) -> Ran {
    let (hook, _id) = staged_hook(fixture, &[], input);
    answer(hook, &fixture.path(device), reason)
}

/// The hook ended with 0, printing the line `decision` and nothing on
/// stderr, and the mount's `last` reads `last`.
fn assert_decided(fixture: &Fixture, ran: &Ran, decision: &str, last: &str) {
    assert_eq!(
        (ran.code, ran.stdout.as_str(), ran.stderr.as_str()),
        (0, format!("{decision}\n").as_str(), "")
    );
    assert_eq!(fixture.read("last"), last);
}

/// The label of the preview at the head of the queue.
fn head_label(fixture: &Fixture) -> String {
    fixture.session.pending_head().expect("head").label
}

/// What the hook prints when a `PermissionRequest` is denied with `message`.
fn deny_request(message: &str) -> String {
    format!(
        "{{\"hookSpecificOutput\":{{\"hookEventName\":\"PermissionRequest\",\"decision\":{{\"behavior\":\"deny\",\"message\":\"{message}\"}}}}}}\n"
    )
}

fn write_device(path: &Path, reason: &str) {
    std::fs::write(path, reason).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
}

fn journal(fixture: &Fixture) -> Vec<Value> {
    fixture
        .read("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn record<'a>(records: &'a [Value], event: &str, id: &str) -> &'a Value {
    records
        .iter()
        .find(|record| record["event"] == event && record["id"] == id)
        .unwrap_or_else(|| panic!("no {event} record of {id} in {records:#?}"))
}

#[test]
fn claude_pre_tool_use_resolved_is_allowed_with_the_reason() {
    let fixture = Fixture::new();
    let input = fixture_input("claude-pretooluse-bash.json");
    let (hook, id) = staged_hook(&fixture, &[], &input);
    assert!(id.starts_with("pending-action:Bash:"), "{id}");
    let item = format!("pending/{id}");
    assert_eq!(
        fixture.read(&format!("{item}/label")),
        "Bash: rm -rf build/\n"
    );
    assert_eq!(
        fixture.read(&format!("{item}/detail")),
        "{\n  \"command\": \"rm -rf build/\",\n  \"description\": \"Remove the build directory\"\n}\n"
    );
    let mut listed = dir_names(&fixture.path(&item));
    listed.sort();
    assert_eq!(listed, ["detail", "label", "reject", "resolve", "source"]);

    let ran = answer(hook, &fixture.path("resolve"), "tests pass\n");
    assert_decided(
        &fixture,
        &ran,
        ALLOW_PRE,
        "Allowed: Bash: rm -rf build/. Reason: tests pass\n",
    );
    let records = journal(&fixture);
    for event in ["staged", "resolve"] {
        let found = record(&records, event, &id);
        assert_eq!(found["sessionId"], "0b7f4c1e-claude-session", "{event}");
        assert_eq!(found["toolUseId"], "toolu_01BashRm", "{event}");
    }
}

#[test]
fn claude_pre_tool_use_rejected_is_denied_with_the_reason_as_the_message() {
    let fixture = Fixture::new();
    let input = fixture_input("claude-pretooluse-bash.json");
    let (hook, id) = staged_hook(&fixture, &[], &input);
    let reject = fixture.path("pending").join(&id).join("reject");
    let ran = answer(hook, &reject, "too risky");
    assert_decided(
        &fixture,
        &ran,
        DENY_PRE,
        "Denied: Bash: rm -rf build/. Reason: too risky\n",
    );
    let decided = record(&journal(&fixture), &format!("pending/{id}/reject"), &id).clone();
    assert_eq!(decided["toolUseId"], "toolu_01BashRm");
}

#[test]
fn claude_permission_request_is_allowed_or_denied() {
    let fixture = Fixture::new();
    let input = fixture_input("claude-permissionrequest-write.json");
    let (hook, id) = staged_hook(&fixture, &[], &input);
    assert_eq!(head_label(&fixture), "Write: src/main.rs (3 lines)");
    assert!(id.starts_with("pending-action:Write:"), "{id}");
    let ran = answer(hook, &fixture.path("resolve"), "looks right");
    assert_eq!((ran.code, ran.stdout), (0, format!("{ALLOW_REQUEST}\n")));
    let records = journal(&fixture);
    let decided = record(&records, "resolve", &id);
    assert_eq!(decided["sessionId"], "0b7f4c1e-claude-session");
    assert!(
        decided.get("toolUseId").is_none(),
        "PermissionRequest carries no tool_use_id: {decided}"
    );

    let ran = decide_hook(&fixture, &input, "reject", "not that file");
    assert_eq!((ran.code, ran.stdout), (0, deny_request("not that file")));
}

#[test]
fn codex_permission_request_is_allowed_or_denied() {
    let fixture = Fixture::new();
    let input = fixture_input("codex-permissionrequest-bash.json");
    // `--agent claude` does not override what the input tells (`turn_id`).
    let (hook, id) = staged_hook(&fixture, &["--agent", "claude"], &input);
    assert_eq!(head_label(&fixture), "Bash: cargo publish");
    let ran = answer(hook, &fixture.path("resolve"), "release day");
    assert_eq!((ran.code, ran.stdout), (0, format!("{ALLOW_REQUEST}\n")));
    assert_eq!(
        record(&journal(&fixture), "staged", &id)["sessionId"],
        "019a-codex-session"
    );

    // An empty reason is valid on the devices; the model still reads why.
    let ran = decide_hook(&fixture, &input, "reject", "\n");
    assert_eq!(
        (ran.code, ran.stdout),
        (0, deny_request("Denied through xdev (no reason given)."))
    );
}

#[test]
fn a_deadline_prints_nothing_or_denies_and_withdraws_the_preview() {
    let fixture = Fixture::new();
    let input = fixture_input("claude-pretooluse-bash.json");
    let ran = run_hook(&fixture.dir, &["--deadline", "300ms"], &input);
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""));
    assert_eq!(
        ran.stderr,
        "xdev hook: no decision within 300ms; the preview was withdrawn and the agent asks as usual\n"
    );
    assert_eq!(fixture.session.pending_count(), 0);
    let records = journal(&fixture);
    let withdrawn = records
        .iter()
        .find(|record| record["event"] == "withdrawn")
        .expect("a withdrawn record");
    assert_eq!(withdrawn["outcome"], "timeout");
    assert_eq!(withdrawn["toolUseId"], "toolu_01BashRm");

    let ran = run_hook(
        &fixture.dir,
        &["--deadline", "300ms", "--on-timeout", "deny"],
        &input,
    );
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (
            0,
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"No decision came through xdev within 300ms; denied.\"}}\n"
        )
    );
    assert_eq!(fixture.session.pending_count(), 0);
}

#[test]
fn no_mount_prints_nothing_unless_strict() {
    require_fuse();
    let plain = tempfile::tempdir().expect("tmp");
    let input = fixture_input("claude-pretooluse-bash.json");
    let ran = run_hook(plain.path(), &[], &input);
    assert_eq!((ran.code, ran.stdout.as_str()), (0, ""));
    let shown = plain.path().display();
    assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .starts_with(&format!("xdev hook: no xdev mount at {shown}: "))
            && ran
                .stderr
                .ends_with("; printing nothing, so the agent asks as usual\n"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_dir(plain.path()).expect("ls").count(),
        0,
        "nothing was created in a plain directory"
    );

    let ran = run_hook(plain.path(), &["--strict"], &input);
    assert_eq!(ran.code, 0);
    let answer: Value = serde_json::from_str(&ran.stdout).expect("JSON");
    let output = &answer["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny");
    let reason = output["permissionDecisionReason"].as_str().expect("reason");
    assert!(
        reason.starts_with(&format!(
            "xdev could not ask for a decision: no xdev mount at {shown}"
        )),
        "{reason}"
    );
    assert!(ran.stderr.ends_with("; denying (--strict)\n"), "{ran:?}");
}

#[test]
fn bad_stdin_prints_nothing_and_says_why() {
    let fixture = Fixture::new();
    let cases: [(&[u8], &str); 4] = [
        (
            b"not json",
            "stdin is not JSON (expected ident at line 1 column 2)",
        ),
        (
            b"",
            "stdin is not JSON (EOF while parsing a value at line 1 column 0)",
        ),
        (
            br#"{"hook_event_name": "PreToolUse", "tool_input": {}}"#,
            "the hook input has no tool_name (a string)",
        ),
        (
            br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash"}"#,
            "the hook input has no tool_input",
        ),
    ];
    for (input, why) in cases {
        let ran = run_hook(&fixture.dir, &["--strict"], input);
        assert_eq!(
            (ran.code, ran.stdout.as_str(), ran.stderr),
            (
                0,
                "",
                format!("xdev hook: bad hook input: {why}; printing nothing, so the agent decides as usual\n")
            )
        );
    }
    assert_eq!(fixture.session.pending_count(), 0);
}

#[test]
fn killing_the_hook_withdraws_its_preview_within_a_second() {
    let fixture = Fixture::new();
    let input = fixture_input("claude-pretooluse-bash.json");
    let (mut hook, id) = staged_hook(&fixture, &[], &input);
    hook.0.kill().expect("SIGKILL the hook");
    let killed = Instant::now();
    assert!(
        eventually(Duration::from_secs(1), || fixture.session.pending_count()
            == 0),
        "still pending a second after SIGKILL"
    );
    assert!(killed.elapsed() < Duration::from_secs(1));
    let _ = hook.0.wait();
    let records = journal(&fixture);
    let withdrawn = record(&records, "withdrawn", &id);
    assert_eq!(withdrawn["reason"], "producer exited");
    assert_eq!(withdrawn["toolUseId"], "toolu_01BashRm");
    assert!(!fixture.path("pending").join(&id).exists());
}

#[test]
fn a_preview_without_detail_has_no_detail_file() {
    let fixture = Fixture::new();
    let (id, _calls) = common::stage(&fixture.session, "edit a.rs");
    let item = fixture.path("pending").join(&id);
    let listed = dir_names(&item);
    assert!(!listed.contains(&"detail".to_string()), "{listed:?}");
    let missing = std::fs::read(item.join("detail")).map_err(|err| err.raw_os_error());
    assert_eq!(missing, Err(Some(libc::ENOENT)));
}

/// A mount with a `review` plan desk writing plans into `plans`.
fn plan_fixture(plans: &Path) -> (Fixture, PlanDesk) {
    let session = Session::new();
    let desk = PlanDesk::new(
        session.clone(),
        plans.to_path_buf(),
        PlanHandlerKind::Review,
        None,
    );
    let options = MountOptions {
        plan: Some(desk.clone()),
        ..MountOptions::default()
    };
    (Fixture::with_session(session, options), desk)
}

fn wait_for_review(desk: &PlanDesk) -> PathBuf {
    assert!(
        eventually(PATIENCE, || desk.status().under_review.is_some()),
        "no plan came under review"
    );
    PathBuf::from(desk.status().under_review.expect("under review").path)
}

#[test]
fn exit_plan_mode_goes_to_the_plan_desk_approve_allows_and_refine_denies() {
    let plans = tempfile::tempdir().expect("plans");
    let (fixture, desk) = plan_fixture(plans.path());
    let input = fixture_input("claude-permissionrequest-exitplanmode.json");

    let hook = spawn_hook(&fixture.dir, &[], &input);
    let path = wait_for_review(&desk);
    assert_eq!(path, plans.path().join("Add-login-plan.md"));
    assert_eq!(
        std::fs::read_to_string(&path).expect("plan file"),
        "# Add login\n\n1. Add a /login route.\n2. Test it.\n"
    );
    assert!(fixture.session.plan_mode(), "the hook entered plan mode");
    assert_eq!(fixture.session.pending_count(), 0, "no preview for a plan");
    desk.refine("add tests first").expect("refine");
    let ran = finish(hook);
    assert_eq!(
        (ran.code, ran.stdout, ran.stderr),
        (0, deny_request("add tests first"), String::new())
    );

    let hook = spawn_hook(&fixture.dir, &[], &input);
    wait_for_review(&desk);
    desk.approve(None).expect("approve");
    let ran = finish(hook);
    assert_eq!((ran.code, ran.stdout), (0, format!("{ALLOW_REQUEST}\n")));
    assert!(!fixture.session.plan_mode(), "approval ends plan mode");
}

#[test]
fn exit_plan_mode_without_a_plan_desk_is_a_preview() {
    let fixture = Fixture::new();
    let exit_plan_mode = fixture_input("claude-permissionrequest-exitplanmode.json");
    let hook = staged_hook(&fixture, &[], &exit_plan_mode).0;
    assert_eq!(head_label(&fixture), "ExitPlanMode: Add login");
    let ran = answer(hook, &fixture.path("resolve"), "go");
    assert_eq!((ran.code, ran.stdout), (0, format!("{ALLOW_REQUEST}\n")));
}
