//! Writing the review's decisions: each one to the item's own
//! `pending/<id>/resolve` or `reject` (never the head, which may be
//! another preview by the time the write lands), a plan's through
//! `plan/ctl` as `xdev plan approve|refine` do. The write's own result,
//! its answer or its errno and message, is what the status line shows.
//! Runs on a thread of its own: a write blocks until its handler answers.

use std::path::Path;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use super::app::{DecisionOutcome, DecisionRequest, Effect, Msg, RowKey};
use super::source::load_detail;
use crate::client::{plan_control, write_device, ClientError};
use crate::plan_command::PlanCommand;
use crate::safe_text::path_name_problem;
use crate::texts;

/// Writes one decision and returns its outcome.
pub fn decide(dir: &Path, request: &DecisionRequest) -> DecisionOutcome {
    let result = write(dir, request).map_err(|err| err.to_string());
    DecisionOutcome {
        request: request.clone(),
        result,
    }
}

fn write(dir: &Path, request: &DecisionRequest) -> Result<String, ClientError> {
    match &request.target {
        RowKey::Item(id) => {
            if let Some(problem) = path_name_problem(id) {
                return Err(ClientError::BadArgument(texts::not_a_pending_id(problem)));
            }
            let device = if request.approve { "resolve" } else { "reject" };
            let path = dir.join("pending").join(&**id).join(device);
            write_device(&path, request.reason.as_bytes())
        }
        RowKey::Plan => {
            let command = if request.approve {
                let feedback = request.reason.trim();
                PlanCommand::Approve {
                    feedback: (!feedback.is_empty()).then(|| feedback.to_string()),
                    mode: None,
                }
            } else {
                PlanCommand::Refine(request.reason.clone())
            };
            plan_control(dir, &command)
        }
    }
}

/// A thread that carries out effects that touch the mount, one at a time,
/// sending each result to the app loop.
#[derive(Debug)]
pub struct Worker {
    jobs: Option<Sender<Effect>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts one named `name`.
    pub fn start(name: &str, dir: &Path, messages: Sender<Msg>) -> Result<Self, ClientError> {
        let (jobs, queue) = std::sync::mpsc::channel();
        let dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || work(&dir, &queue, &messages))
            .map_err(|err| ClientError::io(texts::REVIEW_CANNOT_START_THREAD, err))?;
        Ok(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues `effect`.
    pub fn send(&self, effect: Effect) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(effect);
        }
    }

    /// Lets the queued work finish, then stops. A decision under way is
    /// waited for: what it decides, the reviewer asked for.
    pub fn finish(mut self) {
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn work(dir: &Path, queue: &Receiver<Effect>, messages: &Sender<Msg>) {
    for effect in queue {
        match effect {
            Effect::Decide(requests) => {
                for request in &requests {
                    let _ = messages.send(Msg::Decided(decide(dir, request)));
                }
            }
            Effect::LoadDetail { id, label, tool } => {
                let view = load_detail(dir, &id, &label, &tool);
                let _ = messages.send(Msg::Detail(id, view));
            }
            Effect::Bell => {}
        }
    }
}
