//! Apply failures, error results and reject failures.

use super::*;

#[tokio::test]
async fn apply_failure_requeues_the_same_id_at_the_head_before_returning() {
    let session = Session::new();
    let other = stage_echoing(&session, "other", "edit");
    let (id, calls) = stage_failing_first(
        &session,
        "edit a.rs",
        1,
        CallbackError::Failed("disk full".into()),
    );
    let mut events = session.subscribe();

    let answer = dispatch(&session, Device::Resolve, "try").await;
    // By the time the error is returned the preview is back at the head.
    assert_eq!(pending_ids(&session), [&*id, &*other]);
    assert_eq!(session.in_progress_count(), 0);
    let seen = drain(&mut events);
    assert_eq!(
        kinds(&seen),
        [
            (EventKind::Failed, id.clone()),
            (EventKind::Requeued, id.clone())
        ]
    );
    assert_eq!(answer.text(), "Apply failed: disk full");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(
        answer.error(),
        Some(&Error::CallbackFailed("Apply failed: disk full".into()))
    );

    // A later resolve retries the same invoker.
    let retry = dispatch(&session, Device::Resolve, "retry").await;
    assert_eq!(retry.text(), "applied on attempt 2");
    assert_eq!(calls.applied(), 2);
    assert_eq!(pending_ids(&session), [&*other]);
}

#[tokio::test]
async fn apply_failure_of_a_lower_preview_moves_it_to_the_head() {
    let session = Session::new();
    let (low, _calls) =
        stage_failing_first(&session, "low", 1, CallbackError::Failed("locked".into()));
    let high = stage_echoing(&session, "high", "edit");
    let answer = Dispatch::by_id(&low, ResolveRequest::apply("by id"))
        .run(&session)
        .await;
    assert_eq!(answer.text(), "Apply failed: locked");
    assert_eq!(pending_ids(&session), [&*low, &*high]);
}

#[tokio::test]
async fn apply_failure_then_reject_discards() {
    let session = Session::new();
    let (id, calls) = stage_failing_first(
        &session,
        "edit a.rs",
        5,
        CallbackError::Failed("boom".into()),
    );
    assert_eq!(
        dispatch(&session, Device::Resolve, "x").await.text(),
        "Apply failed: boom"
    );
    let answer = dispatch(&session, Device::Reject, "give up").await;
    assert_eq!(answer.text(), discarded("edit a.rs", "give up"));
    assert!(!session.is_pending(&id));
    assert_eq!(calls.applied(), 1);
}

#[tokio::test]
async fn tool_errors_pass_unchanged_and_other_failures_are_wrapped() {
    let session = Session::new();
    stage_failing_first(
        &session,
        "edit",
        1,
        CallbackError::Tool("Edit conflict: a.rs changed on disk".into()),
    );
    let answer = dispatch(&session, Device::Resolve, "x").await;
    assert_eq!(answer.text(), "Edit conflict: a.rs changed on disk");
    assert_eq!(answer.errno(), libc::EIO);

    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "read-only file");
    let from_io: CallbackError = io.into();
    stage_failing_first(&session, "io", 1, from_io);
    let answer = dispatch(&session, Device::Resolve, "x").await;
    assert_eq!(answer.text(), "Apply failed: read-only file");
}

#[tokio::test]
async fn an_apply_that_returns_an_error_result_consumes_the_preview() {
    let session = Session::new();
    let below = stage_echoing(&session, "below", "edit");
    let id = session.queue_resolve_handler(
        "stale edit",
        "edit",
        apply_fn(|_reason, _extra| async {
            Ok(ToolResult::error("Preview is stale: a.rs changed")
                .with_details(json!({"stale": true})))
        }),
        None,
    );
    let mut events = session.subscribe();
    let answer = dispatch(&session, Device::Resolve, "apply").await;
    assert!(!answer.is_ok());
    assert_eq!(answer.text(), "Preview is stale: a.rs changed");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(
        answer.error(),
        Some(&Error::ErrorResult("Preview is stale: a.rs changed".into()))
    );
    assert_eq!(
        answer
            .details()
            .and_then(|details| details.source_result_details.clone()),
        Some(json!({"stale": true}))
    );
    assert!(!session.is_pending(&id));
    assert_eq!(pending_ids(&session), [&*below]);
    let seen = drain(&mut events);
    assert_eq!(kinds(&seen), [(EventKind::Applied, id)]);
    assert!(!seen[0].ok);
}

#[tokio::test]
async fn a_failing_reject_leaves_the_preview_pending_where_it_was() {
    let session = Session::new();
    let below = stage_echoing(&session, "below", "edit");
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&attempts);
    let id = stage_echoing_with_reject(
        &session,
        "edit a.rs",
        reject_fn(move |_reason, _extra| {
            let attempt = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if attempt == 1 {
                    Err(CallbackError::Tool("Could not restore a.rs".into()))
                } else {
                    Ok(None)
                }
            }
        }),
    );
    let mut events = session.subscribe();
    let answer = dispatch(&session, Device::Reject, "no").await;
    assert!(!answer.is_ok());
    assert_eq!(answer.text(), "Could not restore a.rs");
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(pending_ids(&session), [&*id, &*below]);
    assert_eq!(session.in_progress_count(), 0);
    assert_eq!(
        kinds(&drain(&mut events)),
        [(EventKind::Failed, id.clone())]
    );

    // Still there: a second reject discards it, a resolve would apply it.
    let answer = dispatch(&session, Device::Reject, "no").await;
    assert_eq!(answer.text(), discarded("edit a.rs", "no"));
    assert_eq!(pending_ids(&session), [&*below]);
}

#[tokio::test]
async fn a_reject_failure_propagates_as_the_callbacks_own_error_with_eio() {
    let (session, id, answer) = rejected_through(
        reject_fn(|_reason, _extra| async { Err(CallbackError::Failed("backup missing".into())) }),
        "no",
    )
    .await;
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(
        answer.text(),
        "backup missing",
        "a reject failure propagates as the callback's own error"
    );
    assert!(session.is_pending(&id));
}

#[tokio::test]
async fn discard_text_defaults_unless_the_reject_callback_answers() {
    let session = Session::new();
    // No reject callback.
    session.queue_resolve_handler("edit a.rs", "edit", echo_apply("a"), None);
    let answer = dispatch(&session, Device::Reject, "  not needed \n").await;
    assert_eq!(answer.text(), discarded("edit a.rs", "not needed"));
    // A reject callback that returns nothing.
    let nothing = reject_fn(|_reason, _extra| async { Ok(None) });
    stage_echoing_with_reject(&session, "edit b.rs", nothing);
    let answer = dispatch(&session, Device::Reject, "dup").await;
    assert_eq!(answer.text(), discarded("edit b.rs", "dup"));
    // A reject callback with its own answer.
    let restores = reject_fn(|reason, _extra| async move {
        Ok(Some(ToolResult::ok(format!("restored c.rs ({reason})"))))
    });
    stage_echoing_with_reject(&session, "edit c.rs", restores);
    let answer = dispatch(&session, Device::Reject, "dup").await;
    assert_eq!(answer.text(), "restored c.rs (dup)");
    // The resolve tool's discard uses the same default.
    session.queue_resolve_handler("edit d.rs", "edit", echo_apply("d"), None);
    let answer = Dispatch::resolve_tool(ResolveRequest::discard("wrong"))
        .run(&session)
        .await;
    assert_eq!(answer.text(), discarded("edit d.rs", "wrong"));
}

#[tokio::test]
async fn a_callback_that_did_nothing_fails_with_its_error_and_leaves_the_preview_where_it_stood() {
    let session = Session::new();
    let (low, calls) = stage_failing_first(
        &session,
        "low",
        1,
        CallbackError::NotDone(Error::NothingToResolve("nothing was applied".into())),
    );
    let high = stage_echoing(&session, "high", "edit");
    let mut events = session.subscribe();
    let answer = Dispatch::by_id(&low, ResolveRequest::apply("by id"))
        .run(&session)
        .await;
    assert_eq!(answer.text(), "nothing was applied");
    assert_eq!(answer.errno(), libc::ENOENT);
    assert_eq!(
        pending_ids(&session),
        [&*high, &*low],
        "not requeued at the head"
    );
    assert_eq!(session.in_progress_count(), 0);
    assert!(drain(&mut events).is_empty(), "neither failed nor requeued");
    let retry = Dispatch::by_id(&low, ResolveRequest::apply("again"))
        .run(&session)
        .await;
    assert!(retry.is_ok(), "{}", retry.text());
    assert_eq!(calls.applied(), 2);
}
