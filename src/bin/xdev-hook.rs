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

fn main() -> ExitCode {
    xdev::mount::use_one_heap();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let words = std::iter::once(OsString::from("hook")).chain(args.iter().cloned());
    let Some(plain) = xdev::hook::plain_hook_args(words) else {
        return hand_to_the_cli(args);
    };
    let options = plain.into_options();
    xdev::hook::run_reading(&options, std::io::stdin().lock(), xdev::hook::answer_late).print();
    ExitCode::SUCCESS
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
