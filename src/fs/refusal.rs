//! How a decision says no: a [`Refusal`] carries the errno the caller gets
//! and the rule that fired, so that the adapter can log why (at debug, in
//! one place) before it replies with the errno. The reason is a short
//! static text: building a refusal costs no allocation and no formatting.
//!
//! A domain error (a handler's failure, a message broken) is not a
//! refusal: it is an outcome, recorded in the journal and the status files;
//! [`errno_of`] turns it into the errno of the reply.
//!
//! Some rules can only judge a decision once its preview is known (it is
//! claimed, and nothing of it has run): such a rule answers a domain
//! error, so that the refusal is the decision's outcome, journaled with
//! who wrote it, and the preview goes back where it stood.
//! [`agents_own_call`] is one.

use fuser::Errno;

use crate::error::Error;
use crate::session::Session;
use crate::texts;
use crate::who::{descends_from, Who};

/// A request refused by a decision: the errno it is answered with, and the
/// rule that refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The errno the caller gets.
    pub(crate) errno: Errno,
    /// The rule that fired, in a few words.
    pub(crate) why: &'static str,
}

/// `refuse!(EPERM, "only drafts are renamed")`: a [`Refusal`] with that
/// errno (a constant of [`fuser::Errno`]) and that rule.
macro_rules! refuse {
    ($errno:ident, $why:expr) => {
        $crate::fs::refusal::Refusal {
            errno: ::fuser::Errno::$errno,
            why: $why,
        }
    };
}
pub(crate) use refuse;

/// Turns a domain error into the errno of the reply.
pub(crate) fn errno_of(error: &Error) -> Errno {
    Errno::from_i32(error.errno())
}

/// **An agent does not decide its own calls.** A preview a hook staged for
/// an agent process (see [`crate::who::agent_of_stager`]) may not be
/// decided by that process, nor by any process it started: an agent's tool
/// that no hook gates (an MCP server's, say) could otherwise approve the
/// agent's own pending call. Returns the refusal of `writer`'s decision of
/// preview `id`, or `None` when the rule lets it through.
pub(crate) fn agents_own_call(session: &Session, id: &str, writer: &Who) -> Option<Error> {
    let agent = session.agent_of(id)?;
    if !descends_from(writer.pid, &agent) {
        return None;
    }
    tracing::info!(
        id,
        agent = agent.pid,
        writer = writer.pid,
        process = %writer.process,
        "refused a decision of an agent's call written from that agent's own processes"
    );
    Some(Error::AgentsOwnCall(texts::agents_own_call(
        id,
        (&agent.name, agent.pid),
        (&writer.process, writer.pid),
        &session.mount_dir(),
    )))
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;
    use crate::session::{apply_fn, Outside, StageOptions, ToolResult};
    use crate::who::agent_of_stager;

    #[test]
    fn a_decision_from_the_agents_own_tree_is_refused_and_one_from_outside_is_not() {
        let session = Session::new();
        // This test process runs a "hook" whose stdin is a pipe of its own,
        // as an agent does: the test process is then the hook's agent.
        let mut hook = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn a stand-in hook");
        let agent = agent_of_stager(hook.id()).expect("an agent");
        assert_eq!(agent.pid, std::process::id());
        let apply = apply_fn(|_reason, _extra| async { Ok(ToolResult::ok("ran")) });
        let outside = Outside {
            agent: Some(agent),
            ..Outside::default()
        };
        let guarded = session.stage_from_outside(
            "Bash: ls",
            "Bash",
            apply.clone(),
            None,
            StageOptions::default(),
            outside,
        );
        let me = Who::current();
        let refused = agents_own_call(&session, &guarded, &me).expect("the agent itself");
        assert_eq!(refused.errno(), libc::EPERM);
        assert!(
            refused.to_string().ends_with(&format!(
                "echo REASON > /xdev/pending/{guarded}/resolve, or reject."
            )),
            "{refused}"
        );
        let under_it = Who {
            pid: hook.id(),
            ..me.clone()
        };
        assert!(
            agents_own_call(&session, &guarded, &under_it).is_some(),
            "a child of the agent"
        );
        let above_it = Who {
            pid: nix::unistd::getppid().as_raw().unsigned_abs(),
            ..me.clone()
        };
        assert_eq!(
            agents_own_call(&session, &guarded, &above_it),
            None,
            "the agent's parent"
        );
        let unguarded = session.stage("edit", "edit", apply, None, StageOptions::default());
        assert_eq!(
            agents_own_call(&session, &unguarded, &me),
            None,
            "no hook staged it"
        );
        let _ = hook.kill();
        let _ = hook.wait();
    }
}
