//! A mount handed to a user (`MountOptions::owner`, `xdev mount --owner
//! USER[:GROUP]`): that user decides and reads everything, a group given
//! with it reads and decides nothing, everyone else gets `EACCES`; only
//! root hands a mount to another user. The users are real uids, switched
//! to with `setpriv` (the tests run as root, as CI does).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{
    eventually, require_fuse, spawn_hook_with, stage_recording, stdout, Fixture, KillOnDrop,
};
use xdev::{MountOptions, MountOwner};

/// The owner: `nobody`, which every Linux system has (uid 65534).
const OWNER: &str = "nobody";
const OWNER_UID: u32 = 65534;
/// Another user, with no entry in the user database (none is needed).
const OTHER_UID: u32 = 4242;
/// A group given with the owner, and a member of it who is not the owner.
const GROUP: u32 = 4300;
const MEMBER_UID: u32 = 4243;

/// Waiting for something that should happen soon, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// A user to run a command as: a uid, its gid and its other groups.
#[derive(Clone, Copy)]
struct As {
    uid: u32,
    gid: u32,
    groups: &'static [u32],
}

const THE_OWNER: As = As {
    uid: OWNER_UID,
    gid: OWNER_UID,
    groups: &[],
};
const ANOTHER_USER: As = As {
    uid: OTHER_UID,
    gid: OTHER_UID,
    groups: &[],
};
const A_MEMBER: As = As {
    uid: MEMBER_UID,
    gid: MEMBER_UID,
    groups: &[GROUP],
};

impl As {
    /// `program` run as this user through `setpriv`.
    fn command(self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut setpriv = Command::new("setpriv");
        setpriv.args([
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
        ]);
        if self.groups.is_empty() {
            setpriv.arg("--clear-groups");
        } else {
            let groups: Vec<String> = self.groups.iter().map(u32::to_string).collect();
            setpriv.arg(format!("--groups={}", groups.join(",")));
        }
        setpriv.arg(program);
        setpriv
    }

    /// `sh -c script` as this user, with `$D` the mount.
    fn sh(self, dir: &Path, script: &str) -> Output {
        self.command("sh")
            .args(["-c", script])
            .env("D", dir)
            .output()
            .expect("run setpriv")
    }

    /// `xdev args...` as this user.
    fn xdev(self) -> Command {
        let mut xdev = self.command(env!("CARGO_BIN_EXE_xdev"));
        xdev.env_remove("XDEV_DIR");
        xdev
    }

    /// What this user gets from each file and directory of the mount: a
    /// file's first bytes (`ok`, and `secret` when they hold `secret`), a
    /// directory's listing (`listed N`), or the errno that refused it. A
    /// write to `resolve` is tried last.
    fn survey(self, dir: &Path, secret: &str) -> Vec<String> {
        let code = r#"
import errno, os, sys
D, secret = os.environ["D"], sys.argv[1]
def attempt(name, do):
    try:
        print(name, do(os.path.join(D, name)))
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def read(path):
    if os.path.isdir(path):
        return "listed %d" % len(os.listdir(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    # `events` blocks until the next record: opening it is the test.
    data = b"" if path.endswith("events") else os.read(fd, 1 << 20)
    os.close(fd)
    return "ok secret" if secret.encode() in data else "ok"
def write(path):
    fd = os.open(path, os.O_WRONLY)
    os.write(fd, b"not yours\n")
    return "written"
for name in sys.argv[2:]:
    attempt(name, read)
attempt("resolve", write)
"#;
        let output = self
            .command("/usr/bin/python3")
            .args(["-c", code, secret])
            .args(SURVEYED)
            .env("D", dir)
            .output()
            .expect("run setpriv");
        assert!(output.status.success(), "{output:?}");
        stdout(&output).lines().map(str::to_string).collect()
    }
}

/// A mount (in process, as root) whose files belong to `owner`, in a temp
/// dir the other users may reach.
fn handed_to(owner: &str, allow_other: bool) -> Fixture {
    assert!(
        nix::unistd::geteuid().is_root(),
        "handing a mount to another user needs root: run these tests as root (CI does)"
    );
    let owner: MountOwner = owner.parse().expect("the owner");
    let fx = Fixture::with_options(MountOptions {
        owner: Some(owner),
        allow_other,
        ..MountOptions::default()
    });
    let parent = fx.dir.parent().expect("temp dir");
    std::fs::set_permissions(parent, PermissionsExt::from_mode(0o755)).expect("chmod");
    fx
}

/// The files and directories `survey` reads, in its order (it writes
/// `resolve` after them).
const SURVEYED: [&str; 9] = [
    ".",
    "pending",
    "sessions",
    "status",
    "status.json",
    "last",
    "reminder",
    "log",
    "events",
];

/// What a user refused everything gets, listing included.
fn refused_everything() -> Vec<String> {
    SURVEYED
        .iter()
        .chain(&["resolve"])
        .map(|name| format!("{name} EACCES"))
        .collect()
}

#[test]
fn the_owner_decides_and_reads_and_another_user_gets_eacces_for_everything() {
    let fx = handed_to(OWNER, false);
    let secret = "SECRET-7c1d";
    let (_, calls) = stage_recording(&fx.session, &format!("edit {secret}"));
    assert_eq!(ANOTHER_USER.survey(&fx.dir, secret), refused_everything());
    assert_eq!(calls.applied(), 0, "nothing decided by another user");
    let seen = THE_OWNER.survey(&fx.dir, secret);
    assert!(seen.contains(&"status ok secret".to_string()), "{seen:?}");
    assert!(seen.contains(&"log ok secret".to_string()), "{seen:?}");
    assert!(seen.contains(&"pending listed 1".to_string()), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("resolve written"));
    assert_eq!(calls.applied(), 1, "the owner's write applied");
    assert_eq!(calls.reasons(), ["not yours"]);
}

#[test]
fn with_allow_other_others_list_ids_and_read_nothing_private() {
    let fx = handed_to(OWNER, true);
    let secret = "SECRET-9a4e";
    let (_, calls) = stage_recording(&fx.session, &format!("edit {secret}"));
    let seen = ANOTHER_USER.survey(&fx.dir, secret);
    let mut expected = refused_everything();
    expected[..3].clone_from_slice(&[
        ". listed 12".to_string(),
        "pending listed 1".to_string(),
        "sessions listed 0".to_string(),
    ]);
    assert_eq!(seen, expected);
    assert_eq!(calls.applied(), 0);
    let owner = THE_OWNER.sh(
        &fx.dir,
        "echo tests pass > \"$D/resolve\" && cat \"$D/last\"",
    );
    assert_eq!(
        stdout(&owner),
        format!("applied: edit {secret}\n"),
        "{owner:?}"
    );
    assert_eq!(calls.applied(), 1);
}

#[test]
fn a_group_given_with_the_owner_reads_everything_and_decides_nothing() {
    let fx = handed_to(&format!("{OWNER}:{GROUP}"), false);
    let secret = "SECRET-51b0";
    let (_, calls) = stage_recording(&fx.session, &format!("edit {secret}"));
    let seen = A_MEMBER.survey(&fx.dir, secret);
    let mut expected: Vec<String> = [". listed 12", "pending listed 1", "sessions listed 0"]
        .map(str::to_string)
        .to_vec();
    expected.extend(
        ["status", "status.json", "last", "reminder", "log", "events"].map(|name| {
            let secret = ["status", "status.json", "log"].contains(&name);
            format!("{name} ok{}", if secret { " secret" } else { "" })
        }),
    );
    expected.push("resolve EACCES".to_string());
    assert_eq!(seen, expected);
    assert_eq!(calls.applied(), 0, "a member decides nothing");
    assert_eq!(ANOTHER_USER.survey(&fx.dir, secret), refused_everything());
}

/// A daemon stopped with SIGTERM when the test ends, so that it unmounts:
/// the SIGKILL of [`KillOnDrop`] alone would leave a stale mount behind.
struct StoppedOnDrop(KillOnDrop);

impl Drop for StoppedOnDrop {
    fn drop(&mut self) {
        let daemon = &mut self.0 .0;
        // SAFETY: signalling a child this test spawned and has not reaped.
        unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
        // Whatever happens, KillOnDrop then kills what is left.
        eventually(PATIENCE, || matches!(daemon.try_wait(), Ok(Some(_))));
    }
}

/// `xdev mount DIR --owner OWNER` started by root, once it answers.
fn root_daemon(dir: &Path, owner: &str) -> StoppedOnDrop {
    require_fuse();
    let mut daemon = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_xdev"))
            .arg("mount")
            .arg(dir)
            .args(["--owner", owner])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn xdev mount"),
    );
    let answers = eventually(PATIENCE, || {
        std::fs::metadata(dir.join("status")).is_ok()
            || daemon.0.try_wait().ok().flatten().is_some()
    });
    assert!(
        answers && std::fs::metadata(dir.join("status")).is_ok(),
        "the daemon serves"
    );
    StoppedOnDrop(daemon)
}

/// Waits for `hook` (an `xdev hook`) to end, and what it printed.
fn hook_output(mut hook: KillOnDrop) -> (Option<i32>, String, String) {
    let ended = eventually(PATIENCE, || hook.0.try_wait().ok().flatten().is_some());
    assert!(ended, "xdev hook ended");
    let output = std::mem::replace(&mut hook.0, Command::new("true").spawn().expect("true"))
        .wait_with_output()
        .expect("hook output");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_root_daemon_with_owner_serves_that_users_hook_and_refuses_everyone_elses() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), PermissionsExt::from_mode(0o755)).expect("chmod");
    let dir = tmp.path().join("xdev");
    let _daemon = root_daemon(&dir, OWNER);
    let event = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/claude-pretooluse-bash.json"),
    )
    .expect("hook input");

    // Another user's hook stages nothing and says whose the mount is.
    let theirs = spawn_hook_with(ANOTHER_USER.xdev(), &dir, &[], &event);
    let (code, printed, said) = hook_output(theirs);
    assert_eq!((code, printed.as_str()), (Some(0), ""), "{said}");
    assert!(
        said.contains("this mount belongs to nobody (uid 65534)"),
        "{said}"
    );

    // The owner's hook stages the call; the owner's resolve allows it.
    let hook = spawn_hook_with(THE_OWNER.xdev(), &dir, &[], &event);
    assert!(
        eventually(PATIENCE, || {
            THE_OWNER
                .sh(&dir, "cat \"$D/status\"")
                .stdout
                .starts_with(b"pending: 1")
        }),
        "the owner's hook staged its call"
    );
    let refused = ANOTHER_USER
        .xdev()
        .args(["resolve", "--mount"])
        .arg(&dir)
        .arg("not yours")
        .output()
        .expect("xdev resolve");
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!(
            "xdev: EACCES: this mount belongs to nobody (uid 65534), who alone decides (and reads, unless the mount shares its journal): run this as that user; cannot open {}/resolve: Permission denied\n",
            dir.display()
        )
    );
    let shell = ANOTHER_USER.sh(&dir, "echo not yours > \"$D/resolve\"");
    assert!(!shell.status.success());
    assert!(String::from_utf8_lossy(&shell.stderr).contains("Permission denied"));
    let resolved = THE_OWNER
        .xdev()
        .args(["resolve", "--mount"])
        .arg(&dir)
        .arg("tests pass")
        .output()
        .expect("xdev resolve");
    assert!(resolved.status.success(), "{resolved:?}");
    let (code, printed, said) = hook_output(hook);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(
        printed,
        "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"permissionDecisionReason\":\"tests pass\"}}\n"
    );
}

#[test]
fn only_root_hands_a_mount_to_another_user_or_a_group_it_is_not_in() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), PermissionsExt::from_mode(0o777)).expect("chmod");
    let dir = tmp.path().join("xdev");
    let cases = [
        (
            "nobody".to_string(),
            "only root can hand a mount to another user, and xdev runs as uid 4242, not as nobody (uid 65534): run it as root (the system unit xdev@.service does), or as that user for a mount of their own (the user unit: `systemctl --user start xdev@NAME`)",
        ),
        (
            format!("{OTHER_UID}:{GROUP}"),
            "only root can give a mount's files to a group it is not in (as with chgrp), and xdev is not in gid 4300: give one of your groups (`id -Gn`), or run it as root",
        ),
        (
            format!("{OTHER_UID}:{OTHER_UID}"),
            "gid 4242 could read nothing: without --allow-other the kernel lets only the user who mounts in; add --allow-other (other users then list ids, and read nothing private unless --share-journal)",
        ),
    ];
    for (owner, refusal) in cases {
        let out = ANOTHER_USER
            .xdev()
            .arg("mount")
            .arg(&dir)
            .args(["--owner", &owner])
            .output()
            .expect("xdev mount");
        assert_eq!(out.status.code(), Some(1), "{owner}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("xdev: {refusal}\n"),
            "{owner}"
        );
        assert!(!dir.exists(), "{owner}: nothing was made");
    }
    let unknown = ANOTHER_USER
        .xdev()
        .arg("mount")
        .arg(&dir)
        .args(["--owner", "no-such-user-xdev"])
        .output()
        .expect("xdev mount");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains(
            "no user named 'no-such-user-xdev' here (`getent passwd no-such-user-xdev` finds none)"
        ),
        "{unknown:?}"
    );
}
