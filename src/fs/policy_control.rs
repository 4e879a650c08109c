//! The mount's `policy` file, as the FUSE layer sees it: whoever keeps
//! the rules (the `xdev` daemon's policy) answers through this trait, and
//! the tree only shows what it says and passes a write of `reload` on.

/// What the mount's `policy` file asks of whoever keeps the rules: a
/// description to read (the file, the mode, the rule count, why the last
/// load failed), one line for `status`, and a reload on request.
pub trait PolicyControl: Send + Sync + std::fmt::Debug {
    /// What reading `policy` shows: a few `key: value` lines.
    fn describe(&self) -> String;
    /// One line for `status`: the rules in force, and a failed reload.
    fn summary(&self) -> String;
    /// Loads the rules file again: what to tell the writer, `Ok` once the
    /// new rules are in force, `Err` (the rules in force stay) with why.
    fn reload(&self) -> Result<String, String>;
    /// Preview `id` was just staged through the mount's `stage` file, on
    /// this thread: a keeper of rules that decides at staging may begin
    /// deciding it here, so that the producer's first read finds the
    /// decision. It must not wait: the staging write's reply waits for it.
    /// Doing nothing (the default) leaves the preview to the keeper's own
    /// way of following the session.
    fn judge_staged(&self, id: &str) {
        let _ = id;
    }
}
