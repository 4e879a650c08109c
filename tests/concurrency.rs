//! Exactly once under concurrency: many tokio
//! tasks on a multi-thread runtime race to finalize the same stack, and every
//! preview's callbacks are counted.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use xdev::dispatch::dispatch_resolution_device;
use xdev::session::EventKind;
use xdev::{
    apply_fn, reject_fn, CallbackError, Device, Dispatch, Error, ResolveRequest, Session,
    ToolResult,
};

const PREVIEWS: usize = 10_000;
const TASKS: usize = 8;
const NOTHING_TO_RESOLVE: &str = "No pending action to resolve. Nothing to apply or discard.";

/// One counter per preview and callback.
struct Counters {
    applies: Vec<AtomicUsize>,
    rejects: Vec<AtomicUsize>,
}

impl Counters {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Counters {
            applies: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            rejects: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_tasks_apply_ten_thousand_previews_exactly_once() {
    let session = Session::new();
    let counters = Counters::new(PREVIEWS);
    let mut events = session.subscribe();
    let mut ids = Vec::with_capacity(PREVIEWS);
    for index in 0..PREVIEWS {
        let applies = Arc::clone(&counters);
        let apply = apply_fn(move |_reason, _extra| {
            applies.applies[index].fetch_add(1, Ordering::SeqCst);
            async move {
                // Give other tasks a chance to run in the middle of an apply.
                tokio::task::yield_now().await;
                Ok(ToolResult::ok(index.to_string()))
            }
        });
        let rejects = Arc::clone(&counters);
        let reject = reject_fn(move |_reason, _extra| {
            rejects.rejects[index].fetch_add(1, Ordering::SeqCst);
            async { Ok(None) }
        });
        ids.push(session.queue_resolve_handler(
            format!("edit {index}"),
            "edit",
            apply,
            Some(reject),
        ));
    }
    assert_eq!(session.pending_count(), PREVIEWS);

    let workers: Vec<_> = (0..TASKS)
        .map(|worker| {
            let session = session.clone();
            tokio::spawn(async move {
                let mut applied = Vec::new();
                loop {
                    let answer =
                        dispatch_resolution_device(&session, Device::Resolve, "concurrent").await;
                    match answer.error() {
                        None => applied.push(
                            answer
                                .text()
                                .parse::<usize>()
                                .expect("apply answers its index"),
                        ),
                        Some(Error::NothingToResolve(text)) => {
                            assert_eq!(text, NOTHING_TO_RESOLVE, "worker {worker}");
                            // Nothing fails, so nothing can come back.
                            assert_eq!(session.pending_count(), 0, "worker {worker}");
                            return applied;
                        }
                        Some(other) => panic!("worker {worker}: unexpected error {other:?}"),
                    }
                }
            })
        })
        .collect();

    let mut applied = Vec::with_capacity(PREVIEWS);
    for worker in workers {
        applied.extend(worker.await.expect("worker finished"));
    }

    applied.sort_unstable();
    assert_eq!(
        applied,
        (0..PREVIEWS).collect::<Vec<_>>(),
        "each applied once"
    );
    for index in 0..PREVIEWS {
        assert_eq!(
            counters.applies[index].load(Ordering::SeqCst),
            1,
            "apply calls of preview {index}"
        );
        assert_eq!(
            counters.rejects[index].load(Ordering::SeqCst),
            0,
            "reject calls of preview {index}"
        );
    }
    assert_eq!(session.pending_count(), 0);
    assert_eq!(session.in_progress_count(), 0);
    assert!(ids.iter().all(|id| !session.is_pending(id)));

    let mut applied_events = 0;
    while let Some(event) = events.try_recv() {
        if event.kind == EventKind::Applied {
            applied_events += 1;
        }
    }
    assert_eq!(applied_events, PREVIEWS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_resolves_rejects_and_failures_finalize_each_preview_once() {
    const N: usize = 2_000;
    let session = Session::new();
    let counters = Counters::new(N);
    // Every fifth preview fails its first apply, and so is requeued.
    let failures = Arc::new(AtomicUsize::new(0));
    for index in 0..N {
        let applies = Arc::clone(&counters);
        let failures = Arc::clone(&failures);
        let apply = apply_fn(move |_reason, _extra| {
            let attempt = applies.applies[index].fetch_add(1, Ordering::SeqCst);
            let failures = Arc::clone(&failures);
            async move {
                tokio::task::yield_now().await;
                if index % 5 == 0 && attempt == 0 {
                    failures.fetch_add(1, Ordering::SeqCst);
                    return Err(CallbackError::Failed("first try fails".into()));
                }
                Ok(ToolResult::ok(format!("applied {index}")))
            }
        });
        let rejects = Arc::clone(&counters);
        let reject = reject_fn(move |_reason, _extra| {
            rejects.rejects[index].fetch_add(1, Ordering::SeqCst);
            async move { Ok(Some(ToolResult::ok(format!("discarded {index}")))) }
        });
        session.queue_resolve_handler(format!("edit {index}"), "edit", apply, Some(reject));
    }

    let workers: Vec<_> = (0..TASKS)
        .map(|worker| {
            let session = session.clone();
            tokio::spawn(async move {
                let mut finalized = Vec::new();
                let mut turn = 0usize;
                loop {
                    turn += 1;
                    let answer = match (worker + turn) % 4 {
                        0 => dispatch_resolution_device(&session, Device::Reject, "no").await,
                        1 => {
                            Dispatch::resolve_tool(ResolveRequest::apply("tool"))
                                .run(&session)
                                .await
                        }
                        _ => dispatch_resolution_device(&session, Device::Resolve, "yes").await,
                    };
                    match answer.result() {
                        Ok(text) if text.starts_with("Nothing to reject") => {}
                        Ok(text) => finalized.push(text.to_string()),
                        Err(Error::CallbackFailed(text)) => {
                            assert_eq!(text, "Apply failed: first try fails");
                        }
                        Err(Error::NothingToResolve(text)) => {
                            assert_eq!(text, NOTHING_TO_RESOLVE);
                        }
                        Err(other) => panic!("unexpected error {other:?}"),
                    }
                    // A failed apply may still be on its way back; stop only
                    // when nothing is pending or being decided.
                    if session.pending_count() == 0 && session.in_progress_count() == 0 {
                        return finalized;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();

    let mut finalized = HashSet::new();
    let mut answers = 0;
    for worker in workers {
        for text in worker.await.expect("worker finished") {
            answers += 1;
            assert!(finalized.insert(text.clone()), "{text} answered twice");
        }
    }
    assert_eq!(answers, N, "every preview finalized once");
    let mut applied = 0;
    for index in 0..N {
        let applies = counters.applies[index].load(Ordering::SeqCst);
        let rejects = counters.rejects[index].load(Ordering::SeqCst);
        let applied_here = finalized.contains(&format!("applied {index}"));
        let discarded_here = finalized.contains(&format!("discarded {index}"));
        assert!(
            applied_here ^ discarded_here,
            "preview {index} finalized exactly once"
        );
        assert!(rejects <= 1, "preview {index} discarded {rejects} times");
        let failed_first = usize::from(index % 5 == 0 && applies > 0);
        if applied_here {
            applied += 1;
            assert_eq!(applies, 1 + failed_first, "apply calls of preview {index}");
            assert_eq!(rejects, 0);
        } else {
            assert_eq!(rejects, 1);
            assert!(applies <= failed_first, "discarded preview {index} applied");
        }
    }
    assert!(applied > 0);
    assert!(failures.load(Ordering::SeqCst) > 0);
    assert_eq!(session.pending_count(), 0);
}
