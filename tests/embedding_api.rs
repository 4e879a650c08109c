//! The library as an embedder meets it: a program written against 0.1
//! compiles (its names forward, each deprecated with what to use instead),
//! every type a root item's signature names is in the prelude, a
//! `Decision` gives its parts away owned, and a dispatch takes any future
//! as its cancel.
//!
//! Nothing here is deprecated except inside the one test that ports a 0.1
//! program, which allows it: a 0.2 name that warned would fail the build.
#![deny(deprecated)]

use std::future::Future;

use xdev::prelude::*;

/// An apply that answers `applied: <reason>`.
fn echo_apply() -> ApplyFn {
    apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(format!("applied: {reason}"))) })
}

/// An apply that never finishes, so only a cancel ends the wait.
fn endless_apply() -> ApplyFn {
    apply_fn(|_reason, _extra| std::future::pending())
}

/// A cancel that has fired already.
fn fired(why: &str) -> impl Future<Output = Error> + Send + 'static {
    std::future::ready(Error::Aborted(why.to_string()))
}

/// A 0.1 program, word for word as it was written against 0.1's crate
/// root: it compiles, and each call does what its replacement does.
#[tokio::test]
#[allow(deprecated)]
async fn a_program_written_for_0_1_compiles_and_decides_as_before() {
    use xdev::{
        decide_pending, decide_pending_with, dispatch_device_in, dispatch_device_with,
        dispatch_resolution_device, dispatch_resolution_device_until, plan_reply_handler,
        run_resolve_invocation, run_resolve_tool, run_resolve_tool_until, DispatchHooks,
        PlanApprovalDetails, PlanOutcome, PlanReply, PreviewExtras, Resolution, Scope,
    };

    let session = Session::new();

    // Staging under an explicit id, with and without extras.
    session.register_pending("edit-1", "edit a.rs", "edit", echo_apply(), None);
    let extras = PreviewExtras {
        detail: Some("{\"file\": \"b.rs\"}".to_string()),
        origin: Some(xdev::Origin {
            session_id: Some("agent-1".to_string()),
            tool_use_id: Some("call-1".to_string()),
        }),
    };
    assert!(!extras.is_empty());
    session.register_pending_with("edit-2", "edit b.rs", "edit", echo_apply(), None, extras);
    assert_eq!(
        session.detail("edit-2").as_deref(),
        Some("{\"file\": \"b.rs\"}")
    );
    let head: Option<xdev::PreviewInfo> = session.pending_head();
    assert_eq!(head.map(|head| head.id), Some("edit-2".to_string()));

    // Every dispatch function of 0.1, through its 0.2 forward.
    let scope: Scope = Scope::AgentSession("agent-1");
    let resolution = dispatch_device_in(
        &session,
        scope,
        Device::Resolve,
        "one",
        DispatchHooks::default(),
    )
    .await;
    assert_eq!(
        (resolution.text(), resolution.id()),
        ("applied: one", Some("edit-2"))
    );
    let resolution: Resolution =
        dispatch_resolution_device_until(&session, Device::Resolve, "two", None).await;
    assert_eq!(resolution.id(), Some("edit-1"));
    assert_eq!(session.pending_count(), 0);

    session.register_pending("edit-3", "edit c.rs", "edit", echo_apply(), None);
    let resolution = dispatch_device_with(
        &session,
        Device::Reject,
        "not yet",
        DispatchHooks::cancel(None),
    )
    .await;
    assert_eq!(resolution.id(), Some("edit-3"));
    session.register_pending("edit-3", "edit c.rs", "edit", echo_apply(), None);
    let resolution = decide_pending(&session, "edit-3", ResolveRequest::apply("three"), None).await;
    assert_eq!(resolution.result(), Ok("applied: three"));

    session.register_pending("edit-4", "edit d.rs", "edit", echo_apply(), None);
    let cancel: xdev::Cancel = Box::pin(fired("gave up"));
    let resolution = decide_pending_with(
        &session,
        "edit-4",
        ResolveRequest::apply("four"),
        DispatchHooks::cancel(Some(cancel)),
    )
    .await;
    assert_eq!(resolution.errno(), libc::ECANCELED);
    assert!(
        session.is_pending("edit-4"),
        "a fired cancel starts nothing"
    );
    let resolution =
        run_resolve_invocation(&session, "edit-4", ResolveRequest::apply("four")).await;
    assert!(resolution.is_ok());

    session.register_pending("edit-5", "edit e.rs", "edit", echo_apply(), None);
    let resolution = run_resolve_tool_until(
        &session,
        ResolveRequest::apply("five"),
        Some(Box::pin(fired("gave up"))),
    )
    .await;
    assert_eq!(resolution.errno(), libc::ECANCELED);
    let resolution = run_resolve_tool(&session, ResolveRequest::apply("five")).await;
    assert_eq!(resolution.text(), "applied: five");
    let resolution = dispatch_resolution_device(&session, Device::Resolve, "none").await;
    assert_eq!(resolution.errno(), libc::ENOENT);

    // The session boundaries all clear the previews and the directives.
    let boundaries: [fn(&Session); 3] = [
        Session::new_session,
        Session::switch_session,
        Session::branch_session,
    ];
    for boundary in boundaries {
        session.register_pending("edit-6", "edit f.rs", "edit", echo_apply(), None);
        session.enqueue_directive(xdev::Directive::new([xdev::ToolChoice::new("write")]));
        boundary(&session);
        assert_eq!(session.pending_count(), 0);
        assert!(session.serve_tool_choice().is_none());
    }

    // A plan handler answering a PlanReply.
    let handler: xdev::PlanHandler =
        plan_reply_handler(|proposal: xdev::PlanProposal| async move {
            let title = proposal.require_title()?.slug.clone();
            let details = PlanApprovalDetails {
                title: title.clone(),
                plan_path: format!("/plans/{title}.md"),
                outcome: PlanOutcome::Approved,
            };
            Ok(PlanReply::new(ToolResult::ok("approved"), details))
        });
    session.set_plan_proposal_handler(handler);
    let resolution = dispatch_resolution_device(&session, Device::Propose, "auth").await;
    assert_eq!(resolution.text(), "approved");
    let plan: Option<&PlanApprovalDetails> = resolution.plan();
    assert_eq!(
        plan.map(|plan| (plan.plan_path.as_str(), plan.outcome)),
        Some(("/plans/auth.md", PlanOutcome::Approved))
    );
    let reply: PlanReply = ToolResult::ok("text only").into();
    assert_eq!(ToolResult::from(reply), ToolResult::ok("text only"));

    // A producer's request, as 0.1 read it.
    let request = xdev::stage_protocol::StageRequest::parse(
        r#"{"label":"make","sessionId":"agent-1","toolUseId":"call-2"}"#,
    )
    .expect("a valid request");
    let extras: PreviewExtras = request.extras();
    assert_eq!(
        extras.origin.and_then(|origin| origin.tool_use_id),
        Some("call-2".to_string())
    );

    // The names that moved to modules, still at the root.
    let kind: xdev::EventKind = xdev::EventKind::Staged;
    let action: xdev::Action = xdev::Action::Apply;
    let details: Option<&xdev::Details> = None;
    assert_eq!(
        (kind, action, details),
        (EventKind::Staged, Action::Apply, None)
    );
    assert_eq!(xdev::CUSTOM_TOOL, xdev::session::CUSTOM_TOOL);
    assert_eq!(xdev::DEFAULT_MOUNT_DIR, "/xdev");
    assert_eq!(xdev::MAX_MESSAGE, xdev::device::MAX_MESSAGE);
    assert_eq!(xdev::MAX_FORCED_TURNS, xdev::harness::MAX_FORCED_TURNS);
    assert_eq!(xdev::errno_name(libc::EIO), "EIO");
    assert_eq!(xdev::message_text(b"ok\n"), Ok("ok\n".to_string()));
    let one: xdev::BoxFuture<u8> = Box::pin(async { 1 });
    assert_eq!(one.await, 1);
    let invoker: xdev::QueueInvoker =
        xdev::queue_invoker(|_request| async { Ok(ToolResult::ok("directive")) });
    let _: xdev::StandingHandler = invoker;
    let _: Option<xdev::PlanTitle> = xdev::PlanTitle::parse("auth").ok();
    let _: Option<xdev::PlanHandler> = Some(xdev::plan_handler(|_proposal| async {
        Ok(ToolResult::ok("approved"))
    }));
    let _: Vec<xdev::SessionSummary> = session.pending_sessions();
    let _: xdev::EventStream = session.subscribe();
    let _: Option<(xdev::Event, xdev::TurnEnd, xdev::DirectiveId)> = None;
    let _: Option<(xdev::RejectAction, xdev::RejectReason)> = None;
    let _: Option<(xdev::BeforeDecision, xdev::OnClaim)> = None;
    let _: Option<(xdev::ModelCallPlan, xdev::SoftRequirement, xdev::ToolCall)> = None;
    let _: Option<(xdev::ToolChoiceDirective, xdev::TurnVerdict)> = None;
    let _: xdev::SoftRequirementTracker = xdev::SoftRequirementTracker::new();
    let _: Option<(xdev::PlanStatus, xdev::PlanUnderReview, xdev::ContinueMode)> = None;
    let _: Option<(xdev::SeveralSessions, xdev::UnknownPlanHandler)> = None;
    let _: Option<(xdev::PlanOutcome, xdev::PlanApprovalDetails)> = None;
    let _: Option<xdev::MountPointState> = None;
    assert_eq!(xdev::DEFAULT_THREADS, xdev::mount::DEFAULT_THREADS);
    let missing = std::path::Path::new("/nonexistent/xdev-embedding-api");
    assert!(!xdev::is_stale_mount(missing));
    let _ = xdev::probe_mount_point(missing);
    let _: fn() = xdev::use_one_heap;
}

/// The seed runtime's name for a device write is at the crate root, and
/// not deprecated (this file denies deprecation everywhere else).
#[tokio::test]
async fn the_seed_runtimes_device_call_is_at_the_root() {
    let session = Session::new();
    session.queue_resolve_handler("edit a.rs", "edit", echo_apply(), None);
    let decision = xdev::dispatch_resolution_device(&session, Device::Resolve, "ok\n").await;
    assert_eq!(decision.into_result(), Ok("applied: ok".to_string()));
}

#[tokio::test]
async fn a_decision_gives_its_parts_away_owned() {
    let session = Session::new();
    let id = session.stage(
        "edit a.rs",
        "edit",
        echo_apply(),
        None,
        StageOptions::default(),
    );
    let decision = Dispatch::device(Device::Resolve, "tests pass")
        .run(&session)
        .await;
    let copy = decision.clone();
    assert_eq!(copy.clone().into_text(), "applied: tests pass");
    assert_eq!(copy.clone().into_plan(), None);
    let details: Details = copy.into_details().expect("a preview was decided");
    assert_eq!(
        (details.label.as_str(), details.action),
        ("edit a.rs", Action::Apply)
    );

    let DecisionParts {
        text,
        error,
        id: decided,
        details,
        plan,
        ..
    } = decision.into_parts();
    assert_eq!(text, "applied: tests pass");
    assert_eq!((error, decided, plan), (None, Some(id), None));
    assert_eq!(
        details.map(|details| details.reason),
        Some("tests pass".into())
    );

    // A failure's parts: its text is the error's message.
    let failed = Dispatch::device(Device::Resolve, "again")
        .run(&session)
        .await
        .into_parts();
    assert_eq!(
        failed.text,
        failed.error.as_ref().expect("failed").to_string()
    );
    assert_eq!(failed.error.map(|error| error.errno()), Some(libc::ENOENT));
}

#[tokio::test]
async fn a_dispatch_gives_up_on_any_future_that_yields_an_error() {
    let session = Session::new();
    let id = session.stage(
        "slow",
        "bash",
        endless_apply(),
        None,
        StageOptions::default(),
    );

    // A plain async block.
    let decision = Dispatch::by_id(&id, ResolveRequest::apply("go"))
        .cancel(async { Error::TimedOut("deadline".into()) })
        .run(&session)
        .await;
    assert_eq!(decision.result(), Err(&Error::TimedOut("deadline".into())));
    assert!(session.is_pending(&id), "a fired cancel starts nothing");

    // A boxed `Cancel`, as 0.1 built it.
    let boxed: Cancel = Box::pin(fired("boxed"));
    let decision = Dispatch::by_id(&id, ResolveRequest::apply("go"))
        .cancel(boxed)
        .run(&session)
        .await;
    assert_eq!(decision.errno(), libc::ECANCELED);

    // Any signal, with the error to give up with: here the claim itself
    // fires it, so the wait ends while the apply runs on.
    let (turn_over, turn_ended) = tokio::sync::oneshot::channel::<()>();
    let decision = Dispatch::by_id(&id, ResolveRequest::apply("go"))
        .hooks(DispatchHooks {
            cancel: Some(cancel_when(turn_ended, Error::Aborted("turn ended".into()))),
            on_claim: Some(Box::new(move |_id| {
                let _ = turn_over.send(());
            })),
            ..DispatchHooks::default()
        })
        .run(&session)
        .await;
    assert_eq!(decision.result(), Err(&Error::Aborted("turn ended".into())));
    assert!(
        session.is_in_progress(&id),
        "the apply was handed out and runs on"
    );
}
