//! Staging helpers that both test suites use: the mount tests (through
//! `tests/common`) and the session tests (`tests/session`, which includes
//! this file by path). The session API only, no mount.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use xdev::{apply_fn, ApplyFn, CallbackError, Session, ToolResult};

/// What a staged test preview's callbacks saw.
#[derive(Default)]
pub(crate) struct Calls {
    pub applied: AtomicUsize,
    pub rejected: AtomicUsize,
    pub reasons: Mutex<Vec<String>>,
}

impl Calls {
    pub(crate) fn applied(&self) -> usize {
        self.applied.load(Ordering::SeqCst)
    }

    pub(crate) fn rejected(&self) -> usize {
        self.rejected.load(Ordering::SeqCst)
    }

    pub(crate) fn reasons(&self) -> Vec<String> {
        self.reasons.lock().clone()
    }
}

/// An apply that fails its first `failures` calls with `error`, then
/// answers `applied on attempt <n>`. `calls` counts every call and keeps
/// its reason.
pub(crate) fn failing_apply(failures: usize, error: CallbackError, calls: &Arc<Calls>) -> ApplyFn {
    let calls = Arc::clone(calls);
    apply_fn(move |reason, _extra| {
        let attempt = calls.applied.fetch_add(1, Ordering::SeqCst) + 1;
        calls.reasons.lock().push(reason);
        let error = error.clone();
        async move {
            if attempt <= failures {
                Err(error)
            } else {
                Ok(ToolResult::ok(format!("applied on attempt {attempt}")))
            }
        }
    })
}

/// Stages `label` (tool `edit`, no reject callback) with a
/// [`failing_apply`]: the preview's id and what its apply saw.
pub(crate) fn stage_failing_first(
    session: &Session,
    label: &str,
    failures: usize,
    error: CallbackError,
) -> (String, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    let id =
        session.queue_resolve_handler(label, "edit", failing_apply(failures, error, &calls), None);
    (id, calls)
}
