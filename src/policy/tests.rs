//! The policy's unit tests: loading, rule kinds, strictest wins.

use std::path::Path;

use serde_json::json;

use super::*;

const ORIGIN: &str = "/repo/.xdev/policy.json";

fn policy(permissions: Value) -> Policy {
    let text = json!({ "permissions": permissions }).to_string();
    Policy::parse(&text, Path::new(ORIGIN)).expect("loads")
}

fn refused(text: &str) -> String {
    Policy::parse(text, Path::new(ORIGIN))
        .expect_err("refused")
        .to_string()
}

fn effect(policy: &Policy, call: &Call) -> Effect {
    policy.evaluate(call).effect
}

#[test]
fn effects_order_by_strictness() {
    assert!(Effect::Allow < Effect::Ask && Effect::Ask < Effect::Deny);
    assert_eq!(
        [Effect::Ask, Effect::Deny, Effect::Allow].into_iter().max(),
        Some(Effect::Deny)
    );
}

#[test]
fn strictest_wins_and_no_match_asks() {
    let policy = policy(json!({
        "allow": ["Bash(git *)"],
        "ask": ["Bash(git push *)"],
        "deny": ["Bash(git push --force *)"],
    }));
    assert_eq!(effect(&policy, &Call::bash("git status")), Effect::Allow);
    assert_eq!(effect(&policy, &Call::bash("git push origin")), Effect::Ask);
    let forced = policy.evaluate(&Call::bash("git push --force origin"));
    assert_eq!(forced.effect, Effect::Deny);
    assert_eq!(forced.rule.as_deref(), Some("Bash(git push --force *)"));
    let none = policy.evaluate(&Call::bash("ls"));
    assert_eq!((none.effect, none.rule), (Effect::Ask, None));
}

#[test]
fn reasons_reach_the_evaluation() {
    let policy = policy(json!({
        "deny": [{"rule": "Bash(curl *)", "reason": "no network from the agent"}],
    }));
    let evaluation = policy.evaluate(&Call::bash("curl example.com"));
    assert_eq!(
        evaluation.reason.as_deref(),
        Some("no network from the agent")
    );
    let text = serde_json::to_value(&evaluation).expect("serialises");
    assert_eq!(text["effect"], "deny");
    assert_eq!(text["parts"][0]["effect"], "deny");
    assert!(text["parts"][0].get("deciders").is_none());
}

#[test]
fn a_substitution_is_judged_by_its_parts_and_a_variable_command_asks() {
    let ls_only = policy(json!({ "allow": ["Bash(ls *)"] }));
    assert_eq!(effect(&ls_only, &Call::bash("ls -la")), Effect::Allow);
    assert_eq!(effect(&ls_only, &Call::bash("ls $(rm -rf /)")), Effect::Ask);
    let no_rm = policy(json!({ "allow": ["Bash"], "deny": ["Bash(rm *)"] }));
    assert_eq!(effect(&no_rm, &Call::bash("ls $(rm -rf /)")), Effect::Deny);
    let anything = policy(json!({ "allow": ["Bash"] }));
    assert_eq!(effect(&anything, &Call::bash("$CMD x")), Effect::Ask);
    let denied = policy_with_deny_all();
    assert_eq!(effect(&denied, &Call::bash("ls $(rm -rf /)")), Effect::Deny);
}

fn policy_with_deny_all() -> Policy {
    policy(json!({ "deny": ["Bash"] }))
}

#[test]
fn legacy_prefix_and_word_boundaries() {
    let policy = policy(json!({ "allow": ["Bash(npm run test:*)", "Bash(ls *)"] }));
    for allowed in [
        "npm run test",
        "npm run test --watch",
        "npm run test:unit",
        "ls",
        "ls -la",
    ] {
        assert_eq!(
            effect(&policy, &Call::bash(allowed)),
            Effect::Allow,
            "{allowed}"
        );
    }
    for asked in ["npm run testing", "lsof", "npm run build"] {
        assert_eq!(effect(&policy, &Call::bash(asked)), Effect::Ask, "{asked}");
    }
}

#[test]
fn deny_catches_reordered_flags_allow_does_not_widen() {
    let policy = policy(json!({ "allow": ["Bash(ls -la)"], "deny": ["Bash(rm -rf *)"] }));
    for command in [
        "rm -rf /",
        "rm -fr /",
        "rm -r -f /",
        "rm --recursive --force /",
        "/bin/rm -Rf x",
    ] {
        assert_eq!(
            effect(&policy, &Call::bash(command)),
            Effect::Deny,
            "{command}"
        );
    }
    assert_eq!(effect(&policy, &Call::bash("ls -al")), Effect::Ask);
}

#[test]
fn codex_shell_inputs_are_commands() {
    let policy = policy(json!({ "allow": ["shell(cargo test *)"], "deny": ["Bash(rm *)"] }));
    let argv = Call::new("shell", json!({"command": ["bash", "-lc", "cargo test"]}));
    assert_eq!(effect(&policy, &argv), Effect::Allow);
    let exec = Call::new("exec_command", json!({"cmd": "cargo test -q"}));
    assert_eq!(effect(&policy, &exec), Effect::Allow);
    let shell_command = Call::new("shell_command", json!({"command": "rm x"}));
    assert_eq!(effect(&policy, &shell_command), Effect::Deny);
    let direct = Call::new("shell", json!({"command": ["rm", "-f", "x"]}));
    assert_eq!(effect(&policy, &direct), Effect::Deny);
    let broken = Call::new("shell", json!({"command": [1, 2]}));
    assert_eq!(effect(&policy, &broken), Effect::Ask);
}

#[test]
fn path_rules_and_anchors() {
    let home = std::env::var("HOME").unwrap_or_default();
    let policy = policy(json!({
        "allow": ["Edit(src/**)", "Read(//usr/share/**)", "Edit(/docs/**)"],
        "deny": ["Read(~/.ssh/**)", "Edit(.env)", "Read(//etc/shadow)"],
    }));
    let edit = |path: &str| Call::new("Edit", json!({"file_path": path}));
    let read = |path: &str| Call::new("Read", json!({"file_path": path}));
    assert_eq!(
        effect(&policy, &edit("/repo/.xdev/src/main.rs")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &edit("src/main.rs").in_dir("/work")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &edit("/repo/.xdev/src/main.rs").in_dir("/work")),
        Effect::Ask
    );
    assert_eq!(
        effect(&policy, &edit("/work/src/main.rs").in_dir("/work")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &edit("/repo/.xdev/docs/x.md")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &edit("/repo/.xdev/src/../../etc/passwd")),
        Effect::Ask,
        ".. is resolved lexically"
    );
    assert_eq!(
        effect(&policy, &edit("/w/a/b/.env").in_dir("/w")),
        Effect::Deny
    );
    assert_eq!(
        effect(&policy, &read("/usr/share/dict/words")),
        Effect::Allow
    );
    assert_eq!(effect(&policy, &read("/etc/shadow")), Effect::Deny);
    if !home.is_empty() {
        assert_eq!(
            effect(&policy, &read(&format!("{home}/.ssh/id_ed25519"))),
            Effect::Deny
        );
        assert_eq!(effect(&policy, &read("~/.ssh/config")), Effect::Deny);
    }
    let write = Call::new(
        "Write",
        json!({"file_path": "/repo/.xdev/src/new.rs", "content": "x"}),
    );
    assert_eq!(
        effect(&policy, &write),
        Effect::Allow,
        "Edit rules judge every file change"
    );
    let notebook = Call::new(
        "NotebookEdit",
        json!({"notebook_path": "/elsewhere/n.ipynb"}),
    );
    assert_eq!(effect(&policy, &notebook), Effect::Ask);
    assert_eq!(effect(&policy, &Call::new("Edit", json!({}))), Effect::Ask);
}

#[test]
fn apply_patch_edits_every_file_it_names() {
    let policy = policy(json!({ "allow": ["Edit(src/**)"], "deny": ["Edit(//etc/**)"] }));
    let patch = |body: &str| Call::new("apply_patch", json!({"input": body})).in_dir("/w");
    let inside =
        "*** Begin Patch\n*** Update File: src/a.rs\n*** Add File: src/b.rs\n*** End Patch";
    assert_eq!(effect(&policy, &patch(inside)), Effect::Allow);
    let outside =
        "*** Begin Patch\n*** Update File: src/a.rs\n*** Delete File: /etc/hosts\n*** End Patch";
    let evaluation = policy.evaluate(&patch(outside));
    assert_eq!(
        (evaluation.effect, evaluation.parts.len()),
        (Effect::Deny, 2)
    );
    assert_eq!(effect(&policy, &patch("no headers")), Effect::Ask);
    let string_form = Call::new("apply_patch", json!(inside)).in_dir("/w");
    assert_eq!(effect(&policy, &string_form), Effect::Allow);
}

#[test]
fn web_mcp_and_other_tools() {
    let policy = policy(json!({
        "allow": ["WebFetch(domain:docs.rs)", "WebFetch(domain:*.github.com)", "WebSearch", "mcp__github", "mcp__fs__read"],
        "deny": ["mcp__github__delete_repo", "mcp__shell__*"],
    }));
    let fetch = |url: &str| Call::new("WebFetch", json!({"url": url, "prompt": "x"}));
    assert_eq!(
        effect(&policy, &fetch("https://docs.rs/serde")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &fetch("https://api.github.com/x")),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &fetch("https://docs.rs.evil.net/")),
        Effect::Ask
    );
    assert_eq!(effect(&policy, &fetch("ftp://docs.rs/")), Effect::Ask);
    assert_eq!(
        effect(&policy, &Call::new("WebSearch", json!({"query": "x"}))),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__github__get_issue", json!({}))),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__github__delete_repo", json!({}))),
        Effect::Deny
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__githubx__get", json!({}))),
        Effect::Ask
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__fs__read", json!({}))),
        Effect::Allow
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__fs__write", json!({}))),
        Effect::Ask
    );
    assert_eq!(
        effect(&policy, &Call::new("mcp__shell__run", json!({}))),
        Effect::Deny
    );
    assert_eq!(
        effect(&policy, &Call::new("ExitPlanMode", json!({"plan": "p"}))),
        Effect::Ask
    );
    let plan = policy_named_plan();
    assert_eq!(
        effect(&plan, &Call::new("ExitPlanMode", json!({"plan": "p"}))),
        Effect::Allow
    );
}

fn policy_named_plan() -> Policy {
    policy(json!({ "allow": ["ExitPlanMode"] }))
}

#[test]
fn cut_inputs_ask() {
    let policy = policy(json!({ "allow": ["Bash", "Edit"] }));
    let cut = format!("ls {}", crate::texts::string_cut("aaaa", 100));
    assert_eq!(effect(&policy, &Call::bash(&cut)), Effect::Ask);
    let note = Call::new(
        "Edit",
        json!({"xdev": crate::texts::tool_input_too_large(99999)}),
    );
    assert_eq!(effect(&policy, &note), Effect::Ask);
}

#[test]
fn settings_json_loads_with_warnings() {
    let text = json!({
        "model": "opus",
        "permissions": {
            "allow": ["Bash(cargo test *)"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["/x"],
        },
        "hooks": {},
    })
    .to_string();
    let policy = Policy::parse(&text, Path::new(ORIGIN)).expect("loads");
    assert_eq!(policy.rule_count(), 1);
    assert_eq!(policy.warnings().len(), 2);
}

#[test]
fn refusals_name_what_is_wrong() {
    assert!(refused("{").contains("not JSON"));
    assert!(refused("[]").contains("not a JSON object"));
    assert!(refused(r#"{"allow": []}"#).contains("no \"permissions\""));
    assert!(refused(r#"{"permissions": {"alow": []}}"#).contains("permissions.alow"));
    assert!(refused(r#"{"permissions": {"allow": "Bash"}}"#).contains("not a list"));
    assert!(refused(r#"{"permissions": {"allow": [3]}}"#).contains("allow[0]"));
    assert!(refused(r#"{"permissions": {"deny": ["Bash(rm"]}}"#).contains("Bash(rm"));
    assert!(
        refused(r#"{"permissions": {"deny": [{"rule": "Bash", "why": "x"}]}}"#)
            .contains("deny[0].why")
    );
    assert!(refused(r#"{"permissions": {"deny": ["WebSearch(x)"]}}"#).contains("no specifier"));
    for message in [refused("{"), refused(r#"{"permissions": {"alow": []}}"#)] {
        assert!(message.contains(ORIGIN), "{message}");
    }
}

#[test]
fn examples_are_checked_at_load() {
    let good = policy(json!({
        "allow": [{"rule": "Bash(cargo test *)", "match": ["cargo test", "cargo test -q"], "notMatch": ["cargo build", "cargo test && rm -rf /"]}],
        "deny": [{"rule": "Bash(rm -rf *)", "match": ["rm -rf /", "rm -fr x"], "notMatch": ["rm x"]}],
    }));
    let report = good.test_examples();
    assert_eq!(report.results.len(), 7);
    assert!(report.passed());

    let bad = refused(
        &json!({"permissions": {
            "allow": [{"rule": "Bash(cargo *)", "match": ["cargo test"]}],
            "deny": [{"rule": "Bash(cargo test *)"}],
        }})
        .to_string(),
    );
    assert!(
        bad.contains("\"cargo test\"")
            && bad.contains("Bash(cargo test *)")
            && bad.contains("deny"),
        "{bad}"
    );
    let not_match = refused(
        &json!({"permissions": {"deny": [{"rule": "Bash(rm *)", "notMatch": ["rm x"]}]}})
            .to_string(),
    );
    assert!(not_match.contains("must not"), "{not_match}");
    let object = policy(json!({
        "allow": [{"rule": "Edit(src/**)", "match": [{"tool": "Write", "input": {"file_path": "src/a"}, "cwd": "/w"}]}],
        "ask": [{"rule": "mcp__s", "match": ["{}"]}],
    }));
    assert!(object.test_examples().passed());
    assert!(refused(
        &json!({"permissions": {"ask": [{"rule": "mcp__s", "match": ["not json"]}]}}).to_string()
    )
    .contains("JSON"));
}

#[test]
fn load_opens_safely() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policy.json");
    std::fs::write(&file, r#"{"permissions": {"allow": ["Bash(ls *)"]}}"#).expect("write");
    assert_eq!(Policy::load(&file).expect("loads").rule_count(), 1);

    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    assert!(Policy::load(&link)
        .expect_err("a link")
        .to_string()
        .contains("symbolic link"));

    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("c string");
    // SAFETY: `name` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    assert!(matches!(
        Policy::load(&fifo),
        Err(LoadError::NotRegular { .. })
    ));
    assert!(matches!(
        Policy::load(dir.path()),
        Err(LoadError::NotRegular { .. })
    ));

    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; MAX_POLICY_BYTES as usize + 1]).expect("write");
    assert!(matches!(
        Policy::load(&big),
        Err(LoadError::TooLarge { .. })
    ));

    let latin = dir.path().join("latin.json");
    std::fs::write(&latin, b"{\"permissions\": {\"allow\": [\"Bash(\xe9)\"]}}").expect("write");
    assert!(matches!(
        Policy::load(&latin),
        Err(LoadError::NotUtf8 { .. })
    ));
    assert!(matches!(
        Policy::load(&dir.path().join("none")),
        Err(LoadError::Read { .. })
    ));
}

#[test]
fn policy_is_shared_across_threads() {
    fn shareable<T: Clone + Send + Sync + std::fmt::Debug>() {}
    shareable::<Policy>();
}

#[test]
fn a_tools_natural_text_makes_its_call() {
    let policy = Policy::parse(
        r#"{"permissions": {"allow": ["Bash(cargo test *)", "Write(//tmp/**)", "WebFetch(domain:docs.rs)", "Task(explore)"]}}"#,
        Path::new("/repo/policy.json"),
    )
    .expect("loads");
    let allowed = |tool: &str, text: &str| {
        let call = Call::from_text(tool, text).expect(tool);
        policy.evaluate(&call).effect == Effect::Allow
    };
    assert!(allowed("Bash", "cargo test"));
    assert!(allowed("exec_command", "cargo test -q"));
    assert!(allowed("Edit", "/tmp/a.txt"));
    assert!(allowed(
        "apply_patch",
        "*** Begin Patch\n*** Add File: /tmp/n.txt\n+x\n*** End Patch\n"
    ));
    assert!(!allowed(
        "apply_patch",
        "*** Begin Patch\n*** Add File: /srv/n.txt\n+x\n*** End Patch\n"
    ));
    assert!(allowed("WebFetch", "https://docs.rs/serde"));
    assert!(allowed("Task", "explore"));
    assert_eq!(Call::from_text("mcp__github__get_issue", "{}"), None);
}
