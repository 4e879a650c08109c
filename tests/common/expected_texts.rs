//! `mount-tests/expected-texts`: the one list of expected user-visible
//! texts, which the shell scenarios read too (`mount-tests/lib.sh`). Both
//! Rust test suites include this file: the mount tests through
//! `tests/common`, the session tests by path.
#![allow(dead_code)]

use std::path::Path;
use std::sync::OnceLock;

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mount-tests/expected-texts");

/// The file, read once per test binary (the model tests ask thousands of
/// times).
fn texts() -> &'static str {
    static TEXTS: OnceLock<String> = OnceLock::new();
    TEXTS.get_or_init(|| std::fs::read_to_string(FILE).expect("read mount-tests/expected-texts"))
}

/// The text `key` of `mount-tests/expected-texts`, with `<dir>` as `dir`
/// and each `<name>` of `fill` as its value.
pub(crate) fn expected_text(key: &str, dir: impl AsRef<Path>, fill: &[(&str, &str)]) -> String {
    let text = texts()
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('\t'))
        .unwrap_or_else(|| panic!("no text {key} in {FILE}"));
    let mut text = text.to_string();
    for (name, value) in fill {
        text = text.replace(&format!("<{name}>"), value);
    }
    text.replace("<dir>", &dir.as_ref().display().to_string())
}

/// [`expected_text`] without placeholders other than `<dir>`.
pub(crate) fn expected(key: &str, dir: impl AsRef<Path>) -> String {
    expected_text(key, dir, &[])
}
