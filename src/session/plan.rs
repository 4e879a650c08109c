//! Plan titles and the plan proposal handler.

use std::sync::Arc;

use crate::error::Error;
use crate::session::answer::ToolResult;
use crate::session::preview::BoxFuture;
use crate::texts;

/// A plan title after the plan-title rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanTitle {
    /// The sanitized title (`plan: v1.0 (draft)` → `plan-v10-draft`).
    pub title: String,
    /// The title without a trailing `-plan` (any case).
    pub slug: String,
}

impl PlanTitle {
    /// Applies the plan-title rules to what the user wrote.
    pub fn parse(raw: &str) -> Result<PlanTitle, Error> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(Error::InvalidPlanTitle(texts::EMPTY_PLAN_TITLE.into()));
        }
        if trimmed.contains(['/', '\\']) || trimmed.contains("..") {
            return Err(Error::InvalidPlanTitle(texts::PLAN_TITLE_WITH_PATH.into()));
        }
        let title = sanitize(strip_suffix_ignore_case(trimmed, ".md"));
        if title.is_empty() {
            return Err(Error::InvalidPlanTitle(
                texts::PLAN_TITLE_EMPTY_AFTER_SANITIZING.into(),
            ));
        }
        let slug = strip_suffix_ignore_case(&title, "-plan").to_string();
        Ok(PlanTitle { title, slug })
    }

    /// The plan's file name, `<slug>-plan.md`.
    pub fn file_name(&self) -> String {
        format!("{}-plan.md", self.slug)
    }
}

fn strip_suffix_ignore_case<'a>(text: &'a str, suffix: &str) -> &'a str {
    let split = text.len().saturating_sub(suffix.len());
    match (text.get(..split), text.get(split..)) {
        (Some(stem), Some(tail)) if tail.eq_ignore_ascii_case(suffix) => stem,
        _ => text,
    }
}

/// Whitespace runs become `-`, only `[A-Za-z0-9_-]` stays, `-` runs
/// collapse and `-` is trimmed from both ends.
fn sanitize(text: &str) -> String {
    let dashed = text.split_whitespace().collect::<Vec<_>>().join("-");
    let mut out = String::with_capacity(dashed.len());
    for c in dashed.chars() {
        let allowed = c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if allowed && !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

/// What `propose` hands the plan handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProposal {
    /// The plan title; `None` for an empty body (the handler may pick the
    /// newest plan, or refuse with [`PlanProposal::require_title`]).
    pub title: Option<PlanTitle>,
}

impl PlanProposal {
    /// The title, or the "title is required" error for an empty body.
    pub fn require_title(&self) -> Result<&PlanTitle, Error> {
        self.title
            .as_ref()
            .ok_or_else(|| Error::InvalidPlanTitle(texts::EMPTY_PLAN_TITLE.into()))
    }
}

/// Decides a plan proposal. `Ok` with the handler's answer (naming the
/// plan, when the handler knows it: [`ToolResult::with_plan`]), or an error
/// (`Busy`, `PlanNotFound`, ...) that becomes the write's errno.
pub type PlanHandler =
    Arc<dyn Fn(PlanProposal) -> BoxFuture<Result<ToolResult, Error>> + Send + Sync>;

/// Wraps an async closure as a [`PlanHandler`].
pub fn plan_handler<F, Fut>(f: F) -> PlanHandler
where
    F: Fn(PlanProposal) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolResult, Error>> + Send + 'static,
{
    Arc::new(move |proposal| Box::pin(f(proposal)))
}

/// Turns a `propose` body into a proposal: an empty body has no title,
/// anything else must pass the plan-title rules.
pub(crate) fn proposal_from_body(body: &str) -> Result<PlanProposal, Error> {
    if body.trim().is_empty() {
        return Ok(PlanProposal { title: None });
    }
    PlanTitle::parse(body).map(|title| PlanProposal { title: Some(title) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> PlanTitle {
        match PlanTitle::parse(raw) {
            Ok(title) => title,
            Err(err) => panic!("{raw:?} should parse: {err}"),
        }
    }

    fn refused(raw: &str) -> String {
        match PlanTitle::parse(raw) {
            Ok(title) => panic!("{raw:?} should be refused, got {title:?}"),
            Err(err) => {
                assert_eq!(err.errno(), libc::EINVAL);
                err.to_string()
            }
        }
    }

    #[test]
    fn spec_examples() {
        assert_eq!(parsed("plan: v1.0 (draft)").title, "plan-v10-draft");
        assert_eq!(parsed("auth-plan").file_name(), "auth-plan.md");
        assert_eq!(parsed("auth-plan").slug, "auth");
        assert_eq!(parsed("auth-refactor").file_name(), "auth-refactor-plan.md");
    }

    #[test]
    fn trims_and_drops_trailing_md() {
        assert_eq!(parsed("  auth-plan.md \n").title, "auth-plan");
        assert_eq!(parsed("auth.MD").file_name(), "auth-plan.md");
    }

    #[test]
    fn whitespace_runs_become_one_dash() {
        assert_eq!(parsed("big \t  refactor\nnow").title, "big-refactor-now");
    }

    #[test]
    fn keeps_only_safe_characters_and_collapses_dashes() {
        assert_eq!(parsed("a--b -- c_d!@#").title, "a-b-c_d");
        assert_eq!(parsed("--edge--").title, "edge");
        assert_eq!(parsed("Ünïcode plan").title, "ncode-plan");
    }

    #[test]
    fn plan_suffix_is_removed_in_any_case() {
        assert_eq!(parsed("Auth-PLAN").slug, "Auth");
        assert_eq!(parsed("Auth-PLAN").file_name(), "Auth-plan.md");
        assert_eq!(parsed("plan").slug, "plan");
    }

    #[test]
    fn refusals_have_the_exact_texts() {
        assert_eq!(refused("   "), texts::EMPTY_PLAN_TITLE);
        assert_eq!(refused("a/b"), texts::PLAN_TITLE_WITH_PATH);
        assert_eq!(refused("a\\b"), texts::PLAN_TITLE_WITH_PATH);
        assert_eq!(refused("..secret"), texts::PLAN_TITLE_WITH_PATH);
        assert_eq!(refused("!!! ???"), texts::PLAN_TITLE_EMPTY_AFTER_SANITIZING);
        assert_eq!(refused(".md"), texts::PLAN_TITLE_EMPTY_AFTER_SANITIZING);
    }

    #[test]
    fn empty_body_is_a_proposal_without_title() {
        let proposal = proposal_from_body(" \n").ok();
        assert_eq!(proposal, Some(PlanProposal { title: None }));
        let required = PlanProposal { title: None }.require_title().map(|_| ());
        assert_eq!(
            required,
            Err(Error::InvalidPlanTitle(texts::EMPTY_PLAN_TITLE.into()))
        );
    }
}
