//! `xdev review` with 10,000 previews across 100 agent sessions:
//!
//! - (a) a redraw of the whole 80x24 screen (the list scrolled to its
//!   middle, a command in the detail pane) on a ratatui `TestBackend`:
//!   criterion's estimate, and the median of our own 2,000 timed draws
//!   (target: at most 10 ms);
//! - (b) how long a newly staged preview takes to be on screen: from the
//!   `stage` write returning (the mount has given it its id) to the item
//!   being in the app's state and drawn, through the review's own source
//!   (`events`, followed with `poll(2)`), against an `xdev mount` daemon
//!   holding the 10,000 previews: median and p99 of 300 stagings (target:
//!   p99 at most 100 ms).
//!
//! The review's resident memory is measured with the real binary in tmux
//! by `scripts/bench-review.sh`. Run with `cargo bench --bench review`;
//! the last line, `bench-figures {...}`, holds the figures as JSON.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use xdev::client::{PreviewRequest, StagedPreview};
use xdev::review::app::{App, Effect, Item, Msg, SourceEvent};
use xdev::review::components::detail::{DetailView, ItemFiles};
use xdev::review::components::Theme;
use xdev::review::source;

const PREVIEWS: usize = 10_000;
const SESSIONS: usize = 100;
const DRAWS: usize = 2_000;
const STAGINGS: usize = 300;

fn items() -> Vec<Item> {
    (0..PREVIEWS)
        .rev()
        .map(|seq| Item {
            id: Arc::from(format!("pending-action:Bash:{seq}")),
            label: format!("Bash: cargo test --package crate-{seq:05}"),
            tool: "Bash".into(),
            session: Some(Arc::from(format!("session-{:03}", seq % SESSIONS))),
            staged_at: Some(1_000.0 + seq as f64),
            rank: 0,
        })
        .collect()
}

/// A review of 10,000 previews, its selection in the middle of the list
/// and a command in the detail pane.
fn loaded_app() -> App {
    let mut app = App::new(
        "/xdev",
        Theme { color: true },
        false,
        Rect::new(0, 0, 80, 24),
    );
    app.update(Msg::Tick(20_000.0));
    app.update(Msg::Source(SourceEvent::Snapshot {
        items: items(),
        plan: None,
        trail: Vec::new(),
    }));
    app.settle();
    for _ in 0..PREVIEWS / 2 {
        app.update(Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
    }
    let effects = app.settle();
    let command: String = (0..200).map(|i| format!("echo step-{i:03} ok\n")).collect();
    let detail = serde_json::json!({"command": command, "description": "many steps"}).to_string();
    for effect in effects {
        if let Effect::LoadDetail { id, label, tool } = effect {
            let files = ItemFiles {
                detail: Some(&detail),
                ..ItemFiles::default()
            };
            let view = DetailView::from_files(&label, &tool, &files);
            app.update(Msg::Detail(id, view));
        }
    }
    app
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn p99(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[(samples.len() * 99 / 100).min(samples.len() - 1)]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// (a) through criterion.
fn redraw(c: &mut Criterion) {
    let app = loaded_app();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    c.bench_function("review/redraw 80x24, 10k previews in 100 sessions", |b| {
        b.iter(|| terminal.draw(|frame| app.draw(frame)).expect("draw").area);
    });
}

/// (a) by hand: the median of `DRAWS` draws.
fn redraw_median() -> Duration {
    let app = loaded_app();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    let mut samples: Vec<Duration> = (0..DRAWS)
        .map(|_| {
            let start = Instant::now();
            terminal.draw(|frame| app.draw(frame)).expect("draw");
            start.elapsed()
        })
        .collect();
    median(&mut samples)
}

/// An `xdev mount` daemon on a temp dir; stopped with SIGTERM on drop.
struct Daemon {
    dir: PathBuf,
    child: Child,
    _tmp: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("xdev");
        let mut child = Command::new(env!("CARGO_BIN_EXE_xdev"))
            .arg("mount")
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn xdev mount");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        Daemon {
            dir,
            child,
            _tmp: tmp,
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

fn stage(dir: &Path, seq: usize) -> StagedPreview {
    let request = PreviewRequest {
        label: format!("Bash: cargo test --package crate-{seq:05}"),
        source_tool: Some("Bash".into()),
        detail: Some(
            serde_json::json!({"command": format!("cargo test --package crate-{seq:05}")}),
        ),
        session_id: Some(format!("session-{:03}", seq % SESSIONS)),
        ..PreviewRequest::default()
    };
    StagedPreview::stage(dir, &request).expect("stage")
}

/// Takes messages into `app` until preview `id` is in its state.
fn until_listed(app: &mut App, inbox: &Receiver<Msg>, id: &str) {
    loop {
        let msg = inbox
            .recv_timeout(Duration::from_secs(30))
            .expect("the staged record");
        let listed = matches!(&msg, Msg::Source(SourceEvent::Staged(item)) if &*item.id == id);
        app.update(msg);
        if listed {
            return;
        }
    }
}

/// (b): median and p99, with the daemon holding `PREVIEWS` previews.
fn staged_to_screen() -> (Duration, Duration) {
    let daemon = Daemon::start();
    let held: Vec<StagedPreview> = (0..PREVIEWS).map(|seq| stage(&daemon.dir, seq)).collect();
    let (messages, inbox) = mpsc::channel();
    let follower = source::follow(&daemon.dir, std::process::id(), messages).expect("follow");
    let mut app = App::new(
        "/xdev",
        Theme { color: true },
        false,
        Rect::new(0, 0, 80, 24),
    );
    let first = inbox.recv().expect("the first reading");
    app.update(first);
    app.settle();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    let mut samples = Vec::with_capacity(STAGINGS);
    let mut late = Vec::with_capacity(STAGINGS);
    for seq in PREVIEWS..PREVIEWS + STAGINGS {
        let staged = stage(&daemon.dir, seq);
        let start = Instant::now();
        until_listed(&mut app, &inbox, staged.id());
        app.settle();
        terminal.draw(|frame| app.draw(frame)).expect("draw");
        samples.push(start.elapsed());
        late.push(staged);
    }
    drop(follower);
    drop(late);
    drop(held);
    let p99 = p99(&mut samples);
    (median(&mut samples), p99)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    redraw(&mut criterion);
    criterion.final_summary();
    let redraw = redraw_median();
    println!(
        "review redraw 80x24 with {PREVIEWS} previews: median {:.3} ms (target <= 10 ms)",
        ms(redraw)
    );
    let (median, p99) = staged_to_screen();
    println!(
        "review staged -> in state and drawn, {PREVIEWS} pending: median {:.2} ms, p99 {:.2} ms (target p99 <= 100 ms)",
        ms(median),
        ms(p99)
    );
    println!(
        "bench-figures {}",
        serde_json::json!({
            "review_redraw_ms": ms(redraw),
            "review_staged_to_screen_median_ms": ms(median),
            "review_staged_to_screen_p99_ms": ms(p99),
        })
    );
}
