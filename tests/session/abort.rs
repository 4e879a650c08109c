//! Aborts and cancels: the caller stops waiting, the callback runs on; a cancel that has fired starts nothing.

use super::*;

/// Stages a slow edit, resolves it with `go` and aborts the session with
/// `why` while the apply waits: the preview's id, the apply's gate, and what
/// the resolve answered (at once: an abort does not wait for the apply).
async fn aborted_while_applying(session: &Session, why: &str) -> (String, Gate, Decision) {
    let (id, gate, resolving) = resolving_gated(session, "slow edit", "go").await;
    session.abort(why);
    let answer = answered_at_once(resolving).await;
    assert_eq!(answer.text(), format!("Aborted: {why}"));
    (id, gate, answer)
}

#[tokio::test]
async fn abort_returns_at_once_and_the_late_apply_is_still_recorded() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (id, mut gate, answer) = aborted_while_applying(&session, "user pressed stop").await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert_eq!(
        answer.error(),
        Some(&Error::Aborted("user pressed stop".into()))
    );
    // The apply is still running: the preview is claimed, not decided.
    assert!(session.is_pending(&id));
    assert_eq!(session.in_progress_count(), 1);
    assert_eq!(session.pending_count(), 0);

    gate.release(Ok(ToolResult::ok("applied late")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(applied.id, id);
    assert_eq!(applied.text.as_deref(), Some("applied late"));
    assert_eq!(applied.reason.as_deref(), Some("go"));
    assert!(applied.abandoned, "nobody waited for this outcome");
    assert!(!session.is_pending(&id));
    assert_eq!(session.in_progress_count(), 0);

    // Later dispatches are not affected by the earlier abort, and their
    // callers got the outcome themselves.
    stage(&session, "next", "edit");
    let answer = write(&session, Device::Resolve, "fine").await;
    assert_eq!(answer.text(), "applied next: fine");
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert!(!applied.abandoned);
}

#[tokio::test]
async fn abort_then_a_late_failure_requeues_the_preview() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (id, mut gate, _answer) = aborted_while_applying(&session, "shutdown").await;

    gate.release(Err(CallbackError::Failed("disk full".into())));
    let failed = next_event(&mut events, EventKind::Failed).await;
    assert_eq!(failed.text.as_deref(), Some("Apply failed: disk full"));
    assert!(failed.abandoned);
    let requeued = next_event(&mut events, EventKind::Requeued).await;
    assert_eq!(requeued.id, id);
    assert_eq!(pending_ids(&session), [&*id]);

    // The requeued preview can be retried.
    let retry = write(&session, Device::Resolve, "retry").await;
    assert_eq!(retry.text(), "applied on retry");
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn abort_also_releases_a_waiting_reject_and_tool() {
    let session = Session::new();
    let (release, released) = oneshot::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let id = session.queue_resolve_handler(
        "edit",
        "edit",
        echo_apply("edit"),
        Some(reject_fn(move |_reason, _extra| {
            let waiting = released.lock().take();
            let started_tx = started_tx.clone();
            async move {
                started_tx.send(()).expect("listening");
                if let Some(waiting) = waiting {
                    waiting.await.ok();
                }
                Ok(None)
            }
        })),
    );
    let rejecting = spawn_write(&session, Device::Reject, "no");
    timeout(PROMPTLY, started.recv()).await.expect("started");
    session.abort("esc");
    let answer = answered_at_once(rejecting).await;
    assert_eq!(answer.text(), "Aborted: esc");
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(session.is_pending(&id));
    let mut events = session.subscribe();
    release.send(()).expect("reject waiting");
    let discarded = next_event(&mut events, EventKind::Discarded).await;
    assert_eq!(
        discarded.text.as_deref(),
        Some("Discarded: edit. Reason: no")
    );
    assert!(!session.is_pending(&id));

    // The resolve tool races the abort signal too.
    let (gated, mut gate) = Gate::new();
    session.queue_resolve_handler("tool edit", "edit", gated, None);
    let tool_session = session.clone();
    let tool = tokio::spawn(async move {
        Dispatch::resolve_tool(ResolveRequest::apply("via tool"))
            .run(&tool_session)
            .await
    });
    gate.wait_started().await;
    session.abort("tool aborted");
    let answer = answered_at_once(tool).await;
    assert_eq!(answer.text(), "Aborted: tool aborted");
    gate.release(Ok(ToolResult::ok("late")));
    next_event(&mut events, EventKind::Applied).await;
}

#[tokio::test]
async fn a_cancel_that_has_already_fired_never_starts_the_work() {
    let session = Session::new();
    let mut events = session.subscribe();
    let calls = Arc::new(AtomicUsize::new(0));
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        counted_apply(&calls, "ran anyway"),
        None,
    );
    drain(&mut events);

    let answer = resolve_with_fired_cancel(&session, "go", "ctrl-c").await;
    assert_eq!(answer.text(), "Aborted: ctrl-c");
    assert_eq!(answer.errno(), libc::ECANCELED);
    // Nothing was taken, nothing ran, nothing was recorded, and the preview waits where it was.
    tokio::task::yield_now().await;
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
    assert!(drain(&mut events).is_empty());

    // The resolve tool takes a per-call cancel too.
    let answer = Dispatch::resolve_tool(ResolveRequest::apply("go"))
        .cancel(fired_cancel("turn aborted"))
        .run(&session)
        .await;
    assert_eq!(answer.text(), "Aborted: turn aborted");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(pending_ids(&session), [&*id]);

    // A cancel that never fires lets the next resolve apply it once.
    let answer = write(&session, Device::Resolve, "now").await;
    assert_eq!(answer.text(), "ran anyway");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(session.pending_count(), 0);
}

#[tokio::test]
async fn the_resolve_tool_gives_up_when_its_cancel_fires_and_the_apply_runs_on() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler("slow edit", "edit", apply, None);
    let (fire, fired) = oneshot::channel::<()>();
    let cancel: xdev::dispatch::Cancel = Box::pin(async move {
        let _ = fired.await;
        Error::Aborted("turn aborted".into())
    });
    let tool = {
        let session = session.clone();
        tokio::spawn(async move {
            Dispatch::resolve_tool(ResolveRequest::apply("go"))
                .cancel(cancel)
                .run(&session)
                .await
        })
    };
    gate.wait_started().await;
    fire.send(()).expect("cancel waiting");
    let answer = answered_at_once(tool).await;
    assert_eq!(answer.text(), "Aborted: turn aborted");
    gate.release(Ok(ToolResult::ok("applied late")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(applied.id, id);
    assert!(applied.abandoned);
}

/// A cancel that fired before the write takes nothing: a hard directive's
/// queue invoker is not used up, so the turn's end still tells its owner
/// that it was never invoked.
#[tokio::test]
async fn a_fired_cancel_leaves_the_queue_invoker_uninvoked() {
    let session = Session::new();
    let (invoker, seen) = recording_invoker("ran");
    let rejected: Arc<Mutex<Vec<RejectReason>>> = Arc::default();
    let told = Arc::clone(&rejected);
    session.enqueue_directive(
        Directive::new([ToolChoice::new("write").with_invoker(invoker)]).on_reject(
            move |_, reason| {
                told.lock().push(reason);
                RejectAction::Drop
            },
        ),
    );
    session.serve_tool_choice().expect("served");
    let answer = resolve_with_fired_cancel(&session, "go", "ctrl-c").await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(seen.lock().is_empty(), "the invoker never ran");
    assert_eq!(
        session.finish_turn(TurnEnd::Resolved),
        Some(RejectReason::NotInvoked)
    );
    assert_eq!(*rejected.lock(), [RejectReason::NotInvoked]);
}
