//! The files a program writes because its arguments name them: `sort -o
//! F`, `cp SRC DST`, `dd of=F`, `sed -i`, `curl -o F`, `rm F`, ... Each is
//! a write the `Write`/`Edit` rules judge, as a redirection is.
//!
//! The knowledge is data: [`WRITERS`] says, program by program, which
//! options take a value, which options' values are written, and which
//! operands are. Reading a command line by it is getopt's reading (short
//! options in clusters, `-oFILE`, `--output=FILE`, `--` ends the options).
//! What cannot be read without guessing is reported, never guessed: an
//! argument that expands (it could be an option that writes), an option
//! the table does not know for a program whose written operands it would
//! shift, an option that reads more options from a file.

use super::word::Word;

/// Which of a program's operands (its words that are not options) it
/// writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    /// None: only option values name written files.
    None,
    /// Every operand (`rm`, `touch`, `tee`).
    All,
    /// Every operand after the first, which is a mode or an owner
    /// (`chmod`, `chown`); all of them with a `reference` option.
    AllButFirst,
    /// The last, the destination (`cp`, `install`); none when a target
    /// option names the destination.
    Last,
    /// The link's name: the last operand, or with one operand alone its
    /// last component in the working directory (`ln`).
    LinkName,
    /// Every operand after the script (the first operand, unless a script
    /// option gave it): `sed -i`.
    AfterScript,
}

/// How one program's command line names what it writes.
#[derive(Debug)]
pub(crate) struct Writer {
    /// The program's names.
    pub(crate) programs: &'static [&'static str],
    /// Short options (one letter each) that take a value.
    short_values: &'static str,
    /// Short options whose value, if any, is attached (`sed -i.bak`).
    short_optional: &'static str,
    /// Long options that take a value (the next word, or after `=`).
    long_values: &'static [&'static str],
    /// Known short flags; `None`: any other short option is taken for a
    /// flag (safe when no operand's place depends on it).
    short_flags: Option<&'static str>,
    /// Known long flags (an optional `=value` allowed).
    long_flags: &'static [&'static str],
    /// Options whose value is a file written (`-o`, `--output`, `of`).
    writes_value: &'static [&'static str],
    /// Options whose value is a directory written into (`cp -t`): the
    /// operands are then all read.
    target_dir: &'static [&'static str],
    /// Options without which no operand is written (`sed`'s `-i`);
    /// empty: always.
    operands_when: &'static [&'static str],
    /// The operands written.
    operands: Operands,
    /// Options with which every operand is written (`chmod
    /// --reference`), or which give the script (`sed -e`).
    shifts_first: &'static [&'static str],
    /// `key=value` operands whose value is written (`dd of=F`).
    assignments: &'static [&'static str],
    /// Options that write into the working directory (or the directory
    /// `target_dir` names) a file whose name the command line does not
    /// give (`curl -O`); a program that does so by default lists `""`.
    writes_in_dir: &'static [&'static str],
    /// Options with which no default write happens (`wget -O -`, `--spider`).
    no_default_write: &'static [&'static str],
    /// Options that read more options from elsewhere (`curl -K`): asked.
    unknowable: &'static [&'static str],
}

const fn writer(programs: &'static [&'static str], operands: Operands) -> Writer {
    Writer {
        programs,
        short_values: "",
        short_optional: "",
        long_values: &[],
        short_flags: None,
        long_flags: &[],
        writes_value: &[],
        target_dir: &[],
        operands_when: &[],
        operands,
        shifts_first: &[],
        assignments: &[],
        writes_in_dir: &[],
        no_default_write: &[],
        unknowable: &[],
    }
}

/// `cp`, `mv`, `install`, `ln`: their options (coreutils 9).
const COPY_LONG_VALUES: &[&str] = &[
    "--target-directory",
    "--suffix",
    "--mode",
    "--owner",
    "--group",
    "--strip-program",
    "--no-preserve",
];
const COPY_LONG_FLAGS: &[&str] = &[
    "--archive",
    "--attributes-only",
    "--backup",
    "--copy-contents",
    "--debug",
    "--dereference",
    "--force",
    "--interactive",
    "--link",
    "--no-clobber",
    "--no-dereference",
    "--no-target-directory",
    "--one-file-system",
    "--parents",
    "--preserve",
    "--recursive",
    "--reflink",
    "--remove-destination",
    "--sparse",
    "--strip-trailing-slashes",
    "--symbolic-link",
    "--update",
    "--verbose",
    "--context",
    "--exchange",
    "--keep-directory-symlink",
    "--compare",
    "--directory",
    "--preserve-context",
    "--preserve-timestamps",
    "--strip",
    "--logical",
    "--physical",
    "--relative",
    "--symbolic",
    "--no-copy",
];

/// `cp`, `mv`, `install`, `ln`: the long options they share, a target
/// directory option (`-t`), and their own short options.
const fn copier(
    programs: &'static [&'static str],
    short_values: &'static str,
    short_flags: &'static str,
    operands: Operands,
) -> Writer {
    Writer {
        short_values,
        long_values: COPY_LONG_VALUES,
        short_flags: Some(short_flags),
        long_flags: COPY_LONG_FLAGS,
        target_dir: &["-t", "--target-directory"],
        ..writer(programs, operands)
    }
}

/// `chmod`, `chown`, `chgrp`: the long flags they share.
const CHANGE_LONG_FLAGS: &[&str] = &[
    "--changes",
    "--silent",
    "--quiet",
    "--verbose",
    "--recursive",
    "--no-preserve-root",
    "--preserve-root",
    "--dereference",
    "--no-dereference",
];

/// The programs whose arguments name files they write.
pub(crate) const WRITERS: &[Writer] = &[
    Writer {
        short_values: "ktSTo",
        long_values: &[
            "--key",
            "--field-separator",
            "--buffer-size",
            "--temporary-directory",
            "--output",
            "--parallel",
            "--batch-size",
            "--files0-from",
            "--compress-program",
            "--random-source",
            "--sort",
        ],
        writes_value: &["-o", "--output"],
        ..writer(&["sort"], Operands::None)
    },
    copier(&["cp"], "St", "abdfHilLnPpRrsTuvxZ", Operands::Last),
    // `mv` removes its sources: they are written too.
    copier(&["mv"], "St", "bfinTuvZ", Operands::All),
    Writer {
        // `install -d DIR...` creates every operand.
        shifts_first: &["-d", "--directory"],
        ..copier(&["install"], "mogSt", "bcCdDpsTvZ", Operands::Last)
    },
    copier(&["ln"], "St", "bdFfiLnPrsTv", Operands::LinkName),
    Writer {
        assignments: &["of"],
        ..writer(&["dd"], Operands::None)
    },
    Writer {
        long_flags: &["--append", "--ignore-interrupts", "--output-error"],
        ..writer(&["tee"], Operands::All)
    },
    Writer {
        short_values: "efl",
        short_optional: "i",
        long_values: &["--expression", "--file", "--line-length"],
        short_flags: Some("nrsuzEb"),
        long_flags: &[
            "--in-place",
            "--quiet",
            "--silent",
            "--regexp-extended",
            "--separate",
            "--unbuffered",
            "--null-data",
            "--posix",
            "--debug",
            "--sandbox",
            "--follow-symlinks",
            "--binary",
        ],
        operands_when: &["-i", "--in-place"],
        shifts_first: &["-e", "--expression", "-f", "--file"],
        ..writer(&["sed"], Operands::AfterScript)
    },
    Writer {
        short_values: "sr",
        long_values: &["--size", "--reference"],
        ..writer(&["truncate"], Operands::All)
    },
    Writer {
        short_values: "dtr",
        long_values: &["--date", "--reference", "--time"],
        ..writer(&["touch"], Operands::All)
    },
    Writer {
        short_values: "m",
        long_values: &["--mode", "--context"],
        ..writer(&["mkdir", "mkfifo", "mknod"], Operands::All)
    },
    Writer {
        short_values: "ns",
        long_values: &["--iterations", "--size", "--random-source", "--remove"],
        ..writer(&["shred"], Operands::All)
    },
    Writer {
        long_flags: &[
            "--force",
            "--interactive",
            "--one-file-system",
            "--no-preserve-root",
            "--preserve-root",
            "--recursive",
            "--dir",
            "--verbose",
            "--ignore-fail-on-non-empty",
            "--parents",
        ],
        ..writer(&["rm", "rmdir", "unlink"], Operands::All)
    },
    // A mode may look like an option (`chmod -w f`): only known flags.
    Writer {
        long_values: &["--reference"],
        short_flags: Some("cfvR"),
        long_flags: CHANGE_LONG_FLAGS,
        shifts_first: &["--reference"],
        ..writer(&["chmod"], Operands::AllButFirst)
    },
    Writer {
        long_values: &["--reference", "--from"],
        short_flags: Some("cfvRHLPh"),
        long_flags: CHANGE_LONG_FLAGS,
        shifts_first: &["--reference"],
        ..writer(&["chown", "chgrp"], Operands::AllButFirst)
    },
    Writer {
        writes_value: &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        ],
        short_values: "oDc",
        long_values: &[
            "--output",
            "--dump-header",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--hsts",
            "--alt-svc",
            "--output-dir",
        ],
        target_dir: &["--output-dir"],
        writes_in_dir: &["-O", "--remote-name", "--remote-name-all", "-J"],
        unknowable: &["-K", "--config"],
        ..writer(&["curl"], Operands::None)
    },
    Writer {
        writes_value: &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
        ],
        short_values: "OoaP",
        long_values: &[
            "--output-document",
            "--output-file",
            "--append-output",
            "--directory-prefix",
        ],
        target_dir: &["-P", "--directory-prefix"],
        writes_in_dir: &[""],
        no_default_write: &["-O", "--output-document", "--spider"],
        unknowable: &["-e", "--execute", "--config", "-i", "--input-file"],
        ..writer(&["wget"], Operands::None)
    },
];

/// `git`'s subcommands that write a file an option names.
pub(crate) const GIT_WRITERS: &[Writer] = &[
    Writer {
        writes_value: &["--output"],
        long_values: &["--output"],
        ..writer(
            &[
                "diff",
                "log",
                "show",
                "diff-files",
                "diff-index",
                "diff-tree",
                "range-diff",
                "whatchanged",
                "stash",
            ],
            Operands::None,
        )
    },
    Writer {
        writes_value: &["-o", "--output-directory"],
        short_values: "o",
        long_values: &["--output-directory"],
        ..writer(&["format-patch"], Operands::None)
    },
    Writer {
        writes_value: &["-o", "--output"],
        short_values: "o",
        long_values: &["--output"],
        ..writer(&["archive"], Operands::None)
    },
];

/// The writer of `program`, if it writes by its arguments.
pub(crate) fn writer_of<'t>(table: &'t [Writer], program: &str) -> Option<&'t Writer> {
    table
        .iter()
        .find(|writer| writer.programs.contains(&program))
}

/// What a command line writes, as read by its program's [`Writer`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// The files (and directories) written, as the command names them.
    pub(crate) paths: Vec<Word>,
    /// Why the writes cannot be known, if they cannot.
    pub(crate) unknown: Option<String>,
}

/// One option as read: its name as written (`-o`, `--output`) and its
/// value, if it took one.
#[derive(Debug)]
struct Seen {
    name: String,
    value: Option<Word>,
}

impl Writer {
    /// Reads `args` (the words after the program's name).
    pub(crate) fn written(&self, args: &[Word]) -> Written {
        let mut written = Written::default();
        let (options, operands) = match self.read(args) {
            Ok(read) => read,
            Err(why) => {
                written.unknown = Some(why);
                return written;
            }
        };
        let has = |names: &[&str]| options.iter().any(|seen| names.contains(&&*seen.name));
        if let Some(seen) = options
            .iter()
            .find(|seen| self.unknowable.contains(&&*seen.name))
        {
            written.unknown = Some(format!(
                "`{}` reads options the command line does not show",
                seen.name
            ));
            return written;
        }
        for seen in &options {
            if let Some(value) = &seen.value {
                if self.writes_value.contains(&&*seen.name) && value.text != "-" {
                    written.paths.push(value.clone());
                }
            }
        }
        let target = options
            .iter()
            .rev()
            .find(|seen| self.target_dir.contains(&&*seen.name))
            .and_then(|seen| seen.value.clone());
        if let Some(target) = &target {
            // A relative file may be written inside the directory too
            // (`curl --output-dir D -o F` writes D/F).
            let inside: Vec<Word> = written
                .paths
                .iter()
                .filter(|path| !path.text.starts_with(['/', '~']))
                .map(|path| Word {
                    text: format!("{}/{}", target.text, path.text),
                    literal: target.literal && path.literal,
                    home: target.home,
                })
                .collect();
            written.paths.extend(inside);
            written.paths.push(target.clone());
        }
        let default_write = self.writes_in_dir.contains(&"") && !has(self.no_default_write);
        if target.is_none() && (default_write || has(self.writes_in_dir)) {
            written.paths.push(Word::literal("."));
        }
        for operand in &operands {
            for key in self.assignments {
                if let Some(value) = operand.text.strip_prefix(&format!("{key}=")) {
                    written.paths.push(value_word(operand, value));
                }
            }
        }
        if self.operands_when.is_empty() || has(self.operands_when) {
            let chosen = self.written_operands(&operands, target.is_some(), has(self.shifts_first));
            written.paths.extend(chosen);
        }
        written
    }

    /// Whether the program writes any of its operands (so words another
    /// program adds to its command line may be written).
    pub(crate) fn writes_operands(&self) -> bool {
        self.operands != Operands::None
    }

    fn written_operands(&self, operands: &[Word], targeted: bool, shifted: bool) -> Vec<Word> {
        let all = operands.to_vec();
        let after_first = operands.get(1..).unwrap_or_default().to_vec();
        match self.operands {
            Operands::None => Vec::new(),
            Operands::All => all,
            Operands::AllButFirst | Operands::AfterScript if shifted => all,
            Operands::AllButFirst | Operands::AfterScript => after_first,
            Operands::Last if shifted => all,
            Operands::Last | Operands::LinkName if targeted => Vec::new(),
            Operands::Last => operands.last().cloned().into_iter().collect(),
            Operands::LinkName => match operands {
                [only] => {
                    let name = only.text.trim_end_matches('/');
                    let name = name.rsplit('/').next().unwrap_or(name);
                    vec![Word {
                        text: name.to_string(),
                        ..only.clone()
                    }]
                }
                _ => operands.last().cloned().into_iter().collect(),
            },
        }
    }

    /// The options and the operands of `args`, getopt's way (options may
    /// follow operands, as GNU's do); `Err` says why they cannot be told
    /// apart.
    fn read(&self, args: &[Word]) -> Result<(Vec<Seen>, Vec<Word>), String> {
        let mut options = Vec::new();
        let mut operands = Vec::new();
        let mut i = 0;
        while let Some(word) = args.get(i) {
            i += 1;
            let arg = word.text.as_str();
            if !word.literal && !word.home {
                return Err(format!(
                    "the argument `{arg}` expands, and could name a file it writes"
                ));
            }
            if arg == "--" {
                operands.extend(args[i..].iter().cloned());
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                i += self.long(word, long, args.get(i), &mut options)?;
            } else if arg.len() > 1 && arg.starts_with('-') {
                i += self.short(word, args.get(i), &mut options)?;
            } else {
                operands.push(word.clone());
            }
        }
        Ok((options, operands))
    }

    /// A long option; how many more words it took (its value).
    fn long(
        &self,
        word: &Word,
        long: &str,
        next: Option<&Word>,
        options: &mut Vec<Seen>,
    ) -> Result<usize, String> {
        let (name, attached) = match long.split_once('=') {
            Some((name, value)) => (format!("--{name}"), Some(value)),
            None => (format!("--{long}"), None),
        };
        let takes_value = self.long_values.contains(&name.as_str());
        let known = takes_value
            || self.long_flags.contains(&name.as_str())
            || self.writes_in_dir.contains(&name.as_str())
            || self.no_default_write.contains(&name.as_str())
            || self.unknowable.contains(&name.as_str());
        if !known && self.short_flags.is_some() {
            return Err(format!("`{name}` is an option the policy does not know"));
        }
        let (value, took) = match (takes_value, attached) {
            (_, Some(value)) => (Some(value_word(word, value)), 0),
            (true, None) => (next.cloned(), 1),
            (false, None) => (None, 0),
        };
        options.push(Seen { name, value });
        Ok(took)
    }

    /// A cluster of short options (`-rf`, `-oFILE`, `-o FILE`); how many
    /// more words it took.
    fn short(
        &self,
        word: &Word,
        next: Option<&Word>,
        options: &mut Vec<Seen>,
    ) -> Result<usize, String> {
        let cluster = &word.text[1..];
        for (at, letter) in cluster.char_indices() {
            let name = format!("-{letter}");
            let rest = &cluster[at + letter.len_utf8()..];
            if self.short_values.contains(letter) {
                let (value, took) = if rest.is_empty() {
                    (next.cloned(), 1)
                } else {
                    (Some(value_word(word, rest)), 0)
                };
                options.push(Seen { name, value });
                return Ok(took);
            }
            if self.short_optional.contains(letter) {
                let value = (!rest.is_empty()).then(|| value_word(word, rest));
                options.push(Seen { name, value });
                return Ok(0);
            }
            let known = self.short_flags.is_none_or(|flags| flags.contains(letter))
                || self.writes_in_dir.contains(&name.as_str())
                || self.no_default_write.contains(&name.as_str())
                || self.unknowable.contains(&name.as_str());
            if !known {
                return Err(format!("`{name}` is an option the policy does not know"));
            }
            options.push(Seen { name, value: None });
        }
        Ok(0)
    }
}

/// The value part of `word` (after `=`, or after an option's letter).
fn value_word(word: &Word, value: &str) -> Word {
    Word {
        text: value.to_string(),
        literal: word.literal,
        home: word.home || value == "~" || value.starts_with("~/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(command: &str) -> Result<Vec<String>, String> {
        let words: Vec<Word> = command.split(' ').map(Word::literal).collect();
        let writer = writer_of(WRITERS, &words[0].text).expect("a writer");
        let written = writer.written(&words[1..]);
        match written.unknown {
            Some(why) => Err(why),
            None => Ok(written.paths.into_iter().map(|word| word.text).collect()),
        }
    }

    #[test]
    fn options_and_operands_name_what_is_written() {
        assert_eq!(writes("sort -o out in"), Ok(vec!["out".into()]));
        assert_eq!(writes("sort -ruo out in"), Ok(vec!["out".into()]));
        assert_eq!(writes("sort --output=out in"), Ok(vec!["out".into()]));
        assert_eq!(writes("sort -k 2 in"), Ok(vec![]));
        assert_eq!(writes("cp a b c"), Ok(vec!["c".into()]));
        assert_eq!(writes("cp -t d a b"), Ok(vec!["d".into()]));
        assert_eq!(writes("cp a -r d"), Ok(vec!["d".into()]));
        assert_eq!(writes("mv a b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(writes("install -m 644 a /x/b"), Ok(vec!["/x/b".into()]));
        assert_eq!(writes("install -d a b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(writes("ln -s /etc/passwd"), Ok(vec!["passwd".into()]));
        assert_eq!(writes("dd if=a of=b bs=1M"), Ok(vec!["b".into()]));
        assert_eq!(writes("tee -a f g"), Ok(vec!["f".into(), "g".into()]));
        assert_eq!(writes("sed s/a/b/ f"), Ok(vec![]));
        assert_eq!(
            writes("sed -i s/a/b/ f g"),
            Ok(vec!["f".into(), "g".into()])
        );
        assert_eq!(writes("sed -i.bak -e x f"), Ok(vec!["f".into()]));
        assert_eq!(writes("sed -ni p f"), Ok(vec!["f".into()]));
        assert_eq!(writes("touch -d 2020-01-01 f"), Ok(vec!["f".into()]));
        assert_eq!(writes("chmod 644 f g"), Ok(vec!["f".into(), "g".into()]));
        assert_eq!(writes("chmod --reference=r f"), Ok(vec!["f".into()]));
        assert_eq!(writes("chown -R u:g d"), Ok(vec!["d".into()]));
        assert_eq!(writes("rm -rf a b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(writes("curl -sSLo f u"), Ok(vec!["f".into()]));
        assert_eq!(writes("curl -O u"), Ok(vec![".".into()]));
        assert_eq!(writes("curl -s u"), Ok(vec![]));
        assert_eq!(writes("wget u"), Ok(vec![".".into()]));
        assert_eq!(writes("wget -O f u"), Ok(vec!["f".into()]));
        assert_eq!(writes("wget -qO- u"), Ok(vec![]));
        assert_eq!(writes("wget -P d u"), Ok(vec!["d".into()]));
        assert_eq!(
            writes("curl --output-dir d -o f u"),
            Ok(vec!["f".into(), "d/f".into(), "d".into()])
        );
    }

    #[test]
    fn what_cannot_be_read_is_said() {
        assert!(writes("cp --frobnicate x a b").is_err());
        assert!(writes("chmod -w f").is_err());
        assert!(writes("sed -i --frob s/a/b/ f").is_err());
        assert!(writes("curl -K cfg u").is_err());
        assert!(writes("wget -e robots=off u").is_err());
        let words = [
            Word::literal("-o"),
            Word {
                text: "$F".into(),
                literal: false,
                home: false,
            },
        ];
        let sort = writer_of(WRITERS, "sort").expect("sort");
        // The value is written, and the walk asks about it: it expands.
        let written = sort.written(&words);
        assert!(matches!(&written.paths[..], [path] if !path.literal));
        assert!(sort.written(&words[1..]).unknown.is_some());
    }
}
