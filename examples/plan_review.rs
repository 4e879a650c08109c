//! A plan desk in review mode, in process: the agent proposes a plan and its
//! `propose` waits until a reviewer approves it. Through a mount the same
//! steps are `echo auth > /xdev/propose` and `xdev plan approve`; here they
//! are two tasks, so no FUSE is needed, only the crate's core.
//!
//! Run it with `cargo run --example plan_review`.

use std::time::Duration;

use xdev::{Device, Dispatch, PlanDesk, PlanHandlerKind, Session};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Plans are files named `<slug>-plan.md` in the plan directory.
    let plans = tempfile::tempdir()?;
    std::fs::write(
        plans.path().join("auth-plan.md"),
        "# Auth\n1. Add the login route.\n2. Hash passwords with argon2.\n",
    )?;

    // The texts the agent reads name the mount point it would write to.
    let session = Session::new();
    session.set_mount_dir("/xdev");
    let desk = PlanDesk::new(
        session.clone(),
        plans.path().to_path_buf(),
        PlanHandlerKind::Review,
        None,
    );
    desk.enter();
    println!("plan mode: {}", session.plan_mode());

    // The agent proposes in a task of its own: in review mode its `propose`
    // blocks until a reviewer decides.
    let agent = tokio::spawn({
        let session = session.clone();
        async move {
            Dispatch::device(Device::Propose, "auth\n")
                .run(&session)
                .await
        }
    });

    // The reviewer watches the desk (what `plan/status` shows on a mount)
    // until the plan is under review, then approves it with feedback.
    let plan = loop {
        if let Some(plan) = desk.status().under_review {
            break plan;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    println!("under review: {} ({})", plan.slug, plan.path);
    desk.approve(Some("keep the session table migration separate"))?;

    // The agent's `propose` returns the decision, and plan mode is over.
    let answer = agent.await?;
    println!("propose -> {}", answer.text());
    println!("plan mode: {}", session.plan_mode());

    if !answer.is_ok() || session.plan_mode() {
        return Err("the plan should be approved and plan mode over".into());
    }
    Ok(())
}
