//! Mount lifecycle: claiming and checking the mount point, clearing a stale
//! mount, mounting in the background, noticing a mount removed from
//! outside, and unmounting without leaving anything behind.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuser::{Config, MountOption, SessionACL};

pub use crate::fs::PolicyControl;
use crate::fs::{Control, Owner, XdevFs, XdevFuse};
use crate::journal::Journal;
use crate::mount_point::watch::RemovalWatch;
use crate::mount_point::{self, check_fuse_device, unmount_dir, Claim};
use crate::plan_desk::PlanDesk;
use crate::session::Session;

// The mount point checks a caller may run before mounting.
pub use crate::mount_point::{is_stale_mount, probe_mount_point, MountPointState};

// What `mount()` fails with: the mount point's checks find most of it.
pub use crate::mount_point::MountError;

// Who the mount's files belong to.
pub use crate::mount_point::owner::{MountOwner, OwnerError};

/// How a mount is set up.
#[derive(Clone)]
pub struct MountOptions {
    /// Let other users in: they may list the directories (the pending ids
    /// and sessions) but read none of the files unless `share_journal` is
    /// set too; their writes to the devices fail with `EACCES` (the kernel
    /// enforces the mode bits).
    pub allow_other: bool,
    /// FUSE request threads (default [`DEFAULT_THREADS`]).
    pub threads: usize,
    /// Also append every journal record to this file. A decision's intent
    /// record is synced before it runs and its outcome record before its
    /// writer is answered; the syncing runs on a thread of its own, one
    /// `fdatasync` for every record queued meanwhile, so no request thread
    /// ever waits on the disk. It must be a regular file that only
    /// this process's user (or root) can write; it is created (mode 0600)
    /// when missing.
    pub journal_file: Option<PathBuf>,
    /// The plan review desk behind `plan/` (none: no `plan/` directory).
    pub plan: Option<PlanDesk>,
    /// How long decisions already running may take to finish when the
    /// mount stops (their writers then get the real outcome; default 10 s).
    /// When it ends, a writer still waiting is told what is known: `EIO`
    /// "outcome unknown" for an apply that had reached its applier (an
    /// in-process callback runs, or its producer read the apply line),
    /// `ECANCELED` where nothing was applied (an apply line its producer had
    /// not read, which is taken back; a decision not begun; a discard).
    pub grace: Duration,
    /// Create the mount point when it is missing, and remove it again when
    /// the mount ends (also after a SIGKILL: the next mount there removes
    /// it). Off by default: a harness that
    /// embeds xdev owns its directories, and a library that quietly
    /// creates and removes them (and keeps notes in `/run`) would surprise
    /// it. `xdev mount` turns it on, so that no bare directory is left
    /// where a later `echo ... > DIR/resolve` would create a file.
    pub create_dir: bool,
    /// Let other users (with `allow_other`) read the session's files: the
    /// status files, the items and the journal, which show labels, reasons,
    /// details and result texts (they may hold secrets). Off: every file
    /// but the directories is the mount owner's only (mode 0400; devices
    /// and `stage` 0600 always).
    pub share_journal: bool,
    /// Who the mount's files belong to (none: the user this process runs
    /// as). The owner decides and reads everything; a group given with it
    /// reads what the owner reads; see [`MountOwner`]. Only root hands a
    /// mount to another user: [`mount()`] refuses otherwise
    /// ([`MountError::Owner`]).
    pub owner: Option<MountOwner>,
    /// The rules that decide previews as they are staged, behind the root's
    /// `policy` file (none: no such file). Whoever keeps the rules decides
    /// (the `xdev` daemon's policy is one); the mount only shows them and
    /// passes a write of `reload` on.
    pub policy: Option<Arc<dyn PolicyControl>>,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            allow_other: false,
            threads: DEFAULT_THREADS,
            journal_file: None,
            plan: None,
            grace: DEFAULT_GRACE,
            create_dir: false,
            share_journal: false,
            owner: None,
            policy: None,
        }
    }
}

impl std::fmt::Debug for MountOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountOptions")
            .field("allow_other", &self.allow_other)
            .field("threads", &self.threads)
            .field("journal_file", &self.journal_file)
            .field("plan", &self.plan.is_some())
            .field("create_dir", &self.create_dir)
            .field("share_journal", &self.share_journal)
            .field("owner", &self.owner)
            .field("policy", &self.policy)
            .finish()
    }
}

/// A live mount. Unmounts on [`Mount::unmount`] and on drop: blocked
/// writers are told what became of their decisions (see
/// [`MountOptions::grace`]), then the mount is removed (lazily if something
/// still holds it busy).
pub struct Mount {
    dir: PathBuf,
    journal: Journal,
    control: Arc<Control>,
    grace: Duration,
    background: Option<fuser::BackgroundSession>,
    runtime: Option<tokio::runtime::Runtime>,
    /// Notices the mount removed from outside (none if it could not start;
    /// the session's end is noticed anyway).
    watch: Option<RemovalWatch>,
    /// The mount point's lock, and the directory if xdev created it:
    /// released (the directory removed when empty) on drop, after the
    /// unmount (fields drop after `Drop::drop` has run).
    claim: Claim,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("dir", &self.dir)
            .field("created_dir", &self.claim.created_dir.is_some())
            .finish_non_exhaustive()
    }
}

/// Mounts the devices of `session` at `dir` and serves them in the
/// background until the returned [`Mount`] is unmounted or dropped.
///
/// The texts of the session name `dir` as given. One xdev process serves a
/// directory at a time: the mount holds a lock on it (a file in `/run/xdev`
/// for root, else in `$XDG_RUNTIME_DIR/xdev`, or `~/.local/state/xdev`
/// without one; see `docs/cli.md`) from before it looks at the directory until it has
/// ended, and a second mount there, in this process or another, fails with
/// [`MountError::AlreadyServed`]. A stale mount left at `dir` by a killed
/// process is cleared first, under that lock.
pub fn mount(
    session: &Session,
    dir: impl AsRef<Path>,
    options: MountOptions,
) -> Result<Mount, MountError> {
    let dir = dir.as_ref();
    let shown = dir.display().to_string();
    let owner = options.files_owner();
    owner.check(options.lets_others_in())?;
    check_fuse_device()?;
    let journal = open_journal(options.journal_file.as_deref())?;
    let claim = mount_point::prepare(dir, options.create_dir)?;
    let io_error = |source| MountError::Io {
        dir: shown.clone(),
        source,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("xdev-dispatch")
        .enable_all()
        .build()
        .map_err(io_error)?;
    session.set_mount_dir(shown.clone());
    journal.follow(session);
    runtime.spawn(give_back_memory_after_bursts(journal.clone()));
    let fs = XdevFs::new(
        session.clone(),
        journal.clone(),
        options.plan.clone(),
        options.policy.clone(),
        runtime.handle().clone(),
        owner_for_fs(&options, owner),
    );
    let control = fs.control();
    let background =
        fuser::spawn_mount(XdevFuse::new(fs), dir, &fuse_config(&options)).map_err(io_error)?;
    control
        .start_forgetting(background.notifier())
        .map_err(io_error)?;
    let watch = watch_removal(dir, &control);
    tracing::info!(dir = %shown, "mounted");
    Ok(Mount {
        dir: dir.to_path_buf(),
        journal,
        control,
        grace: options.grace,
        background: Some(background),
        runtime: Some(runtime),
        watch,
        claim,
    })
}

/// Starts noticing the mount at `dir` removed from outside, which wakes
/// [`Mount::removed`]. Without the watch (it could not start) a removal is
/// still noticed once the kernel ends the FUSE session, which a lazy
/// unmount puts off while descriptors are open on the mount.
fn watch_removal(dir: &Path, control: &Arc<Control>) -> Option<RemovalWatch> {
    let control = Arc::clone(control);
    match RemovalWatch::start(dir, move || control.mark_removed()) {
        Ok(watch) => Some(watch),
        Err(err) => {
            tracing::warn!(%err, dir = %dir.display(), "cannot watch the mount table; a lazy unmount from outside is noticed only once nothing holds the mount open");
            None
        }
    }
}

/// The journal, following `file` too when given; an error names the file.
fn open_journal(file: Option<&Path>) -> Result<Journal, MountError> {
    Journal::new(file).map_err(MountError::Journal)
}

impl MountOptions {
    /// Who the files belong to: [`MountOptions::owner`], else this
    /// process's user.
    fn files_owner(&self) -> MountOwner {
        self.owner.unwrap_or_else(MountOwner::current)
    }

    /// Whether the kernel lets users other than the one who mounts in:
    /// with `allow_other`, and for a mount handed to another user, who
    /// could not reach it otherwise (the mode bits then keep the rest
    /// out).
    fn lets_others_in(&self) -> bool {
        self.allow_other || self.files_owner().uid != MountOwner::current().uid
    }
}

/// What the FUSE layer is told of the files' owner: who they belong to,
/// and which users the mode bits let read and list them.
fn owner_for_fs(options: &MountOptions, owner: MountOwner) -> Owner {
    Owner {
        uid: owner.uid,
        gid: owner.gid,
        since: std::time::SystemTime::now(),
        share_journal: options.share_journal,
        group_reads: owner.group_reads,
        // Where the kernel keeps every other user out anyway, the
        // directories stay listable (0755) as they always were.
        others_list: options.allow_other || !options.lets_others_in(),
    }
}

fn fuse_config(options: &MountOptions) -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("xdev".into()),
        MountOption::Subtype("xdev".into()),
        MountOption::DefaultPermissions,
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::NoExec,
    ];
    config.acl = if options.lets_others_in() {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(options.threads.max(1));
    config.clone_fd = true;
    config
}

/// How often the mount looks whether a burst of activity has ended.
const QUIET_CHECK: Duration = Duration::from_secs(1);

/// Gives freed memory back to the system once a burst of activity (staging
/// and deciding thousands of previews) is over. The allocator keeps what
/// many threads freed in the middle of its heaps; without this, a daemon
/// that once held 32,000 previews would keep their memory for good.
async fn give_back_memory_after_bursts(journal: Journal) {
    let (mut seen, mut trimmed) = (journal.len(), journal.len());
    loop {
        tokio::time::sleep(QUIET_CHECK).await;
        let now = journal.len();
        if now == seen && now != trimmed {
            trim_heap();
            trimmed = now;
        }
        seen = now;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    // SAFETY: malloc_trim only returns free pages of the allocator's heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

/// Makes every thread of this process allocate from one heap. For a
/// process whose work is serving a mount (the `xdev` daemon); call it
/// before any thread starts. The allocator otherwise gives each thread its
/// own heap, and what one thread allocated and another freed stays spread
/// over them: after 32,000 previews a daemon kept 6 times its fresh size
/// instead of about 2 (measured with `scripts/stress.sh`), and serving was
/// no slower with one heap.
pub fn use_one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// FUSE request threads of a mount unless told otherwise. Two, measured
/// with `cargo bench --bench mount` (1 against 2, in each placement) on a
/// 2-CPU VM: on a quiet machine the scheduler keeps a lone request thread
/// on the other CPU from the writer, so every round trip crosses CPUs
/// (an echo took 160 us against 16 us with two threads); on a busy one,
/// one thread was about 15% faster. No request waits on a disk or on a
/// lock held across I/O either way (a decision, a journal sync, a render
/// for other users is answered from the runtime), so one thread is safe
/// where it measures faster.
pub const DEFAULT_THREADS: usize = 2;

/// How long decisions under way may take to finish when a mount stops.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// How long unmounting waits for cancelled writers to get their answer.
const CANCEL_GRACE: Duration = Duration::from_millis(500);
/// How long unmounting waits for the request loop to end.
const LOOP_GRACE: Duration = Duration::from_millis(1000);
/// How long unmounting waits for the journal file to take the records made
/// so far (a stuck disk must not hold the unmount forever).
const JOURNAL_GRACE: Duration = Duration::from_secs(10);

impl Mount {
    /// Where the devices are mounted.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The mount's decision journal (what `log` shows).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Completes once the mount was removed from outside: another process
    /// unmounted it (`fusermount3 -u`, `umount`, `umount -l`), or its FUSE
    /// connection ended (aborted through `/sys/fs/fuse/connections`).
    /// Nothing new reaches the devices then; [`Mount::unmount`] (or
    /// dropping the mount) still finishes it as a stop does: decisions
    /// under way get the grace period (after a lazy unmount their writers'
    /// descriptors still reach the mount and get the real outcome), what
    /// still waits gets `ECANCELED`, the journal records it, and the
    /// directory xdev created is removed. This mount's own unmount is no
    /// removal: a future still waiting then completes only once the mount
    /// is gone altogether, so that nothing waits on it for ever.
    pub fn removed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.control.removed()
    }

    /// Whether the mount was removed from outside (see [`Mount::removed`]).
    pub fn is_removed(&self) -> bool {
        self.control.is_removed()
    }

    /// Stops the mount: new decisions are refused (`ECANCELED`) at once,
    /// decisions under way get the grace period to finish (their writers
    /// get the real outcome), what still waits then is told what is known
    /// (see [`MountOptions::grace`]); then the mount is removed.
    pub fn unmount(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        let Some(background) = self.background.take() else {
            return Ok(());
        };
        self.control.stop_new();
        wait_until(self.grace, || self.control.deciding() == 0);
        self.control.close();
        wait_until(CANCEL_GRACE, || self.control.in_flight() == 0);
        let result = self.unmount_if_ours();
        // The loop ends once the kernel lets go; after a lazy unmount that is
        // when the last open descriptor closes, so do not wait forever.
        wait_until(LOOP_GRACE, || background.guard.is_finished());
        end_session(background, &self.dir, self.watch.as_ref());
        // Its thread may have woken for the unmount: no news while stopping.
        drop(self.watch.take());
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so a Mount may be dropped inside async code.
            runtime.shutdown_background();
        }
        settle_journal(&self.journal);
        tracing::info!(dir = %self.dir.display(), "unmounted");
        result
    }

    /// Removes the mount unless it is gone already: after an unmount from
    /// outside, what is at the directory now (another file system mounted
    /// there since, or nothing) is not this mount's to remove.
    fn unmount_if_ours(&self) -> io::Result<()> {
        if self
            .watch
            .as_ref()
            .is_some_and(|watch| !watch.still_mounted())
        {
            tracing::debug!(dir = %self.dir.display(), "already unmounted from outside");
            return Ok(());
        }
        unmount_dir(&self.dir, false)
    }
}

/// Ends the FUSE session, this mount being gone from `dir` by now. Dropping
/// a session makes fuser unmount `dir` by its path once more (non-lazily as
/// root, lazily through `fusermount3` otherwise), whatever is mounted there
/// by then, so when another file system is mounted at `dir` now (mounted
/// there after an unmount from outside) the session is left undropped: a
/// descriptor and a finished thread, rather than someone else's mount. A
/// session whose loop still runs (descriptors hold the lazily unmounted
/// mount) is let go, and its loop ends when they are closed.
fn end_session(background: fuser::BackgroundSession, dir: &Path, watch: Option<&RemovalWatch>) {
    if mount_point::other_mount_at(dir, watch.map(RemovalWatch::dev)) {
        tracing::debug!(dir = %dir.display(), "another file system is mounted there now; keeping the FUSE session from unmounting it");
        std::mem::forget(background);
        return;
    }
    if background.guard.is_finished() {
        if let Err(err) = background.join() {
            tracing::warn!(%err, "request loop ended with an error");
        }
    }
}

/// Waits (at most [`JOURNAL_GRACE`]) until the journal file holds every
/// record made so far, the shutdown's own among them: the process may exit
/// right after the unmount, and its journal thread with it. On a thread of
/// its own, so that a Mount dropped inside async code does not block the
/// runtime's way of waiting.
fn settle_journal(journal: &Journal) {
    let flushed = journal.flushed();
    let (settled, waiting) = std::sync::mpsc::channel();
    let waiter = std::thread::Builder::new()
        .name("xdev-settle".into())
        .spawn(move || {
            let _ = settled.send(flushed.wait());
        });
    if waiter.is_err() {
        return;
    }
    match waiting.recv_timeout(JOURNAL_GRACE) {
        Ok(Err(err)) => tracing::warn!(%err, "the journal file did not take the last records"),
        Err(_) => tracing::warn!("the journal file did not settle within {JOURNAL_GRACE:?}"),
        Ok(Ok(())) => {}
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(err) = self.shutdown() {
            tracing::warn!(%err, dir = %self.dir.display(), "unmount failed");
        }
    }
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}
