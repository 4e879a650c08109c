//! The policy's costs, against a 500-rule file of the kinds people write
//! (shell command prefixes, `Edit`/`Write`/`Read` path globs, `WebFetch`
//! domains, MCP tools; allow, ask and deny; a third of the rules with
//! `match`/`notMatch` examples):
//!
//! - (a) deciding a 10-part compound command (lists, a pipe, `cd`,
//!   redirections): criterion's estimate, and the median of our own
//!   20,000 timed decisions (target: at most 50 µs);
//! - (b) loading the file from disk, its examples run: criterion's
//!   estimate, and the median of our own 200 timed loads (target: at most
//!   50 ms).
//!
//! Run with `cargo bench --bench policy`; the last line, `bench-figures
//! {...}`, holds the figures as JSON.

use std::hint::black_box;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{json, Value};
use xdev::policy::{Call, Effect, Policy};

const RULES: usize = 500;
const DECISIONS: usize = 20_000;
const LOADS: usize = 200;

/// The command decided: ten simple commands, two redirections, a pipe.
const COMMAND: &str = "cd repo && cargo fmt --check && cargo clippy -q | tee log; \
     git status --short || git diff --stat; ls -la > out.txt; \
     grep -rn TODO src | wc -l; echo done";

/// Programs and subcommands a project's rules name.
const PROGRAMS: &[&str] = &[
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "git",
    "make",
    "go",
    "python3",
    "pytest",
    "docker",
    "kubectl",
    "terraform",
    "rustup",
    "node",
    "deno",
    "bun",
    "pip",
    "uv",
    "poetry",
    "gradle",
    "mvn",
    "bazel",
    "cmake",
    "ninja",
    "just",
];
const VERBS: &[&str] = &[
    "test", "build", "run", "check", "lint", "fmt", "install", "status", "log", "diff",
];

/// One rule: a string, or an object with a reason and examples.
fn rule(text: String, reason: Option<&str>, must: Option<Value>, must_not: Option<Value>) -> Value {
    if reason.is_none() && must.is_none() && must_not.is_none() {
        return Value::String(text);
    }
    let mut object = json!({ "rule": text });
    if let Some(reason) = reason {
        object["reason"] = json!(reason);
    }
    if let Some(example) = must {
        object["match"] = json!([example]);
    }
    if let Some(example) = must_not {
        object["notMatch"] = json!([example]);
    }
    object
}

/// A 500-rule file: 300 shell prefixes (allow, with every third carrying
/// examples), 100 path globs, 40 domains, 40 MCP tools, 20 ask and deny.
fn rules_file() -> String {
    let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..300 {
        let program = PROGRAMS[i % PROGRAMS.len()];
        let verb = VERBS[(i / PROGRAMS.len()) % VERBS.len()];
        let scope = i / (PROGRAMS.len() * VERBS.len());
        let text = if scope == 0 {
            format!("Bash({program} {verb} *)")
        } else {
            format!("Bash({program} {verb}-{scope} *)")
        };
        let prefix = text.trim_start_matches("Bash(").trim_end_matches(" *)");
        let examples = i % 3 == 0;
        allow.push(rule(
            text.clone(),
            None,
            examples.then(|| json!(format!("{prefix} --all"))),
            examples.then(|| json!(format!("{prefix}x --all"))),
        ));
    }
    for i in 0..100 {
        let tool = ["Edit", "Write", "Read"][i % 3];
        let text = format!("{tool}(//srv/project-{i}/src/**/*.rs)");
        let examples = i % 3 == 0;
        allow.push(rule(
            text,
            None,
            examples.then(|| json!(format!("/srv/project-{i}/src/lib/a.rs"))),
            examples.then(|| json!(format!("/srv/project-{i}/README.md"))),
        ));
    }
    for i in 0..40 {
        let text = format!("WebFetch(domain:docs-{i}.example.org)");
        let examples = i % 3 == 0;
        allow.push(rule(
            text,
            None,
            examples.then(|| json!(format!("https://docs-{i}.example.org/guide"))),
            examples.then(|| json!(format!("https://evil-{i}.example.net/"))),
        ));
    }
    for i in 0..40 {
        allow.push(Value::String(format!("mcp__server{}__tool{i}", i % 8)));
    }
    for i in 0..10 {
        ask.push(Value::String(format!("Bash(deploy-{i} *)")));
    }
    let denied = [
        ("Bash(rm -rf *)", "Deleting trees needs a person."),
        ("Bash(git push --force *)", "Force pushes need a person."),
        ("Bash(sudo *)", "No root from the agent."),
        ("Bash(curl *)", "No network from the shell."),
        ("Bash(dd *)", "No raw disks."),
        ("Edit(//etc/**)", "System configuration is off limits."),
        ("Edit(~/.ssh/**)", "Keys are off limits."),
        ("Read(~/.aws/**)", "Credentials are off limits."),
        ("WebFetch(domain:*.evil.example)", "A known bad host."),
        ("mcp__shell", "No arbitrary shell through MCP."),
    ];
    for (text, reason) in denied {
        let must = text.starts_with("Bash(rm").then(|| json!("rm -rf /"));
        deny.push(rule(text.to_string(), Some(reason), must, None));
    }
    let file = json!({ "permissions": { "allow": allow, "ask": ask, "deny": deny } });
    let count = ["allow", "ask", "deny"]
        .iter()
        .map(|list| file["permissions"][list].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    assert_eq!(count, RULES);
    file.to_string()
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn us(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("policy.json");
    std::fs::write(&path, rules_file()).expect("write the rules");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let policy = Policy::load(&path).expect("the rules load");
    assert_eq!(policy.rule_count(), RULES);
    let examples = policy.test_examples().results.len();
    let call = Call::bash(COMMAND).in_dir("/srv/project-1");
    let evaluation = policy.evaluate(&call);
    assert_eq!(evaluation.parts.len(), 12, "{:#?}", evaluation.parts);
    assert_ne!(evaluation.effect, Effect::Deny);

    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("policy decide 10-part command, 500 rules", |b| {
        b.iter(|| black_box(policy.evaluate(black_box(&call))))
    });
    criterion.bench_function("policy load 500 rules with examples", |b| {
        b.iter(|| black_box(load(&path)))
    });
    criterion.final_summary();

    let mut decisions: Vec<Duration> = (0..DECISIONS)
        .map(|_| {
            let start = Instant::now();
            black_box(policy.evaluate(black_box(&call)));
            start.elapsed()
        })
        .collect();
    let mut loads: Vec<Duration> = (0..LOADS)
        .map(|_| {
            let start = Instant::now();
            black_box(load(&path));
            start.elapsed()
        })
        .collect();
    let (decide, load_time) = (median(&mut decisions), median(&mut loads));
    println!(
        "policy decide, 10 simple commands and 2 writes against {RULES} rules: median {:.2} µs (target <= 50 µs)",
        us(decide)
    );
    println!(
        "policy load, {RULES} rules and {examples} examples: median {:.2} ms (target <= 50 ms)",
        ms(load_time)
    );
    println!(
        "bench-figures {}",
        json!({
            "policy_decide_us": us(decide),
            "policy_load_ms": ms(load_time),
            "policy_rules": RULES,
            "policy_examples": examples,
        })
    );
}

fn load(path: &Path) -> Policy {
    Policy::load(path).expect("the rules load")
}
