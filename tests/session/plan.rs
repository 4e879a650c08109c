//! The plan proposal handler and `propose`.

use super::*;

#[tokio::test]
async fn nothing_pending_texts_carry_the_propose_hint_only_in_plan_mode() {
    let session = Session::new();
    session.set_mount_dir("/mnt/agent");
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(resolve.text(), NOTHING_TO_RESOLVE);
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(reject.text(), NOTHING_TO_REJECT);
    assert!(reject.is_ok());

    session.set_plan_proposal_handler(plan_handler(|_proposal| async {
        Ok(ToolResult::ok("submitted"))
    }));
    assert!(session.plan_mode());
    let resolve = write(&session, Device::Resolve, "x").await;
    assert_eq!(
        resolve.text(),
        "No pending action to resolve. Nothing to apply or discard. To submit the plan for approval, write its title to /mnt/agent/propose instead."
    );
    assert_eq!(resolve.errno(), libc::ENOENT);
    let reject = write(&session, Device::Reject, "x").await;
    assert_eq!(
        reject.text(),
        "Nothing to reject; no pending action remains. To submit the plan for approval, write its title to /mnt/agent/propose instead."
    );
    assert!(reject.is_ok());

    session.clear_plan_proposal_handler();
    assert!(!session.plan_mode());
    assert_eq!(
        write(&session, Device::Resolve, "x").await.text(),
        NOTHING_TO_RESOLVE
    );
    assert_eq!(
        write(&session, Device::Reject, "x").await.text(),
        NOTHING_TO_REJECT
    );
}

#[tokio::test]
async fn propose_outside_plan_mode_is_eperm_with_the_exact_text() {
    let session = Session::new();
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text(),
        "No plan is awaiting approval — /xdev/propose only accepts a plan title while plan mode is active."
    );
    assert_eq!(answer.errno(), libc::EPERM);
    session.set_mount_dir("/run/xd");
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text(),
        "No plan is awaiting approval — /run/xd/propose only accepts a plan title while plan mode is active."
    );
}

fn recording_plan_handler(session: &Session) -> Arc<Mutex<Vec<PlanProposal>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    session.set_plan_proposal_handler(plan_handler(move |proposal: PlanProposal| {
        record.lock().push(proposal.clone());
        async move {
            let title = proposal.require_title()?;
            Ok(ToolResult::ok(format!(
                "Plan {} submitted ({})",
                title.slug,
                title.file_name()
            )))
        }
    }));
    seen
}

#[tokio::test]
async fn propose_normalizes_the_title_before_calling_the_handler() {
    let session = Session::new();
    let staged = stage(&session, "edit a.rs", "edit");
    let seen = recording_plan_handler(&session);

    let answer = write(&session, Device::Propose, "  plan: v1.0 (draft)\n").await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(
        answer.text(),
        "Plan plan-v10-draft submitted (plan-v10-draft-plan.md)"
    );
    let answer = write(&session, Device::Propose, "auth-plan.md").await;
    assert_eq!(answer.text(), "Plan auth submitted (auth-plan.md)");
    let answer = write(&session, Device::Propose, "auth-refactor").await;
    assert_eq!(
        answer.text(),
        "Plan auth-refactor submitted (auth-refactor-plan.md)"
    );
    assert_eq!(
        seen.lock().clone(),
        [
            PlanProposal {
                title: Some(PlanTitle {
                    title: "plan-v10-draft".into(),
                    slug: "plan-v10-draft".into()
                })
            },
            PlanProposal {
                title: Some(PlanTitle {
                    title: "auth-plan".into(),
                    slug: "auth".into()
                })
            },
            PlanProposal {
                title: Some(PlanTitle {
                    title: "auth-refactor".into(),
                    slug: "auth-refactor".into()
                })
            },
        ]
    );
    // Propose never touches the pending stack.
    assert_eq!(pending_ids(&session), [staged]);
}

#[tokio::test]
async fn propose_refuses_bad_titles_with_einval_before_the_handler() {
    let session = Session::new();
    let seen = recording_plan_handler(&session);
    for (body, text) in [
        ("a/b", "Plan title must not contain path separators or '..'."),
        ("a\\b", "Plan title must not contain path separators or '..'."),
        ("../up", "Plan title must not contain path separators or '..'."),
        (
            "!!! ???",
            "Plan title must contain at least one letter, number, underscore, or hyphen after sanitization.",
        ),
    ] {
        let answer = write(&session, Device::Propose, body).await;
        assert_eq!(answer.text(), text, "{body:?}");
        assert_eq!(answer.errno(), libc::EINVAL, "{body:?}");
    }
    assert!(seen.lock().is_empty(), "handler must not see bad titles");

    // An empty body reaches the handler without a title; this one insists.
    let answer = write(&session, Device::Propose, " \n").await;
    assert_eq!(
        answer.text(),
        "Plan title is required and must not be empty."
    );
    assert_eq!(answer.errno(), libc::EINVAL);
    assert_eq!(seen.lock().clone(), [PlanProposal { title: None }]);
}

#[tokio::test]
async fn propose_passes_the_handlers_errors_through() {
    let session = Session::new();
    session.set_plan_proposal_handler(plan_handler(|proposal: PlanProposal| async move {
        match proposal.title.map(|title| title.slug) {
            Some(slug) if slug == "busy" => {
                Err(Error::Busy("Another plan is under review.".into()))
            }
            Some(slug) if slug == "missing" => {
                Err(Error::PlanNotFound("No plan file missing-plan.md.".into()))
            }
            _ => Ok(ToolResult::error("Plan rejected by reviewer.")),
        }
    }));
    let busy = write(&session, Device::Propose, "busy").await;
    assert_eq!(busy.text(), "Another plan is under review.");
    assert_eq!(busy.errno(), libc::EBUSY);
    let missing = write(&session, Device::Propose, "missing").await;
    assert_eq!(missing.errno(), libc::ENOENT);
    let rejected = write(&session, Device::Propose, "other").await;
    assert_eq!(rejected.text(), "Plan rejected by reviewer.");
    assert_eq!(rejected.errno(), libc::EIO);
    assert!(session.plan_proposal_handler().is_some());
}

#[tokio::test]
async fn propose_returns_the_plan_handlers_details_and_reports_them_in_an_event() {
    let session = Session::new();
    let mut events = session.subscribe();
    let details = xdev::session::PlanApprovalDetails {
        title: "auth".into(),
        plan_path: "/plans/auth-plan.md".into(),
        outcome: xdev::session::PlanOutcome::Approved,
    };
    let given = details.clone();
    session.set_plan_proposal_handler(xdev::session::plan_handler(move |_proposal| {
        let details = given.clone();
        async move { Ok(ToolResult::ok("Plan approved.").with_plan(details)) }
    }));
    let answer = write(&session, Device::Propose, "auth").await;
    assert_eq!(answer.text(), "Plan approved.");
    assert_eq!(answer.plan(), Some(&details));

    let event = next_event(&mut events, EventKind::Proposed).await;
    assert_eq!(event.plan, Some(details));
    assert_eq!(event.text.as_deref(), Some("Plan approved."));
    assert!(event.ok);
    assert_eq!(
        serde_json::to_value(&event)
            .ok()
            .and_then(|v| v.get("plan").cloned()),
        Some(json!({"title": "auth", "planPath": "/plans/auth-plan.md", "outcome": "approved"}))
    );
}
