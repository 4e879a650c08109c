//! Device inodes held for writing, and the openers sent away from them.
//!
//! While a write waits for its answer the kernel holds the file's inode
//! lock, and extending that file (every write after `>` does) needs the
//! same lock: a second `echo ... > resolve` on that inode would wait behind
//! a slow handler, out of reach of signals, and concurrent writers would
//! take turns instead of deciding side by side. So a device inode (a root
//! device, or a session's `resolve` or `reject`) is *held* from an open for
//! writing until that descriptor's first write is answered (or the
//! descriptor goes unwritten), and an open for writing of a held inode is
//! refused with `ESTALE`: the kernel then walks the path again, and the
//! lookup of a held device hands out a fresh inode (see
//! [`crate::fs::tree::inodes::Inodes::lookup`]). Holding from the open, not
//! only from the write, keeps two writers that open at the same moment off
//! one inode. The kernel retries only once; should the retry meet a held
//! inode again (another writer got there first), that open waits here,
//! where a signal still reaches it, until nothing holds the inode, and
//! waiters take it one at a time. A write in flight is always waited for.
//! A descriptor that has not written may belong to a program that waits
//! for this very open before it writes (it opens all its descriptors
//! first), so such descriptors are waited for only [`ALONE_WAIT`] without a
//! write begun or another hold taken in between; then the retry opens
//! beside them, and the other waiters start their wait again. A retry that
//! looked nothing up (a reopen through `/proc/<pid>/fd/N`, which no path walk can
//! lead elsewhere) fails with `ESTALE`. A proposal withdrawn because its
//! writer was stopped leaves its descriptor holding the inode, for the
//! retry on it.
//!
//! Nothing here asks the kernel to forget a name: such a notification waits
//! for the directory's lock, which a lookup may hold while it waits for the
//! very request loop that would send it.

use crate::maps::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuser::INodeNo;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// How long an opener sent away counts as retrying: the kernel's retry
/// follows at once, unless the machine is very busy.
const RETRY_WINDOW: Duration = Duration::from_secs(5);

/// Past this many remembered openers, the ones outside the window go.
const REDIRECTED_PRUNE_AT: usize = 1024;

/// How long a retry waits for descriptors that have not written, with no
/// write begun and no other hold taken in between, before it opens beside
/// them (see the module's notes):
/// far longer than a writer takes from its open to its write, far shorter
/// than anyone would notice.
const ALONE_WAIT: Duration = Duration::from_millis(100);

/// Descriptors holding, and writes in flight on, each device inode.
#[derive(Debug, Default)]
pub(crate) struct Busy {
    uses: Mutex<HashMap<u64, Uses>>,
    /// Threads sent away with `ESTALE`, by thread id.
    redirected: Mutex<HashMap<u32, Redirected>>,
    redirected_count: AtomicUsize,
    /// Numbers every hold taken and every write begun on a device inode,
    /// so that what an inode was last stirred by never repeats, even after
    /// it was freed and held anew.
    stirs: AtomicU64,
}

/// What holds one device inode.
#[derive(Debug, Default, Clone)]
struct Uses {
    /// Descriptors opened for writing whose first write has not come.
    held: usize,
    /// Writes waiting for their answer.
    writing: usize,
    /// The openers waiting for this inode, woken when what holds it changes.
    waiters: Option<Arc<Notify>>,
    /// The number of the last hold taken or write begun on it: a waiter's
    /// wait beside descriptors that have not written starts again whenever
    /// this moves (see [`Busy::hold_when_free`]).
    stirred: u64,
}

impl Uses {
    fn is_free(&self) -> bool {
        self.held == 0 && self.writing == 0
    }

    fn take_hold(&mut self, stir: u64) {
        self.held += 1;
        self.stirred = stir;
    }

    fn begin_write(&mut self, stir: u64) {
        self.writing += 1;
        self.stirred = stir;
    }

    /// The count of writes in flight (`true`) or of holds (`false`).
    fn count_mut(&mut self, writing: bool) -> &mut usize {
        if writing {
            &mut self.writing
        } else {
            &mut self.held
        }
    }
}

/// A thread sent away with `ESTALE`.
#[derive(Debug)]
struct Redirected {
    when: Instant,
    /// It looked a device up since: its next open is the kernel's retry.
    looked_up: bool,
}

/// What an open for writing of a device inode should do.
#[derive(Debug)]
pub(crate) enum OpenWrite {
    /// Open it, holding the inode from now on.
    Open(Held),
    /// First attempt on a held inode (or a retry that looked nothing up):
    /// `ESTALE`, so the kernel looks again.
    Redirect,
    /// The kernel's retry met a held inode again: wait until nothing
    /// holds it, then hold it (see [`Busy::hold_when_free`]).
    Wait,
}

impl OpenWrite {
    /// Whether the opener is sent away.
    pub(crate) fn is_redirect(&self) -> bool {
        matches!(self, OpenWrite::Redirect)
    }
}

impl Busy {
    /// A write on `ino` has reached the mount without a hold (the
    /// descriptor's hold went with an earlier message); it is in flight
    /// until the guard drops (after its reply).
    pub(crate) fn begin(self: &Arc<Self>, ino: INodeNo) -> Writing {
        self.uses
            .lock()
            .entry(ino.0)
            .or_default()
            .begin_write(self.stir());
        Writing(self.count(ino, true))
    }

    /// Whether a write on `ino` is in flight.
    #[cfg(test)]
    fn is_writing(&self, ino: INodeNo) -> bool {
        self.uses
            .lock()
            .get(&ino.0)
            .is_some_and(|uses| uses.writing > 0)
    }

    /// Whether a descriptor or a write holds `ino`: a lookup of its name
    /// then hands out a fresh inode.
    pub(crate) fn is_held(&self, ino: INodeNo) -> bool {
        self.uses.lock().contains_key(&ino.0)
    }

    /// Decides an open for writing of device inode `ino` by thread `tid`.
    /// Deciding and holding are one step, so two openers at the same
    /// moment never both find the inode free.
    pub(crate) fn open_write(self: &Arc<Self>, ino: INodeNo, tid: u32) -> OpenWrite {
        let retrying = self.take_redirect(tid);
        let mut all = self.uses.lock();
        let uses = all.entry(ino.0).or_default();
        if uses.is_free() {
            uses.take_hold(self.stir());
            return OpenWrite::Open(self.held(ino));
        }
        if retrying {
            return OpenWrite::Wait;
        }
        drop(all);
        self.remember_redirect(tid);
        OpenWrite::Redirect
    }

    /// Holds `ino` once nothing else does: no write in flight on it and no
    /// other descriptor open for writing. Waiters take it one at a time,
    /// so that two of them never truncate and write one inode together.
    /// A write in flight is always waited for; descriptors that have not
    /// written only for [`ALONE_WAIT`] in which nothing new holds the inode
    /// (no write begun, no other hold taken: another waiter's, or a new
    /// opener's of the inode freed meanwhile), after which the waiter holds
    /// the inode beside them. So waiters past the wait get in one after
    /// another, each a wait after the one before.
    pub(crate) async fn hold_when_free(self: &Arc<Self>, ino: INodeNo) -> Held {
        // When the waiter stops waiting for descriptors that have not
        // written, and how stirred the inode was when that was set; `None`
        // while a write is in flight.
        let mut beside_at: Option<(tokio::time::Instant, u64)> = None;
        // This inode's waiters, woken by every change of what holds it (and
        // only of this inode: churn on other devices wakes nobody here). The
        // wait is registered under the lock its changes take, so none is missed.
        let mut waiters: Arc<Notify>;
        loop {
            let freed = {
                let mut all = self.uses.lock();
                let uses = all.entry(ino.0).or_default();
                let now = tokio::time::Instant::now();
                if uses.writing > 0 {
                    beside_at = None;
                } else if beside_at.is_none_or(|(_, stirred)| stirred != uses.stirred) {
                    beside_at = Some((now + ALONE_WAIT, uses.stirred));
                }
                let beside = beside_at.is_some_and(|(at, _)| now >= at);
                if uses.is_free() || beside {
                    uses.take_hold(self.stir());
                    // The other waiters start their wait from this hold,
                    // not from whenever they next look.
                    let others = uses.waiters.clone().filter(|_| beside);
                    drop(all);
                    if let Some(others) = others {
                        others.notify_waiters();
                    }
                    return self.held(ino);
                }
                waiters = Arc::clone(uses.waiters.get_or_insert_with(Default::default));
                waiters.notified()
            };
            match beside_at {
                Some((at, _)) => drop(tokio::time::timeout_at(at, freed).await),
                None => freed.await,
            }
        }
    }

    /// Thread `tid` looked a name up where devices live (the root, a
    /// session's directory): if it was sent away, its next open is the
    /// kernel's retry.
    pub(crate) fn looked_up(&self, tid: u32) {
        if self.redirected_count.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(redirected) = self.redirected.lock().get_mut(&tid) {
            redirected.looked_up = true;
        }
    }

    /// A new number for a hold taken or a write begun.
    fn stir(&self) -> u64 {
        self.stirs.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The guard of a count already added to `ino`'s uses.
    fn count(self: &Arc<Self>, ino: INodeNo, writing: bool) -> Count {
        Count {
            busy: Arc::clone(self),
            ino,
            writing,
        }
    }

    fn held(self: &Arc<Self>, ino: INodeNo) -> Held {
        Held(self.count(ino, false))
    }

    /// Whether this open of `tid` is the kernel's retry after a redirect
    /// (the redirect is forgotten either way).
    fn take_redirect(&self, tid: u32) -> bool {
        if self.redirected_count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut redirected = self.redirected.lock();
        let taken = redirected.remove(&tid);
        self.redirected_count
            .store(redirected.len(), Ordering::Release);
        taken.is_some_and(|taken| taken.looked_up && taken.when.elapsed() < RETRY_WINDOW)
    }

    fn remember_redirect(&self, tid: u32) {
        let mut redirected = self.redirected.lock();
        if redirected.len() >= REDIRECTED_PRUNE_AT {
            redirected.retain(|_, taken| taken.when.elapsed() < RETRY_WINDOW);
        }
        let taken = Redirected {
            when: Instant::now(),
            looked_up: false,
        };
        redirected.insert(tid, taken);
        self.redirected_count
            .store(redirected.len(), Ordering::Release);
    }

    /// Changes what holds `ino` and wakes its waiters, forgetting an inode
    /// nothing holds any more.
    fn update(&self, ino: INodeNo, change: impl FnOnce(&mut Uses)) {
        let mut all = self.uses.lock();
        let mut waiters = None;
        if let Some(uses) = all.get_mut(&ino.0) {
            change(uses);
            waiters = uses.waiters.clone();
            if uses.is_free() {
                all.remove(&ino.0);
            }
        }
        drop(all);
        if let Some(waiters) = waiters {
            waiters.notify_waiters();
        }
    }
}

/// One count in an inode's [`Uses`]: as a hold or as a write in flight.
/// It moves between the two without the inode being free in between, and
/// dropping it takes the count away.
#[derive(Debug)]
struct Count {
    busy: Arc<Busy>,
    ino: INodeNo,
    writing: bool,
}

impl Count {
    /// Counts as a write (`true`) or as a hold (`false`) from now on.
    fn turn(mut self, writing: bool) -> Count {
        let was = self.writing;
        // A hold given back by a withdrawn write stirs nothing: its write
        // began already.
        let stir = writing.then(|| self.busy.stir());
        self.busy.update(self.ino, |uses| {
            *uses.count_mut(was) -= 1;
            match stir {
                Some(stir) => uses.begin_write(stir),
                None => uses.held += 1,
            }
        });
        self.writing = writing;
        self
    }
}

impl Drop for Count {
    fn drop(&mut self) {
        let writing = self.writing;
        self.busy
            .update(self.ino, |uses| *uses.count_mut(writing) -= 1);
    }
}

/// A descriptor's hold on a device inode, from its open for writing until
/// its first write (then a [`Writing`]) or its release.
#[derive(Debug)]
pub(crate) struct Held(Count);

impl Held {
    /// The descriptor's first write has reached the mount: the hold
    /// becomes a write in flight, with no moment between the two when the
    /// inode is free.
    pub(crate) fn write(self) -> Writing {
        Writing(self.0.turn(true))
    }
}

/// A write in flight; dropping it ends it.
#[derive(Debug)]
pub(crate) struct Writing(Count);

impl Writing {
    /// The write was withdrawn before anything was decided (a proposal
    /// whose writer was stopped): its descriptor holds the inode again, so
    /// that the retry on it finds nobody else's write in its way.
    pub(crate) fn hold_again(self) -> Held {
        Held(self.0.turn(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `open_write` said; an open's hold is kept in `holds`.
    fn said(open: OpenWrite, holds: &mut Vec<Held>) -> &'static str {
        match open {
            OpenWrite::Open(held) => {
                holds.push(held);
                "open"
            }
            OpenWrite::Wait => "wait",
            OpenWrite::Redirect => "redirect",
        }
    }

    #[test]
    fn a_held_inode_redirects_and_the_retry_after_a_lookup_waits() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(7);
        let mut holds = Vec::new();
        assert_eq!(said(busy.open_write(ino, 1), &mut holds), "open");
        assert!(busy.is_held(ino), "held from the open, before any write");
        assert_eq!(
            said(busy.open_write(ino, 2), &mut holds),
            "redirect",
            "an inode held open for writing sends the next writer away"
        );
        busy.looked_up(2);
        assert_eq!(
            said(busy.open_write(ino, 2), &mut holds),
            "wait",
            "the retry"
        );
        assert_eq!(
            said(busy.open_write(ino, 2), &mut holds),
            "redirect",
            "a later open is a first attempt again"
        );
        assert_eq!(
            said(busy.open_write(ino, 2), &mut holds),
            "redirect",
            "a retry that looked nothing up (a /proc reopen) is sent away again"
        );
        let writing = holds.remove(0).write();
        assert!(busy.is_held(ino), "the hold became the write");
        assert_eq!(said(busy.open_write(ino, 3), &mut holds), "redirect");
        drop(writing);
        assert!(!busy.is_held(ino));
        busy.looked_up(3);
        assert_eq!(
            said(busy.open_write(ino, 3), &mut holds),
            "open",
            "a retry that finds the inode free opens it"
        );
        holds.clear();
        assert!(
            !busy.is_held(ino),
            "a descriptor that goes unwritten lets go"
        );
        assert_nothing_left(&busy);
    }

    #[test]
    fn a_withdrawn_write_holds_its_inode_again_for_its_retry() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(9);
        let held = opened(&busy, ino);
        let held = held.write().hold_again();
        assert!(!busy.is_writing(ino) && busy.is_held(ino));
        let mut holds = Vec::new();
        assert_eq!(said(busy.open_write(ino, 2), &mut holds), "redirect");
        let writing = held.write();
        assert!(busy.is_writing(ino), "the retry on the descriptor writes");
        drop(writing);
        assert_nothing_left(&busy);
    }

    /// A descriptor's hold on free inode `ino`, opened by thread 1.
    fn opened(busy: &Arc<Busy>, ino: INodeNo) -> Held {
        let OpenWrite::Open(held) = busy.open_write(ino, 1) else {
            panic!("a free inode opens");
        };
        held
    }

    fn assert_nothing_left(busy: &Busy) {
        assert!(busy.uses.lock().is_empty(), "nothing is left behind");
    }

    /// Waits for a spawned `hold_when_free` of `ino`.
    fn waiter(busy: &Arc<Busy>, ino: INodeNo) -> tokio::task::JoinHandle<Held> {
        let busy = Arc::clone(busy);
        tokio::spawn(async move { busy.hold_when_free(ino).await })
    }

    /// An inode that a descriptor holds unwritten, and two openers waiting
    /// for it (started, and waiting).
    async fn unwritten_and_two_waiters(
        busy: &Arc<Busy>,
        ino: INodeNo,
    ) -> (Held, Vec<tokio::task::JoinHandle<Held>>) {
        let unwritten = opened(busy, ino);
        let waiters = vec![waiter(busy, ino), waiter(busy, ino)];
        settle().await;
        (unwritten, waiters)
    }

    /// The hold of the one of two waiters that finished (`why`), and the
    /// other, still waiting.
    async fn first_of_two(
        mut waiters: Vec<tokio::task::JoinHandle<Held>>,
        why: &str,
    ) -> (Held, tokio::task::JoinHandle<Held>) {
        settle().await;
        let done = waiters
            .iter()
            .position(|waiter| waiter.is_finished())
            .unwrap_or_else(|| panic!("{why}"));
        let first = waiters.remove(done).await.expect("first waiter");
        let other = waiters.remove(0);
        assert!(!other.is_finished(), "only one holds it at first");
        (first, other)
    }

    /// The hold `waiter` gets within `bound` of the paused clock (`why` it
    /// should).
    async fn held_within(
        waiter: tokio::task::JoinHandle<Held>,
        bound: Duration,
        why: &str,
    ) -> Held {
        tokio::time::timeout(bound, waiter)
            .await
            .unwrap_or_else(|_| panic!("{why}"))
            .expect("waiter")
    }

    /// Lets every task run until none can go on (the paused clock then
    /// moves on only through `sleep`).
    async fn settle() {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_open_beside_descriptors_that_have_not_written_after_a_while() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(5);
        let unwritten = opened(&busy, ino);
        // A program that opened this descriptor may wait for the waiters'
        // own opens before it writes (threads behind a barrier): waiting
        // for it could never end. The waiters get in one after the other.
        let (first, second) = (waiter(&busy, ino), waiter(&busy, ino));
        settle().await;
        assert!(
            !first.is_finished() && !second.is_finished(),
            "at first they wait"
        );
        let both = async { (first.await, second.await) };
        let (first, second) = tokio::time::timeout(ALONE_WAIT * 3, both)
            .await
            .expect("both held beside the descriptor that has not written");
        drop((first, second, unwritten));
        assert!(!busy.is_held(ino));
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_hold_an_inode_one_at_a_time_and_always_wait_for_a_write() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(3);
        let slow = busy.begin(ino);
        let other_inode = busy.begin(INodeNo(4));
        let mut waiters = vec![waiter(&busy, ino), waiter(&busy, ino)];
        drop(other_inode);
        tokio::time::sleep(ALONE_WAIT * 5).await;
        assert!(
            waiters.iter().all(|waiter| !waiter.is_finished()),
            "a write in flight is waited for however long it takes"
        );
        drop(slow);
        settle().await;
        let done = waiters
            .iter()
            .position(|waiter| waiter.is_finished())
            .expect("one waiter holds the freed inode");
        let first = waiters.remove(done).await.expect("first waiter");
        let second = waiters.remove(0);
        assert!(!second.is_finished(), "only one waiter holds it at first");
        // The first writes at once (as a writer does): the second waits
        // for that write too, not only for the first's open.
        let writing = first.write();
        tokio::time::sleep(ALONE_WAIT * 5).await;
        assert!(!second.is_finished(), "the first one's write is waited for");
        drop(writing);
        let held = held_within(second, ALONE_WAIT / 10, "held once the write is answered").await;
        drop(held);
        assert_nothing_left(&busy);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_is_woken_by_changes_of_its_own_inode_only() {
        use futures::FutureExt;
        let busy = Arc::new(Busy::default());
        let (mine, other) = (INodeNo(21), INodeNo(22));
        let writing = busy.begin(mine);
        let waiting = waiter(&busy, mine);
        settle().await;
        let waiters = busy.uses.lock()[&mine.0]
            .waiters
            .clone()
            .expect("the waiter waits on its inode");
        let woken = waiters.notified();
        tokio::pin!(woken);
        // Writes on other inodes (other devices, fresh inodes of this one)
        // come and go: nobody waiting here hears of them.
        for _ in 0..100 {
            drop(busy.begin(other));
        }
        assert!(woken.as_mut().now_or_never().is_none());
        assert!(!waiting.is_finished());
        drop(writing);
        assert!(
            woken.as_mut().now_or_never().is_some(),
            "its own write ended"
        );
        let held = waiting.await.expect("waiter");
        drop(held);
        assert_nothing_left(&busy);
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_past_the_wait_open_beside_one_at_a_time() {
        let busy = Arc::new(Busy::default());
        let (unwritten, waiters) = unwritten_and_two_waiters(&busy, INodeNo(31)).await;
        tokio::time::sleep(ALONE_WAIT + ALONE_WAIT / 2).await;
        // The other waits anew: a new descriptor holds the inode.
        let (first, second) = first_of_two(
            waiters,
            "one opens beside the descriptor that has not written",
        )
        .await;
        // The first writes, as a writer does: its write is waited for.
        let writing = first.write();
        tokio::time::sleep(ALONE_WAIT * 3).await;
        assert!(!second.is_finished(), "a write in flight is waited for");
        drop(writing);
        settle().await;
        assert!(
            !second.is_finished(),
            "a write just ended: the wait beside the unwritten one starts again"
        );
        let held = held_within(
            second,
            ALONE_WAIT * 2,
            "beside the unwritten descriptor after another wait",
        )
        .await;
        drop((held, unwritten));
        assert_nothing_left(&busy);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_freed_into_by_another_waits_anew_beside_it() {
        let busy = Arc::new(Busy::default());
        let (unwritten, waiters) = unwritten_and_two_waiters(&busy, INodeNo(41)).await;
        // The descriptor goes just before the waiters' wait is over: one
        // holds the inode, and the other must not open beside it a moment
        // later as if it had waited for it all along.
        tokio::time::sleep(ALONE_WAIT - ALONE_WAIT / 10).await;
        drop(unwritten);
        let (first, second) = first_of_two(waiters, "one holds the freed inode").await;
        tokio::time::sleep(ALONE_WAIT / 2).await;
        settle().await;
        assert!(
            !second.is_finished(),
            "its wait began again with the new hold"
        );
        drop(first);
        let held = held_within(second, ALONE_WAIT, "held once free").await;
        drop(held);
        assert_nothing_left(&busy);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_begun_and_answered_meanwhile_starts_the_wait_again() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(51);
        let unwritten = opened(&busy, ino);
        let waiting = waiter(&busy, ino);
        settle().await;
        tokio::time::sleep(ALONE_WAIT / 2).await;
        // A later write on a descriptor of this inode (its first message
        // went long ago), begun and answered.
        drop(busy.begin(ino));
        settle().await;
        tokio::time::sleep(ALONE_WAIT * 3 / 4).await;
        settle().await;
        assert!(
            !waiting.is_finished(),
            "past the first wait, but a write came in between"
        );
        let held = held_within(
            waiting,
            ALONE_WAIT,
            "beside the unwritten descriptor after a whole wait",
        )
        .await;
        drop((held, unwritten));
        assert_nothing_left(&busy);
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_waiter_gets_in_one_wait_after_the_one_before_it() {
        let busy = Arc::new(Busy::default());
        let ino = INodeNo(61);
        let unwritten = opened(&busy, ino);
        let first = waiter(&busy, ino);
        tokio::time::sleep(ALONE_WAIT / 2).await;
        let second = waiter(&busy, ino);
        let first = held_within(first, ALONE_WAIT, "the first opens beside").await;
        // The second's own wait would end half a wait later; it starts
        // anew from the first one's hold instead, and ends a wait after it.
        tokio::time::sleep(ALONE_WAIT * 3 / 4).await;
        settle().await;
        assert!(!second.is_finished(), "a whole wait after the first's hold");
        let second = held_within(second, ALONE_WAIT / 2, "a wait after the first").await;
        drop((first, second, unwritten));
        assert_nothing_left(&busy);
    }
}
