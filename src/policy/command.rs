//! A shell command's parts: every simple command it would run, after
//! unwrapping lists, pipelines, groups, substitutions, `sh -c`, `eval`
//! and the wrappers that run another command (`env`, `timeout`, `xargs`,
//! `find -exec`, ...); every redirection's target, as a write; and what
//! cannot be resolved without running the command (an expansion in
//! command position, an alias, a function, a construct too deep or too
//! large), which the policy asks about.
//!
//! The shell grammar is the parser crate's; what is ours is the walk over
//! its tree, here: the parts a person must agree to before the command is
//! allowed.

use brush_parser::word::{self, ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::{ast, Parser, ParserOptions, SourceInfo};

use super::word::Word;
use super::writes::{
    program_options, runs_by_environment, writer_of, Getopt, Writer, GETOPT, GIT_WRITERS, WRITERS,
};
use crate::stage_protocol::MAX_DETAIL_BYTES;

/// The longest command the policy reads: a stager's detail holds no more
/// (a longer one was cut, and the part not seen cannot be judged).
pub(crate) const MAX_COMMAND_BYTES: usize = MAX_DETAIL_BYTES;

/// How deep `sh -c` and `eval` nest before the rest is asked about.
pub(crate) const MAX_SCRIPT_DEPTH: usize = 8;

/// How many parts one command may have before the rest is asked about.
pub(crate) const MAX_PARTS: usize = 512;

/// One part of a shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShellPart {
    /// A simple command, its words as the program receives them (quotes
    /// removed; a word with an expansion is kept as written).
    Command {
        /// The words.
        words: Vec<String>,
        /// The command as a person reads it.
        text: String,
    },
    /// A redirection that writes the file it names (as written: `~/x`,
    /// a relative path, ...).
    Write {
        /// The target.
        target: String,
        /// The redirection as written.
        text: String,
    },
    /// A part that needs no rule (a write to `/dev/null`).
    Fine {
        /// The part as written.
        text: String,
        /// Why it needs none.
        why: &'static str,
    },
    /// What cannot be resolved without running the command.
    Unresolved {
        /// The part as written.
        text: String,
        /// Why.
        why: String,
    },
}

/// The parts of a command line.
pub(crate) fn parts(command: &str) -> Vec<ShellPart> {
    let mut walk = Walk::default();
    walk.script(command, 0);
    walk.finish()
}

/// The parts of a command given as argv (Codex's `["bash", "-lc", ...]`).
pub(crate) fn argv_parts(argv: &[String]) -> Vec<ShellPart> {
    let mut walk = Walk::default();
    let words: Vec<Word> = argv.iter().map(Word::literal).collect();
    walk.command(&words, 0);
    walk.finish()
}

/// The walk's state: the parts found so far.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    parts: Vec<ShellPart>,
    /// A `cd` (or `pushd`, `popd`) ran before: relative paths no longer
    /// name what they name in the call's cwd.
    moved: bool,
    /// A `cd` stands anywhere in the command (a loop body after a write,
    /// a trap, a function): no relative write of the whole command is
    /// sure of its directory.
    moves_somewhere: bool,
    /// Where the relative writes judged as in the call's cwd stand in
    /// `parts`, to be taken back when a `cd` turns up.
    relative_writes: Vec<usize>,
    /// Who adds words to the command being walked (`xargs`, `find -exec`).
    given: Option<Given>,
    /// The script being walked spaces its parentheses (`( (`, `) )`),
    /// which the parser can take for an arithmetic `((`: bash runs nested
    /// subshells there, so an arithmetic expression is walked as a script
    /// too (see [`spaces_its_parentheses`]).
    both_readings: bool,
}

/// Who adds words to a command's line that its text does not show.
#[derive(Debug, Clone)]
enum Given {
    /// `xargs`: any words at all (options too).
    Xargs,
    /// `find -exec ... {}`: the paths found under these start points.
    Found(Vec<Word>),
}

/// Files a write to keeps nothing a rule must judge.
const KEEPS_NOTHING: [&str; 4] = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

impl Walk {
    fn finish(mut self) -> Vec<ShellPart> {
        if self.moves_somewhere {
            for &at in &self.relative_writes {
                if let Some(part) = self.parts.get_mut(at) {
                    let text = match part {
                        ShellPart::Write { text, .. } => std::mem::take(text),
                        _ => continue,
                    };
                    *part = ShellPart::Unresolved {
                        text,
                        why: "a relative path in a command that changes directory".into(),
                    };
                }
            }
        }
        if self.parts.len() > MAX_PARTS {
            self.parts.truncate(MAX_PARTS);
            self.unresolved("…", format!("more than {MAX_PARTS} parts"));
        }
        self.parts
    }

    pub(crate) fn push(&mut self, part: ShellPart) {
        if self.parts.len() <= MAX_PARTS {
            self.parts.push(part);
        }
    }

    pub(crate) fn unresolved(&mut self, text: &str, why: impl Into<String>) {
        self.push(ShellPart::Unresolved {
            text: text.to_string(),
            why: why.into(),
        });
    }

    /// A script (a command line, a `sh -c` string, an `eval`'s words).
    pub(crate) fn script(&mut self, script: &str, depth: usize) {
        if script.len() > MAX_COMMAND_BYTES {
            let text = format!("{} bytes of shell", script.len());
            self.unresolved(
                &text,
                format!("longer than the {MAX_COMMAND_BYTES} bytes the policy reads"),
            );
            return;
        }
        if depth > MAX_SCRIPT_DEPTH {
            self.unresolved(script, "nested `sh -c`/`eval` too deep");
            return;
        }
        parse_script(self, script, depth);
    }

    /// A redirection that writes `target`.
    pub(crate) fn write(&mut self, target: &Word, text: &str) {
        self.write_as(target, text, "a redirection's target expands");
    }

    /// A write of `target`; `expands` says why when its name expands.
    fn write_as(&mut self, target: &Word, text: &str, expands: &str) {
        let relative = !target.text.starts_with('/') && !target.home;
        if !(target.literal || target.home) {
            self.unresolved(text, expands);
        } else if relative && self.moved {
            self.unresolved(
                text,
                "a relative path after `cd`, whose directory is not known",
            );
        } else if KEEPS_NOTHING.contains(&target.text.as_str()) {
            self.push(ShellPart::Fine {
                text: text.to_string(),
                why: "writes a device that keeps nothing",
            });
        } else {
            if relative && self.parts.len() < MAX_PARTS {
                self.relative_writes.push(self.parts.len());
            }
            self.push(ShellPart::Write {
                target: target.text.clone(),
                text: text.to_string(),
            });
        }
    }

    /// Walks what `walk` finds, as run in another directory than the
    /// call's cwd when `moved` (`git -C DIR`, `env -C DIR`, `find
    /// -execdir`): a relative path it writes is then not known.
    pub(crate) fn elsewhere(&mut self, moved: bool, walk: impl FnOnce(&mut Self)) {
        let outer = self.moved;
        self.moved |= moved;
        walk(self);
        self.moved = outer;
    }

    /// An assignment before a command (or alone): a name that changes
    /// what later commands run is asked about.
    pub(crate) fn assignment(&mut self, name: &str, text: &str) {
        if changes_what_runs(name) {
            self.unresolved(
                text,
                format!("sets {name}, which changes what a command runs"),
            );
        }
    }

    /// A simple command's words (assignments and redirections already
    /// taken out), unwrapping the wrappers that run another command.
    pub(crate) fn command(&mut self, words: &[Word], depth: usize) {
        let Some(program) = words.first() else {
            return;
        };
        let text = join(words);
        if !program.literal {
            self.unresolved(&text, "the command's name expands");
            return;
        }
        let name = program.text.rsplit('/').next().unwrap_or(&program.text);
        let args = &words[1..];
        match name {
            "env" => self.env(words, &text, depth),
            "timeout" => self.wrapped(
                words,
                &text,
                skip_options(args, TIMEOUT).map(|i| i + 1),
                depth,
            ),
            "nice" => self.wrapped(words, &text, nice_options(args), depth),
            "stdbuf" => self.wrapped(words, &text, skip_options(args, STDBUF), depth),
            "ionice" => self.wrapped(words, &text, skip_options(args, IONICE), depth),
            "time" => self.time(words, &text, depth),
            "nohup" | "setsid" | "builtin" => {
                self.wrapped(words, &text, skip_options(args, NONE), depth)
            }
            // `exec > log` alone only redirects the shell's own output:
            // the redirection is judged, and nothing else runs.
            "exec" if args.is_empty() => {}
            "exec" => self.wrapped(words, &text, skip_options(args, EXEC), depth),
            "command" => self.command_builtin(words, &text, depth),
            "sudo" | "doas" => self.privileged(words, &text, depth),
            "xargs" => self.xargs(words, &text, depth),
            "find" => self.find(words, &text, depth),
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox" => {
                self.shell(words, &text, depth)
            }
            "eval" => self.eval(args, &text, depth),
            "alias" | "unalias" | "enable" => {
                if args.is_empty() {
                    self.simple(words, text);
                } else {
                    self.unresolved(&text, format!("`{name}` changes what later commands run"));
                }
            }
            "git" => self.git(words, text),
            "coproc" => self.wrapped(words, &text, Some(0), depth),
            "watch" => self.watch(words, &text, depth),
            "trap" => self.trap(args, &text, depth),
            "cd" | "pushd" | "popd" => {
                self.moved = true;
                self.moves_somewhere = true;
                self.simple(words, text);
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                self.declaration(name, args, &text, depth)
            }
            "set" => self.set(args, &text),
            "read" | "mapfile" | "readarray" | "printf" | "wait" | "getopts" | "unset" | "hash"
            | "let" | "test" | "[" => {
                self.builtin_operands(name, args, &text, depth);
                self.program(name, words, text);
            }
            _ => self.program(name, words, text),
        }
    }

    /// A program's command, and the files its arguments say it writes.
    fn program(&mut self, name: &str, words: &[Word], text: String) {
        self.simple(words, text.clone());
        self.option_effects(words, &text);
        if let Some(writer) = writer_of(WRITERS, name) {
            self.argument_writes(writer, name, &words[1..], &text);
        }
    }

    /// What the program's options make it run or write that a rule on
    /// the program cannot see (`cargo --manifest-path`, `--target-dir`;
    /// see `writes::PROGRAM_OPTIONS`).
    fn option_effects(&mut self, words: &[Word], text: &str) {
        match program_options(words) {
            Ok(written) => {
                for path in &written {
                    let what = format!("{} writes {}", words[0].text, path.text);
                    self.write_as(path, &what, "the path it writes expands");
                }
            }
            Err(why) => self.unresolved(text, why),
        }
    }

    /// The writes of a [`Writer`]'s command line (see `writes`).
    fn argument_writes(&mut self, writer: &Writer, name: &str, args: &[Word], text: &str) {
        match self.given.clone() {
            Some(Given::Xargs) => {
                self.unresolved(
                    text,
                    format!("`xargs` adds words to `{name}`, which could name files it writes"),
                );
                return;
            }
            Some(Given::Found(starts))
                if writer.writes_operands() && args.iter().any(|word| word.text.contains("{}")) =>
            {
                for start in &starts {
                    let what = format!("{name} writes what `find` found in {}", start.text);
                    self.write_as(start, &what, "a start point of `find` expands");
                }
            }
            _ => {}
        }
        let written = writer.written(args);
        if let Some(why) = written.unknown {
            self.unresolved(text, why);
            return;
        }
        for path in &written.paths {
            if matches!(self.given, Some(Given::Found(_))) && path.text.contains("{}") {
                continue;
            }
            let what = format!("{name} writes {}", path.text);
            self.write_as(path, &what, "the path it writes expands");
        }
    }

    /// Walks `inner`, a command another adds words to.
    fn given_command(&mut self, inner: &[Word], given: Given, depth: usize) {
        let outer = self.given.replace(given);
        self.command(inner, depth);
        self.given = outer;
    }

    fn simple(&mut self, words: &[Word], text: String) {
        self.push(ShellPart::Command {
            words: words.iter().map(|word| word.text.clone()).collect(),
            text,
        });
    }

    /// A wrapper that runs the command at `inner` (its own options
    /// skipped) and does nothing a rule must see: only that command is a
    /// part. With no command, the wrapper alone is one.
    fn wrapped(&mut self, words: &[Word], text: &str, inner: Option<usize>, depth: usize) {
        match inner.map(|skipped| 1 + skipped) {
            Some(start) if start < words.len() => self.command(&words[start..], depth),
            Some(_) => self.simple(words, text.to_string()),
            None => self.unresolved(
                text,
                format!(
                    "`{}`'s options are not ones the policy knows",
                    words[0].text
                ),
            ),
        }
    }

    /// `env [OPTION]... [NAME=VALUE]... [COMMAND]`, read as getopt does
    /// (`-iS'...'` is `-i -S '...'`, `--s=` is `--split-string=`). `-S`
    /// splits its string into arguments that take its place, options
    /// included; after `-C DIR` the command's relative paths name files
    /// in DIR, which the walk does not know.
    fn env(&mut self, words: &[Word], text: &str, depth: usize) {
        let mut argv = words.to_vec();
        let mut moved = false;
        let mut splits = 0;
        let read = loop {
            let read = match ENV.read(&argv[1..]) {
                Ok(read) => read,
                Err(why) => return self.unresolved(text, format!("`env`: {why}")),
            };
            moved |= read.has(&["-C", "--chdir"]);
            let split = read
                .options
                .iter()
                .find(|seen| matches!(seen.name.as_str(), "-S" | "--split-string"));
            let Some(split) = split else { break read };
            let Some(string) = split.value.as_ref().filter(|value| value.literal) else {
                return self.unresolved(text, "what `env -S` splits expands");
            };
            let Some(mut split_words) = split_string(&string.text) else {
                return self.unresolved(text, "`env -S` splits a string the policy cannot read");
            };
            splits += 1;
            if splits > MAX_SCRIPT_DEPTH {
                return self.unresolved(text, "`env -S` nested too deep");
            }
            split_words.insert(0, argv[0].clone());
            split_words.extend(argv[1 + split.next..].iter().cloned());
            argv = split_words;
        };
        let mut i = 1 + read.first_operand;
        if argv.get(i).is_some_and(|word| word.text == "-") {
            i += 1;
        }
        while let Some(word) = argv.get(i) {
            match word.text.split_once('=') {
                Some((name, _)) if !name.is_empty() => self.assignment(name, text),
                _ => break,
            }
            i += 1;
        }
        if i >= argv.len() {
            return self.simple(words, text.to_string());
        }
        self.elsewhere(moved, |walk| walk.command(&argv[i..], depth));
    }

    /// GNU `time [-o FILE] COMMAND`: writes its report to FILE.
    fn time(&mut self, words: &[Word], text: &str, depth: usize) {
        let read = match TIME.read(&words[1..]) {
            Ok(read) => read,
            Err(why) => return self.unresolved(text, format!("`time`: {why}")),
        };
        for seen in &read.options {
            if let (Some(file), "-o" | "--output") = (&seen.value, seen.name.as_str()) {
                let what = format!("time writes {}", file.text);
                self.write_as(file, &what, "the path it writes expands");
            }
        }
        self.wrapped(words, text, Some(read.first_operand), depth);
    }

    fn command_builtin(&mut self, words: &[Word], text: &str, depth: usize) {
        // `command -v x` and `-V` only say what x is.
        if words
            .get(1)
            .is_some_and(|w| w.text.starts_with("-v") || w.text.starts_with("-V"))
        {
            self.simple(words, text.to_string());
            return;
        }
        self.wrapped(words, text, skip_options(&words[1..], COMMAND), depth);
    }

    /// `sudo`/`doas`: the whole is a part (it changes who runs the
    /// command), and so is the command it runs.
    fn privileged(&mut self, words: &[Word], text: &str, depth: usize) {
        self.simple(words, text.to_string());
        let spec = if words[0].text.ends_with("doas") {
            DOAS
        } else {
            SUDO
        };
        match skip_options(&words[1..], spec) {
            Some(skipped) if 1 + skipped < words.len() => {
                self.command(&words[1 + skipped..], depth)
            }
            Some(_) => {}
            None => self.unresolved(
                text,
                format!(
                    "`{}`'s options are not ones the policy knows",
                    words[0].text
                ),
            ),
        }
    }

    /// `xargs cmd`: the whole is a part and so is `cmd` (with the words
    /// xargs adds from its input unknown: patterns ending in ` *` still
    /// match it).
    fn xargs(&mut self, words: &[Word], text: &str, depth: usize) {
        self.simple(words, text.to_string());
        match skip_options(&words[1..], XARGS) {
            Some(skipped) if 1 + skipped < words.len() => {
                self.given_command(&words[1 + skipped..], Given::Xargs, depth)
            }
            Some(_) => {}
            None => self.unresolved(text, "`xargs`'s options are not ones the policy knows"),
        }
    }

    /// `find ... -exec cmd {} ;`: the whole is a part, and so is each
    /// command it executes; `-delete` writes its start points, `-fprint F`
    /// and its kind write F. A word of the expression that expands could
    /// be an action: asked about.
    fn find(&mut self, words: &[Word], text: &str, depth: usize) {
        self.simple(words, text.to_string());
        let (starts, mut i) = find_starts(words);
        while i < words.len() {
            let word = &words[i];
            if !word.literal {
                self.unresolved(text, "a word of `find`'s expression expands");
                return;
            }
            match word.text.as_str() {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let start = i + 1;
                    let end = exec_end(words, start);
                    // `-execdir` runs in each found file's directory.
                    self.elsewhere(word.text.ends_with("dir"), |walk| {
                        walk.given_command(&words[start..end], Given::Found(starts.clone()), depth)
                    });
                    i = end;
                }
                "-delete" => {
                    for start in &starts {
                        let what = format!("find -delete in {}", start.text);
                        self.write_as(start, &what, "a start point of `find` expands");
                    }
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    if let Some(file) = words.get(i + 1) {
                        let what = format!("find {} {}", word.text, file.text);
                        self.write_as(file, &what, "the path it writes expands");
                    }
                    i += if word.text == "-fprintf" { 2 } else { 1 };
                }
                primary if takes_value_in_find(primary) => i += 1,
                _ => {}
            }
            i += 1;
        }
    }

    /// `sh -c 'script'` is the script's parts; a shell reading a file or
    /// its input is a part of its own.
    fn shell(&mut self, words: &[Word], text: &str, depth: usize) {
        let mut i = 1;
        let mut script_follows = false;
        while let Some(word) = words.get(i) {
            let arg = word.text.as_str();
            if !word.literal {
                self.unresolved(text, "a shell's argument expands");
                return;
            }
            if arg == "--" || !(arg.starts_with('-') || arg.starts_with('+')) || arg == "-" {
                break;
            }
            if matches!(arg, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                i += 2;
                continue;
            }
            if !arg.starts_with("--") && arg[1..].contains('c') {
                script_follows = true;
            }
            i += 1;
        }
        if !script_follows {
            self.simple(words, text.to_string());
            return;
        }
        match words.get(i) {
            Some(script) if script.literal => self.script(&script.text, depth + 1),
            Some(_) => self.unresolved(text, "the script of `sh -c` expands"),
            None => self.unresolved(text, "`sh -c` without its script"),
        }
    }

    fn eval(&mut self, args: &[Word], text: &str, depth: usize) {
        if args.iter().any(|word| !word.literal) {
            self.unresolved(text, "what `eval` runs expands");
            return;
        }
        let script: Vec<&str> = args.iter().map(|word| word.text.as_str()).collect();
        self.script(&script.join(" "), depth + 1);
    }

    /// `watch cmd args`: runs `sh -c` of its words joined; with `-x`,
    /// the words as they are.
    fn watch(&mut self, words: &[Word], text: &str, depth: usize) {
        let read = match WATCH.read(&words[1..]) {
            Ok(read) => read,
            Err(why) => return self.unresolved(text, format!("`watch`: {why}")),
        };
        let inner = &words[1 + read.first_operand..];
        if inner.is_empty() {
            self.simple(words, text.to_string());
        } else if read.has(&["-x", "--exec"]) {
            self.command(inner, depth);
        } else {
            self.eval(inner, text, depth);
        }
    }

    /// `trap [--] 'script' SIGNALS`: the script runs later, so it is
    /// judged now. `-p` and `-l` only print; `-` resets.
    fn trap(&mut self, args: &[Word], text: &str, depth: usize) {
        let action = match args.first() {
            Some(option) if option.text.starts_with('-') && !option.literal => {
                self.unresolved(text, "what `trap` runs expands");
                return;
            }
            Some(option) if option.text == "--" => &args[1..],
            // `-` resets; `-p`, `-l` print; any other option bash refuses:
            // nothing is set.
            Some(option) if option.text.starts_with('-') => return,
            _ => args,
        };
        match action.first() {
            None => {}
            Some(first) if first.text == "-" => {}
            Some(first) if first.literal => self.script(&first.text, depth + 1),
            Some(_) => self.unresolved(text, "what `trap` runs expands"),
        }
    }

    /// `export NAME=value`, `declare`, `local`...: assignments (a name
    /// that changes what runs, or with a subscript, is asked about); `-f`
    /// (functions), `-n` (a name that stands for another) and `-i`
    /// (assignments evaluated as arithmetic) too.
    fn declaration(&mut self, builtin: &str, args: &[Word], text: &str, depth: usize) {
        let nameref = builtin != "export"
            && args
                .iter()
                .any(|word| word.text.starts_with(['-', '+']) && word.text.contains('n'));
        for word in args {
            let flags = word
                .text
                .strip_prefix('-')
                .or_else(|| word.text.strip_prefix('+'));
            match flags {
                Some(flags) if flags.contains('f') => self.unresolved(text, "declares functions"),
                Some(flags) if builtin != "export" && flags.contains('n') => self.unresolved(
                    text,
                    "declares a name that stands for another variable, whose subscript can run commands",
                ),
                Some(flags) if flags.contains('i') => self.unresolved(
                    text,
                    "declares an integer, whose every assignment is evaluated as arithmetic",
                ),
                Some(_) => {}
                None => {
                    let name = word.text.split_once('=').map_or(word.text.as_str(), |(name, _)| {
                        name.trim_end_matches('+')
                    });
                    let literal = word.literal || word.text.contains('=');
                    self.assigned_name(name, literal, text, depth);
                    let Some((_, value)) = word.text.split_once('=') else {
                        continue;
                    };
                    if nameref {
                        // A nameref's value is a name, subscript and all.
                        let value = Word {
                            text: value.to_string(),
                            ..word.clone()
                        };
                        self.subscript(&value, text, depth);
                    } else if word.literal && value.starts_with('(') {
                        // `declare 'a=([k]=v)'`: bash expands the quoted
                        // list as if it were written out.
                        self.word(value, depth);
                        self.unresolved(text, "a quoted list assigned, which bash expands");
                    }
                }
            }
        }
    }

    /// A name a builtin assigns (or declares, or unsets): a subscript in
    /// it runs what it expands, a name that expands could be any, and a
    /// name that changes what runs is asked about.
    fn assigned_name(&mut self, name: &str, literal: bool, text: &str, depth: usize) {
        if name.contains('[') {
            let written = Word {
                text: name.to_string(),
                literal,
                home: false,
            };
            self.subscript(&written, text, depth);
            self.unresolved(
                text,
                format!("`{name}`: a subscript in a name runs what it expands"),
            );
        } else if !(literal && is_name(name)) {
            self.unresolved(text, "a name it assigns expands");
        } else {
            self.assignment(name, text);
        }
    }

    /// `set -a`, `-k` (and `-o allexport`, `-o keyword`) make later
    /// words assignments that reach the commands run, unseen by the walk.
    fn set(&mut self, args: &[Word], text: &str) {
        let mut i = 0;
        while let Some(word) = args.get(i) {
            if !word.literal {
                self.unresolved(text, "an argument of `set` expands (to options?)");
                return;
            }
            let Some(sign) = word.text.chars().next().filter(|c| matches!(c, '-' | '+')) else {
                break;
            };
            if matches!(word.text.as_str(), "-" | "--") {
                break;
            }
            let flags = &word.text[1..];
            let option = flags.contains('o').then(|| args.get(i + 1)).flatten();
            let exports = sign == '-'
                && (flags.contains(['a', 'k'])
                    || option.is_some_and(|option| {
                        matches!(option.text.as_str(), "allexport" | "keyword")
                    }));
            if option.is_some_and(|option| !option.literal) || exports {
                self.unresolved(
                    text,
                    "`set -a`/`-k` pass later assignments to the commands run",
                );
                return;
            }
            i += if option.is_some() { 2 } else { 1 };
        }
    }

    /// The operands of the builtins that assign names (`read`, `mapfile`,
    /// `printf -v`, `wait -p`, `getopts`, `unset`), evaluate arithmetic
    /// (`let`), compare numbers (`test`, `[`) or say what a name runs
    /// (`hash -p`).
    fn builtin_operands(&mut self, builtin: &str, args: &[Word], text: &str, depth: usize) {
        match builtin {
            "let" => {
                if args.iter().any(|arg| reads_variables(&arg.text)) {
                    self.unresolved(
                        text,
                        "arithmetic reads a variable, whose value bash evaluates in turn",
                    );
                }
            }
            "test" | "[" => {
                for (i, arg) in args.iter().enumerate() {
                    if ARITHMETIC_TESTS.contains(&arg.text.as_str()) {
                        let operands: Vec<&Word> =
                            [i.checked_sub(1).and_then(|j| args.get(j)), args.get(i + 1)]
                                .into_iter()
                                .flatten()
                                .collect();
                        self.number_operands(&operands, text, depth);
                    } else if arg.text == "-v" {
                        if let Some(operand) = args.get(i + 1) {
                            self.variable_operand(operand, text, depth);
                        }
                    }
                }
            }
            "hash" => {
                if args
                    .iter()
                    .any(|arg| arg.text.starts_with('-') && arg.text.contains('p'))
                {
                    self.unresolved(text, "`hash -p` sets what a name runs");
                }
            }
            "getopts" => {
                if let Some(name) = args.get(1) {
                    self.assigned_name(&name.text, name.literal, text, depth);
                }
            }
            _ => self.named_operands(builtin, args, text, depth),
        }
    }

    /// `read`, `mapfile`/`readarray`, `printf -v`, `wait -p`, `unset`: the names
    /// they assign; `mapfile -C` runs a callback (with words it adds).
    fn named_operands(&mut self, builtin: &str, args: &[Word], text: &str, depth: usize) {
        // Options that take a value, the one whose value is a name, the
        // one whose value is code, and whether the operands are names.
        let (with_value, name_option, code_option, operands) = match builtin {
            "read" => ("dinNptu", Some('a'), None, true),
            "mapfile" | "readarray" => ("dnOsuc", None, Some('C'), true),
            "printf" => ("", Some('v'), None, false),
            "wait" => ("", Some('p'), None, false),
            _ => ("", None, None, true),
        };
        let mut i = 0;
        while let Some(word) = args.get(i) {
            if word.text == "--" {
                i += 1;
                break;
            }
            let Some(flags) = word
                .text
                .strip_prefix('-')
                .filter(|flags| !flags.is_empty())
            else {
                break;
            };
            if !word.literal {
                self.unresolved(text, format!("an option of `{builtin}` expands"));
                return;
            }
            i += 1;
            for (at, flag) in flags.char_indices() {
                let takes_value = with_value.contains(flag)
                    || Some(flag) == name_option
                    || Some(flag) == code_option;
                if !takes_value {
                    continue;
                }
                let attached = &flags[at + flag.len_utf8()..];
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(Word {
                        text: attached.to_string(),
                        ..word.clone()
                    })
                };
                if let Some(value) = value {
                    if Some(flag) == name_option {
                        self.assigned_name(&value.text, value.literal, text, depth);
                    } else if Some(flag) == code_option {
                        self.callback(&value, text, depth);
                    }
                }
                break;
            }
        }
        if operands {
            for name in &args[i.min(args.len())..] {
                self.assigned_name(&name.text, name.literal, text, depth);
            }
        }
    }

    /// `mapfile -C CODE`: bash runs CODE with the index and the line
    /// read added as words, which the command does not show.
    fn callback(&mut self, code: &Word, text: &str, depth: usize) {
        if code.literal {
            self.script(&code.text, depth + 1);
        }
        self.unresolved(
            text,
            "`mapfile -C` runs its callback with words read from its input",
        );
    }

    /// The operands of an arithmetic comparison (`-eq`...): anything but
    /// a plain integer is evaluated as arithmetic by `[[ ]]` (and by some
    /// shells' `test`), where a subscript runs commands.
    fn number_operands(&mut self, operands: &[&Word], text: &str, depth: usize) {
        for operand in operands {
            if is_number(operand) {
                continue;
            }
            if operand.literal {
                self.evaluated(&operand.text, text, depth);
            }
            self.unresolved(
                text,
                "an arithmetic comparison of what is not a plain integer evaluates it",
            );
        }
    }

    /// The operand of `-v` names a variable: a subscript in it runs what
    /// it expands.
    fn variable_operand(&mut self, operand: &Word, text: &str, depth: usize) {
        if !operand.literal || operand.text.contains('[') {
            self.subscript(operand, text, depth);
            self.unresolved(text, "`-v` with a subscript runs what it expands");
        }
    }

    /// The subscript of a name written as text (`'a[$(cmd)]'` given to
    /// `declare`, `-v`, a nameref), which bash expands: walked when the
    /// text is literal.
    fn subscript(&mut self, name: &Word, text: &str, depth: usize) {
        let index = name
            .text
            .split_once('[')
            .map(|(_, rest)| rest.rsplit_once(']').map_or(rest, |(index, _)| index));
        if let Some(index) = index.filter(|_| name.literal) {
            self.evaluated(index, text, depth);
        }
    }

    /// `git -c name=value` and `--config-env` can make git run anything
    /// (`core.pager`, `alias.x=!sh`, `core.sshCommand`): asked about.
    fn git(&mut self, words: &[Word], text: String) {
        let sets_config = words[1..]
            .iter()
            .take_while(|word| word.text.starts_with('-') || word.text.contains('='))
            .any(|word| {
                word.text == "-c"
                    || word.text.starts_with("--config-env")
                    || word.text.starts_with("-c")
            });
        if sets_config {
            self.unresolved(&text, "`git -c` sets configuration that can run commands");
        }
        self.simple(words, text.clone());
        self.option_effects(words, &text);
        self.git_writes(words, &text);
    }

    /// `git diff --output=F` and the like: the subcommand's writes. After
    /// `git -C DIR`, a relative path is relative to DIR, which is not the
    /// call's cwd.
    fn git_writes(&mut self, words: &[Word], text: &str) {
        let mut i = 1;
        let mut elsewhere = false;
        while let Some(word) = words.get(i) {
            match word.text.as_str() {
                "-C" => {
                    elsewhere = true;
                    i += 2;
                }
                "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
                | "--attr-source" | "--super-prefix" => i += 2,
                option if option.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(writer) = words
            .get(i)
            .and_then(|subcommand| writer_of(GIT_WRITERS, &subcommand.text))
        else {
            return;
        };
        self.elsewhere(elsewhere, |walk| {
            walk.argument_writes(writer, "git", &words[i + 1..], text)
        });
    }
}

/// `find`'s start points (`.` when it names none) and where its
/// expression begins, after its leading options (`-H`, `-L`, `-P`, `-D
/// debug`, `-O3`).
fn find_starts(words: &[Word]) -> (Vec<Word>, usize) {
    let mut i = 1;
    while let Some(word) = words.get(i) {
        match word.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            level if level.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let first = i;
    while let Some(word) = words.get(i) {
        let arg = word.text.as_str();
        // A start point that expands could be an action: the expression
        // judges it.
        let expression = (arg.starts_with('-') && arg.len() > 1) || matches!(arg, "(" | "!" | ",");
        if expression || !word.literal {
            break;
        }
        i += 1;
    }
    let mut starts = words[first..i].to_vec();
    if starts.is_empty() {
        starts.push(Word::literal("."));
    }
    (starts, i)
}

/// Whether a `find` primary takes the next word as its value (so that
/// word is no action).
fn takes_value_in_find(primary: &str) -> bool {
    const WITH_VALUE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-perm",
        "-size",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-samefile",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-used",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-fstype",
        "-context",
        "-regextype",
        "-files0-from",
    ];
    WITH_VALUE.contains(&primary) || primary.starts_with("-newer") || primary.ends_with("newer")
}

/// Whether assigning `name` changes what a command runs or loads.
fn changes_what_runs(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "MANPAGER",
        "LESSOPEN",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "PERL5OPT",
        "RUBYOPT",
        "HOME",
        // What cargo runs: the compiler, its wrappers, linker flags.
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTDOC",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
    ];
    // Cargo's configuration by environment (`CARGO_TARGET_<triple>_RUNNER`,
    // `CARGO_BUILD_RUSTC_WRAPPER`, `CARGO_HOME`, ...) but its display and
    // job settings, which run nothing.
    const CARGO_HARMLESS: &[&str] = &[
        "CARGO_TERM_",
        "CARGO_INCREMENTAL",
        "CARGO_BUILD_JOBS",
        "CARGO_LOG",
    ];
    let cargo_config =
        name.starts_with("CARGO_") && !CARGO_HARMLESS.iter().any(|prefix| name.starts_with(prefix));
    NAMES.contains(&name)
        || runs_by_environment(name)
        || cargo_config
        // `BASH_CMDS` and `BASH_ALIASES` say what a name runs;
        // `BASH_FUNC_*` defines functions.
        || ["LD_", "DYLD_", "GIT_", "BASH_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

fn join(words: &[Word]) -> String {
    let texts: Vec<&str> = words.iter().map(|word| word.text.as_str()).collect();
    texts.join(" ")
}

/// The options of the wrappers that run the command after them, from
/// their `--help` (coreutils 9.1, util-linux, procps, findutils, GNU
/// time, sudo 1.9): their options end at the command, and one they do not
/// take is asked about.
const fn wrapper(getopt: Getopt) -> Getopt {
    Getopt {
        in_order: true,
        ..getopt
    }
}

const ENV: Getopt = wrapper(Getopt {
    short_values: "uCS",
    short_flags: "i0v",
    long_values: &["--unset", "--chdir", "--split-string"],
    long_optional: &["--block-signal", "--default-signal", "--ignore-signal"],
    long_flags: &[
        "--ignore-environment",
        "--null",
        "--list-signal-handling",
        "--debug",
        "--help",
        "--version",
    ],
    ..GETOPT
});
/// `nohup`, `setsid` and `builtin`: none of their options takes a value.
const NONE: Getopt = wrapper(Getopt {
    short_flags: "cfwhV",
    long_flags: &["--ctty", "--fork", "--wait", "--help", "--version"],
    ..GETOPT
});
const TIMEOUT: Getopt = wrapper(Getopt {
    short_values: "ks",
    short_flags: "v",
    long_values: &["--kill-after", "--signal"],
    long_flags: &[
        "--preserve-status",
        "--foreground",
        "--verbose",
        "--help",
        "--version",
    ],
    ..GETOPT
});
const NICE: Getopt = wrapper(Getopt {
    short_values: "n",
    long_values: &["--adjustment"],
    long_flags: &["--help", "--version"],
    ..GETOPT
});
const STDBUF: Getopt = wrapper(Getopt {
    short_values: "ioe",
    long_values: &["--input", "--output", "--error"],
    long_flags: &["--help", "--version"],
    ..GETOPT
});
const IONICE: Getopt = wrapper(Getopt {
    short_values: "cnpPu",
    short_flags: "thV",
    long_values: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
    long_flags: &["--ignore", "--help", "--version"],
    ..GETOPT
});
/// GNU time (the shell's `time` takes `-p` only, a flag here too).
const TIME: Getopt = wrapper(Getopt {
    short_values: "fo",
    short_flags: "apqvhV",
    long_values: &["--format", "--output"],
    long_flags: &[
        "--append",
        "--portability",
        "--quiet",
        "--verbose",
        "--help",
        "--version",
    ],
    ..GETOPT
});
/// procps `watch`: `-d` takes its value only attached.
const WATCH: Getopt = wrapper(Getopt {
    short_values: "nq",
    short_optional: "d",
    short_flags: "bcegptwxhv",
    long_values: &["--interval", "--equexit"],
    long_optional: &["--differences"],
    long_flags: &[
        "--beep",
        "--color",
        "--errexit",
        "--chgexit",
        "--precise",
        "--no-title",
        "--no-wrap",
        "--exec",
        "--help",
        "--version",
    ],
    ..GETOPT
});
/// bash's `exec [-cl] [-a name]`.
const EXEC: Getopt = wrapper(Getopt {
    short_values: "a",
    short_flags: "cl",
    abbreviates: false,
    ..GETOPT
});
/// bash's `command [-pVv]`.
const COMMAND: Getopt = wrapper(Getopt {
    short_flags: "pvV",
    abbreviates: false,
    ..GETOPT
});
const SUDO: Getopt = wrapper(Getopt {
    short_values: "acCDgpRrTtUu",
    short_optional: "h",
    short_flags: "ABbEeHiKklNnPSsVv",
    long_values: &[
        "--auth-type",
        "--close-from",
        "--login-class",
        "--chdir",
        "--group",
        "--host",
        "--prompt",
        "--chroot",
        "--role",
        "--type",
        "--command-timeout",
        "--other-user",
        "--user",
    ],
    long_optional: &["--preserve-env"],
    long_flags: &[
        "--askpass",
        "--background",
        "--bell",
        "--edit",
        "--set-home",
        "--help",
        "--login",
        "--remove-timestamp",
        "--reset-timestamp",
        "--list",
        "--non-interactive",
        "--no-update",
        "--preserve-groups",
        "--stdin",
        "--shell",
        "--version",
        "--validate",
    ],
    ..GETOPT
});
const DOAS: Getopt = wrapper(Getopt {
    short_values: "Cu",
    short_flags: "Lns",
    abbreviates: false,
    ..GETOPT
});
/// findutils `xargs`: `-e`, `-i` and `-l` take their value only attached.
const XARGS: Getopt = wrapper(Getopt {
    short_values: "adEILnPs",
    short_optional: "eil",
    short_flags: "0oprtx",
    long_values: &[
        "--arg-file",
        "--delimiter",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--process-slot-var",
        "--max-chars",
    ],
    long_optional: &["--eof", "--replace"],
    long_flags: &[
        "--null",
        "--open-tty",
        "--interactive",
        "--no-run-if-empty",
        "--show-limits",
        "--verbose",
        "--exit",
        "--help",
        "--version",
    ],
    ..GETOPT
});

/// Whether bash would expand braces in `text`: a `{` followed by a `,` or
/// `..` before its `}` (`{a,b}`, `{1..3}`); `{}` and `{x}` stay as written.
fn expands_braces(text: &str) -> bool {
    text.match_indices('{').any(|(start, _)| {
        let rest = &text[start + 1..];
        let inside = rest.split('}').next().unwrap_or(rest);
        rest.contains('}') && (inside.contains(',') || inside.contains(".."))
    })
}

/// How many of `args` belong to the wrapper (its options, and `--`),
/// or `None` when they cannot be read (an option it is not known to take,
/// an argument that expands).
fn skip_options(args: &[Word], spec: Getopt) -> Option<usize> {
    spec.read(args).ok().map(|read| read.first_operand)
}

/// `nice`'s options, and its older `nice -5 cmd`.
fn nice_options(args: &[Word]) -> Option<usize> {
    let legacy = args.first().is_some_and(|word| {
        let digits = word.text.trim_start_matches('-');
        word.text.starts_with('-')
            && !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
    });
    if legacy {
        return skip_options(&args[1..], NICE).map(|skipped| skipped + 1);
    }
    skip_options(args, NICE)
}

/// Where a `find -exec` command ends: at `;`, or at a `+` right after
/// `{}` (elsewhere a `+` is an argument).
fn exec_end(words: &[Word], start: usize) -> usize {
    let mut end = start;
    while let Some(word) = words.get(end) {
        match word.text.as_str() {
            ";" => break,
            "+" if end > start && words[end - 1].text == "{}" => break,
            _ => end += 1,
        }
    }
    end
}

/// `env -S`'s string split into arguments as env splits it: blanks
/// separate, quotes group, backslash escapes (`\_` separates outside
/// quotes, `\c` ends the string), `#` starts a comment; a `$` expands (the
/// word is then not literal). `None`: what env refuses or the policy does
/// not read.
fn split_string(text: &str) -> Option<Vec<Word>> {
    let mut words = Vec::new();
    let mut word: Option<Word> = None;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    fn current(word: &mut Option<Word>) -> &mut Word {
        word.get_or_insert_with(|| Word::literal(""))
    }
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') => words.extend(word.take()),
            (None, '#') if word.is_none() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                current(&mut word);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), '\\') if matches!(chars.peek(), Some('\\' | '\'')) => {
                current(&mut word).text.extend(chars.next());
            }
            (Some('\''), c) => current(&mut word).text.push(c),
            (_, '\\') => match chars.next()? {
                '_' if quote.is_none() => words.extend(word.take()),
                'c' if quote.is_none() => break,
                escaped => current(&mut word).text.push(unescaped(escaped)?),
            },
            (_, '$') => {
                let word = current(&mut word);
                word.literal = false;
                word.text.push('$');
            }
            (_, c) => current(&mut word).text.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    words.extend(word);
    Some(words)
}

/// The character `env -S`'s `\x` stands for.
fn unescaped(escaped: char) -> Option<char> {
    Some(match escaped {
        '_' => ' ',
        'f' => '\x0c',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0b',
        '\\' | '"' | '\'' | '#' | '$' => escaped,
        _ => return None,
    })
}

/// Parses a script with the shell parser and walks its tree.
fn parse_script(walk: &mut Walk, script: &str, depth: usize) {
    if let Some(why) = too_deep_to_parse(script) {
        walk.unresolved(script, why);
        return;
    }
    match parse_program(script) {
        Some(program) => {
            let outer = walk.both_readings;
            walk.both_readings |= spaces_its_parentheses(script);
            for list in &program.complete_commands {
                walk.compound_list(list, depth);
            }
            walk.both_readings = outer;
        }
        None => walk.unresolved(script, "not shell syntax the parser reads"),
    }
}

/// Whether `script` has two opening or two closing parentheses with only
/// blanks between them, neither of which is half of an adjacent `((` or
/// `))`. The parser reads `( ( X ) )` as the arithmetic command `((X))`,
/// while bash reads `((` as arithmetic only when the two are adjacent and
/// so are the closing two, and runs nested subshells otherwise:
/// `( ( rm -rf / ) )` runs `rm`. (`$(( (1 + 2) * 3 ))` is arithmetic to
/// both: its spaced pair begins with the second half of `$((`.)
fn spaces_its_parentheses(script: &str) -> bool {
    let bytes = script.as_bytes();
    bytes.iter().enumerate().any(|(i, &paren)| {
        if paren != b'(' && paren != b')' {
            return false;
        }
        let rest = &bytes[i + 1..];
        let blanks = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        if blanks == 0 || rest.get(blanks) != Some(&paren) {
            return false;
        }
        match paren {
            b'(' => i == 0 || bytes[i - 1] != b'(',
            _ => rest.get(blanks + 1) != Some(&b')'),
        }
    })
}

/// How deep groups may nest (the parser recurses; so does the walk).
pub(crate) const MAX_NESTING: usize = 64;

/// How deep groups may nest in a script that holds `((`. Around an
/// arithmetic `((` or `$((` the parser tries each reading in turn, and its
/// time doubles with every level or two (`((( ( ( …` of 20 levels took a
/// second and a half, nested `$(( $(( …` of 20 six and a half): a hostile
/// command must not hold the daemon's decider.
pub(crate) const MAX_ARITHMETIC_NESTING: usize = 12;

/// Why `script` is not given to the parser, when it is not: it nests
/// deeper than the parser and the walk recurse safely, or its shape is one
/// around which the parser's time doubles with each level (`((`, or
/// parentheses left open), so a hostile command could hold the decider.
fn too_deep_to_parse(script: &str) -> Option<String> {
    let limit = if script.contains("((") {
        MAX_ARITHMETIC_NESTING
    } else {
        MAX_NESTING
    };
    if nesting(script) > limit {
        return Some(format!("nested more than {limit} levels deep"));
    }
    if unclosed_parentheses(script) > MAX_UNCLOSED {
        return Some(format!("more than {MAX_UNCLOSED} parentheses left open"));
    }
    None
}

/// An upper bound of how deep `script` nests: every bracket counts,
/// quoted or not, so a script this finds shallow is.
fn nesting(script: &str) -> usize {
    let (mut depth, mut deepest, mut backquotes) = (0usize, 0usize, 0usize);
    for c in script.chars() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            '`' => backquotes += 1,
            _ => {}
        }
    }
    deepest + backquotes / 2
}

/// How many parentheses may stay open before the parser is not asked:
/// it tries `(` and `((` at each, so its time doubles with every one
/// (20 take seconds, 30 minutes).
const MAX_UNCLOSED: usize = 12;

/// How many of `script`'s opening parentheses no later one closes,
/// quoted or not (so a script this finds closed is).
fn unclosed_parentheses(script: &str) -> usize {
    script.chars().fold(0usize, |open, c| match c {
        '(' => open + 1,
        ')' => open.saturating_sub(1),
        _ => open,
    })
}

fn parse_program(script: &str) -> Option<ast::Program> {
    let options = ParserOptions::default();
    let source = SourceInfo::default();
    // The parser is not ours: a panic in it is a command it cannot read.
    std::panic::catch_unwind(|| {
        let mut parser = Parser::new(std::io::Cursor::new(script.as_bytes()), &options, &source);
        parser.parse_program().ok()
    })
    .ok()
    .flatten()
}

fn parse_word(raw: &str) -> Option<Vec<WordPieceWithSource>> {
    let options = ParserOptions::default();
    std::panic::catch_unwind(|| word::parse(raw, &options).ok())
        .ok()
        .flatten()
}

/// The walk over the parser's tree.
impl Walk {
    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline) => {
                        self.pipeline(pipeline, depth)
                    }
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.ast_command(command, depth);
        }
    }

    fn ast_command(&mut self, command: &ast::Command, depth: usize) {
        match command {
            ast::Command::Simple(simple) => self.simple_command(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, depth);
                    }
                }
            }
            ast::Command::Function(function) => {
                self.unresolved(
                    &function.source,
                    format!("defines the function `{}`", function.fname),
                );
                let ast::FunctionBody(body, redirects) = &function.body;
                self.compound(body, depth);
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, depth);
                    }
                }
            }
            ast::Command::ExtendedTest(test) => self.extended_test(test, depth),
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(arithmetic) => self.arithmetic(&arithmetic.expr.value, depth),
            C::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value, depth);
                }
                self.compound_list(&clause.body.0, depth);
            }
            C::BraceGroup(ast::BraceGroupCommand(list))
            | C::Subshell(ast::SubshellCommand(list)) => self.compound_list(list, depth),
            C::ForClause(clause) => {
                let text = format!("for {} in", clause.variable_name);
                self.assignment(&clause.variable_name, &text);
                for value in clause.values.iter().flatten() {
                    self.word(&value.value, depth);
                }
                self.compound_list(&clause.body.0, depth);
            }
            C::CaseClause(clause) => {
                self.word(&clause.value.value, depth);
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, depth);
                    }
                }
            }
            C::IfClause(clause) => {
                self.compound_list(&clause.condition, depth);
                self.compound_list(&clause.then, depth);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.compound_list(condition, depth);
                    }
                    self.compound_list(&other.body, depth);
                }
            }
            C::WhileClause(ast::WhileOrUntilClauseCommand(condition, body))
            | C::UntilClause(ast::WhileOrUntilClauseCommand(condition, body)) => {
                self.compound_list(condition, depth);
                self.compound_list(&body.0, depth);
            }
        }
    }

    fn extended_test(&mut self, test: &ast::ExtendedTestExpr, depth: usize) {
        use ast::ExtendedTestExpr as T;
        match test {
            T::And(left, right) | T::Or(left, right) => {
                self.extended_test(left, depth);
                self.extended_test(right, depth);
            }
            T::Not(inner) | T::Parenthesized(inner) => self.extended_test(inner, depth),
            T::UnaryTest(predicate, word) => {
                let operand = self.word(&word.value, depth);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    self.variable_operand(&operand, &format!("{test}"), depth);
                }
            }
            T::BinaryTest(predicate, left, right) => {
                let left = self.word(&left.value, depth);
                let right = self.word(&right.value, depth);
                if compares_numbers(predicate) {
                    self.number_operands(&[&left, &right], &format!("{test}"), depth);
                }
            }
        }
    }

    /// An arithmetic expression runs the substitutions it holds; where the
    /// parser may have read nested subshells as one, it is also walked as
    /// the script bash would run (the stricter reading wins).
    fn arithmetic(&mut self, expression: &str, depth: usize) {
        if self.both_readings {
            self.script(expression, depth + 1);
        }
        self.evaluated(expression, &format!("(({expression}))"), depth);
    }

    /// What bash evaluates as arithmetic (an expression, a subscript, an
    /// offset): the substitutions it holds run, and a variable it reads
    /// is asked about (its value is evaluated in turn, and a subscript in
    /// it, `a[$(cmd)]`, runs commands).
    fn evaluated(&mut self, expression: &str, text: &str, depth: usize) {
        if expression.contains('$') || expression.contains('`') {
            self.word(expression, depth);
        }
        if reads_variables(expression) {
            self.unresolved(
                text,
                "arithmetic reads a variable, whose value bash evaluates in turn",
            );
        }
    }

    fn simple_command(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mut words = Vec::new();
        let items = simple.prefix.iter().flat_map(|prefix| prefix.0.iter());
        for item in items {
            match item {
                Item::AssignmentWord(assignment, word) => {
                    self.assign(assignment, &word.value, depth)
                }
                other => self.item(other, &mut words, depth),
            }
        }
        if let Some(name) = &simple.word_or_name {
            let word = self.word(&name.value, depth);
            words.push(word);
        }
        for item in simple.suffix.iter().flat_map(|suffix| suffix.0.iter()) {
            self.item(item, &mut words, depth);
        }
        self.command(&words, depth);
    }

    fn item(&mut self, item: &ast::CommandPrefixOrSuffixItem, words: &mut Vec<Word>, depth: usize) {
        use ast::CommandPrefixOrSuffixItem as Item;
        match item {
            Item::IoRedirect(redirect) => self.redirect(redirect, depth),
            Item::Word(word) => {
                let word = self.word(&word.value, depth);
                words.push(word);
            }
            Item::AssignmentWord(assignment, word) => {
                self.assignment_value(&assignment.value, depth);
                let mut word = self.word(&word.value, depth);
                word.literal &= matches!(assignment.value, ast::AssignmentValue::Scalar(_));
                words.push(word);
            }
            Item::ProcessSubstitution(_, ast::SubshellCommand(list)) => {
                self.compound_list(list, depth);
                words.push(Word {
                    text: "<(…)".into(),
                    literal: false,
                    home: false,
                });
            }
        }
    }

    fn assign(&mut self, assignment: &ast::Assignment, text: &str, depth: usize) {
        let name = match &assignment.name {
            ast::AssignmentName::VariableName(name) => name,
            ast::AssignmentName::ArrayElementName(name, index) => {
                self.evaluated(index, text, depth);
                name
            }
        };
        self.assignment(name, text);
        self.assignment_value(&assignment.value, depth);
    }

    fn assignment_value(&mut self, value: &ast::AssignmentValue, depth: usize) {
        match value {
            ast::AssignmentValue::Scalar(word) => {
                self.word(&word.value, depth);
            }
            ast::AssignmentValue::Array(items) => {
                for (key, word) in items {
                    if let Some(key) = key {
                        self.evaluated(&key.value, &format!("[{}]", key.value), depth);
                    }
                    self.word(&word.value, depth);
                }
            }
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, depth: usize) {
        use ast::{IoFileRedirectKind as Kind, IoFileRedirectTarget as Target, IoRedirect as R};
        match redirect {
            R::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    Kind::Write | Kind::Append | Kind::Clobber | Kind::ReadAndWrite
                );
                match target {
                    Target::Filename(word) => {
                        let target = self.word(&word.value, depth);
                        if writes {
                            self.write(&target, &format!("{redirect}"));
                        }
                    }
                    Target::Fd(_) => {}
                    Target::Duplicate(word) => {
                        let target = self.word(&word.value, depth);
                        let fd = target.text.chars().all(|c| c.is_ascii_digit() || c == '-');
                        if !(target.literal && fd) && writes_or_dups_output(kind) {
                            // `>& file` writes the file (stdout and stderr).
                            self.write(&target, &format!("{redirect}"));
                        }
                    }
                    Target::ProcessSubstitution(_, ast::SubshellCommand(list)) => {
                        self.compound_list(list, depth)
                    }
                }
            }
            R::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.here_document(&doc.doc.value, depth);
                }
            }
            R::HereString(_, word) => {
                self.word(&word.value, depth);
            }
            R::OutputAndError(word, _) => {
                let target = self.word(&word.value, depth);
                self.write(&target, &format!("{redirect}"));
            }
        }
    }

    /// An unquoted here-document's body expands as in double quotes, but
    /// its quotes are text: the word parser takes them for quotes, which
    /// could hide a substitution (`'$(x)'` runs `x`), so a body with both
    /// is asked about as well as walked.
    fn here_document(&mut self, body: &str, depth: usize) {
        self.word(body, depth);
        let quotes = body.contains(['\'', '"']);
        let runs = ["$(", "`", "${", "$["]
            .iter()
            .any(|start| body.contains(start));
        if quotes && runs {
            // Bash's reading, near enough: every quote a character.
            let mut text = String::with_capacity(body.len() * 2);
            for c in body.chars() {
                if matches!(c, '\'' | '"') {
                    text.push('\\');
                }
                text.push(c);
            }
            self.word(&text, depth);
            self.unresolved(
                body,
                "a here-document's quotes are text, so what its substitutions run is not sure",
            );
        }
    }

    /// A word as the program would receive it, walking what it runs
    /// (command and process substitutions, in parameter defaults and
    /// arithmetic too).
    fn word(&mut self, raw: &str, depth: usize) -> Word {
        let mut word = Word {
            text: String::new(),
            literal: true,
            home: false,
        };
        match parse_word(raw) {
            Some(pieces) => {
                for (at, piece) in pieces.iter().enumerate() {
                    self.piece(raw, piece, at == 0, false, &mut word, depth);
                }
                if old_arithmetic(&pieces) {
                    word.literal = false;
                    self.unresolved(
                        raw,
                        "`$[…]` is arithmetic, which evaluates the variables it names",
                    );
                }
            }
            None => {
                word.text = raw.to_string();
                word.literal = false;
                if raw.contains("$(")
                    || raw.contains('`')
                    || raw.contains("<(")
                    || raw.contains(">(")
                {
                    self.unresolved(raw, "a word the parser cannot read runs a command");
                }
            }
        }
        word
    }

    fn piece(
        &mut self,
        raw: &str,
        piece: &WordPieceWithSource,
        first: bool,
        quoted: bool,
        word: &mut Word,
        depth: usize,
    ) {
        let source = raw.get(piece.start_index..piece.end_index).unwrap_or(raw);
        match &piece.piece {
            WordPiece::Text(text) => {
                if !quoted && (text.contains(['*', '?', '[', '(']) || expands_braces(text)) {
                    word.literal = false;
                }
                word.text.push_str(text);
            }
            WordPiece::SingleQuotedText(text) => word.text.push_str(text),
            WordPiece::AnsiCQuotedText(text) => {
                word.literal &= !text.contains('\\');
                word.text.push_str(text);
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                for piece in inner {
                    self.piece(raw, piece, false, true, word, depth);
                }
            }
            WordPiece::TildePrefix(user) => {
                word.home = first && user.is_empty();
                word.literal = false;
                word.text.push('~');
                word.text.push_str(user);
            }
            WordPiece::EscapeSequence(escaped) => {
                let mut chars = escaped.chars();
                if chars.next() == Some('\\') {
                    word.text.extend(chars.filter(|c| *c != '\n'));
                } else {
                    word.text.push_str(escaped);
                }
            }
            WordPiece::ParameterExpansion(expression) => {
                word.literal = false;
                word.home = false;
                word.text.push_str(source);
                self.parameter_expansion(expression, source, depth);
            }
            WordPiece::CommandSubstitution(script) => {
                word.literal = false;
                word.home = false;
                word.text.push_str(source);
                self.substitution(script, depth);
            }
            WordPiece::BackquotedCommandSubstitution(script) => {
                word.literal = false;
                word.home = false;
                word.text.push_str(source);
                let body = source
                    .strip_prefix('`')
                    .and_then(|inner| inner.strip_suffix('`'))
                    .unwrap_or(script);
                for reading in backquoted_readings(body) {
                    self.substitution(&reading, depth);
                }
            }
            WordPiece::ArithmeticExpression(expression) => {
                word.literal = false;
                word.home = false;
                word.text.push_str(source);
                self.arithmetic(&expression.value, depth);
            }
        }
    }

    /// `${…}`: the words it holds, its subscript and offsets (arithmetic);
    /// an indirect name, a prompt expansion and an assignment to a name
    /// that changes what runs are asked about.
    fn parameter_expansion(&mut self, expression: &ParameterExpr, source: &str, depth: usize) {
        use word::{Parameter, ParameterTransformOp};
        for nested in parameter_words(expression) {
            self.word(nested, depth);
        }
        if let ParameterExpr::Substring { offset, length, .. } = expression {
            self.evaluated(&offset.value, source, depth);
            if let Some(length) = length {
                self.evaluated(&length.value, source, depth);
            }
        }
        if let ParameterExpr::Transform {
            op: ParameterTransformOp::PromptExpand,
            ..
        } = expression
        {
            self.unresolved(
                source,
                "`${x@P}` expands its value as a prompt, running the commands it holds",
            );
        }
        let Some((parameter, indirect)) = expansion_parameter(expression) else {
            return;
        };
        if indirect {
            self.unresolved(
                source,
                "`${!x}` expands the variable x names, whose subscript can run commands",
            );
        }
        if let Parameter::NamedWithIndex { index, .. } = parameter {
            self.evaluated(index, source, depth);
        }
        if let ParameterExpr::AssignDefaultValues { .. } = expression {
            if let Parameter::Named(name)
            | Parameter::NamedWithIndex { name, .. }
            | Parameter::NamedWithAllIndices { name, .. } = parameter
            {
                self.assignment(name, source);
            }
        }
    }

    /// `$(script)`: its parts, one level deeper.
    fn substitution(&mut self, script: &str, depth: usize) {
        self.script(script, depth + 1);
    }
}

/// The script bash runs for the body of `` `…` ``: a backslash before
/// `$`, `` ` `` or `\` is removed first, so `` `echo "\$(x)"` `` runs
/// `x`. Inside double quotes bash removes one before `"` as well; where
/// the body has `\"`, both readings are walked (the stricter wins).
fn backquoted_readings(body: &str) -> Vec<String> {
    let unescape = |also: Option<char>| {
        let mut out = String::with_capacity(body.len());
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match chars.peek() {
                Some(&next)
                    if c == '\\' && (matches!(next, '$' | '`' | '\\') || Some(next) == also) =>
                {
                    out.push(next);
                    chars.next();
                }
                _ => out.push(c),
            }
        }
        out
    };
    let mut readings = vec![unescape(None)];
    if body.contains("\\\"") {
        readings.push(unescape(Some('"')));
    }
    readings
}

/// The parameter an expansion names, and whether through another
/// (`${!x}`); `None` for the lists of names and keys.
fn expansion_parameter(expression: &ParameterExpr) -> Option<(&word::Parameter, bool)> {
    use ParameterExpr as P;
    match expression {
        P::Parameter {
            parameter,
            indirect,
        }
        | P::UseDefaultValues {
            parameter,
            indirect,
            ..
        }
        | P::AssignDefaultValues {
            parameter,
            indirect,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            ..
        }
        | P::UseAlternativeValue {
            parameter,
            indirect,
            ..
        }
        | P::ParameterLength {
            parameter,
            indirect,
        }
        | P::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | P::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            ..
        }
        | P::Substring {
            parameter,
            indirect,
            ..
        }
        | P::Transform {
            parameter,
            indirect,
            ..
        }
        | P::UppercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | P::UppercasePattern {
            parameter,
            indirect,
            ..
        }
        | P::LowercaseFirstChar {
            parameter,
            indirect,
            ..
        }
        | P::LowercasePattern {
            parameter,
            indirect,
            ..
        }
        | P::ReplaceSubstring {
            parameter,
            indirect,
            ..
        } => Some((parameter, *indirect)),
        P::VariableNames { .. } | P::MemberKeys { .. } => None,
    }
}

/// Whether a word holds `$[…]`, bash's old arithmetic expansion (the
/// word parser reads a `$` and text).
fn old_arithmetic(pieces: &[WordPieceWithSource]) -> bool {
    pieces.windows(2).any(|pair| {
        matches!((&pair[0].piece, &pair[1].piece),
            (WordPiece::Text(dollar), WordPiece::Text(next)) if dollar.ends_with('$') && next.starts_with('['))
    }) || pieces.iter().any(|piece| match &piece.piece {
        WordPiece::Text(text) => text.contains("$["),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            old_arithmetic(inner)
        }
        _ => false,
    })
}

/// Whether an arithmetic expression (or a subscript, which bash
/// evaluates as one) reads a variable: a bare name, `$x`, or what a
/// substitution prints. Bash evaluates such a value as an expression in
/// turn, and a subscript in it (`a[$(cmd)]`) runs commands.
fn reads_variables(expression: &str) -> bool {
    match parse_word(expression) {
        Some(pieces) => pieces
            .iter()
            .any(|piece| piece_reads_variables(&piece.piece)),
        None => expression
            .chars()
            .any(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '`')),
    }
}

fn piece_reads_variables(piece: &WordPiece) -> bool {
    match piece {
        WordPiece::Text(text)
        | WordPiece::SingleQuotedText(text)
        | WordPiece::AnsiCQuotedText(text)
        | WordPiece::EscapeSequence(text) => names_a_variable(text),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            inner
                .iter()
                .any(|piece| piece_reads_variables(&piece.piece))
        }
        WordPiece::ParameterExpansion(expression) => !shell_number(expression),
        WordPiece::ArithmeticExpression(inner) => reads_variables(&inner.value),
        WordPiece::TildePrefix(_)
        | WordPiece::CommandSubstitution(_)
        | WordPiece::BackquotedCommandSubstitution(_) => true,
    }
}

/// Whether an expansion is a number the shell makes: `$#`, `$?`, `$$`,
/// `$!`, `${#x}`.
fn shell_number(expression: &ParameterExpr) -> bool {
    use word::{Parameter, SpecialParameter as S};
    matches!(
        expression,
        ParameterExpr::ParameterLength { .. }
            | ParameterExpr::Parameter {
                parameter: Parameter::Special(
                    S::PositionalParameterCount
                        | S::LastExitStatus
                        | S::ProcessId
                        | S::LastBackgroundProcessId
                ),
                indirect: false,
            }
    )
}

/// Whether arithmetic text names a variable: a name that is not part of
/// a number (`0x1f`, `16#ff`, `64#_@`).
fn names_a_variable(text: &str) -> bool {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '#' | '@' | '_'))
            {
                chars.next();
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            return true;
        }
    }
    false
}

/// The comparisons of `test` and `[[ ]]` that compare numbers.
const ARITHMETIC_TESTS: [&str; 6] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Whether a `[[ ]]` comparison compares numbers (evaluating its operands
/// as arithmetic).
fn compares_numbers(predicate: &ast::BinaryPredicate) -> bool {
    use ast::BinaryPredicate as B;
    matches!(
        predicate,
        B::ArithmeticEqualTo
            | B::ArithmeticNotEqualTo
            | B::ArithmeticLessThan
            | B::ArithmeticLessThanOrEqualTo
            | B::ArithmeticGreaterThan
            | B::ArithmeticGreaterThanOrEqualTo
    )
}

/// Whether `text` is a plain integer, which an arithmetic test compares
/// without evaluating anything.
fn is_integer(text: &str) -> bool {
    let digits = text.trim().trim_start_matches(['-', '+']);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Whether a word is a number whatever the environment: a plain integer,
/// or a number the shell makes (`$#`, `$?`, `${#x}`).
fn is_number(word: &Word) -> bool {
    fn number(piece: &WordPiece) -> bool {
        match piece {
            WordPiece::Text(digits) => digits.chars().all(|c| c.is_ascii_digit()),
            WordPiece::ParameterExpansion(expression) => shell_number(expression),
            WordPiece::DoubleQuotedSequence(inner) => {
                inner.iter().all(|piece| number(&piece.piece))
            }
            _ => false,
        }
    }
    if word.literal {
        is_integer(&word.text)
    } else {
        parse_word(&word.text).is_some_and(|pieces| pieces.iter().all(|piece| number(&piece.piece)))
    }
}

/// Whether `text` is a shell variable's name (no subscript, nothing that
/// expands).
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn writes_or_dups_output(kind: &ast::IoFileRedirectKind) -> bool {
    !matches!(
        kind,
        ast::IoFileRedirectKind::Read | ast::IoFileRedirectKind::DuplicateInput
    )
}

/// The words inside a parameter expansion (`${X:-word}` and the like),
/// which may run commands of their own.
fn parameter_words(expression: &ParameterExpr) -> Vec<&str> {
    use ParameterExpr as P;
    let found: Vec<Option<&String>> = match expression {
        P::UseDefaultValues {
            default_value: value,
            ..
        }
        | P::AssignDefaultValues {
            default_value: value,
            ..
        }
        | P::IndicateErrorIfNullOrUnset {
            error_message: value,
            ..
        }
        | P::UseAlternativeValue {
            alternative_value: value,
            ..
        }
        | P::RemoveSmallestSuffixPattern { pattern: value, .. }
        | P::RemoveLargestSuffixPattern { pattern: value, .. }
        | P::RemoveSmallestPrefixPattern { pattern: value, .. }
        | P::RemoveLargestPrefixPattern { pattern: value, .. }
        | P::UppercaseFirstChar { pattern: value, .. }
        | P::UppercasePattern { pattern: value, .. }
        | P::LowercaseFirstChar { pattern: value, .. }
        | P::LowercasePattern { pattern: value, .. } => vec![value.as_ref()],
        P::ReplaceSubstring {
            pattern,
            replacement,
            ..
        } => vec![Some(pattern), replacement.as_ref()],
        _ => Vec::new(),
    };
    found.into_iter().flatten().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(command: &str) -> Vec<String> {
        parts(command)
            .into_iter()
            .map(|part| match part {
                ShellPart::Command { words, .. } => words.join(" "),
                ShellPart::Write { target, .. } => format!("write {target}"),
                ShellPart::Fine { text, .. } => format!("fine {text}"),
                ShellPart::Unresolved { why, .. } => format!("? {why}"),
            })
            .collect()
    }

    #[test]
    fn wrappers_unwrap() {
        assert_eq!(commands("timeout 5 kill -9 1"), ["kill -9 1"]);
        assert_eq!(commands("timeout -s KILL 5 kill 1"), ["kill 1"]);
        assert_eq!(commands("nice -n 5 kill 1"), ["kill 1"]);
        assert_eq!(commands("env X=1 kill 1"), ["kill 1"]);
        assert_eq!(commands("stdbuf -o0 kill 1"), ["kill 1"]);
        assert_eq!(commands("nohup kill 1"), ["kill 1"]);
        assert_eq!(commands("command kill 1"), ["kill 1"]);
        assert_eq!(commands("exec kill 1"), ["kill 1"]);
        assert_eq!(commands("time kill 1"), ["kill 1"]);
        assert_eq!(commands("xargs -0 kill"), ["xargs -0 kill", "kill"]);
        assert_eq!(
            commands("sudo -u root kill 1"),
            ["sudo -u root kill 1", "kill 1"]
        );
        assert_eq!(commands("env"), ["env"]);
        assert_eq!(commands("nice"), ["nice"]);
        // A wrapped program still writes what its arguments name.
        assert_eq!(commands("timeout 5 rm -rf /"), ["rm -rf /", "write /"]);
    }

    #[test]
    fn programs_write_what_their_arguments_name() {
        assert_eq!(commands("sort -o out in"), ["sort -o out in", "write out"]);
        assert_eq!(commands("cp -r a b"), ["cp -r a b", "write b"]);
        assert_eq!(
            commands("find d -delete -fprint f"),
            ["find d -delete -fprint f", "write d", "write f"]
        );
        assert_eq!(
            commands("find d e -exec touch {} +"),
            [
                "find d e -exec touch {} +",
                "touch {}",
                "write d",
                "write e"
            ]
        );
        assert_eq!(
            commands("git -C x diff --output=/o"),
            ["git -C x diff --output=/o", "write /o"]
        );
        assert_eq!(
            commands("cd x && touch y")[2],
            "? a relative path after `cd`, whose directory is not known"
        );
        assert!(commands("xargs touch")[2].starts_with("? `xargs` adds words"));
        assert!(commands("cp --bogus a b")[1].starts_with("? `--bogus`"));
        assert!(commands("sort $F")[1].starts_with("? the argument `$F` expands"));
    }

    fn unresolved(command: &str) -> bool {
        commands(command).iter().any(|part| part.starts_with("? "))
    }

    #[test]
    fn builtins_that_assign_names_are_judged_by_the_names() {
        for command in [
            "printf -v PATH /tmp",
            "printf -vPATH /tmp",
            "read PATH",
            "read -r -p prompt LD_PRELOAD",
            "read -a 'a[$(x)]'",
            "mapfile PATH",
            "readarray -t -n 3 BASH_ENV",
            "getopts ab PATH",
            "wait -n -p PATH",
            "hash -p /tmp/e ls",
            "unset PATH",
            "unset 'a[i]'",
            "let i++",
            "test \"$n\" -eq 3",
            "[ a -lt 1 ]",
            "test -v 'a[0]'",
            "set -euo allexport",
            "set -ek",
            "declare -i n=1",
            "export \"$n\"=1",
        ] {
            assert!(unresolved(command), "{command}");
        }
        for command in [
            "printf -v out '%s' x",
            "read -r -p PATH line",
            "mapfile -t lines",
            "unset x",
            "let 1+2",
            "test 3 -eq 3",
            "test -f x",
            "test $# -gt 1",
            "[[ ${#list[@]} -eq 0 ]]",
            "set -euo pipefail",
            "set +a",
            "declare -a list=(1 2)",
            "export FOO=bar",
            "echo $(( 1 + $# ))",
        ] {
            assert!(!unresolved(command), "{command}");
        }
        // `mapfile -C` runs its callback, with words it adds.
        let callback = commands("mapfile -C 'rm -rf /' -c 1 lines");
        assert!(callback.contains(&"rm -rf /".to_string()), "{callback:?}");
        assert!(unresolved("mapfile -C true lines"));
    }

    #[test]
    fn backquotes_lose_the_backslashes_bash_removes() {
        assert_eq!(backquoted_readings(r#"echo "\$(x)""#), [r#"echo "$(x)""#]);
        assert_eq!(backquoted_readings(r"a \` \\ \n"), [r"a ` \ \n"]);
        assert_eq!(
            backquoted_readings(r#"echo \"$(x)\""#),
            [r#"echo \"$(x)\""#, r#"echo "$(x)""#]
        );
    }

    #[test]
    fn elsewhere_unknows_relative_writes_only_inside() {
        let mut walk = Walk::default();
        walk.elsewhere(true, |walk| walk.write(&Word::literal("out"), "> out"));
        walk.write(&Word::literal("log"), "> log");
        let parts = walk.finish();
        assert!(matches!(parts[0], ShellPart::Unresolved { .. }));
        assert!(matches!(&parts[1], ShellPart::Write { target, .. } if target == "log"));
    }

    #[test]
    fn wrappers_read_their_options_as_getopt_does() {
        assert_eq!(
            commands("env -iS'rm -rf x' ls"),
            ["rm -rf x ls", "write x", "write ls"]
        );
        assert_eq!(commands("env -S'-i X=1 kill' 1"), ["kill 1"]);
        assert_eq!(commands("env -S'a\\_b \\c rest' c"), ["a b c"]);
        assert!(commands("env -S'${X}' ls")[0].starts_with("? `env`: the argument"));
        assert!(commands("env -C d touch x")[1].starts_with("? a relative path"));
        assert_eq!(commands("watch -d ls x"), ["ls x"]);
        assert_eq!(commands("watch -x sh -c 'kill 1'"), ["kill 1"]);
        assert_eq!(
            commands("xargs -i kill {}"),
            ["xargs -i kill {}", "kill {}"]
        );
        assert_eq!(
            commands("xargs -I {} kill {}"),
            ["xargs -I {} kill {}", "kill {}"]
        );
        assert_eq!(commands("nice -5 kill 1"), ["kill 1"]);
        assert!(commands("timeout --frob 5 kill 1")[0].starts_with("? `timeout`'s options"));
        assert_eq!(
            commands("/usr/bin/time -ao f kill 1"),
            ["write f", "kill 1"]
        );
        assert_eq!(
            commands("find d -exec kill + {} +"),
            ["find d -exec kill + {} +", "kill + {}"]
        );
    }

    #[test]
    fn options_that_run_or_write_elsewhere() {
        assert!(commands("git --exec-path=/x log")[1].starts_with("? `--exec-path`"));
        assert!(commands("git --git-dir=/x log")[1].starts_with("? `--git-dir`"));
        assert!(commands("git log -c")[1..].is_empty());
        assert!(commands("npm run t --pref /x")[1].starts_with("? `--prefix`"));
        assert!(commands("cargo -Zunstable-options test")[1].starts_with("? `-Z`"));
        assert_eq!(
            commands("cargo test --target-dir=t -- --logfile l"),
            [
                "cargo test --target-dir=t -- --logfile l",
                "write t",
                "write l"
            ]
        );
        assert_eq!(commands("cargo test -- --config x").len(), 1);
    }

    #[test]
    fn risky_assignments_are_asked() {
        assert_eq!(commands("PATH=/tmp ls").len(), 2);
        assert_eq!(commands("X=1 ls"), ["ls"]);
    }

    #[test]
    fn argv_runs_the_shell_script() {
        let argv = ["bash", "-lc", "cargo test"].map(String::from);
        assert!(
            matches!(&argv_parts(&argv)[..], [ShellPart::Command { words, .. }] if words.join(" ") == "cargo test")
        );
        let argv = ["bash", "-lc", "rm -rf /"].map(String::from);
        assert!(matches!(
            &argv_parts(&argv)[..],
            [ShellPart::Command { words, .. }, ShellPart::Write { target, .. }]
                if words[0] == "rm" && target == "/"
        ));
    }

    #[test]
    fn parentheses_left_open_are_not_parsed() {
        // Parsed, these would take the parser far longer than a minute.
        let open = format!("{}ls ;;", "( ".repeat(40));
        assert!(
            matches!(&parts(&open)[..], [ShellPart::Unresolved { why, .. }] if why.contains("left open"))
        );
        assert_eq!(unclosed_parentheses("(a) ((b)) (c"), 1);
    }

    #[test]
    fn too_large_and_too_deep_are_unresolved() {
        let big = format!("echo {}", "a".repeat(MAX_COMMAND_BYTES));
        assert!(matches!(&parts(&big)[..], [ShellPart::Unresolved { .. }]));
        let mut deep = "ls".to_string();
        for _ in 0..(MAX_SCRIPT_DEPTH + 2) {
            deep = format!("eval {deep}");
        }
        assert!(parts(&deep)
            .iter()
            .any(|part| matches!(part, ShellPart::Unresolved { .. })));
    }
}
