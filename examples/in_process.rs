//! Stages previews with apply and reject callbacks and decides them through
//! the same dispatch a write to `resolve` or `reject` goes through, all in
//! process: no FUSE, no mount, only the crate's core
//! (`xdev = { ..., default-features = false }`).
//!
//! Run it with `cargo run --example in_process`.

use xdev::error::errno_name;
use xdev::{apply_fn, reject_fn, Device, Dispatch, Session, StageOptions, ToolResult};

// A current-thread runtime is enough: every callback runs as a task on it.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::new();

    // An agent's edit tool stages two previews. The stack is newest first,
    // so the second one staged is the first one decided.
    for file in ["src/lib.rs", "src/main.rs"] {
        let id = session.stage(
            format!("edit {file}"),
            "edit",
            // Apply: make the edit for real. The text becomes the result of
            // the `write(2)` on a mount.
            apply_fn(move |reason, _extra| async move {
                Ok(ToolResult::ok(format!(
                    "applied the edit of {file} ({reason})"
                )))
            }),
            // Reject: undo whatever the preview set up. `None` would answer
            // the default `Discarded: <label>. Reason: <reason>`.
            Some(reject_fn(move |reason, _extra| async move {
                Ok(Some(ToolResult::ok(format!(
                    "left {file} as it was ({reason})"
                ))))
            })),
            // Extras (an explicit id, the agent call it answers): none here.
            StageOptions::default(),
        );
        println!("staged  {id}");
    }
    println!("pending {}", session.pending_count());

    // What `echo "tests pass" > /xdev/resolve` does: apply the newest.
    let answer = Dispatch::device(Device::Resolve, "tests pass\n")
        .run(&session)
        .await;
    println!("resolve -> {}", answer.text());

    // What `echo "not needed" > /xdev/reject` does: discard the next one.
    let answer = Dispatch::device(Device::Reject, "not needed\n")
        .run(&session)
        .await;
    println!("reject  -> {}", answer.text());

    // Nothing is left: a write to `resolve` would fail with this errno.
    let answer = Dispatch::device(Device::Resolve, "again")
        .run(&session)
        .await;
    println!(
        "resolve -> {} ({})",
        answer.text(),
        errno_name(answer.errno())
    );

    if session.pending_count() != 0 || answer.is_ok() {
        return Err("the stack should be empty and the last resolve refused".into());
    }
    Ok(())
}
