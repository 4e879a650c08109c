//! Session boundaries.

use super::*;

#[tokio::test]
async fn a_session_boundary_clears_pending_previews_and_directives() {
    let session = Session::new();
    let a = stage(&session, "a", "edit");
    let b = stage(&session, "b", "edit");
    let (hard_directive, log) = directive(&["x", "y"], RejectAction::Requeue);
    session.enqueue_directive(hard_directive);
    session.enqueue_directive(Directive::new([ToolChoice::new("z")]));
    assert_eq!(served(&session).as_deref(), Some("x"));
    let mut events = session.subscribe();

    // A new session, a switch and a branch all do this.
    session.clear();

    assert_eq!(session.pending_count(), 0);
    assert!(pending_ids(&session).is_empty());
    assert_eq!(session.next_tool_choice_directive(), None);
    assert_eq!(served(&session), None);
    assert_eq!(
        log.lock().clone(),
        [("x".to_string(), RejectReason::Cleared)]
    );
    let seen = drain(&mut events);
    assert_eq!(
        kinds(&seen),
        [(EventKind::Cleared, b), (EventKind::Cleared, a)]
    );
    assert!(seen.iter().all(|event| event.ok));
    assert_eq!(
        write(&session, Device::Resolve, "x").await.text(),
        NOTHING_TO_RESOLVE
    );
}

#[tokio::test]
async fn a_failing_apply_across_a_boundary_does_not_bring_the_preview_back() {
    let session = Session::new();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "go").await;
    let mut events = session.subscribe();
    session.clear();
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Cleared, id.clone())]
    );
    gate.release(Err(CallbackError::Failed("late failure".into())));
    let answer = resolving.await.expect("join");
    assert_eq!(answer.text(), "Apply failed: late failure");
    assert!(!session.is_pending(&id));
    assert_eq!(session.pending_count(), 0);
    assert_eq!(session.in_progress_count(), 0);
    assert!(drain(&mut events)
        .iter()
        .all(|event| event.kind != EventKind::Requeued));
}
