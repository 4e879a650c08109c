//! Mounts a session's devices in a temporary directory, applies a staged
//! preview by writing `resolve` with plain file I/O (what `echo ... >
//! /xdev/resolve` does), prints the result and unmounts.
//!
//! Needs the `mount` feature (on by default) and FUSE: `/dev/fuse` and
//! `fusermount3`, or root. Without FUSE it fails with the reason; it never
//! skips. Run it with `cargo run --example mount`.

use std::fs;
use std::process::ExitCode;

use xdev::error::errno_name;
use xdev::{apply_fn, mount, MountOptions, Session, StageOptions, ToolResult};

fn main() -> ExitCode {
    // Without FUSE this fails loudly: the reason, and a non-zero exit.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mount example failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::new();
    let id = session.stage(
        "edit src/main.rs",
        "edit",
        apply_fn(|reason, _extra| async move {
            Ok(ToolResult::ok(format!("applied the edit ({reason})")))
        }),
        None,
        StageOptions::default(),
    );
    println!("staged {id}");

    // mount() serves the devices from threads (and a tokio runtime) of its
    // own, so this thread may block on them with std::fs. Declared after
    // `dir`, the mount drops first: even on an error path below, it is
    // unmounted before the directory is removed.
    let dir = tempfile::tempdir()?;
    let devices = mount(&session, dir.path(), MountOptions::default())?;
    println!("mounted at {}", devices.dir().display());

    // The write returns once the apply callback has answered: success here
    // means the edit is applied.
    fs::write(dir.path().join("resolve"), "tests pass\n")?;
    print!("last: {}", fs::read_to_string(dir.path().join("last"))?);

    // Nothing is pending any more, so a second write fails with ENOENT;
    // the message behind the errno is in `last`.
    match fs::write(dir.path().join("resolve"), "again\n") {
        Err(error) => println!(
            "second resolve: {}",
            errno_name(error.raw_os_error().unwrap_or(0))
        ),
        Ok(()) => return Err("a resolve with nothing pending succeeded".into()),
    }
    print!("last: {}", fs::read_to_string(dir.path().join("last"))?);

    // Unmounting explicitly reports a failure; dropping would only log it.
    devices.unmount()?;
    println!("unmounted");
    Ok(())
}
