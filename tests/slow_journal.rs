//! A journal file on a disk that stops answering holds up only the writers
//! whose decisions wait for their records: the mount keeps serving
//! everyone else, even with one request thread. The "disk" is a FUSE
//! filesystem of this test whose writes and syncs block until it is let go.

mod common;
mod stub_fs;

use std::ffi::OsStr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::*;
use fuser::{
    Config, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, MountOption,
    OpenFlags, ReplyAttr, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};
use parking_lot::{Condvar, Mutex};
use stub_fs::attr;
use xdev::{MountOptions, ToolResult};

/// How long a step that should happen at once may take before the test
/// calls it stuck: generous, so a loaded machine never fails it.
const STUCK: Duration = Duration::from_secs(60);

const FILE_NAME: &str = "journal.jsonl";
const FILE_INO: INodeNo = INodeNo(2);

/// Whether the disk answers, and what it holds.
#[derive(Default)]
struct Disk {
    state: Mutex<DiskState>,
    changed: Condvar,
}

#[derive(Default)]
struct DiskState {
    open: bool,
    /// Writes and syncs waiting for the gate.
    blocked: usize,
    bytes: Vec<u8>,
}

impl Disk {
    /// Blocks the calling request until the gate is open.
    fn pass(&self) -> parking_lot::MutexGuard<'_, DiskState> {
        let mut state = self.state.lock();
        state.blocked += 1;
        self.changed.notify_all();
        while !state.open {
            self.changed.wait(&mut state);
        }
        state.blocked -= 1;
        state
    }

    fn open_gate(&self) {
        self.set_gate(true);
    }

    /// Writes and syncs from now on wait until the gate opens again.
    fn close_gate(&self) {
        self.set_gate(false);
    }

    fn set_gate(&self, open: bool) {
        self.state.lock().open = open;
        self.changed.notify_all();
    }

    /// Waits until some write or sync is blocked at the gate.
    fn wait_blocked(&self) -> bool {
        let mut state = self.state.lock();
        let deadline = std::time::Instant::now() + STUCK;
        while state.blocked == 0 {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return false;
            }
        }
        true
    }

    /// The events of the records of preview `id` on the disk, in order.
    fn events_of(&self, id: &str) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|line| line["id"] == id)
            .filter_map(|line| line["event"].as_str().map(str::to_string))
            .collect()
    }

    fn lines(&self) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&self.state.lock().bytes)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a journal line is JSON"))
            .collect()
    }
}

struct GateFs {
    disk: Arc<Disk>,
}

impl GateFs {
    fn size(&self) -> u64 {
        self.disk.state.lock().bytes.len() as u64
    }
}

impl Filesystem for GateFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == FILE_NAME {
            reply.entry(&Duration::ZERO, &attr(FILE_INO, self.size()), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply.attr(&Duration::ZERO, &attr(ino, self.size()));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(size) = size {
            self.disk.state.lock().bytes.truncate(size as usize);
        }
        reply.attr(&Duration::ZERO, &attr(ino, self.size()));
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // Appends wherever the kernel says: the journal opens O_APPEND.
        self.disk.pass().bytes.extend_from_slice(data);
        reply.written(data.len() as u32);
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        drop(self.disk.pass());
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }
}

/// The gate filesystem mounted in a fresh directory.
fn mount_disk(disk: &Arc<Disk>) -> (tempfile::TempDir, fuser::BackgroundSession) {
    let dir = tempfile::Builder::new()
        .prefix("xdev-slow-disk-")
        .tempdir()
        .expect("temp dir");
    let mut config = Config::default();
    config.mount_options = vec![MountOption::FSName("xdev-test-gate".into())];
    // Blocked writes and syncs each hold a thread; others still answer.
    config.n_threads = Some(4);
    let fs = GateFs {
        disk: Arc::clone(disk),
    };
    let session = fuser::spawn_mount(fs, dir.path(), &config).expect("gate FUSE mount");
    (dir, session)
}

/// Lets the disk answer again; what the writer waiting on `decided` is
/// then told.
fn answered_once_the_disk_is_back(
    disk: &Disk,
    decided: &mpsc::Receiver<WriteResult>,
) -> WriteResult {
    disk.open_gate();
    decided
        .recv_timeout(STUCK)
        .expect("the writer is answered once the disk is back")
}

/// Runs `work` on a thread of its own; its result comes through the channel.
fn in_background<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> mpsc::Receiver<T> {
    let (sent, received) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(work());
    });
    received
}

#[test]
fn a_journal_disk_that_stops_answering_stalls_only_the_decision_that_waits_for_it() {
    require_fuse();
    let disk = Arc::new(Disk::default());
    let (disk_dir, disk_session) = mount_disk(&disk);
    let fx = Fixture::with_options(MountOptions {
        journal_file: Some(disk_dir.path().join(FILE_NAME)),
        threads: 1,
        ..MountOptions::default()
    });
    let (id, calls) = stage_counted(&fx.session, "migrate", |_| async {
        Ok(ToolResult::ok("migrated"))
    });
    assert!(disk.wait_blocked(), "the staged record reached the disk");

    let resolve = fx.path("resolve");
    let decided = in_background(move || write_once(&resolve, b"go"));
    // The one request thread is free: status answers while the decision
    // waits for its intent record, and nothing was applied ahead of it.
    for _ in 0..20 {
        let status = fx.path("status");
        let read = in_background(move || std::fs::read_to_string(status));
        let status = read
            .recv_timeout(STUCK)
            .expect("cat status answers while the journal's disk is stuck")
            .expect("read status");
        assert!(status.contains("journal: ok"), "{status}");
    }
    assert_eq!(
        calls.applied(),
        0,
        "nothing applied before its intent is on disk"
    );
    assert!(
        matches!(decided.try_recv(), Err(mpsc::TryRecvError::Empty)),
        "the writer waits for its records"
    );

    assert_eq!(answered_once_the_disk_is_back(&disk, &decided), Ok(2));
    assert_eq!(calls.applied(), 1);
    assert_eq!(disk.events_of(&id), ["staged", "intent", "resolve"]);

    drop(fx);
    drop(disk_session);
}

/// Reads `stage` lines from `file` until one of them has `event`.
fn read_until_event(file: &mut std::fs::File, event: &str) -> serde_json::Value {
    use std::io::Read;
    let mut unread = Vec::new();
    loop {
        while let Some(end) = unread.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = unread.drain(..=end).collect();
            let message: serde_json::Value =
                serde_json::from_slice(&line).expect("a stage message is JSON");
            if message["event"] == event {
                return message;
            }
        }
        let mut chunk = [0u8; 4096];
        let read = file.read(&mut chunk).expect("read stage");
        assert!(read > 0, "stage ended before {event:?}");
        unread.extend_from_slice(&chunk[..read]);
    }
}

#[test]
fn a_producers_result_report_never_waits_for_the_journals_disk() {
    use std::io::Write;
    require_fuse();
    let disk = Arc::new(Disk::default());
    disk.open_gate();
    let (disk_dir, disk_session) = mount_disk(&disk);
    let fx = Fixture::with_options(MountOptions {
        journal_file: Some(disk_dir.path().join(FILE_NAME)),
        threads: 1,
        ..MountOptions::default()
    });
    let mut stage = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.path("stage"))
        .expect("open stage");
    stage
        .write_all(b"{\"label\": \"migrate\"}\n")
        .expect("staging is answered once its record is on disk");
    let id = read_until_event(&mut stage, "staged")["id"]
        .as_str()
        .expect("an id")
        .to_string();

    let resolve = fx.path("resolve");
    let decided = in_background(move || write_once(&resolve, b"go"));
    read_until_event(&mut stage, "apply");
    // The intent is on disk; from now on nothing more gets there.
    disk.close_gate();
    let reported = in_background(move || {
        stage
            .write_all(b"{\"ok\": true, \"text\": \"migrated\"}\n")
            .map(|()| stage)
    });
    let report = reported.recv_timeout(STUCK);
    if report.is_err() {
        // Let everything go before failing, so the mounts can be unmounted.
        disk.open_gate();
    }
    let stage = report
        .expect("the report is taken while the journal's disk is stuck")
        .expect("the report is taken");
    assert!(
        disk.wait_blocked(),
        "the decision's outcome record waits at the disk"
    );
    assert!(
        matches!(decided.try_recv(), Err(mpsc::TryRecvError::Empty)),
        "the writer is answered only once its outcome is on disk"
    );

    assert_eq!(answered_once_the_disk_is_back(&disk, &decided), Ok(2));
    assert_eq!(disk.events_of(&id), ["staged", "intent", "resolve"]);

    drop(stage);
    drop(fx);
    drop(disk_session);
}

#[test]
fn a_decision_still_writing_its_intent_when_the_grace_ends_never_runs() {
    use std::io::Read;
    require_fuse();
    let disk = Arc::new(Disk::default());
    disk.open_gate();
    let (disk_dir, disk_session) = mount_disk(&disk);
    let mut fx = Fixture::with_options(MountOptions {
        journal_file: Some(disk_dir.path().join(FILE_NAME)),
        grace: Duration::from_millis(100),
        ..MountOptions::default()
    });
    let (id, calls) = stage_counted(&fx.session, "migrate", |_| async {
        Ok(ToolResult::ok("migrated"))
    });
    assert!(
        eventually(STUCK, || disk.events_of(&id) == ["staged"]),
        "the staged record is on disk"
    );
    disk.close_gate();
    let resolve = fx.path("resolve");
    let decided = in_background(move || write_once(&resolve, b"go"));
    assert!(
        disk.wait_blocked(),
        "the decision's intent waits at the disk"
    );
    // The next record anyone makes is the shutdown's, at the end of the
    // grace period: an `events` reader wakes then.
    let mut events = std::fs::File::open(fx.path("events")).expect("open events");
    let grace_ended = in_background(move || events.read(&mut [0u8; 4096]).map(|_| ()));
    let mount = fx.mount.take().expect("mounted");
    let unmounted = in_background(move || mount.unmount());
    let woke = grace_ended.recv_timeout(STUCK);
    disk.open_gate();
    assert!(woke.is_ok(), "the grace period ended");

    let cancelled = decided.recv_timeout(STUCK).expect("the writer is answered");
    assert_eq!(cancelled, Err(libc::ECANCELED), "nothing was handed out");
    unmounted
        .recv_timeout(STUCK)
        .expect("unmount ends")
        .expect("unmounted");
    assert_eq!(calls.applied(), 0, "the apply never ran, nor will it");
    let records: Vec<_> = disk
        .lines()
        .into_iter()
        .filter(|line| line["id"] == id && line["event"] != "staged")
        .map(|line| {
            (
                line["event"].clone(),
                line["errno"].clone(),
                line["text"].clone(),
            )
        })
        .collect();
    let text =
        "Aborted: the mount stopped before this decision began; nothing was applied or discarded";
    assert_eq!(
        records,
        [
            (
                "intent".into(),
                serde_json::Value::Null,
                serde_json::Value::Null
            ),
            ("resolve".into(), "ECANCELED".into(), text.into()),
        ]
    );
    drop(disk_session);
}
