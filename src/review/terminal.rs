//! The terminal while the review runs: raw mode and the alternate screen,
//! set up by [`Screen::enter`] and restored however the review ends: a
//! normal exit or an error (the guard's `Drop`), a panic (a panic hook
//! restores before the message prints, so it is readable), and SIGINT,
//! SIGTERM or SIGHUP (blocked in every thread and waited for by one, which
//! tells the app loop to leave; the loop then restores as on `q`).
//! Keys and resizes are read on a thread of their own and reach the loop
//! as messages, with a clock tick when nothing happens.

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossterm::event::{self, Event, KeyEventKind};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::app::Msg;

/// How long the input thread waits for a key before it sends a tick.
const TICK: Duration = Duration::from_millis(250);

/// The terminal, in raw mode on the alternate screen while this lives.
pub(crate) struct Screen {
    /// What ratatui draws on.
    pub(crate) terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Screen")
    }
}

impl Screen {
    /// Enters raw mode and the alternate screen, hides the cursor.
    pub(crate) fn enter() -> io::Result<Self> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        let mut stdout = io::stdout();
        if let Err(err) = execute!(stdout, EnterAlternateScreen, cursor::Hide) {
            restore();
            return Err(err);
        }
        let terminal = Terminal::new(CrosstermBackend::new(stdout)).inspect_err(|_| restore())?;
        Ok(Screen { terminal })
    }

    /// Rings the bell.
    pub(crate) fn bell(&mut self) {
        let out = self.terminal.backend_mut();
        let _ = out.write_all(b"\x07").and_then(|()| out.flush());
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen and raw mode, shows the cursor. Safe to
/// call more than once.
fn restore() {
    let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

/// Restores the terminal before the panic message prints.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// The signals that end the review.
fn stop_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(signal);
    }
    set
}

/// Blocks the stop signals in this thread and every thread it starts
/// after (call it before starting any), so that only
/// [`wait_for_stop_signals`] receives them.
pub(crate) fn block_stop_signals() -> io::Result<()> {
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&stop_signals()), None)
        .map_err(io::Error::from)
}

/// Starts the thread that waits for a stop signal and tells the loop.
pub(crate) fn wait_for_stop_signals(messages: Sender<Msg>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("xdev-review-signals".into())
        .spawn(move || {
            if let Ok(signal) = stop_signals().wait() {
                let _ = messages.send(Msg::Stop(signal as i32));
            }
        })
        .map(drop)
}

/// Seconds since the epoch, for the ages.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// The thread that reads keys and resizes; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Input {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Input {
    /// Starts reading the terminal's events.
    pub(crate) fn start(messages: Sender<Msg>) -> io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("xdev-review-keys".into())
            .spawn(move || read_input(&messages, &stopped))?;
        Ok(Input {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn read_input(messages: &Sender<Msg>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let msg = match event::poll(TICK) {
            Ok(false) => Msg::Tick(now()),
            Ok(true) => match event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Msg::Key(key),
                Ok(Event::Resize(width, height)) => Msg::Resize(width, height),
                Ok(_) => continue,
                Err(_) => return,
            },
            Err(_) => return,
        };
        if messages.send(msg).is_err() {
            return;
        }
    }
}
