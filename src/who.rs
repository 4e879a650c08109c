//! Who made a request: the writer's uid, process id and process name, as
//! the journal records them.

use crate::maps::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::session::preview::AgentProcess;

/// The process behind a request: its uid, pid and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Who {
    /// The user id.
    pub uid: u32,
    /// The process id.
    pub pid: u32,
    /// The process name (`/proc/<pid>/comm`), e.g. `python3`.
    pub process: String,
}

impl Who {
    /// The process of thread `tid` as `/proc` shows it now, with this uid.
    pub fn of_thread(uid: u32, tid: u32) -> Who {
        let pid = thread_group(tid);
        Who {
            uid,
            pid,
            process: process_name(pid),
        }
    }

    /// This process.
    pub fn current() -> Who {
        let uid = nix::unistd::getuid().as_raw();
        Who::of_thread(uid, std::process::id())
    }
}

/// The process (thread group) thread `tid` belongs to. Most writers write
/// from their main thread, which leads its group and is its own process:
/// that is asked of the kernel in one call, and only another thread's
/// process is read from its `status` (which the kernel takes 1.4 KB of
/// text to say, about 25 us here).
fn thread_group(tid: u32) -> u32 {
    if leads_its_group(tid) {
        return tid;
    }
    read_proc(&format!("/proc/{tid}/status"))
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Tgid:"))
                .and_then(|value| value.trim().parse().ok())
        })
        .unwrap_or(tid)
}

/// Whether thread `tid` leads its thread group (its id is its process's):
/// `pidfd_open` takes only such a thread. A kernel without it (before
/// Linux 5.3) says no, and the caller reads `status` instead.
fn leads_its_group(tid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(tid) else {
        return false;
    };
    // SAFETY: pidfd_open takes two integers and returns a new descriptor,
    // which is ours alone and closed at once.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    match i32::try_from(fd) {
        Ok(fd) if fd >= 0 => {
            // SAFETY: `fd` was just opened here and is closed once.
            unsafe { libc::close(fd) };
            true
        }
        _ => false,
    }
}

/// `/proc/<pid>/comm`, opened.
fn open_name(pid: u32) -> Option<File> {
    File::open(format!("/proc/{pid}/comm")).ok()
}

/// The process name behind an open `/proc/<pid>/comm`, read afresh (it
/// changes on `exec`). `None` once that process is gone: the descriptor
/// keeps pointing at it, so a reused pid is never mistaken for it.
fn read_name(comm: &File) -> Option<String> {
    // A name is at most 15 bytes and a newline.
    let mut buf = [0u8; 64];
    let len = comm.read_at(&mut buf, 0).ok().filter(|&len| len > 0)?;
    let name = String::from_utf8_lossy(&buf[..len]);
    Some(name.trim_end().to_string())
}

/// The name of process `pid` right now.
fn process_name(pid: u32) -> String {
    open_name(pid)
        .as_ref()
        .and_then(read_name)
        .unwrap_or_default()
}

/// How long a thread's process id is trusted without asking `/proc` again
/// (a thread id is only reused after the thread is gone).
const THREAD_GROUP_TTL: Duration = Duration::from_millis(250);

/// Writer threads remembered at most; each holds one open descriptor.
const MAX_WRITERS: usize = 64;

/// A writer thread seen recently.
#[derive(Debug)]
struct Writer {
    pid: u32,
    comm: Arc<File>,
    seen: Instant,
}

/// Remembers recent writer threads: their process and an open
/// `/proc/<pid>/comm`. A writer in a loop then costs one `pread` per write
/// instead of opening and reading two `/proc` files (about 0.6 us instead
/// of 5 us measured here). The name is still read on every write: a process
/// that `exec`s keeps its pid but not its name.
#[derive(Debug, Default)]
pub struct WhoCache {
    writers: Mutex<HashMap<u32, Writer>>,
}

impl WhoCache {
    /// The identity of thread `tid` acting as `uid`.
    pub fn who(&self, uid: u32, tid: u32) -> Who {
        let now = Instant::now();
        if let Some((pid, process)) = self.recent(tid, now) {
            return Who { uid, pid, process };
        }
        let pid = thread_group(tid);
        let Some(comm) = open_name(pid) else {
            return Who {
                uid,
                pid,
                process: String::new(),
            };
        };
        let process = read_name(&comm).unwrap_or_default();
        self.remember(tid, pid, comm, now);
        Who { uid, pid, process }
    }

    /// The process thread `tid` belongs to, without reading its name (the
    /// size a writer sees, and a draft's creator, need only this).
    pub(crate) fn pid(&self, tid: u32) -> u32 {
        let now = Instant::now();
        let cached = self
            .writers
            .lock()
            .get(&tid)
            .filter(|writer| now.duration_since(writer.seen) < THREAD_GROUP_TTL)
            .map(|writer| writer.pid);
        cached.unwrap_or_else(|| thread_group(tid))
    }

    /// The process and current name of a writer seen within the TTL whose
    /// process still exists.
    fn recent(&self, tid: u32, now: Instant) -> Option<(u32, String)> {
        let (pid, comm) = {
            let writers = self.writers.lock();
            let writer = writers
                .get(&tid)
                .filter(|writer| now.duration_since(writer.seen) < THREAD_GROUP_TTL)?;
            (writer.pid, Arc::clone(&writer.comm))
        };
        Some((pid, read_name(&comm)?))
    }

    fn remember(&self, tid: u32, pid: u32, comm: File, now: Instant) {
        let mut writers = self.writers.lock();
        if writers.len() >= MAX_WRITERS {
            writers.retain(|_, writer| now.duration_since(writer.seen) < THREAD_GROUP_TTL);
        }
        if writers.len() >= MAX_WRITERS {
            writers.clear();
        }
        let comm = Arc::new(comm);
        writers.insert(
            tid,
            Writer {
                pid,
                comm,
                seen: now,
            },
        );
    }
}

// ----- the agent's process tree ------------------------------------------

/// How many wrappers between an agent and its hook are looked through
/// (`sh -c` running `timeout 600 xdev hook` is two).
const MAX_WRAPPERS: usize = 8;

/// How many ancestors of a writer are looked at, at most: far more than any
/// real process tree is deep, and a bound should `/proc` ever show a loop.
const MAX_ANCESTORS: usize = 4096;

/// What `/proc/<pid>/stat` says of a process that the guard needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stat {
    /// Its name (what `comm` holds).
    name: String,
    /// Its parent's pid (0 for the first process of a pid namespace).
    ppid: u32,
    /// When it started, in clock ticks since boot.
    started: u64,
}

/// The parent and start time of process `pid`, while it exists.
fn stat(pid: u32) -> Option<Stat> {
    let text = read_proc(&format!("/proc/{pid}/stat"))?;
    parse_stat(&text)
}

/// A `/proc` file's text. Its size shows as 0, so a read sized by it
/// starts at 32 bytes and doubles (eight reads for a `status`); a 4 KiB
/// buffer takes it in one read and the end in a second. Every staging
/// reads several of these (the stager and its ancestors).
fn read_proc(path: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::with_capacity(4096);
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    Some(text)
}

/// Reads a `/proc/<pid>/stat` line: the name in parentheses may hold
/// spaces and parentheses itself, so the fields are counted from the last
/// `)`: state, ppid (field 4), ... starttime (field 22).
fn parse_stat(text: &str) -> Option<Stat> {
    let (head, fields) = text.rsplit_once(')')?;
    let (_, name) = head.split_once('(')?;
    let fields: Vec<&str> = fields.split_whitespace().collect();
    Some(Stat {
        name: name.to_string(),
        ppid: fields.get(1)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// The file behind process `pid`'s standard input, as `/proc` names it
/// (`pipe:[4711]`, `socket:[4712]`, `/dev/null`), when it lets the mount
/// see it. The link is read, never followed: following it would stat the
/// file on its own filesystem, which a stager chooses (a hung network or
/// FUSE mount, this very mount) and a request thread must not wait on.
fn stdin_of(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()
}

/// The parent of `child`, with its start time, read so that the two
/// belong together: `child` still has that parent after its start time
/// was read (a parent cannot be replaced while its child points to it).
fn parent_of(child: u32) -> Option<(u32, Stat)> {
    let ppid = stat(child)?.ppid;
    if ppid == 0 {
        return None;
    }
    let parent = stat(ppid)?;
    (stat(child)?.ppid == ppid).then_some((ppid, parent))
}

/// The agent process whose hook is process `stager`: the process that ran
/// it, that is its nearest ancestor that does not share its standard input.
/// An agent writes the event into a pipe that is the hook's standard
/// input; a wrapper between the two (`sh -c` or `bash -lc`, as Claude Code
/// and Codex run hook commands, or a `timeout`) hands that same pipe on, so
/// it is looked through, while the agent's own standard input is another
/// file. `None` when the stager is gone or has no parent the mount can see
/// (a stager in another pid namespace, which the kernel reports as pid 0).
pub(crate) fn agent_of_stager(stager: u32) -> Option<AgentProcess> {
    let input = stdin_of(stager);
    let (mut pid, mut process) = parent_of(stager)?;
    for _ in 0..MAX_WRAPPERS {
        if input.is_none() || stdin_of(pid) != input {
            break;
        }
        let Some(parent) = parent_of(pid) else { break };
        (pid, process) = parent;
    }
    Some(AgentProcess {
        pid,
        started: process.started,
        name: process.name,
    })
}

/// Why `agent`, found for a stager, is no agent of its own: init (pid 1),
/// whose tree every process of the machine is in, so that the rule would
/// refuse everyone's decision, the person's too. A stager finds init when
/// it was started detached (`setsid -f`, a double fork) or its agent
/// exited before it staged. `None` for any other process.
pub(crate) fn no_agent_of_its_own(agent: &AgentProcess) -> Option<String> {
    (agent.pid == 1).then(|| crate::texts::stager_under_init(&agent.name))
}

/// Whether process `pid` is `agent` or one of the processes it started
/// (and their children, to any depth), judged by pid and start time, so
/// that a later process given the agent's pid is never taken for it. A
/// process that left the agent's tree (its parent exited, so it was handed
/// to init or a subreaper) is no longer in it.
pub(crate) fn descends_from(pid: u32, agent: &AgentProcess) -> bool {
    let mut pid = pid;
    for _ in 0..MAX_ANCESTORS {
        if pid == 0 {
            return false;
        }
        let Some(process) = stat(pid) else {
            return false;
        };
        if pid == agent.pid && process.started == agent.started {
            return true;
        }
        pid = process.ppid;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Waits until process `pid` is named `name`.
    fn wait_for_name(pid: u32, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while process_name(pid) != name {
            assert!(
                Instant::now() < deadline,
                "process {pid} never became {name}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_cached_writer_is_renamed_by_exec_and_forgotten_when_gone() {
        let cache = WhoCache::default();
        let mut child = Command::new("sh")
            .args(["-c", "read line; exec sleep 30"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let pid = child.id();
        wait_for_name(pid, "sh");
        let before = cache.who(7, pid);
        assert_eq!(
            before,
            Who {
                uid: 7,
                pid,
                process: "sh".into()
            }
        );

        // exec keeps the pid and changes the name: the cached entry shows it.
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"go\n")
            .expect("write");
        wait_for_name(pid, "sleep");
        assert_eq!(cache.who(7, pid).process, "sleep");

        // Once the process is gone its cached descriptor reads nothing and
        // the thread is looked up afresh.
        child.kill().expect("kill");
        child.wait().expect("reap");
        assert_eq!(cache.who(7, pid).process, "");
    }

    #[test]
    fn a_vanished_writer_is_named_by_its_thread_id_and_no_name() {
        let cache = WhoCache::default();
        let gone = u32::MAX - 2;
        let who = cache.who(0, gone);
        assert_eq!((who.pid, who.process.as_str()), (gone, ""));
    }

    #[test]
    fn a_main_thread_is_its_own_process_and_another_thread_is_found_in_its() {
        let me = std::process::id();
        assert!(leads_its_group(me));
        assert_eq!(thread_group(me), me);
        let (told, tid) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let _ = told.send(nix::unistd::gettid().as_raw() as u32);
            let _ = wait.recv();
        });
        let tid = tid.recv().expect("the thread's id");
        assert!(
            !leads_its_group(tid),
            "a thread that is not its group's leader"
        );
        assert_eq!(thread_group(tid), me, "found in its process by status");
        drop(done);
        thread.join().expect("the thread ends");
    }

    #[test]
    fn a_stat_line_is_read_past_a_name_holding_spaces_and_parentheses() {
        let line =
            "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                name: "a) (b c".into(),
                ppid: 17,
                started: 987654
            })
        );
        assert_eq!(parse_stat("4242 (cut"), None);
    }

    /// An agent stand-in, a hook wrapper and a stager, as files in `dir`:
    /// the agent runs the wrapper with a pipe for its standard input (as an
    /// agent writes a hook's event), the wrapper hands it on to the stager,
    /// which writes its pid to `dir/stager.pid` and waits.
    fn hook_tree(dir: &std::path::Path) -> std::process::Child {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let scripts = [
            ("agent", ": | \"$(dirname \"$0\")/wrapper\"\ntrue\n"),
            ("wrapper", "\"$(dirname \"$0\")/stager\"\ntrue\n"),
            (
                "stager",
                "cd \"$(dirname \"$0\")\"\necho $$ > stager.tmp\nmv stager.tmp stager.pid\nexec sleep 30\n",
            ),
        ];
        for (name, body) in scripts {
            let path = dir.join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write a script");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        Command::new(dir.join("agent"))
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn the agent stand-in")
    }

    /// Waits for the pid the stager of [`hook_tree`] wrote.
    fn stager_pid(dir: &std::path::Path) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(dir.join("stager.pid")) {
                if let Ok(pid) = text.trim().parse() {
                    return pid;
                }
            }
            assert!(Instant::now() < deadline, "the stager never started");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_hooks_agent_is_found_through_its_wrapper_and_guards_its_own_tree_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut agent = hook_tree(dir.path());
        let stager = stager_pid(dir.path());
        let wrapper = stat(stager).expect("the stager runs").ppid;
        let found = agent_of_stager(stager).expect("an agent");
        assert_eq!(
            (found.pid, found.name.as_str()),
            (agent.id(), "agent"),
            "the wrapper sharing the stager's stdin is looked through"
        );
        for (pid, what) in [
            (stager, "the stager"),
            (wrapper, "the wrapper"),
            (agent.id(), "the agent"),
        ] {
            assert!(descends_from(pid, &found), "{what} is in the agent's tree");
        }
        assert!(
            !descends_from(std::process::id(), &found),
            "the agent's parent is outside its tree"
        );
        let reused = AgentProcess {
            started: found.started + 1,
            ..found.clone()
        };
        assert!(
            !descends_from(stager, &reused),
            "another process given the agent's pid is not the agent"
        );

        let group = nix::unistd::Pid::from_raw(agent.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = agent.wait();
        assert!(
            !descends_from(agent.id(), &found),
            "a gone agent guards nothing"
        );
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = WhoCache::default();
        let me = std::process::id();
        for _ in 0..3 {
            for tid in 0..(MAX_WRITERS as u32 * 2) {
                // Unknown tids are not remembered; only real ones are.
                let _ = cache.who(0, u32::MAX - 10 - tid);
            }
            let _ = cache.who(0, me);
        }
        assert!(cache.writers.lock().len() <= MAX_WRITERS);
    }
}
