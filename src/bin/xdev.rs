//! The `xdev` command: a thin CLI over the library ([`xdev::client`] and
//! [`xdev::daemon`] do the work; this file parses arguments and prints).

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum, ValueHint};
use tracing_subscriber::EnvFilter;
use xdev::client::{self, ClientError, StageNotice};
use xdev::daemon::{self, DaemonOptions, PlanOptions};
use xdev::plan_command::PlanCommand;
use xdev::texts;
use xdev::{MountOptions, MountOwner, PlanHandlerKind};

// Beside this file, not in src/bin/ (where cargo would take it for a
// binary of its own).
#[path = "xdev/man.rs"]
mod man;
#[path = "xdev/policy.rs"]
mod policy;
#[path = "xdev/values.rs"]
mod values;

const AFTER_HELP: &str = "\
Client commands find the mount from --mount DIR, else $XDEV_DIR, else /xdev.

Examples:
  xdev mount /xdev                               # terminal 1: serve the devices
  xdev stage --label 'edit main.rs' -- git apply fix.patch   # terminal 2
  xdev resolve 'tests pass'                      # terminal 3: apply it
  echo 'tests pass' > /xdev/resolve              # ... or the same with a shell
  xdev run -- ./agent.sh                         # private mount for one command
  xdev hook < event.json                         # an agent's permission hook";

/// The environment variable that sets what is logged on stderr (a
/// `tracing` filter such as `info` or `xdev=debug`).
const LOG_ENV: &str = "XDEV_LOG";

/// What `xdev mount` does on each signal (its help shows it as a table).
const MOUNT_SIGNALS: &str = "\
Signals:
  SIGHUP, SIGINT, SIGQUIT, SIGTERM  stop: decisions under way get --grace, the
  (and SIGPWR, SIGXCPU, SIGIO)      mount is removed (and DIR, if xdev made it),
                                    exit 0
  SIGUSR1                           reopen the --journal file by its path (for
                                    logrotate); if that fails, keep the old one
  SIGUSR2, SIGALRM, SIGPIPE         ignored
  (and SIGVTALRM, SIGPROF, SIGXFSZ)";

/// Finalize an AI coding agent's staged work by writing a file.
#[derive(Parser)]
// The version carries the commit it was built from, when known (build.rs).
#[command(name = "xdev", version = env!("XDEV_VERSION"), about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where a client command finds the mount.
#[derive(Args, Clone, Debug, Default)]
struct MountArg {
    /// The xdev mount to use [default: $XDEV_DIR, else /xdev].
    #[arg(long, value_name = "DIR", global = true)]
    mount: Option<PathBuf>,
}

impl MountArg {
    /// The mount, once checked to be a live xdev mount (nothing is opened
    /// in a plain directory or a stale mount).
    fn dir(&self) -> Result<PathBuf, ClientError> {
        let dir = client::mount_dir(self.mount.as_deref());
        client::check_mount(&dir)?;
        Ok(dir)
    }
}

/// How the daemon (or `xdev run`) mounts.
#[derive(Args, Clone, Debug)]
struct ServeArgs {
    /// Let other users into the mount: they may list its directories (the
    /// pending ids and sessions) but read none of its files unless
    /// --share-journal is given too, and their writes to the devices fail
    /// with EACCES. Needs `user_allow_other` in /etc/fuse.conf when not run
    /// as root.
    #[arg(long)]
    allow_other: bool,
    /// Let other users read the session's files too (with --allow-other):
    /// status files, items, `log` and `events`. They show labels, reasons,
    /// details and result texts, which may hold secrets, so by default
    /// they are readable by the mount's owner only.
    #[arg(long)]
    share_journal: bool,
    /// Hand the mount to USER (a name or uid) and, if given, GROUP (a name
    /// or gid): USER decides and reads everything (the devices and `stage`
    /// are theirs); GROUP reads what USER reads and decides nothing; other
    /// users see what --allow-other and --share-journal let them, and
    /// without --allow-other can list and read nothing. Only root names
    /// another user, or a group it is not in [default: the user xdev runs
    /// as].
    #[arg(long, value_name = "USER[:GROUP]")]
    owner: Option<MountOwner>,
    /// Also append every journal record (what `log` shows) to FILE, synced
    /// before the device write that caused it returns. A decision is
    /// refused (ENOSPC, EIO) unless its intent record reaches FILE before it
    /// runs. FILE must be a regular file (created 0600; no symlink) that
    /// only you (or root) own and can write. SIGUSR1 reopens it by its path.
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Enable plan review: plans are `<slug>-plan.md` files in DIR, and the
    /// mount gets `plan/ctl` and `plan/status`.
    #[arg(long, value_name = "DIR")]
    plan_dir: Option<PathBuf>,
    /// How a `propose` is decided: `yolo` approves at once, `review` blocks
    /// the write until `xdev plan approve|refine`, `async` answers "Plan
    /// ready for review." at once and is decided later [default: review].
    #[arg(long, value_enum, value_name = "HANDLER", requires = "plan_dir")]
    plan_handler: Option<PlanHandlerKind>,
    /// Who implements a plan approved by `yolo` (shown in its answer)
    /// [default: the current agent].
    #[arg(long, value_name = "NAME", requires = "plan_dir")]
    execute_with: Option<String>,
    /// Start in plan mode (otherwise plan mode is off until `xdev plan
    /// enter`).
    #[arg(long, requires = "plan_dir")]
    plan_mode: bool,
    /// On a stop signal (SIGHUP, SIGINT, SIGQUIT, SIGTERM), how long
    /// decisions already running may take to finish (their writers get the
    /// real outcome); new ones are refused at once. Afterwards an apply
    /// still running gets EIO (outcome unknown), anything else ECANCELED
    /// (nothing applied).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = values::duration)]
    grace: Duration,
    /// FUSE request threads [default: 2]. Nothing a request does waits on
    /// a disk, so any number keeps the mount answering; measure with
    /// `cargo bench --bench mount` before changing it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
    /// Decide each preview by the rules in FILE (Claude Code's
    /// `permissions` allow/ask/deny) as it is staged, whoever stages it:
    /// an allow resolves it with the reason `policy: RULE`, a deny rejects
    /// it with the rule's reason, an ask leaves it for a person. FILE (and
    /// its directory) must be writable by no user but you and root. It is
    /// reloaded when it changes and on a write of `reload` to the mount's `policy` file; a file that
    /// fails to load keeps the rules in force (`status` says why).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// `enforce` decides as --policy says; `shadow` only journals what it
    /// would decide (a `policy` record) and decides nothing [default:
    /// enforce].
    #[arg(long, value_enum, value_name = "MODE", requires = "policy")]
    policy_mode: Option<xdev::daemon::PolicyMode>,
}

impl From<ServeArgs> for DaemonOptions {
    /// The one options struct `xdev mount` and `xdev run` hand to the
    /// daemon, which hands its `mount` on to the mount.
    fn from(args: ServeArgs) -> Self {
        let mut mount = MountOptions {
            allow_other: args.allow_other,
            share_journal: args.share_journal,
            owner: args.owner,
            journal_file: args.journal,
            grace: args.grace,
            ..MountOptions::default()
        };
        if let Some(threads) = args.threads {
            mount.threads = threads.into();
        }
        DaemonOptions {
            mount,
            plan: args.plan_dir.map(|plan_dir| PlanOptions {
                plan_dir,
                handler: args.plan_handler.unwrap_or_default(),
                execute_with: args.execute_with,
                plan_mode: args.plan_mode,
            }),
            policy: args.policy.map(|file| xdev::daemon::PolicyOptions {
                file,
                mode: args.policy_mode.unwrap_or_default(),
            }),
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Mount the devices at DIR and serve them in the foreground.
    ///
    /// Prints `xdev: mounted DIR` once the mount answers and serves until a
    /// stop signal; then decisions under way get --grace to finish, blocked
    /// writers are told what is known, the mount is removed and xdev exits 0. A DIR
    /// xdev created is removed too (after a SIGKILL, by the next `xdev
    /// mount DIR`). One daemon serves a DIR at a time: a second one exits 1.
    /// When another process unmounts DIR (fusermount3 -u, umount), xdev
    /// stops the same way and exits 5.
    #[command(after_help = MOUNT_SIGNALS)]
    Mount {
        #[command(flatten)]
        place: MountPlace,
        #[command(flatten)]
        serve: ServeArgs,
    },
    /// Wait until DIR is a live xdev mount (for shells and CI jobs that
    /// start `xdev mount DIR &`).
    ///
    /// Exits 0 once DIR answers. Exits 1 at once when the daemon named by
    /// --pid has exited (its own error says why: the directory was already
    /// served, FUSE is missing, ...), or when the timeout passes: a job
    /// never waits for a ready line that will not come. When another
    /// process serves DIR, the error names it.
    Wait {
        /// The mount point the daemon serves.
        dir: PathBuf,
        /// The `xdev mount` process to watch (in a shell: `$!`); 1 or more.
        #[arg(long, value_name = "PID", value_parser = values::process_id, allow_negative_numbers = true)]
        pid: Option<i32>,
        /// How long to wait at most.
        #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = values::duration)]
        timeout: Duration,
    },
    /// Print the mount's status (pending count, head, plan mode, last result).
    Status {
        /// Print `status.json` (with the whole pending stack) instead.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: MountArg,
    },
    /// APPLY the pending preview at the head of the stack (write `resolve`).
    ///
    /// Prints the result text and exits 0; on failure prints
    /// `xdev: ERRNO: message` to stderr and exits 1. The reason is TEXT
    /// (there is no --reason flag): `xdev resolve 'tests pass'`.
    #[command(override_usage = DEVICE_USAGE_RESOLVE)]
    Resolve(DeviceArgs),
    /// DISCARD the pending preview at the head of the stack (write `reject`).
    ///
    /// Prints the result text and exits 0; on failure prints
    /// `xdev: ERRNO: message` to stderr and exits 1. The reason is TEXT
    /// (there is no --reason flag): `xdev reject 'not needed'`.
    #[command(override_usage = DEVICE_USAGE_REJECT)]
    Reject(DeviceArgs),
    /// Submit a plan for approval (write `propose`; plan mode only).
    ///
    /// TEXT is the plan's slug (matching `<slug>-plan.md` in the plan
    /// directory); empty means the newest `*plan.md`. Prints the answer and
    /// exits 0; on failure prints `xdev: ERRNO: message` and exits 1.
    Propose {
        /// The plan's slug or title (read from stdin when absent).
        text: Vec<String>,
        #[command(flatten)]
        target: MountArg,
    },
    /// Stage a preview through the mount and wait for its decision.
    ///
    /// Prints the preview's id once staged, then waits. On apply runs CMD
    /// (argv, no shell): exit 0 makes its stdout the result text and xdev
    /// exits 0; a non-zero exit reports the tail of its stderr as the apply
    /// failure, the preview goes back to the head and xdev keeps waiting.
    /// On discard CMD never runs: `--on-reject` runs instead, if given, and
    /// xdev exits 3. When the deadline passes the preview is withdrawn
    /// (never applied) and xdev exits 4. Killing xdev withdraws the preview.
    /// CMD and CMD2 see XDEV_DIR, XDEV_ID and XDEV_REASON.
    ///
    /// Exit codes: 0 applied, 3 discarded, 4 deadline passed, 5 the mount
    /// went away while waiting (nothing was applied), 1 any other error.
    Stage {
        /// The preview's label (what a reviewer sees): one line of
        /// printable text, at most 1024 bytes.
        #[arg(long)]
        label: String,
        /// The tool that made the preview (part of its id): 1 to 64
        /// characters of A-Z a-z 0-9 _ . - [default: external].
        #[arg(long, value_name = "TOOL")]
        source_tool: Option<String>,
        /// Withdraw the preview if no decision has come after this long
        /// (e.g. `300ms`, `30s`, `5m`; at least 1ms, at most 7 days).
        #[arg(long, value_name = "DURATION", value_parser = values::stage_deadline)]
        deadline: Option<Duration>,
        /// A shell command line (run with `sh -c`) to run when the preview is
        /// discarded: its stdout becomes the reject result (its stderr tail
        /// the error if it fails).
        #[arg(long, value_name = "CMD2")]
        on_reject: Option<String>,
        /// The command to run when the preview is applied.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
        #[command(flatten)]
        target: MountArg,
    },
    /// Review plans: plan mode on/off, approve or refine, status.
    ///
    /// Needs a mount made with --plan-dir. Writes the command to
    /// `plan/ctl` and prints the answer; on failure prints `xdev: ERRNO:
    /// message` to stderr and exits 1.
    Plan {
        #[command(subcommand)]
        action: PlanAction,
        #[command(flatten)]
        target: MountArg,
    },
    /// Decide a coding agent's tool call through the devices (a command hook).
    ///
    /// Reads one hook event as JSON on stdin (Claude Code `PreToolUse` or
    /// `PermissionRequest`, Codex `PermissionRequest` or `PreToolUse`),
    /// stages the call as a preview labelled with what it does (`Bash: rm
    /// -rf build/`; the full tool input is `pending/<id>/detail`) and waits:
    /// `resolve` prints the agent's allow with the reason, `reject` its deny
    /// with the reason as the message the model reads. `ExitPlanMode` goes to
    /// the plan desk when the mount has one (`xdev plan approve|refine`).
    ///
    /// Exits 0. With no decision by the deadline, no mount, a mount error
    /// or bad input (stdin over 16 MiB included) it prints nothing (the
    /// agent asks as usual) and one line on stderr; `--on-timeout deny` and `--strict` deny instead. Killing
    /// it withdraws its preview. A command line it cannot parse (a typo in
    /// the hook's configuration) exits 1, which both agents take as a
    /// non-blocking error: the call goes on without the hook. With
    /// `--strict` on that command line it exits 2, which blocks the call.
    Hook {
        /// The agent, when the input does not tell (Codex inputs carry
        /// `turn_id`) [default: claude].
        #[arg(long, value_enum, value_name = "AGENT")]
        agent: Option<xdev::hook::Agent>,
        /// How long to wait for a decision; a little under the agents'
        /// default hook timeout of 600 s (set the hook's `timeout` above it);
        /// at most 7 days.
        #[arg(long, value_name = "DURATION", default_value = "590s", value_parser = values::stage_deadline)]
        deadline: Duration,
        /// What to answer when the deadline passes: `ask` prints nothing
        /// (the agent's own prompt decides), `deny` denies.
        #[arg(long, value_enum, value_name = "WHAT", default_value = "ask")]
        on_timeout: xdev::hook::OnTimeout,
        /// Deny the call when the mount cannot be asked (no mount, a stale
        /// one, any error) instead of printing nothing.
        #[arg(long)]
        strict: bool,
        /// Where to write an `ExitPlanMode` plan as `<slug>-plan.md`
        /// [default: the plan desk's directory].
        #[arg(long, value_name = "DIR")]
        plan_dir: Option<PathBuf>,
        /// Let the agent's own processes decide this hook's calls. By
        /// default the mount refuses (EPERM) a decision written by the
        /// process that ran the hook or any process it started; this is for
        /// a harness that decides from within by design.
        #[arg(long)]
        agent_may_decide: bool,
        #[command(flatten)]
        target: MountArg,
    },
    /// Run CMD for each newly staged preview (a notification), and again
    /// for one still pending after --after.
    ///
    /// Follows the mount's `events` and runs CMD with `sh -c`, the
    /// preview's `staged` record as one JSON line on its stdin and XDEV_ID,
    /// XDEV_LABEL, XDEV_SESSION, XDEV_TOOL and XDEV_DIR in its environment
    /// (XDEV_WAITED too for a run of --after). Commands run one at a time;
    /// at most 32 wait, more are dropped and logged. A failing CMD is
    /// logged and watching goes on. Exits 0 when the mount goes away (and
    /// says so on stderr) and on SIGINT or SIGTERM, once the CMD under way
    /// has ended.
    Watch {
        /// The shell command line to run (`notify-send "$XDEV_LABEL"`).
        #[arg(long, value_name = "CMD")]
        exec: OsString,
        /// Run CMD again, once, for a preview still pending this long after
        /// it was staged, those pending when watching starts included (e.g.
        /// `30s`, `5m`; at least 1ms, at most 7 days).
        #[arg(long, value_name = "DURATION", value_parser = values::stage_deadline)]
        after: Option<Duration>,
        /// The mount to watch [default: --mount, else $XDEV_DIR, else /xdev].
        dir: Option<PathBuf>,
        #[command(flatten)]
        target: MountArg,
    },
    /// Run CMD with a private mount, then unmount.
    ///
    /// Mounts at DIR (or a private temporary directory), runs CMD with
    /// XDEV_DIR set to the mount, unmounts, and exits with CMD's exit code
    /// (128 + the signal if it was killed; 127 if CMD is not found, 126 if
    /// it cannot be run, as shells say). SIGTERM and SIGHUP are passed
    /// on to CMD; the other stop signals of `xdev mount` are left to it
    /// (a terminal sends SIGINT and SIGQUIT to CMD too); the mount stays
    /// until CMD ends. SIGUSR1 reopens the --journal file; the signals
    /// `xdev mount` ignores are ignored.
    Run {
        /// Where to mount (created, and removed afterwards, when missing)
        /// [default: a private temporary directory].
        #[arg(long, value_name = "DIR")]
        mount: Option<PathBuf>,
        #[command(flatten)]
        serve: ServeArgs,
        /// The command to run.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Review every pending preview of a mount in a terminal UI.
    ///
    /// Lists the previews grouped by agent session (a plan under review
    /// pinned at the top), shows the selected one whole (a diff, the whole
    /// command, the patch, the plan, the tool input) and decides it by its
    /// id: Enter or `a` approves, `r` rejects with a reason the model
    /// reads, space marks several, `/` filters, `?` lists every key, `q`
    /// quits. Follows `events`: what is staged or decided elsewhere shows at
    /// once. Exits 0 (128 + the signal on SIGINT, SIGTERM or SIGHUP).
    /// NO_COLOR turns colours off.
    Review {
        /// The xdev mount to review [default: --mount, else $XDEV_DIR, else
        /// /xdev].
        #[arg(value_hint = ValueHint::DirPath)]
        dir: Option<PathBuf>,
        /// Ring the terminal's bell (BEL) when a preview arrives.
        #[arg(long)]
        bell: bool,
        #[command(flatten)]
        target: MountArg,
    },
    /// Check calls against a rules file, test its examples, reload a
    /// mount's rules, import an agent's rules.
    ///
    /// See `xdev policy check --help` and docs/policy.md.
    Policy {
        #[command(subcommand)]
        action: policy::PolicyAction,
        #[command(flatten)]
        target: MountArg,
    },
    /// Print a shell completion script to stdout.
    ///
    /// bash: save it as
    /// /usr/share/bash-completion/completions/xdev (or source it from
    /// ~/.bashrc); zsh: as `_xdev` in a directory of $fpath; fish: as
    /// ~/.config/fish/completions/xdev.fish.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print the man page (roff) to stdout, e.g. `xdev man | man -l -`.
    Man,
}

/// The shells `xdev completions` writes for.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

impl From<CompletionShell> for clap_complete::Shell {
    fn from(shell: CompletionShell) -> Self {
        match shell {
            CompletionShell::Bash => clap_complete::Shell::Bash,
            CompletionShell::Zsh => clap_complete::Shell::Zsh,
            CompletionShell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// Where `xdev mount` mounts: DIR, or the mount point of an instance.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
struct MountPlace {
    /// An empty directory to mount on, created when missing (a stale
    /// xdev mount there is cleared; files named like the devices, left
    /// by writes while nothing was mounted, are refused, never deleted).
    dir: Option<PathBuf>,
    /// Serve the mount of a named instance instead of DIR, as the
    /// systemd unit `xdev@NAME` does: `xdev` is /xdev, any other NAME
    /// /run/xdev/NAME (/run/xdev is created when missing). NAME is 1 to
    /// 64 characters of A-Z a-z 0-9 _ . : -.
    #[arg(long, value_name = "NAME", value_parser = daemon::instance_mount_point, value_hint = ValueHint::Other)]
    instance: Option<PathBuf>,
}

/// The usage lines of `resolve` and `reject`: --id and --session are
/// options, one at most (clap's own line, in an error that suggests one of
/// them, reads as if it were required).
const DEVICE_USAGE_RESOLVE: &str =
    "xdev resolve [--id <ID> | --session <SESSION>] [--mount <DIR>] [TEXT]...";
const DEVICE_USAGE_REJECT: &str =
    "xdev reject [--id <ID> | --session <SESSION>] [--mount <DIR>] [TEXT]...";

/// The arguments of `resolve` and `reject`.
#[derive(Args, Debug)]
struct DeviceArgs {
    /// The reason, as plain text (read from stdin when absent; several
    /// words are joined with spaces).
    text: Vec<String>,
    /// Decide this pending preview (through `pending/<ID>/...`) instead of
    /// the head. ID is a name `pending/` lists: 1 to 255 bytes of
    /// printable text, no `/`, neither `.` nor `..`.
    #[arg(long, value_name = "ID", conflicts_with = "session", value_parser = values::pending_id(), value_hint = ValueHint::Other)]
    id: Option<String>,
    /// Decide the newest preview of this agent session (through
    /// `sessions/<SESSION>/...`): what to use while several sessions wait.
    /// SESSION is held to the rule of ID; a session whose id breaks it is
    /// decided by --id, one preview at a time.
    #[arg(long, value_name = "SESSION", value_parser = values::session_dir(), value_hint = ValueHint::Other)]
    session: Option<String>,
    #[command(flatten)]
    target: MountArg,
}

#[derive(Debug, Subcommand)]
enum PlanAction {
    /// Turn plan mode on.
    Enter,
    /// Turn plan mode off (a review under way is cancelled).
    Exit,
    /// Approve the plan under review; plan mode ends.
    Approve {
        /// Feedback for the implementer (several words are joined).
        #[arg(long, value_name = "TEXT", num_args = 1..)]
        feedback: Vec<String>,
        /// The mode the agent continues in (acceptEdits, auto,
        /// bypassPermissions, default, dontAsk, plan); `xdev hook` passes
        /// it on to Claude Code as a `setMode` permission update.
        #[arg(long, value_name = "MODE")]
        mode: Option<xdev::plan_desk::ContinueMode>,
    },
    /// Ask for a better plan; plan mode stays on.
    Refine {
        /// The reviewer's feedback (several words are joined).
        #[arg(required = true, value_name = "TEXT")]
        feedback: Vec<String>,
    },
    /// Print the plan desk's status (`plan/status`, JSON).
    Status,
}

fn main() -> ExitCode {
    xdev::mount::use_one_heap();
    // Parsed before the log is set up, which depends on the command
    // (nothing logs while parsing).
    let cli = match plain_hook(std::env::args_os().skip(1)).map_or_else(Cli::try_parse, Ok) {
        Ok(cli) => cli,
        Err(error) => return refuse_command_line(&error),
    };
    let written_at_exit = start_log(&cli.command);
    match execute(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            // The log lines still queued come first: they led here.
            drop(written_at_exit);
            // Not `eprintln!`, which panics when stderr is a closed pipe.
            let _ = writeln!(std::io::stderr(), "xdev: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// `xdev hook`'s usual command lines, read without building clap's
/// command tree (a third of the hook's start-up, and the hook starts once
/// per tool call); anything else is clap's to read. See
/// `xdev::hook::plain_hook_args`.
fn plain_hook(args: impl IntoIterator<Item = OsString>) -> Option<Cli> {
    let plain = xdev::hook::plain_hook_args(args)?;
    Some(Cli {
        command: Command::Hook {
            agent: plain.agent,
            deadline: xdev::hook::DEFAULT_DEADLINE,
            on_timeout: plain.on_timeout,
            strict: plain.strict,
            plan_dir: plain.plan_dir,
            agent_may_decide: plain.agent_may_decide,
            target: MountArg { mount: plain.mount },
        },
    })
}

/// Sends the log to stderr, filtered by `$XDEV_LOG` (default `warn`).
///
/// The daemons (`xdev mount`, `xdev run`) log from a thread of their own,
/// and a line that finds its queue full is dropped: a stderr nobody reads
/// (a full pipe, a paused pager) must not hold up a request thread that
/// logs. The returned guard writes out what is queued when it is dropped.
/// Every other command is short-lived, is the only one waiting on its
/// stderr, and writes its own lines there itself: its log lines are
/// written the same way, with no thread to start and no queue to allocate
/// (the queue's 128,000 slots alone were more than half of what `xdev
/// hook` and `xdev --version` spent starting up, in page faults).
///
/// `xdev hook` says what went wrong in lines of its own and logs only for
/// someone who asks with `$XDEV_LOG`: it starts once per tool call, and
/// setting the log up was a tenth of its start-up.
fn start_log(command: &Command) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    if matches!(command, Command::Hook { .. }) && std::env::var_os(LOG_ENV).is_none() {
        return None;
    }
    let log = tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("warn,fuser=off")),
        )
        .with_ansi(std::io::stderr().is_terminal());
    if !matches!(command, Command::Mount { .. } | Command::Run { .. }) {
        log.with_writer(std::io::stderr).init();
        return None;
    }
    let (stderr, written_at_exit) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .thread_name("xdev-log")
        .finish(std::io::stderr());
    log.with_writer(stderr).init();
    Some(written_at_exit)
}

/// Reports a command line clap cannot parse (or prints the help or version
/// asked for). Clap's exit code 2 would be a "block this call" to an agent
/// that runs `xdev hook`: a typo in a hook's configuration must not deny
/// every tool call, so the hook exits 1 unless its command line asks to
/// fail closed (`--strict`).
fn refuse_command_line(error: &clap::Error) -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match reason_flag_refusal(error, subcommand(&args)) {
        Some(refusal) => refusal.print(),
        None => error.print(),
    }
    .unwrap_or(());
    if !error.use_stderr() {
        return ExitCode::SUCCESS;
    }
    if subcommand(&args) != Some("hook") {
        return ExitCode::from(2);
    }
    if args.iter().any(|arg| arg == "--strict") {
        ExitCode::from(2)
    } else {
        ExitCode::from(xdev::client::EXIT_ERROR)
    }
}

/// `xdev resolve --reason x`: clap would suggest `--session` (a name like
/// it) for what is TEXT; this refusal says where the reason goes instead.
fn reason_flag_refusal(error: &clap::Error, subcommand: Option<&str>) -> Option<clap::Error> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let name = subcommand.filter(|name| matches!(*name, "resolve" | "reject"))?;
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    if arg != "--reason" && !arg.starts_with("--reason=") {
        return None;
    }
    let mut cli = Cli::command();
    cli.build();
    let command = cli.find_subcommand_mut(name)?;
    Some(command.error(ErrorKind::UnknownArgument, texts::reason_is_text(name)))
}

/// The subcommand named on a command line: its first word that is not an
/// option (nor the value of the global `--mount`).
fn subcommand(args: &[std::ffi::OsString]) -> Option<&str> {
    let mut words = args.iter().map(|arg| arg.to_str());
    while let Some(word) = words.next() {
        match word? {
            "--mount" => {
                words.next();
            }
            option if option.starts_with('-') => {}
            name => return Some(name),
        }
    }
    None
}

fn execute(command: Command) -> Result<u8, ClientError> {
    match command {
        Command::Mount { place, serve } => {
            let dir = match (place.dir, place.instance) {
                (Some(dir), _) => dir,
                (None, Some(dir)) => {
                    create_instance_parent(&dir)?;
                    dir
                }
                // clap requires one of them; kept as a usage error anyway.
                (None, None) => Cli::command()
                    .error(
                        clap::error::ErrorKind::MissingRequiredArgument,
                        texts::MOUNT_NEEDS_A_PLACE,
                    )
                    .exit(),
            };
            let mut options = DaemonOptions::from(serve);
            options.mount.create_dir = true;
            daemon::serve(&dir, &options, || {
                announce(std::io::stdout(), &texts::mounted(&dir));
            })?;
            Ok(0)
        }
        Command::Watch {
            exec,
            after,
            dir,
            target,
        } => {
            let dir = match dir {
                Some(dir) => {
                    client::check_mount(&dir)?;
                    dir
                }
                None => target.dir()?,
            };
            let options = client::WatchOptions {
                command: exec,
                after,
            };
            if client::watch(&dir, &options)? == client::WatchEnd::MountGone {
                eprintln!("{}", texts::watch_mount_gone(&dir));
            }
            Ok(0)
        }
        Command::Wait { dir, pid, timeout } => {
            client::wait_for_mount(&dir, pid, timeout)?;
            Ok(0)
        }
        Command::Status { json, target } => {
            let file = if json { "status.json" } else { "status" };
            print(&client::read_text(&target.dir()?.join(file))?)
        }
        Command::Resolve(args) => device(args, "resolve"),
        Command::Reject(args) => device(args, "reject"),
        Command::Propose { text, target } => {
            check_plan_slug(&text)?;
            let device = target.dir()?.join("propose");
            let message = message(&text)?;
            answer(client::write_device(&device, &message)?)
        }
        Command::Stage {
            label,
            source_tool,
            deadline,
            on_reject,
            command,
            target,
        } => {
            let options = client::StageOptions {
                preview: client::PreviewRequest {
                    label,
                    source_tool,
                    deadline,
                    ..client::PreviewRequest::default()
                },
                on_reject,
                command,
            };
            let outcome = client::stage(&target.dir()?, &options, |notice| match notice {
                StageNotice::Staged(id) => announce(std::io::stdout(), &id),
                StageNotice::ApplyFailed(_) => {
                    announce(std::io::stderr(), texts::STAGE_APPLY_FAILED);
                }
                StageNotice::RejectFailed(_) => {
                    announce(std::io::stderr(), texts::STAGE_REJECT_FAILED);
                }
                StageNotice::AppliedUnreported => {
                    announce(std::io::stderr(), texts::STAGE_APPLIED_UNREPORTED);
                }
            })?;
            if outcome == client::StageOutcome::DeadlinePassed {
                announce(std::io::stderr(), texts::STAGE_DEADLINE_PASSED);
            }
            Ok(outcome.exit_code())
        }
        Command::Plan { action, target } => {
            let dir = target.dir()?;
            let command = match action {
                PlanAction::Status => {
                    return print(&client::read_text(&dir.join("plan").join("status"))?)
                }
                PlanAction::Enter => PlanCommand::Enter,
                PlanAction::Exit => PlanCommand::Exit,
                PlanAction::Approve { feedback, mode } => {
                    let feedback = feedback.join(" ");
                    PlanCommand::Approve {
                        feedback: (!feedback.trim().is_empty()).then_some(feedback),
                        mode,
                    }
                }
                PlanAction::Refine { feedback } => PlanCommand::Refine(feedback.join(" ")),
            };
            answer(client::plan_control(&dir, &command)?)
        }
        Command::Hook {
            agent,
            deadline,
            on_timeout,
            strict,
            plan_dir,
            agent_may_decide,
            target,
        } => {
            let options = xdev::hook::HookOptions {
                mount: client::mount_dir(target.mount.as_deref()),
                agent,
                deadline,
                on_timeout,
                strict,
                plan_dir,
                agent_may_decide,
            };
            hook(&options)
        }
        Command::Run {
            mount,
            serve,
            command,
        } => {
            let code = daemon::run(mount.as_deref(), &DaemonOptions::from(serve), &command)?;
            Ok(u8::try_from(code).unwrap_or(client::EXIT_ERROR))
        }
        Command::Review { dir, bell, target } => {
            let dir = match dir {
                Some(dir) => dir,
                None => client::mount_dir(target.mount.as_deref()),
            };
            xdev::review::run(&dir, &xdev::review::ReviewOptions { bell })
        }
        Command::Policy { action, target } => policy::run(action, &target),
        Command::Completions { shell } => {
            // Rendered in memory first: clap_complete panics when its
            // writer fails (`xdev completions bash | head -1`), and a
            // failed stdout is an error here like any other.
            let mut script = Vec::new();
            clap_complete::generate(
                clap_complete::Shell::from(shell),
                &mut Cli::command(),
                "xdev",
                &mut script,
            );
            print_bytes(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            man::render(Cli::command(), &mut page).map_err(|source| ClientError::Io {
                what: texts::CANNOT_RENDER_MAN_PAGE.into(),
                source,
            })?;
            print_bytes(&page)
        }
    }
}

/// Creates `/run/xdev` (or whatever holds an instance's mount point) when
/// missing. The mount point itself is left to `xdev mount`, which creates
/// it and removes it again on exit.
fn create_instance_parent(dir: &std::path::Path) -> Result<(), ClientError> {
    use std::os::unix::fs::DirBuilderExt;
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    // 0755: other users reach a mount below it (with --allow-other).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(parent)
        .map_err(|source| ClientError::Io {
            what: texts::cannot_create(parent),
            source,
        })
}

/// `xdev hook`: stdout carries the agent's answer and nothing else; the
/// exit code is always 0, so the agent never takes a failed hook for a
/// verdict.
fn hook(options: &xdev::hook::HookOptions) -> Result<u8, ClientError> {
    xdev::hook::run_reading(options, std::io::stdin().lock(), xdev::hook::answer_late).print();
    Ok(0)
}

/// `resolve` or `reject`, of the head or of one item.
fn device(args: DeviceArgs, name: &str) -> Result<u8, ClientError> {
    let dir = args.target.dir()?;
    let path = match (&args.id, &args.session) {
        (Some(id), _) => dir.join("pending").join(id).join(name),
        (None, Some(session)) => dir.join("sessions").join(session).join(name),
        (None, None) => dir.join(name),
    };
    let message = message(&args.text)?;
    answer(client::write_device(&path, &message)?)
}

/// Refuses the words of `xdev propose SLUG` that the plan title rules (the
/// mount's) refuse, before any mount is looked for: a usage error, as a bad
/// `--id` is. A slug on stdin is left to the mount.
fn check_plan_slug(words: &[String]) -> Result<(), ClientError> {
    if words.is_empty() {
        return Ok(());
    }
    let slug = words.join(" ");
    match xdev::session::PlanTitle::parse(&slug) {
        Ok(_) => Ok(()),
        Err(why) => Err(ClientError::BadArgument(texts::bad_plan_slug(&slug, why))),
    }
}

/// The message: the words given, else all of stdin.
fn message(words: &[String]) -> Result<Vec<u8>, ClientError> {
    if !words.is_empty() {
        return Ok(words.join(" ").into_bytes());
    }
    let mut stdin = Vec::new();
    std::io::stdin()
        .read_to_end(&mut stdin)
        .map_err(|source| ClientError::Io {
            what: texts::CANNOT_READ_MESSAGE.into(),
            source,
        })?;
    Ok(stdin)
}

/// Prints a line that tells a reader something (the ready line, the staged
/// id, a notice) while the command runs on. A reader that went away
/// (`xdev mount D | true`) must not stop the daemon or the stager: the
/// failure is logged and the work goes on.
fn announce(mut out: impl Write, line: &str) {
    if let Err(error) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        tracing::warn!(%error, line, "cannot print a line; carrying on");
    }
}

/// Prints a device's answer (with its newline).
fn answer(text: String) -> Result<u8, ClientError> {
    print(&format!("{text}\n"))
}

/// Prints text as is.
fn print(text: &str) -> Result<u8, ClientError> {
    print_bytes(text.as_bytes())
}

/// Prints bytes as they are. A reader that has gone away (`xdev man |
/// head -c1`, `xdev completions zsh | true`) ends the output quietly with
/// exit 0, as ripgrep does: it asked for no more, and what the command did
/// (a decision, say) is done either way. SIGPIPE stays ignored, so the
/// daemon of `xdev mount D | true` is never killed by it.
fn print_bytes(bytes: &[u8]) -> Result<u8, ClientError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(source) => Err(ClientError::Io {
            what: texts::CANNOT_WRITE_STDOUT.into(),
            source,
        }),
        Ok(()) => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook's plain command lines read as clap reads them (the
    /// default deadline included).
    #[test]
    fn a_plain_hook_line_reads_as_clap_reads_it() {
        for line in [
            "hook",
            "hook --mount /x",
            "hook --mount=/x --agent codex --on-timeout deny --strict --plan-dir /p --agent-may-decide",
        ] {
            let words: Vec<OsString> = line.split(' ').map(OsString::from).collect();
            let plain = plain_hook(words.clone()).expect("a plain line");
            let by_clap = Cli::try_parse_from(std::iter::once("xdev".into()).chain(words))
                .unwrap_or_else(|error| panic!("{line}: {error}"));
            // Every field, the ones the plain reader never sees included.
            assert_eq!(
                format!("{:?}", plain.command),
                format!("{:?}", by_clap.command),
                "{line}"
            );
        }
    }
}
