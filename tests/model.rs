//! Model-based test of the pending stack (issue 2): random sequences of
//! stage / resolve / reject / failing apply / failing reject / clear /
//! boundary (and the other ways to decide or move a preview) run against a
//! plain reference model, a `Vec` whose last element is the head. After
//! every step the pending ids (head first), the result text, ok/error, the
//! errno and the events must match the model.

use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use xdev::dispatch::dispatch_resolution_device;
use xdev::session::{EventKind, EventStream};
use xdev::{
    apply_fn, reject_fn, ApplyFn, CallbackError, Decision, Device, Dispatch, RejectFn,
    ResolveRequest, Session, ToolResult,
};

const NOTHING_TO_RESOLVE: &str = "No pending action to resolve. Nothing to apply or discard.";
const NOTHING_TO_REJECT: &str = "Nothing to reject; no pending action remains.";
const NOTHING_TO_DISCARD: &str = "Nothing to discard; no pending action remains.";

/// How the next apply callback behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApplyMode {
    /// Succeeds: `applied <label>: <reason>`.
    Ok,
    /// Fails with a non-tool error: `Apply failed: disk full for <label>`.
    Fail,
    /// Fails with a tool error whose text passes unchanged.
    ToolFail,
    /// Returns an error *result*: consumed, surfaces as an error.
    ErrorResult,
}

/// What reject callback a preview was staged with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RejectKind {
    /// None: the default discard text.
    Missing,
    /// Returns nothing: the default discard text.
    Silent,
    /// Returns its own text.
    Custom,
}

/// One step of a run.
#[derive(Debug, Clone)]
enum Op {
    Stage { custom: bool, reject: RejectKind },
    Resolve(ApplyMode),
    Reject { fails: bool },
    ToolApply(ApplyMode),
    ToolDiscard { fails: bool },
    ById { pick: usize, mode: ApplyMode },
    Restage(usize),
    Withdraw(usize),
    Clear,
    Boundary,
}

/// What the callbacks do when called; the test sets it before each step.
#[derive(Debug, Clone, Copy)]
struct Behaviour {
    apply: ApplyMode,
    reject_fails: bool,
}

type Shared = Arc<Mutex<Behaviour>>;

fn apply_for(label: &str, behaviour: &Shared) -> ApplyFn {
    let label = label.to_string();
    let behaviour = Arc::clone(behaviour);
    apply_fn(move |reason, _extra| {
        let mode = behaviour.lock().apply;
        let label = label.clone();
        async move {
            match mode {
                ApplyMode::Ok => Ok(ToolResult::ok(format!("applied {label}: {reason}"))),
                ApplyMode::Fail => Err(CallbackError::Failed(format!("disk full for {label}"))),
                ApplyMode::ToolFail => Err(CallbackError::Tool(format!("conflict in {label}"))),
                ApplyMode::ErrorResult => Ok(ToolResult::error(format!("stale {label}"))),
            }
        }
    })
}

fn reject_for(label: &str, kind: RejectKind, behaviour: &Shared) -> Option<RejectFn> {
    let label = label.to_string();
    let behaviour = Arc::clone(behaviour);
    let custom = match kind {
        RejectKind::Missing => return None,
        RejectKind::Silent => false,
        RejectKind::Custom => true,
    };
    Some(reject_fn(move |reason, _extra| {
        let fails = behaviour.lock().reject_fails;
        let label = label.clone();
        async move {
            if fails {
                Err(CallbackError::Tool(format!("cannot restore {label}")))
            } else if custom {
                Ok(Some(ToolResult::ok(format!("restored {label}: {reason}"))))
            } else {
                Ok(None)
            }
        }
    }))
}

/// One preview in the reference model.
#[derive(Debug, Clone)]
struct Entry {
    id: String,
    label: String,
    reject: RejectKind,
}

/// What one step should answer.
#[derive(Debug, PartialEq)]
struct Expected {
    ok: bool,
    text: String,
    errno: i32,
    events: Vec<(EventKind, String)>,
}

impl Expected {
    fn ok(text: impl Into<String>, events: Vec<(EventKind, String)>) -> Self {
        Expected {
            ok: true,
            text: text.into(),
            errno: 0,
            events,
        }
    }

    fn err(text: impl Into<String>, errno: i32, events: Vec<(EventKind, String)>) -> Self {
        Expected {
            ok: false,
            text: text.into(),
            errno,
            events,
        }
    }
}

/// The reference model: a plain stack, head last.
#[derive(Default)]
struct Model {
    stack: Vec<Entry>,
}

impl Model {
    fn ids_head_first(&self) -> Vec<String> {
        self.stack
            .iter()
            .rev()
            .map(|entry| entry.id.clone())
            .collect()
    }

    fn index(&self, pick: usize) -> Option<usize> {
        (!self.stack.is_empty()).then(|| pick % self.stack.len())
    }

    /// Applies the entry at `index` with `mode`.
    fn apply(&mut self, index: usize, mode: ApplyMode, reason: &str) -> Expected {
        let entry = self.stack[index].clone();
        let id = entry.id.clone();
        match mode {
            ApplyMode::Ok => {
                self.stack.remove(index);
                Expected::ok(
                    format!("applied {}: {reason}", entry.label),
                    vec![(EventKind::Applied, id)],
                )
            }
            ApplyMode::ErrorResult => {
                self.stack.remove(index);
                Expected::err(
                    format!("stale {}", entry.label),
                    libc::EIO,
                    vec![(EventKind::Applied, id)],
                )
            }
            ApplyMode::Fail | ApplyMode::ToolFail => {
                // Re-registered under the same id, so at the head again.
                let moved = self.stack.remove(index);
                self.stack.push(moved);
                let text = if mode == ApplyMode::Fail {
                    format!("Apply failed: disk full for {}", entry.label)
                } else {
                    format!("conflict in {}", entry.label)
                };
                Expected::err(
                    text,
                    libc::EIO,
                    vec![(EventKind::Failed, id.clone()), (EventKind::Requeued, id)],
                )
            }
        }
    }

    /// Discards the head.
    fn discard(&mut self, fails: bool, reason: &str) -> Option<Expected> {
        let entry = self.stack.last()?.clone();
        let id = entry.id.clone();
        if fails && entry.reject != RejectKind::Missing {
            return Some(Expected::err(
                format!("cannot restore {}", entry.label),
                libc::EIO,
                vec![(EventKind::Failed, id)],
            ));
        }
        self.stack.pop();
        let text = match entry.reject {
            RejectKind::Custom => format!("restored {}: {reason}", entry.label),
            RejectKind::Missing | RejectKind::Silent => {
                format!("Discarded: {}. Reason: {reason}", entry.label)
            }
        };
        Some(Expected::ok(text, vec![(EventKind::Discarded, id)]))
    }

    fn clear(&mut self) -> Vec<(EventKind, String)> {
        let events = self
            .ids_head_first()
            .into_iter()
            .map(|id| (EventKind::Cleared, id))
            .collect();
        self.stack.clear();
        events
    }
}

fn outcome(decision: &Decision) -> (bool, String, i32) {
    (
        decision.is_ok(),
        decision.text().to_string(),
        decision.errno(),
    )
}

fn events_of(stream: &mut EventStream) -> Vec<(EventKind, String)> {
    std::iter::from_fn(|| stream.try_recv())
        .map(|event| (event.kind, event.id))
        .collect()
}

fn seq_of(id: &str, tool: &str) -> u64 {
    id.strip_prefix(&format!("pending-action:{tool}:"))
        .and_then(|seq| seq.parse().ok())
        .unwrap_or_else(|| panic!("{id:?} is not pending-action:{tool}:<seq>"))
}

async fn run(ops: Vec<Op>) {
    let session = Session::new();
    let behaviour: Shared = Arc::new(Mutex::new(Behaviour {
        apply: ApplyMode::Ok,
        reject_fails: false,
    }));
    let mut events = session.subscribe();
    let mut model = Model::default();
    let mut last_seq = None;

    for (step, op) in ops.into_iter().enumerate() {
        let reason = format!("reason {step}");
        let set = |apply: ApplyMode, reject_fails: bool| {
            *behaviour.lock() = Behaviour {
                apply,
                reject_fails,
            };
        };
        // (actual ok, text, errno), expected
        let (actual, expected) = match op.clone() {
            Op::Stage { custom, reject } => {
                let label = format!("preview {step}");
                let apply = apply_for(&label, &behaviour);
                let reject_callback = reject_for(&label, reject, &behaviour);
                let (id, tool) = if custom {
                    let id = session.push_pending_action(&label, apply, reject_callback, None);
                    (id, "custom_tool")
                } else {
                    let id = session.queue_resolve_handler(&label, "edit", apply, reject_callback);
                    (id, "edit")
                };
                let seq = seq_of(&id, tool);
                assert!(
                    last_seq < Some(seq),
                    "seq must grow: {last_seq:?} then {seq}"
                );
                last_seq = Some(seq);
                model.stack.push(Entry {
                    id: id.clone(),
                    label,
                    reject,
                });
                let expected = Expected::ok("", vec![(EventKind::Staged, id)]);
                ((true, String::new(), 0), expected)
            }
            Op::Resolve(mode) => {
                set(mode, false);
                let answer = dispatch_resolution_device(&session, Device::Resolve, &reason).await;
                let expected = match model.stack.len() {
                    0 => Expected::err(NOTHING_TO_RESOLVE, libc::ENOENT, vec![]),
                    len => model.apply(len - 1, mode, &reason),
                };
                (outcome(&answer), expected)
            }
            Op::ToolApply(mode) => {
                set(mode, false);
                let answer = Dispatch::resolve_tool(ResolveRequest::apply(&reason))
                    .run(&session)
                    .await;
                let expected = match model.stack.len() {
                    0 => Expected::err(NOTHING_TO_RESOLVE, libc::ENOENT, vec![]),
                    len => model.apply(len - 1, mode, &reason),
                };
                (outcome(&answer), expected)
            }
            Op::Reject { fails } => {
                set(ApplyMode::Ok, fails);
                let answer = dispatch_resolution_device(&session, Device::Reject, &reason).await;
                let expected = model
                    .discard(fails, &reason)
                    .unwrap_or_else(|| Expected::ok(NOTHING_TO_REJECT, vec![]));
                (outcome(&answer), expected)
            }
            Op::ToolDiscard { fails } => {
                set(ApplyMode::Ok, fails);
                let answer = Dispatch::resolve_tool(ResolveRequest::discard(&reason))
                    .run(&session)
                    .await;
                let expected = model
                    .discard(fails, &reason)
                    .unwrap_or_else(|| Expected::ok(NOTHING_TO_DISCARD, vec![]));
                (outcome(&answer), expected)
            }
            Op::ById { pick, mode } => {
                set(mode, false);
                match model.index(pick) {
                    Some(index) => {
                        let id = model.stack[index].id.clone();
                        let answer = Dispatch::by_id(&id, ResolveRequest::apply(&reason))
                            .run(&session)
                            .await;
                        (outcome(&answer), model.apply(index, mode, &reason))
                    }
                    None => {
                        let answer = Dispatch::by_id(
                            "pending-action:edit:gone",
                            ResolveRequest::apply(&reason),
                        )
                        .run(&session)
                        .await;
                        let (ok, _, errno) = outcome(&answer);
                        // The text names the id; only its kind is modelled.
                        (
                            (ok, String::new(), errno),
                            Expected::err("", libc::ENOENT, vec![]),
                        )
                    }
                }
            }
            Op::Restage(pick) => match model.index(pick) {
                Some(index) => {
                    let entry = model.stack.remove(index);
                    let moved = session.restage(&entry.id);
                    let events = vec![(EventKind::Staged, entry.id.clone())];
                    model.stack.push(entry);
                    ((moved, String::new(), 0), Expected::ok("", events))
                }
                None => {
                    let moved = session.restage("pending-action:edit:gone");
                    ((moved, String::new(), 0), Expected::err("", 0, vec![]))
                }
            },
            Op::Withdraw(pick) => match model.index(pick) {
                Some(index) => {
                    let entry = model.stack.remove(index);
                    let withdrawn = session.withdraw(&entry.id, "producer exited");
                    let events = vec![(EventKind::Withdrawn, entry.id)];
                    ((withdrawn, String::new(), 0), Expected::ok("", events))
                }
                None => {
                    let withdrawn = session.withdraw("pending-action:edit:gone", "gone");
                    ((withdrawn, String::new(), 0), Expected::err("", 0, vec![]))
                }
            },
            Op::Clear => {
                session.clear_pending();
                ((true, String::new(), 0), Expected::ok("", model.clear()))
            }
            Op::Boundary => {
                session.clear();
                ((true, String::new(), 0), Expected::ok("", model.clear()))
            }
        };

        let context = format!("step {step}: {op:?}");
        assert_eq!(actual.0, expected.ok, "ok/error at {context}");
        assert_eq!(actual.1, expected.text, "text at {context}");
        assert_eq!(actual.2, expected.errno, "errno at {context}");
        assert_eq!(
            events_of(&mut events),
            expected.events,
            "events at {context}"
        );
        assert_eq!(
            session
                .pending()
                .into_iter()
                .map(|info| info.id)
                .collect::<Vec<_>>(),
            model.ids_head_first(),
            "stack at {context}"
        );
        assert_eq!(session.pending_count(), model.stack.len(), "{context}");
        assert_eq!(session.in_progress_count(), 0, "{context}");
        assert_eq!(
            session.pending_head().map(|head| head.id),
            model.stack.last().map(|entry| entry.id.clone()),
            "head at {context}"
        );
    }
}

fn apply_mode() -> impl Strategy<Value = ApplyMode> {
    prop_oneof![
        4 => Just(ApplyMode::Ok),
        2 => Just(ApplyMode::Fail),
        1 => Just(ApplyMode::ToolFail),
        1 => Just(ApplyMode::ErrorResult),
    ]
}

fn reject_kind() -> impl Strategy<Value = RejectKind> {
    prop_oneof![
        Just(RejectKind::Missing),
        Just(RejectKind::Silent),
        Just(RejectKind::Custom),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<bool>(), reject_kind())
            .prop_map(|(custom, reject)| Op::Stage { custom, reject }),
        5 => apply_mode().prop_map(Op::Resolve),
        3 => any::<bool>().prop_map(|fails| Op::Reject { fails }),
        2 => apply_mode().prop_map(Op::ToolApply),
        1 => any::<bool>().prop_map(|fails| Op::ToolDiscard { fails }),
        2 => (any::<usize>(), apply_mode()).prop_map(|(pick, mode)| Op::ById { pick, mode }),
        2 => any::<usize>().prop_map(Op::Restage),
        1 => any::<usize>().prop_map(Op::Withdraw),
        1 => Just(Op::Clear),
        1 => Just(Op::Boundary),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_session_matches_a_plain_stack(ops in prop::collection::vec(op(), 1..80)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(run(ops));
    }
}
