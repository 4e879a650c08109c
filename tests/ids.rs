//! The preview id counter starts at 0 and is process-wide (SPEC section 2).
//!
//! This file holds exactly one test on purpose: it needs a process in which
//! nothing has staged a preview before it. Add other tests elsewhere.

use xdev::{apply_fn, Session, ToolResult};

#[test]
fn seq_starts_at_zero_and_is_shared_by_every_session_and_tool() {
    let apply = || apply_fn(|_reason, _extra| async { Ok(ToolResult::ok("applied")) });
    let one = Session::new();
    let other = Session::new();
    let ids = [
        one.queue_resolve_handler("a", "edit", apply(), None),
        other.queue_resolve_handler("b", "write", apply(), None),
        one.push_pending_action("c", apply(), None, None),
        other.push_pending_action("d", apply(), None, Some("deploy")),
    ];
    assert_eq!(
        ids,
        [
            "pending-action:edit:0",
            "pending-action:write:1",
            "pending-action:custom_tool:2",
            "pending-action:deploy:3",
        ]
    );
    // Clearing a session never rewinds the counter.
    one.clear();
    other.clear_pending();
    assert_eq!(
        one.queue_resolve_handler("e", "edit", apply(), None),
        "pending-action:edit:4"
    );
}
