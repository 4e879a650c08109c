//! Hard tool-choice directives.

use super::*;

#[test]
fn directives_yield_their_choices_in_order_one_per_turn() {
    let session = Session::new();
    let log = enqueue(&session, &["read", "edit"], RejectAction::Drop);
    enqueue(&session, &["bash"], RejectAction::Drop);
    assert_eq!(hard(&session).as_deref(), Some("read"));
    assert_eq!(served(&session).as_deref(), Some("read"));
    // Serving again in the same turn returns the choice in flight.
    assert_eq!(served(&session).as_deref(), Some("read"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session).as_deref(), Some("edit"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session).as_deref(), Some("bash"));
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert_eq!(served(&session), None);
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert!(log.lock().is_empty());
}

#[test]
fn a_rejected_choice_is_dropped_by_default() {
    let session = Session::new();
    session.enqueue_directive(Directive::new([ToolChoice::new("a"), ToolChoice::new("b")]));
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert_eq!(
        session.finish_turn(TurnEnd::Rejected(RejectReason::Error)),
        Some(RejectReason::Error)
    );
    assert_eq!(served(&session).as_deref(), Some("b"));
}

#[test]
fn reject_callback_requeue_puts_the_choice_back_at_the_head() {
    let session = Session::new();
    let log = enqueue(&session, &["a", "b"], RejectAction::Requeue);
    enqueue(&session, &["z"], RejectAction::Drop);
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert_eq!(
        session.finish_turn(TurnEnd::Rejected(RejectReason::Unavailable)),
        Some(RejectReason::Unavailable)
    );
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("b"));
    // The last choice of a directive also comes back at the head.
    session.finish_turn(TurnEnd::Rejected(RejectReason::Aborted));
    assert_eq!(hard(&session).as_deref(), Some("b"));
    assert_eq!(served(&session).as_deref(), Some("b"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("z"));
    assert_eq!(
        log.lock().clone(),
        [
            ("a".to_string(), RejectReason::Unavailable),
            ("b".to_string(), RejectReason::Aborted)
        ]
    );
}

#[test]
fn reject_callback_drop_keeps_the_rest_and_drop_sequence_drops_it() {
    let session = Session::new();
    enqueue(&session, &["a", "b"], RejectAction::Drop);
    let log = enqueue(&session, &["c", "d", "e"], RejectAction::DropSequence);
    enqueue(&session, &["z"], RejectAction::Drop);
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.finish_turn(TurnEnd::Rejected(RejectReason::Error));
    assert_eq!(served(&session).as_deref(), Some("b"));
    session.finish_turn(TurnEnd::Resolved);
    assert_eq!(served(&session).as_deref(), Some("c"));
    session.finish_turn(TurnEnd::Rejected(RejectReason::Error));
    assert_eq!(served(&session).as_deref(), Some("z"));
    assert_eq!(log.lock().clone(), [("c".to_string(), RejectReason::Error)]);
}

#[test]
fn an_invoker_never_invoked_is_rejected_not_invoked() {
    let session = Session::new();
    let log: ReasonLog = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    let (invoker, _) = recording_invoker("x");
    session.enqueue_directive(
        Directive::new([ToolChoice::new("approve").with_invoker(invoker)]).on_reject(
            move |choice, reason| {
                record.lock().push((choice.tool_name.clone(), reason));
                RejectAction::Requeue
            },
        ),
    );
    assert_eq!(served(&session).as_deref(), Some("approve"));
    assert_eq!(
        session.finish_turn(TurnEnd::Resolved),
        Some(RejectReason::NotInvoked)
    );
    assert_eq!(
        log.lock().clone(),
        [("approve".to_string(), RejectReason::NotInvoked)]
    );
    // The callback asked to requeue it.
    assert_eq!(served(&session).as_deref(), Some("approve"));
}

#[tokio::test]
async fn an_invoked_invoker_resolves_normally() {
    let session = Session::new();
    let (invoker, _) = recording_invoker("x");
    let log: ReasonLog = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&log);
    session.enqueue_directive(
        Directive::new([ToolChoice::new("approve").with_invoker(invoker)]).on_reject(
            move |choice, reason| {
                record.lock().push((choice.tool_name.clone(), reason));
                RejectAction::Requeue
            },
        ),
    );
    session.serve_tool_choice();
    assert!(dispatch(&session, Device::Resolve, "yes").await.is_ok());
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    assert!(log.lock().is_empty());
    assert_eq!(session.next_tool_choice_directive(), None);
}

#[test]
fn clearing_rejects_the_in_flight_choice_cleared_whatever_the_callback_says() {
    let session = Session::new();
    let log = enqueue(&session, &["a", "b"], RejectAction::Requeue);
    enqueue(&session, &["c"], RejectAction::Requeue);
    assert_eq!(served(&session).as_deref(), Some("a"));
    session.clear_directives();
    assert_eq!(
        log.lock().clone(),
        [("a".to_string(), RejectReason::Cleared)]
    );
    assert_eq!(session.next_tool_choice_directive(), None);
    assert_eq!(served(&session), None);
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
}

#[test]
fn removing_a_directive_rejects_its_in_flight_choice_removed() {
    let session = Session::new();
    let (first, log) = directive(&["a", "b"], RejectAction::Requeue);
    let (second, _) = directive(&["c"], RejectAction::Drop);
    let first_id = session.enqueue_directive(first);
    let second_id = session.enqueue_directive(second);
    assert_ne!(first_id, second_id);
    assert_eq!(served(&session).as_deref(), Some("a"));
    assert!(session.remove_directive(first_id));
    assert_eq!(
        log.lock().clone(),
        [("a".to_string(), RejectReason::Removed)]
    );
    // Nothing of the removed directive comes back, requeue or not.
    assert_eq!(served(&session).as_deref(), Some("c"));
    assert!(session.remove_directive(second_id));
    assert_eq!(served(&session), None);
    assert!(!session.remove_directive(first_id));

    // A queued (not in-flight) directive is simply removed.
    let (third, third_log) = directive(&["d"], RejectAction::Drop);
    let third_id = session.enqueue_directive(third);
    assert!(session.remove_directive(third_id));
    assert!(third_log.lock().is_empty());
    assert_eq!(session.next_tool_choice_directive(), None);
}
