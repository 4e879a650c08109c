//! Session events.

use super::*;

#[tokio::test]
async fn events_report_every_change_with_its_id_label_tool_reason_and_text() {
    let session = Session::new();
    let mut events = session.subscribe();

    let applied = stage_echoing(&session, "edit a.rs", "edit");
    assert!(dispatch(&session, Device::Resolve, "tests pass")
        .await
        .is_ok());

    let discarded = stage_echoing(&session, "edit b.rs", "edit");
    assert!(dispatch(&session, Device::Reject, "wrong").await.is_ok());

    let flaky = session.queue_resolve_handler(
        "edit c.rs",
        "apply_patch",
        failing_apply(1, CallbackError::Failed("EROFS".into()), &Arc::default()),
        None,
    );
    assert_eq!(
        dispatch(&session, Device::Resolve, "try").await.errno(),
        libc::EIO
    );
    assert!(session.withdraw(&flaky, "producer exited"));
    assert!(!session.withdraw(&flaky, "twice"));

    let cleared = stage_echoing(&session, "edit d.rs", "edit");
    session.clear_pending();

    let seen = drain(&mut events);
    // Every event names its preview's label and source tool.
    let previews = [
        (&applied, "edit a.rs", "edit"),
        (&discarded, "edit b.rs", "edit"),
        (&flaky, "edit c.rs", "apply_patch"),
        (&cleared, "edit d.rs", "edit"),
    ];
    for event in &seen {
        let named = previews
            .iter()
            .find(|(id, ..)| **id == event.id)
            .map(|&(_, label, tool)| (label, tool));
        let said = (event.label.as_str(), event.source_tool.as_str());
        assert_eq!(named, Some(said), "{event:?}");
    }
    let summary: Vec<_> = seen
        .iter()
        .map(|event| {
            (
                event.kind,
                event.id.as_str(),
                event.reason.as_deref(),
                event.text.as_deref(),
                event.ok,
            )
        })
        .collect();
    let discard_text = super::discarded("edit b.rs", "wrong");
    assert_eq!(
        summary,
        [
            (EventKind::Staged, applied.as_str(), None, None, true),
            (
                EventKind::Applied,
                applied.as_str(),
                Some("tests pass"),
                Some("applied edit a.rs: tests pass"),
                true
            ),
            (EventKind::Staged, discarded.as_str(), None, None, true),
            (
                EventKind::Discarded,
                discarded.as_str(),
                Some("wrong"),
                Some(discard_text.as_str()),
                true
            ),
            (EventKind::Staged, flaky.as_str(), None, None, true),
            (
                EventKind::Failed,
                flaky.as_str(),
                Some("try"),
                Some("Apply failed: EROFS"),
                false
            ),
            (
                EventKind::Requeued,
                flaky.as_str(),
                Some("try"),
                Some("Apply failed: EROFS"),
                false
            ),
            (
                EventKind::Withdrawn,
                flaky.as_str(),
                Some("producer exited"),
                None,
                true
            ),
            (EventKind::Staged, cleared.as_str(), None, None, true),
            (EventKind::Cleared, cleared.as_str(), None, None, true),
        ]
    );
    assert_eq!(
        serde_json::to_value(&seen[1]).expect("serializes"),
        json!({
            "kind": "applied",
            "id": applied,
            "label": "edit a.rs",
            "sourceTool": "edit",
            "reason": "tests pass",
            "text": "applied edit a.rs: tests pass",
            "ok": true,
        })
    );
    // Every subscriber sees every event.
    let mut late = session.subscribe();
    stage_echoing(&session, "e", "edit");
    assert_eq!(drain(&mut late).len(), 1);
    assert_eq!(drain(&mut events).len(), 1);
}
