//! Several agent sessions in one queue: each session's devices decide its
//! own previews, newest first, and the root devices refuse while more than
//! one session waits.

use super::*;
use xdev::session::{Origin, Scope};

/// Stages a preview of agent session `agent` (`None`: of no session).
fn stage_in(session: &Session, agent: Option<&str>, label: &str) -> String {
    let id = format!("pending-action:edit:{label}");
    let extras = StageOptions {
        origin: agent.map(|agent| Origin {
            session_id: Some(agent.to_string()),
            tool_use_id: Some(format!("toolu-{label}")),
        }),
        ..StageOptions::default()
    };
    session.stage(
        label,
        "edit",
        echo_apply(label),
        None,
        StageOptions {
            id: Some(id.clone()),
            ..extras
        },
    );
    id
}

/// [`dispatch`] through the devices of `scope`.
async fn dispatch_in(session: &Session, scope: Scope<'_>, device: Device, body: &str) -> Decision {
    Dispatch::device_in(scope, device, body).run(session).await
}

#[tokio::test]
async fn a_sessions_devices_decide_its_own_previews_newest_first() {
    let session = Session::new();
    let a1 = stage_in(&session, Some("s-a"), "a1");
    let b1 = stage_in(&session, Some("s-b"), "b1");
    let a2 = stage_in(&session, Some("s-a"), "a2");
    assert_eq!(
        session
            .pending_in("s-a")
            .into_iter()
            .map(|info| info.id)
            .collect::<Vec<_>>(),
        [a2.clone(), a1.clone()]
    );
    assert!(session.belongs_to(&a1, "s-a"));
    assert!(!session.belongs_to(&b1, "s-a"));

    let answer = dispatch_in(&session, Scope::AgentSession("s-a"), Device::Resolve, "ok").await;
    assert_eq!(answer.text(), "applied a2: ok");
    assert_eq!(answer.id(), Some(&*a2));
    let answer = dispatch_in(&session, Scope::AgentSession("s-a"), Device::Reject, "no").await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(answer.id(), Some(&*a1));
    assert_eq!(
        pending_ids(&session),
        [b1.as_str()],
        "the other session's stays"
    );

    let none = dispatch_in(&session, Scope::AgentSession("s-a"), Device::Resolve, "x").await;
    assert_eq!(none.text(), nothing_to_resolve());
    assert_eq!(none.errno(), libc::ENOENT);
    let none = dispatch_in(&session, Scope::AgentSession("s-a"), Device::Reject, "x").await;
    assert_eq!(none.text(), nothing_to_reject());
    assert!(none.is_ok());
    assert_eq!(pending_ids(&session), [b1]);
}

#[tokio::test]
async fn the_root_devices_work_as_before_while_one_group_waits() {
    for agent in [Some("s-a"), None] {
        let session = Session::new();
        stage_in(&session, agent, "one");
        let two = stage_in(&session, agent, "two");
        let answer = dispatch(&session, Device::Resolve, "ok").await;
        assert_eq!(answer.text(), "applied two: ok");
        assert_eq!(answer.id(), Some(two.as_str()));
        assert_eq!(session.pending_count(), 1);
    }
}

#[tokio::test]
async fn the_root_devices_refuse_with_ebusy_while_two_groups_wait_and_decide_nothing() {
    let session = Session::new();
    session.set_mount_dir("/xdev");
    stage_in(&session, Some("s-a"), "a1");
    stage_in(&session, Some("s-b"), "b1");
    stage_in(&session, None, "free");
    let before = pending_ids(&session);
    for device in [Device::Resolve, Device::Reject] {
        let answer = dispatch(&session, device, "ok").await;
        assert_eq!(answer.errno(), libc::EBUSY, "{answer:?}");
        let name = device.name();
        assert_eq!(
            answer.text(),
            format!(
                "Previews of 3 agent sessions are pending ((no session), s-a, s-b): /xdev/{name} decides none of them while more than one session waits. Write to one session's {name} instead: /xdev/sessions/s-a/{name}, /xdev/sessions/s-b/{name} (from a shell: `xdev {name} --session <session-id>`); or to /xdev/pending/<id>/{name} for one item (`xdev {name} --id <id>`)."
            )
        );
        assert_eq!(pending_ids(&session), before, "nothing decided");
    }
    let summaries = session.pending_sessions();
    let ids: Vec<&str> = summaries
        .iter()
        .map(|summary| summary.id.as_str())
        .collect();
    assert_eq!(ids, ["s-a", "s-b"], "no session is no listed session");
}

#[tokio::test]
async fn only_waiting_previews_count_and_a_session_that_empties_frees_the_root() {
    let session = Session::new();
    stage_in(&session, Some("s-a"), "a1");
    let b1 = stage_in(&session, Some("s-b"), "b1");
    let busy = dispatch(&session, Device::Resolve, "ok").await;
    assert_eq!(busy.errno(), libc::EBUSY);
    let answer = dispatch_in(&session, Scope::AgentSession("s-b"), Device::Resolve, "ok").await;
    assert_eq!(answer.id(), Some(b1.as_str()));
    let answer = dispatch(&session, Device::Resolve, "ok").await;
    assert_eq!(
        answer.text(),
        "applied a1: ok",
        "one session left: as before"
    );
}

#[tokio::test]
async fn a_refusal_names_a_few_sessions_and_counts_the_rest() {
    let session = Session::new();
    session.set_mount_dir("/xdev");
    for n in 0..20 {
        stage_in(&session, Some(&format!("s-{n:02}")), &format!("p{n}"));
    }
    let answer = dispatch(&session, Device::Resolve, "ok").await;
    assert_eq!(answer.errno(), libc::EBUSY);
    assert!(
        answer
            .text()
            .starts_with("Previews of 20 agent sessions are pending (s-00, s-01,"),
        "{}",
        answer.text()
    );
    assert!(
        answer.text().contains("s-07, and 12 more)"),
        "{}",
        answer.text()
    );
    assert!(
        answer
            .text()
            .contains("/xdev/sessions/<session-id>/resolve"),
        "{}",
        answer.text()
    );
    assert_eq!(session.pending_count(), 20);
}
