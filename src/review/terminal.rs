//! The terminal while the review runs: raw mode and the alternate screen,
//! set up by [`Screen::enter`] and restored however the review ends: a
//! normal exit or an error (the guard's `Drop`), a panic (a panic hook
//! restores before the message prints, so it is readable), and SIGINT,
//! SIGTERM or SIGHUP (a handler hands the signal through a pipe to a thread
//! that tells the app loop to leave; the loop then restores as on `q`).
//! Keys and resizes are read on a thread of their own and reach the loop
//! as messages, with a clock tick when nothing happens.

use std::io::{self, Stdout, Write};
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossterm::event::{self, Event, KeyEventKind};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
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
const STOP_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The write end of the pipe the signal handler writes a stop signal's
/// number to (-1 until [`wait_for_stop_signals`] made it).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// The handler of the stop signals: writes the signal's number to the pipe
/// (`write(2)` is async-signal-safe), whichever thread it interrupts. A
/// handler rather than a signal mask, because threads started before the
/// review (the log writer's) would keep the default action, which kills
/// the process with the terminal still raw.
extern "C" fn on_stop_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = u8::try_from(signal).unwrap_or(0);
        // SAFETY: `byte` lives for the call and the length is 1; a failed
        // write (a full pipe: a stop is already on its way) is fine.
        unsafe {
            libc::write(fd, std::ptr::addr_of!(byte).cast(), 1);
        }
    }
}

/// Installs the handler of the stop signals and starts the thread that
/// waits for one and tells the loop.
pub(crate) fn wait_for_stop_signals(messages: Sender<Msg>) -> io::Result<()> {
    let (read, write) = nix::unistd::pipe().map_err(io::Error::from)?;
    SIGNAL_PIPE.store(write.into_raw_fd(), Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::Handler(on_stop_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in STOP_SIGNALS {
        // SAFETY: the handler only loads an atomic and calls write(2),
        // both async-signal-safe.
        unsafe { sigaction(signal, &action) }.map_err(io::Error::from)?;
    }
    std::thread::Builder::new()
        .name("xdev-review-signals".into())
        .spawn(move || {
            let mut pipe = std::fs::File::from(read);
            let mut byte = [0u8; 1];
            if std::io::Read::read_exact(&mut pipe, &mut byte).is_ok() {
                let _ = messages.send(Msg::Stop(i32::from(byte[0])));
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
    /// Tells the thread to stop, without waiting for it: once the terminal
    /// has hung up (SIGHUP), crossterm's read can spin in the thread
    /// forever, and the review must still restore and exit (which ends
    /// the thread).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            if thread.is_finished() {
                let _ = thread.join();
            }
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
