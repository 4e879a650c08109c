//! Drives `echo ok > resolve` N times against an in-process mount, for a
//! profiler: `cargo run --release --example echo_profile -- 20000`, or
//! under `valgrind --tool=callgrind --separate-threads=yes` (the main
//! thread is the writer; every other thread serves the mount). Each echo
//! applies a preview whose apply does nothing.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use xdev::{apply_fn, MountOptions, Session, ToolResult};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let echoes: usize = std::env::args()
        .nth(1)
        .map_or(Ok(20_000), |count| count.parse())?;
    let dir = tempfile::tempdir()?;
    let session = Session::new();
    let apply = apply_fn(|_reason, _extra| async { Ok(ToolResult::ok("")) });
    for _ in 0..echoes + 16 {
        session.queue_resolve_handler("profile: no-op edit", "edit", Arc::clone(&apply), None);
    }
    let mount = xdev::mount(&session, dir.path(), MountOptions::default())?;
    let resolve = dir.path().join("resolve");
    let started = Instant::now();
    for _ in 0..echoes {
        let mut device = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&resolve)?;
        device.write_all(b"ok\n")?;
    }
    let took = started.elapsed();
    println!(
        "{echoes} echoes in {:.3} s ({:.2} us each)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / echoes.max(1) as f64
    );
    mount.unmount()?;
    Ok(())
}
