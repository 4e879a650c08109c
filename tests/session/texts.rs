//! Exact texts and errno of the error kinds.

use super::*;

#[test]
fn device_usage_lines_are_exact() {
    assert_eq!(
        Device::Resolve.usage("/xdev"),
        "Write a one-sentence reason as plain text to /xdev/resolve to APPLY the pending staged action (e.g. a tool preview)."
    );
    assert_eq!(
        Device::Reject.usage("/xdev"),
        "Write a one-sentence reason as plain text to /xdev/reject to DISCARD the pending staged action (e.g. a tool preview)."
    );
    assert_eq!(
        Device::Propose.usage("/mnt/x"),
        "Write your plan's <slug> (matching <slug>-plan.md) as plain text to /mnt/x/propose to submit the plan for approval. Valid only while plan mode is active."
    );
    assert_eq!(
        [Device::Resolve, Device::Reject, Device::Propose].map(Device::name),
        ["resolve", "reject", "propose"]
    );
}

#[test]
fn the_mount_dir_defaults_to_xdev() {
    let session = Session::new();
    assert_eq!(session.mount_dir(), "/xdev");
    assert_eq!(xdev::session::DEFAULT_MOUNT_DIR, "/xdev");
}

#[test]
fn error_kinds_know_their_errno() {
    assert_eq!(Error::Aborted("why".into()).to_string(), "Aborted: why");
    assert_eq!(Error::Aborted("why".into()).errno(), libc::ECANCELED);
    assert_eq!(Error::NothingToResolve(String::new()).errno(), libc::ENOENT);
    assert_eq!(Error::NotInPlanMode(String::new()).errno(), libc::EPERM);
    assert_eq!(Error::InvalidPlanTitle(String::new()).errno(), libc::EINVAL);
    assert_eq!(Error::CallbackFailed(String::new()).errno(), libc::EIO);
    assert_eq!(Error::ErrorResult(String::new()).errno(), libc::EIO);
}
