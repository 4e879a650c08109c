//! Matching, pure: a call is cut into parts (a shell command's simple
//! commands and redirections, a patch's files, else the call itself), each
//! part is judged by the rules that match it (the strictest wins, none is
//! `Ask`), and the call takes the strictest part's effect. Nothing here
//! reads the filesystem or the environment: a path is normalised
//! lexically, so a symlink is judged by the name it was given.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::command::{self, ShellPart};
use super::evaluation::{Effect, Evaluation, PartEvaluation};
use super::rules::{
    family, normalize, normalize_words, split_normalized, Anchors, CommandPattern, Family,
    PathAnchor, PathPattern, Rule, Segment, Specifier, ToolMatch, WordGlob, WORD_SEPARATOR,
};
use super::Call;
use crate::maps::HashMap;
use crate::texts;

/// A rule as loaded: the rule, its list and its reason.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) rule: Rule,
    pub(crate) effect: Effect,
    pub(crate) reason: Option<String>,
}

/// The rules, indexed: shell rules by the program they start with, the
/// others by family, so deciding a part reads only the rules that can
/// match it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleIndex {
    by_program: HashMap<String, Vec<usize>>,
    shell_rest: Vec<usize>,
    by_family: HashMap<FamilyKey, Vec<usize>>,
    by_name: Vec<usize>,
}

/// A family as a map key (`Family` is not `Hash` for the outside).
type FamilyKey = u8;

fn family_key(family: Family) -> FamilyKey {
    family as u8
}

impl RuleIndex {
    /// Indexes `entries` (their positions are the rule ids).
    pub(crate) fn new(entries: &[Entry]) -> RuleIndex {
        let mut index = RuleIndex::default();
        for (id, entry) in entries.iter().enumerate() {
            match (&entry.rule.tool, &entry.rule.specifier) {
                (ToolMatch::Family(Family::Shell), Specifier::Command(pattern)) => {
                    match &pattern.program {
                        Some(program) => {
                            let base = basename(program);
                            index
                                .by_program
                                .entry(program.clone())
                                .or_default()
                                .push(id);
                            if base != program {
                                index
                                    .by_program
                                    .entry(base.to_string())
                                    .or_default()
                                    .push(id);
                            }
                        }
                        None => index.shell_rest.push(id),
                    }
                }
                (ToolMatch::Family(Family::Shell), _) => index.shell_rest.push(id),
                (ToolMatch::Family(family), _) => index
                    .by_family
                    .entry(family_key(*family))
                    .or_default()
                    .push(id),
                _ => index.by_name.push(id),
            }
        }
        index
    }

    /// The ids of the rules that may match `part`, in file order.
    fn candidates(&self, part: &Part) -> Vec<usize> {
        let mut ids: Vec<usize> = Vec::new();
        match (&part.family, &part.subject) {
            (Family::Shell, Subject::Command(words)) => {
                if let Some(program) = words.first() {
                    for key in [program.as_str(), basename(program)] {
                        if let Some(found) = self.by_program.get(key) {
                            ids.extend(found);
                        }
                    }
                }
                ids.extend(&self.shell_rest);
            }
            (Family::Shell, _) => {
                ids.extend(self.by_program.values().flatten());
                ids.extend(&self.shell_rest);
            }
            (Family::Other, _) => ids.extend(&self.by_name),
            (family, _) => {
                if let Some(found) = self.by_family.get(&family_key(*family)) {
                    ids.extend(found);
                }
                if part.from_shell {
                    ids.extend(&self.shell_rest);
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// One part of a call, as the rules see it.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// As a person reads it.
    text: String,
    /// The family whose rules judge it.
    family: Family,
    /// The call's tool name.
    tool: String,
    /// What its rules' specifiers match.
    subject: Subject,
    /// A shell command's redirection (also judged by `Bash` deny and ask
    /// rules that name no command).
    from_shell: bool,
}

/// What a part is, for a specifier.
#[derive(Debug, Clone)]
enum Subject {
    /// A simple command's words.
    Command(Vec<String>),
    /// A file, absolute and normalised.
    Path(PathBuf),
    /// A URL's host, lowercase.
    Host(String),
    /// A subagent's name.
    Agent(String),
    /// The call as a whole (a tool with no specifier kind).
    Whole,
    /// Needs no rule: allowed.
    Fine(&'static str),
    /// Cannot be judged by a specifier: asked about (unless a rule that
    /// names no specifier denies it).
    Unresolved(String),
}

/// The policy's decision on `call`.
pub(crate) fn evaluate(
    entries: &[Entry],
    index: &RuleIndex,
    anchors: &Anchors,
    call: &Call,
) -> Evaluation {
    let cwd = call_cwd(call);
    let parts = call_parts(call, anchors, cwd.as_deref());
    let judged: Vec<PartEvaluation> = parts
        .iter()
        .map(|part| judge(entries, index, part, cwd.as_deref()))
        .collect();
    combine(entries, judged)
}

fn call_cwd(call: &Call) -> Option<PathBuf> {
    call.cwd
        .as_deref()
        .filter(|cwd| cwd.is_absolute())
        .map(normalize)
}

/// The call's parts.
fn call_parts(call: &Call, anchors: &Anchors, cwd: Option<&Path>) -> Vec<Part> {
    let tool = call.tool.as_str();
    let family = family(tool);
    let part = |text: String, family: Family, subject: Subject| Part {
        text,
        family,
        tool: tool.to_string(),
        subject,
        from_shell: false,
    };
    if let Some(why) = not_understood(&call.input) {
        return vec![part(compact(&call.input), family, Subject::Unresolved(why))];
    }
    match family {
        Family::Shell => shell_parts(call, anchors, cwd),
        Family::Read | Family::Edit if tool == "apply_patch" => patch_parts(call, anchors, cwd),
        Family::Read | Family::Edit => {
            let keys: &[&str] = &["file_path", "notebook_path", "path"];
            let path = keys
                .iter()
                .find_map(|key| call.input.get(key))
                .and_then(Value::as_str);
            let subject = match path {
                Some(path) => file_subject(path, anchors, cwd),
                // Grep and Glob search the cwd when they name no path.
                None if matches!(tool, "Grep" | "Glob" | "LS") => match cwd {
                    Some(cwd) => Subject::Path(cwd.to_path_buf()),
                    None => Subject::Unresolved(texts::POLICY_NO_CWD.into()),
                },
                None => Subject::Unresolved(texts::policy_missing_field("file_path")),
            };
            let text = path.map_or_else(|| compact(&call.input), str::to_string);
            vec![part(text, family, subject)]
        }
        Family::WebFetch => {
            let url = call.input.get("url").and_then(Value::as_str);
            let subject = match url.map(host_of) {
                Some(Some(host)) => Subject::Host(host),
                Some(None) => Subject::Unresolved(texts::POLICY_URL_HOST.into()),
                None => Subject::Unresolved(texts::policy_missing_field("url")),
            };
            vec![part(
                url.map_or_else(|| compact(&call.input), str::to_string),
                family,
                subject,
            )]
        }
        Family::Agent => {
            let name = call.input.get("subagent_type").and_then(Value::as_str);
            let subject = match name {
                Some(name) => Subject::Agent(name.to_string()),
                None => Subject::Unresolved(texts::policy_missing_field("subagent_type")),
            };
            vec![part(name.unwrap_or(tool).to_string(), family, subject)]
        }
        Family::Other => vec![part(tool.to_string(), family, Subject::Whole)],
    }
}

/// Why an input cannot be judged: the stager cut it (xdev's cut mark, or
/// its note in place of an input too large).
fn not_understood(input: &Value) -> Option<String> {
    if let Value::Object(fields) = input {
        if fields.len() == 1 && fields.contains_key("xdev") {
            return Some(texts::POLICY_INPUT_CUT.into());
        }
    }
    holds_cut_mark(input).then(|| texts::POLICY_INPUT_CUT.into())
}

fn holds_cut_mark(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains(texts::CUT_MARK),
        Value::Array(items) => items.iter().any(holds_cut_mark),
        Value::Object(fields) => fields.values().any(holds_cut_mark),
        _ => false,
    }
}

fn compact(input: &Value) -> String {
    input.to_string()
}

/// A shell tool's parts: its `command` (Claude Code, Codex's
/// `shell_command`; a string, or argv as Codex's `shell` sends it) or
/// `cmd` (Codex's `exec_command`).
fn shell_parts(call: &Call, anchors: &Anchors, cwd: Option<&Path>) -> Vec<Part> {
    let command = call.input.get("command").or_else(|| call.input.get("cmd"));
    let shell_parts = match command {
        Some(Value::String(text)) => command::parts(text),
        Some(Value::Array(items)) => {
            match items.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
                Some(argv) if !argv.is_empty() => {
                    command::argv_parts(&argv.iter().map(|arg| arg.to_string()).collect::<Vec<_>>())
                }
                _ => vec![ShellPart::Unresolved {
                    text: compact(&call.input),
                    why: texts::POLICY_ARGV_NOT_STRINGS.into(),
                }],
            }
        }
        _ => vec![ShellPart::Unresolved {
            text: compact(&call.input),
            why: texts::policy_missing_field("command"),
        }],
    };
    shell_parts
        .into_iter()
        .map(|part| shell_part(part, &call.tool, anchors, cwd))
        .collect()
}

fn shell_part(part: ShellPart, tool: &str, anchors: &Anchors, cwd: Option<&Path>) -> Part {
    let (text, family, subject, from_shell) = match part {
        ShellPart::Command { words, text } => (text, Family::Shell, Subject::Command(words), false),
        ShellPart::Write { target, text } => (
            text,
            Family::Edit,
            file_subject(&target, anchors, cwd),
            true,
        ),
        ShellPart::Fine { text, why } => (text, Family::Edit, Subject::Fine(why), true),
        ShellPart::Unresolved { text, why } => {
            (text, Family::Shell, Subject::Unresolved(why), false)
        }
    };
    Part {
        text,
        family,
        tool: tool.to_string(),
        subject,
        from_shell,
    }
}

/// `apply_patch`: an edit of every file the patch names.
fn patch_parts(call: &Call, anchors: &Anchors, cwd: Option<&Path>) -> Vec<Part> {
    let patch = match &call.input {
        Value::String(text) => Some(text.as_str()),
        Value::Object(fields) => ["input", "patch"]
            .iter()
            .find_map(|key| fields.get(*key).and_then(Value::as_str))
            .or_else(|| match fields.get("command") {
                Some(Value::Array(argv)) => argv.get(1).and_then(Value::as_str),
                _ => None,
            }),
        _ => None,
    };
    let part = |text: String, subject: Subject| Part {
        text,
        family: Family::Edit,
        tool: call.tool.clone(),
        subject,
        from_shell: false,
    };
    let Some(patch) = patch else {
        return vec![part(
            compact(&call.input),
            Subject::Unresolved(texts::policy_missing_field("input")),
        )];
    };
    let files: Vec<Part> = patch_files(patch)
        .map(|path| part(path.to_string(), file_subject(path, anchors, cwd)))
        .collect();
    if files.is_empty() {
        return vec![part(
            compact(&call.input),
            Subject::Unresolved(texts::POLICY_PATCH_NAMES_NOTHING.into()),
        )];
    }
    files
}

/// The files a Codex patch adds, updates, deletes or moves to.
pub(crate) fn patch_files(patch: &str) -> impl Iterator<Item = &str> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch.lines().filter_map(|line| {
        HEADERS
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(str::trim)
            .filter(|path| !path.is_empty())
    })
}

/// A file a call names, made absolute: `~/` from the home directory,
/// relative from the call's cwd (else the policy file's directory).
fn file_subject(path: &str, anchors: &Anchors, cwd: Option<&Path>) -> Subject {
    let absolute = if path == "~" || path.starts_with("~/") {
        match &anchors.home {
            Some(home) => home.join(path.trim_start_matches('~').trim_start_matches('/')),
            None => return Subject::Unresolved(texts::POLICY_NO_HOME.into()),
        }
    } else if path.starts_with('~') {
        return Subject::Unresolved(texts::POLICY_OTHER_HOME.into());
    } else {
        cwd.unwrap_or(&anchors.policy_dir).join(path)
    };
    Subject::Path(normalize(&absolute))
}

/// The host of an http(s) URL, lowercase, without port or user.
fn host_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// One part's decision.
fn judge(entries: &[Entry], index: &RuleIndex, part: &Part, cwd: Option<&Path>) -> PartEvaluation {
    if let Subject::Fine(why) = &part.subject {
        return PartEvaluation {
            text: part.text.clone(),
            effect: Effect::Allow,
            rule: None,
            why: (*why).to_string(),
            deciders: Vec::new(),
        };
    }
    let normalized = match &part.subject {
        Subject::Command(words) => Some(Normalized::of(words)),
        _ => None,
    };
    let raw = match &part.subject {
        Subject::Command(words) => Some(joined(words)),
        Subject::Unresolved(_) => Some(joined(
            &part
                .text
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )),
        _ => None,
    };
    let mut best: Option<Effect> = None;
    let mut deciders = Vec::new();
    for id in index.candidates(part) {
        let entry = &entries[id];
        if best.is_some_and(|best| entry.effect < best) {
            continue;
        }
        if !rule_matches(entry, part, raw.as_deref(), normalized.as_ref(), cwd) {
            continue;
        }
        if best != Some(entry.effect) {
            best = Some(entry.effect);
            deciders.clear();
        }
        deciders.push(id);
    }
    part_evaluation(entries, part, best, deciders)
}

fn part_evaluation(
    entries: &[Entry],
    part: &Part,
    best: Option<Effect>,
    deciders: Vec<usize>,
) -> PartEvaluation {
    let rule = deciders.first().map(|id| entries[*id].rule.text.clone());
    let (effect, why) = match (best, &rule, &part.subject) {
        (Some(effect), Some(rule), _) => (effect, texts::policy_part_decided(effect.name(), rule)),
        (_, _, Subject::Unresolved(why)) => (Effect::Ask, why.clone()),
        _ => (Effect::Ask, texts::POLICY_NO_RULE.to_string()),
    };
    PartEvaluation {
        text: part.text.clone(),
        effect,
        rule,
        why,
        deciders,
    }
}

/// Whether `entry`'s rule matches `part`.
fn rule_matches(
    entry: &Entry,
    part: &Part,
    raw: Option<&str>,
    normalized: Option<&Normalized>,
    cwd: Option<&Path>,
) -> bool {
    let rule = &entry.rule;
    let strict = entry.effect != Effect::Allow;
    let tool_fits = match &rule.tool {
        ToolMatch::Family(family) => {
            *family == part.family
                || (*family == Family::Shell
                    && part.from_shell
                    && strict
                    && rule.specifier == Specifier::Any)
        }
        ToolMatch::Named(name) => part.family == Family::Other && part.tool == *name,
        ToolMatch::McpServer(server) => part
            .tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.strip_prefix(server.as_str()))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("__")),
    };
    if !tool_fits {
        return false;
    }
    if let Subject::Unresolved(_) = part.subject {
        // What could not be resolved is never allowed; a deny or ask rule
        // that names no specifier (or whose command pattern matches the
        // text as written) still decides it.
        return strict
            && match &rule.specifier {
                Specifier::Any => true,
                Specifier::Command(pattern) => raw.is_some_and(|raw| any_glob(&pattern.globs, raw)),
                _ => false,
            };
    }
    match (&rule.specifier, &part.subject) {
        (Specifier::Any, _) => true,
        (Specifier::Command(pattern), Subject::Command(_)) => {
            raw.is_some_and(|raw| any_glob(&pattern.globs, raw))
                || (strict && normalized.is_some_and(|normalized| normalized.matches(pattern)))
        }
        (Specifier::Path(pattern), Subject::Path(path)) => path_matches(pattern, path, cwd),
        (Specifier::Domain(domain), Subject::Host(host)) => domain_matches(domain, host),
        (Specifier::Agent(glob), Subject::Agent(name)) => text_glob(glob, name),
        _ => false,
    }
}

/// A command's words normalised for deny and ask rules (see
/// [`normalize_words`]): whole, and as program, options and the rest.
struct Normalized {
    joined: String,
    program: String,
    options: Vec<String>,
    others: String,
}

impl Normalized {
    fn of(words: &[String]) -> Normalized {
        let words = normalize_words(words);
        let (program, options, others) = match split_normalized(&words) {
            Some((program, options, others)) => (program.clone(), options.to_vec(), joined(others)),
            None => (String::new(), Vec::new(), String::new()),
        };
        Normalized {
            joined: joined(&words),
            program,
            options,
            others,
        }
    }

    /// Whether the pattern matches the command normalised, or the command
    /// includes the options the pattern names and its other words match.
    fn matches(&self, pattern: &CommandPattern) -> bool {
        any_glob(&pattern.normalized, &self.joined)
            || pattern.required.iter().any(|required| {
                required.program == self.program
                    && required
                        .options
                        .iter()
                        .all(|option| self.options.contains(option))
                    && word_glob(&required.rest, &self.others)
            })
    }
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Words joined by the separator a pattern's space stands for.
fn joined(words: &[String]) -> String {
    let mut text = String::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            text.push(WORD_SEPARATOR);
        }
        // A word never holds the separator: a NUL in a JSON string is
        // not a word boundary.
        text.extend(
            word.chars()
                .map(|c| if c == WORD_SEPARATOR { '\u{fffd}' } else { c }),
        );
    }
    text
}

fn any_glob(globs: &[WordGlob], text: &str) -> bool {
    globs.iter().any(|glob| word_glob(glob, text))
}

/// A `*`-only glob over the joined words; a final ` *` also matches the
/// command alone.
fn word_glob(glob: &WordGlob, text: &str) -> bool {
    if glob.optional_tail {
        let mut with_tail = String::with_capacity(text.len() + 1);
        with_tail.push_str(text);
        with_tail.push(WORD_SEPARATOR);
        return star_match(&glob.pieces, &with_tail);
    }
    star_match(&glob.pieces, text)
}

/// Literal pieces with a `*` between each two: the first a prefix, the
/// last a suffix, the rest in order (leftmost first is exact for `*`).
fn star_match(pieces: &[String], text: &str) -> bool {
    let [first, middle @ .., last] = pieces else {
        return pieces.first().is_some_and(|only| only == text);
    };
    let Some(mut rest) = text.strip_prefix(first.as_str()) else {
        return false;
    };
    for piece in middle {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last.as_str())
}

/// A glob over one name: `*` any run, `?` one character, `[...]` a class.
pub(crate) fn text_glob(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    glob_from(&glob, &text)
}

fn glob_from(glob: &[char], text: &[char]) -> bool {
    // Iterative with one backtrack point per `*` (classic wildcard match).
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if g < glob.len() && glob[g] == '*' {
            star = Some((g, t));
            g += 1;
            continue;
        }
        if g < glob.len() {
            if let Some((matched, width)) = one_char(&glob[g..], text[t]) {
                if matched {
                    g += width;
                    t += 1;
                    continue;
                }
            }
        }
        match star {
            Some((star_g, star_t)) => {
                g = star_g + 1;
                t = star_t + 1;
                star = Some((star_g, star_t + 1));
            }
            None => return false,
        }
    }
    glob[g..].iter().all(|c| *c == '*')
}

/// Whether the glob's first item matches `c`, and how many glob
/// characters that item is.
fn one_char(glob: &[char], c: char) -> Option<(bool, usize)> {
    match glob.first()? {
        '?' => Some((true, 1)),
        '[' => match class(glob, c) {
            Some(found) => Some(found),
            None => Some((c == '[', 1)),
        },
        '\\' if glob.len() > 1 => Some((glob[1] == c, 2)),
        literal => Some((*literal == c, 1)),
    }
}

/// A `[...]` class: whether it holds `c`, and its width; `None` when the
/// bracket never closes (then it is a literal `[`).
fn class(glob: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = matches!(glob.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let start = i;
    let mut found = false;
    while i < glob.len() {
        if glob[i] == ']' && i > start {
            return Some((found != negated, i + 1));
        }
        if i + 2 < glob.len() && glob[i + 1] == '-' && glob[i + 2] != ']' {
            found |= glob[i] <= c && c <= glob[i + 2];
            i += 3;
        } else {
            found |= glob[i] == c;
            i += 1;
        }
    }
    None
}

/// Whether a path pattern matches `path` or one of its directories.
fn path_matches(pattern: &PathPattern, path: &Path, cwd: Option<&Path>) -> bool {
    let base = match &pattern.anchor {
        PathAnchor::Fixed(base) => base.as_path(),
        PathAnchor::Cwd(fallback) => cwd.unwrap_or(fallback),
    };
    let Ok(below) = path.strip_prefix(base) else {
        return false;
    };
    let names: Vec<&str> = below.iter().filter_map(|name| name.to_str()).collect();
    if names.len() != below.iter().count() {
        return false;
    }
    segments_match(&pattern.segments, &names)
}

/// Whether the segments match the names, or a leading run of them (a
/// matched directory covers what it holds). `reach[n]`: the first `s`
/// segments can match the first `n` names.
fn segments_match(segments: &[Segment], names: &[&str]) -> bool {
    if segments.is_empty() {
        return true;
    }
    let mut reach = vec![false; names.len() + 1];
    reach[0] = true;
    for segment in segments {
        let mut next = vec![false; names.len() + 1];
        for n in 0..=names.len() {
            if !reach[n] {
                continue;
            }
            match segment {
                Segment::AnyDepth => next[n..].iter_mut().for_each(|cell| *cell = true),
                Segment::Glob(glob) => {
                    if n < names.len() && text_glob(glob, names[n]) {
                        next[n + 1] = true;
                    }
                }
            }
        }
        reach = next;
    }
    // Every segment matched the names up to some point: that path, or the
    // directory of it the pattern names.
    reach.iter().any(|cell| *cell)
}

fn domain_matches(domain: &str, host: &str) -> bool {
    match domain.strip_prefix("*.") {
        Some(parent) => host
            .strip_suffix(parent)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
        None => host == domain,
    }
}

/// The call's decision from its parts': the strictest part decides.
fn combine(entries: &[Entry], parts: Vec<PartEvaluation>) -> Evaluation {
    let decisive = parts
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.effect.cmp(&b.effect).then(j.cmp(i)));
    let Some((at, part)) = decisive else {
        return Evaluation {
            effect: Effect::Ask,
            rule: None,
            reason: None,
            why: texts::POLICY_NOTHING_TO_JUDGE.to_string(),
            parts,
        };
    };
    let reason = part
        .deciders
        .first()
        .and_then(|id| entries[*id].reason.clone());
    let why = match (part.effect, parts.len()) {
        (Effect::Allow, 1) => part.why.clone(),
        (Effect::Allow, count) => texts::policy_all_parts_allowed(count),
        (_, 1) => part.why.clone(),
        (_, count) => texts::policy_part_of(at + 1, count, &part.text, &part.why),
    };
    Evaluation {
        effect: part.effect,
        rule: part.rule.clone(),
        reason,
        why,
        parts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_globs() {
        let glob = |pattern: &str| WordGlob {
            pieces: pattern.split('*').map(str::to_string).collect(),
            optional_tail: false,
        };
        assert!(word_glob(&glob("ls*"), "lsof"));
        assert!(word_glob(&glob("a*b*c"), "abc"));
        assert!(!word_glob(&glob("a*b*c"), "acb"));
        assert!(word_glob(&glob("exact"), "exact"));
        assert!(!word_glob(&glob("exact"), "exactly"));
    }

    #[test]
    fn name_globs() {
        assert!(text_glob("*.rs", "main.rs"));
        assert!(text_glob("ma?n.[rR]s", "main.Rs"));
        assert!(!text_glob("[!m]ain", "main"));
        assert!(text_glob("[", "["));
        assert!(!text_glob("*.rs", "main.rst"));
    }

    #[test]
    fn hosts() {
        assert_eq!(
            host_of("https://User@Example.COM:443/x?y").as_deref(),
            Some("example.com")
        );
        assert_eq!(host_of("http://[::1]:80/").as_deref(), Some("::1"));
        assert_eq!(host_of("file:///etc/passwd"), None);
        assert!(domain_matches("*.example.com", "docs.example.com"));
        assert!(!domain_matches("*.example.com", "example.com"));
        assert!(!domain_matches("*.example.com", "badexample.com"));
        assert!(!domain_matches("example.com", "example.com.evil.net"));
    }

    #[test]
    fn patch_headers() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: b.txt\n+hi\n*** Delete File: c\n*** End Patch";
        assert_eq!(
            patch_files(patch).collect::<Vec<_>>(),
            ["src/a.rs", "b.txt", "c"]
        );
    }
}
