//! The `xdev` command: a thin CLI over the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// Finalize an AI coding agent's staged work by writing a file.
#[derive(Parser)]
#[command(name = "xdev", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Mount the devices at DIR and serve them in the foreground until
    /// SIGINT or SIGTERM. Prints `xdev: mounted DIR` once the mount answers.
    Mount {
        /// An empty directory to mount on (a stale xdev mount there is cleared).
        dir: PathBuf,
        /// Let other users read the status files (their writes to the
        /// devices fail with EACCES). Needs `user_allow_other` in
        /// /etc/fuse.conf when not run as root.
        #[arg(long)]
        allow_other: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("XDEV_LOG")
                .unwrap_or_else(|_| EnvFilter::new("warn,fuser=error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mount { dir, allow_other } => serve(dir, allow_other),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xdev: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Mounts, announces readiness, waits for SIGINT/SIGTERM, unmounts.
fn serve(dir: PathBuf, allow_other: bool) -> Result<(), String> {
    // Signals are caught before the mount exists, so a signal sent the
    // moment the ready line appears still unmounts cleanly.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start: {err}"))?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|err| format!("cannot catch signals: {err}"))?;

    let session = xdev::Session::new();
    let options = xdev::MountOptions {
        allow_other,
        ..xdev::MountOptions::default()
    };
    let mount = xdev::mount(&session, &dir, options).map_err(|err| err.to_string())?;
    // The mount answers once a lookup through it does.
    std::fs::metadata(dir.join("status"))
        .map_err(|err| format!("mount at {} does not answer: {err}", dir.display()))?;
    println!("xdev: mounted {}", dir.display());
    std::io::stdout().flush().map_err(|err| err.to_string())?;

    runtime.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    mount
        .unmount()
        .map_err(|err| format!("unmount of {} failed: {err}", dir.display()))
}
