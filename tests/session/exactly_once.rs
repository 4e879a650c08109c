//! Exactly once, the corners: restaging, panics, cancelled waits, refused decisions.

use super::*;

#[tokio::test]
async fn restaging_a_preview_being_applied_does_not_let_it_apply_twice() {
    let session = Session::new();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "first").await;
    session.restage(&id);
    let second = write(&session, Device::Resolve, "second").await;
    assert_eq!(
        second.text(),
        NOTHING_TO_RESOLVE,
        "claimed preview applied twice"
    );
    gate.release(Ok(ToolResult::ok("applied once")));
    assert_eq!(resolving.await.expect("join").text(), "applied once");
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
    assert!(
        answer.text().starts_with("Apply failed: "),
        "{}",
        answer.text()
    );
    assert_eq!(pending_ids(&session), [&*id]);
    assert_eq!(session.in_progress_count(), 0);
    let retry = write(&session, Device::Resolve, "x").await;
    assert_eq!(retry.text(), "applied after panic");
}

#[tokio::test]
async fn a_panicking_reject_leaves_the_preview_pending() {
    let reject = reject_fn(|_reason, _extra| async { panic!("reject callback bug") });
    let (session, id, answer) = rejected_through(reject, "x").await;
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
    let cancel: xdev::dispatch::Cancel = Box::pin(async move {
        signalled.await.ok();
        Error::Interrupted
    });
    let waiting = session.clone();
    let writer = tokio::spawn(async move {
        Dispatch::device(Device::Resolve, "go")
            .cancel(cancel)
            .run(&waiting)
            .await
    });
    gate.wait_started().await;
    signal.send(()).expect("writer waiting");
    let answer = answered_at_once(writer).await;
    assert_eq!(answer.error(), Some(&Error::Interrupted));
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
        xdev::dispatch::DispatchHooks {
            before_decision: Some(Box::new(move |id: &str, details: &Details| {
                seen.lock()
                    .push(format!("{id} {:?} {}", details.action, details.reason));
                Box::pin(std::future::ready(Err(Error::JournalUnwritable {
                    errno: libc::ENOSPC,
                    cause: "No space left on device".into(),
                })))
            })),
            ..xdev::dispatch::DispatchHooks::default()
        }
    };
    let answer = Dispatch::device(Device::Resolve, "go")
        .hooks(refuse(&seen))
        .run(&session)
        .await;
    assert_eq!(answer.errno(), libc::ENOSPC);
    assert_eq!(answer.id(), Some(newer.as_str()));
    let request = ResolveRequest::discard("no");
    let answer = Dispatch::by_id(&older, request)
        .hooks(refuse(&seen))
        .run(&session)
        .await;
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
    let answer = Dispatch::device(Device::Reject, "x")
        .hooks(refuse(&seen))
        .run(&empty)
        .await;
    assert!(answer.is_ok());
    assert_eq!(seen.lock().len(), 2);
}

/// A decision refused after its claim gives back only its own claim: if the
/// id was staged again meanwhile and another writer is applying that, the
/// other writer's claim stands, and a third writer finds nothing to take.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_decision_never_frees_another_writers_claim() {
    let session = Session::new();
    let id = "pending-action:edit:900001";
    let applies = Arc::new(AtomicUsize::new(0));
    let (open, gate) = tokio::sync::watch::channel(false);
    let gated_apply = {
        let applies = Arc::clone(&applies);
        move || {
            let (applies, gate) = (Arc::clone(&applies), gate.clone());
            apply_fn(move |_reason, _extra| {
                let (applies, mut gate) = (Arc::clone(&applies), gate.clone());
                async move {
                    applies.fetch_add(1, Ordering::SeqCst);
                    let _ = gate.wait_for(|open| *open).await;
                    Ok(ToolResult::ok("applied"))
                }
            })
        }
    };
    let extras = StageOptions::default;
    session.stage(
        "first",
        "edit",
        gated_apply(),
        None,
        StageOptions {
            id: Some(id.to_string()),
            ..extras()
        },
    );
    let (restager, restaged_apply, started) =
        (session.clone(), gated_apply.clone(), Arc::clone(&applies));
    let second_writer = Arc::new(Mutex::new(None));
    let second_handle = Arc::clone(&second_writer);
    let refusing = xdev::dispatch::DispatchHooks {
        before_decision: Some(Box::new(move |id, _details| {
            // Meanwhile the id is staged again and a second writer applies it.
            restager.stage(
                "again",
                "edit",
                restaged_apply(),
                None,
                StageOptions {
                    id: Some(id.to_string()),
                    ..extras()
                },
            );
            let (session, id) = (restager.clone(), id.to_string());
            *second_handle.lock() = Some(tokio::spawn(async move {
                Dispatch::by_id(&id, ResolveRequest::apply("second"))
                    .run(&session)
                    .await
            }));
            let since = std::time::Instant::now();
            while started.load(Ordering::SeqCst) == 0 && since.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            Box::pin(std::future::ready(Err(Error::Interrupted)))
        })),
        ..xdev::dispatch::DispatchHooks::default()
    };
    let first = Dispatch::by_id(id, ResolveRequest::apply("first"))
        .hooks(refusing)
        .run(&session)
        .await;
    assert_eq!(first.errno(), libc::EINTR);
    assert_eq!(
        applies.load(Ordering::SeqCst),
        1,
        "the second writer is applying"
    );

    let third = Dispatch::by_id(id, ResolveRequest::apply("third")).run(&session);
    let third = timeout(Duration::from_secs(1), third).await;
    assert!(
        matches!(&third, Ok(answer) if answer.errno() == libc::ENOENT),
        "a third writer took a preview another writer is applying: {third:?}"
    );
    let _ = open.send(true);
    let second = second_writer.lock().take().expect("second writer started");
    assert_eq!(second.await.expect("join").text(), "applied");
    assert_eq!(applies.load(Ordering::SeqCst), 1);
}

/// A preview applied while its id was staged again is still reported
/// applied, and the newer preview under that id stays pending.
#[tokio::test]
async fn a_preview_decided_after_its_id_was_staged_again_is_reported_and_the_newer_stays() {
    let session = Session::new();
    let mut events = session.subscribe();
    let (id, mut gate, resolving) = resolving_gated(&session, "slow", "first").await;
    session.stage(
        "newer",
        "edit",
        counted_apply(&Arc::default(), "newer"),
        None,
        StageOptions {
            id: Some(id.clone()),
            ..StageOptions::default()
        },
    );
    gate.release(Ok(ToolResult::ok("applied the first")));
    assert_eq!(resolving.await.expect("join").text(), "applied the first");
    let applied = next_event(&mut events, EventKind::Applied).await;
    assert_eq!(applied.id, id);
    assert_eq!(pending_ids(&session), [&*id], "the newer preview stands");
    assert_eq!(
        session.pending_head().map(|head| head.label),
        Some("newer".to_string())
    );
}
