//! The selected item in full: a diff, a whole command, a patch, a plan's
//! markdown or the tool input as JSON. Nothing is cut: long lines wrap,
//! long content scrolls, and the position line says which lines show of
//! how many; beside a diff (which the stage protocol may have cut, saying
//! so) the call itself is one key (`c`) away. What it shows is made from
//! the item's files by [`DetailView::from_files`] (off the UI thread) and
//! wrapped when it arrives or the pane changes size, so a redraw only
//! paints.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use serde_json::Value;

use super::text::{fit, screen_line, wrap};
use super::{binding_for, commands_of, Action, Binding, CommandInfo, Component, EventState, Theme};
use crate::texts;

/// What kind of content the pane shows (how its lines are styled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailKind {
    /// A unified diff (`pending/<id>/diff`).
    Diff,
    /// A shell command, whole.
    Command,
    /// A patch (Codex `apply_patch`), styled as a diff.
    Patch,
    /// An Edit's strings, old as `-` lines and new as `+` lines.
    Strings,
    /// A file's whole new content (a Write without a diff file).
    Content,
    /// A plan's markdown.
    Plan,
    /// The tool input as pretty JSON.
    Json,
    /// Plain text (a detail that is not JSON, a message).
    Text,
}

/// What the detail pane shows for one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailView {
    /// The item's label (or the plan's slug), whole.
    pub title: String,
    /// How the body is styled.
    pub kind: DetailKind,
    /// Lines about the content (cwd, description, the file, a note).
    pub meta: Vec<String>,
    /// The content.
    pub body: String,
    /// The call itself (its tool input as read from `detail`) when the
    /// view shows a diff: the key `c` switches to it, so a diff cut to
    /// the stage protocol's limit never hides the rest of the call.
    pub call: Option<Box<DetailView>>,
}

/// The files of one preview the detail pane is made from (each absent
/// when the preview has none, or it could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemFiles<'a> {
    /// `detail`: the tool input, JSON when the producer sent JSON.
    pub detail: Option<&'a str>,
    /// `diff`: what a file tool's call would change, made at staging.
    pub diff: Option<&'a str>,
    /// `cwd`: the agent's working directory when it staged the call.
    pub cwd: Option<&'a str>,
}

impl DetailView {
    /// A pane with one message (loading, an error).
    pub fn message(title: &str, text: &str) -> Self {
        DetailView {
            title: title.to_string(),
            kind: DetailKind::Text,
            meta: Vec::new(),
            body: text.to_string(),
            call: None,
        }
    }

    /// The view of a preview from its files: its `diff` (made at staging)
    /// when there is one, with the call itself one key away; else what
    /// its tool's `detail` holds. A diff that is only a line saying why
    /// none could be made (the file is a link, too large, the edit's text
    /// is not in it) is shown as a note above the call itself, so what
    /// the call would write is always on screen.
    pub fn from_files(label: &str, tool: &str, files: &ItemFiles<'_>) -> Self {
        let input: Option<Value> = files
            .detail
            .and_then(|text| serde_json::from_str(text).ok());
        let mut view = call_view(label, tool, files.detail, input.as_ref());
        // The agent's cwd, unless the call names its own (a Codex
        // `workdir`), which is where it runs.
        let has_cwd = view.meta.iter().any(|line| line.starts_with("cwd: "));
        if let Some(cwd) = files.cwd.map(str::trim_end).filter(|cwd| !cwd.is_empty()) {
            if !has_cwd {
                view.meta.insert(0, format!("cwd: {cwd}"));
            }
        }
        let Some(diff) = files.diff else {
            return view;
        };
        // The lines that say where (the cwd, the file) lead every view.
        let place = view
            .meta
            .iter()
            .take_while(|line| line.starts_with("cwd: ") || line.starts_with("file: "))
            .count();
        if let Some(refusal) = diff_refusal(diff) {
            view.meta.insert(place, refusal.to_string());
            return view;
        }
        let mut meta = view.meta[..place].to_vec();
        if is_cut(diff) {
            meta.push(texts::REVIEW_DIFF_CUT_NOTE.to_string());
        }
        let has_call = files.detail.is_some();
        DetailView {
            title: view.title.clone(),
            kind: DetailKind::Diff,
            meta,
            body: diff.to_string(),
            call: has_call.then(|| Box::new(view)),
        }
    }

    /// The view of a plan under review: its markdown, or why it cannot be
    /// read.
    pub fn plan(slug: &str, path: &str, markdown: Result<&str, &str>) -> Self {
        let (kind, body) = match markdown {
            Ok(text) => (DetailKind::Plan, text.to_string()),
            Err(why) => (DetailKind::Text, why.to_string()),
        };
        DetailView {
            title: texts::review_plan_row(slug),
            kind,
            meta: vec![format!("file: {path}")],
            body,
            call: None,
        }
    }
}

/// The refusal line of a `diff` that is one (`No diff: ...`, and at most
/// the note on unprintable characters after it).
fn diff_refusal(diff: &str) -> Option<&str> {
    let first = diff.lines().next()?;
    let refusal = first.starts_with(texts::DIFF_REFUSAL_START)
        && diff.lines().skip(1).all(|line| line.starts_with('['));
    refusal.then_some(first)
}

/// Whether a `diff` was cut to the stage protocol's limit (its last line
/// says so).
fn is_cut(diff: &str) -> bool {
    diff.lines()
        .last()
        .is_some_and(|line| line.starts_with(texts::DIFF_CUT_START))
}

/// The view of the call itself: what its tool's `detail` holds, shown
/// the way the tool reads (a command whole, a file's new content, an
/// edit's strings, a patch; anything else as JSON).
fn call_view(label: &str, tool: &str, detail: Option<&str>, input: Option<&Value>) -> DetailView {
    let field = |name: &str| input.and_then(|v| v.get(name)).and_then(Value::as_str);
    let mut view = DetailView::message(label, "");
    if let Some(path) = field("file_path").or_else(|| field("path")) {
        view.meta.push(format!("file: {path}"));
    }
    let Some(detail) = detail else {
        view.body = texts::REVIEW_NO_DETAIL.to_string();
        return view;
    };
    let Some(input) = input else {
        view.body = detail.to_string();
        return view;
    };
    match tool {
        "Bash" | "NetworkAccess" | "shell" | "exec_command" | "local_shell"
            if command_of(input).is_some() =>
        {
            for (key, name) in [
                ("cwd", "cwd"),
                ("workdir", "cwd"),
                ("description", "description"),
            ] {
                if let Some(text) = field(key) {
                    view.meta.push(format!("{name}: {text}"));
                }
            }
            let command = command_of(input).unwrap_or_default();
            // Codex runs `apply_patch` through its shell tool too: the
            // patch is shown as one.
            view.kind = if command.contains(PATCH_START) {
                DetailKind::Patch
            } else {
                DetailKind::Command
            };
            view.body = command;
        }
        "Write" if field("content").is_some() => {
            view.kind = DetailKind::Content;
            view.meta.push(texts::REVIEW_WRITE_CONTENT.to_string());
            view.body = field("content").unwrap_or_default().to_string();
        }
        "Edit" | "MultiEdit" if edits_of(input).is_some() => {
            view.kind = DetailKind::Strings;
            view.meta.push(texts::REVIEW_EDIT_STRINGS.to_string());
            view.body = edits_of(input).unwrap_or_default();
        }
        "apply_patch" | "ApplyPatch" if patch_of(input).is_some() => {
            view.kind = DetailKind::Patch;
            view.body = patch_of(input).unwrap_or_default();
        }
        _ => {
            view.kind = DetailKind::Json;
            view.body = serde_json::to_string_pretty(input).unwrap_or_else(|_| detail.to_string());
        }
    }
    view
}

/// How a Codex patch begins.
const PATCH_START: &str = "*** Begin Patch";

/// A shell call's command: a string, or an argv (Codex) joined by spaces.
fn command_of(input: &Value) -> Option<String> {
    match input.get("command")? {
        Value::String(command) => Some(command.clone()),
        Value::Array(words) => Some(
            words
                .iter()
                .map(|word| {
                    word.as_str()
                        .map_or_else(|| word.to_string(), str::to_string)
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// An Edit's (or each of a MultiEdit's) old and new strings as `-` and
/// `+` lines.
fn edits_of(input: &Value) -> Option<String> {
    let one = |edit: &Value| -> Option<String> {
        let old = edit.get("old_string")?.as_str()?;
        let new = edit.get("new_string")?.as_str()?;
        let mut text = String::new();
        for line in old.split('\n') {
            text.push_str(&format!("-{line}\n"));
        }
        for line in new.split('\n') {
            text.push_str(&format!("+{line}\n"));
        }
        Some(text)
    };
    match input.get("edits").and_then(Value::as_array) {
        Some(edits) => {
            let parts: Option<Vec<String>> = edits.iter().map(one).collect();
            Some(parts?.join("@@\n"))
        }
        None => one(input),
    }
}

/// A Codex patch: the text of its `input`, `patch` or `command`.
fn patch_of(input: &Value) -> Option<String> {
    ["input", "patch", "command"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .map(str::to_string)
}

/// How a shown line is styled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Meta,
    Plain,
    Added,
    Removed,
    Hunk,
    Heading,
}

/// What a key does to the pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PaneKey {
    PageUp,
    PageDown,
    LineUp,
    LineDown,
    SwitchCall,
}

const BINDINGS: &[Binding<PaneKey>] = &[
    Binding {
        keys: &[KeyCode::PageUp],
        shown: "PgUp",
        what: "scroll the detail up a page",
        action: PaneKey::PageUp,
    },
    Binding {
        keys: &[KeyCode::PageDown],
        shown: "PgDn",
        what: "scroll the detail down a page",
        action: PaneKey::PageDown,
    },
    Binding {
        keys: &[KeyCode::Char('K')],
        shown: "K",
        what: "scroll the detail up a line",
        action: PaneKey::LineUp,
    },
    Binding {
        keys: &[KeyCode::Char('J')],
        shown: "J",
        what: "scroll the detail down a line",
        action: PaneKey::LineDown,
    },
    Binding {
        keys: &[KeyCode::Char('c')],
        shown: "c",
        what: "switch the detail between a diff and the whole call",
        action: PaneKey::SwitchCall,
    },
];

/// The pane's state: the view, its lines wrapped to the pane's width, and
/// the scroll offset.
#[derive(Debug, Default)]
pub struct DetailComponent {
    view: Option<DetailView>,
    /// Whether the call itself shows instead of the view's diff.
    showing_call: bool,
    lines: Vec<(LineKind, String)>,
    scroll: usize,
    width: usize,
    height: usize,
}

impl DetailComponent {
    /// Shows `view` from its top.
    pub fn show(&mut self, view: Option<DetailView>) {
        self.view = view;
        self.showing_call = false;
        self.scroll = 0;
        self.rewrap();
    }

    /// The view shown: the item's, or the call itself when `c` switched
    /// to it.
    pub fn view(&self) -> Option<&DetailView> {
        let view = self.view.as_ref()?;
        match &view.call {
            Some(call) if self.showing_call => Some(call),
            _ => Some(view),
        }
    }

    /// Switches between a diff and the call itself (a view without a
    /// call stays as it is).
    fn switch_call(&mut self) {
        if self.view.as_ref().is_some_and(|view| view.call.is_some()) {
            self.showing_call = !self.showing_call;
            self.rewrap();
        }
    }

    /// Sets the text area's size (the pane without its border and title).
    pub fn set_size(&mut self, width: usize, height: usize) {
        let width = width.max(1);
        if width != self.width {
            self.width = width;
            self.rewrap();
        }
        self.height = height.max(1);
        self.scroll = self.scroll.min(self.max_scroll());
    }

    /// The first line shown (0-based) and how many lines there are.
    pub fn position(&self) -> (usize, usize) {
        (self.scroll, self.lines.len())
    }

    fn max_scroll(&self) -> usize {
        self.lines.len().saturating_sub(self.height)
    }

    fn rewrap(&mut self) {
        self.lines.clear();
        let Some(view) = self.view() else { return };
        let width = self.width.max(1);
        let push = |kind: LineKind, text: &str, lines: &mut Vec<(LineKind, String)>| {
            for part in wrap(&screen_line(text), width) {
                lines.push((kind, part));
            }
        };
        let mut lines = Vec::new();
        // The label on one line: a long one (a long command's) is cut,
        // saying so, because the body below shows the whole call.
        let title = fit(&screen_line(&view.title), width);
        lines.push((LineKind::Heading, title));
        if self.showing_call {
            push(LineKind::Meta, texts::REVIEW_SHOWING_CALL, &mut lines);
        }
        for meta in &view.meta {
            push(LineKind::Meta, meta, &mut lines);
        }
        lines.push((LineKind::Plain, String::new()));
        let body = view.body.strip_suffix('\n').unwrap_or(&view.body);
        for line in body.split('\n') {
            push(line_kind(view.kind, line), line, &mut lines);
        }
        self.lines = lines;
    }

    fn position_text(&self) -> String {
        let total = self.lines.len();
        let first = if total == 0 { 0 } else { self.scroll + 1 };
        let last = (self.scroll + self.height).min(total);
        texts::review_scroll(first, last, total)
    }
}

/// How a body line of `kind` is styled.
fn line_kind(kind: DetailKind, line: &str) -> LineKind {
    match kind {
        DetailKind::Diff | DetailKind::Patch | DetailKind::Strings => {
            if line.starts_with("+++") || line.starts_with("---") || line.starts_with("***") {
                LineKind::Meta
            } else if line.starts_with('+') {
                LineKind::Added
            } else if line.starts_with('-') {
                LineKind::Removed
            } else if line.starts_with("@@") {
                LineKind::Hunk
            } else {
                LineKind::Plain
            }
        }
        DetailKind::Plan if line.starts_with('#') => LineKind::Heading,
        _ => LineKind::Plain,
    }
}

impl Component for DetailComponent {
    fn event(&mut self, key: &KeyEvent, _actions: &mut Vec<Action>) -> EventState {
        let Some(pane_key) = binding_for(BINDINGS, key) else {
            return EventState::NotConsumed;
        };
        let page = self.height.saturating_sub(1).max(1);
        self.scroll = match pane_key {
            PaneKey::PageUp => self.scroll.saturating_sub(page),
            PaneKey::PageDown => self.scroll + page,
            PaneKey::LineUp => self.scroll.saturating_sub(1),
            PaneKey::LineDown => self.scroll + 1,
            PaneKey::SwitchCall => {
                self.switch_call();
                0
            }
        }
        .min(self.max_scroll());
        EventState::Consumed
    }

    fn draw(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let block = Block::default()
            .borders(Borders::LEFT)
            .title(Span::styled(self.position_text(), theme.dim()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let lines: Vec<Line<'_>> = self
            .lines
            .iter()
            .skip(self.scroll)
            .take(usize::from(inner.height))
            .map(|(kind, text)| Line::from(Span::styled(text.as_str(), style_of(*kind, theme))))
            .collect();
        frame.render_widget(Paragraph::new(lines), inner);
    }

    fn commands(&self) -> Vec<CommandInfo> {
        commands_of(BINDINGS)
    }
}

fn style_of(kind: LineKind, theme: &Theme) -> Style {
    match kind {
        LineKind::Meta => theme.dim(),
        LineKind::Plain => Style::default(),
        LineKind::Added => theme.added(),
        LineKind::Removed => theme.removed(),
        LineKind::Hunk => theme.hunk(),
        LineKind::Heading => theme.heading(),
    }
}
