//! The documentation holds together: every relative link of the README and
//! of `docs/` leads to a file that exists (and to a heading that exists,
//! when it names one), every page under `docs/` is reachable from the
//! README, and every page that shows Rust code has it compiled as a
//! doctest.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every Markdown page under `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let docs = std::fs::read_dir(root().join("docs")).expect("docs/");
    let mut docs: Vec<PathBuf> = docs
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The page's text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The targets of the inline links `[text](target)` in the page's prose.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    targets
}

/// The anchor GitHub gives a heading: lower case, spaces as `-`, other
/// punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| slug(heading.trim_start_matches('#')))
        .collect()
}

fn is_external(target: &str) -> bool {
    target.starts_with("http://") || target.starts_with("https://") || target.starts_with("man:")
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().expect("a page's directory");
        for target in link_targets(&text) {
            if is_external(&target) {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            if !linked.exists() {
                broken.push(format!("{}: {target}: no such file", page.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                if linked.is_file() && !anchors(&read(&linked)).contains(anchor) {
                    broken.push(format!("{}: {target}: no such heading", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_linked_from_the_readme() {
    let readme = read(&root().join("README.md"));
    let linked: BTreeSet<String> = link_targets(&readme).into_iter().collect();
    let unlinked: Vec<String> = pages()
        .iter()
        .skip(1)
        .map(|page| {
            let name = page.file_name().expect("a name").to_string_lossy();
            format!("docs/{name}")
        })
        .filter(|page| !linked.contains(page))
        .collect();
    assert!(
        unlinked.is_empty(),
        "pages the README does not link: {unlinked:?}"
    );
}

#[test]
fn every_page_with_rust_code_is_a_doctest() {
    let lib = read(&root().join("src/lib.rs"));
    let untested: Vec<String> = pages()
        .iter()
        .filter(|page| has_rust_block(&read(page)))
        .map(|page| {
            let relative = page.strip_prefix(root()).expect("under the root");
            relative.display().to_string()
        })
        .filter(|relative| !lib.contains(&format!("include_str!(\"../{relative}\")")))
        .collect();
    assert!(
        untested.is_empty(),
        "pages whose Rust code no doctest compiles: {untested:?}"
    );
}

/// A fenced block marked `rust`, or unmarked (rustdoc takes both as Rust).
fn has_rust_block(text: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if !inside && matches!(info.trim(), "" | "rust") {
            return true;
        }
        inside = !inside;
    }
    false
}
