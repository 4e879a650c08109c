//! FUSE round-trip benchmark of the mount: what a user feels, measured by
//! hand with raw `libc` calls in one run on one machine.
//!
//! - (a1), (a2) `open(O_WRONLY|O_TRUNC)` + `write("ok\n")` + `close` on
//!   `resolve` of an xdev mount served by 1 and by 2 request threads, with
//!   the stack kept non-empty by previews whose apply does nothing;
//! - (b) the same on the file of a null FUSE filesystem mounted here with
//!   fuser (the "naive FUSE file": 2 request threads, 1 s timeouts, direct
//!   I/O, no atomic `O_TRUNC`, no `FOPEN_NOFLUSH`);
//! - (c) the same on `/proc/self/comm` (the kernel's own floor);
//! - (d) `open` + `read` + `close` of `status` (of the default mount);
//! - (e) throughput of (a) with 1, 2 and 4 concurrent writer threads, for
//!   each request-thread count (alternating 250 ms windows);
//! - (f) throughput of 16 writers against a mount with `--journal` on the
//!   disk of the target directory and against one without, alternating;
//!   their ratio is the median of the ratios of windows run side by side.
//!
//! (a)-(d) are interleaved in rounds so that a noisy neighbour hurts all of
//! them alike, and measured in three placements of the threads (see
//! [`Placement`]). For each it prints medians, p90s, the round trips a
//! writer waited for per operation and the CPU the servers spent per
//! operation (every thread of this process but the writer), and the ratios
//! to (b). A missed goal is printed, never a failure. The last line,
//! `bench-figures {...}`, holds the headline figures as JSON for
//! `scripts/bench.sh`. Run with `cargo bench --bench mount`.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    BsdFileFlags, Config, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite,
    Request, TimeOrNow, WriteFlags,
};
use xdev::{apply_fn, ApplyFn, Mount, MountOptions, Session, ToolResult};

#[path = "../tests/stub_fs/mod.rs"]
mod stub_fs;

/// Timed samples per measurement of (a)-(d) in one placement.
const SAMPLES: usize = 10_000;
/// (a)-(d) take turns in this many rounds of `SAMPLES / ROUNDS` samples.
const ROUNDS: usize = 10;
/// Untimed operations of each kind before the first round of a placement.
const WARMUP: usize = 1_000;
/// Previews always left on the stack under the ones a round consumes.
const BASE_PREVIEWS: usize = 16;
/// Throughput is measured in windows; previews are staged between them.
const WINDOW: Duration = Duration::from_millis(250);
/// Timed windows per configuration (8 x 250 ms = 2 s).
const WINDOWS: usize = 8;
/// Writer counts of (e).
const WRITER_COUNTS: [usize; 3] = [1, 2, 4];
/// Writers of (f), as `mount-tests/stress.py` runs them.
const MANY_WRITERS: usize = 16;

const MESSAGE: &[u8] = b"ok\n";
const COMM: &[u8] = b"bench\n";

fn main() {
    // `cargo test --all-targets` runs bench binaries too (without `--bench`):
    // benchmarks are separate from tests, so only `cargo bench` measures.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("mount benchmark skipped: run it with `cargo bench --bench mount`");
        return;
    }
    assert!(
        Path::new("/dev/fuse").exists(),
        "the mount benchmark needs FUSE: /dev/fuse is missing"
    );
    let started = Instant::now();
    let load_before = load_average();
    let tmp = tempfile::Builder::new()
        .prefix("xdev-bench-")
        .tempdir()
        .expect("temp dir");
    // The journal goes where a user's would: a real disk, not a tmpfs.
    let disk = tempfile::Builder::new()
        .prefix("xdev-bench-journal-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("journal dir");
    let journal_file = disk.path().join("journal.jsonl");

    let threads = |threads| MountOptions {
        threads,
        ..MountOptions::default()
    };
    let one = Served::mount(&tmp.path().join("one"), threads(1));
    let two = Served::mount(&tmp.path().join("two"), threads(2));
    let plain = Served::mount(&tmp.path().join("plain"), MountOptions::default());
    let journaled = Served::mount(
        &tmp.path().join("journaled"),
        MountOptions {
            journal_file: Some(journal_file.clone()),
            ..MountOptions::default()
        },
    );
    let default = if MountOptions::default().threads == 1 {
        &one
    } else {
        &two
    };

    // The null filesystem.
    let null_dir = tmp.path().join("null");
    std::fs::create_dir(&null_dir).expect("null mount dir");
    let counts = Arc::new(Counts::default());
    let null = fuser::spawn_mount(
        NullFs {
            counts: Arc::clone(&counts),
        },
        &null_dir,
        &null_config(),
    )
    .expect("null FUSE mount");

    let status = c_path(&default.dir.join("status"));
    let null_file = c_path(&null_dir.join(NULL_NAME));
    let comm = c_path(Path::new("/proc/self/comm"));
    let original_comm = std::fs::read("/proc/self/comm").expect("read /proc/self/comm");
    std::fs::metadata(null_dir.join(NULL_NAME)).expect("null mount answers");

    let kinds = [
        Kind::Resolve(&one),
        Kind::Resolve(&two),
        Kind::Null(&null_file),
        Kind::Comm(&comm),
        Kind::Status(&status),
    ];

    // (a)-(d) in each placement.
    let null_before = counts.snapshot();
    let allowed = allowed_cpus();
    let placements: Vec<(Placement, Vec<Stats>)> = Placement::available(&allowed)
        .into_iter()
        .map(|placement| {
            placement.apply(&allowed);
            (placement, measure(&kinds))
        })
        .collect();
    // Releases are sent asynchronously after close; let them arrive.
    std::thread::sleep(Duration::from_millis(100));
    let null_requests = counts.snapshot().since(&null_before);
    let _ = std::fs::write("/proc/self/comm", &original_comm);
    // Every kind ran this often, warm-ups included.
    let ops_per_kind = ((WARMUP + SAMPLES) * placements.len()) as u64;

    // (e) and (f), placed by the scheduler.
    Placement::Scheduler.apply(&allowed);
    let by_threads: Vec<Vec<Throughput>> =
        throughputs(&[(&one, &WRITER_COUNTS), (&two, &WRITER_COUNTS)]);
    let many = throughputs(&[(&plain, &[MANY_WRITERS]), (&journaled, &[MANY_WRITERS])]);

    let served = [&one, &two, &plain, &journaled];
    let successes: u64 = served.iter().map(|served| served.successes()).sum();
    let applies: u64 = served
        .iter()
        .map(|served| served.applied.load(Ordering::Relaxed))
        .sum();
    let journal_fs = filesystem_type(disk.path());
    drop((one, two, plain, journaled));
    if let Err(err) = null.umount_and_join() {
        eprintln!("warning: unmounting the null FS: {err}");
    }

    report(&placements, &allowed, &null_requests, ops_per_kind);
    report_throughputs(&by_threads, &many, &journal_fs);
    println!(
        "check: {applies} applies for {successes} successful resolve writes{}",
        if applies == successes {
            " (each write applied exactly one preview)"
        } else {
            " (MISMATCH)"
        }
    );
    println!(
        "total run time {:.1} s; load average before {load_before}, after {} (other work on \
         the machine skews these figures)",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    println!("bench-figures {}", figures(&placements, &by_threads, &many));
}

/// An xdev mount of its own session, whose previews' applies do nothing
/// but count.
struct Served {
    dir: PathBuf,
    resolve: CString,
    session: Session,
    apply: ApplyFn,
    applied: Arc<AtomicU64>,
    /// Successful writes counted by (a) and the throughput windows.
    writes: AtomicU64,
    threads: usize,
    mount: Mount,
}

impl Served {
    fn mount(dir: &Path, options: MountOptions) -> Served {
        std::fs::create_dir(dir).expect("mount dir");
        let session = Session::new();
        let applied = Arc::new(AtomicU64::new(0));
        let apply = {
            let applied = Arc::clone(&applied);
            apply_fn(move |_reason, _extra| {
                applied.fetch_add(1, Ordering::Relaxed);
                async { Ok(ToolResult::ok("")) }
            })
        };
        let threads = options.threads;
        let mount = xdev::mount(&session, dir, options).expect("xdev mount");
        std::fs::metadata(dir.join("resolve")).expect("xdev mount answers");
        Served {
            dir: dir.to_path_buf(),
            resolve: c_path(&dir.join("resolve")),
            session,
            apply,
            applied,
            writes: AtomicU64::new(0),
            threads,
            mount,
        }
    }

    /// Stages previews until at least `target` are pending, and waits for
    /// the journal to have recorded them (so no window pays for staging).
    fn top_up(&self, target: usize) {
        let pending = self.session.pending_count();
        for _ in pending..target {
            self.session.queue_resolve_handler(
                "bench: no-op edit",
                "edit",
                Arc::clone(&self.apply),
                None,
            );
        }
        let _ = self.mount.journal().flushed().wait();
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn successes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

/// (a)-(d) interleaved: `ROUNDS` rounds of `SAMPLES / ROUNDS` of each, in
/// a rotating order, after `WARMUP` untimed operations of each.
fn measure(kinds: &[Kind]) -> Vec<Stats> {
    let top_up = |count| {
        for kind in kinds {
            if let Kind::Resolve(served) = kind {
                served.top_up(count);
            }
        }
    };
    top_up(WARMUP + BASE_PREVIEWS);
    for kind in kinds {
        for _ in 0..WARMUP {
            kind.run()
                .unwrap_or_else(|err| panic!("warm-up of {}: {err}", kind.name()));
        }
    }
    let per_round = SAMPLES / ROUNDS;
    let mut samples: Vec<Vec<u64>> = kinds.iter().map(|_| Vec::with_capacity(SAMPLES)).collect();
    let mut waits = vec![0u64; kinds.len()];
    let mut server_ns = vec![0u64; kinds.len()];
    for round in 0..ROUNDS {
        top_up(per_round + BASE_PREVIEWS);
        for turn in 0..kinds.len() {
            let index = (round + turn) % kinds.len();
            let kind = &kinds[index];
            let slept_before = writer_sleeps();
            let (process_before, writer_before) = (process_cpu_ns(), thread_cpu_ns());
            for _ in 0..per_round {
                let start = Instant::now();
                let result = kind.run();
                let took = start.elapsed();
                result.unwrap_or_else(|err| panic!("{}: {err}", kind.name()));
                samples[index].push(took.as_nanos() as u64);
            }
            let writer = thread_cpu_ns() - writer_before;
            server_ns[index] += (process_cpu_ns() - process_before).saturating_sub(writer);
            waits[index] += writer_sleeps() - slept_before;
        }
    }
    samples
        .iter_mut()
        .zip(waits.into_iter().zip(server_ns))
        .map(|(samples, (waits, server))| Stats::of(samples, waits, server))
        .collect()
}

/// How often this thread (the writer) has gone to sleep so far: its
/// voluntary context switches. A synchronous FUSE request puts the writer
/// to sleep until the answer comes, so per operation this counts the round
/// trips it waited for.
fn writer_sleeps() -> u64 {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|count| count.trim().parse().ok())
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Where the threads run.

/// Where the writer (this process's main thread) and the mounts' threads
/// (both request loops and xdev's runtime: every other thread) run, among
/// the CPUs this process was allowed at its start (`first` and `second`
/// below are the first two of those).
///
/// On a VM a wakeup that crosses CPUs costs tens of microseconds (the idle
/// virtual CPU has to be woken by the host), a wakeup on the same CPU a few.
/// Left to itself the scheduler sometimes keeps a writer and its server on
/// one CPU and sometimes not, so the same code measures 1.5x apart from
/// run to run. Fixing the placement makes (a) and (b) pay alike per
/// request.
#[derive(Clone, Copy, PartialEq)]
enum Placement {
    /// Every allowed CPU: where the scheduler puts them.
    Scheduler,
    /// Writer on `first`, mounts on `second`: every request crosses CPUs,
    /// so a/b compares round trips.
    Split,
    /// Everything on `first`: no wakeup crosses CPUs, so a/b compares the
    /// CPU work (kernel and user) per operation.
    Shared,
}

impl Placement {
    fn available(allowed: &[usize]) -> Vec<Placement> {
        if allowed.len() >= 2 {
            vec![Placement::Scheduler, Placement::Split, Placement::Shared]
        } else {
            vec![Placement::Scheduler, Placement::Shared]
        }
    }

    fn name(self, allowed: &[usize]) -> String {
        let (first, second) = (allowed[0], allowed.get(1).copied().unwrap_or(allowed[0]));
        match self {
            Placement::Scheduler => format!("scheduler's choice (CPUs {allowed:?})"),
            Placement::Split => {
                format!("split (writer on CPU {first}, mounts on CPU {second})")
            }
            Placement::Shared => format!("shared (writer and mounts on CPU {first})"),
        }
    }

    /// Sets the affinity of every thread of this process.
    fn apply(self, allowed: &[usize]) {
        let (first, second) = (allowed[0], allowed.get(1).copied().unwrap_or(allowed[0]));
        let (writer, mounts) = match self {
            Placement::Scheduler => (allowed.to_vec(), allowed.to_vec()),
            Placement::Split => (vec![first], vec![second]),
            Placement::Shared => (vec![first], vec![first]),
        };
        let me = std::process::id();
        set_affinity(me, &writer).expect("place the writer thread");
        let threads = std::fs::read_dir("/proc/self/task").expect("list this process's threads");
        for tid in threads.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok()) {
            if tid != me {
                // A thread that ended meanwhile needs no placement.
                let _ = set_affinity(tid, &mounts);
            }
        }
    }
}

/// The CPUs this process may run on, as it started.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set that sched_getaffinity fills; the
    // libc macro only reads it.
    let cpus: Vec<usize> = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let got = libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set);
        assert_eq!(got, 0, "sched_getaffinity: {}", io::Error::last_os_error());
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    };
    assert!(!cpus.is_empty(), "no CPU allowed");
    cpus
}

fn set_affinity(tid: u32, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: `set` is a plain bit set, zeroed and filled by the libc
    // macros; sched_setaffinity only reads it.
    let done = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of_val(&set), &set)
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

// ---------------------------------------------------------------------------
// The operations.

enum Kind<'a> {
    Resolve(&'a Served),
    Null(&'a CStr),
    Comm(&'a CStr),
    Status(&'a CStr),
}

impl Kind<'_> {
    fn name(&self) -> String {
        match self {
            Kind::Resolve(served) => format!(
                "(a{}) xdev resolve, {} request thread(s)    open(O_WRONLY|O_TRUNC)+write+close",
                served.threads(),
                served.threads()
            ),
            Kind::Null(_) => {
                "(b)  null FUSE file                      open(O_WRONLY|O_TRUNC)+write+close".into()
            }
            Kind::Comm(_) => {
                "(c)  /proc/self/comm                     open(O_WRONLY|O_TRUNC)+write+close".into()
            }
            Kind::Status(_) => {
                "(d)  xdev status                         open(O_RDONLY)+read+close".into()
            }
        }
    }

    fn run(&self) -> io::Result<()> {
        match self {
            Kind::Resolve(served) => {
                write_op(&served.resolve, MESSAGE)?;
                served.writes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Kind::Null(path) => write_op(path, MESSAGE),
            Kind::Comm(path) => write_op(path, COMM),
            Kind::Status(path) => read_op(path),
        }
    }
}

/// `open(O_WRONLY|O_TRUNC)` + `write` + `close`; the whole write must be taken.
fn write_op(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `data` is valid for its length; the
    // descriptor is ours and closed exactly once.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let write_error = (written < 0).then(io::Error::last_os_error);
        let closed = libc::close(fd);
        if let Some(err) = write_error {
            return Err(err);
        }
        if written as usize != data.len() {
            return Err(io::Error::other(format!(
                "short write: {written} of {}",
                data.len()
            )));
        }
        if closed != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `open(O_RDONLY)` + one `read` + `close`; the read must return something.
fn read_op(path: &CStr) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    // SAFETY: as in `write_op`; `buf` is writable for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let read = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        let read_error = (read < 0).then(io::Error::last_os_error);
        libc::close(fd);
        if let Some(err) = read_error {
            return Err(err);
        }
        if read == 0 {
            return Err(io::Error::other("empty status"));
        }
    }
    Ok(())
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

// ---------------------------------------------------------------------------
// Statistics and the report.

struct Stats {
    median_ns: u64,
    p90_ns: u64,
    /// The writer's sleeps (round trips it waited for) per operation.
    waits_per_op: f64,
    /// CPU time of every thread but the writer's (the servers) per operation.
    server_ns_per_op: f64,
}

impl Stats {
    fn of(samples: &mut [u64], waits: u64, server_ns: u64) -> Stats {
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        let ops = samples.len().max(1) as f64;
        Stats {
            median_ns: at(0.5),
            p90_ns: at(0.9),
            waits_per_op: waits as f64 / ops,
            server_ns_per_op: server_ns as f64 / ops,
        }
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

/// Indices of the kinds in `main`'s order.
const A1: usize = 0;
const A2: usize = 1;
const B: usize = 2;
const C: usize = 3;

fn report(
    placements: &[(Placement, Vec<Stats>)],
    allowed: &[usize],
    null: &Snapshot,
    null_ops: u64,
) {
    let names = [
        "(a1) xdev resolve, 1 request thread   open(O_WRONLY|O_TRUNC)+write+close",
        "(a2) xdev resolve, 2 request threads  open(O_WRONLY|O_TRUNC)+write+close",
        "(b)  null FUSE file                   open(O_WRONLY|O_TRUNC)+write+close",
        "(c)  /proc/self/comm                  open(O_WRONLY|O_TRUNC)+write+close",
        "(d)  xdev status                      open(O_RDONLY)+read+close         ",
    ];
    println!();
    println!(
        "xdev mount benchmark: kernel {}, {} CPUs; per placement {SAMPLES} samples each after \
         {WARMUP} warm-up, (a)-(d) interleaved in {ROUNDS} rounds; default request threads {}",
        kernel_release(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        MountOptions::default().threads,
    );
    for (placement, stats) in placements {
        println!();
        println!("placement: {}", placement.name(allowed));
        println!(
            "{:<72} {:>9} {:>9} {:>13} {:>14}",
            "", "p50 us", "p90 us", "round trips", "server CPU us"
        );
        for (name, stat) in names.iter().zip(stats) {
            println!(
                "{name:<72} {:>9.2} {:>9.2} {:>13.2} {:>14.2}",
                us(stat.median_ns),
                us(stat.p90_ns),
                stat.waits_per_op,
                stat.server_ns_per_op / 1000.0,
            );
        }
        let b = stats[B].median_ns as f64;
        let c = stats[C].median_ns as f64;
        for (name, a) in [("a1", &stats[A1]), ("a2", &stats[A2])] {
            let ab = a.median_ns as f64 / b;
            println!(
                "ratio {name}/b (p50) = {ab:.3}   goal <= 0.60: {}   {name}/c = {:.3}",
                verdict(ab <= 0.60),
                a.median_ns as f64 / c
            );
        }
    }
    println!();
    println!(
        "null FS requests during the {null_ops} (b) ops: lookup {}, getattr {}, open {}, \
         setattr {}, write {}, flush {}, release {}",
        null.lookup, null.getattr, null.open, null.setattr, null.write, null.flush, null.release,
    );
}

/// (e) by request threads and writers, and (f).
fn report_throughputs(by_threads: &[Vec<Throughput>], many: &[Vec<Throughput>], journal_fs: &str) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "(e) resolve throughput, scheduler's choice ({WINDOWS} x {} ms per figure, alternating); \
         CPU in cores of {cores} (this process / whole machine)",
        WINDOW.as_millis()
    );
    for (threads, runs) in by_threads.iter().enumerate() {
        for (writers, run) in WRITER_COUNTS.iter().zip(runs) {
            println!(
                "    {} request thread(s), {writers} writer(s): {:>8.0} ops/s   CPU {:.2} / {:.2}{}",
                threads + 1,
                run.ops_per_sec,
                run.process_cores,
                run.machine_cores,
                run.shortfall(),
            );
        }
    }
    let (plain, journaled) = (&many[0][0], &many[1][0]);
    let ratio = journaled.median_ratio_to(plain);
    println!(
        "(f) {MANY_WRITERS} writers: no journal {:.0} ops/s{}, --journal on {journal_fs} {:.0} ops/s{}, \
         ratio {ratio:.3} (median of {WINDOWS} side-by-side windows)   goal >= 0.75: {}",
        plain.ops_per_sec,
        plain.shortfall(),
        journaled.ops_per_sec,
        journaled.shortfall(),
        verdict(ratio >= 0.75)
    );
}

/// The headline figures of the scheduler's placement, as one JSON object.
fn figures(
    placements: &[(Placement, Vec<Stats>)],
    by_threads: &[Vec<Throughput>],
    many: &[Vec<Throughput>],
) -> String {
    let stats = &placements[0].1;
    let default = if MountOptions::default().threads == 1 {
        A1
    } else {
        A2
    };
    let echo = &stats[default];
    let null = &stats[B];
    let writers = &by_threads[if default == A1 { 0 } else { 1 }];
    let journal_ratio = many[1][0].median_ratio_to(&many[0][0]);
    let (plain, journaled) = (many[0][0].ops_per_sec, many[1][0].ops_per_sec);
    format!(
        "{{\"threads\":{},\"echo_p50_us\":{:.2},\"null_p50_us\":{:.2},\"echo_vs_null\":{:.3},\
         \"echo_1thread_vs_null\":{:.3},\"echo_2threads_vs_null\":{:.3},\
         \"round_trips_per_echo\":{:.2},\"server_cpu_us_per_echo\":{:.2},\
         \"writers_1\":{:.0},\"writers_2\":{:.0},\"writers_4\":{:.0},\
         \"writers_16_plain\":{plain:.0},\"writers_16_journal\":{journaled:.0},\"journal_ratio\":{:.3}}}",
        MountOptions::default().threads,
        us(echo.median_ns),
        us(null.median_ns),
        echo.median_ns as f64 / null.median_ns as f64,
        stats[A1].median_ns as f64 / null.median_ns as f64,
        stats[A2].median_ns as f64 / null.median_ns as f64,
        echo.waits_per_op,
        echo.server_ns_per_op / 1000.0,
        writers[0].ops_per_sec,
        writers[1].ops_per_sec,
        writers[2].ops_per_sec,
        journal_ratio,
    )
}

/// The file system type of `path` (`ext4`, `tmpfs`, ...), from `/proc/mounts`.
fn filesystem_type(path: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (point, kind) = (fields.nth(1)?, fields.next()?);
            path.starts_with(point)
                .then(|| (point.len(), kind.to_string()))
        })
        .max()
        .map_or_else(|| "?".into(), |(_, kind)| kind)
}

/// The 1-minute load average, from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

// ---------------------------------------------------------------------------
// Throughput.

#[derive(Default)]
struct Throughput {
    ops_per_sec: f64,
    /// Successful writes in the timed windows.
    total_ops: u64,
    /// Timed nanoseconds (each window counts its slowest writer's time).
    total_ns: u64,
    /// Writes that found the stack empty (the window then ends early).
    dry: u64,
    errors: u64,
    /// CPU time of this whole process (writers, the mount's request loop
    /// and runtime) during the timed windows, over their wall time.
    process_cores: f64,
    /// Busy CPU time of the whole machine over the same wall time.
    machine_cores: f64,
    /// Each timed window's own rate, in the order they ran.
    window_rates: Vec<f64>,
}

impl Throughput {
    /// The median, over the timed windows, of this figure's rate over
    /// `base`'s in the window that ran beside it: a ratio that the
    /// machine's drift over a run moves far less than one of totals.
    fn median_ratio_to(&self, base: &Throughput) -> f64 {
        let mut ratios: Vec<f64> = self
            .window_rates
            .iter()
            .zip(&base.window_rates)
            .map(|(rate, base)| rate / base)
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
    }

    /// A note when writes failed or found the stack empty.
    fn shortfall(&self) -> String {
        if self.dry > 0 || self.errors > 0 {
            format!(
                " ({} writes found the stack empty, {} other errors: understated)",
                self.dry, self.errors
            )
        } else {
            String::new()
        }
    }
}

/// One window's outcome for one writer.
#[derive(Default)]
struct Window {
    ops: u64,
    ns: u64,
    dry: u64,
    errors: u64,
}

/// Throughput of open/write/close on `resolve` of each mount with each of
/// its writer counts: `WINDOWS` timed windows of `WINDOW` each, taking turns
/// (after one untimed warm-up window of each) so that a noisy neighbour
/// hurts all alike. Between windows (untimed) each stack is topped up to
/// three times what its busiest window so far used.
fn throughputs(configs: &[(&Served, &[usize])]) -> Vec<Vec<Throughput>> {
    let mut results: Vec<Vec<Throughput>> = configs
        .iter()
        .map(|(_, counts)| counts.iter().map(|_| Throughput::default()).collect())
        .collect();
    let mut targets = vec![20_000usize; configs.len()];
    for window in 0..=WINDOWS {
        for (config, (served, counts)) in configs.iter().enumerate() {
            for (slot, &writers) in counts.iter().enumerate() {
                served.top_up(targets[config]);
                let (cpu_before, busy_before, wall) =
                    (process_cpu_ns(), machine_busy_ns(), Instant::now());
                let outcomes = run_window(&served.resolve, writers);
                let wall_ns = wall.elapsed().as_nanos() as f64;
                let cpu = (process_cpu_ns() - cpu_before) as f64;
                let busy = machine_busy_ns().saturating_sub(busy_before) as f64;
                let ops: u64 = outcomes.iter().map(|o| o.ops).sum();
                served.writes.fetch_add(ops, Ordering::Relaxed);
                targets[config] = targets[config].max(ops as usize * 3 + 1_000);
                if window == 0 {
                    continue; // warm-up
                }
                let run = &mut results[config][slot];
                let window_ns = outcomes.iter().map(|o| o.ns).max().unwrap_or(0);
                run.total_ops += ops;
                run.total_ns += window_ns;
                run.window_rates
                    .push(ops as f64 / (window_ns.max(1) as f64 / 1e9));
                run.dry += outcomes.iter().map(|o| o.dry).sum::<u64>();
                run.errors += outcomes.iter().map(|o| o.errors).sum::<u64>();
                // Summed here, divided by the windows' count below.
                run.process_cores += cpu / wall_ns;
                run.machine_cores += busy / wall_ns;
            }
        }
    }
    for run in results.iter_mut().flatten() {
        run.ops_per_sec = run.total_ops as f64 / (run.total_ns as f64 / 1e9);
        run.process_cores /= WINDOWS as f64;
        run.machine_cores /= WINDOWS as f64;
    }
    results
}

/// CPU time of the calling thread so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    // SAFETY: `time` is a writable timespec; the clock always exists.
    let time = unsafe {
        let mut time: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time);
        time
    };
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

/// CPU time of this process so far (all threads), in nanoseconds.
fn process_cpu_ns() -> u64 {
    // SAFETY: `usage` is a writable rusage; RUSAGE_SELF always exists.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// Busy (non-idle, non-iowait) CPU time of the whole machine so far, in
/// nanoseconds, from `/proc/stat` (0 if unreadable).
fn machine_busy_ns() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(line) = stat.lines().next() else {
        return 0;
    };
    // cpu user nice system idle iowait irq softirq steal ...
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|n| n.parse().ok())
        .collect();
    if ticks.len() < 8 {
        return 0;
    }
    let busy = ticks.iter().sum::<u64>() - ticks[3] - ticks[4];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    busy * 1_000_000_000 / hz
}

/// `writers` threads released together, each looping open/write/close on
/// `resolve` until `WINDOW` has passed.
fn run_window(resolve: &CStr, writers: usize) -> Vec<Window> {
    let barrier = Barrier::new(writers);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..writers)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let deadline = start + WINDOW;
                    let mut outcome = Window::default();
                    loop {
                        match write_op(resolve, MESSAGE) {
                            Ok(()) => outcome.ops += 1,
                            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {
                                outcome.dry += 1;
                                break;
                            }
                            Err(_) => outcome.errors += 1,
                        }
                        if Instant::now() >= deadline {
                            break;
                        }
                    }
                    outcome.ns = start.elapsed().as_nanos() as u64;
                    outcome
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("writer thread"))
            .collect()
    })
}

// ---------------------------------------------------------------------------
// The null FUSE filesystem: one file that accepts every write.

const NULL_NAME: &str = "null";
const NULL_INO: INodeNo = INodeNo(2);
const NULL_TTL: Duration = Duration::from_secs(1);

fn null_config() -> Config {
    let mut config = Config::default();
    // The same mount options as the xdev mount, so only the request
    // pattern differs.
    config.mount_options = vec![
        MountOption::FSName("xdev-bench-null".into()),
        MountOption::Subtype("null".into()),
        MountOption::DefaultPermissions,
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::NoExec,
    ];
    config.acl = fuser::SessionACL::Owner;
    config.n_threads = Some(2);
    config.clone_fd = true;
    config
}

/// Requests the null filesystem answered, by kind.
#[derive(Default)]
struct Counts {
    lookup: AtomicU64,
    getattr: AtomicU64,
    open: AtomicU64,
    setattr: AtomicU64,
    write: AtomicU64,
    flush: AtomicU64,
    release: AtomicU64,
}

#[derive(Clone, Copy)]
struct Snapshot {
    lookup: u64,
    getattr: u64,
    open: u64,
    setattr: u64,
    write: u64,
    flush: u64,
    release: u64,
}

impl Counts {
    fn snapshot(&self) -> Snapshot {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        Snapshot {
            lookup: get(&self.lookup),
            getattr: get(&self.getattr),
            open: get(&self.open),
            setattr: get(&self.setattr),
            write: get(&self.write),
            flush: get(&self.flush),
            release: get(&self.release),
        }
    }
}

impl Snapshot {
    fn since(&self, before: &Snapshot) -> Snapshot {
        Snapshot {
            lookup: self.lookup - before.lookup,
            getattr: self.getattr - before.getattr,
            open: self.open - before.open,
            setattr: self.setattr - before.setattr,
            write: self.write - before.write,
            flush: self.flush - before.flush,
            release: self.release - before.release,
        }
    }
}

struct NullFs {
    counts: Arc<Counts>,
}

fn null_attr(ino: INodeNo) -> FileAttr {
    stub_fs::attr(ino, 0)
}

impl Filesystem for NullFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.counts.lookup.fetch_add(1, Ordering::Relaxed);
        if parent == INodeNo::ROOT && name.as_bytes() == NULL_NAME.as_bytes() {
            reply.entry(&NULL_TTL, &null_attr(NULL_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.counts.getattr.fetch_add(1, Ordering::Relaxed);
        if ino == INodeNo::ROOT || ino == NULL_INO {
            reply.attr(&NULL_TTL, &null_attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.counts.setattr.fetch_add(1, Ordering::Relaxed);
        reply.attr(&NULL_TTL, &null_attr(ino));
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.counts.open.fetch_add(1, Ordering::Relaxed);
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
        self.counts.write.fetch_add(1, Ordering::Relaxed);
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.counts.flush.fetch_add(1, Ordering::Relaxed);
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.counts.release.fetch_add(1, Ordering::Relaxed);
        reply.ok();
    }
}
