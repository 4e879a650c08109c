//! The core, [`XdevFs`]: one mount's state, which the request threads and
//! the tasks that answer waiting requests share, and what every decision
//! asks of it (what an inode is right now, what a text file says). Each
//! request family's decision is a file of [`super::requests`]; the replies
//! that wait are [`super::answers`]. No kernel is needed to drive it: the
//! decisions' unit tests call it directly (see `testing.rs`).

use std::sync::Arc;

use fuser::INodeNo;

use crate::fs::PolicyControl;
use crate::journal::Journal;
use crate::plan_desk::PlanDesk;
use crate::safe_text::one_line;
use crate::session::events::EventKind;
use crate::session::Session;
use crate::who::WhoCache;

use super::handles::drafts::Drafts;
use super::handles::table::Handles;
use super::handles::writer_sizes::WriterSizes;
use super::kernel::busy::Busy;
use super::kernel::control::Control;
use super::kernel::pollers::Pollers;
use super::tree::inodes::Inodes;
use super::tree::node::{ItemFile, Node, Owner, SessionFile};
use super::tree::status::{render_session_status, LastResult, Renders};
use super::tree::target::Controls;

/// The core of a mount: its state, and (in the files of `requests` and
/// `answers`) every decision about it.
pub(crate) struct XdevFs {
    pub(super) control: Arc<Control>,
    pub(super) session: Session,
    pub(super) journal: Journal,
    pub(super) plan: Option<PlanDesk>,
    pub(super) policy: Option<Arc<dyn PolicyControl>>,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) handles: Handles,
    pub(super) inodes: Arc<Inodes>,
    pub(super) last: LastResult,
    pub(super) owner: Owner,
    pub(super) who: WhoCache,
    pub(super) busy: Arc<Busy>,
    pub(super) pollers: Arc<Pollers>,
    pub(super) renders: Renders,
    pub(super) drafts: Drafts,
    pub(super) writer_sizes: WriterSizes,
}

impl XdevFs {
    /// A fresh mount of `session`'s devices: nothing open, nothing looked
    /// up. `plan/` exists only with a plan desk, `policy` only with a
    /// policy.
    pub(crate) fn new(
        session: Session,
        journal: Journal,
        plan: Option<PlanDesk>,
        policy: Option<Arc<dyn PolicyControl>>,
        runtime: tokio::runtime::Handle,
        owner: Owner,
    ) -> Self {
        let fs = XdevFs {
            control: Arc::new(Control::new(&runtime)),
            inodes: Arc::new(Inodes::new(plan.is_some(), policy.is_some())),
            session,
            journal,
            plan,
            policy,
            runtime,
            handles: Handles::default(),
            last: LastResult::default(),
            owner,
            who: WhoCache::default(),
            busy: Arc::default(),
            pollers: Arc::default(),
            renders: Renders::default(),
            drafts: Drafts::default(),
            writer_sizes: WriterSizes::default(),
        };
        fs.forget_decided_items();
        fs
    }

    /// The mount's own control files' back ends, for a message to one.
    pub(super) fn controls(&self) -> Controls<'_> {
        Controls {
            plan: self.plan.as_ref(),
            policy: self.policy.as_deref(),
        }
    }

    /// The handle the mount's owner keeps to cancel blocked writers.
    pub(crate) fn control(&self) -> Arc<Control> {
        Arc::clone(&self.control)
    }

    /// Once a preview leaves the stack, the kernel forgets its directory's
    /// name, which a listing may have let it cache (see
    /// [`super::kernel::notify`]).
    ///
    /// The hook runs under the session's lock, so it holds only the inode
    /// table and the control, never the whole mount state: if its upgrade
    /// were the last strong handle, dropping the mount state there (an open
    /// `stage` withdraws its preview, which takes the session's lock) would
    /// hang.
    fn forget_decided_items(&self) {
        let (inodes, control) = (Arc::downgrade(&self.inodes), Arc::downgrade(&self.control));
        self.session.on_event(move |event| {
            let (Some(inodes), Some(control)) = (inodes.upgrade(), control.upgrade()) else {
                return false;
            };
            let gone = matches!(
                event.kind,
                EventKind::Applied
                    | EventKind::Discarded
                    | EventKind::Withdrawn
                    | EventKind::Cleared
            );
            if gone && inodes.item_may_be_cached(&event.id) {
                if let Some(pending) = inodes.pending_dir() {
                    control.forget(pending, &event.id);
                }
            }
            true
        });
    }

    /// What `ino` is, if it (still) exists: a decided item is gone, and so
    /// is a draft once renamed onto a device or removed.
    pub(super) fn node(&self, ino: INodeNo) -> Option<Node> {
        let Some(node) = self.inodes.node(ino) else {
            return self.drafts.get(ino).map(|_| Node::Draft);
        };
        self.exists(&node).then_some(node)
    }

    /// Whether a node of the table exists right now: a pending item's files
    /// while it is pending, and its `detail` and `diff` only when it
    /// carries one.
    pub(super) fn exists(&self, node: &Node) -> bool {
        match node {
            Node::Item(id, ItemFile::Detail) => self.session.has_detail(id),
            Node::Item(id, ItemFile::Diff) => self.session.has_diff(id),
            Node::Item(id, ItemFile::Cwd) => self.session.cwd(id).is_some(),
            Node::Item(id, _) => self.session.is_pending(id),
            _ => true,
        }
    }

    /// The content of a read-only text node right now: what a read gets,
    /// and what its size is.
    pub(super) fn text(&self, node: &Node) -> Option<String> {
        match node {
            Node::Text(file) => Some(file.render(
                &self.session,
                &self.last,
                self.plan.as_ref(),
                self.policy.as_deref(),
                &self.journal,
            )),
            // One line each, escaped: these are line-oriented files.
            Node::Item(id, ItemFile::Label) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", one_line(&info.label))),
            Node::Item(id, ItemFile::Source) => self
                .session
                .preview(id)
                .map(|info| format!("{}\n", one_line(&info.source_tool))),
            // Pretty JSON, many lines by design: JSON escapes every control
            // character inside its strings, so nothing in it can forge a line.
            Node::Item(id, ItemFile::Detail) => self.session.detail(id),
            // Many lines by design too, made printable when staged.
            Node::Item(id, ItemFile::Diff) => self.session.diff(id),
            Node::Item(id, ItemFile::Cwd) => self
                .session
                .cwd(id)
                .map(|cwd| format!("{}\n", one_line(&cwd))),
            Node::AgentSession(session, SessionFile::Status) => {
                Some(render_session_status(&self.session, session))
            }
            _ => None,
        }
    }
}
