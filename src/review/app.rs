//! The review's state and how it changes: every input (a key, a resize,
//! what the mount's source saw, a decision's outcome) arrives as a
//! [`Msg`], [`App::update`] changes the state and returns the
//! [`Effect`]s to carry out (read an item's files, write a decision,
//! ring the bell), and [`App::draw`] paints the state. Nothing here
//! touches the mount or the terminal, so the tests drive it with messages
//! and read a `TestBackend`.

use std::collections::HashMap;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::components::detail::{DetailComponent, DetailView};
use super::components::help::{HelpComponent, Keys};
use super::components::list::ListComponent;
use super::components::messages::{Messages, MessagesComponent};
use super::components::prompt::PromptComponent;
use super::components::status_line::StatusLineComponent;
use super::components::text::fit;
use super::components::trail::TrailComponent;
use super::components::{
    binding_for, commands_of, Action, Binding, CommandInfo, Component, EventState, Theme,
};
use crate::texts;

pub use super::model::{age, Decider, Item, PlanInfo, RowKey, TrailEntry};

/// What the mount's source saw.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceEvent {
    /// A whole reading: the items head first, the plan, the trail (oldest
    /// first).
    Snapshot {
        /// The pending items.
        items: Vec<Item>,
        /// The plan under review.
        plan: Option<PlanInfo>,
        /// The last decisions.
        trail: Vec<TrailEntry>,
    },
    /// A preview was staged.
    Staged(Item),
    /// A preview whose apply failed is back at the head.
    Requeued(String),
    /// A preview was decided or withdrawn.
    Gone(String),
    /// A decision for the trail.
    Decided(TrailEntry),
    /// The plan under review changed.
    Plan(Option<PlanInfo>),
    /// The mount cannot be followed any more.
    Failed(String),
}

/// A decision to write, for one item or the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRequest {
    /// What is decided.
    pub target: RowKey,
    /// Approve (else reject, or send the plan back).
    pub approve: bool,
    /// The reason (the feedback for a plan).
    pub reason: String,
}

/// What a decision's write returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionOutcome {
    /// What was decided.
    pub request: DecisionRequest,
    /// The answer text, or the error line (`EBUSY: ...`).
    pub result: Result<String, String>,
}

/// An input of the app loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// A key.
    Key(KeyEvent),
    /// The terminal's new size.
    Resize(u16, u16),
    /// The clock (seconds since the epoch), for the ages.
    Tick(f64),
    /// What the source saw.
    Source(SourceEvent),
    /// An item's files, read.
    Detail(Arc<str>, DetailView),
    /// A decision's write returned.
    Decided(DecisionOutcome),
    /// A stop signal (SIGINT, SIGTERM, SIGHUP) arrived: leave.
    Stop(i32),
}

/// What the loop is to do for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Read an item's files (label, tool: for the view's title and kind).
    LoadDetail {
        /// The item.
        id: Arc<str>,
        /// Its label.
        label: String,
        /// Its tool.
        tool: String,
    },
    /// Write these decisions, one after the other.
    Decide(Vec<DecisionRequest>),
    /// Ring the terminal's bell.
    Bell,
}

/// What the open prompt is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asking {
    /// A reason to decide these targets.
    Reason { approve: bool, targets: Vec<RowKey> },
    /// The filter (applied as typed; Esc restores this one).
    Filter { before: String },
}

/// What one of the app's own keys asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Global {
    Approve,
    Reject,
    Filter,
    Messages,
    Help,
    Quit,
}

impl Global {
    fn action(self) -> Action {
        match self {
            Global::Approve => Action::Approve,
            Global::Reject => Action::Reject,
            Global::Filter => Action::Filter,
            Global::Messages => Action::Messages,
            Global::Help => Action::Help,
            Global::Quit => Action::Quit,
        }
    }
}

/// The app's own keys.
const BINDINGS: &[Binding<Global>] = &[
    Binding {
        keys: &[KeyCode::Enter, KeyCode::Char('a')],
        shown: "Enter a",
        what: "approve (a reason is asked, optional)",
        action: Global::Approve,
    },
    Binding {
        keys: &[KeyCode::Char('r')],
        shown: "r",
        what: "reject (a reason is asked: the model reads it); a plan: send back",
        action: Global::Reject,
    },
    Binding {
        keys: &[KeyCode::Char('/')],
        shown: "/",
        what: "filter by label, tool or session",
        action: Global::Filter,
    },
    Binding {
        keys: &[KeyCode::Char('l')],
        shown: "l",
        what: "last messages in full: the status line and the trail",
        action: Global::Messages,
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        shown: "?",
        what: "help: every key",
        action: Global::Help,
    },
    Binding {
        keys: &[KeyCode::Char('q')],
        shown: "q",
        what: "quit (Ctrl-C too)",
        action: Global::Quit,
    },
];

/// The screen's areas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    title: Rect,
    list: Rect,
    detail: Rect,
    trail: Rect,
    bottom: Rect,
}

/// How many rows the trail takes.
const TRAIL_ROWS: u16 = 2;

impl Areas {
    /// The areas of a screen of `size`.
    pub fn of(size: Rect) -> Self {
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(1),
                Constraint::Min(3),
                Constraint::Length(TRAIL_ROWS),
                Constraint::Length(2),
            ])
            .split(size);
        let columns = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
            .split(rows[1]);
        Areas {
            title: rows[0],
            list: columns[0],
            detail: columns[1],
            trail: rows[2],
            bottom: rows[3],
        }
    }

    /// The detail's text area (inside its left border, below its title).
    fn detail_text(&self) -> (usize, usize) {
        (
            usize::from(self.detail.width.saturating_sub(1)),
            usize::from(self.detail.height.saturating_sub(1)),
        )
    }
}

/// The review's state.
#[derive(Debug)]
pub struct App {
    dir: String,
    theme: Theme,
    bell: bool,
    list: ListComponent,
    detail: DetailComponent,
    prompt: PromptComponent,
    help: HelpComponent,
    messages: MessagesComponent,
    trail: TrailComponent,
    status: StatusLineComponent,
    asking: Option<Asking>,
    /// The views read so far, by item (dropped when the item goes).
    views: HashMap<Arc<str>, DetailView>,
    /// What the detail pane shows.
    shown: Option<RowKey>,
    /// Whether the first reading arrived (the bell rings only after).
    seen_snapshot: bool,
    quit: bool,
    /// The stop signal that ended the review, if one did.
    stopped_by: Option<i32>,
}

impl App {
    /// A review of the mount at `dir`, drawn in `size`.
    pub fn new(dir: &str, theme: Theme, bell: bool, size: Rect) -> Self {
        let mut app = App {
            dir: dir.to_string(),
            theme,
            bell,
            list: ListComponent::default(),
            detail: DetailComponent::default(),
            prompt: PromptComponent::default(),
            help: HelpComponent::default(),
            messages: MessagesComponent::default(),
            trail: TrailComponent::default(),
            status: StatusLineComponent::default(),
            asking: None,
            views: HashMap::new(),
            shown: None,
            seen_snapshot: false,
            quit: false,
            stopped_by: None,
        };
        // The key bar: the deciding keys, the list's mark, then the rest.
        let mut keys = commands_of(BINDINGS);
        keys.truncate(3);
        keys.extend(
            app.list
                .commands()
                .into_iter()
                .filter(|c| c.keys == "space"),
        );
        keys.extend(commands_of(BINDINGS).into_iter().skip(3));
        app.status.set_keys(&keys);
        app.resize(size);
        app
    }

    /// Whether the review is to end.
    pub fn quitting(&self) -> bool {
        self.quit
    }

    /// The stop signal that ended the review, if one did.
    pub fn stopped_by(&self) -> Option<i32> {
        self.stopped_by
    }

    /// Every key, from each component's `commands()`.
    pub fn commands(&self) -> Vec<CommandInfo> {
        let mut all = commands_of(BINDINGS);
        all.extend(self.list.commands());
        all.extend(self.detail.commands());
        all.extend(self.prompt.commands());
        all
    }

    /// Applies `msg`; returns what the loop is to do.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let mut effects = Vec::new();
        match msg {
            Msg::Key(key) => self.key(&key, &mut effects),
            Msg::Resize(width, height) => self.resize(Rect::new(0, 0, width, height)),
            Msg::Tick(now) => {
                self.list.set_now(now);
                self.trail.set_now(now);
            }
            Msg::Source(event) => self.source(event, &mut effects),
            Msg::Detail(id, view) => {
                if self.shown == Some(RowKey::Item(id.clone())) {
                    self.detail.show(Some(view.clone()));
                }
                if self.list.item(&id).is_some() {
                    self.views.insert(id, view);
                }
            }
            Msg::Decided(outcome) => self.decided(outcome),
            Msg::Stop(signal) => {
                self.stopped_by = Some(signal);
                self.quit = true;
            }
        }
        effects
    }

    /// Brings the rows and the detail pane up to date after a batch of
    /// messages (the loop calls it once before each draw).
    pub fn settle(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.list.refresh();
        self.follow_selection(&mut effects);
        effects
    }

    fn resize(&mut self, size: Rect) {
        let areas = Areas::of(size);
        self.list.set_height(usize::from(areas.list.height));
        let (width, height) = areas.detail_text();
        self.detail.set_size(width, height);
    }

    fn key(&mut self, key: &KeyEvent, effects: &mut Vec<Effect>) {
        let mut actions = Vec::new();
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        let taken = [
            &mut self.help as &mut dyn Component,
            &mut self.messages,
            &mut self.prompt,
            &mut self.detail,
            &mut self.list,
        ]
        .into_iter()
        .any(|component| component.event(key, &mut actions) == EventState::Consumed);
        if !taken {
            if let Some(global) = binding_for(BINDINGS, key) {
                actions.push(global.action());
            }
        }
        for action in actions {
            self.act(action, effects);
        }
    }

    fn act(&mut self, action: Action, effects: &mut Vec<Effect>) {
        match action {
            Action::Approve => self.ask_reason(true),
            Action::Reject => self.ask_reason(false),
            Action::Filter => {
                let before = self.list.filter().to_string();
                self.prompt.open(texts::REVIEW_PROMPT_FILTER, &before, true);
                self.asking = Some(Asking::Filter { before });
            }
            Action::Help => self.help.open(Keys(self.commands())),
            Action::Messages => self.messages.open(Messages {
                status: self.status.message().map(str::to_string),
                trail: self
                    .trail
                    .entries()
                    .map(|entry| self.trail.entry_text(entry))
                    .collect(),
                dir: self.dir.clone(),
            }),
            Action::Quit => self.quit = true,
            Action::SelectionChanged => self.follow_selection(effects),
            Action::FilterEdited(text) => {
                self.list.set_filter(&text);
                self.list.refresh();
                self.follow_selection(effects);
            }
            Action::Cancel => {
                // Esc in the filter puts back the filter from before the
                // prompt opened (what was typed since is dropped).
                if let Some(Asking::Filter { before }) = self.asking.take() {
                    self.list.set_filter(&before);
                    self.list.refresh();
                    self.follow_selection(effects);
                }
                self.prompt.close();
            }
            Action::Submit(text) => self.submit(text, effects),
        }
    }

    /// Opens the reason prompt for the marked items, else the selection.
    fn ask_reason(&mut self, approve: bool) {
        self.list.refresh();
        let marked = self.list.marked();
        let (targets, question) = if !marked.is_empty() {
            let hidden = self.list.marked_hidden();
            let question = texts::review_prompt_marked(approve, marked.len(), hidden);
            (marked.into_iter().map(RowKey::Item).collect(), question)
        } else {
            match self.list.selected() {
                None => {
                    self.status
                        .set(false, texts::REVIEW_NOTHING_SELECTED.to_string());
                    return;
                }
                Some(RowKey::Plan) => {
                    let question = if approve {
                        texts::REVIEW_PROMPT_PLAN_APPROVE
                    } else {
                        texts::REVIEW_PROMPT_PLAN_REFINE
                    };
                    (vec![RowKey::Plan], question.to_string())
                }
                Some(key) => {
                    let question = if approve {
                        texts::REVIEW_PROMPT_APPROVE
                    } else {
                        texts::REVIEW_PROMPT_REJECT
                    };
                    (vec![key.clone()], question.to_string())
                }
            }
        };
        self.prompt.open(&question, "", false);
        self.asking = Some(Asking::Reason { approve, targets });
    }

    fn submit(&mut self, text: String, effects: &mut Vec<Effect>) {
        let Some(asking) = self.asking.take() else {
            self.prompt.close();
            return;
        };
        match asking {
            Asking::Filter { .. } => {
                self.list.set_filter(text.trim());
                self.prompt.close();
            }
            Asking::Reason { approve, targets } => {
                let reason = text.trim().to_string();
                let plan = targets == [RowKey::Plan];
                if !approve && reason.is_empty() {
                    let why = if plan {
                        texts::REVIEW_FEEDBACK_REQUIRED
                    } else {
                        texts::REVIEW_REASON_REQUIRED
                    };
                    self.status.set(false, why.to_string());
                    // The prompt stays open for the reason.
                    self.asking = Some(Asking::Reason { approve, targets });
                    return;
                }
                let reason = if reason.is_empty() && !plan {
                    texts::REVIEW_DEFAULT_APPROVAL.to_string()
                } else {
                    reason
                };
                self.prompt.close();
                if targets.len() > 1 {
                    self.list.clear_marks();
                }
                let requests = targets
                    .into_iter()
                    .map(|target| DecisionRequest {
                        target,
                        approve,
                        reason: reason.clone(),
                    })
                    .collect();
                effects.push(Effect::Decide(requests));
            }
        }
    }

    fn source(&mut self, event: SourceEvent, effects: &mut Vec<Effect>) {
        match event {
            SourceEvent::Snapshot { items, plan, trail } => {
                self.views
                    .retain(|id, _| items.iter().any(|item| &item.id == id));
                self.list.replace(items, plan);
                self.trail.replace(trail);
                self.seen_snapshot = true;
            }
            SourceEvent::Staged(item) => {
                let new = self.list.insert(item);
                if new && self.bell && self.seen_snapshot {
                    effects.push(Effect::Bell);
                }
            }
            SourceEvent::Requeued(id) => self.list.requeue(&id),
            SourceEvent::Gone(id) => {
                self.list.remove(&id);
                self.views.remove(id.as_str());
            }
            SourceEvent::Decided(entry) => self.trail.push(entry),
            SourceEvent::Plan(plan) => {
                self.list.set_plan(plan);
                if self.shown == Some(RowKey::Plan) {
                    // The plan's file may have changed: show it afresh.
                    self.shown = None;
                }
            }
            SourceEvent::Failed(why) => self.status.set(false, texts::review_source_failed(&why)),
        }
    }

    fn decided(&mut self, outcome: DecisionOutcome) {
        let request = &outcome.request;
        let verdict = match (&request.target, request.approve) {
            (RowKey::Plan, true) => texts::REVIEW_PLAN_APPROVED,
            (RowKey::Plan, false) => texts::REVIEW_PLAN_SENT_BACK,
            (_, true) => texts::REVIEW_APPLIED,
            (_, false) => texts::REVIEW_REJECTED,
        };
        let id = match &request.target {
            RowKey::Plan => self
                .list
                .plan()
                .map_or(String::new(), |plan| plan.slug.clone()),
            RowKey::Item(id) => id.to_string(),
        };
        match &outcome.result {
            Ok(answer) => {
                self.status
                    .set(true, texts::review_decided(verdict, &id, answer));
                if let RowKey::Item(id) = &request.target {
                    // The journal's record will say so too; it may come later.
                    self.list.remove(id);
                    self.views.remove(id);
                }
            }
            Err(error) => self
                .status
                .set(false, texts::review_refused(verdict, &id, error)),
        }
    }

    /// Shows the selected row's detail, reading it when it is not yet read.
    fn follow_selection(&mut self, effects: &mut Vec<Effect>) {
        let selected = self.list.selected().cloned();
        if selected == self.shown {
            return;
        }
        self.shown = selected.clone();
        let view = match &selected {
            None => None,
            Some(RowKey::Plan) => self.list.plan().map(|plan| {
                DetailView::plan(
                    &plan.slug,
                    &plan.path,
                    plan.markdown.as_deref().map_err(String::as_str),
                )
            }),
            Some(RowKey::Item(id)) => match self.views.get(id) {
                Some(view) => Some(view.clone()),
                None => {
                    let (label, tool) = self
                        .list
                        .item(id)
                        .map(|item| (item.label.clone(), item.tool.clone()))
                        .unwrap_or_default();
                    effects.push(Effect::LoadDetail {
                        id: id.clone(),
                        label: label.clone(),
                        tool,
                    });
                    Some(DetailView::message(&label, texts::REVIEW_LOADING))
                }
            },
        };
        self.detail.show(view);
    }

    /// Paints the state into the frame (reads only).
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let areas = Areas::of(frame.area());
        let title = texts::review_title(
            &self.dir,
            self.list.pending(),
            self.list.groups(),
            self.list.filter(),
        );
        let title = fit(&title, usize::from(areas.title.width));
        frame.render_widget(
            Paragraph::new(Line::from(Span::styled(title, self.theme.heading()))),
            areas.title,
        );
        self.list.draw(frame, areas.list, &self.theme);
        self.detail.draw(frame, areas.detail, &self.theme);
        self.trail.draw(frame, areas.trail, &self.theme);
        if self.prompt.is_open() {
            self.prompt.draw(frame, areas.bottom, &self.theme);
        } else {
            self.status.draw(frame, areas.bottom, &self.theme);
        }
        if self.messages.is_open() {
            self.messages.draw(frame, frame.area(), &self.theme);
        }
        if self.help.is_open() {
            self.help.draw(frame, frame.area(), &self.theme);
        }
    }

    /// The list (for tests).
    #[cfg(test)]
    pub fn list(&self) -> &ListComponent {
        &self.list
    }

    /// The detail pane (for tests).
    #[cfg(test)]
    pub fn detail(&self) -> &DetailComponent {
        &self.detail
    }

    /// The status line (for tests).
    #[cfg(test)]
    pub fn status(&self) -> &StatusLineComponent {
        &self.status
    }

    /// The trail (for tests).
    #[cfg(test)]
    pub fn trail(&self) -> &TrailComponent {
        &self.trail
    }

    /// The prompt (for tests).
    #[cfg(test)]
    pub fn prompt(&self) -> &PromptComponent {
        &self.prompt
    }
}
