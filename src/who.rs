//! Who made a request: the writer's uid, process id and process name, as
//! the journal records them.

use crate::maps::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

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

/// The process (thread group) thread `tid` belongs to.
fn thread_group(tid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Tgid:"))
                .and_then(|value| value.trim().parse().ok())
        })
        .unwrap_or(tid)
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
