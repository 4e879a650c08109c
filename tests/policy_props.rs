//! Properties of the policy that hold for every input, checked on
//! generated ones: the shell walk and the matcher never panic (arbitrary
//! text, and text built from the shell's own tokens); what the walk cannot
//! resolve is never allowed; appending a denied command to an allowed one,
//! by any list operator, pipe or substitution, never makes an allowed
//! whole; and a decision depends on nothing but the call and the rules.
//!
//! The oracle for "unresolved" is the policy that allows every shell
//! command and every write (`Bash`, `Edit`): a part it does not allow is
//! one that no rule could allow (an expansion in command position, a
//! syntax error, a construct too deep, nothing to judge at all). Whatever
//! that policy leaves to a person, no other policy may allow.

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;
use xdev::policy::{Call, Effect, Policy};

/// Everything a shell command or a write can be, allowed: only what the
/// walk cannot resolve is left.
const ALLOW_EVERYTHING: &str = r#"{"permissions": {"allow": ["Bash", "Edit", "Read"]}}"#;

/// A realistic file: prefixes allowed, dangerous commands and places denied.
const RULES: &str = r#"{"permissions": {
  "allow": [
    "Bash(cargo test *)", "Bash(cargo build *)", "Bash(ls *)", "Bash(git status)",
    "Bash(git log *)", "Bash(echo *)", "Bash(cat *)", "Bash(grep *)", "Bash(wc *)",
    "Bash(true)", "Bash(cd *)", "Bash(sort *)", "Bash(tee *)", "Bash(cp *)",
    "Bash(sed *)", "Bash(touch *)", "Bash(xargs *)", "Bash(env *)", "Bash(timeout *)",
    "Bash(sh -c *)", "Bash(bash -c *)", "Bash(find *)",
    "Edit(//tmp/**)", "Edit(build/**)", "WebFetch(domain:docs.rs)", "mcp__github",
    "Read"
  ],
  "ask": ["Bash(git push *)", "Bash(curl *)"],
  "deny": [
    "Bash(rm -rf *)", "Bash(sudo *)", "Bash(dd *)", "Bash(git push --force *)",
    "Edit(//etc/**)", "Edit(~/.ssh/**)", "WebFetch(domain:evil.example)"
  ]
}}"#;

fn load(text: &str) -> Policy {
    Policy::parse(text, Path::new("/repo/policy.json")).expect("the rules load")
}

/// The shell's own tokens, and the characters parsers trip on.
fn shellish_token() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "'",
        "\"",
        "$(",
        "`",
        "<<",
        "<<-",
        "<<<",
        ";",
        ";;",
        "&&",
        "||",
        "|",
        "|&",
        "&",
        "(",
        ")",
        "{",
        "}",
        "[[",
        "]]",
        "((",
        "))",
        "\\",
        "\n",
        "\0",
        " ",
        "\t",
        "$",
        "${",
        "$((",
        "<(",
        ">(",
        ">",
        ">>",
        "2>&1",
        "&>",
        ">&",
        "<",
        "=",
        "~",
        "*",
        "?",
        "#",
        "!",
        "EOF",
        "rm",
        "-rf",
        "/",
        "ls",
        "sh",
        "-c",
        "eval",
        "env",
        "xargs",
        "find",
        "-exec",
        "{}",
        "\\;",
        "+",
        "cd",
        "tee",
        "sort",
        "-o",
        "cp",
        "dd",
        "of=",
        "sed",
        "-i",
        "git",
        "--output=",
        "function",
        "f()",
        "if",
        "then",
        "fi",
        "for",
        "do",
        "done",
        "case",
        "esac",
        "in",
        "while",
        "X=1",
        "PATH=",
        "alias",
        "trap",
        "exec",
        "sudo",
        "\u{fffd}",
        "é",
        "\u{1F600}",
    ])
    .prop_map(str::to_string);
    prop_oneof![
        8 => fixed,
        2 => "[a-z./~-]{1,8}",
        // Long runs: of one bracket, quote or operator.
        1 => (prop::sample::select(vec!["(", ")", "{", "'", "\"", "$(", "`", "\\", ";", "|", "<<"]), 1usize..300)
            .prop_map(|(token, count)| token.repeat(count)),
    ]
}

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(shellish_token(), 0..40).prop_map(|tokens| tokens.concat())
}

/// Simple commands `RULES` allows.
fn allowed_simple() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "ls",
        "ls -la",
        "cargo test",
        "cargo test --release -- --nocapture",
        "cargo build -q",
        "git status",
        "git log --oneline -5",
        "echo hi",
        "echo 'a b'",
        "echo \"x;y\"",
        "cat Cargo.toml",
        "grep -r foo src",
        "wc -l",
        "true",
        "sort -o /tmp/sorted in.txt",
        "cp a.txt /tmp/a.txt",
        "touch build/stamp",
        "echo x > /tmp/out",
        "ls 2>/dev/null",
        "timeout 5 cargo test",
        "env RUST_LOG=debug cargo test",
        "bash -c 'cargo test'",
    ])
    .prop_map(str::to_string)
}

/// Commands `RULES` allows: simple ones joined by lists, pipes and groups.
fn allowed_command() -> impl Strategy<Value = String> {
    let joiner = prop::sample::select(vec!["; ", " && ", " || ", " | ", "\n"]);
    (
        allowed_simple(),
        prop::collection::vec((joiner, allowed_simple()), 0..4),
        0..3u8,
    )
        .prop_map(|(first, rest, shape)| {
            let mut command = first;
            for (joiner, next) in rest {
                command.push_str(joiner);
                command.push_str(&next);
            }
            match shape {
                1 => format!("( {command} )"),
                2 => format!("{{ {command}; }}"),
                _ => command,
            }
        })
}

/// Commands `RULES` denies.
fn denied_command() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "rm -rf /",
        "rm -fr ~",
        "sudo ls",
        "dd if=/dev/zero of=/dev/sda",
        "git push --force origin main",
        "echo x > /etc/passwd",
        "cat k | tee -a ~/.ssh/authorized_keys",
        "sort -o /etc/passwd x",
        "cp x /etc/passwd",
        "sed -i s/a/b/ /etc/hosts",
        "touch /etc/x",
        "bash -c 'rm -rf /'",
        "env X=1 rm -rf /",
    ])
    .prop_map(str::to_string)
}

/// How a command is appended to another.
fn append(allowed: &str, how: u8, denied: &str) -> String {
    match how {
        0 => format!("{allowed}; {denied}"),
        1 => format!("{allowed} && {denied}"),
        2 => format!("{allowed} | {denied}"),
        3 => format!("{allowed} $({denied})"),
        4 => format!("{allowed} || {denied}"),
        5 => format!("{allowed}\n{denied}"),
        // Nested subshells whose parentheses are spaced, which the parser
        // could take for an arithmetic `((`.
        7 => format!("{allowed} && ( ( {denied} ) )"),
        8 => format!("{allowed}; ( ({denied}))"),
        9 => format!("{allowed} || (({denied}) )"),
        _ => format!("{allowed} `{denied}`"),
    }
}

/// A call of any tool the policy knows, with `text` where its input goes.
fn call_of(tool: u8, text: &str) -> Call {
    match tool {
        0 => Call::bash(text),
        1 => Call::new("Edit", json!({ "file_path": text })),
        2 => Call::new("Write", json!({ "file_path": text, "content": "x" })),
        3 => Call::new("WebFetch", json!({ "url": text })),
        4 => Call::new("apply_patch", json!({ "input": text })),
        5 => Call::new("exec_command", json!({ "cmd": text })),
        6 => Call::new("shell", json!({ "command": ["bash", "-lc", text] })),
        7 => Call::new("Task", json!({ "subagent_type": text })),
        8 => Call::new("mcp__github__get_issue", json!({ "q": text })),
        _ => Call::new(text, json!({ "command": text })),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// Any text, as any tool's input, is decided (and never panics).
    #[test]
    fn arbitrary_text_is_decided(text in any::<String>(), tool in 0u8..10) {
        let policy = load(RULES);
        let call = call_of(tool, &text);
        let evaluation = policy.evaluate(&call);
        prop_assert!(!evaluation.why.is_empty());
        if let Some(cwd) = text.get(..text.len().min(40)) {
            let _ = policy.evaluate(&call.clone().in_dir(cwd));
        }
    }

    /// Text built from the shell's tokens is decided; whatever the
    /// allow-everything policy leaves to a person, no policy allows.
    #[test]
    fn shellish_text_is_decided_and_unresolved_is_never_allowed(text in shellish(), tool in 0u8..7) {
        let everything = load(ALLOW_EVERYTHING);
        let rules = load(RULES);
        let call = call_of(tool, &text);
        let open = everything.evaluate(&call);
        let decided = rules.evaluate(&call);
        if open.effect != Effect::Allow {
            prop_assert_ne!(decided.effect, Effect::Allow, "{:?}: {}", text, decided.why);
        }
        // A part the walk could not resolve is never allowed, part by part.
        for part in &open.parts {
            if part.effect != Effect::Allow {
                prop_assert!(part.rule.is_none(), "{:?}: {:?}", text, part);
            }
        }
    }

    /// A denied command appended to an allowed one makes no allowed whole.
    #[test]
    fn appending_a_denied_command_is_never_allowed(
        allowed in allowed_command(),
        denied in denied_command(),
        how in 0u8..10,
    ) {
        let policy = load(RULES);
        let before = policy.evaluate(&Call::bash(&allowed));
        prop_assert_eq!(before.effect, Effect::Allow, "{:?}: {}", allowed, before.why);
        prop_assert_eq!(policy.evaluate(&Call::bash(&denied)).effect, Effect::Deny, "{:?}", denied);
        let command = append(&allowed, how, &denied);
        let after = policy.evaluate(&Call::bash(&command));
        prop_assert_ne!(after.effect, Effect::Allow, "{:?}: {}", command, after.why);
        // A list or a pipe runs the denied command as it is: denied. (A
        // substitution after a group is a syntax error: asked about.)
        if how != 3 && how != 6 {
            prop_assert_eq!(after.effect, Effect::Deny, "{:?}: {}", command, after.why);
        }
    }

    /// The same call and rules, loaded twice and asked twice, give the
    /// same evaluation (no map order, no clock, no environment).
    #[test]
    fn evaluation_is_deterministic(text in shellish(), tool in 0u8..10) {
        let (first, second) = (load(RULES), load(RULES));
        let call = call_of(tool, &text);
        let once = first.evaluate(&call);
        prop_assert_eq!(&once, &first.evaluate(&call));
        prop_assert_eq!(&once, &second.evaluate(&call));
    }

    /// Any rule text loads or is refused with a reason (never panics), and
    /// a loaded one decides arbitrary calls.
    #[test]
    fn arbitrary_rules_load_or_are_refused(
        specifier in shellish(),
        tool in prop::sample::select(vec!["Bash", "Edit", "Write", "Read", "WebFetch", "Task", "mcp__s", "X"]),
        list in prop::sample::select(vec!["allow", "ask", "deny"]),
        example in shellish(),
        command in shellish(),
    ) {
        let rule = format!("{tool}({specifier})");
        let file = json!({ "permissions": { list: [{ "rule": rule, "match": [example] }] } }).to_string();
        let plain = json!({ "permissions": { list: [rule] } }).to_string();
        if let Err(error) = Policy::parse(&file, Path::new("/repo/p.json")) {
            prop_assert!(!error.to_string().is_empty());
        }
        if let Ok(policy) = Policy::parse(&plain, Path::new("/repo/p.json")) {
            for tool in 0u8..10 {
                let _ = policy.evaluate(&call_of(tool, &command));
            }
        }
    }
}
