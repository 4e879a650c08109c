//! The pending-preview stack: newest first, with claims for exactly-once dispatch.
//!
//! Every preview gets a *stamp* from a counter that only grows; the head is the
//! unclaimed preview with the largest stamp. An ordered map from stamp to id
//! finds it without scanning, and a hash map from id finds any preview for
//! per-item decisions. A third map keeps the stamps of the waiting previews
//! of each agent session (and of those of no session), so that a session's
//! head, and how many sessions wait, are found without scanning either.
//! A claimed preview leaves the ordered map (so concurrent
//! dispatches skip it) but keeps its stamp, so a failed reject can put it back
//! exactly where it was.

use crate::maps::HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::maps::remove_and_shrink;
use crate::session::preview::Preview;

/// One preview in the stack and where it stands.
struct Slot {
    stamp: u64,
    preview: Arc<Preview>,
    claimed: bool,
}

/// The stack of pending previews of one session.
#[derive(Default)]
pub(crate) struct PendingStack {
    order: BTreeMap<u64, Arc<str>>,
    slots: HashMap<Arc<str>, Slot>,
    /// The stamps in `order`, by the session of their preview (`None`: no
    /// session). A group with nothing waiting has no entry.
    groups: HashMap<Option<String>, BTreeSet<u64>>,
    next_stamp: u64,
}

/// The key of the group `preview` waits in.
fn group_of(preview: &Preview) -> Option<String> {
    preview.session_id().map(str::to_string)
}

impl PendingStack {
    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Lists `preview` as waiting under `stamp`.
    fn list(&mut self, stamp: u64, preview: &Preview) {
        self.order.insert(stamp, Arc::clone(&preview.id));
        self.groups
            .entry(group_of(preview))
            .or_default()
            .insert(stamp);
    }

    /// Takes `stamp` (of `preview`) off the waiting list.
    fn unlist(&mut self, stamp: u64, preview: &Preview) -> Option<Arc<str>> {
        let key = group_of(preview);
        if let Some(stamps) = self.groups.get_mut(&key) {
            stamps.remove(&stamp);
            if stamps.is_empty() {
                remove_and_shrink(&mut self.groups, &key);
            }
        }
        self.order.remove(&stamp)
    }

    /// Puts `preview` at the head; an id already present (claimed or not)
    /// moves to the head, unclaimed.
    pub(crate) fn register(&mut self, preview: Arc<Preview>) {
        let stamp = self.stamp();
        let id: Arc<str> = Arc::clone(&preview.id);
        if let Some(old) = self.slots.remove(&id) {
            if !old.claimed {
                self.unlist(old.stamp, &old.preview);
            }
        }
        self.list(stamp, &preview);
        self.slots.insert(
            id,
            Slot {
                stamp,
                preview,
                claimed: false,
            },
        );
    }

    /// Claims the newest unclaimed preview, if any.
    pub(crate) fn claim_head(&mut self) -> Option<Arc<Preview>> {
        let (_, id) = self.order.last_key_value()?;
        let id = Arc::clone(id);
        self.claim(&id)
    }

    /// Claims the newest unclaimed preview of agent session `session`, if any.
    pub(crate) fn claim_head_in(&mut self, session: &str) -> Option<Arc<Preview>> {
        let id = self.head_in(session)?.id.clone();
        self.claim(&id)
    }

    /// Claims the preview with this id, if it is pending and unclaimed.
    pub(crate) fn claim(&mut self, id: &str) -> Option<Arc<Preview>> {
        let slot = self.slots.get_mut(id).filter(|slot| !slot.claimed)?;
        slot.claimed = true;
        let (stamp, preview) = (slot.stamp, Arc::clone(&slot.preview));
        self.unlist(stamp, &preview);
        Some(preview)
    }

    /// The slot of this very preview: its id may have been staged again
    /// meanwhile, and that newer preview (perhaps claimed by another writer)
    /// is not ours to touch.
    fn slot_of(&mut self, preview: &Preview) -> Option<&mut Slot> {
        self.slots
            .get_mut(&*preview.id)
            .filter(|slot| std::ptr::eq(Arc::as_ptr(&slot.preview), preview))
    }

    /// Returns a claimed preview to where it stood. Does nothing if it is
    /// gone (a session boundary cleared it meanwhile) or its id now holds a
    /// newer preview.
    pub(crate) fn unclaim(&mut self, preview: &Preview) {
        if let Some(slot) = self.slot_of(preview).filter(|slot| slot.claimed) {
            slot.claimed = false;
            let stamp = slot.stamp;
            self.list(stamp, preview);
        }
    }

    /// Re-registers a claimed preview at the head, unclaimed. Returns false
    /// (and does nothing) if it is gone, so a preview cleared by a session
    /// boundary never comes back, or if its id now holds a newer preview,
    /// which stands.
    pub(crate) fn requeue_at_head(&mut self, preview: &Preview) -> bool {
        let Some(preview) = self.slot_of(preview).map(|slot| Arc::clone(&slot.preview)) else {
            return false;
        };
        self.register(preview);
        true
    }

    /// Removes this very preview once it is decided; a newer preview staged
    /// under its id meanwhile stays. False if its id is gone altogether (a
    /// session boundary cleared it, and said so).
    pub(crate) fn remove_decided(&mut self, preview: &Preview) -> bool {
        if self.slot_of(preview).is_some() {
            return self.remove(&preview.id).is_some();
        }
        self.slots.contains_key(&*preview.id)
    }

    /// Removes a preview by id, claimed or not.
    pub(crate) fn remove(&mut self, id: &str) -> Option<Arc<Preview>> {
        let slot = remove_and_shrink(&mut self.slots, id)?;
        if !slot.claimed {
            self.unlist(slot.stamp, &slot.preview);
        }
        Some(slot.preview)
    }

    /// Removes every preview, head first among the unclaimed ones.
    pub(crate) fn clear(&mut self) -> Vec<Arc<Preview>> {
        let mut cleared: Vec<Arc<Preview>> = self
            .order
            .values()
            .rev()
            .filter_map(|id| self.slots.get(id).map(|slot| Arc::clone(&slot.preview)))
            .collect();
        cleared.extend(
            self.slots
                .values()
                .filter(|slot| slot.claimed)
                .map(|slot| Arc::clone(&slot.preview)),
        );
        self.order.clear();
        self.groups.clear();
        self.slots.clear();
        cleared
    }

    /// The newest unclaimed preview.
    pub(crate) fn head(&self) -> Option<&Arc<Preview>> {
        let (_, id) = self.order.last_key_value()?;
        self.slots.get(id).map(|slot| &slot.preview)
    }

    /// Looks a preview up by id, claimed or not.
    pub(crate) fn get(&self, id: &str) -> Option<&Arc<Preview>> {
        self.slots.get(id).map(|slot| &slot.preview)
    }

    /// Whether the preview with this id is claimed (being decided).
    pub(crate) fn is_claimed(&self, id: &str) -> bool {
        self.slots.get(id).is_some_and(|slot| slot.claimed)
    }

    /// Looks up a preview waiting to be decided (not claimed) by id.
    pub(crate) fn get_waiting(&self, id: &str) -> Option<&Arc<Preview>> {
        self.slots
            .get(id)
            .filter(|slot| !slot.claimed)
            .map(|slot| &slot.preview)
    }

    /// Unclaimed previews, head first.
    pub(crate) fn iter_head_first(&self) -> impl Iterator<Item = &Arc<Preview>> {
        self.order
            .values()
            .rev()
            .filter_map(|id| self.slots.get(id).map(|slot| &slot.preview))
    }

    /// The newest unclaimed preview of agent session `session`.
    pub(crate) fn head_in(&self, session: &str) -> Option<&Arc<Preview>> {
        let stamps = self.groups.get(&Some(session.to_string()))?;
        self.at_stamp(*stamps.last()?)
    }

    fn at_stamp(&self, stamp: u64) -> Option<&Arc<Preview>> {
        let id = self.order.get(&stamp)?;
        self.slots.get(id).map(|slot| &slot.preview)
    }

    /// The unclaimed previews of agent session `session`, head first.
    pub(crate) fn iter_in<'a>(
        &'a self,
        session: &str,
    ) -> impl Iterator<Item = &'a Arc<Preview>> + 'a {
        self.groups
            .get(&Some(session.to_string()))
            .into_iter()
            .flat_map(|stamps| stamps.iter().rev())
            .filter_map(|stamp| self.at_stamp(*stamp))
    }

    /// The groups with previews waiting: each agent session's id (`None`
    /// for the previews of no session), how many wait, and its head.
    pub(crate) fn groups(&self) -> impl Iterator<Item = (Option<&str>, usize, &Arc<Preview>)> {
        self.groups.iter().filter_map(|(session, stamps)| {
            let head = self.at_stamp(*stamps.last()?)?;
            Some((session.as_deref(), stamps.len(), head))
        })
    }

    /// How many groups (agent sessions, and "no session") have previews
    /// waiting.
    pub(crate) fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Previews waiting to be decided (not claimed).
    pub(crate) fn waiting(&self) -> usize {
        self.order.len()
    }

    /// Previews being applied or discarded right now.
    pub(crate) fn in_progress(&self) -> usize {
        self.slots.len() - self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::answer::ToolResult;
    use crate::session::preview::{apply_fn, Origin, PreviewExtras};

    fn preview(id: &str, session: Option<&str>) -> Arc<Preview> {
        let extras = PreviewExtras {
            origin: Some(Origin {
                session_id: session.map(str::to_string),
                tool_use_id: None,
            }),
            ..PreviewExtras::default()
        };
        Arc::new(Preview {
            id: Arc::from(id),
            label: id.to_string(),
            source_tool: "edit".to_string(),
            apply: apply_fn(|_, _| async { Ok(ToolResult::ok("done")) }),
            reject: None,
            take_back: None,
            extras: Some(Arc::new(extras)),
        })
    }

    fn ids<'a>(previews: impl Iterator<Item = &'a Arc<Preview>>) -> Vec<String> {
        previews.map(|preview| preview.id.to_string()).collect()
    }

    #[test]
    fn each_session_has_its_own_head_and_groups_follow_every_change() {
        let mut stack = PendingStack::default();
        stack.register(preview("a1", Some("a")));
        stack.register(preview("b1", Some("b")));
        stack.register(preview("a2", Some("a")));
        stack.register(preview("free", None));
        assert_eq!(stack.group_count(), 3);
        assert_eq!(ids(stack.iter_in("a")), ["a2", "a1"]);
        assert_eq!(stack.head_in("b").map(|head| &*head.id), Some("b1"));

        let claimed = stack.claim_head_in("a").expect("a's head");
        assert_eq!(&*claimed.id, "a2");
        assert_eq!(ids(stack.iter_in("a")), ["a1"], "a claim leaves its group");
        stack.unclaim(&claimed);
        assert_eq!(ids(stack.iter_in("a")), ["a2", "a1"], "and comes back");

        let b1 = stack.claim_head_in("b").expect("b's head");
        assert_eq!(stack.group_count(), 2, "b waits no more");
        assert!(stack.requeue_at_head(&b1));
        assert_eq!(stack.group_count(), 3);
        assert_eq!(stack.head().map(|head| &*head.id), Some("b1"));

        stack.remove("free");
        stack.remove("b1");
        assert_eq!(stack.group_count(), 1);
        stack.register(preview("a1", Some("b")));
        assert_eq!(ids(stack.iter_in("a")), ["a2"], "a re-registered id moves");
        assert_eq!(ids(stack.iter_in("b")), ["a1"]);
        assert!(stack.claim_head_in("nobody").is_none());
        stack.clear();
        assert_eq!(stack.group_count(), 0);
    }
}
