//! A rule as the file writes it, in Claude Code's syntax: `Tool` (every
//! call of the tool) or `Tool(specifier)`, the specifier's kind following
//! from the tool: a command pattern for `Bash` (and Codex's shell tools),
//! a path glob for `Read` and the edit tools, `domain:` for `WebFetch`, a
//! subagent name for `Task`/`Agent`. Parsing happens once, at load; what
//! is parsed here is plain data that matching reads.

use std::path::{Path, PathBuf};

/// The tools a rule names, by family: several tool names share a family
/// because they do the same to the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    /// Runs a shell command: Claude Code's `Bash`, Codex's `shell`,
    /// `shell_command`, `exec_command`, `local_shell`.
    Shell,
    /// Reads files: `Read` (and `Grep`, `Glob`, `LS`, `NotebookRead` calls).
    Read,
    /// Changes files: `Edit`, `Write`, `MultiEdit`, `NotebookEdit`, Codex's
    /// `apply_patch`, and a shell command's redirections.
    Edit,
    /// Fetches a URL: `WebFetch`.
    WebFetch,
    /// Starts a subagent: `Task` (Claude Code's older name) and `Agent`.
    Agent,
    /// Any other tool, judged as a whole by its name.
    Other,
}

/// The family a tool name belongs to (a call's or a rule's).
pub(crate) fn family(tool: &str) -> Family {
    match tool {
        "Bash" | "bash" | "shell" | "shell_command" | "exec_command" | "local_shell"
        | "container.exec" => Family::Shell,
        "Read" | "read" | "Grep" | "Glob" | "LS" | "NotebookRead" => Family::Read,
        "Edit" | "edit" | "Write" | "write" | "MultiEdit" | "NotebookEdit" | "apply_patch" => {
            Family::Edit
        }
        "WebFetch" => Family::WebFetch,
        "Task" | "Agent" => Family::Agent,
        _ => Family::Other,
    }
}

/// Which calls a rule is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolMatch {
    /// Every tool of a family (the specifier, if any, says which calls).
    Family(Family),
    /// One tool, by its exact name (`ExitPlanMode`, `mcp__github__get_issue`).
    Named(String),
    /// Every tool of an MCP server: `mcp__server` or `mcp__server__*`.
    McpServer(String),
}

/// What a rule says of the calls of its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Specifier {
    /// No specifier (or `*`): every call.
    Any,
    /// A shell command pattern.
    Command(CommandPattern),
    /// A path glob.
    Path(PathPattern),
    /// `domain:host` (or `domain:*.host` for its subdomains).
    Domain(String),
    /// A subagent's name (a glob with `*`).
    Agent(String),
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The rule as written.
    pub(crate) text: String,
    /// Which calls.
    pub(crate) tool: ToolMatch,
    /// Which of them.
    pub(crate) specifier: Specifier,
}

/// What a rule's path patterns are relative to.
#[derive(Debug, Clone)]
pub(crate) struct Anchors {
    /// The policy file's directory (`/x` rules, and relative ones when a
    /// call says no cwd).
    pub(crate) policy_dir: PathBuf,
    /// The home directory (`~/x` rules), if the environment names one.
    pub(crate) home: Option<PathBuf>,
}

impl Anchors {
    /// Anchors for a policy file at `origin` (its directory; `origin`
    /// itself when it has no parent), home from `$HOME`.
    pub(crate) fn for_origin(origin: &Path) -> Anchors {
        let dir = match origin.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = if dir.is_absolute() {
            dir
        } else {
            std::env::current_dir()
                .map(|cwd| cwd.join(&dir))
                .unwrap_or(dir)
        };
        Anchors {
            policy_dir: normalize(&dir),
            home: std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(PathBuf::from)
                .filter(|home| home.is_absolute()),
        }
    }
}

/// Parses one rule; the error says why in one sentence.
pub(crate) fn parse_rule(text: &str, anchors: &Anchors) -> Result<Rule, String> {
    let trimmed = text.trim();
    let (tool_name, inner) = split_rule(trimmed)?;
    let tool = tool_match(tool_name)?;
    let specifier = match inner {
        None => Specifier::Any,
        Some(inner) => parse_specifier(&tool, inner.trim(), anchors)?,
    };
    Ok(Rule {
        text: trimmed.to_string(),
        tool,
        specifier,
    })
}

/// `Tool(inner)` into the tool's name and the inner text.
fn split_rule(text: &str) -> Result<(&str, Option<&str>), String> {
    let Some(open) = text.find('(') else {
        check_tool_name(text)?;
        return Ok((text, None));
    };
    let Some(inner) = text[open + 1..].strip_suffix(')') else {
        return Err("a rule with a specifier ends with `)`".into());
    };
    let name = &text[..open];
    check_tool_name(name)?;
    Ok((name, Some(inner)))
}

fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a rule starts with a tool's name".into());
    }
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*');
    if !name.chars().all(fine) {
        return Err(format!("{name:?} is not a tool name"));
    }
    Ok(())
}

fn tool_match(name: &str) -> Result<ToolMatch, String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        return mcp_match(name, rest);
    }
    if name.contains('*') {
        return Err(format!(
            "{name:?}: only an MCP server's tools take a wildcard (`mcp__server__*`)"
        ));
    }
    Ok(match family(name) {
        Family::Other => ToolMatch::Named(name.to_string()),
        family => ToolMatch::Family(family),
    })
}

fn mcp_match(name: &str, rest: &str) -> Result<ToolMatch, String> {
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() || server.contains('*') {
        return Err(format!("{name:?}: an MCP rule names its server"));
    }
    match tool {
        None | Some("*") => Ok(ToolMatch::McpServer(server.to_string())),
        Some(tool) if tool.is_empty() || tool.contains('*') => Err(format!(
            "{name:?}: an MCP rule names one tool or every tool (`mcp__{server}__*`)"
        )),
        Some(_) => Ok(ToolMatch::Named(name.to_string())),
    }
}

fn parse_specifier(tool: &ToolMatch, inner: &str, anchors: &Anchors) -> Result<Specifier, String> {
    if inner.is_empty() {
        return Err("an empty specifier: write the tool alone for every call".into());
    }
    if inner == "*" || inner == "**" {
        return Ok(Specifier::Any);
    }
    match tool {
        ToolMatch::Family(Family::Shell) => Ok(Specifier::Command(CommandPattern::parse(inner))),
        ToolMatch::Family(Family::Read | Family::Edit) => {
            PathPattern::parse(inner, anchors).map(Specifier::Path)
        }
        ToolMatch::Family(Family::WebFetch) => parse_domain(inner),
        ToolMatch::Family(Family::Agent) => Ok(Specifier::Agent(inner.to_string())),
        _ => Err("this tool takes no specifier: write it alone".into()),
    }
}

fn parse_domain(inner: &str) -> Result<Specifier, String> {
    let Some(domain) = inner.strip_prefix("domain:") else {
        return Err("a WebFetch rule's specifier is `domain:example.com`".into());
    };
    let domain = domain.trim().to_ascii_lowercase();
    let host = domain.strip_prefix("*.").unwrap_or(&domain);
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if host.is_empty() || !host.chars().all(fine) {
        return Err(format!("{domain:?} is not a domain"));
    }
    Ok(Specifier::Domain(domain))
}

// ----- command patterns ------------------------------------------------

/// The separator between words in a command's text as matched: a
/// character no shell word holds, so a pattern's space matches a word
/// boundary only, never a space inside a quoted word.
pub(crate) const WORD_SEPARATOR: char = '\u{0}';

/// A Bash rule's pattern: `cargo test *` (`*` matches anything, a final
/// ` *` also the command alone) or the legacy prefix form
/// `npm run test:*`. Matched against a simple command's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    /// The alternatives, any of which matches (the legacy form has two).
    pub(crate) globs: Vec<WordGlob>,
    /// The same with the options normalised (clusters split, long names
    /// made short, sorted, the program's path dropped), which deny and
    /// ask rules also match against a command normalised the same way:
    /// `rm -rf *` then catches `rm -fr`, `rm -r -f`, `/bin/rm --force -r`.
    pub(crate) normalized: Vec<WordGlob>,
    /// The same as a program, a set of options and a glob over the rest:
    /// a deny or ask rule also matches a command whose options include
    /// the set (`rm -rf *` catches `rm -rfI`, `rm -d -r -f`). Only for
    /// patterns that name options.
    pub(crate) required: Vec<Required>,
    /// The literal program name the pattern starts with, if it does (the
    /// index matching looks rules up by).
    pub(crate) program: Option<String>,
}

/// A normalised pattern's program, the options a command must include,
/// and the glob its other words must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Required {
    /// The program's name.
    pub(crate) program: String,
    /// The options, normalised.
    pub(crate) options: Vec<String>,
    /// The other words.
    pub(crate) rest: WordGlob,
}

impl Required {
    fn of(normalized: &[String]) -> Option<Required> {
        let (program, options, rest) = split_normalized(normalized)?;
        if options.is_empty() || program.contains('*') {
            return None;
        }
        Some(Required {
            program: program.clone(),
            options: options.to_vec(),
            rest: WordGlob::new(rest),
        })
    }
}

/// A normalised command's program, options and other words.
pub(crate) fn split_normalized(words: &[String]) -> Option<(&String, &[String], &[String])> {
    let (program, rest) = words.split_first()?;
    let count = rest
        .iter()
        .take_while(|word| {
            word.starts_with('-') && *word != "-" && *word != "--" && !word.contains('*')
        })
        .count();
    let (options, others) = rest.split_at(count);
    Some((program, options, others))
}

/// A glob over a command's words joined by [`WORD_SEPARATOR`]: literal
/// runs and `*`s; with `optional_tail`, the text before a final ` *`
/// matches alone too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WordGlob {
    /// Literal runs, between which a `*` stands (a leading or trailing
    /// empty run means the pattern starts or ends with `*`).
    pub(crate) pieces: Vec<String>,
    /// The pattern ended in ` *`: the command alone matches too.
    pub(crate) optional_tail: bool,
}

impl CommandPattern {
    /// Parses a Bash specifier.
    pub(crate) fn parse(inner: &str) -> CommandPattern {
        let alternatives: Vec<Vec<String>> = match inner.strip_suffix(":*") {
            // `npm run test:*`: `npm run test` alone or followed by words,
            // and, as the glob reads, `npm run test:` and anything.
            Some(prefix) if !prefix.trim().is_empty() => {
                let mut words = pattern_words(prefix);
                let literal = words.clone();
                words.push("*".into());
                let mut colon = literal;
                if let Some(last) = colon.last_mut() {
                    last.push_str(":*");
                }
                vec![words, colon]
            }
            _ => vec![pattern_words(inner)],
        };
        let program = alternatives
            .first()
            .and_then(|words| words.first())
            .filter(|word| !word.contains('*'))
            .cloned();
        CommandPattern {
            globs: alternatives
                .iter()
                .map(|words| WordGlob::new(words))
                .collect(),
            normalized: alternatives
                .iter()
                .map(|words| WordGlob::new(&normalize_words(words)))
                .collect(),
            required: alternatives
                .iter()
                .filter_map(|words| Required::of(&normalize_words(words)))
                .collect(),
            program,
        }
    }
}

impl WordGlob {
    pub(crate) fn new(words: &[String]) -> WordGlob {
        let optional_tail = words.len() > 1 && words.last().is_some_and(|word| word == "*");
        let body = if optional_tail {
            &words[..words.len() - 1]
        } else {
            words
        };
        let mut text = body.join(&WORD_SEPARATOR.to_string());
        if optional_tail {
            text.push(WORD_SEPARATOR);
            text.push('*');
        }
        WordGlob {
            pieces: text.split('*').map(str::to_string).collect(),
            optional_tail,
        }
    }
}

/// A pattern's words: split at whitespace, quotes grouping (a quoted
/// `*` is still a wildcard: patterns are globs, not shell).
pub(crate) fn pattern_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Normalises a command's (or a pattern's) words for deny and ask
/// matching: the program's directory dropped, git's options before its
/// subcommand dropped, short option clusters split (`-rf` is `-r -f`),
/// the long options (or their prefixes, as getopt_long takes them) of a
/// few programs made short, a force push's `+refspec` read as `-f`, and
/// every option before `--` moved right after the program, sorted. Only
/// ever widens what deny and ask rules catch.
pub(crate) fn normalize_words(words: &[String]) -> Vec<String> {
    let Some((program, rest)) = words.split_first() else {
        return Vec::new();
    };
    let program = program.rsplit('/').next().unwrap_or(program).to_string();
    let rest = if program == "git" {
        after_git_options(rest)
    } else {
        rest
    };
    let pushes = program == "git" && rest.first().is_some_and(|word| word == "push");
    let mut options = Vec::new();
    let mut others = Vec::new();
    let mut ended = false;
    for word in rest {
        if pushes && !ended && word.starts_with('+') {
            options.push("-f".to_string());
        }
        if ended || !word.starts_with('-') || word == "-" || word.contains('*') {
            others.push(word.clone());
            continue;
        }
        if word == "--" {
            ended = true;
            others.push(word.clone());
            continue;
        }
        split_option(&program, word, &mut options);
    }
    options.sort();
    options.dedup();
    let mut out = Vec::with_capacity(1 + options.len() + others.len());
    out.push(program);
    out.extend(options);
    out.extend(others);
    out
}

/// git's words from its subcommand on (`git -C dir -c k=v push` is a
/// push whatever the options before it).
fn after_git_options(words: &[String]) -> &[String] {
    const WITH_VALUE: &[&str] = &[
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--attr-source",
        "--super-prefix",
    ];
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if !word.starts_with('-') || word == "--" || word.contains('*') {
            break;
        }
        i += if WITH_VALUE.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    words.get(i..).unwrap_or_default()
}

fn split_option(program: &str, word: &str, options: &mut Vec<String>) {
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(name, _)| name);
        options.push(short_for(program, name).unwrap_or_else(|| word.to_string()));
        return;
    }
    let letters = &word[1..];
    if letters.chars().all(|c| c.is_ascii_alphabetic()) {
        for letter in letters.chars() {
            options.push(short_letter(program, letter));
        }
    } else {
        options.push(word.to_string());
    }
}

/// The long options whose short form deny rules are written with, as
/// (programs, name, letter).
const LONG_AS_SHORT: &[(&[&str], &str, char)] = &[
    (&["rm", "cp", "rmdir", "shred"], "recursive", 'r'),
    (&["rm", "cp", "mv", "ln", "git", "shred"], "force", 'f'),
    (&["git"], "force-with-lease", 'f'),
    (&["rm"], "dir", 'd'),
    (&["rm", "cp", "mv"], "verbose", 'v'),
];

/// The short form of `program`'s long option `long` (its name, or a
/// prefix of it: getopt_long takes an unambiguous one, and an ambiguous
/// one runs nothing).
fn short_for(program: &str, long: &str) -> Option<String> {
    if long.is_empty() {
        return None;
    }
    let mut letters = LONG_AS_SHORT
        .iter()
        .filter(|(programs, name, _)| programs.contains(&program) && name.starts_with(long))
        .map(|(_, _, letter)| *letter);
    let letter = letters.next()?;
    letters
        .all(|other| other == letter)
        .then(|| format!("-{letter}"))
}

fn short_letter(program: &str, letter: char) -> String {
    match (program, letter) {
        ("rm" | "cp", 'R') => "-r".into(),
        _ => format!("-{letter}"),
    }
}

// ----- path patterns ----------------------------------------------------

/// A path glob, anchored: `//abs/**`, `~/x/**`, `/x` (the policy file's
/// directory), or relative (the call's cwd, else the policy file's
/// directory). A pattern without a `/` inside matches at any depth below
/// its anchor, as in gitignore; a pattern that matches a directory covers
/// everything under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathPattern {
    /// Where the pattern is rooted.
    pub(crate) anchor: PathAnchor,
    /// The pattern's segments below the anchor.
    pub(crate) segments: Vec<Segment>,
}

/// Where a path pattern is rooted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathAnchor {
    /// A directory known at load.
    Fixed(PathBuf),
    /// The call's cwd; the path here when the call has none.
    Cwd(PathBuf),
}

/// One segment of a path glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// `**`: any number of segments.
    AnyDepth,
    /// A segment with `*`, `?` and `[...]`.
    Glob(String),
}

impl PathPattern {
    fn parse(inner: &str, anchors: &Anchors) -> Result<PathPattern, String> {
        let (anchor, rest) = if let Some(rest) = inner.strip_prefix("//") {
            (PathAnchor::Fixed(PathBuf::from("/")), rest)
        } else if let Some(rest) = inner.strip_prefix("~/").or((inner == "~").then_some("")) {
            let Some(home) = &anchors.home else {
                return Err("a `~/` rule, but the environment names no home directory".into());
            };
            (PathAnchor::Fixed(home.clone()), rest)
        } else if let Some(rest) = inner.strip_prefix('/') {
            (PathAnchor::Fixed(anchors.policy_dir.clone()), rest)
        } else {
            let rest = inner.strip_prefix("./").unwrap_or(inner);
            (PathAnchor::Cwd(anchors.policy_dir.clone()), rest)
        };
        let trimmed = rest.trim_end_matches('/');
        let mut segments = Vec::new();
        // gitignore: a pattern with no `/` but at its end matches at any depth.
        if !trimmed.contains('/') && matches!(anchor, PathAnchor::Cwd(_)) && !trimmed.is_empty() {
            segments.push(Segment::AnyDepth);
        }
        for segment in trimmed.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if matches!(segments.last(), Some(Segment::Glob(_))) {
                        segments.pop();
                    } else {
                        return Err("a path pattern's `..` leaves its anchor".into());
                    }
                }
                "**" => segments.push(Segment::AnyDepth),
                glob => segments.push(Segment::Glob(glob.to_string())),
            }
        }
        Ok(PathPattern { anchor, segments })
    }
}

/// A path made absolute lexically: `.` dropped, `..` taking its parent
/// (never above `/`); no filesystem access, so a symlink stays as given.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> Anchors {
        Anchors {
            policy_dir: PathBuf::from("/repo"),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    fn parse(text: &str) -> Rule {
        parse_rule(text, &anchors()).expect("parses")
    }

    #[test]
    fn tools_and_families() {
        assert_eq!(parse("Bash").tool, ToolMatch::Family(Family::Shell));
        assert_eq!(parse("shell(ls)").tool, ToolMatch::Family(Family::Shell));
        assert_eq!(parse("Write(src/**)").tool, ToolMatch::Family(Family::Edit));
        assert_eq!(parse("apply_patch").tool, ToolMatch::Family(Family::Edit));
        assert_eq!(
            parse("ExitPlanMode").tool,
            ToolMatch::Named("ExitPlanMode".into())
        );
        assert_eq!(
            parse("mcp__github").tool,
            ToolMatch::McpServer("github".into())
        );
        assert_eq!(
            parse("mcp__github__*").tool,
            ToolMatch::McpServer("github".into())
        );
        assert_eq!(
            parse("mcp__github__get_issue").tool,
            ToolMatch::Named("mcp__github__get_issue".into())
        );
        assert_eq!(parse("Bash(*)").specifier, Specifier::Any);
    }

    #[test]
    fn refusals_say_why() {
        for bad in [
            "",
            "Bash(ls",
            "Bash()",
            "Ba sh",
            "WebSearch(x)",
            "WebFetch(example.com)",
            "Read(../x/**)",
            "mcp__*",
            "mcp__s__get*",
            "Ex*",
        ] {
            assert!(parse_rule(bad, &anchors()).is_err(), "{bad:?} parses");
        }
    }

    #[test]
    fn legacy_prefix_has_two_alternatives() {
        let Specifier::Command(pattern) = parse("Bash(npm run test:*)").specifier else {
            panic!("a command pattern");
        };
        assert_eq!(pattern.globs.len(), 2);
        assert!(pattern.globs[0].optional_tail);
        assert_eq!(pattern.program.as_deref(), Some("npm"));
    }

    #[test]
    fn normalized_words_sort_split_and_shorten() {
        let words = |text: &str| text.split(' ').map(str::to_string).collect::<Vec<_>>();
        let want = words("rm -f -r /");
        for command in [
            "rm -rf /",
            "rm -fr /",
            "rm -r -f /",
            "/bin/rm --recursive --force /",
            "rm -R -f /",
            "rm -r / -f",
        ] {
            assert_eq!(normalize_words(&words(command)), want, "{command}");
        }
        assert_eq!(
            normalize_words(&words("rm -- -rf")),
            words("rm -- -rf"),
            "after --, words are operands"
        );
        assert_eq!(normalize_words(&words("rm --rec --for /")), want);
        assert_eq!(
            normalize_words(&words("git -C . -c a=b push origin +main")),
            words("git -f push origin +main")
        );
        assert_eq!(
            normalize_words(&words("git push --force-with-lease=main:x")),
            words("git -f push")
        );
    }

    #[test]
    fn path_anchors() {
        let path = |text: &str| match parse(text).specifier {
            Specifier::Path(pattern) => pattern,
            other => panic!("{other:?}"),
        };
        assert_eq!(path("Read(//etc/**)").anchor, PathAnchor::Fixed("/".into()));
        assert_eq!(
            path("Read(~/.ssh/**)").anchor,
            PathAnchor::Fixed("/home/u".into())
        );
        assert_eq!(
            path("Edit(/docs/**)").anchor,
            PathAnchor::Fixed("/repo".into())
        );
        assert_eq!(path("Edit(src/**)").anchor, PathAnchor::Cwd("/repo".into()));
        assert_eq!(
            path("Read(.env)").segments,
            vec![Segment::AnyDepth, Segment::Glob(".env".into())]
        );
    }

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize(Path::new("/../../x")), PathBuf::from("/x"));
    }
}
