//! Commands that never outlive the process that runs them for a decision.
//!
//! `xdev stage` runs its CMD while a resolver waits for the outcome. If the
//! stager dies (even by SIGKILL), nobody can report that outcome any more,
//! so CMD must not run on unsupervised. Two mechanisms see to it:
//!
//! - CMD runs in a process group of its own, with `PR_SET_PDEATHSIG`
//!   (SIGTERM): the kernel signals it when the thread that forked it exits.
//!   That is the stager's calling thread, so callers must spawn from a
//!   thread that lives as long as they do (`xdev stage` spawns from its main
//!   thread; [`supervise`] logs a warning when called from another one).
//! - PDEATHSIG reaches CMD only, not what CMD started (`sh -c 'sleep 30;
//!   ...'` leaves `sleep` behind). So a tiny *watcher* process, forked
//!   before CMD is executed and detached from it, holds the read end of a
//!   pipe whose write end only the stager holds. When the stager is gone
//!   (the pipe reads end of file without a "done" byte), the watcher sends
//!   SIGTERM to CMD's whole process group.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The signal CMD and its process group get when the stager goes away.
pub(crate) const ORPHAN_SIGNAL: i32 = libc::SIGTERM;

/// The stager's end of a supervised command: call [`Supervisor::done`] once
/// the command has exited. Dropped without that (the stager is failing or
/// dying), the watcher ends the command's process group.
#[derive(Debug)]
pub(crate) struct Supervisor {
    alive: Option<OwnedFd>,
    /// Kept only so that the child inherits it; holding a read end never
    /// keeps the watcher from seeing end of file.
    _watch: OwnedFd,
}

impl Supervisor {
    /// The command exited on its own: the watcher leaves its process group
    /// alone (a background job it started may run on, as the caller chose).
    pub(crate) fn done(mut self) {
        if let Some(alive) = self.alive.take() {
            // A failed write leaves the pipe unwritten: the watcher then
            // takes the stager for gone, which is the safe side.
            let _ = nix::unistd::write(&alive, &[1u8]);
        }
    }
}

/// Makes `command` run supervised: in its own process group, signalled
/// ([`ORPHAN_SIGNAL`]) with its whole group when this process dies. Keep
/// the returned [`Supervisor`] until the command has exited.
pub(crate) fn supervise(command: &mut Command) -> io::Result<Supervisor> {
    warn_unless_main_thread();
    let (watch, alive) = pipe()?;
    let stager = nix::unistd::getpid().as_raw();
    let watch_fd = watch.as_raw_fd();
    command.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe calls (prctl, getppid, getpid, clone, waitpid,
    // close, setpgid, read, kill, _exit); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, ORPHAN_SIGNAL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != stager {
                // The stager died before PDEATHSIG was armed.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            start_watcher(libc::getpid(), watch_fd)
        });
    }
    Ok(Supervisor {
        alive: Some(alive),
        _watch: watch,
    })
}

/// A pipe whose both ends close on exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// In the child before exec: forks the watcher of `group` (twice, so that
/// it is nobody's child: a `wait` in CMD must never wait for it).
///
/// # Safety
/// Only in a freshly forked child, before exec.
unsafe fn start_watcher(group: libc::pid_t, watch_fd: i32) -> io::Result<()> {
    let middle = raw_fork();
    if middle < 0 {
        return Err(io::Error::last_os_error());
    }
    if middle > 0 {
        let mut status = 0;
        while libc::waitpid(middle, &mut status, 0) < 0 && *libc::__errno_location() == libc::EINTR
        {
        }
        return Ok(());
    }
    if raw_fork() != 0 {
        libc::_exit(0);
    }
    watch(group, watch_fd)
}

/// `fork(2)` as the bare system call. glibc's `fork()` runs its atfork
/// handlers, which take locks (malloc's) that another thread of the parent
/// may have held when the child was forked: a child of a multithreaded
/// process that called it could hang forever.
///
/// # Safety
/// The new process may only make async-signal-safe calls.
unsafe fn raw_fork() -> libc::pid_t {
    let null = std::ptr::null_mut::<libc::c_void>();
    libc::syscall(
        libc::SYS_clone,
        libc::SIGCHLD as libc::c_long,
        null,
        null,
        null,
        null,
    ) as libc::pid_t
}

/// Closes every descriptor but `keep`. The watcher never executes, so
/// close-on-exec does nothing for it: it must not hold the stager's pipe
/// write end, the stage file (a held stage file keeps a preview staged), nor
/// the pipe through which `spawn` learns that exec happened (it would wait).
///
/// # Safety
/// Only in the watcher process.
unsafe fn close_all_but(keep: i32) {
    let keep = keep as libc::c_uint;
    let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0, keep - 1, 0) == 0;
    let above = libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0) == 0;
    if !(below && above) {
        // Kernels before 5.9 lack close_range.
        let limit = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 65536) as i32;
        for fd in (0..limit).filter(|fd| *fd != keep as i32) {
            libc::close(fd);
        }
    }
}

/// The watcher: leaves CMD's group, waits on the pipe, and ends the group
/// if the stager went away without saying it is done.
///
/// # Safety
/// Only in the watcher process forked by [`start_watcher`].
unsafe fn watch(group: libc::pid_t, watch_fd: i32) -> ! {
    close_all_but(watch_fd);
    libc::setpgid(0, 0);
    let mut byte = 0u8;
    let read = loop {
        let read = libc::read(watch_fd, (&mut byte as *mut u8).cast(), 1);
        if read >= 0 || *libc::__errno_location() != libc::EINTR {
            break read;
        }
    };
    if read == 0 {
        libc::kill(-group, ORPHAN_SIGNAL);
    }
    libc::_exit(0)
}

/// PDEATHSIG follows the forking *thread*: from a short-lived thread it
/// would fire as soon as that thread ended.
fn warn_unless_main_thread() {
    let (thread, process) = (nix::unistd::gettid(), nix::unistd::getpid());
    if thread != process {
        tracing::warn!(
            "a supervised command is spawned from a thread other than the main one; \
             it is signalled when that thread exits"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn group_alive(group: i32) -> bool {
        // No signal: only checks that the group exists.
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), None).is_ok()
    }

    #[test]
    fn a_finished_command_is_left_alone_and_a_dropped_supervisor_ends_the_group() {
        let mut command = Command::new("sh");
        command.arg("-c").arg("sleep 30 & sleep 30");
        let supervisor = supervise(&mut command).expect("supervise");
        let mut child = command.spawn().expect("spawn");
        let group = child.id() as i32;
        std::thread::sleep(Duration::from_millis(100));
        assert!(group_alive(group));
        drop(supervisor);
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(group) && Instant::now() < deadline {
            let _ = child.try_wait();
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.wait();
        assert!(!group_alive(group), "the whole group ended");

        let mut quick = Command::new("true");
        let supervisor = supervise(&mut quick).expect("supervise");
        let status = quick.status().expect("run");
        assert!(status.success());
        supervisor.done();
    }
}
