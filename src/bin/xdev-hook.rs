//! `xdev-hook`: `xdev hook` in a small binary of its own, for the agents'
//! hook configurations.
//!
//! An agent starts its permission hook once for every tool call, and most
//! of what a hook costs is starting: mapping the binary, the page faults of
//! the code it runs, setting up what it never uses. This binary holds only
//! the hook (no daemon, no review, no command tree), so it starts faster
//! than `xdev`, and it answers exactly as `xdev hook` does: the same words
//! after the program name (`xdev-hook --agent codex` is `xdev hook --agent
//! codex`), the same library code, the same output and exit codes.
//!
//! It reads the hook's usual command lines itself (see
//! `xdev::hook::plain_hook_args`); any other (`--deadline`, `--help`, a
//! mistake) it hands to `xdev hook` whole, by executing the `xdev` beside
//! it (else the one on `PATH`), so the CLI's parser answers with its help,
//! its errors and their exit codes.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use xdev::hook::{HookOptions, HookRun, DEFAULT_DEADLINE};

fn main() -> ExitCode {
    xdev::mount::use_one_heap();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let words = std::iter::once(OsString::from("hook")).chain(args.iter().cloned());
    let Some(plain) = xdev::hook::plain_hook_args(words) else {
        return hand_to_the_cli(args);
    };
    let options = HookOptions {
        mount: xdev::client::mount_dir(plain.mount.as_deref()),
        agent: plain.agent,
        deadline: DEFAULT_DEADLINE,
        on_timeout: plain.on_timeout,
        strict: plain.strict,
        plan_dir: plain.plan_dir,
        agent_may_decide: plain.agent_may_decide,
    };
    let run = xdev::hook::run_reading(&options, std::io::stdin().lock(), answer_late);
    print(&run);
    ExitCode::SUCCESS
}

/// The answer when the deadline passed before the mount answered: printed
/// from the watchdog's thread, which then ends the process.
fn answer_late(run: HookRun) -> ! {
    print(&run);
    std::process::exit(0)
}

/// The lines for stderr, then the answer for the agent. A stream that
/// cannot be written is left: nothing else could be told.
fn print(run: &HookRun) {
    let mut stderr = std::io::stderr().lock();
    for line in &run.stderr {
        let _ = writeln!(stderr, "{line}");
    }
    if let Some(answer) = &run.stdout {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
    }
}

/// Runs `xdev hook ARGS...` in this process's place: the `xdev` installed
/// beside this binary, else the one on `PATH`. If it cannot be run, exits
/// as `xdev hook` does for a command line it cannot read: 1 (no opinion,
/// the agent asks as usual), or 2 (block the call) with `--strict`.
fn hand_to_the_cli(args: Vec<OsString>) -> ExitCode {
    let cli = std::env::current_exe()
        .ok()
        .and_then(|me| me.parent().map(|dir| dir.join("xdev")))
        .filter(|beside| beside.is_file())
        .unwrap_or_else(|| PathBuf::from("xdev"));
    let strict = args.iter().any(|arg| arg == "--strict");
    let error = Command::new(&cli).arg("hook").args(args).exec();
    let _ = writeln!(
        std::io::stderr(),
        "xdev-hook: cannot run {} hook: {error}",
        cli.display()
    );
    if strict {
        ExitCode::from(2)
    } else {
        ExitCode::from(xdev::client::EXIT_ERROR)
    }
}
