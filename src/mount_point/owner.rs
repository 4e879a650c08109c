//! Who a mount's files belong to ([`MountOwner`], what `xdev mount --owner
//! USER[:GROUP]` gives), and who may hand them to whom.
//!
//! The owner decides and reads everything; a group given with it reads
//! what the owner reads and decides nothing; every other user sees what the
//! mount's privacy rule allows (see [`super::MountOptions::share_journal`]).
//! Only root hands a mount to another user, or to a group it is not in, as
//! with `chown` and `chgrp`.

use std::str::FromStr;

use nix::unistd::{getegid, getgid, getgroups, getuid, Gid, Group, Uid, User};
use thiserror::Error;

use crate::texts;

/// Who a mount's files belong to.
///
/// - The user (`uid`) decides and reads everything: the devices and
///   `stage` are theirs alone (mode 0600), and so are the session's files
///   (status files, items, `log`, `events`: 0400).
/// - The files' group (`gid`) is the user's login group unless one is
///   given. A group given ([`MountOwner::with_group`], `USER:GROUP`) reads
///   what the user reads (0440) and lists every directory, but decides
///   nothing: writing a device, staging and making drafts stay the user's.
/// - Everyone else sees what the privacy rule allows them.
///
/// A daemon run by root that hands its mount to another user lets the
/// kernel admit other users (the user could not reach the mount
/// otherwise); without `allow_other` its directories then stay closed to
/// everyone but the user and the group (mode 0711, or 0751 with a group):
/// other users can list and read nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountOwner {
    /// The user the files belong to.
    pub uid: u32,
    /// The files' group.
    pub gid: u32,
    /// Whether the group reads what the user reads: true for a group
    /// given on purpose, false for the user's login group.
    pub group_reads: bool,
}

impl MountOwner {
    /// `uid`, with its login group `gid`, which reads nothing more than
    /// any other user.
    pub fn user(uid: u32, gid: u32) -> Self {
        MountOwner {
            uid,
            gid,
            group_reads: false,
        }
    }

    /// The user this process runs as: who a mount's files belong to unless
    /// told otherwise.
    pub fn current() -> Self {
        MountOwner::user(getuid().as_raw(), getgid().as_raw())
    }

    /// The same user, with the group `gid` reading what the user reads.
    pub fn with_group(self, gid: u32) -> Self {
        MountOwner {
            gid,
            group_reads: true,
            ..self
        }
    }

    /// Why this process may not hand a mount to this owner, if it may not:
    /// only root gives files to another user, or to a group it is not in.
    /// `lets_others_in` is whether the mount lets users other than its
    /// owner in at all (`allow_other`, or a root daemon's mount handed to
    /// another user): a group reads nothing of a mount the kernel keeps it
    /// out of.
    pub(crate) fn check(&self, lets_others_in: bool) -> Result<(), OwnerError> {
        let me = Caller {
            uid: getuid().as_raw(),
            groups: caller_groups(),
        };
        self.refusal(&me, lets_others_in).map_or(Ok(()), Err)
    }

    /// The refusal of [`MountOwner::check`] for a process of `me`.
    fn refusal(&self, me: &Caller, lets_others_in: bool) -> Option<OwnerError> {
        let root = me.uid == 0;
        if !root && self.uid != me.uid {
            return Some(OwnerError::NotRoot {
                owner: user_name(self.uid),
                uid: me.uid,
            });
        }
        if !self.group_reads {
            return None;
        }
        if !root && !me.groups.contains(&self.gid) {
            return Some(OwnerError::NotInGroup {
                group: group_name(self.gid),
            });
        }
        (!lets_others_in).then(|| OwnerError::GroupKeptOut {
            group: group_name(self.gid),
        })
    }
}

/// The process that hands a mount over: its user and every group it is in.
struct Caller {
    uid: u32,
    groups: Vec<u32>,
}

/// The groups this process is in: its effective group and its
/// supplementary groups (the ones `chgrp` lets a user give files to).
fn caller_groups() -> Vec<u32> {
    let mut groups: Vec<u32> = getgroups()
        .unwrap_or_default()
        .into_iter()
        .map(Gid::as_raw)
        .collect();
    groups.push(getegid().as_raw());
    groups
}

/// `alice (uid 1000)`, or `uid 1000` for a uid without a name.
pub(crate) fn user_name(uid: u32) -> String {
    match User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    }
}

/// `devs (gid 1001)`, or `gid 1001` for a gid without a name.
fn group_name(gid: u32) -> String {
    match Group::from_gid(Gid::from_raw(gid)) {
        Ok(Some(group)) => format!("{} (gid {gid})", group.name),
        _ => format!("gid {gid}"),
    }
}

/// `USER[:GROUP]`, as `chown` takes it: each a name or a number. Without a
/// group the files' group is the user's login group (which then reads
/// nothing more than other users); a group given reads what the user
/// reads.
impl FromStr for MountOwner {
    type Err = OwnerError;

    fn from_str(spec: &str) -> Result<Self, OwnerError> {
        let (user, group) = match spec.split_once(':') {
            Some((user, group)) => (user, Some(group)),
            None => (spec, None),
        };
        if user.is_empty() || group.is_some_and(str::is_empty) {
            return Err(OwnerError::Malformed(spec.to_string()));
        }
        let (uid, login_group) = find_user(user)?;
        match group {
            Some(group) => Ok(MountOwner {
                uid,
                gid: find_group(group)?,
                group_reads: true,
            }),
            None => login_group
                .map(|gid| MountOwner::user(uid, gid))
                .ok_or(OwnerError::NoLoginGroup(uid)),
        }
    }
}

/// The uid of `user` (a name, or a number that may have no entry) and its
/// login group when the user database knows it.
fn find_user(user: &str) -> Result<(u32, Option<u32>), OwnerError> {
    if let Ok(uid) = user.parse::<u32>() {
        let entry = User::from_uid(Uid::from_raw(uid)).ok().flatten();
        return Ok((uid, entry.map(|entry| entry.gid.as_raw())));
    }
    match User::from_name(user) {
        Ok(Some(entry)) => Ok((entry.uid.as_raw(), Some(entry.gid.as_raw()))),
        _ => Err(OwnerError::UnknownUser(user.to_string())),
    }
}

/// The gid of `group`, a name or a number.
fn find_group(group: &str) -> Result<u32, OwnerError> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    match Group::from_name(group) {
        Ok(Some(entry)) => Ok(entry.gid.as_raw()),
        _ => Err(OwnerError::UnknownGroup(group.to_string())),
    }
}

/// Why a mount cannot belong to the owner asked for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OwnerError {
    /// Not of the form `USER[:GROUP]`.
    #[error("{}", texts::owner_malformed(.0))]
    Malformed(String),
    /// No user of that name.
    #[error("{}", texts::owner_unknown_user(.0))]
    UnknownUser(String),
    /// No group of that name.
    #[error("{}", texts::owner_unknown_group(.0))]
    UnknownGroup(String),
    /// A uid the user database does not know, given without a group.
    #[error("{}", texts::owner_without_login_group(*.0))]
    NoLoginGroup(u32),
    /// A process other than root asked to hand the mount to another user.
    #[error("{}", texts::owner_needs_root(.owner, *.uid))]
    NotRoot {
        /// The user asked for, named.
        owner: String,
        /// The uid this process runs as.
        uid: u32,
    },
    /// A process other than root asked to give the files to a group it is
    /// not in.
    #[error("{}", texts::owner_group_not_yours(.group))]
    NotInGroup {
        /// The group asked for, named.
        group: String,
    },
    /// A group was given, but the kernel would keep it out of the mount.
    #[error("{}", texts::owner_group_kept_out(.group))]
    GroupKeptOut {
        /// The group asked for, named.
        group: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(uid: u32, groups: &[u32]) -> Caller {
        Caller {
            uid,
            groups: groups.to_vec(),
        }
    }

    #[test]
    fn root_hands_a_mount_to_any_user_and_group() {
        let root = caller(0, &[0]);
        for owner in [
            MountOwner::user(1000, 1000),
            MountOwner::user(1000, 1000).with_group(55),
        ] {
            assert_eq!(owner.refusal(&root, true), None, "{owner:?}");
        }
        assert_eq!(MountOwner::user(1000, 1000).refusal(&root, false), None);
    }

    #[test]
    fn another_user_keeps_the_mount_its_own_and_its_groups() {
        let me = caller(1000, &[1000, 55]);
        assert_eq!(MountOwner::user(1000, 1000).refusal(&me, false), None);
        assert_eq!(
            MountOwner::user(1000, 1000)
                .with_group(55)
                .refusal(&me, true),
            None
        );
        let given_away = MountOwner::user(1001, 1001).refusal(&me, true);
        assert!(
            matches!(given_away, Some(OwnerError::NotRoot { uid: 1000, .. })),
            "{given_away:?}"
        );
        let not_mine = MountOwner::user(1000, 1000)
            .with_group(77)
            .refusal(&me, true);
        assert!(
            matches!(not_mine, Some(OwnerError::NotInGroup { .. })),
            "{not_mine:?}"
        );
    }

    #[test]
    fn a_group_the_kernel_keeps_out_is_refused() {
        let me = caller(1000, &[1000, 55]);
        let kept_out = MountOwner::user(1000, 1000)
            .with_group(55)
            .refusal(&me, false);
        assert!(
            matches!(kept_out, Some(OwnerError::GroupKeptOut { .. })),
            "{kept_out:?}"
        );
        let root = caller(0, &[0]);
        let kept_out = MountOwner::user(0, 0).with_group(55).refusal(&root, false);
        assert!(
            matches!(kept_out, Some(OwnerError::GroupKeptOut { .. })),
            "{kept_out:?}"
        );
    }

    #[test]
    fn user_and_group_are_names_or_numbers() {
        // root and its group 0 exist on every Linux system.
        assert_eq!("root".parse(), Ok(MountOwner::user(0, 0)));
        assert_eq!("0".parse(), Ok(MountOwner::user(0, 0)));
        assert_eq!("root:0".parse(), Ok(MountOwner::user(0, 0).with_group(0)));
        let numbers: MountOwner = "4242:4243".parse().expect("numbers need no entry");
        assert_eq!(numbers, MountOwner::user(4242, 4243).with_group(4243));
    }

    #[test]
    fn a_bad_owner_is_named_with_its_fix() {
        let cases = [
            ("", OwnerError::Malformed(String::new())),
            (":0", OwnerError::Malformed(":0".into())),
            ("root:", OwnerError::Malformed("root:".into())),
            (
                "no-such-user-xdev",
                OwnerError::UnknownUser("no-such-user-xdev".into()),
            ),
            (
                "root:no-such-group-xdev",
                OwnerError::UnknownGroup("no-such-group-xdev".into()),
            ),
            ("4242", OwnerError::NoLoginGroup(4242)),
        ];
        for (spec, expected) in cases {
            assert_eq!(spec.parse::<MountOwner>(), Err(expected), "{spec:?}");
        }
    }
}
