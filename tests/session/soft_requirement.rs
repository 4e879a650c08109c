//! The next tool-choice directive and the soft-requirement tracker.

use super::*;

#[test]
fn hard_directives_come_first_then_the_soft_requirement() {
    let session = Session::new();
    assert_eq!(session.next_tool_choice_directive(), None);
    let id = session.queue_resolve_handler("edit a.rs", "edit", echo_apply("a"), None);
    session.enqueue_directive(Directive::new([ToolChoice::new("todo_write")]));

    // Asking consumes nothing.
    for _ in 0..3 {
        assert_eq!(
            session.next_tool_choice_directive(),
            Some(ToolChoiceDirective::Hard {
                tool_name: "todo_write".into()
            })
        );
    }
    assert_eq!(served(&session).as_deref(), Some("todo_write"));
    assert_eq!(hard(&session).as_deref(), Some("todo_write"));
    session.finish_turn(TurnEnd::Resolved);

    for _ in 0..3 {
        let requirement = soft(&session);
        assert_eq!(requirement.id, id);
        assert_eq!(requirement.tool_name, "write");
        assert_eq!(requirement.reminder, reminder("edit", "/xdev"));
    }
    assert_eq!(session.pending_count(), 1);
}

#[test]
fn the_soft_requirement_follows_the_head_and_the_mount_dir() {
    let session = Session::new();
    session.set_mount_dir("/mnt/agent");
    let first = stage_echoing(&session, "a", "edit");
    let second = stage_echoing(&session, "b", "apply_patch");
    let requirement = soft(&session);
    assert_eq!(requirement.id, second);
    assert_eq!(
        requirement.reminder,
        "<system-reminder>\n`apply_patch` result above: PREVIEW — no files changed. Finalize now with `write`: write a one-sentence plain-text reason to `/mnt/agent/resolve` to APPLY, or `/mnt/agent/reject` to DISCARD.\n</system-reminder>"
    );
    assert!(requirement.accepts("write", Some("/mnt/agent/resolve")));
    assert!(!requirement.accepts("write", Some("/xdev/resolve")));
    assert!(session.withdraw(&second, "producer exited"));
    assert_eq!(soft(&session).id, first);
}

#[test]
fn the_predicate_accepts_only_writes_to_resolve_or_reject() {
    let (session, requirement) = one_staged();
    for path in [
        "/xdev/resolve",
        "/xdev/reject",
        "xd://resolve",
        "xd://reject",
    ] {
        assert!(requirement.accepts("write", Some(path)), "{path}");
        assert!(
            session.is_preview_resolution_tool_call("write", Some(path)),
            "{path}"
        );
    }
    for (tool, path) in [
        ("write", Some("/xdev/propose")),
        ("write", Some("xd://propose")),
        ("write", Some("/tmp/resolve")),
        ("write", Some("/xdev/resolve.txt")),
        ("write", Some("resolve")),
        ("write", None),
        ("edit", Some("/xdev/resolve")),
        ("bash", Some("xd://reject")),
        ("read", Some("/xdev/reject")),
    ] {
        assert!(!requirement.accepts(tool, path), "{tool} {path:?}");
        assert!(
            !session.is_preview_resolution_tool_call(tool, path),
            "{tool} {path:?}"
        );
    }
}

/// A session with one preview (`a`, tool `edit`) staged, and the soft
/// requirement it serves.
fn one_staged() -> (Session, SoftRequirement) {
    let session = Session::new();
    stage_echoing(&session, "a", "edit");
    let requirement = soft(&session);
    (session, requirement)
}

fn write_call(path: &str) -> ToolCall {
    ToolCall::new("write", Some(path))
}

#[test]
fn tracker_compliant_turns_run_and_the_reminder_is_injected_once() {
    let (_session, requirement) = one_staged();
    let mut tracker = SoftRequirementTracker::new();

    let plan = tracker.before_model_call(Some(&requirement));
    assert_eq!(plan.reminder, Some(reminder("edit", "/xdev")));
    assert_eq!(plan.force_tool, None);
    assert_eq!(
        tracker.after_model_turn(Some(&requirement), &[write_call("/xdev/resolve")]),
        TurnVerdict::Run
    );
    assert_eq!(
        tracker.after_model_turn(
            Some(&requirement),
            &[write_call("xd://reject"), write_call("/xdev/resolve")]
        ),
        TurnVerdict::Run
    );
    let plan = tracker.before_model_call(Some(&requirement));
    assert_eq!(plan.reminder, None);
    assert_eq!(plan.force_tool, None);
    assert_eq!(tracker.forced_turns(), 0);

    // Without a requirement nothing is injected, forced or blocked.
    let plan = tracker.before_model_call(None);
    assert_eq!((plan.reminder, plan.force_tool), (None, None));
    assert_eq!(
        tracker.after_model_turn(None, &[ToolCall::new("bash", None)]),
        TurnVerdict::Run
    );
}

#[test]
fn tracker_detours_bare_text_other_tools_and_mixed_batches() {
    let (_session, requirement) = one_staged();
    let cases: [(&str, Vec<ToolCall>); 4] = [
        ("bare text", vec![]),
        ("other tool", vec![ToolCall::new("bash", None)]),
        ("write elsewhere", vec![write_call("/tmp/notes.md")]),
        (
            "mixed batch",
            vec![
                write_call("/xdev/resolve"),
                ToolCall::new("read", Some("/a")),
            ],
        ),
    ];
    for (name, calls) in cases {
        let mut tracker = SoftRequirementTracker::new();
        tracker.before_model_call(Some(&requirement));
        let verdict = tracker.after_model_turn(Some(&requirement), &calls);
        assert_eq!(
            verdict,
            TurnVerdict::Detour {
                results: vec![detour(); calls.len()]
            },
            "{name}"
        );
        // Exactly the next model call is forced to `write`.
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool.as_deref(), Some("write"), "{name}");
        assert_eq!(plan.reminder, None, "{name}");
        assert_eq!(tracker.forced_turns(), 1, "{name}");
        assert_eq!(
            tracker.after_model_turn(Some(&requirement), &[write_call("/xdev/reject")]),
            TurnVerdict::Run,
            "{name}"
        );
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool, None, "{name}");
    }
}

#[test]
fn tracker_stops_after_three_forced_turns_for_the_same_head() {
    let (_session, requirement) = one_staged();
    let mut tracker = SoftRequirementTracker::new();
    tracker.before_model_call(Some(&requirement));
    let bash = [ToolCall::new("bash", Some("/xdev/resolve"))];
    for forced in 1..=3 {
        assert!(matches!(
            tracker.after_model_turn(Some(&requirement), &bash),
            TurnVerdict::Detour { .. }
        ));
        let plan = tracker.before_model_call(Some(&requirement));
        assert_eq!(plan.force_tool.as_deref(), Some("write"));
        assert_eq!(tracker.forced_turns(), forced);
    }
    assert_eq!(
        tracker.after_model_turn(Some(&requirement), &bash),
        TurnVerdict::Stop(force_loop())
    );
}

#[tokio::test]
async fn tracker_resets_and_reinjects_on_a_new_head_id() {
    let (session, first) = one_staged();
    let mut tracker = SoftRequirementTracker::new();
    assert!(tracker.before_model_call(Some(&first)).reminder.is_some());
    for _ in 0..2 {
        tracker.after_model_turn(Some(&first), &[]);
        tracker.before_model_call(Some(&first));
    }
    assert_eq!(tracker.forced_turns(), 2);
    tracker.after_model_turn(Some(&first), &[]);

    // A newer preview becomes the head: count reset, reminder re-injected.
    stage_echoing(&session, "b", "apply_patch");
    let second = soft(&session);
    assert_ne!(second.id, first.id);
    let plan = tracker.before_model_call(Some(&second));
    assert_eq!(plan.reminder, Some(reminder("apply_patch", "/xdev")));
    assert_eq!(plan.force_tool, None);
    assert_eq!(tracker.forced_turns(), 0);
    // It gets its own three forced turns.
    for forced in 1..=3 {
        assert!(matches!(
            tracker.after_model_turn(Some(&second), &[]),
            TurnVerdict::Detour { .. }
        ));
        tracker.before_model_call(Some(&second));
        assert_eq!(tracker.forced_turns(), forced);
    }
    assert_eq!(
        tracker.after_model_turn(Some(&second), &[]),
        TurnVerdict::Stop(force_loop())
    );

    // Resolving the new head brings the old one back as a new head id.
    assert!(dispatch(&session, Device::Resolve, "ok").await.is_ok());
    let back = soft(&session);
    assert_eq!(back.id, first.id);
    let plan = tracker.before_model_call(Some(&back));
    assert_eq!(plan.reminder, Some(reminder("edit", "/xdev")));
    assert_eq!(tracker.forced_turns(), 0);
}

#[test]
fn the_predicate_accepts_the_xd_prefix_in_any_case() {
    let (session, requirement) = one_staged();
    for path in ["XD://resolve", "Xd://reject", "xD://resolve"] {
        assert!(requirement.accepts("write", Some(path)), "{path}");
        assert!(
            session.is_preview_resolution_tool_call("write", Some(path)),
            "{path}"
        );
    }
    for path in ["XD://propose", "XD:/resolve", "XDresolve"] {
        assert!(!requirement.accepts("write", Some(path)), "{path}");
    }
}
