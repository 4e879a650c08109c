//! Session queue benchmarks, in process, no FUSE:
//!
//! - `round_trip/stage_resolve`: stage a preview and resolve it through the
//!   `resolve` device dispatch, on an empty stack;
//! - `resolve/1_pending` vs `resolve/100000_pending`: the resolve dispatch
//!   alone with the stack kept at that size (each iteration stages one
//!   preview untimed, then resolves it timed); the second median must stay
//!   within 1.5x of the first;
//! - `round_trip/stage_resolve_100000_pending`: the whole round trip at that
//!   size, so staging cannot hide a cost that grows with the stack;
//! - bytes of memory per pending preview, from a counting global allocator.
//!
//! A summary line with the medians, the ratio and bytes/preview is printed
//! to stdout at the end.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use parking_lot::Mutex;
use tokio::runtime::Runtime;
use xdev::dispatch::dispatch_resolution_device;
use xdev::{apply_fn, ApplyFn, Device, Session, ToolResult};

/// Counts the bytes currently allocated by the whole process.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

fn track(delta: isize) {
    LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged from the caller, who upholds `GlobalAlloc`.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            track(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged from the caller, who upholds `GlobalAlloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            track(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged from the caller, who upholds `GlobalAlloc`.
        unsafe { System.dealloc(ptr, layout) };
        track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged from the caller, who upholds `GlobalAlloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const BIG: usize = 100_000;
const SAMPLE_SIZE: usize = 100;
const LABEL: &str = "edit src/session/pending.rs";
const TOOL: &str = "edit";

/// A fresh apply callback, as a harness makes one per preview.
fn apply() -> ApplyFn {
    apply_fn(|reason, _extra| async move { Ok(ToolResult::ok(reason)) })
}

fn stage(session: &Session) -> String {
    session.queue_resolve_handler(LABEL, TOOL, apply(), None)
}

async fn resolve(session: &Session) {
    let answer = dispatch_resolution_device(session, Device::Resolve, "bench").await;
    debug_assert!(answer.is_ok(), "{answer:?}");
    black_box(&answer);
}

/// A session with `n` previews pending.
fn session_with(n: usize) -> Session {
    let session = Session::new();
    for _ in 0..n {
        stage(&session);
    }
    session
}

/// The per-iteration time of every criterion sample, per benchmark. The
/// last `SAMPLE_SIZE` calls of a routine are criterion's measured samples
/// (the earlier ones are its warm-up), so their median is criterion's median.
#[derive(Default)]
struct Samples(Mutex<HashMap<&'static str, Vec<f64>>>);

impl Samples {
    fn record(&self, name: &'static str, elapsed: Duration, iters: u64) {
        let per_iter = elapsed.as_secs_f64() * 1e9 / iters.max(1) as f64;
        self.0.lock().entry(name).or_default().push(per_iter);
    }

    fn median_ns(&self, name: &str) -> Option<f64> {
        let samples = self.0.lock();
        let all = samples.get(name)?;
        let mut measured = all[all.len().saturating_sub(SAMPLE_SIZE)..].to_vec();
        measured.sort_by(f64::total_cmp);
        let mid = measured.len() / 2;
        Some(if measured.len() % 2 == 0 {
            (measured[mid - 1] + measured[mid]) / 2.0
        } else {
            measured[mid]
        })
    }
}

/// Times the whole stage + resolve round trip with `prefill` previews below.
fn bench_round_trip(
    c: &mut Criterion,
    runtime: &Runtime,
    samples: &Samples,
    name: &'static str,
    prefill: usize,
) {
    let session = session_with(prefill);
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    stage(&session);
                    resolve(&session).await;
                }
                let elapsed = start.elapsed();
                samples.record(name, elapsed, iters);
                elapsed
            })
        })
    });
    assert_eq!(session.pending_count(), prefill);
}

/// Times the resolve dispatch alone, keeping `pending` previews pending:
/// each iteration stages one (untimed) and resolves it (timed).
fn bench_resolve(
    c: &mut Criterion,
    runtime: &Runtime,
    samples: &Samples,
    name: &'static str,
    pending: usize,
) {
    let session = session_with(pending - 1);
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    stage(&session);
                    debug_assert_eq!(session.pending_count(), pending);
                    let start = Instant::now();
                    resolve(&session).await;
                    elapsed += start.elapsed();
                }
                samples.record(name, elapsed, iters);
                elapsed
            })
        })
    });
    assert_eq!(session.pending_count(), pending - 1);
}

/// Bytes allocated per pending preview: stage `BIG` previews (label, id,
/// callback and the stack's own bookkeeping) and divide the growth.
fn bytes_per_preview() -> f64 {
    let session = Session::new();
    // Warm up anything allocated once per session or per process.
    stage(&session);
    session.clear_pending();
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    let ids: Vec<String> = (0..BIG).map(|_| stage(&session)).collect();
    let ids_bytes: isize = ids.iter().map(|id| id.capacity() as isize).sum::<isize>()
        + (ids.capacity() * std::mem::size_of::<String>()) as isize;
    let after = LIVE_BYTES.load(Ordering::SeqCst);
    assert_eq!(session.pending_count(), BIG);
    // The returned ids are the caller's, not the session's.
    let bytes = (after - before - ids_bytes) as f64 / BIG as f64;
    drop(ids);
    drop(session);
    bytes
}

fn main() {
    let bytes = bytes_per_preview();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let samples = Samples::default();
    let mut criterion = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    bench_round_trip(
        &mut criterion,
        &runtime,
        &samples,
        "round_trip/stage_resolve",
        0,
    );
    bench_resolve(&mut criterion, &runtime, &samples, "resolve/1_pending", 1);
    bench_resolve(
        &mut criterion,
        &runtime,
        &samples,
        "resolve/100000_pending",
        BIG,
    );
    bench_round_trip(
        &mut criterion,
        &runtime,
        &samples,
        "round_trip/stage_resolve_100000_pending",
        BIG,
    );
    criterion.final_summary();
    // `cargo test --all-targets` runs this once, unoptimised, as a smoke
    // test (no `--bench`): its timings are not figures, so no ratio is told.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("summary: ran once as a test; `cargo bench --bench session` measures");
        return;
    }

    let show = |name: &str| match samples.median_ns(name) {
        Some(ns) => format!("{ns:.0} ns"),
        None => "not run".to_string(),
    };
    let ratio = |small: &str, big: &str| match (samples.median_ns(small), samples.median_ns(big)) {
        (Some(small), Some(big)) if small > 0.0 => Some(big / small),
        _ => None,
    };
    let resolve_ratio = match ratio("resolve/1_pending", "resolve/100000_pending") {
        Some(ratio) if ratio <= 1.5 => format!("{ratio:.3} (within 1.5)"),
        Some(ratio) => format!("{ratio:.3} (OVER 1.5)"),
        None => "n/a".to_string(),
    };
    let round_trip_ratio = ratio(
        "round_trip/stage_resolve",
        "round_trip/stage_resolve_100000_pending",
    )
    .map_or_else(|| "n/a".to_string(), |ratio| format!("{ratio:.3}"));
    println!(
        "summary: stage+resolve round trip median {}; resolve median with 1 pending {}, with {BIG} pending {}, ratio {}; round trip with {BIG} pending {}, ratio {}; memory {bytes:.0} bytes per pending preview",
        show("round_trip/stage_resolve"),
        show("resolve/1_pending"),
        show("resolve/100000_pending"),
        resolve_ratio,
        show("round_trip/stage_resolve_100000_pending"),
        round_trip_ratio,
    );
}
