//! The list of pending previews: the plan under review pinned at the top,
//! then one group per agent session (the previews staged without a
//! session one group of their own), each newest first, as the group's
//! devices would decide them. It keeps the selection by identity, so a
//! preview staged or decided elsewhere never moves the selection to
//! another item, and the marks of the items to decide together.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::text::fit;
use super::{binding_for, commands_of, Action, Binding, CommandInfo, Component, EventState, Theme};
use crate::review::model::{age, Item, PlanInfo, RowKey};
use crate::texts;

/// What a key does to the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    Up,
    Down,
    First,
    Last,
    Mark,
}

const BINDINGS: &[Binding<Move>] = &[
    Binding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        shown: "↑ k",
        what: "previous item",
        action: Move::Up,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        shown: "↓ j",
        what: "next item",
        action: Move::Down,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        shown: "Home g",
        what: "first item",
        action: Move::First,
    },
    Binding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        shown: "End G",
        what: "last item",
        action: Move::Last,
    },
    Binding {
        keys: &[KeyCode::Char(' ')],
        shown: "space",
        what: "mark or unmark (a or r then decides all marked)",
        action: Move::Mark,
    },
];

/// One row of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    /// The plan under review.
    Plan,
    /// A group's header: its session (`None`: no session) and count.
    Header(Option<Arc<str>>, usize),
    /// A preview, by id.
    Item(Arc<str>),
}

impl Row {
    fn key(&self) -> Option<RowKey> {
        match self {
            Row::Plan => Some(RowKey::Plan),
            Row::Header(..) => None,
            Row::Item(id) => Some(RowKey::Item(id.clone())),
        }
    }
}

/// The list's state.
#[derive(Debug, Default)]
pub struct ListComponent {
    items: HashMap<Arc<str>, Item>,
    plan: Option<PlanInfo>,
    filter: String,
    /// The rows shown, rebuilt by [`ListComponent::refresh`] after changes.
    rows: Vec<Row>,
    /// Whether `rows` needs a rebuild.
    dirty: bool,
    /// The selected row (an index into `rows`) and what it shows.
    selected: usize,
    selected_key: Option<RowKey>,
    /// The first row shown.
    offset: usize,
    /// How many rows the list area holds.
    height: usize,
    marked: BTreeSet<Arc<str>>,
    /// How many items and groups the rows show.
    shown_items: usize,
    shown_groups: usize,
    /// The clock the ages are counted from.
    now: f64,
    /// The next rank: a later staging (or a requeue) ranks higher.
    next_rank: u64,
}

impl ListComponent {
    /// Replaces every item and the plan (a fresh reading of the mount);
    /// `items` come head first, as the stack lists them.
    pub fn replace(&mut self, items: Vec<Item>, plan: Option<PlanInfo>) {
        self.items.clear();
        for mut item in items.into_iter().rev() {
            item.rank = self.bump();
            self.items.insert(item.id.clone(), item);
        }
        self.marked.retain(|id| self.items.contains_key(id));
        self.plan = plan;
        self.dirty = true;
    }

    /// Adds a newly staged item (or updates one already known).
    pub fn insert(&mut self, mut item: Item) -> bool {
        item.rank = self.bump();
        let new = self.items.insert(item.id.clone(), item).is_none();
        self.dirty = true;
        new
    }

    /// Moves an item back to the head of its group (an apply failed).
    pub fn requeue(&mut self, id: &str) {
        let rank = self.bump();
        if let Some(item) = self.items.get_mut(id) {
            item.rank = rank;
            self.dirty = true;
        }
    }

    /// Removes a decided or withdrawn item; whether it was listed.
    pub fn remove(&mut self, id: &str) -> bool {
        self.marked.remove(id);
        let removed = self.items.remove(id).is_some();
        self.dirty |= removed;
        removed
    }

    /// Sets (or clears) the plan under review.
    pub fn set_plan(&mut self, plan: Option<PlanInfo>) {
        self.plan = plan;
        self.dirty = true;
    }

    /// The plan under review.
    pub fn plan(&self) -> Option<&PlanInfo> {
        self.plan.as_ref()
    }

    /// Sets the filter (a substring of label, tool or session).
    pub fn set_filter(&mut self, filter: &str) {
        self.filter = filter.to_string();
        self.dirty = true;
    }

    /// The filter.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Sets how many rows the list area holds.
    pub fn set_height(&mut self, height: usize) {
        self.height = height.max(1);
        self.dirty = true;
    }

    /// Sets the clock the ages are counted from.
    pub fn set_now(&mut self, now: f64) {
        self.now = now;
    }

    /// The item listed under `id`.
    pub fn item(&self, id: &str) -> Option<&Item> {
        self.items.get(id)
    }

    /// How many previews wait (all, filtered or not).
    pub fn pending(&self) -> usize {
        self.items.len()
    }

    /// How many groups the rows show.
    pub fn groups(&self) -> usize {
        self.shown_groups
    }

    /// How many items the rows show.
    pub fn shown(&self) -> usize {
        self.shown_items
    }

    /// What the selected row shows.
    pub fn selected(&self) -> Option<&RowKey> {
        self.selected_key.as_ref()
    }

    /// The first row shown (for tests of scrolling).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The marked items that are still listed, in id order.
    pub fn marked(&self) -> Vec<Arc<str>> {
        self.marked.iter().cloned().collect()
    }

    /// How many marked items the filter hides.
    pub fn marked_hidden(&self) -> usize {
        let filter = self.filter.to_lowercase();
        self.marked
            .iter()
            .filter(|id| {
                self.items
                    .get(*id)
                    .is_some_and(|item| !item.matches(&filter))
            })
            .count()
    }

    /// Unmarks everything.
    pub fn clear_marks(&mut self) {
        self.marked.clear();
    }

    /// Selects the row that shows `key`, when it is shown.
    pub fn select(&mut self, key: &RowKey) {
        self.refresh();
        if let Some(index) = self
            .rows
            .iter()
            .position(|row| row.key().as_ref() == Some(key))
        {
            self.selected = index;
            self.selected_key = Some(key.clone());
            self.scroll_to_selection();
        }
    }

    fn bump(&mut self) -> u64 {
        self.next_rank += 1;
        self.next_rank
    }

    /// Rebuilds the rows after changes (once per batch of messages, not
    /// per message), keeping the selection on the same item when it is
    /// still listed, else on the row where it was.
    pub fn refresh(&mut self) -> bool {
        if !self.dirty {
            return false;
        }
        self.dirty = false;
        let before = self.selected_key.clone();
        self.rebuild_rows();
        let found = before.as_ref().and_then(|key| {
            self.rows
                .iter()
                .position(|row| row.key().as_ref() == Some(key))
        });
        self.selected = match found {
            Some(index) => index,
            None => self.selectable_near(self.selected),
        };
        self.selected_key = self.rows.get(self.selected).and_then(Row::key);
        self.scroll_to_selection();
        self.selected_key != before
    }

    fn rebuild_rows(&mut self) {
        let filter = self.filter.to_lowercase();
        let mut groups: HashMap<Option<Arc<str>>, Vec<&Item>> = HashMap::new();
        for item in self.items.values() {
            if item.matches(&filter) {
                groups.entry(item.session.clone()).or_default().push(item);
            }
        }
        let mut order: Vec<Option<Arc<str>>> = groups.keys().cloned().collect();
        // The previews of no session first, then the sessions by id, as
        // `status` lists them.
        order.sort();
        let mut rows = Vec::with_capacity(self.items.len() + order.len() + 1);
        if self.plan.is_some() {
            rows.push(Row::Plan);
        }
        let mut shown = 0;
        for session in &order {
            let mut members = groups.remove(session).unwrap_or_default();
            members.sort_unstable_by_key(|item| std::cmp::Reverse(item.rank));
            rows.push(Row::Header(session.clone(), members.len()));
            shown += members.len();
            rows.extend(members.into_iter().map(|item| Row::Item(item.id.clone())));
        }
        self.shown_items = shown;
        self.shown_groups = order.len();
        self.rows = rows;
    }

    /// The selectable row nearest to `index` (at it or below, else above).
    fn selectable_near(&self, index: usize) -> usize {
        let index = index.min(self.rows.len().saturating_sub(1));
        (index..self.rows.len())
            .chain((0..index).rev())
            .find(|&at| self.rows[at].key().is_some())
            .unwrap_or(0)
    }

    fn step(&mut self, down: bool, count: usize) {
        let mut at = self.selected;
        let mut left = count;
        while left > 0 {
            let next = if down {
                (at + 1..self.rows.len()).find(|&i| self.rows[i].key().is_some())
            } else {
                (0..at).rev().find(|&i| self.rows[i].key().is_some())
            };
            match next {
                Some(next) => at = next,
                None => break,
            }
            left -= 1;
        }
        self.selected = at;
        self.selected_key = self.rows.get(at).and_then(Row::key);
        self.scroll_to_selection();
    }

    /// Keeps the selected row in view, and its group's header too when
    /// there is room.
    fn scroll_to_selection(&mut self) {
        let height = self.height.max(1);
        let top = if self.selected > 0
            && matches!(self.rows.get(self.selected - 1), Some(Row::Header(..)))
        {
            self.selected - 1
        } else {
            self.selected
        };
        if top < self.offset {
            self.offset = top;
        } else if self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        let last_start = self.rows.len().saturating_sub(height);
        self.offset = self.offset.min(last_start);
    }

    fn toggle_mark(&mut self) {
        if let Some(RowKey::Item(id)) = &self.selected_key {
            if !self.marked.remove(id) {
                self.marked.insert(id.clone());
            }
        }
    }

    fn row_line(&self, row: &Row, index: usize, width: usize, theme: &Theme) -> Line<'static> {
        let selected = index == self.selected && self.selected_key.is_some();
        let pointer = if selected { ">" } else { " " };
        match row {
            Row::Plan => {
                let text = format!(
                    "{pointer} {}",
                    texts::review_plan_row(self.plan.as_ref().map_or("", |p| &p.slug))
                );
                let style = if selected {
                    theme.selected()
                } else {
                    theme.heading()
                };
                Line::from(Span::styled(fit(&text, width), style))
            }
            Row::Header(session, count) => {
                let name = session.as_deref().unwrap_or(texts::REVIEW_NO_SESSION);
                let text = texts::review_group_row(name, *count);
                Line::from(Span::styled(fit(&text, width), theme.heading()))
            }
            Row::Item(id) => {
                let Some(item) = self.items.get(id) else {
                    return Line::default();
                };
                let mark = if self.marked.contains(id) { "*" } else { " " };
                let text = format!(
                    "{pointer}{mark}{:>4} {:<8} {}",
                    age(item.staged_at, self.now),
                    fit(&item.tool, 8),
                    item.label
                );
                let style = if selected {
                    theme.selected()
                } else if self.marked.contains(id) {
                    theme.marked()
                } else {
                    ratatui::style::Style::default()
                };
                Line::from(Span::styled(fit(&text, width), style))
            }
        }
    }
}

impl Component for ListComponent {
    fn event(&mut self, key: &KeyEvent, actions: &mut Vec<Action>) -> EventState {
        self.refresh();
        let Some(what) = binding_for(BINDINGS, key) else {
            return EventState::NotConsumed;
        };
        let before = self.selected_key.clone();
        match what {
            Move::Up => self.step(false, 1),
            Move::Down => self.step(true, 1),
            Move::First => self.step(false, usize::MAX),
            Move::Last => self.step(true, usize::MAX),
            Move::Mark => {
                self.toggle_mark();
                self.step(true, 1);
            }
        }
        if self.selected_key != before {
            actions.push(Action::SelectionChanged);
        }
        EventState::Consumed
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let width = usize::from(area.width);
        if self.rows.is_empty() {
            let empty = Paragraph::new(texts::REVIEW_NOTHING_PENDING)
                .wrap(ratatui::widgets::Wrap { trim: true });
            frame.render_widget(empty, area);
            return;
        }
        let lines: Vec<Line<'static>> = {
            self.rows
                .iter()
                .enumerate()
                .skip(self.offset)
                .take(usize::from(area.height))
                .map(|(index, row)| self.row_line(row, index, width, theme))
                .collect()
        };
        frame.render_widget(Paragraph::new(lines), area);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        commands_of(BINDINGS)
    }
}
