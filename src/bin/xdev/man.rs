//! `xdev man`: the whole command line as one man page, xdev(1).
//!
//! clap_mangen renders one page per command and lists subcommands as
//! `xdev-mount(1)`, pages nobody installs. A user looks in one page for
//! everything, as `man git` does not let them, so this composes a single
//! page from clap_mangen's sections: the top-level command, then each
//! command under COMMANDS with its synopsis, description and options; then
//! FILES, ENVIRONMENT and EXIT STATUS from the tables and constants the
//! code itself uses ([`texts::MOUNT_FILES`], [`client::MOUNT_ENV`],
//! [`client::EXIT_ERROR`], ...), so the page cannot drift from them.

use std::io::{self, Write};

use clap_mangen::Man;
use xdev::{client, texts};

/// Writes xdev(1) for `cmd` (the built-up `xdev` command) to `out`.
pub(crate) fn render(cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let mut cmd = cmd;
    // Gives every subcommand its full name (`xdev plan approve`) for the
    // synopses below.
    cmd.build();
    let page = Man::new(cmd.clone());
    // The title brings the preamble (string definitions) every rendered
    // piece starts with; the other pieces go without it.
    page.render_title(out)?;
    section(out, Headings::Keep, |buffer| {
        page.render_name_section(buffer)
    })?;
    section(out, Headings::Keep, |buffer| {
        page.render_synopsis_section(buffer)
    })?;
    section(out, Headings::Keep, |buffer| {
        page.render_description_section(buffer)
    })?;
    section(out, Headings::Keep, |buffer| {
        page.render_options_section(buffer)
    })?;
    writeln!(out, ".SH COMMANDS")?;
    for sub in visible_subcommands(&cmd) {
        render_command(sub, out)?;
    }
    if cmd.get_after_help().is_some() {
        writeln!(out, ".SH EXAMPLES")?;
        preformatted(out, |buffer| page.render_extra_section(buffer))?;
    }
    files(out)?;
    environment(out)?;
    exit_status(out)?;
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(out, "fusermount3(1), systemd.service(5)")?;
    Ok(())
}

/// Where an installed xdev serves, and the unit that does it.
const INSTALLED_FILES: [(&str, &str); 3] = [
    (
        "/xdev",
        "The conventional mount: `xdev mount /xdev`, or the systemd unit instance xdev@xdev.",
    ),
    (
        "/run/xdev/NAME",
        "The mount of the unit instance xdev@NAME (`xdev mount --instance NAME`).",
    ),
    (
        "xdev@.service",
        "The systemd template unit, in lib/systemd/system under the install prefix.",
    ),
];

/// FILES: where xdev serves, then the files of a mount at DIR.
fn files(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, ".SH FILES")?;
    for (path, what) in INSTALLED_FILES {
        tagged(out, &roff(path), what)?;
    }
    writeln!(out, ".PP")?;
    writeln!(
        out,
        "{}",
        roff("The files of a mount at DIR (see also docs/semantics.md):")
    )?;
    for (path, what) in texts::MOUNT_FILES {
        tagged(out, &format!("\\fIDIR\\fR/{}", roff(path)), what)?;
    }
    Ok(())
}

/// The environment variables xdev reads or sets.
fn environment(out: &mut dyn Write) -> io::Result<()> {
    let variables = [
        (
            client::MOUNT_ENV,
            "The mount a client command uses when --mount is not given (else /xdev); `xdev run` sets it for its command, `xdev stage` for CMD and CMD2, and `xdev watch` for its CMD.",
        ),
        (
            client::ID_ENV,
            "Set by `xdev stage` for CMD and CMD2, and by `xdev watch` for its CMD: the preview's id.",
        ),
        (
            client::LABEL_ENV,
            "Set by `xdev watch` for its CMD: the preview's label, on one line.",
        ),
        (
            client::SESSION_ENV,
            "Set by `xdev watch` for its CMD: the preview's agent session id (empty for none).",
        ),
        (
            client::TOOL_ENV,
            "Set by `xdev watch` for its CMD: the tool that staged the preview.",
        ),
        (
            client::WAITED_ENV,
            "Set by `xdev watch --after D` for its second run of CMD: D, how long the preview has waited.",
        ),
        (
            client::REASON_ENV,
            "Set by `xdev stage` for CMD and CMD2: the reason the decision was made with.",
        ),
        (
            super::policy::POLICY_ENV,
            "The rules file `xdev policy check` uses when --policy is not given (else the one the mount's `policy` file names).",
        ),
        (
            super::LOG_ENV,
            "What is logged on stderr, as a tracing filter (`info`, `xdev=debug`) [default: warn].",
        ),
    ];
    writeln!(out, ".SH ENVIRONMENT")?;
    for (name, what) in variables {
        tagged(out, name, what)?;
    }
    Ok(())
}

/// The exit codes of every command (docs/cli.md has the same table).
fn exit_status(out: &mut dyn Write) -> io::Result<()> {
    let codes = [
        (client::EXIT_APPLIED.to_string(), "Done (`xdev stage`: applied)."),
        (
            client::EXIT_ERROR.to_string(),
            "Error: no live xdev mount there, a device refused the message (`xdev: ERRNO: message`), the mount could not be made, ...",
        ),
        (
            client::EXIT_USAGE.to_string(),
            "Usage error, nothing was done: an unknown option, a malformed value (checked before any mount is looked for), a name the mount never lists (`--session ..`).",
        ),
        (
            client::EXIT_DISCARDED.to_string(),
            "`xdev stage`: the preview was discarded.",
        ),
        (
            client::EXIT_DEADLINE.to_string(),
            "`xdev stage`: the deadline passed; the preview was withdrawn.",
        ),
        (
            client::EXIT_MOUNT_GONE.to_string(),
            "`xdev stage`: the mount went away while it waited; CMD did not run.",
        ),
        (
            client::EXIT_POLICY_ASK.to_string(),
            "`xdev policy check`: the rules ask a person (0 is allow; 1 the rules file does not load).",
        ),
        (
            client::EXIT_POLICY_DENY.to_string(),
            "`xdev policy check`: the rules deny the call.",
        ),
        (
            format!("{}, {}", client::EXIT_CANNOT_RUN, client::EXIT_NOT_FOUND),
            "`xdev run`: CMD could not be run, or was not found.",
        ),
        (
            "any".to_string(),
            "`xdev run`: CMD's own exit code (128 + N if signal N killed it).",
        ),
    ];
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for (code, what) in codes {
        tagged(out, &code, what)?;
    }
    writeln!(out, ".PP")?;
    writeln!(
        out,
        "{}",
        roff("`xdev hook` exits 0 whatever it answered (1 for a command line it cannot parse, 2 with --strict on that line). A reader that closes stdout early (`xdev man | head`) ends the command quietly with status 0 (what it did, a decision say, is done either way).")
    )
}

/// One `.TP` entry: `tag` (roff already) and its text.
fn tagged(out: &mut dyn Write, tag: &str, text: &str) -> io::Result<()> {
    writeln!(out, ".TP")?;
    writeln!(out, "{tag}")?;
    writeln!(out, "{}", roff(text))
}

/// `text` for roff: backslashes and hyphens escaped, and a leading `.` or
/// `'` (a request) made literal.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// One command (and the commands under it, `xdev plan ...`) as a
/// subsection.
fn render_command(cmd: &clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    writeln!(out, ".SS \"{}\"", name.replace('"', "\\(dq"))?;
    let page = Man::new(cmd.clone());
    section(out, Headings::Drop, |buffer| {
        page.render_synopsis_section(buffer)
    })?;
    // The synopsis is a paragraph of its own.
    writeln!(out, ".PP")?;
    section(out, Headings::Drop, |buffer| {
        page.render_description_section(buffer)
    })?;
    if cmd.get_arguments().any(|arg| !arg.is_hide_set()) {
        section(out, Headings::Drop, |buffer| {
            page.render_options_section(buffer)
        })?;
    }
    if cmd.get_after_help().is_some() {
        writeln!(out, ".PP")?;
        preformatted(out, |buffer| page.render_extra_section(buffer))?;
    }
    for sub in visible_subcommands(cmd) {
        render_command(sub, out)?;
    }
    Ok(())
}

fn visible_subcommands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
}

/// Writes a piece laid out by hand (the examples, the signal table of
/// `xdev mount`) line for line, unfilled, without its heading.
fn preformatted(
    out: &mut dyn Write,
    render: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    writeln!(out, ".nf")?;
    section(out, Headings::Drop, render)?;
    writeln!(out, ".fi")
}

/// Whether a rendered piece keeps its `.SH` heading.
#[derive(Clone, Copy, PartialEq)]
enum Headings {
    Keep,
    /// Dropped, so that the piece can stand inside a subsection.
    Drop,
}

/// Writes a piece clap_mangen renders, without the preamble the title
/// already wrote.
fn section(
    out: &mut dyn Write,
    headings: Headings,
    render: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    let mut buffer = Vec::new();
    render(&mut buffer)?;
    let text = String::from_utf8_lossy(&buffer);
    let wanted = |line: &&str| {
        !(line.starts_with(".ie \\n(.g .ds Aq")
            || line.starts_with(".el .ds Aq")
            || (headings == Headings::Drop && line.starts_with(".SH ")))
    };
    for line in text.lines().filter(wanted) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
