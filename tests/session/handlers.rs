//! The standing resolve handler and queue invokers.

use super::*;

#[tokio::test]
async fn the_standing_handler_serves_the_tool_but_never_the_devices() {
    let session = Session::new();
    let (handler, seen) = recording_invoker("standing handled");
    session.set_standing_resolve_handler(handler);

    // Devices ignore it.
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text(), NOTHING_TO_RESOLVE);
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text(), NOTHING_TO_REJECT);
    assert!(seen.lock().is_empty());

    // The tool falls back to it when nothing is pending.
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("approve"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), "standing handled");
    assert_eq!(
        tool.details().and_then(|d| d.source_result_details.clone()),
        Some(json!({"from": "standing handled"}))
    );
    let tool = Dispatch::resolve_tool(ResolveRequest::discard("deny"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), "standing handled");
    assert_eq!(
        seen.lock().clone(),
        [
            ResolveRequest::apply("approve"),
            ResolveRequest::discard("deny")
        ]
    );

    // A pending preview comes before it.
    stage(&session, "edit a.rs", "edit");
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("pending first"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), "applied edit a.rs: pending first");
    assert_eq!(seen.lock().len(), 2);

    // Cleared: the tool has its "nothing pending" texts again.
    session.clear_standing_resolve_handler();
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("x"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), NOTHING_TO_RESOLVE);
    assert_eq!(tool.errno(), libc::ENOENT);
    let tool = Dispatch::resolve_tool(ResolveRequest::discard("x"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), NOTHING_TO_DISCARD);
    assert!(tool.is_ok());
}

#[tokio::test]
async fn an_in_flight_queue_invoker_is_consulted_before_the_pending_stack() {
    let session = Session::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let staged = session.queue_resolve_handler("edit", "edit", counted_apply(&calls, "p"), None);
    let (invoker, seen) = recording_invoker("queue handled");
    let (standing, standing_seen) = recording_invoker("standing");
    session.set_standing_resolve_handler(standing);
    session.enqueue_directive(Directive::new([
        ToolChoice::new("exit_plan_mode").with_invoker(invoker)
    ]));

    // Queued but not yet in flight: not consulted.
    let before = write(&session, Device::Reject, "not yet").await;
    assert_eq!(before.text(), "Discarded: edit. Reason: not yet");
    assert!(seen.lock().is_empty());
    let staged_again =
        session.queue_resolve_handler("edit", "edit", counted_apply(&calls, "p"), None);

    let served = session.serve_tool_choice().expect("served");
    assert_eq!(served.tool_name, "exit_plan_mode");
    assert!(served.invoker.is_some());

    let resolve = write(&session, Device::Resolve, "approve\n").await;
    assert_eq!(resolve.text(), "queue handled");
    let details = resolve.details().expect("details");
    assert_eq!(details.action, Action::Apply);
    assert_eq!(details.reason, "approve");
    assert_eq!(
        details.source_result_details,
        Some(json!({"from": "queue handled"}))
    );
    let reject = write(&session, Device::Reject, "deny").await;
    assert_eq!(reject.text(), "queue handled");
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("tool"))
        .run(&session)
        .await;
    assert_eq!(tool.text(), "queue handled");
    assert_eq!(
        seen.lock().clone(),
        [
            ResolveRequest::apply("approve"),
            ResolveRequest::discard("deny"),
            ResolveRequest::apply("tool")
        ]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(standing_seen.lock().is_empty());
    assert_eq!(pending_ids(&session), [&*staged_again]);
    assert!(!session.is_pending(&staged));

    // Once its turn ends (invoked, so resolved), the pending stack answers.
    assert_eq!(session.finish_turn(TurnEnd::Resolved), None);
    let resolve = write(&session, Device::Resolve, "now").await;
    assert_eq!(resolve.text(), "p");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_queue_invoker_error_surfaces_with_its_errno() {
    let session = Session::new();
    session.enqueue_directive(Directive::new([ToolChoice::new("ask").with_invoker(
        queue_invoker(|request: ResolveRequest| async move {
            match request.action {
                Action::Apply => Err(Error::Busy("Reviewer is busy.".into())),
                Action::Discard => Ok(ToolResult::error("Could not decline.")),
            }
        }),
    )]));
    session.serve_tool_choice().expect("served");
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text(), "Reviewer is busy.");
    assert_eq!(resolve.errno(), libc::EBUSY);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text(), "Could not decline.");
    assert_eq!(reject.errno(), libc::EIO);
}

#[tokio::test]
async fn a_fired_cancel_never_calls_a_queue_invoker_or_the_standing_handler() {
    let session = Session::new();
    let (handler, seen) = recording_invoker("standing handled");
    session.set_standing_resolve_handler(handler);
    let answer = Dispatch::resolve_tool(ResolveRequest::apply("go"))
        .cancel(fired_cancel("turn aborted"))
        .run(&session)
        .await;
    assert_eq!(answer.errno(), libc::ECANCELED);
    assert!(seen.lock().is_empty());
}

#[tokio::test]
async fn queue_invokers_and_the_standing_handler_name_themselves() {
    let session = Session::new();
    session.set_standing_resolve_handler(queue_invoker(|_request| async {
        Ok(ToolResult::ok("plan approved").named("approve plan", "plan_approval"))
    }));
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("ok"))
        .run(&session)
        .await;
    let details = tool.details().expect("details");
    assert_eq!(details.label, "approve plan");
    assert_eq!(details.source_tool_name, "plan_approval");

    session.enqueue_directive(Directive::new([ToolChoice::new("ask").with_invoker(
        queue_invoker(|_request| async {
            Ok(ToolResult::ok("asked").named("ask the user", "ask_tool"))
        }),
    )]));
    session.serve_tool_choice();
    let answer = write(&session, Device::Resolve, "x").await;
    let details = answer.details().expect("details");
    assert_eq!(details.label, "ask the user");
    assert_eq!(details.source_tool_name, "ask_tool");
    session.finish_turn(TurnEnd::Resolved);

    // Unnamed, a handler is named after its tool.
    session.set_standing_resolve_handler(queue_invoker(|_request| async {
        Ok(ToolResult::ok("handled"))
    }));
    let tool = Dispatch::resolve_tool(ResolveRequest::apply("ok"))
        .run(&session)
        .await;
    let details = tool.details().expect("details");
    assert_eq!(
        (&*details.label, &*details.source_tool_name),
        ("resolve", "resolve")
    );
}
