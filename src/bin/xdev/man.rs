//! `xdev man`: the whole command line as one man page, xdev(1).
//!
//! clap_mangen renders one page per command and lists subcommands as
//! `xdev-mount(1)`, pages nobody installs. A user looks in one page for
//! everything, as `man git` does not let them, so this composes a single
//! page from clap_mangen's sections: the top-level command, then each
//! command under COMMANDS with its synopsis, description and options.

use std::io::{self, Write};

use clap_mangen::Man;

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
    out.write_all(FILES.as_bytes())?;
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(out, "fusermount3(1), systemd.service(5)")?;
    Ok(())
}

/// Where an installed xdev serves, and the unit that does it.
const FILES: &str = r#".SH FILES
.TP
/xdev
The conventional mount: `xdev mount /xdev`, or the systemd unit instance xdev@xdev.
.TP
/run/xdev/NAME
The mount of the unit instance xdev@NAME (`xdev mount --instance NAME`).
.TP
xdev@.service
The systemd template unit, in lib/systemd/system under the install prefix.
"#;

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
