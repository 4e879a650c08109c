//! The pending-preview stack: newest first, with claims for exactly-once dispatch.
//!
//! Every preview gets a *stamp* from a counter that only grows; the head is the
//! unclaimed preview with the largest stamp. An ordered map from stamp to id
//! finds it without scanning, and a hash map from id finds any preview for
//! per-item decisions. A claimed preview leaves the ordered map (so concurrent
//! dispatches skip it) but keeps its stamp, so a failed reject can put it back
//! exactly where it was.

use std::collections::{BTreeMap, HashMap};
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
    next_stamp: u64,
}

impl PendingStack {
    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Puts `preview` at the head; an id already present (claimed or not)
    /// moves to the head, unclaimed.
    pub(crate) fn register(&mut self, preview: Arc<Preview>) {
        let stamp = self.stamp();
        let id: Arc<str> = Arc::clone(&preview.id);
        if let Some(old) = self.slots.remove(&id) {
            self.order.remove(&old.stamp);
        }
        self.order.insert(stamp, Arc::clone(&id));
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
        let (_, id) = self.order.pop_last()?;
        let slot = self.slots.get_mut(&id)?;
        slot.claimed = true;
        Some(Arc::clone(&slot.preview))
    }

    /// Claims the preview with this id, if it is pending and unclaimed.
    pub(crate) fn claim(&mut self, id: &str) -> Option<Arc<Preview>> {
        let slot = self.slots.get_mut(id).filter(|slot| !slot.claimed)?;
        slot.claimed = true;
        self.order.remove(&slot.stamp);
        Some(Arc::clone(&slot.preview))
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
            self.order.insert(stamp, Arc::clone(&preview.id));
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
            self.order.remove(&slot.stamp);
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

    /// Previews waiting to be decided (not claimed).
    pub(crate) fn waiting(&self) -> usize {
        self.order.len()
    }

    /// Previews being applied or discarded right now.
    pub(crate) fn in_progress(&self) -> usize {
        self.slots.len() - self.order.len()
    }
}
