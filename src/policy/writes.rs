//! The files a program writes because its arguments name them: `sort -o
//! F`, `cp SRC DST`, `dd of=F`, `sed -i`, `curl -o F`, `rm F`, ... Each is
//! a write the `Write`/`Edit` rules judge, as a redirection is.
//!
//! The knowledge is data: [`WRITERS`] says, program by program, every
//! option it takes (from its `--help`: coreutils 9.1, curl 7.88, wget
//! 1.21, git 2.47), which options' values are written, and which operands
//! are. Reading a command line by it is getopt_long's reading ([`Getopt`]:
//! short options in clusters, `-oFILE`, `--output=FILE`, an unambiguous
//! prefix of a long option, `--` ends the options). What cannot be read
//! without guessing is reported, never guessed: an argument that expands
//! (it could be an option that writes), an option the table does not know,
//! an option that reads more options from a file or makes the program run
//! another.
//!
//! [`PROGRAM_OPTIONS`] and [`runs_by_environment`] say the same of
//! programs that write nothing by their arguments but run what an option
//! or the environment names (`cargo --manifest-path`, `npm --prefix`,
//! `WGETRC`).

use super::word::Word;

/// A program's options, as getopt_long reads them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Getopt {
    /// Short options that take a value (attached, or the next word).
    pub(crate) short_values: &'static str,
    /// Short options whose value, if any, is attached (`sed -i.bak`).
    pub(crate) short_optional: &'static str,
    /// Short options that take none.
    pub(crate) short_flags: &'static str,
    /// Long options that take a value (after `=`, or the next word).
    pub(crate) long_values: &'static [&'static str],
    /// Long options whose value, if any, follows `=`.
    pub(crate) long_optional: &'static [&'static str],
    /// Long options that take none.
    pub(crate) long_flags: &'static [&'static str],
    /// An option the lists do not hold is a flag: only for programs whose
    /// options are too many to list and none of which, but the listed
    /// ones, writes or takes its value from the next word (git's diff
    /// options).
    pub(crate) others_are_flags: bool,
    /// A long option may be written as an unambiguous prefix of its name.
    pub(crate) abbreviates: bool,
    /// Options end at the first operand (a wrapper: the rest is the
    /// command it runs); else options may follow operands, as GNU's do.
    pub(crate) in_order: bool,
}

/// No options at all, read the GNU way.
pub(crate) const GETOPT: Getopt = Getopt {
    short_values: "",
    short_optional: "",
    short_flags: "",
    long_values: &[],
    long_optional: &[],
    long_flags: &[],
    others_are_flags: false,
    abbreviates: true,
    in_order: false,
};

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Value,
    Optional,
    Nothing,
}

/// One option as read: its name (`-o`, or a long option's full name,
/// `--output`, whatever prefix was written) and its value, if it took one.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The option's name.
    pub(crate) name: String,
    /// Its value.
    pub(crate) value: Option<Word>,
    /// The index of the argument after it (and its value).
    pub(crate) next: usize,
}

/// A command line as read: its options, its operands, and (for a wrapper)
/// where in the arguments the first operand stands.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// The options, in order.
    pub(crate) options: Vec<Seen>,
    /// The operands, in order.
    pub(crate) operands: Vec<Word>,
    /// The index of the first operand (the arguments' length if none).
    pub(crate) first_operand: usize,
}

impl Read {
    /// Whether an option of `names` was given.
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|seen| names.contains(&seen.name.as_str()))
    }
}

impl Getopt {
    /// Reads `args` (the words after the program's name); `Err` says why
    /// options and operands cannot be told apart.
    pub(crate) fn read(&self, args: &[Word]) -> Result<Read, String> {
        let mut read = Read {
            first_operand: args.len(),
            ..Read::default()
        };
        let mut i = 0;
        while let Some(word) = args.get(i) {
            i += 1;
            let arg = word.text.as_str();
            if !word.literal && !word.home {
                return Err(format!(
                    "the argument `{arg}` expands, and could be an option"
                ));
            }
            if arg == "--" {
                read.first_operand = read.first_operand.min(i);
                read.operands.extend(args[i..].iter().cloned());
                break;
            }
            let seen = read.options.len();
            if arg.starts_with("--") {
                i += self.long(word, args.get(i), &mut read.options)?;
            } else if arg.len() > 1 && arg.starts_with('-') {
                i += self.short(word, args.get(i), &mut read.options)?;
            }
            if read.options.len() > seen {
                for option in &mut read.options[seen..] {
                    option.next = i;
                }
            } else if self.in_order {
                read.first_operand = i - 1;
                read.operands.extend(args[i - 1..].iter().cloned());
                break;
            } else {
                read.first_operand = read.first_operand.min(i - 1);
                read.operands.push(word.clone());
            }
        }
        Ok(read)
    }

    /// The long option `written` names (`--name`), as getopt_long finds
    /// it: the exact name, else the only one it is a prefix of.
    fn resolve(&self, written: &str) -> Result<(String, Takes), String> {
        let lists = [
            (self.long_values, Takes::Value),
            (self.long_optional, Takes::Optional),
            (self.long_flags, Takes::Nothing),
        ];
        let all = lists
            .iter()
            .flat_map(|(names, takes)| names.iter().map(move |name| (*name, *takes)));
        if let Some((name, takes)) = all.clone().find(|(name, _)| *name == written) {
            return Ok((name.to_string(), takes));
        }
        if self.abbreviates {
            let mut candidates = all.filter(|(name, _)| name.starts_with(written));
            match (candidates.next(), candidates.next()) {
                (Some((name, takes)), None) => return Ok((name.to_string(), takes)),
                (Some(_), Some(_)) if !self.others_are_flags => {
                    return Err(format!("`{written}` is ambiguous"))
                }
                _ => {}
            }
        }
        if self.others_are_flags {
            return Ok((written.to_string(), Takes::Nothing));
        }
        Err(format!("`{written}` is an option the policy does not know"))
    }

    /// A long option; how many more words it took (its value).
    fn long(
        &self,
        word: &Word,
        next: Option<&Word>,
        options: &mut Vec<Seen>,
    ) -> Result<usize, String> {
        let (written, attached) = match word.text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word.text.as_str(), None),
        };
        let (name, takes) = self.resolve(written)?;
        let (value, took) = match (takes, attached) {
            (_, Some(value)) => (Some(value_word(word, value)), 0),
            (Takes::Value, None) => (next.cloned(), 1),
            (_, None) => (None, 0),
        };
        options.push(Seen {
            name,
            value,
            next: 0,
        });
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
                options.push(Seen {
                    name,
                    value,
                    next: 0,
                });
                return Ok(took);
            }
            if self.short_optional.contains(letter) {
                let value = (!rest.is_empty()).then(|| value_word(word, rest));
                options.push(Seen {
                    name,
                    value,
                    next: 0,
                });
                return Ok(0);
            }
            if !(self.others_are_flags || self.short_flags.contains(letter)) {
                return Err(format!("`{name}` is an option the policy does not know"));
            }
            options.push(Seen {
                name,
                value: None,
                next: 0,
            });
        }
        Ok(0)
    }
}

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
    /// `ln`: the link's name (the last operand, or with one operand alone
    /// its last component in the working directory) and every target, as
    /// a write too: a link gives write access to what it points at. A
    /// symbolic link's relative target is read from the link's directory
    /// (from the working directory with `-r`, as ln reads it then).
    Link,
    /// Every operand after the script (the first operand, unless a script
    /// option gave it): `sed -i`.
    AfterScript,
}

/// How one program's command line names what it writes.
#[derive(Debug)]
pub(crate) struct Writer {
    /// The program's names.
    pub(crate) programs: &'static [&'static str],
    /// Its options.
    options: Getopt,
    /// Options whose value is a file written (`-o`, `--output`, `of`).
    writes_value: &'static [&'static str],
    /// Options whose value, with a suffix the program adds, names a file
    /// written (`wget --warc-file=F` writes `F.warc.gz`).
    writes_value_with: &'static [(&'static str, &'static str)],
    /// Options whose value is a directory written into (`cp -t`): the
    /// operands are then all read.
    target_dir: &'static [&'static str],
    /// Options without which no operand is written (`sed`'s `-i`);
    /// empty: always.
    operands_when: &'static [&'static str],
    /// The operands written.
    operands: Operands,
    /// Options with which every operand is written (`chmod
    /// --reference`, `cp -s`), or which give the script (`sed -e`).
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
    /// Options that make the program run another (`sort
    /// --compress-program`, `install -s`): asked.
    runs: &'static [&'static str],
    /// Its script is sed's, whose `w FILE` writes and `e` runs.
    sed_script: bool,
}

const fn writer(programs: &'static [&'static str], options: Getopt, operands: Operands) -> Writer {
    Writer {
        programs,
        options,
        writes_value: &[],
        writes_value_with: &[],
        target_dir: &[],
        operands_when: &[],
        operands,
        shifts_first: &[],
        assignments: &[],
        writes_in_dir: &[],
        no_default_write: &[],
        unknowable: &[],
        runs: &[],
        sed_script: false,
    }
}

/// `--help` and `--version`, which every GNU program takes.
macro_rules! gnu_flags {
    ($($flag:literal),* $(,)?) => {
        &[$($flag,)* "--help", "--version"]
    };
}

/// `cp`, `mv`, `install`, `ln`: a target directory option (`-t`).
const fn copier(programs: &'static [&'static str], options: Getopt, operands: Operands) -> Writer {
    Writer {
        target_dir: &["-t", "--target-directory"],
        ..writer(programs, options, operands)
    }
}

/// `chmod`, `chown`, `chgrp`: the long flags they share.
const CHANGE_LONG_FLAGS: &[&str] = gnu_flags![
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
        writes_value: &["-o", "--output", "-T", "--temporary-directory"],
        runs: &["--compress-program"],
        ..writer(
            &["sort"],
            Getopt {
                short_values: "koSTt",
                short_flags: "bcCdfghiMmnRrsuVz",
                long_values: &[
                    "--random-source",
                    "--sort",
                    "--batch-size",
                    "--compress-program",
                    "--files0-from",
                    "--key",
                    "--output",
                    "--buffer-size",
                    "--field-separator",
                    "--temporary-directory",
                    "--parallel",
                ],
                long_optional: &["--check"],
                long_flags: gnu_flags![
                    "--ignore-leading-blanks",
                    "--dictionary-order",
                    "--ignore-case",
                    "--general-numeric-sort",
                    "--ignore-nonprinting",
                    "--month-sort",
                    "--human-numeric-sort",
                    "--numeric-sort",
                    "--random-sort",
                    "--reverse",
                    "--version-sort",
                    "--debug",
                    "--merge",
                    "--stable",
                    "--unique",
                    "--zero-terminated",
                ],
                ..GETOPT
            },
            Operands::None,
        )
    },
    // `cp -s` and `cp -l` link the sources: they are written too.
    Writer {
        shifts_first: &["-s", "--symbolic-link", "-l", "--link"],
        ..copier(
            &["cp"],
            Getopt {
                short_values: "St",
                short_flags: "abdfHilLnPpRrsTuvxZ",
                long_values: &[
                    "--no-preserve",
                    "--sparse",
                    "--suffix",
                    "--target-directory",
                ],
                long_optional: &["--backup", "--preserve", "--reflink", "--context"],
                long_flags: gnu_flags![
                    "--archive",
                    "--attributes-only",
                    "--copy-contents",
                    "--force",
                    "--interactive",
                    "--link",
                    "--dereference",
                    "--no-clobber",
                    "--no-dereference",
                    "--parents",
                    "--recursive",
                    "--remove-destination",
                    "--strip-trailing-slashes",
                    "--symbolic-link",
                    "--no-target-directory",
                    "--update",
                    "--verbose",
                    "--one-file-system",
                ],
                ..GETOPT
            },
            Operands::Last,
        )
    },
    // `mv` removes its sources: they are written too.
    copier(
        &["mv"],
        Getopt {
            short_values: "St",
            short_flags: "bfinTuvZ",
            long_values: &["--suffix", "--target-directory"],
            long_optional: &["--backup"],
            long_flags: gnu_flags![
                "--force",
                "--interactive",
                "--no-clobber",
                "--strip-trailing-slashes",
                "--no-target-directory",
                "--update",
                "--verbose",
                "--context",
            ],
            ..GETOPT
        },
        Operands::All,
    ),
    Writer {
        // `install -d DIR...` creates every operand; `-s` runs `strip`.
        shifts_first: &["-d", "--directory"],
        runs: &["-s", "--strip", "--strip-program"],
        ..copier(
            &["install"],
            Getopt {
                short_values: "gmoSt",
                short_flags: "bcCdDpsTvZ",
                long_values: &[
                    "--group",
                    "--mode",
                    "--owner",
                    "--strip-program",
                    "--suffix",
                    "--target-directory",
                ],
                long_optional: &["--backup", "--context"],
                long_flags: gnu_flags![
                    "--compare",
                    "--directory",
                    "--preserve-timestamps",
                    "--strip",
                    "--no-target-directory",
                    "--verbose",
                    "--preserve-context",
                ],
                ..GETOPT
            },
            Operands::Last,
        )
    },
    copier(
        &["ln"],
        Getopt {
            short_values: "St",
            short_flags: "bdFfiLnPrsTv",
            long_values: &["--suffix", "--target-directory"],
            long_optional: &["--backup"],
            long_flags: gnu_flags![
                "--directory",
                "--force",
                "--interactive",
                "--logical",
                "--no-dereference",
                "--physical",
                "--relative",
                "--symbolic",
                "--no-target-directory",
                "--verbose",
            ],
            ..GETOPT
        },
        Operands::Link,
    ),
    Writer {
        assignments: &["of"],
        ..writer(
            &["dd"],
            Getopt {
                long_flags: gnu_flags![],
                ..GETOPT
            },
            Operands::None,
        )
    },
    writer(
        &["tee"],
        Getopt {
            short_flags: "aip",
            long_optional: &["--output-error"],
            long_flags: gnu_flags!["--append", "--ignore-interrupts"],
            ..GETOPT
        },
        Operands::All,
    ),
    Writer {
        operands_when: &["-i", "--in-place"],
        shifts_first: &["-e", "--expression", "-f", "--file"],
        sed_script: true,
        ..writer(
            &["sed"],
            Getopt {
                short_values: "efl",
                short_optional: "i",
                short_flags: "nErsuz",
                long_values: &["--expression", "--file", "--line-length"],
                long_optional: &["--in-place"],
                long_flags: gnu_flags![
                    "--quiet",
                    "--silent",
                    "--debug",
                    "--follow-symlinks",
                    "--posix",
                    "--regexp-extended",
                    "--separate",
                    "--sandbox",
                    "--unbuffered",
                    "--null-data",
                ],
                ..GETOPT
            },
            Operands::AfterScript,
        )
    },
    writer(
        &["truncate"],
        Getopt {
            short_values: "rs",
            short_flags: "co",
            long_values: &["--reference", "--size"],
            long_flags: gnu_flags!["--no-create", "--io-blocks"],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["touch"],
        Getopt {
            short_values: "drt",
            short_flags: "acfhm",
            long_values: &["--date", "--reference", "--time"],
            long_flags: gnu_flags!["--no-create", "--no-dereference"],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["mkdir"],
        Getopt {
            short_values: "m",
            short_flags: "pvZ",
            long_values: &["--mode"],
            long_optional: &["--context"],
            long_flags: gnu_flags!["--parents", "--verbose"],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["mkfifo", "mknod"],
        Getopt {
            short_values: "m",
            short_flags: "Z",
            long_values: &["--mode"],
            long_optional: &["--context"],
            long_flags: gnu_flags![],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["shred"],
        Getopt {
            short_values: "ns",
            short_flags: "fuvxz",
            long_values: &["--iterations", "--random-source", "--size"],
            long_optional: &["--remove"],
            long_flags: gnu_flags!["--force", "--verbose", "--exact", "--zero"],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["rm"],
        Getopt {
            short_flags: "fiIrRdv",
            long_optional: &["--interactive", "--preserve-root"],
            long_flags: gnu_flags![
                "--force",
                "--one-file-system",
                "--no-preserve-root",
                "--recursive",
                "--dir",
                "--verbose",
            ],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["rmdir"],
        Getopt {
            short_flags: "pv",
            long_flags: gnu_flags!["--ignore-fail-on-non-empty", "--parents", "--verbose"],
            ..GETOPT
        },
        Operands::All,
    ),
    writer(
        &["unlink"],
        Getopt {
            long_flags: gnu_flags![],
            ..GETOPT
        },
        Operands::All,
    ),
    // A mode may look like an option (`chmod -w f`): only known flags.
    Writer {
        shifts_first: &["--reference"],
        ..writer(
            &["chmod"],
            Getopt {
                short_flags: "cfvR",
                long_values: &["--reference"],
                long_flags: CHANGE_LONG_FLAGS,
                ..GETOPT
            },
            Operands::AllButFirst,
        )
    },
    Writer {
        shifts_first: &["--reference"],
        ..writer(
            &["chown"],
            Getopt {
                short_flags: "cfvhRHLP",
                long_values: &["--from", "--reference"],
                long_flags: CHANGE_LONG_FLAGS,
                ..GETOPT
            },
            Operands::AllButFirst,
        )
    },
    Writer {
        shifts_first: &["--reference"],
        ..writer(
            &["chgrp"],
            Getopt {
                short_flags: "cfvhRHLP",
                long_values: &["--reference"],
                long_flags: CHANGE_LONG_FLAGS,
                ..GETOPT
            },
            Operands::AllButFirst,
        )
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
        target_dir: &["--output-dir"],
        writes_in_dir: &["-O", "--remote-name", "--remote-name-all", "-J"],
        unknowable: &["-K", "--config"],
        ..writer(&["curl"], CURL, Operands::None)
    },
    Writer {
        writes_value: &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "--save-cookies",
            "--rejected-log",
            "--hsts-file",
            "--warc-tempdir",
        ],
        writes_value_with: &[
            ("--warc-file", ".warc.gz"),
            ("--warc-file", ".warc"),
            ("--warc-file", ".cdx"),
        ],
        target_dir: &["-P", "--directory-prefix"],
        writes_in_dir: &["", "-b", "--background"],
        no_default_write: &["-O", "--output-document", "--spider"],
        unknowable: &["-e", "--execute", "--config", "-i", "--input-file"],
        runs: &["--use-askpass"],
        ..writer(&["wget"], WGET, Operands::None)
    },
];

/// curl 7.88's options (`curl --help all`).
const CURL: Getopt = Getopt {
    short_values: "EKCbcdDFPHhmoUQrXYytzTuAwxe",
    short_flags: "aqfGgI0ik46jlLMnNZpJORSs231BvV#:",
    long_values: &[
        "--abstract-unix-socket",
        "--alt-svc",
        "--aws-sigv4",
        "--cacert",
        "--capath",
        "--cert",
        "--cert-type",
        "--ciphers",
        "--config",
        "--connect-timeout",
        "--connect-to",
        "--continue-at",
        "--cookie",
        "--cookie-jar",
        "--create-file-mode",
        "--crlfile",
        "--curves",
        "--data",
        "--data-ascii",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--delegation",
        "--dns-interface",
        "--dns-ipv4-addr",
        "--dns-ipv6-addr",
        "--dns-servers",
        "--doh-url",
        "--dump-header",
        "--egd-file",
        "--engine",
        "--etag-compare",
        "--etag-save",
        "--expect100-timeout",
        "--form",
        "--form-string",
        "--ftp-account",
        "--ftp-alternative-to-user",
        "--ftp-method",
        "--ftp-port",
        "--ftp-ssl-ccc-mode",
        "--happy-eyeballs-timeout-ms",
        "--header",
        "--help",
        "--hostpubmd5",
        "--hostpubsha256",
        "--hsts",
        "--interface",
        "--json",
        "--keepalive-time",
        "--key",
        "--key-type",
        "--krb",
        "--libcurl",
        "--limit-rate",
        "--local-port",
        "--login-options",
        "--mail-auth",
        "--mail-from",
        "--mail-rcpt",
        "--max-filesize",
        "--max-redirs",
        "--max-time",
        "--netrc-file",
        "--noproxy",
        "--oauth2-bearer",
        "--output",
        "--output-dir",
        "--parallel-max",
        "--pass",
        "--pinnedpubkey",
        "--preproxy",
        "--proto",
        "--proto-default",
        "--proto-redir",
        "--proxy",
        "--proxy1.0",
        "--proxy-cacert",
        "--proxy-capath",
        "--proxy-cert",
        "--proxy-cert-type",
        "--proxy-ciphers",
        "--proxy-crlfile",
        "--proxy-header",
        "--proxy-key",
        "--proxy-key-type",
        "--proxy-pass",
        "--proxy-pinnedpubkey",
        "--proxy-service-name",
        "--proxy-tls13-ciphers",
        "--proxy-tlsauthtype",
        "--proxy-tlspassword",
        "--proxy-tlsuser",
        "--proxy-user",
        "--pubkey",
        "--quote",
        "--random-file",
        "--range",
        "--rate",
        "--referer",
        "--request",
        "--request-target",
        "--resolve",
        "--retry",
        "--retry-delay",
        "--retry-max-time",
        "--sasl-authzid",
        "--service-name",
        "--socks4",
        "--socks4a",
        "--socks5",
        "--socks5-gssapi-service",
        "--socks5-hostname",
        "--speed-limit",
        "--speed-time",
        "--stderr",
        "--telnet-option",
        "--tftp-blksize",
        "--time-cond",
        "--tls-max",
        "--tls13-ciphers",
        "--tlsauthtype",
        "--tlspassword",
        "--tlsuser",
        "--trace",
        "--trace-ascii",
        "--unix-socket",
        "--upload-file",
        "--url",
        "--url-query",
        "--user",
        "--user-agent",
        "--write-out",
    ],
    long_flags: &[
        "--anyauth",
        "--append",
        "--basic",
        "--cert-status",
        "--compressed",
        "--compressed-ssh",
        "--create-dirs",
        "--crlf",
        "--digest",
        "--disable",
        "--disable-eprt",
        "--disable-epsv",
        "--disallow-username-in-url",
        "--doh-cert-status",
        "--doh-insecure",
        "--fail",
        "--fail-early",
        "--fail-with-body",
        "--false-start",
        "--form-escape",
        "--ftp-create-dirs",
        "--ftp-pasv",
        "--ftp-pret",
        "--ftp-skip-pasv-ip",
        "--ftp-ssl-ccc",
        "--ftp-ssl-control",
        "--get",
        "--globoff",
        "--haproxy-protocol",
        "--head",
        "--http0.9",
        "--http1.0",
        "--http1.1",
        "--http2",
        "--http2-prior-knowledge",
        "--http3",
        "--http3-only",
        "--ignore-content-length",
        "--include",
        "--insecure",
        "--ipv4",
        "--ipv6",
        "--junk-session-cookies",
        "--list-only",
        "--location",
        "--location-trusted",
        "--mail-rcpt-allowfails",
        "--manual",
        "--metalink",
        "--negotiate",
        "--netrc",
        "--netrc-optional",
        "--next",
        "--no-alpn",
        "--no-buffer",
        "--no-clobber",
        "--no-keepalive",
        "--no-npn",
        "--no-progress-meter",
        "--no-sessionid",
        "--ntlm",
        "--ntlm-wb",
        "--parallel",
        "--parallel-immediate",
        "--path-as-is",
        "--post301",
        "--post302",
        "--post303",
        "--progress-bar",
        "--proxy-anyauth",
        "--proxy-basic",
        "--proxy-digest",
        "--proxy-insecure",
        "--proxy-negotiate",
        "--proxy-ntlm",
        "--proxy-ssl-allow-beast",
        "--proxy-ssl-auto-client-cert",
        "--proxy-tlsv1",
        "--proxytunnel",
        "--raw",
        "--remote-header-name",
        "--remote-name",
        "--remote-name-all",
        "--remote-time",
        "--remove-on-error",
        "--retry-all-errors",
        "--retry-connrefused",
        "--sasl-ir",
        "--show-error",
        "--silent",
        "--socks5-basic",
        "--socks5-gssapi",
        "--socks5-gssapi-nec",
        "--ssl",
        "--ssl-allow-beast",
        "--ssl-auto-client-cert",
        "--ssl-no-revoke",
        "--ssl-reqd",
        "--ssl-revoke-best-effort",
        "--sslv2",
        "--sslv3",
        "--styled-output",
        "--suppress-connect-headers",
        "--tcp-fastopen",
        "--tcp-nodelay",
        "--tftp-no-options",
        "--tlsv1",
        "--tlsv1.0",
        "--tlsv1.1",
        "--tlsv1.2",
        "--tlsv1.3",
        "--tr-encoding",
        "--trace-time",
        "--use-ascii",
        "--verbose",
        "--version",
        "--xattr",
    ],
    ..GETOPT
};

/// wget 1.21's options (`wget --help`; `-nv`, `-nc`, ... are `-n` with a
/// value).
const WGET: Getopt = Getopt {
    short_values: "eoaiBtOTwQPUlARDIXn",
    short_flags: "VhbdqvFcNS46xErkKmpHL",
    long_values: &[
        "--execute",
        "--output-file",
        "--append-output",
        "--report-speed",
        "--input-file",
        "--base",
        "--config",
        "--rejected-log",
        "--tries",
        "--retry-on-http-error",
        "--output-document",
        "--start-pos",
        "--progress",
        "--timeout",
        "--dns-timeout",
        "--connect-timeout",
        "--read-timeout",
        "--wait",
        "--waitretry",
        "--quota",
        "--bind-address",
        "--limit-rate",
        "--restrict-file-names",
        "--prefer-family",
        "--user",
        "--password",
        "--use-askpass",
        "--local-encoding",
        "--remote-encoding",
        "--directory-prefix",
        "--cut-dirs",
        "--http-user",
        "--http-password",
        "--default-page",
        "--header",
        "--compression",
        "--max-redirect",
        "--proxy-user",
        "--proxy-password",
        "--referer",
        "--user-agent",
        "--load-cookies",
        "--save-cookies",
        "--post-data",
        "--post-file",
        "--method",
        "--body-data",
        "--body-file",
        "--secure-protocol",
        "--certificate",
        "--certificate-type",
        "--private-key",
        "--private-key-type",
        "--ca-certificate",
        "--ca-directory",
        "--crl-file",
        "--pinnedpubkey",
        "--ciphers",
        "--hsts-file",
        "--ftp-user",
        "--ftp-password",
        "--warc-file",
        "--warc-header",
        "--warc-max-size",
        "--warc-dedup",
        "--warc-tempdir",
        "--level",
        "--backups",
        "--accept",
        "--reject",
        "--accept-regex",
        "--reject-regex",
        "--regex-type",
        "--domains",
        "--exclude-domains",
        "--follow-tags",
        "--ignore-tags",
        "--include-directories",
        "--exclude-directories",
    ],
    long_flags: &[
        "--version",
        "--help",
        "--background",
        "--debug",
        "--quiet",
        "--verbose",
        "--no-verbose",
        "--force-html",
        "--no-config",
        "--retry-connrefused",
        "--no-clobber",
        "--no-netrc",
        "--continue",
        "--show-progress",
        "--timestamping",
        "--no-if-modified-since",
        "--no-use-server-timestamps",
        "--server-response",
        "--spider",
        "--random-wait",
        "--no-proxy",
        "--no-dns-cache",
        "--ignore-case",
        "--inet4-only",
        "--inet6-only",
        "--ask-password",
        "--no-iri",
        "--unlink",
        "--xattr",
        "--no-directories",
        "--force-directories",
        "--no-host-directories",
        "--protocol-directories",
        "--no-cache",
        "--adjust-extension",
        "--ignore-length",
        "--save-headers",
        "--no-http-keep-alive",
        "--no-cookies",
        "--keep-session-cookies",
        "--content-disposition",
        "--content-on-error",
        "--auth-no-challenge",
        "--https-only",
        "--no-check-certificate",
        "--no-hsts",
        "--no-remove-listing",
        "--no-glob",
        "--no-passive-ftp",
        "--preserve-permissions",
        "--retr-symlinks",
        "--ftps-implicit",
        "--ftps-resume-ssl",
        "--ftps-clear-data-connection",
        "--ftps-fallback-to-ftp",
        "--warc-cdx",
        "--no-warc-compression",
        "--no-warc-digests",
        "--no-warc-keep-log",
        "--recursive",
        "--delete-after",
        "--convert-links",
        "--convert-file-only",
        "--backup-converted",
        "--mirror",
        "--page-requisites",
        "--strict-comments",
        "--follow-ftp",
        "--span-hosts",
        "--relative",
        "--trust-server-names",
        "--no-parent",
    ],
    ..GETOPT
};

/// git's diff and log options, too many to list: only `--output` writes,
/// and git reads these whole, never a prefix.
const GIT_DIFF: Getopt = Getopt {
    long_values: &["--output"],
    others_are_flags: true,
    abbreviates: false,
    ..GETOPT
};

/// `git`'s subcommands that write a file an option names.
pub(crate) const GIT_WRITERS: &[Writer] = &[
    Writer {
        writes_value: &["--output"],
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
            GIT_DIFF,
            Operands::None,
        )
    },
    // `format-patch` writes its patches into the working directory unless
    // told where, or to print them.
    Writer {
        writes_value: &["-o", "--output-directory"],
        writes_in_dir: &[""],
        no_default_write: &["--stdout"],
        ..writer(
            &["format-patch"],
            Getopt {
                short_values: "o",
                long_values: &["--output-directory"],
                long_flags: &["--stdout"],
                others_are_flags: true,
                ..GETOPT
            },
            Operands::None,
        )
    },
    Writer {
        writes_value: &["-o", "--output"],
        runs: &["--exec", "--remote"],
        ..writer(
            &["archive"],
            Getopt {
                short_values: "o",
                long_values: &["--output", "--exec", "--remote", "--prefix", "--format"],
                others_are_flags: true,
                ..GETOPT
            },
            Operands::None,
        )
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

impl Writer {
    /// Reads `args` (the words after the program's name).
    pub(crate) fn written(&self, args: &[Word]) -> Written {
        let mut written = Written::default();
        let read = match self.options.read(args) {
            Ok(read) => read,
            Err(why) => {
                written.unknown = Some(why);
                return written;
            }
        };
        if let Some(why) = self.unknown(&read) {
            written.unknown = Some(why);
            return written;
        }
        match self.script_writes(&read) {
            Ok(paths) => written.paths.extend(paths),
            Err(why) => {
                written.unknown = Some(why);
                return written;
            }
        }
        for seen in &read.options {
            let Some(value) = &seen.value else { continue };
            if self.writes_value.contains(&&*seen.name) && value.text != "-" {
                written.paths.push(value.clone());
            }
            for (_, suffix) in self
                .writes_value_with
                .iter()
                .filter(|(name, _)| *name == seen.name)
            {
                written
                    .paths
                    .push(value_word(value, &format!("{}{suffix}", value.text)));
            }
        }
        let target = read
            .options
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
                .map(|path| inside(target, path))
                .collect();
            written.paths.extend(inside);
            written.paths.push(target.clone());
        }
        let default_write = self.writes_in_dir.contains(&"") && !read.has(self.no_default_write);
        if target.is_none() && (default_write || read.has(self.writes_in_dir)) {
            written.paths.push(Word::literal("."));
        }
        for operand in &read.operands {
            for key in self.assignments {
                if let Some(value) = operand.text.strip_prefix(&format!("{key}=")) {
                    written.paths.push(value_word(operand, value));
                }
            }
        }
        if self.operands_when.is_empty() || read.has(self.operands_when) {
            let chosen = self.written_operands(
                &read.operands,
                target.as_ref(),
                read.has(self.shifts_first),
                read.has(&["-s", "--symbolic"]) && !read.has(&["-r", "--relative"]),
            );
            written.paths.extend(chosen);
        }
        written
    }

    /// The files a sed script writes: its `-e` values, else its first
    /// operand; a script file is not seen (`--sandbox` lets none write
    /// or run).
    fn script_writes(&self, read: &Read) -> Result<Vec<Word>, String> {
        if !self.sed_script || read.has(&["--sandbox"]) {
            return Ok(Vec::new());
        }
        if read.has(&["-f", "--file"]) {
            return Err("sed reads its script from a file the policy does not see".into());
        }
        let expressions: Vec<&Word> = read
            .options
            .iter()
            .filter(|seen| matches!(seen.name.as_str(), "-e" | "--expression"))
            .filter_map(|seen| seen.value.as_ref())
            .collect();
        let scripts = if expressions.is_empty() {
            read.operands.first().into_iter().collect()
        } else {
            expressions
        };
        let mut writes = Vec::new();
        for script in scripts {
            if !script.literal {
                return Err("the sed script expands".into());
            }
            let files = sed_script_writes(&script.text)?;
            writes.extend(files.into_iter().map(Word::literal));
        }
        Ok(writes)
    }

    /// Why what the command line writes or runs cannot be known.
    fn unknown(&self, read: &Read) -> Option<String> {
        if let Some(seen) = read
            .options
            .iter()
            .find(|seen| self.unknowable.contains(&&*seen.name))
        {
            return Some(format!(
                "`{}` reads options the command line does not show",
                seen.name
            ));
        }
        read.options
            .iter()
            .find(|seen| self.runs.contains(&&*seen.name))
            .map(|seen| format!("`{}` makes it run another program", seen.name))
    }

    /// Whether the program writes any of its operands (so words another
    /// program adds to its command line may be written).
    pub(crate) fn writes_operands(&self) -> bool {
        self.operands != Operands::None
    }

    fn written_operands(
        &self,
        operands: &[Word],
        target: Option<&Word>,
        shifted: bool,
        from_link: bool,
    ) -> Vec<Word> {
        let all = operands.to_vec();
        let after_first = operands.get(1..).unwrap_or_default().to_vec();
        match self.operands {
            Operands::None => Vec::new(),
            Operands::All => all,
            Operands::AllButFirst | Operands::AfterScript if shifted => all,
            Operands::AllButFirst | Operands::AfterScript => after_first,
            Operands::Last if shifted => all,
            Operands::Last if target.is_some() => Vec::new(),
            Operands::Last => operands.last().cloned().into_iter().collect(),
            Operands::Link => link_writes(operands, target, from_link),
        }
    }
}

/// `ln`'s writes: the link's name and every target; `from_link`: a
/// relative target names a file from the link's directory (a symbolic
/// link's, but with `-r`), else from the working directory.
fn link_writes(operands: &[Word], target: Option<&Word>, from_link: bool) -> Vec<Word> {
    let (targets, link): (&[Word], Option<Word>) = match (target, operands) {
        (Some(_), _) => (operands, None),
        (None, [only]) => {
            let name = only.text.trim_end_matches('/');
            let name = name.rsplit('/').next().unwrap_or(name);
            let link = Word {
                text: name.to_string(),
                ..only.clone()
            };
            (operands, Some(link))
        }
        (None, [targets @ .., last]) => (targets, Some(last.clone())),
        (None, []) => (&[], None),
    };
    let link_dir = match (target, &link) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(link)) => Some(parent(link)),
        (None, None) => None,
    };
    let mut writes: Vec<Word> = link.into_iter().collect();
    for named in targets {
        let relative = !named.text.starts_with('/') && !named.home;
        match (from_link && relative, &link_dir) {
            (true, Some(dir)) => writes.push(inside(dir, named)),
            _ => writes.push(named.clone()),
        }
    }
    writes
}

/// `path` inside the directory `dir`.
fn inside(dir: &Word, path: &Word) -> Word {
    Word {
        text: format!("{}/{}", dir.text.trim_end_matches('/'), path.text),
        literal: dir.literal && path.literal,
        home: dir.home,
    }
}

/// The directory `path` is in (`.` for a name alone).
fn parent(path: &Word) -> Word {
    let text = path.text.trim_end_matches('/');
    let dir = match text.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((dir, _)) => dir,
        None => ".",
    };
    Word {
        text: dir.to_string(),
        ..path.clone()
    }
}

/// The value part of `word` (after `=`, or after an option's letter).
pub(crate) fn value_word(word: &Word, value: &str) -> Word {
    Word {
        text: value.to_string(),
        literal: word.literal,
        home: word.home || value == "~" || value.starts_with("~/"),
    }
}

/// What an option of a program that writes nothing by its arguments does
/// that a rule on the program cannot see.
#[derive(Debug)]
pub(crate) struct ProgramOptions {
    /// The program.
    pub(crate) program: &'static str,
    /// Options (before `--`) that make it run what the rule does not name
    /// (another project's code, a shell of the caller's choosing): asked.
    pub(crate) runs: &'static [&'static str],
    /// Options (before `--`) whose value is a file or directory written.
    pub(crate) writes: &'static [&'static str],
    /// Options after `--` (the test harness's, for cargo) whose value is
    /// written.
    pub(crate) writes_after_dashes: &'static [&'static str],
    /// A long option may be written as a prefix of its name (npm's).
    pub(crate) abbreviates: bool,
}

/// Options that make an allowed program run or write elsewhere.
pub(crate) const PROGRAM_OPTIONS: &[ProgramOptions] = &[
    ProgramOptions {
        program: "cargo",
        runs: &["--manifest-path", "-C", "-Z", "--config"],
        writes: &["--target-dir", "--artifact-dir", "--out-dir"],
        writes_after_dashes: &["--logfile"],
        abbreviates: false,
    },
    ProgramOptions {
        program: "npm",
        runs: &[
            "--prefix",
            "-C",
            "--script-shell",
            "--shell",
            "--userconfig",
            "--globalconfig",
            "--node-options",
            "--call",
            "-c",
        ],
        writes: &[],
        writes_after_dashes: &[],
        abbreviates: true,
    },
    ProgramOptions {
        // Another git, another repository's configuration, the programs
        // fetch and push run (`git -c` is the walk's: before the
        // subcommand only).
        program: "git",
        runs: &[
            "--exec-path",
            "--git-dir",
            "--upload-pack",
            "--receive-pack",
            "--exec",
        ],
        writes: &[],
        writes_after_dashes: &[],
        abbreviates: false,
    },
];

/// What `words` (a program's command line) do by [`PROGRAM_OPTIONS`]: the
/// option that runs something (`Err`), else the paths written.
pub(crate) fn program_options(words: &[Word]) -> Result<Vec<Word>, String> {
    let Some(program) = words.first() else {
        return Ok(Vec::new());
    };
    let name = program.text.rsplit('/').next().unwrap_or(&program.text);
    let Some(table) = PROGRAM_OPTIONS.iter().find(|table| table.program == name) else {
        return Ok(Vec::new());
    };
    let mut writes = Vec::new();
    let mut after_dashes = false;
    for (i, word) in words.iter().enumerate().skip(1) {
        if word.text == "--" {
            after_dashes = true;
            continue;
        }
        let (options, runs) = if after_dashes {
            (table.writes_after_dashes, &[][..])
        } else {
            (table.writes, table.runs)
        };
        if let Some(option) = option_named(runs, word, table.abbreviates) {
            return Err(format!(
                "`{option}` makes `{name}` run what the rule does not name"
            ));
        }
        if let Some(option) = option_named(options, word, table.abbreviates) {
            match option_value(option, word, words.get(i + 1)) {
                Some(value) => writes.push(value),
                None => return Err(format!("`{option}` writes where the policy cannot see")),
            }
        }
    }
    Ok(writes)
}

/// The option of `options` that `word` is (`--opt`, `--opt=v`, `-Xv`,
/// a prefix of `--option` where the program allows it).
fn option_named(options: &[&'static str], word: &Word, abbreviates: bool) -> Option<&'static str> {
    let text = word.text.as_str();
    let name = text.split_once('=').map_or(text, |(name, _)| name);
    options.iter().copied().find(|option| {
        if option.starts_with("--") {
            name == *option || (abbreviates && name.len() > 3 && option.starts_with(name))
        } else {
            text.starts_with(option) && !text.starts_with("--")
        }
    })
}

/// The value `word` gives `option`: attached, or the next word.
fn option_value(option: &str, word: &Word, next: Option<&Word>) -> Option<Word> {
    let text = word.text.as_str();
    if let Some((_, value)) = text.split_once('=').filter(|_| option.starts_with("--")) {
        return Some(value_word(word, value));
    }
    match text.strip_prefix(option) {
        Some(rest) if !rest.is_empty() && !option.starts_with("--") => Some(value_word(word, rest)),
        _ => next.cloned(),
    }
}

/// Whether assigning the environment variable `name` changes what a
/// program the rules allow runs or where it writes: its configuration
/// (`WGETRC`, `XDG_CONFIG_HOME`, `npm_config_*`) or the compilers and
/// toolchains a build runs (`CC`, `RUSTUP_TOOLCHAIN`).
pub(crate) fn runs_by_environment(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "WGETRC",
        "SYSTEM_WGETRC",
        "CURL_HOME",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "CC",
        "CXX",
        "AR",
        "LD",
        "CPP",
        "CFLAGS",
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "HOST_CC",
        "TARGET_CC",
        "MAKE",
        "MAKEFLAGS",
        "SHELL",
        "PKG_CONFIG",
    ];
    const PREFIXES: &[&str] = &["RUSTUP_", "CC_", "CXX_", "CFLAGS_", "CXXFLAGS_", "AR_"];
    NAMES.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || name.to_ascii_lowercase().starts_with("npm_config_")
}

/// The files a GNU sed script writes (`w FILE`, `W FILE`, `s/a/b/w
/// FILE`); `Err` when it runs a command (`e`, `s/a/b/e`) or holds what
/// the policy does not read.
pub(crate) fn sed_script_writes(script: &str) -> Result<Vec<String>, String> {
    let mut reader = SedReader {
        chars: script.chars().collect(),
        at: 0,
        writes: Vec::new(),
    };
    reader.script()?;
    Ok(reader.writes)
}

/// A sed script being read, command by command.
struct SedReader {
    chars: Vec<char>,
    at: usize,
    writes: Vec<String>,
}

const SED_UNREAD: &str = "a sed script the policy cannot read";

impl SedReader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.at += 1;
        }
    }

    /// The rest of the line (a file name, a label, text).
    fn rest_of_line(&mut self) -> String {
        let mut line = String::new();
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
            line.push(c);
        }
        line
    }

    fn script(&mut self) -> Result<(), String> {
        loop {
            while self
                .peek()
                .is_some_and(|c| c.is_whitespace() || c == ';' || c == '}')
            {
                self.at += 1;
            }
            match self.peek() {
                None => return Ok(()),
                Some('#') => {
                    self.rest_of_line();
                }
                Some(_) => self.command()?,
            }
        }
    }

    fn command(&mut self) -> Result<(), String> {
        if self.address()? {
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.at += 1;
                self.skip_blanks();
                if !self.address()? && !self.step() {
                    return Err(SED_UNREAD.into());
                }
            }
        }
        self.skip_blanks();
        while self.peek() == Some('!') {
            self.at += 1;
            self.skip_blanks();
        }
        let command = self.next().ok_or(SED_UNREAD)?;
        match command {
            '{' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z'
            | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => {
                self.skip_blanks();
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.at += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while self.peek().is_some_and(|c| c != '\n' && c != ';') {
                    self.at += 1;
                }
            }
            'a' | 'i' | 'c' => self.text(),
            'r' | 'R' => {
                self.rest_of_line();
            }
            'w' | 'W' => self.write()?,
            'e' => return Err("the sed script runs a command (`e`)".into()),
            's' => self.substitute()?,
            'y' => {
                let delimiter = self.delimiter()?;
                self.part(delimiter, false)?;
                self.part(delimiter, false)?;
            }
            _ => return Err(SED_UNREAD.into()),
        }
        Ok(())
    }

    /// An address, if one stands here: a line, `$`, `/re/` or `\cREc`
    /// (with `I`/`M`), `first~step`.
    fn address(&mut self) -> Result<bool, String> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.at += 1;
                }
            }
            Some('$') => self.at += 1,
            Some('/') => {
                self.at += 1;
                self.part('/', true)?;
                self.address_flags();
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.next().ok_or(SED_UNREAD)?;
                self.part(delimiter, true)?;
                self.address_flags();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `addr1,+N` and `addr1,~N`.
    fn step(&mut self) -> bool {
        if !matches!(self.peek(), Some('+' | '~')) {
            return false;
        }
        self.at += 1;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        true
    }

    fn address_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    fn delimiter(&mut self) -> Result<char, String> {
        match self.next() {
            Some(c) if c != '\n' && c != '\\' => Ok(c),
            _ => Err(SED_UNREAD.into()),
        }
    }

    /// A regex or replacement up to its delimiter; in a regex a bracket
    /// expression holds the delimiter as a character.
    fn part(&mut self, delimiter: char, regex: bool) -> Result<(), String> {
        while let Some(c) = self.next() {
            match c {
                '\\' => {
                    self.next().ok_or(SED_UNREAD)?;
                }
                '[' if regex => self.bracket()?,
                c if c == delimiter => return Ok(()),
                _ => {}
            }
        }
        Err(SED_UNREAD.into())
    }

    /// A bracket expression after its `[`.
    fn bracket(&mut self) -> Result<(), String> {
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        while let Some(c) = self.next() {
            match c {
                ']' => return Ok(()),
                '[' if matches!(self.peek(), Some(':' | '=' | '.')) => {
                    let kind = self.next().ok_or(SED_UNREAD)?;
                    while let Some(c) = self.next() {
                        if c == kind && self.peek() == Some(']') {
                            self.at += 1;
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        Err(SED_UNREAD.into())
    }

    fn substitute(&mut self) -> Result<(), String> {
        let delimiter = self.delimiter()?;
        self.part(delimiter, true)?;
        self.part(delimiter, false)?;
        while let Some(flag) = self.peek() {
            match flag {
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.at += 1,
                c if c.is_ascii_digit() => self.at += 1,
                'e' => return Err("the sed script runs a command (`s///e`)".into()),
                'w' => {
                    self.at += 1;
                    return self.write();
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// `w FILE`: the rest of the line names the file.
    fn write(&mut self) -> Result<(), String> {
        self.skip_blanks();
        let file = self.rest_of_line();
        if file.is_empty() {
            return Err(SED_UNREAD.into());
        }
        self.writes.push(file);
        Ok(())
    }

    /// `a text`, `i text`, `c text`: to the end of the line, a line
    /// ending in `\` going on.
    fn text(&mut self) {
        while let Some(c) = self.next() {
            match c {
                '\\' => {
                    self.next();
                }
                '\n' => return,
                _ => {}
            }
        }
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
        assert_eq!(
            writes("ln -s /etc/passwd"),
            Ok(vec!["passwd".into(), "/etc/passwd".into()])
        );
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
    fn long_options_may_be_prefixes() {
        assert_eq!(writes("sort --out=o in"), Ok(vec!["o".into()]));
        assert_eq!(writes("sort --outp o in"), Ok(vec!["o".into()]));
        assert_eq!(writes("cp --target=d a"), Ok(vec!["d".into()]));
        assert!(
            writes("curl --outp f u").is_err(),
            "ambiguous: --output, --output-dir"
        );
        assert_eq!(writes("wget --save-c=c -O- u"), Ok(vec!["c".into()]));
        assert_eq!(
            writes("wget --warc-file=w -O- u"),
            Ok(vec!["w.warc.gz".into(), "w.warc".into(), "w.cdx".into()])
        );
        assert_eq!(writes("wget -qb -O- u"), Ok(vec![".".into()]));
    }

    #[test]
    fn sed_scripts_write_and_run() {
        assert_eq!(writes("sed -n w/tmp/x f"), Ok(vec!["/tmp/x".into()]));
        assert_eq!(writes("sed -e s/a/b/w\tout -e p f"), Ok(vec!["out".into()]));
        assert_eq!(writes("sed 1,/x/Id;$!N;/[/]/p f"), Ok(vec![]));
        assert_eq!(writes("sed y/abc/xyz/ f"), Ok(vec![]));
        assert!(writes("sed 1e f").is_err());
        assert!(writes("sed s/a/b/e f").is_err());
        assert!(writes("sed -f script f").is_err());
        assert_eq!(writes("sed --sandbox -f script f"), Ok(vec![]));
        assert_eq!(
            sed_script_writes("/a/ {\n  s/x/y/g\n  w out.txt\n}\n$a done; w x"),
            Ok(vec!["out.txt".to_string()])
        );
        assert_eq!(sed_script_writes(":a;N;$!ba;s/\\n/ /g"), Ok(vec![]));
        assert!(sed_script_writes("s/a/b").is_err());
        assert!(sed_script_writes("k").is_err());
    }

    #[test]
    fn links_write_their_targets() {
        assert_eq!(
            writes("ln -s ../etc /tmp/d/e"),
            Ok(vec!["/tmp/d/e".into(), "/tmp/d/../etc".into()])
        );
        assert_eq!(writes("ln a b"), Ok(vec!["b".into(), "a".into()]));
        assert_eq!(writes("ln -sr a d/b"), Ok(vec!["d/b".into(), "a".into()]));
        assert_eq!(writes("ln -s ../x"), Ok(vec!["x".into(), "./../x".into()]));
        assert_eq!(
            writes("ln -st /tmp/d x"),
            Ok(vec!["/tmp/d".into(), "/tmp/d/x".into()])
        );
        assert_eq!(
            writes("cp -s /etc/passwd p"),
            Ok(vec!["/etc/passwd".into(), "p".into()])
        );
    }

    #[test]
    fn what_cannot_be_read_is_said() {
        assert!(writes("sort --compress-program=sh in").is_err());
        assert!(writes("install -s a b").is_err());
        assert!(writes("wget --use-askpass=x u").is_err());
        assert!(writes("tee -Z f").is_err());
        assert!(writes("rm --frob f").is_err());
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
