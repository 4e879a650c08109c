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
}
