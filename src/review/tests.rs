//! The review without a mount: messages in, state and `TestBackend`
//! screens out.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::Terminal;

use super::app::{
    App, Decider, DecisionOutcome, DecisionRequest, Effect, Item, Msg, PlanInfo, RowKey,
    SourceEvent, TrailEntry,
};
use super::components::detail::{DetailView, ItemFiles};
use super::components::Theme;
use crate::texts;

const NOW: f64 = 1_000_000.0;
const COLOR: Theme = Theme { color: true };
const NO_COLOR: Theme = Theme { color: false };

fn item(seq: usize, tool: &str, label: &str, session: Option<&str>) -> Item {
    Item {
        id: Arc::from(format!("pending-action:{tool}:{seq}")),
        label: label.to_string(),
        tool: tool.to_string(),
        session: session.map(Arc::from),
        staged_at: Some(NOW - 5.0 * (10.0 - seq as f64)),
        rank: 0,
    }
}

fn two_sessions() -> Vec<Item> {
    // Head first, as status.json lists them.
    vec![
        item(4, "Bash", "Bash: cargo test", Some("agent-two")),
        item(
            3,
            "Write",
            "Write: src/main.rs (12 lines)",
            Some("agent-one"),
        ),
        item(2, "Edit", "Edit: src/lib.rs", Some("agent-one")),
        item(1, "external", "fix typo in docs", None),
    ]
}

fn app_with(items: Vec<Item>, plan: Option<PlanInfo>, theme: Theme) -> App {
    let mut app = App::new("/xdev", theme, false, Rect::new(0, 0, 80, 24));
    app.update(Msg::Tick(NOW));
    app.update(Msg::Source(SourceEvent::Snapshot {
        items,
        plan,
        trail: Vec::new(),
    }));
    app.settle();
    app
}

/// A preview's files: its `detail` and `diff` (no `cwd`).
fn files<'a>(detail: Option<&'a str>, diff: Option<&'a str>) -> ItemFiles<'a> {
    ItemFiles {
        detail,
        diff,
        cwd: None,
    }
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn press(app: &mut App, codes: &[KeyCode]) -> Vec<Effect> {
    let mut effects = Vec::new();
    for code in codes {
        effects.extend(app.update(key(*code)));
        effects.extend(app.settle());
    }
    effects
}

fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    let codes: Vec<KeyCode> = text.chars().map(KeyCode::Char).collect();
    press(app, &codes)
}

fn draw(app: &App, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|frame| app.draw(frame)).expect("draw");
    terminal.backend().buffer().clone()
}

fn lines(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

fn screen(app: &App) -> String {
    lines(&draw(app, 80, 24)).join("\n")
}

/// Shows what the detail of the selected item would show once its files
/// are read.
fn load_selected(app: &mut App, effects: &[Effect], view: impl Fn(&str, &str) -> DetailView) {
    for effect in effects {
        if let Effect::LoadDetail { id, label, tool } = effect {
            app.update(Msg::Detail(id.clone(), view(label, tool)));
        }
    }
}

#[test]
fn the_list_groups_two_sessions_head_first() {
    let app = app_with(two_sessions(), None, COLOR);
    let shown = screen(&app);
    let list: Vec<String> = shown
        .lines()
        .take(9)
        .map(|l| {
            l.chars()
                .take(32)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(
        list,
        [
            "xdev review /xdev: 4 pending in",
            "(no session) (1)",
            ">  45s external fix typo in docs",
            "agent-one (2)",
            "   35s Write    Write: src/main…",
            "   40s Edit     Edit: src/lib.rs",
            "agent-two (1)",
            "   30s Bash     Bash: cargo test",
            "",
        ],
        "{shown}"
    );
    assert_eq!(
        shown.lines().next(),
        Some("xdev review /xdev: 4 pending in 3 group(s)")
    );
    assert_eq!(
        shown.lines().last(),
        Some("Enter a approve  r reject  / filter  space mark  l last  ? help  q quit")
    );
}

#[test]
fn a_diff_shows_whole_and_coloured() {
    let mut app = app_with(two_sessions(), None, COLOR);
    let effects = press(&mut app, &[KeyCode::Down]);
    let diff = "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,2 +1,2 @@\n fn main() {\n-    old();\n+    new();\n";
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(
            label,
            tool,
            &files(
                Some(r#"{"file_path":"src/main.rs","content":"x"}"#),
                Some(diff),
            ),
        )
    });
    let buffer = draw(&app, 80, 24);
    let shown = lines(&buffer);
    let detail: Vec<String> = shown
        .iter()
        .skip(1)
        .take(10)
        .map(|l| l.chars().skip(33).collect())
        .collect();
    assert_eq!(
        detail,
        [
            "9 lines, all shown",
            "Write: src/main.rs (12 lines)",
            "file: src/main.rs",
            "",
            "--- a/src/main.rs",
            "+++ b/src/main.rs",
            "@@ -1,2 +1,2 @@",
            " fn main() {",
            "-    old();",
            "+    new();",
        ]
    );
    let row_of = |text: &str| {
        shown
            .iter()
            .position(|line| line.contains(text))
            .expect(text) as u16
    };
    assert_eq!(buffer[(33, row_of("-    old();"))].fg, Color::Red);
    assert_eq!(buffer[(33, row_of("+    new();"))].fg, Color::Green);
    assert_eq!(buffer[(33, row_of("@@ -1,2"))].fg, Color::Cyan);
}

#[test]
fn a_command_shows_whole_with_its_cwd_and_description_and_scrolls() {
    let command: String = (0..60)
        .map(|i| format!("echo step-{i:02} && "))
        .collect::<String>()
        + "echo last-step";
    let detail =
        serde_json::json!({"command": command, "cwd": "/work/app", "description": "many steps"})
            .to_string();
    let mut app = app_with(two_sessions(), None, COLOR);
    let effects = press(&mut app, &[KeyCode::End]);
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(label, tool, &files(Some(&detail), None))
    });
    let first = screen(&app);
    assert!(first.contains("cwd: /work/app"), "{first}");
    assert!(first.contains("description: many steps"), "{first}");
    assert!(first.contains("lines 1-18 of "), "{first}");
    // Page down until the end: every step shows on some page, the last one
    // at the end, and the position line counts the lines.
    let mut seen = String::new();
    for _ in 0..20 {
        let page = screen(&app);
        for line in page.lines().skip(2).take(18) {
            seen.push_str(line.chars().skip(33).collect::<String>().as_str());
        }
        press(&mut app, &[KeyCode::PageDown]);
    }
    let (scroll, total) = app.detail().position();
    assert_eq!(scroll, total - 18, "scrolled to the end, no further");
    assert!(seen.contains("last-step"));
    for i in 0..60 {
        assert!(
            seen.contains(&format!("step-{i:02}")),
            "step {i} was never shown"
        );
    }
    press(&mut app, &[KeyCode::PageUp]);
    assert_eq!(app.detail().position().0, scroll.saturating_sub(17));
}

#[test]
fn a_plan_under_review_is_pinned_at_the_top_with_its_markdown() {
    let plan = PlanInfo {
        slug: "auth".into(),
        path: "/plans/auth-plan.md".into(),
        markdown: Ok("# Auth\n\n1. Add a login endpoint\n2. Hash passwords\n".into()),
    };
    let app = app_with(two_sessions(), Some(plan), COLOR);
    let buffer = draw(&app, 80, 24);
    let shown = lines(&buffer);
    assert!(
        shown[1].starts_with("> PLAN under review: auth"),
        "{}",
        shown.join("\n")
    );
    let detail: Vec<String> = shown
        .iter()
        .skip(2)
        .take(6)
        .map(|l| l.chars().skip(33).collect())
        .collect();
    assert_eq!(
        detail,
        [
            "PLAN under review: auth",
            "file: /plans/auth-plan.md",
            "",
            "# Auth",
            "",
            "1. Add a login endpoint",
        ]
    );
    assert!(
        buffer[(33, 5)]
            .modifier
            .contains(ratatui::style::Modifier::BOLD),
        "the heading is bold"
    );
}

#[test]
fn any_other_tool_shows_its_input_as_pretty_json() {
    let mut app = app_with(
        vec![item(
            1,
            "WebFetch",
            "WebFetch: https://example.com",
            Some("s"),
        )],
        None,
        COLOR,
    );
    let effects = app.settle();
    let mut effects = effects;
    effects.extend(press(&mut app, &[KeyCode::Home]));
    let view = DetailView::from_files(
        "WebFetch: https://example.com",
        "WebFetch",
        &files(
            Some(r#"{"url":"https://example.com","prompt":"summarise"}"#),
            None,
        ),
    );
    app.update(Msg::Detail(Arc::from("pending-action:WebFetch:1"), view));
    let shown = screen(&app);
    let detail: Vec<String> = shown
        .lines()
        .skip(2)
        .take(7)
        .map(|l| l.chars().skip(33).collect())
        .collect();
    assert_eq!(
        detail,
        [
            "WebFetch: https://example.com",
            "",
            "{",
            "  \"prompt\": \"summarise\",",
            "  \"url\": \"https://example.com\"",
            "}",
            "",
        ],
        "{shown}"
    );
}

#[test]
fn views_of_each_tool_come_from_their_files() {
    let write = DetailView::from_files(
        "Write: a",
        "Write",
        &files(Some(r#"{"file_path":"a","content":"one\ntwo\n"}"#), None),
    );
    assert_eq!(write.body, "one\ntwo\n");
    assert_eq!(write.meta, ["file: a", texts::REVIEW_WRITE_CONTENT]);
    let edit = DetailView::from_files(
        "Edit: a",
        "Edit",
        &files(
            Some(r#"{"file_path":"a","old_string":"x","new_string":"y\nz"}"#),
            None,
        ),
    );
    assert_eq!(edit.body, "-x\n+y\n+z\n");
    let multi = DetailView::from_files(
        "MultiEdit: a",
        "MultiEdit",
        &files(
            Some(
                r#"{"file_path":"a","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}"#,
            ),
            None,
        ),
    );
    assert_eq!(multi.body, "-a\n+b\n@@\n-c\n+d\n");
    let patch = DetailView::from_files(
        "apply_patch",
        "apply_patch",
        &files(
            Some(r#"{"input":"*** Begin Patch\n+x\n*** End Patch"}"#),
            None,
        ),
    );
    assert_eq!(patch.body, "*** Begin Patch\n+x\n*** End Patch");
    let diffed = DetailView::from_files(
        "Edit: a",
        "Edit",
        &files(Some(r#"{"file_path":"a"}"#), Some("@@ -1 +1 @@\n-x\n+y\n")),
    );
    assert_eq!(
        diffed.body, "@@ -1 +1 @@\n-x\n+y\n",
        "a diff file wins over the detail"
    );
    let shell_patch = DetailView::from_files(
        "Bash: apply_patch",
        "Bash",
        &files(
            Some(
                r#"{"command":["apply_patch","*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch"]}"#,
            ),
            None,
        ),
    );
    assert_eq!(
        shell_patch.kind,
        super::components::detail::DetailKind::Patch
    );
    assert!(
        shell_patch.body.contains("\n-x\n+y\n"),
        "{}",
        shell_patch.body
    );
    let bare = DetailView::from_files("plain", "external", &files(None, None));
    assert_eq!(bare.body, texts::REVIEW_NO_DETAIL);
    let codex = DetailView::from_files(
        "Bash",
        "Bash",
        &files(
            Some(r#"{"command":["bash","-lc","ls"],"workdir":"/w"}"#),
            None,
        ),
    );
    assert_eq!(
        (codex.body.as_str(), codex.meta.as_slice()),
        ("bash -lc ls", ["cwd: /w".to_string()].as_slice())
    );
}

#[test]
fn escape_sequences_never_reach_the_terminal() {
    let mut app = app_with(vec![item(1, "Bash", "Bash: evil", None)], None, COLOR);
    let effects = press(&mut app, &[KeyCode::Home]);
    let _ = effects;
    let view = DetailView::from_files(
        "Bash: evil",
        "Bash",
        &files(Some("{\"command\":\"printf '\\u001b[2J'\\tdone\"}"), None),
    );
    app.update(Msg::Detail(Arc::from("pending-action:Bash:1"), view));
    let buffer = draw(&app, 80, 24);
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "a control character in {:?}",
            cell.symbol()
        );
    }
    assert!(lines(&buffer).join("\n").contains("printf '␛[2J'   done"));
}

#[test]
fn control_characters_in_labels_sessions_and_tools_never_reach_the_terminal() {
    let mut evil = item(
        1,
        "Bash",
        "Bash: \u{1b}]0;owned\u{7}title",
        Some("s\u{1b}[2J"),
    );
    evil.tool = "B\u{1b}[31m".into();
    let mut app = app_with(vec![evil], None, COLOR);
    app.update(Msg::Source(SourceEvent::Decided(TrailEntry {
        time: NOW,
        verdict: "applied".into(),
        label: "x\u{1b}[H".into(),
        decider: Decider::Process("p\u{1b}".into()),
    })));
    let buffer = draw(&app, 80, 24);
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(char::is_control),
            "a control character in {:?}",
            cell.symbol()
        );
    }
}

#[test]
fn help_lists_every_components_keys() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char('?')]);
    let shown = screen(&app);
    assert!(shown.contains(texts::REVIEW_HELP_TITLE), "{shown}");
    for command in app.commands() {
        let line = command.keys;
        assert!(
            shown
                .lines()
                .any(|l| l.contains(line) && l.contains(command.what)),
            "{} {} missing:\n{shown}",
            command.keys,
            command.what
        );
    }
    press(&mut app, &[KeyCode::Char('x')]);
    assert!(
        !screen(&app).contains(texts::REVIEW_HELP_TITLE),
        "any key closes it"
    );
    assert!(!app.quitting());
}

#[test]
fn no_color_sets_no_style_at_all() {
    let plan = PlanInfo {
        slug: "p".into(),
        path: "/p-plan.md".into(),
        markdown: Ok("# P\n".into()),
    };
    let mut app = app_with(two_sessions(), Some(plan), NO_COLOR);
    let effects = press(
        &mut app,
        &[KeyCode::Down, KeyCode::Down, KeyCode::Char(' ')],
    );
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(label, tool, &files(None, Some("@@ -1 +1 @@\n-a\n+b\n")))
    });
    app.update(Msg::Decided(DecisionOutcome {
        request: DecisionRequest {
            target: RowKey::Item(Arc::from("x")),
            approve: false,
            reason: "r".into(),
        },
        result: Err("EBUSY: busy".into()),
    }));
    let buffer = draw(&app, 80, 24);
    for cell in buffer.content() {
        let unstyled =
            cell.fg == Color::Reset && cell.bg == Color::Reset && cell.modifier.is_empty();
        assert!(
            unstyled,
            "a style at {:?}: {:?}",
            cell.symbol(),
            cell.style()
        );
    }
    let shown = lines(&buffer).join("\n");
    assert!(
        shown.contains("> PLAN") || shown.contains(">*") || shown.contains("> "),
        "{shown}"
    );
    assert!(shown.contains(" *"), "a mark shows without colour: {shown}");
}

#[test]
fn ten_thousand_items_draw_and_scroll_to_the_selection() {
    let items: Vec<Item> = (0..10_000)
        .rev()
        .map(|seq| {
            item(
                seq,
                "Bash",
                &format!("Bash: job {seq:05}"),
                Some(&format!("session-{:03}", seq % 100)),
            )
        })
        .collect();
    let mut app = app_with(items, None, NO_COLOR);
    assert_eq!(app.list().pending(), 10_000);
    assert!(screen(&app).contains("10000 pending in 100 group(s)"));
    press(&mut app, &[KeyCode::End]);
    let shown = screen(&app);
    // The last group's oldest item: seq 99 in session-099.
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with(">") && l.contains("Bash: job 00099")),
        "{shown}"
    );
    assert!(app.list().offset() > 9_000);
    for _ in 0..30 {
        press(&mut app, &[KeyCode::Up]);
    }
    assert!(
        screen(&app).lines().any(|l| l.starts_with(">")),
        "the selection stays in view"
    );
}

#[test]
fn approve_with_no_reason_sends_the_default_for_that_id() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Down]);
    assert!(
        press(&mut app, &[KeyCode::Enter]).is_empty(),
        "a prompt first"
    );
    assert!(screen(&app).contains("Approve: reason"));
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        effects,
        [Effect::Decide(vec![DecisionRequest {
            target: RowKey::Item(Arc::from("pending-action:Write:3")),
            approve: true,
            reason: texts::REVIEW_DEFAULT_APPROVAL.into(),
        }])]
    );
    assert!(!app.prompt().is_open());
}

#[test]
fn a_rejection_needs_a_reason() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char('r')]);
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert_eq!(app.status().message(), Some(texts::REVIEW_REASON_REQUIRED));
    assert!(app.prompt().is_open(), "still asking");
    type_text(&mut app, "use the fixture");
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        effects,
        [Effect::Decide(vec![DecisionRequest {
            target: RowKey::Item(Arc::from("pending-action:external:1")),
            approve: false,
            reason: "use the fixture".into(),
        }])]
    );
}

#[test]
fn marked_items_are_decided_together_after_a_prompt_naming_how_many() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char(' '), KeyCode::Char(' ')]);
    press(&mut app, &[KeyCode::Char('r')]);
    assert!(
        screen(&app).contains("Reject 2 marked previews"),
        "{}",
        screen(&app)
    );
    type_text(&mut app, "not now");
    let effects = press(&mut app, &[KeyCode::Enter]);
    let Effect::Decide(requests) = &effects[0] else {
        panic!("{effects:?}")
    };
    let mut ids: Vec<String> = requests
        .iter()
        .map(|r| match &r.target {
            RowKey::Item(id) => id.to_string(),
            RowKey::Plan => "plan".into(),
        })
        .collect();
    ids.sort();
    assert_eq!(ids, ["pending-action:Write:3", "pending-action:external:1"]);
    assert!(requests.iter().all(|r| !r.approve && r.reason == "not now"));
    assert!(app.list().marked().is_empty(), "decided marks are cleared");
}

#[test]
fn esc_cancels_a_prompt_and_nothing_is_decided() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char('a')]);
    type_text(&mut app, "typed");
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty());
    assert!(!app.prompt().is_open());
    press(&mut app, &[KeyCode::Char('q')]);
    assert!(app.quitting(), "q quits once the prompt is closed");
}

#[test]
fn q_typed_in_a_prompt_is_text() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char('r')]);
    type_text(&mut app, "quick fix");
    assert!(!app.quitting());
    assert_eq!(app.prompt().input(), "quick fix");
}

#[test]
fn the_filter_keeps_matching_labels_tools_and_sessions() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::Char('/')]);
    type_text(&mut app, "agent-one");
    assert_eq!(app.list().shown(), 2);
    press(&mut app, &[KeyCode::Enter]);
    assert!(screen(&app).contains("[filter: agent-one]"));
    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &[KeyCode::Backspace; 9]);
    type_text(&mut app, "bash");
    assert_eq!(app.list().shown(), 1);
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(
        app.list().shown(),
        2,
        "Esc puts back the filter from before the prompt"
    );
    assert!(screen(&app).contains("[filter: agent-one]"));
}

#[test]
fn an_item_decided_elsewhere_leaves_and_the_selection_stays_on_its_item() {
    let mut app = app_with(two_sessions(), None, COLOR);
    press(&mut app, &[KeyCode::End]);
    assert_eq!(
        app.list().selected(),
        Some(&RowKey::Item(Arc::from("pending-action:Bash:4")))
    );
    app.update(Msg::Source(SourceEvent::Gone(
        "pending-action:Edit:2".into(),
    )));
    app.update(Msg::Source(SourceEvent::Staged(item(
        5,
        "Bash",
        "Bash: ls",
        Some("agent-two"),
    ))));
    app.settle();
    assert_eq!(app.list().pending(), 4);
    assert_eq!(
        app.list().selected(),
        Some(&RowKey::Item(Arc::from("pending-action:Bash:4")))
    );
    let shown = screen(&app);
    assert!(!shown.contains("Edit: src/lib.rs"), "{shown}");
    let bash_rows: Vec<String> = shown
        .lines()
        .map(|l| l.chars().take(32).collect::<String>())
        .filter(|l| l.contains("Bash: "))
        .collect();
    assert!(
        bash_rows[0].contains("Bash: ls"),
        "the newest is the group's head: {shown}"
    );
}

#[test]
fn the_bell_rings_for_new_previews_only_when_asked() {
    let mut app = App::new("/xdev", COLOR, true, Rect::new(0, 0, 80, 24));
    let first = app.update(Msg::Source(SourceEvent::Snapshot {
        items: two_sessions(),
        plan: None,
        trail: Vec::new(),
    }));
    assert!(first.is_empty(), "no bell for what was already pending");
    let staged = app.update(Msg::Source(SourceEvent::Staged(item(
        5, "Bash", "Bash: ls", None,
    ))));
    assert_eq!(staged, [Effect::Bell]);
    let mut quiet = app_with(two_sessions(), None, COLOR);
    assert!(quiet
        .update(Msg::Source(SourceEvent::Staged(item(
            5, "Bash", "Bash: ls", None
        ))))
        .is_empty());
}

#[test]
fn a_decisions_own_result_goes_to_the_status_line() {
    let mut app = app_with(two_sessions(), None, COLOR);
    let request = DecisionRequest {
        target: RowKey::Item(Arc::from("pending-action:Bash:4")),
        approve: true,
        reason: "ok".into(),
    };
    app.update(Msg::Decided(DecisionOutcome {
        request: request.clone(),
        result: Err("EPERM: an agent cannot decide its own call".into()),
    }));
    assert_eq!(
        app.status().message(),
        Some("applied pending-action:Bash:4 failed: EPERM: an agent cannot decide its own call")
    );
    assert_eq!(
        app.list().pending(),
        4,
        "a refused decision leaves the item"
    );
    app.update(Msg::Decided(DecisionOutcome {
        request,
        result: Ok("Allowed: Bash: cargo test. Reason: ok".into()),
    }));
    app.settle();
    assert_eq!(
        app.status().message(),
        Some("applied pending-action:Bash:4: Allowed: Bash: cargo test. Reason: ok")
    );
    assert_eq!(app.list().pending(), 3);
}

#[test]
fn a_plan_is_approved_with_feedback_or_sent_back() {
    let plan = PlanInfo {
        slug: "auth".into(),
        path: "/p/auth-plan.md".into(),
        markdown: Ok("# Auth\n".into()),
    };
    let mut app = app_with(two_sessions(), Some(plan), COLOR);
    assert_eq!(app.list().selected(), Some(&RowKey::Plan));
    press(&mut app, &[KeyCode::Char('r')]);
    assert!(
        press(&mut app, &[KeyCode::Enter]).is_empty(),
        "sending back needs feedback"
    );
    assert_eq!(
        app.status().message(),
        Some(texts::REVIEW_FEEDBACK_REQUIRED)
    );
    type_text(&mut app, "split step 2");
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        effects,
        [Effect::Decide(vec![DecisionRequest {
            target: RowKey::Plan,
            approve: false,
            reason: "split step 2".into()
        }])]
    );
    press(&mut app, &[KeyCode::Char('a')]);
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        effects,
        [Effect::Decide(vec![DecisionRequest {
            target: RowKey::Plan,
            approve: true,
            reason: String::new()
        }])],
        "no feedback is no feedback"
    );
}

#[test]
fn the_trail_names_who_decided() {
    let mut app = app_with(two_sessions(), None, COLOR);
    app.update(Msg::Source(SourceEvent::Decided(TrailEntry {
        time: NOW - 3.0,
        verdict: "applied".into(),
        label: "Bash: ls".into(),
        decider: Decider::ThisReview,
    })));
    app.update(Msg::Source(SourceEvent::Decided(TrailEntry {
        time: NOW - 1.0,
        verdict: "rejected".into(),
        label: "Bash: rm".into(),
        decider: Decider::Policy(Some("Bash(rm:*)".into())),
    })));
    let shown = screen(&app);
    assert!(
        shown.contains("Last decisions: 1s ago rejected Bash: rm by policy (Bash(rm:*))"),
        "{shown}"
    );
    assert!(
        shown.contains("3s ago applied Bash: ls by this review"),
        "{shown}"
    );
    assert_eq!(app.trail().entries().count(), 2);
}

#[test]
fn it_works_at_80x24_and_after_a_resize() {
    let mut app = app_with(two_sessions(), None, COLOR);
    assert_eq!(draw(&app, 80, 24).area, Rect::new(0, 0, 80, 24));
    app.update(Msg::Resize(40, 12));
    let small = lines(&draw(&app, 40, 12));
    assert_eq!(small.len(), 12);
    assert!(small[0].starts_with("xdev review /xdev"));
    app.update(Msg::Resize(200, 60));
    let large = lines(&draw(&app, 200, 60));
    assert!(large.iter().any(|l| l.contains("Bash: cargo test")));
}

/// The detail pane's text lines (right of the list) of a 80x24 screen.
fn detail_pane(app: &App) -> Vec<String> {
    lines(&draw(app, 80, 24))
        .iter()
        .skip(1)
        .take(19)
        .map(|l| l.chars().skip(33).collect())
        .collect()
}

/// Pages the detail pane from its top to its end; every line seen.
fn page_through(app: &mut App) -> String {
    let mut seen = String::new();
    for _ in 0..200 {
        seen.push_str(&detail_pane(app).join("\n"));
        seen.push('\n');
        let (scroll, total) = app.detail().position();
        if scroll + 18 >= total {
            break;
        }
        press(app, &[KeyCode::PageDown]);
    }
    seen
}

#[test]
fn a_diff_refused_shows_why_above_what_the_call_would_write() {
    let mut app = app_with(two_sessions(), None, COLOR);
    // The Write (second row): its target is a symbolic link.
    let effects = press(&mut app, &[KeyCode::Down]);
    let refusal = "No diff: n.txt is not a file: a symbolic link.\n";
    let write = r#"{"file_path":"/w/n.txt","content":"the new first line\nthe new second line\n"}"#;
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(label, tool, &files(Some(write), Some(refusal)))
    });
    let pane = detail_pane(&app);
    assert_eq!(
        pane[..9],
        [
            "7 lines, all shown",
            "Write: src/main.rs (12 lines)",
            "file: /w/n.txt",
            "No diff: n.txt is not a file: a symbolic link.",
            texts::REVIEW_WRITE_CONTENT,
            "",
            "the new first line",
            "the new second line",
            "",
        ],
        "{pane:#?}"
    );
    // The Edit (third row): its old_string is not in the file.
    let effects = press(&mut app, &[KeyCode::Down]);
    let refusal =
        "No diff: the edit cannot be made to a.rs as it is: old_string does not occur in it.\n";
    let edit = r#"{"file_path":"/w/a.rs","old_string":"fn old()","new_string":"fn new()"}"#;
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(label, tool, &files(Some(edit), Some(refusal)))
    });
    let pane = detail_pane(&app).concat();
    for shown in [
        "No diff: the edit cannot be made to a.rs as it",
        "old_string does not occur in it.",
        texts::REVIEW_EDIT_STRINGS,
        "-fn old()",
        "+fn new()",
    ] {
        assert!(pane.contains(shown), "{shown:?} not in\n{pane}");
    }
}

#[test]
fn a_cut_diff_says_so_and_c_shows_the_whole_call() {
    let mut app = app_with(two_sessions(), None, COLOR);
    let effects = press(&mut app, &[KeyCode::Down]);
    let content: String = (0..300).map(|n| format!("line {n:03}\n")).collect();
    let write = serde_json::json!({"file_path": "/w/big.txt", "content": content}).to_string();
    let mut diff = String::from("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,300 @@\n");
    diff.extend((0..100).map(|n| format!("+line {n:03}\n")));
    diff.push_str(&texts::diff_cut(200, true));
    diff.push('\n');
    load_selected(&mut app, &effects, |label, tool| {
        DetailView::from_files(label, tool, &files(Some(&write), Some(&diff)))
    });
    let pane = detail_pane(&app).concat();
    assert!(pane.contains(texts::REVIEW_DIFF_CUT_NOTE), "{pane}");
    let diff_seen = page_through(&mut app);
    assert!(
        diff_seen.contains("[Diff cut here: 200 more"),
        "{diff_seen}"
    );
    assert!(!diff_seen.contains("line 299"), "the diff is cut");
    // c: the call itself, whole, from its top.
    press(&mut app, &[KeyCode::Char('c')]);
    assert_eq!(app.detail().position().0, 0);
    let pane = detail_pane(&app).concat();
    assert!(pane.contains(texts::REVIEW_SHOWING_CALL), "{pane}");
    let call_seen = page_through(&mut app);
    for n in 0..300 {
        assert!(
            call_seen.contains(&format!("line {n:03}")),
            "line {n} of the call never shown"
        );
    }
    // c again: the diff.
    press(&mut app, &[KeyCode::Char('c')]);
    assert!(detail_pane(&app).join("\n").contains("@@ -0,0 +1,300 @@"));
    let help: Vec<_> = app.commands().iter().map(|c| c.keys).collect();
    assert!(help.contains(&"c") && help.contains(&"l"), "{help:?}");
}

#[test]
fn a_commands_cwd_comes_from_its_cwd_file() {
    let mut app = app_with(two_sessions(), None, COLOR);
    let effects = press(&mut app, &[KeyCode::End]);
    load_selected(&mut app, &effects, |label, tool| {
        let files = ItemFiles {
            detail: Some(r#"{"command":"cargo test","description":"run the tests"}"#),
            diff: None,
            cwd: Some("/work/app\n"),
        };
        DetailView::from_files(label, tool, &files)
    });
    let pane = detail_pane(&app);
    assert_eq!(
        pane[1..6],
        [
            "Bash: cargo test",
            "cwd: /work/app",
            "description: run the tests",
            "",
            "cargo test",
        ],
        "{pane:#?}"
    );
    // A cwd the call names itself (Codex's workdir) is where it runs: the
    // one shown.
    let own = ItemFiles {
        detail: Some(r#"{"command":"ls","workdir":"/work/app/sub"}"#),
        diff: None,
        cwd: Some("/work/app"),
    };
    let view = DetailView::from_files("Bash: ls", "Bash", &own);
    assert_eq!(view.meta, ["cwd: /work/app/sub"]);
}

#[test]
fn marked_items_the_filter_hides_are_named_in_the_confirmation() {
    let mut app = app_with(two_sessions(), None, COLOR);
    // Mark the Bash call (agent-two) and the Write (agent-one).
    press(&mut app, &[KeyCode::Char(' '), KeyCode::Char(' ')]);
    press(&mut app, &[KeyCode::Char('/')]);
    type_text(&mut app, "agent-one");
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &[KeyCode::Char('a')]);
    let shown = screen(&app);
    assert!(
        shown.contains("Approve 2 marked previews (1 hidden by the filter)"),
        "{shown}"
    );
}

#[test]
fn a_cut_status_line_or_trail_says_where_the_whole_is() {
    let mut app = app_with(two_sessions(), None, COLOR);
    let long_error = format!("EIO: {} the end", "word ".repeat(30));
    app.update(Msg::Decided(DecisionOutcome {
        request: DecisionRequest {
            target: RowKey::Item(Arc::from("pending-action:Bash:4")),
            approve: true,
            reason: "ok".into(),
        },
        result: Err(long_error),
    }));
    app.update(Msg::Source(SourceEvent::Decided(TrailEntry {
        time: NOW - 1.0,
        verdict: "applied".into(),
        label: format!("Bash: {} tail-of-label", "x".repeat(120)),
        decider: Decider::ThisReview,
    })));
    app.settle();
    let shown = lines(&draw(&app, 80, 24));
    let status = &shown[22];
    assert!(status.ends_with("… [l: whole]"), "{status:?}");
    assert!(shown[20].ends_with("… [l: whole]"), "{:?}", shown[20]);
    press(&mut app, &[KeyCode::Char('l')]);
    let overlay = screen(&app);
    let joined: String = overlay
        .lines()
        .map(|line| line.trim_matches(|c| c == '│' || c == ' '))
        .collect();
    assert!(joined.contains("the end"), "{overlay}");
    assert!(joined.contains("tail-of-label by this review"), "{overlay}");
    press(&mut app, &[KeyCode::Char('x')]);
    assert!(!screen(&app).contains(texts::REVIEW_MESSAGES_TITLE));
}
