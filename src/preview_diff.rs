//! What a file tool's call would change, as the unified diff a person
//! reads in `pending/<id>/diff` before deciding it.
//!
//! Made when the call is staged, against the file as it is then:
//! - Claude Code's `Write`: the new content against the file (a new file:
//!   every line added);
//! - `Edit`: `old_string` replaced by `new_string` in the file (every
//!   occurrence with `replace_all`), `MultiEdit`: its edits in order;
//! - Codex's `apply_patch`: the patch applied to the files it names, as
//!   a unified diff with real line numbers; a section that does not apply
//!   to the file as it is, is shown as the agent sent it, saying so. The
//!   same for a patch Codex runs through its shell tool (`Bash`, `shell`:
//!   the argv `["apply_patch", PATCH]`, or a script `apply_patch <<'EOF'`,
//!   after an optional `cd DIR &&`), read against its `workdir`.
//!
//! A diff is never a guess: where none can be made (the file is a link, a
//! FIFO, too large, not UTF-8; the edit's text is not in the file), the
//! text is one line saying why. The file is read with [`crate::safe_file`]
//! (the event is not trusted), at most [`MAX_TARGET_BYTES`] of it.
//!
//! [`diff_text`] is pure: (tool, tool input, the files as read) → text.
//! [`preview_diff`] reads the files and fits the text to the stage
//! protocol's limit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use similar::TextDiff;

use crate::safe_file::{read_text, FileProblem};
use crate::safe_text::{one_line, printable_lines, unprintable_count};
use crate::stage_protocol::{diff_json_len, MAX_DIFF_BYTES};
use crate::texts;

/// The largest file a diff is made against: 1 MiB. A larger one is named,
/// not read.
pub const MAX_TARGET_BYTES: u64 = 1024 * 1024;

/// How long the diff algorithm may look for the smallest diff before it
/// settles for a larger one (still a true diff).
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The file a call would change, as read when it is staged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Its text.
    Text(String),
    /// There is no file there.
    Absent,
    /// It is not read, and why.
    Refused(FileProblem),
}

/// Reads the file at `path` as a [`Target`], safely (see
/// [`crate::safe_file`]).
pub fn read_target(path: &Path) -> Target {
    match read_text(path, MAX_TARGET_BYTES) {
        Ok(text) => Target::Text(text),
        Err(FileProblem::Missing) => Target::Absent,
        Err(problem) => Target::Refused(problem),
    }
}

/// Whether `tool` is one whose calls get a diff.
pub fn has_diff(tool: &str) -> bool {
    matches!(tool, "Write" | "Edit" | "MultiEdit" | "apply_patch")
}

/// The diff of a call of `tool` with `input`, for an agent working in
/// `cwd`, reading the files it names with `read`; `None` for a tool that
/// changes no file. Not yet made printable nor cut (see [`preview_diff`]).
pub fn diff_text(
    tool: &str,
    input: &Value,
    cwd: Option<&Path>,
    read: &dyn Fn(&Path) -> Target,
) -> Option<String> {
    if let Some(shell) = shell_patch(tool, input) {
        let dir = shell_patch_dir(input, shell.cd, cwd);
        return Some(patch_diff(shell.patch, dir.as_deref(), read));
    }
    if !has_diff(tool) {
        return None;
    }
    if tool == "apply_patch" {
        return Some(match patch_text(input) {
            Some(patch) => patch_diff(patch, cwd, read),
            None => line(texts::DIFF_NO_PATCH),
        });
    }
    let Some(file) = input.get("file_path").and_then(Value::as_str) else {
        return Some(line(&texts::diff_input_missing("file_path")));
    };
    let path = in_cwd(Path::new(file), cwd);
    let shown = shown_path(&path, cwd);
    let target = read(&path);
    Some(match tool {
        "Write" => match input.get("content").and_then(Value::as_str) {
            Some(content) => write_diff(&shown, &target, content),
            None => line(&texts::diff_input_missing("content")),
        },
        _ => match edits(tool, input) {
            Ok(edits) => edit_diff(&shown, &target, &edits),
            Err(field) => line(&texts::diff_input_missing(field)),
        },
    })
}

/// [`diff_text`] against the files as they are now, made printable (see
/// [`printable_lines`], and saying so) and cut to the stage protocol's
/// [`MAX_DIFF_BYTES`], saying where the whole call is: in the preview's
/// detail when that holds it whole (`whole_detail`), else only with the
/// agent.
pub fn preview_diff(
    tool: &str,
    input: &Value,
    cwd: Option<&Path>,
    whole_detail: bool,
) -> Option<String> {
    let text = diff_text(tool, input, cwd, &read_target)?;
    let unprintable = unprintable_count(&text);
    let mut text = printable_lines(&text).into_owned();
    if unprintable > 0 {
        text.push_str(&line(&texts::diff_unprintable(unprintable)));
    }
    Some(fit_diff(&text, whole_detail))
}

/// `text`, whole when it fits [`MAX_DIFF_BYTES`], else its first lines
/// and a last one saying how many were left out and where the whole call
/// is.
pub fn fit_diff(text: &str, whole_detail: bool) -> String {
    if diff_json_len(text) <= MAX_DIFF_BYTES {
        return text.to_string();
    }
    let total = text.lines().count();
    // Room for the mark at its longest (any count fits in 20 digits).
    let room = MAX_DIFF_BYTES - diff_json_len(&texts::diff_cut(u64::MAX, whole_detail)) - 8;
    let mut kept = String::new();
    let mut used = 2;
    let mut lines = 0;
    for each in text.split_inclusive('\n') {
        // The line's JSON size without the quotes around it.
        let size = diff_json_len(each) - 2;
        if used + size > room {
            break;
        }
        kept.push_str(each);
        used += size;
        lines += 1;
    }
    if !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&texts::diff_cut((total - lines) as u64, whole_detail));
    kept.push('\n');
    kept
}

/// `text` and a newline.
fn line(text: &str) -> String {
    format!("{text}\n")
}

/// `path` made absolute against the agent's working directory.
fn in_cwd(path: &Path, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    }
}

/// `path` as a diff's header names it: relative to the agent's working
/// directory when it lies inside it, on one line.
fn shown_path(path: &Path, cwd: Option<&Path>) -> String {
    let relative = cwd
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|relative| !relative.as_os_str().is_empty());
    one_line(&relative.unwrap_or(path).display().to_string()).into_owned()
}

/// The unified diff from `old` to `new`, headed `old_name` and `new_name`
/// (`/dev/null` for a file that is not there); a line saying so when
/// nothing changes.
fn unified(old_name: &str, new_name: &str, old: &str, new: &str) -> String {
    if old == new {
        return line(texts::DIFF_NO_CHANGE);
    }
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(old_name, new_name)
        .to_string()
}

/// The diff of a file that `shown` names being changed from `target` to
/// `new` (a file that is not there yet: every line added).
fn change_diff(shown: &str, target: &Target, new: &str) -> String {
    match target {
        Target::Text(old) => unified(&format!("a/{shown}"), &format!("b/{shown}"), old, new),
        Target::Absent => unified("/dev/null", &format!("b/{shown}"), "", new),
        Target::Refused(why) => line(&texts::diff_not_read(shown, &why.to_string())),
    }
}

fn write_diff(shown: &str, target: &Target, content: &str) -> String {
    change_diff(shown, target, content)
}

/// One replacement of an `Edit` or a `MultiEdit`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edit<'a> {
    old: &'a str,
    new: &'a str,
    all: bool,
}

impl<'a> Edit<'a> {
    /// An edit from its JSON fields; the name of the one missing, if one is.
    fn from_value(value: &'a Value) -> Result<Edit<'a>, &'static str> {
        let text = |key| value.get(key).and_then(Value::as_str);
        Ok(Edit {
            old: text("old_string").ok_or("old_string")?,
            new: text("new_string").ok_or("new_string")?,
            all: value
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// `content` with this edit made, or why it cannot be.
    fn apply(&self, content: Option<&str>) -> Result<String, String> {
        match content {
            // An empty `old_string` creates a file (or fills an empty one).
            None if self.old.is_empty() => Ok(self.new.to_string()),
            None => Err(texts::PLAN_FILE_MISSING.to_string()),
            Some("") if self.old.is_empty() => Ok(self.new.to_string()),
            Some(_) if self.old.is_empty() => Err(texts::DIFF_EDIT_EMPTY_OLD.to_string()),
            Some(content) => {
                let count = content.matches(self.old).count();
                match count {
                    0 => Err(texts::DIFF_EDIT_NOT_FOUND.to_string()),
                    1 => Ok(content.replacen(self.old, self.new, 1)),
                    _ if self.all => Ok(content.replace(self.old, self.new)),
                    _ => Err(texts::diff_edit_ambiguous(count)),
                }
            }
        }
    }
}

/// The edits of an `Edit` (one) or a `MultiEdit` (its `edits`, in
/// order); the name of a field missing, if one is.
fn edits<'a>(tool: &str, input: &'a Value) -> Result<Vec<Edit<'a>>, &'static str> {
    if tool == "Edit" {
        return Ok(vec![Edit::from_value(input)?]);
    }
    input
        .get("edits")
        .and_then(Value::as_array)
        .ok_or("edits")?
        .iter()
        .map(Edit::from_value)
        .collect()
}

fn edit_diff(shown: &str, target: &Target, edits: &[Edit<'_>]) -> String {
    let mut content = match target {
        Target::Text(text) => Some(text.clone()),
        Target::Absent => None,
        Target::Refused(why) => return line(&texts::diff_not_read(shown, &why.to_string())),
    };
    for (index, edit) in edits.iter().enumerate() {
        match edit.apply(content.as_deref()) {
            Ok(next) => content = Some(next),
            Err(why) => {
                let why = if edits.len() > 1 {
                    texts::diff_edit_of(index + 1, edits.len(), &why)
                } else {
                    why
                };
                return line(&texts::diff_edit_fails(shown, &why));
            }
        }
    }
    change_diff(shown, target, content.as_deref().unwrap_or_default())
}

// ----- Codex's apply_patch --------------------------------------------------

/// The patch text of an `apply_patch` call: its `patch` or `input`, or
/// its `command` (a string, or an argv whose last word is the patch).
fn patch_text(input: &Value) -> Option<&str> {
    let field = ["patch", "input", "command"]
        .iter()
        .find_map(|key| input.get(*key))?;
    match field {
        Value::String(patch) => Some(patch),
        Value::Array(words) => words.last()?.as_str(),
        _ => None,
    }
}

/// The names Codex's patch tool is run by.
const PATCH_PROGRAMS: &[&str] = &["apply_patch", "applypatch"];
/// Codex's shell tools, as hooks name them.
const SHELL_TOOLS: &[&str] = &["Bash", "shell", "local_shell", "exec_command"];

/// A patch run through a shell tool: its text and the directory a
/// `cd DIR &&` before it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShellPatch<'a> {
    patch: &'a str,
    cd: Option<&'a str>,
}

/// The patch of a shell tool's call that runs `apply_patch`, if it is
/// one: the argv `[apply_patch, PATCH]`, a script (a string, or the argv
/// `[bash|sh, -c|-lc, SCRIPT]`) that is `[cd DIR &&] apply_patch
/// <<'EOF'` with the patch as its here-document. Anything else (a patch
/// piped, a script that does more) is no patch: the whole command shows.
fn shell_patch<'a>(tool: &str, input: &'a Value) -> Option<ShellPatch<'a>> {
    if !SHELL_TOOLS.contains(&tool) {
        return None;
    }
    let script = match input.get("command")? {
        Value::String(script) => script.as_str(),
        Value::Array(words) => {
            let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
            match words?.as_slice() {
                [program, patch] if PATCH_PROGRAMS.contains(program) => {
                    return Some(ShellPatch { patch, cd: None })
                }
                [shell, flag, script]
                    if ["bash", "sh", "zsh"].contains(shell) && ["-c", "-lc"].contains(flag) =>
                {
                    script
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    heredoc_patch(script)
}

/// `[cd DIR &&] apply_patch <<'EOF'` + the patch + `EOF`, and nothing
/// after it: the patch and the directory.
fn heredoc_patch(script: &str) -> Option<ShellPatch<'_>> {
    let (first, body) = script.trim_start().split_once('\n')?;
    let mut words = first.split_whitespace().peekable();
    let mut cd = None;
    if words.peek() == Some(&"cd") {
        words.next();
        cd = Some(words.next()?);
        if words.next()? != "&&" {
            return None;
        }
    }
    if !PATCH_PROGRAMS.contains(&words.next()?) {
        return None;
    }
    let marker = words.next()?;
    let marker = match marker.strip_prefix("<<") {
        Some("") => words.next()?,
        Some(rest) => rest,
        None => return None,
    };
    if words.next().is_some() {
        return None;
    }
    let delimiter = marker.trim_matches(|c| c == '\'' || c == '"');
    let mut end = None;
    let mut start = 0;
    for line in body.split_inclusive('\n') {
        if end.is_some() {
            // Only blank lines may follow the here-document.
            if !line.trim().is_empty() {
                return None;
            }
        } else if line.trim_end() == delimiter {
            end = Some(start);
        }
        start += line.len();
    }
    Some(ShellPatch {
        patch: &body[..end?],
        cd,
    })
}

/// The directory a shell patch's paths are read against: its `cd`
/// (against the call's `workdir`, else the agent's `cwd`).
fn shell_patch_dir(input: &Value, cd: Option<&str>, cwd: Option<&Path>) -> Option<PathBuf> {
    let workdir = input
        .get("workdir")
        .and_then(Value::as_str)
        .map(Path::new)
        .filter(|dir| dir.is_absolute());
    let base = workdir.or(cwd);
    match (cd, base) {
        (Some(cd), base) => Some(in_cwd(Path::new(cd), base)),
        (None, base) => base.map(Path::to_path_buf),
    }
}

/// One file's section of a Codex patch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Section<'a> {
    Add {
        path: &'a str,
        lines: Vec<&'a str>,
    },
    Delete {
        path: &'a str,
    },
    Update {
        path: &'a str,
        to: Option<&'a str>,
        chunks: Vec<Chunk<'a>>,
    },
}

/// One change of an `Update File` section: the line it comes after, if
/// named (`@@ <line>`), and its lines as the patch gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Chunk<'a> {
    anchor: Option<&'a str>,
    lines: Vec<&'a str>,
    at_end: bool,
}

impl Chunk<'_> {
    /// The lines it expects (context and removed) and those it leaves
    /// (context and added).
    fn old_and_new(&self) -> (Vec<&str>, Vec<&str>) {
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for line in &self.lines {
            match line.split_at_checked(1) {
                Some(("+", rest)) => new.push(rest),
                Some(("-", rest)) => old.push(rest),
                Some((" ", rest)) => {
                    old.push(rest);
                    new.push(rest);
                }
                // An empty line is an empty context line.
                _ => {
                    old.push("");
                    new.push("");
                }
            }
        }
        (old, new)
    }
}

/// The sections of a patch between `*** Begin Patch` and `*** End Patch`,
/// each with the text it was parsed from; `None` when it is not of that
/// shape.
fn parse_patch(patch: &str) -> Option<Vec<(Section<'_>, String)>> {
    let mut lines = patch.lines().map(|line| line.trim_end_matches('\r'));
    if lines.next()?.trim() != "*** Begin Patch" {
        return None;
    }
    let mut sections: Vec<(Section<'_>, String)> = Vec::new();
    let mut ended = false;
    for line in lines {
        if ended {
            if line.trim().is_empty() {
                continue;
            }
            return None;
        }
        if line.trim() == "*** End Patch" {
            ended = true;
            continue;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            sections.push((
                Section::Add {
                    path,
                    lines: Vec::new(),
                },
                String::new(),
            ));
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            sections.push((Section::Delete { path }, String::new()));
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            sections.push((
                Section::Update {
                    path,
                    to: None,
                    chunks: Vec::new(),
                },
                String::new(),
            ));
        } else {
            let (section, _) = sections.last_mut()?;
            add_line(section, line)?;
        }
        let (_, given) = sections.last_mut()?;
        given.push_str(line);
        given.push('\n');
    }
    (ended && !sections.is_empty()).then_some(sections)
}

/// Adds a line of the patch to the section it falls in; `None` when it
/// cannot be there.
fn add_line<'a>(section: &mut Section<'a>, line: &'a str) -> Option<()> {
    match section {
        Section::Add { lines, .. } => lines.push(line.strip_prefix('+')?),
        Section::Delete { .. } => return None,
        Section::Update { to, chunks, .. } => {
            if let Some(target) = line.strip_prefix("*** Move to: ") {
                *to = Some(target);
            } else if line.trim() == "*** End of File" {
                chunks.last_mut()?.at_end = true;
            } else if let Some(anchor) = line.strip_prefix("@@") {
                let anchor = anchor.trim();
                chunks.push(Chunk {
                    anchor: (!anchor.is_empty()).then_some(anchor),
                    ..Chunk::default()
                });
            } else {
                if chunks.is_empty() {
                    chunks.push(Chunk::default());
                }
                chunks.last_mut()?.lines.push(line);
            }
        }
    }
    Some(())
}

/// The diff of a whole patch: each section as a unified diff against the
/// file it names, or as given when it cannot be (saying why).
fn patch_diff(patch: &str, cwd: Option<&Path>, read: &dyn Fn(&Path) -> Target) -> String {
    let Some(sections) = parse_patch(patch) else {
        let mut text = line(texts::DIFF_PATCH_AS_GIVEN);
        text.push_str(patch);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    };
    let mut text = String::new();
    for (section, given) in sections {
        match section_diff(&section, cwd, read) {
            Ok(diff) => text.push_str(&diff),
            Err(why) => {
                text.push_str(&line(&texts::diff_section_as_given(&why)));
                text.push_str(&given);
            }
        }
    }
    text
}

/// A section of a patch as a unified diff, or why it cannot be one.
fn section_diff(
    section: &Section<'_>,
    cwd: Option<&Path>,
    read: &dyn Fn(&Path) -> Target,
) -> Result<String, String> {
    let file = |path: &str| {
        let path = in_cwd(Path::new(path), cwd);
        (shown_path(&path, cwd), read(&path))
    };
    match section {
        Section::Add { path, lines } => {
            let (shown, _) = file(path);
            let content: String = lines.iter().map(|line| format!("{line}\n")).collect();
            Ok(unified("/dev/null", &format!("b/{shown}"), "", &content))
        }
        Section::Delete { path } => match file(path) {
            (shown, Target::Text(old)) => Ok(unified(&format!("a/{shown}"), "/dev/null", &old, "")),
            (shown, Target::Absent) => Err(texts::diff_not_read(&shown, texts::PLAN_FILE_MISSING)),
            (shown, Target::Refused(why)) => Err(texts::diff_not_read(&shown, &why.to_string())),
        },
        Section::Update { path, to, chunks } => {
            let (shown, target) = file(path);
            let old = match target {
                Target::Text(old) => old,
                Target::Absent => {
                    return Err(texts::diff_not_read(&shown, texts::PLAN_FILE_MISSING))
                }
                Target::Refused(why) => return Err(texts::diff_not_read(&shown, &why.to_string())),
            };
            let new = apply_chunks(&old, chunks)?;
            let new_name = match to {
                Some(to) => shown_path(&in_cwd(Path::new(to), cwd), cwd),
                None => shown.clone(),
            };
            Ok(unified(
                &format!("a/{shown}"),
                &format!("b/{new_name}"),
                &old,
                &new,
            ))
        }
    }
}

/// `old` with an update's chunks applied in order, each found after the
/// one before (and after its anchor line); why not, when one is not found.
fn apply_chunks(old: &str, chunks: &[Chunk<'_>]) -> Result<String, String> {
    let mut lines: Vec<String> = old.lines().map(str::to_string).collect();
    let mut cursor = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        if let Some(anchor) = chunk.anchor {
            let found = find(&lines, &[anchor], cursor, false)
                .ok_or_else(|| texts::diff_chunk_not_found(index + 1))?;
            cursor = found + 1;
        }
        let (expected, replacement) = chunk.old_and_new();
        let at = if expected.is_empty() {
            lines.len()
        } else {
            find(&lines, &expected, cursor, chunk.at_end)
                .ok_or_else(|| texts::diff_chunk_not_found(index + 1))?
        };
        let replacement: Vec<String> = replacement.into_iter().map(str::to_string).collect();
        let added = replacement.len();
        lines.splice(at..at + expected.len(), replacement);
        cursor = at + added;
    }
    let mut new = lines.join("\n");
    new.push('\n');
    Ok(new)
}

/// Where `wanted` occurs in `lines` from `from` on (at the very end when
/// `at_end`): exactly, else ignoring trailing whitespace, else ignoring
/// whitespace on both sides, as Codex itself matches.
fn find(lines: &[String], wanted: &[&str], from: usize, at_end: bool) -> Option<usize> {
    if wanted.len() > lines.len() {
        return None;
    }
    let last = lines.len() - wanted.len();
    let starts: Vec<usize> = if at_end {
        vec![last]
    } else {
        (from.min(last + 1)..=last).collect()
    };
    let matches = |normal: fn(&str) -> &str| {
        starts.iter().copied().find(|&start| {
            wanted
                .iter()
                .zip(&lines[start..])
                .all(|(want, have)| normal(want) == normal(have))
        })
    };
    matches(|text| text)
        .or_else(|| matches(str::trim_end))
        .or_else(|| matches(str::trim))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A reader of one file's text, and of nothing else.
    fn only(path: &'static str, text: Option<&'static str>) -> impl Fn(&Path) -> Target {
        move |asked| match text {
            Some(text) if asked == Path::new(path) => Target::Text(text.to_string()),
            _ => Target::Absent,
        }
    }

    fn diff(tool: &str, input: Value, file: Option<&'static str>) -> String {
        let read = only("/p/a.txt", file);
        diff_text(tool, &input, Some(Path::new("/p")), &read).expect("a file tool")
    }

    #[test]
    fn a_write_is_diffed_against_the_file_or_added_whole() {
        let input = json!({"file_path": "/p/a.txt", "content": "one\nTWO\nthree\n"});
        assert_eq!(
            diff("Write", input.clone(), Some("one\ntwo\nthree\n")),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
        );
        assert_eq!(
            diff("Write", input, None),
            "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,3 @@\n+one\n+TWO\n+three\n"
        );
        let same = json!({"file_path": "a.txt", "content": "x\n"});
        assert_eq!(
            diff("Write", same, Some("x\n")),
            format!("{}\n", texts::DIFF_NO_CHANGE)
        );
    }

    #[test]
    fn an_edit_shows_its_change_in_context_with_real_line_numbers() {
        let file: &'static str = "1\n2\n3\n4\n5\n6\n7\nold\n9\n10\n";
        let input = json!({"file_path": "/p/a.txt", "old_string": "old", "new_string": "new"});
        assert_eq!(
            diff("Edit", input, Some(file)),
            "--- a/a.txt\n+++ b/a.txt\n@@ -5,6 +5,6 @@\n 5\n 6\n 7\n-old\n+new\n 9\n 10\n"
        );
    }

    #[test]
    fn replace_all_is_honoured_and_an_ambiguous_or_missing_edit_says_so() {
        let file = Some("x\ny\nx\n");
        let all = json!({"file_path": "/p/a.txt", "old_string": "x", "new_string": "z", "replace_all": true});
        assert_eq!(
            diff("Edit", all, file),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-x\n+z\n y\n-x\n+z\n"
        );
        let one = json!({"file_path": "/p/a.txt", "old_string": "x", "new_string": "z"});
        assert_eq!(
            diff("Edit", one, file),
            format!(
                "{}\n",
                texts::diff_edit_fails("a.txt", &texts::diff_edit_ambiguous(2))
            )
        );
        let gone = json!({"file_path": "/p/a.txt", "old_string": "q", "new_string": "z"});
        assert_eq!(
            diff("Edit", gone, file),
            format!(
                "{}\n",
                texts::diff_edit_fails("a.txt", texts::DIFF_EDIT_NOT_FOUND)
            )
        );
        let create = json!({"file_path": "/p/a.txt", "old_string": "", "new_string": "hi\n"});
        assert_eq!(
            diff("Edit", create, None),
            "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n"
        );
    }

    #[test]
    fn multi_edits_apply_in_order_and_a_failing_one_is_named() {
        let edits = json!({"file_path": "/p/a.txt", "edits": [
            {"old_string": "a", "new_string": "b"},
            {"old_string": "b\nc", "new_string": "C"},
        ]});
        assert_eq!(
            diff("MultiEdit", edits, Some("a\nc\n")),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1 @@\n-a\n-c\n+C\n"
        );
        let second_fails = json!({"file_path": "/p/a.txt", "edits": [
            {"old_string": "a", "new_string": "b"},
            {"old_string": "a", "new_string": "z"},
        ]});
        let why = texts::diff_edit_of(2, 2, texts::DIFF_EDIT_NOT_FOUND);
        assert_eq!(
            diff("MultiEdit", second_fails, Some("a\n")),
            format!("{}\n", texts::diff_edit_fails("a.txt", &why))
        );
    }

    #[test]
    fn a_file_not_read_gives_one_line_saying_why() {
        let refused = |_: &Path| Target::Refused(FileProblem::Symlink);
        let input = json!({"file_path": "/p/a.txt", "content": "x"});
        let text = diff_text("Write", &input, Some(Path::new("/p")), &refused);
        assert_eq!(
            text.as_deref(),
            Some("No diff: a.txt is not read: it is a symbolic link.\n")
        );
        assert_eq!(
            diff_text("Bash", &json!({"command": "ls"}), None, &refused),
            None
        );
        assert_eq!(
            diff("Write", json!({"file_path": "/p/a.txt"}), None),
            "No diff: the call has no content.\n"
        );
    }

    #[test]
    fn a_codex_patch_becomes_a_unified_diff_against_the_files() {
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@ fn main\n-    old();\n+    new();\n*** Add File: b.txt\n+hello\n*** End Patch\n";
        let file = Some("intro\nfn main\n    old();\nend\n");
        assert_eq!(
            diff("apply_patch", json!({"command": ["apply_patch", patch]}), file),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,4 +1,4 @@\n intro\n fn main\n-    old();\n+    new();\n end\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+hello\n"
        );
    }

    #[test]
    fn a_patch_run_through_the_shell_tool_is_diffed_too() {
        let patch = "*** Begin Patch\n*** Update File: a.txt\n-old\n+new\n*** End Patch\n";
        let expected = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n";
        let heredoc = format!("apply_patch <<'EOF'\n{patch}EOF\n");
        let in_bash = json!({"command": ["bash", "-lc", heredoc], "workdir": "/p"});
        let cd = format!("cd p && applypatch <<\"PATCH\"\n{patch}PATCH");
        for input in [
            json!({"command": ["apply_patch", patch], "workdir": "/p"}),
            json!({"command": heredoc}),
            in_bash,
        ] {
            assert_eq!(
                diff_text(
                    "shell",
                    &input,
                    Some(Path::new("/p")),
                    &only("/p/a.txt", Some("old\n"))
                ),
                Some(expected.to_string()),
                "{input}"
            );
        }
        assert_eq!(
            diff_text(
                "Bash",
                &json!({"command": cd}),
                Some(Path::new("/")),
                &only("/p/a.txt", Some("old\n"))
            ),
            Some(expected.to_string()),
        );
        // A script that does more than apply the patch is a command.
        let more = format!("apply_patch <<'EOF'\n{patch}EOF\nrm -f a.txt\n");
        for command in [
            json!(more),
            json!(["apply_patch", patch, "x"]),
            json!("echo apply_patch"),
        ] {
            let input = json!({"command": command});
            assert_eq!(
                diff_text("Bash", &input, None, &only("/p/a.txt", None)),
                None,
                "{input}"
            );
        }
    }

    #[test]
    fn a_patch_that_does_not_apply_is_shown_as_given_and_says_so() {
        let patch = "*** Begin Patch\n*** Update File: a.txt\n-missing\n+x\n*** End Patch";
        let text = diff("apply_patch", json!({"patch": patch}), Some("other\n"));
        assert_eq!(
            text,
            format!(
                "{}\n*** Update File: a.txt\n-missing\n+x\n",
                texts::diff_section_as_given(&texts::diff_chunk_not_found(1))
            )
        );
        let odd = "--- a/x\n+++ b/x\n";
        assert_eq!(
            diff("apply_patch", json!({"input": odd}), None),
            format!("{}\n{odd}", texts::DIFF_PATCH_AS_GIVEN)
        );
        assert_eq!(
            diff("apply_patch", json!({}), None),
            format!("{}\n", texts::DIFF_NO_PATCH)
        );
    }

    #[test]
    fn a_long_diff_is_cut_on_a_line_and_says_where_the_whole_call_is() {
        let text: String = (0..20_000).map(|n| format!("+line {n}\n")).collect();
        for whole_detail in [true, false] {
            let cut = fit_diff(&text, whole_detail);
            assert!(diff_json_len(&cut) <= MAX_DIFF_BYTES);
            let last = cut.lines().last().expect("a last line");
            let kept = cut.lines().count() - 1;
            assert_eq!(last, texts::diff_cut((20_000 - kept) as u64, whole_detail));
            assert!(text.starts_with(&cut[..cut.len() - last.len() - 1]));
        }
        assert_eq!(fit_diff("+x\n", true), "+x\n");
    }
}
