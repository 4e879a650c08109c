//! Build script: gives `xdev --version` the commit it was built from.
//!
//! Sets `XDEV_VERSION` for the crate to `0.2.0 (abc1234)` when the package
//! is built from a git checkout of its own, and to the bare version
//! otherwise (a crate tarball, a `git archive`, no `git` installed, or a
//! checkout git refuses to read): the build never fails for want of git.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let full = match commit(&manifest_dir) {
        Some(commit) => format!("{version} ({commit})"),
        None => version,
    };
    println!("cargo:rustc-env=XDEV_VERSION={full}");
}

/// The short commit of HEAD, if `dir` is the top of a git work tree; also
/// tells cargo to build again when HEAD moves.
fn commit(dir: &Path) -> Option<String> {
    // A package unpacked inside some other repository (a vendored copy, a
    // tarball extracted in a checkout) must not take that repository's
    // commit for its own.
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = match (Path::new(&top).canonicalize(), dir.canonicalize()) {
        (Ok(top), Ok(dir)) => top == dir,
        _ => false,
    };
    if !same {
        return None;
    }
    watch_head(dir);
    git(dir, &["rev-parse", "--short", "HEAD"])
}

/// Reruns this script when HEAD changes: HEAD itself (a checkout, a
/// detached HEAD moving) and the branch it points to (a commit). Git is
/// asked where these files are because in a linked work tree HEAD lives in
/// the work tree's own git directory and the branch in the common one.
fn watch_head(dir: &Path) {
    let mut files = vec![git_path(dir, "HEAD")];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        files.push(git_path(dir, &branch));
        // The branch may live only in packed-refs (after `git gc`), and
        // moves there when it is packed.
        files.push(git_path(dir, "packed-refs"));
    }
    // A watched file that does not exist would make cargo run this script
    // (and rebuild the crate) on every build.
    for file in files.into_iter().flatten().filter(|file| file.exists()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
}

/// Where git keeps `name` (`HEAD`, `refs/heads/main`, ...) for the work
/// tree at `dir`.
fn git_path(dir: &Path, name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(git(dir, &["rev-parse", "--git-path", name])?);
    // Git answers relative to the directory it ran in.
    Some(if path.is_absolute() {
        path
    } else {
        dir.join(path)
    })
}

/// The trimmed stdout of `git args...` run in `dir`, if it succeeded and
/// printed something.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}
