//! The pending stack: newest first, ids, peeking dispatch, claims.

use super::*;

#[tokio::test]
async fn resolve_applies_newest_first_over_three_previews() {
    let session = Session::new();
    let a = stage_echoing(&session, "edit a.rs", "edit");
    let b = stage_echoing(&session, "edit b.rs", "edit");
    let c = stage_echoing(&session, "write c.rs", "write");
    assert_eq!(pending_ids(&session), [&*c, &*b, &*a]);
    assert_eq!(session.pending_head().map(|head| head.id), Some(c.clone()));

    let mut texts = Vec::new();
    for _ in 0..3 {
        let answer = dispatch(&session, Device::Resolve, "tests pass\n").await;
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(answer.errno(), 0);
        texts.push(answer.text().to_string());
    }
    assert_eq!(
        texts,
        [
            "applied write c.rs: tests pass",
            "applied edit b.rs: tests pass",
            "applied edit a.rs: tests pass"
        ]
    );
    assert_eq!(session.pending_count(), 0);

    let none = dispatch(&session, Device::Resolve, "again").await;
    assert_eq!(none.text(), nothing_to_resolve());
    assert_eq!(none.errno(), libc::ENOENT);
    assert_eq!(
        none.error(),
        Some(&Error::NothingToResolve(nothing_to_resolve()))
    );
}

#[tokio::test]
async fn reject_discards_newest_first() {
    let session = Session::new();
    let a = stage_echoing(&session, "edit a.rs", "edit");
    let b = stage_echoing(&session, "edit b.rs", "edit");
    let answer = dispatch(&session, Device::Reject, "wrong file").await;
    assert_eq!(answer.text(), discarded("edit b.rs", "wrong file"));
    assert_eq!(pending_ids(&session), [&*a]);
    assert!(!session.is_pending(&b));
    let answer = dispatch(&session, Device::Reject, "also wrong").await;
    assert_eq!(answer.text(), discarded("edit a.rs", "also wrong"));
    let none = dispatch(&session, Device::Reject, "nothing").await;
    assert!(none.is_ok());
    assert_eq!(none.text(), nothing_to_reject());
}

#[tokio::test]
async fn ids_have_the_documented_shape_and_a_growing_process_wide_seq() {
    let one = Session::new();
    let other = Session::new();
    let first = stage_echoing(&one, "a", "edit");
    let second = stage_echoing(&other, "b", "bash");
    let third = one.push_pending_action("c", echo_apply("c"), None, None);
    let fourth = one.push_pending_action("d", echo_apply("d"), None, Some("my_tool"));
    let seqs = [
        seq_of(&first, "edit"),
        seq_of(&second, "bash"),
        seq_of(&third, "custom_tool"),
        seq_of(&fourth, "my_tool"),
    ];
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "seq grows across sessions and tools: {seqs:?}"
    );

    // A seq is never reused, not even after the preview is decided.
    let decided = stage_echoing(&one, "e", "edit");
    assert!(dispatch(&one, Device::Resolve, "ok").await.is_ok());
    let next = stage_echoing(&one, "f", "edit");
    assert!(seq_of(&next, "edit") > seq_of(&decided, "edit"));
}

#[tokio::test]
async fn staging_never_forces_anything() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let rejects = Arc::new(AtomicUsize::new(0));
    let counted_rejects = Arc::clone(&rejects);
    let mut events = session.subscribe();
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        counted_apply(&calls, "applied"),
        Some(reject_fn(move |_reason, _extra| {
            counted_rejects.fetch_add(1, Ordering::SeqCst);
            async { Ok(None) }
        })),
    );
    tokio::task::yield_now().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(rejects.load(Ordering::SeqCst), 0);
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Staged, id.clone())]
    );
    // What a harness is told is a *soft* requirement, never a hard one.
    assert!(matches!(
        session.next_tool_choice_directive(),
        Some(ToolChoiceDirective::Soft(_))
    ));
    assert_eq!(session.serve_tool_choice().map(|c| c.tool_name), None);
    assert_eq!(pending_ids(&session), [id]);
}

#[tokio::test]
async fn registering_an_existing_id_moves_it_to_the_head() {
    let session = Session::new();
    let a = stage_echoing(&session, "edit a.rs", "edit");
    let b = stage_echoing(&session, "edit b.rs", "edit");
    let c = stage_echoing(&session, "edit c.rs", "edit");

    assert!(session.restage(&a));
    assert_eq!(pending_ids(&session), [&*a, &*c, &*b]);
    assert!(!session.restage("pending-action:edit:no-such-id"));
    assert_eq!(pending_ids(&session), [&*a, &*c, &*b]);

    // `stage` with the id of a pending preview: moves, and the new invoker wins.
    session.stage(
        "edit b.rs again",
        "edit",
        echo_apply("b2"),
        None,
        StageOptions {
            id: Some(b.clone()),
            ..StageOptions::default()
        },
    );
    assert_eq!(pending_ids(&session), [&*b, &*a, &*c]);
    assert_eq!(session.pending_count(), 3);
    assert_eq!(
        session.pending_head().map(|head| head.label),
        Some("edit b.rs again".to_string())
    );
    let answer = dispatch(&session, Device::Resolve, "r").await;
    assert_eq!(answer.text(), "applied b2: r");
    assert_eq!(pending_ids(&session), [&*a, &*c]);

    // An explicit new id is staged at the head like any other.
    session.stage(
        "x",
        "ext",
        echo_apply("x"),
        None,
        StageOptions {
            id: Some("pending-action:ext:custom-1".to_string()),
            ..StageOptions::default()
        },
    );
    assert_eq!(
        pending_ids(&session),
        ["pending-action:ext:custom-1", &*a, &*c]
    );
}

#[tokio::test]
async fn dispatch_peeks_and_previews_staged_meanwhile_are_untouched() {
    let session = Session::new();
    let old = stage_echoing(&session, "old", "edit");
    let (apply, mut gate) = Gate::new();
    let slow = session.queue_resolve_handler("slow", "edit", apply, None);

    let resolving = spawn_dispatch(&session, Device::Resolve, "go");
    gate.wait_started().await;
    // While the head is being applied it is claimed, not popped for good.
    assert!(session.is_pending(&slow));
    assert_eq!(session.in_progress_count(), 1);
    let newer = stage_echoing(&session, "newer", "edit");
    assert_eq!(pending_ids(&session), [&*newer, &*old]);

    gate.release(Ok(ToolResult::ok("slow applied")));
    let answer = resolving.await.expect("join");
    assert_eq!(answer.text(), "slow applied");
    // Only the applied preview left the stack; the next newest is the head.
    assert!(!session.is_pending(&slow));
    assert_eq!(pending_ids(&session), [&*newer, &*old]);
    assert_eq!(session.in_progress_count(), 0);
}

#[tokio::test]
async fn a_claimed_preview_is_skipped_by_a_concurrent_dispatch() {
    let session = Session::new();
    let older = Arc::new(AtomicUsize::new(0));
    let a = session.queue_resolve_handler("a", "edit", counted_apply(&older, "a applied"), None);
    let (apply, mut gate) = Gate::new();
    let b = session.queue_resolve_handler("b", "edit", apply, None);

    let first = spawn_dispatch(&session, Device::Resolve, "first");
    gate.wait_started().await;
    assert_eq!(session.pending_head().map(|head| head.id), Some(a.clone()));
    // A second writer takes the next newest instead of b.
    let second = dispatch(&session, Device::Resolve, "second").await;
    assert_eq!(second.text(), "a applied");
    assert_eq!(older.load(Ordering::SeqCst), 1);
    // A third finds nothing it may take.
    let third = dispatch(&session, Device::Resolve, "third").await;
    assert_eq!(third.text(), nothing_to_resolve());
    let reject = dispatch(&session, Device::Reject, "fourth").await;
    assert_eq!(reject.text(), nothing_to_reject());

    gate.release(Ok(ToolResult::ok("b applied")));
    assert_eq!(first.await.expect("join").text(), "b applied");
    assert!(!session.is_pending(&a) && !session.is_pending(&b));
}
