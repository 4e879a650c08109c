//! The details every result carries, custom tools included.

use super::*;

#[tokio::test]
async fn details_carry_every_field_and_source_details_only_when_returned() {
    let session = Session::new();
    let seen = Arc::new(Mutex::new(Vec::<(String, Option<Value>)>::new()));
    let record = Arc::clone(&seen);
    session.queue_resolve_handler(
        "edit a.rs",
        "edit",
        apply_fn(move |reason, extra| {
            record.lock().push((reason, extra));
            async { Ok(ToolResult::ok("done").with_details(json!({"diff": "+1 -0"}))) }
        }),
        None,
    );
    let request = ResolveRequest {
        action: Action::Apply,
        reason: "ship it".into(),
        extra: Some(json!({"force": true})),
    };
    let answer = Dispatch::resolve_tool(request).run(&session).await;
    assert_eq!(answer.text(), "done");
    assert_eq!(
        seen.lock().clone(),
        [("ship it".to_string(), Some(json!({"force": true})))]
    );
    let details = answer.details().expect("a decided preview has details");
    assert_eq!(
        *details,
        Details {
            action: Action::Apply,
            reason: "ship it".into(),
            extra: Some(json!({"force": true})),
            source_tool_name: "edit".into(),
            label: "edit a.rs".into(),
            source_result_details: Some(json!({"diff": "+1 -0"})),
            origin: None,
        }
    );
    assert_eq!(
        serde_json::to_value(details).expect("serializes"),
        json!({
            "action": "apply",
            "reason": "ship it",
            "extra": {"force": true},
            "sourceToolName": "edit",
            "label": "edit a.rs",
            "sourceResultDetails": {"diff": "+1 -0"},
        })
    );

    // No extra given, no details returned: both keys are absent.
    session.queue_resolve_handler("write b.rs", "write", echo_apply("b"), None);
    let answer = dispatch(&session, Device::Reject, "nope").await;
    let details = answer.details().expect("details");
    assert_eq!(details.extra, None);
    assert_eq!(details.source_result_details, None);
    assert_eq!(
        serde_json::to_value(details).expect("serializes"),
        json!({
            "action": "discard",
            "reason": "nope",
            "sourceToolName": "write",
            "label": "write b.rs",
        })
    );
}

#[tokio::test]
async fn a_failed_apply_still_carries_details_without_source_details() {
    let session = Session::new();
    stage_failing_first(&session, "edit a.rs", 1, CallbackError::Failed("x".into()));
    let answer = dispatch(&session, Device::Resolve, "why").await;
    let details = answer.details().expect("details");
    assert_eq!(
        serde_json::to_value(details).expect("serializes"),
        json!({"action": "apply", "reason": "why", "sourceToolName": "edit", "label": "edit a.rs"})
    );
}

#[tokio::test]
async fn by_id_decides_one_id_and_refuses_unknown_ones() {
    let session = Session::new();
    let low = stage_echoing(&session, "low", "edit");
    let high = stage_echoing(&session, "high", "edit");
    let answer = Dispatch::by_id(&low, ResolveRequest::apply("by id"))
        .run(&session)
        .await;
    assert_eq!(answer.text(), "applied low: by id");
    assert_eq!(
        answer.details().map(|details| details.label.clone()),
        Some("low".to_string())
    );
    assert_eq!(pending_ids(&session), [&*high]);
    let again = Dispatch::by_id(&low, ResolveRequest::apply("twice"))
        .run(&session)
        .await;
    assert_eq!(again.errno(), libc::ENOENT);
    assert_eq!(pending_ids(&session), [&*high]);
    let discard = Dispatch::by_id(&high, ResolveRequest::discard("no"))
        .run(&session)
        .await;
    assert_eq!(discard.text(), discarded("high", "no"));
}

#[tokio::test]
async fn custom_tools_stage_into_the_same_stack_and_forward_their_details() {
    let session = Session::new();
    let builtin = stage_echoing(&session, "edit a.rs", "edit");
    let custom = session.push_pending_action(
        "deploy staging",
        apply_fn(|reason, _extra| async move {
            Ok(ToolResult::ok(format!("deployed: {reason}")).with_details(json!({"secret": 1})))
        }),
        Some(reject_fn(|_reason, _extra| async {
            Ok(Some(
                ToolResult::ok("deploy cancelled").with_details(json!({"secret": 2})),
            ))
        })),
        None,
    );
    seq_of(&custom, "custom_tool");
    assert_eq!(pending_ids(&session), [&*custom, &*builtin]);
    let head = session.pending_head().expect("head");
    assert_eq!(head.source_tool, "custom_tool");
    assert_eq!(head.label, "deploy staging");

    let answer = dispatch(&session, Device::Resolve, "go").await;
    assert_eq!(answer.text(), "deployed: go");
    let details = answer.details().expect("details");
    assert_eq!(details.source_tool_name, "custom_tool");
    assert_eq!(details.source_result_details, Some(json!({"secret": 1})));

    let named = session.push_pending_action(
        "rollback",
        echo_apply("rollback"),
        Some(reject_fn(|_reason, _extra| async {
            Ok(Some(
                ToolResult::ok("kept").with_details(json!({"secret": 3})),
            ))
        })),
        Some("rollback_tool"),
    );
    seq_of(&named, "rollback_tool");
    let answer = dispatch(&session, Device::Reject, "no").await;
    assert_eq!(answer.text(), "kept");
    let details = answer.details().expect("details");
    assert_eq!(details.source_tool_name, "rollback_tool");
    assert_eq!(details.source_result_details, Some(json!({"secret": 3})));
    assert_eq!(pending_ids(&session), [&*builtin]);
}

#[tokio::test]
async fn custom_tools_keep_their_result_details() {
    let session = Session::new();
    session.push_pending_action(
        "deploy staging",
        apply_fn(|reason, _extra| async move {
            Ok(ToolResult::ok(format!("deployed: {reason}")).with_details(json!({"run": 1})))
        }),
        None,
        None,
    );
    let answer = dispatch(&session, Device::Resolve, "go").await;
    let details = answer.details().expect("details");
    assert_eq!(details.source_result_details, Some(json!({"run": 1})));
}
