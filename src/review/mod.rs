//! `xdev review`: a terminal UI in which a person reviews every pending
//! preview on a mount, grouped by agent session, and decides each one by
//! its id (`pending/<id>/resolve` or `reject`), or a plan under review
//! through `plan/ctl`.
//!
//! | module | holds |
//! |---|---|
//! | [`app`] | the state, the messages that change it, and drawing it |
//! | [`model`] | what is shown, as plain data: an item, the plan, a trail entry, an age |
//! | `components` | the list, the detail pane, the prompt, the help and messages overlays, the trail, the status line; `text` fits lines to the screen |
//! | [`source`] | reading the mount, then following `events` |
//! | [`decide`] | writing decisions (and reading an item's files) off the UI thread |
//! | `terminal` | raw mode and the alternate screen, restored on exit, panic and signals |
//!
//! The loop takes one message, then every message already queued, updates
//! the app with each, and draws once: a burst of stagings costs one
//! redraw.

use std::path::Path;
use std::sync::mpsc::{self, Receiver};

use crate::client::{check_mount, ClientError};
use crate::texts;

// Public for the integration tests and benchmarks (tests/review.rs,
// benches/review.rs), not as an API: only `run` and `ReviewOptions` are.
#[doc(hidden)]
pub mod app;
#[doc(hidden)]
pub mod components;
#[doc(hidden)]
pub mod decide;
#[doc(hidden)]
pub mod model;
#[doc(hidden)]
pub mod source;
mod terminal;

#[cfg(test)]
mod tests;

use app::{App, Effect, Msg};
use components::Theme;
use decide::Worker;

/// How `xdev review` runs.
#[derive(Debug, Clone, Default)]
pub struct ReviewOptions {
    /// Ring the terminal's bell (BEL) when a preview arrives.
    pub bell: bool,
}

/// Runs the review of the mount at `dir` until the reviewer quits (or a
/// stop signal arrives); returns the exit code (0, or 128 + the signal).
pub fn run(dir: &Path, options: &ReviewOptions) -> Result<u8, ClientError> {
    check_mount(dir)?;
    let (messages, inbox) = mpsc::channel();
    let me = std::process::id();
    let follower = source::follow(dir, me, messages.clone())?;
    let reader = Worker::start("xdev-review-reader", dir, messages.clone())?;
    let decider = Worker::start("xdev-review-decider", dir, messages.clone())?;
    terminal::wait_for_stop_signals(messages.clone())
        .map_err(|err| ClientError::io(texts::REVIEW_CANNOT_START_THREAD, err))?;
    let mut screen = terminal::Screen::enter().map_err(terminal_error)?;
    let size = screen.terminal.size().map_err(terminal_error)?;
    let mut app = App::new(
        &dir.display().to_string(),
        Theme::from_env(),
        options.bell,
        ratatui::layout::Rect::new(0, 0, size.width, size.height),
    );
    app.update(Msg::Tick(terminal::now()));
    let input = terminal::Input::start(messages).map_err(terminal_error)?;
    let looped = run_loop(&mut app, &inbox, &mut screen, &reader, &decider);
    drop(input);
    drop(screen);
    drop(follower);
    reader.finish();
    decider.finish();
    looped?;
    Ok(app.stopped_by().map_or(0, |signal| 128 + signal as u8))
}

fn terminal_error(err: std::io::Error) -> ClientError {
    ClientError::io(texts::REVIEW_CANNOT_USE_TERMINAL, err)
}

fn run_loop(
    app: &mut App,
    inbox: &Receiver<Msg>,
    screen: &mut terminal::Screen,
    reader: &Worker,
    decider: &Worker,
) -> Result<(), ClientError> {
    while let Ok(first) = inbox.recv() {
        let mut effects = app.update(first);
        while let Ok(next) = inbox.try_recv() {
            effects.extend(app.update(next));
        }
        effects.extend(app.settle());
        for effect in effects {
            match effect {
                Effect::Bell => screen.bell(),
                Effect::LoadDetail { .. } => reader.send(effect),
                Effect::Decide(_) => decider.send(effect),
            }
        }
        if app.quitting() {
            break;
        }
        screen
            .terminal
            .draw(|frame| app.draw(frame))
            .map_err(terminal_error)?;
    }
    Ok(())
}
