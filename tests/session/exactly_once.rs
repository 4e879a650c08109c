//! Exactly once, the corners: restaging, panics, cancelled waits, refused decisions.

use super::*;

#[tokio::test]
async fn restaging_a_preview_being_applied_does_not_let_it_apply_twice() {
    let session = Session::new();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "first").await;
    session.restage(&id);
    let second = write(&session, Device::Resolve, "second").await;
    assert_eq!(
        second.text, NOTHING_TO_RESOLVE,
        "claimed preview applied twice"
    );
    gate.release(Ok(ToolResult::ok("applied once")));
    assert_eq!(resolving.await.expect("join").text, "applied once");
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn a_panicking_apply_counts_as_a_failure_and_requeues() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        apply_fn(move |_reason, _extra| {
            let attempt = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if attempt == 1 {
                    panic!("apply callback bug");
                }
                Ok(ToolResult::ok("applied after panic"))
            }
        }),
        None,
    );
    let answer = write(&session, Device::Resolve, "x").await;
    assert_eq!(answer.errno(), libc::EIO);
    assert!(answer.text.starts_with("Apply failed: "), "{}", answer.text);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
    let retry = write(&session, Device::Resolve, "x").await;
    assert_eq!(retry.text, "applied after panic");
}

#[tokio::test]
async fn a_panicking_reject_leaves_the_preview_pending() {
    let session = Session::new();
    let id = session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        echo_apply("edit a.rs"),
        Some(reject_fn(|_reason, _extra| async {
            panic!("reject callback bug")
        })),
    );
    let answer = write(&session, Device::Reject, "x").await;
    assert_eq!(answer.errno(), libc::EIO);
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
}

#[tokio::test]
async fn a_cancelled_wait_returns_its_error_and_the_apply_still_completes() {
    let session = Session::new();
    let (apply, mut gate) = Gate::new();
    let id = session.queue_resolve_handler("slow", "edit", apply, None);
    let mut events = session.subscribe();
    let (signal, signalled) = oneshot::channel::<()>();
    let cancel: xdev::Cancel = Box::pin(async move {
        signalled.await.ok();
        Error::Interrupted
    });
    let waiting = session.clone();
    let writer = tokio::spawn(async move {
        xdev::dispatch_resolution_device_until(&waiting, Device::Resolve, "go", Some(cancel)).await
    });
    gate.wait_started().await;
    signal.send(()).expect("writer waiting");
    let answer = timeout(PROMPTLY, writer)
        .await
        .expect("at once")
        .expect("join");
    assert_eq!(answer.error, Some(Error::Interrupted));
    assert_eq!(answer.errno(), libc::EINTR);
    assert!(session.is_pending(&id));
    gate.release(Ok(ToolResult::ok("applied after the writer left")));
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(
        applied.text.as_deref(),
        Some("applied after the writer left")
    );
    assert!(!session.is_pending(&id));
}

#[tokio::test]
async fn a_refused_decision_runs_nothing_and_leaves_the_preview_where_it_stood() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let older = session.queue_resolve_handler("older", "edit", counted_apply(&calls, "a"), None);
    let newer = session.queue_resolve_handler("newer", "edit", counted_apply(&calls, "b"), None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let refuse = |seen: &Arc<Mutex<Vec<String>>>| {
        let seen = Arc::clone(seen);
        xdev::DispatchHooks {
            cancel: None,
            before_decision: Some(Box::new(move |id: &str, details: &Details| {
                seen.lock()
                    .push(format!("{id} {:?} {}", details.action, details.reason));
                Err(Error::JournalUnwritable {
                    errno: libc::ENOSPC,
                    cause: "No space left on device".into(),
                })
            })),
        }
    };
    let answer = xdev::dispatch_device_with(&session, Device::Resolve, "go", refuse(&seen)).await;
    assert_eq!(answer.errno(), libc::ENOSPC);
    assert_eq!(answer.id.as_deref(), Some(newer.as_str()));
    let request = ResolveRequest::discard("no");
    let answer = xdev::decide_pending_with(&session, &older, request, refuse(&seen)).await;
    assert_eq!(answer.errno(), libc::ENOSPC);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no callback ran");
    assert_eq!(pending_ids(&session), [newer.clone(), older.clone()]);
    assert_eq!(session.in_progress_count(), 0);
    assert_eq!(
        *seen.lock(),
        [format!("{newer} Apply go"), format!("{older} Discard no")]
    );
    // Nothing pending: no decision, so the check is not asked.
    let empty = Session::new();
    let answer = xdev::dispatch_device_with(&empty, Device::Reject, "x", refuse(&seen)).await;
    assert!(answer.is_ok());
    assert_eq!(seen.lock().len(), 2);
}
