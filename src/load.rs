//! Loading a policy whole: validate it ([`crate::policy`]), then run its `[examples]` through
//! the evaluator ([`crate::evaluate()`]).
//!
//! This layer sits above both, so that the policy layer never runs the evaluator: `policy`
//! turns TOML into a validated [`Policy`] (or every problem with its location), and only here
//! is that policy asked to decide the commands its examples promise. Every public way to load
//! a policy ([`Policy::from_file`], [`Policy::from_toml`], [`Policy::shipped`],
//! [`Policy::from_name_or_file`]) goes through here, and so does the linter's entry point.

use std::path::Path;

use crate::codes::DiagnosticCode;
use crate::evaluate::{self, Context, SandboxState};
use crate::policy::sandbox::SandboxMode;
use crate::policy::{self, lint, Diagnostic, Policy, PolicyError, Severity};

impl Policy {
    /// Load a policy file (and the files it includes).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        checked(policy::load_file(path.as_ref()))
    }

    /// Load a policy from TOML text. `origin` names it in diagnostics; includes are resolved
    /// relative to `origin`'s directory.
    pub fn from_toml(source: &str, origin: &str) -> Result<Policy, PolicyError> {
        checked(policy::load_str(source, origin))
    }

    /// One of the policies shipped inside the binary: `read-only` or `developer`. Another
    /// name is [`PolicyError::UnknownShipped`].
    pub fn shipped(name: &str) -> Result<Policy, PolicyError> {
        match policy::shipped_source(name) {
            Some(src) => checked(policy::load_str(src, &format!("shipped:{name}"))),
            None => Err(PolicyError::UnknownShipped {
                name: name.to_string(),
                known: policy::SHIPPED.iter().map(|(n, _)| *n).collect(),
            }),
        }
    }

    /// A shipped policy name, or else a file path.
    pub fn from_name_or_file(spec: &str) -> Result<Policy, PolicyError> {
        match policy::shipped_source(spec) {
            Some(_) => Policy::shipped(spec),
            None => Policy::from_file(spec),
        }
    }
}

/// A policy that validated, if its examples are decided as they say; else every example
/// that is not, as a `policy-example-failed` diagnostic.
fn checked(loaded: Result<Policy, PolicyError>) -> Result<Policy, PolicyError> {
    let policy = loaded?;
    let failed = failed_examples(&policy);
    if failed.is_empty() {
        Ok(policy)
    } else {
        Err(PolicyError::Invalid(failed))
    }
}

/// Each example of `policy` whose verdict is not the one it is written with.
fn failed_examples(policy: &Policy) -> Vec<Diagnostic> {
    let mut ctx = Context::example();
    // Examples show the policy as it is meant to run: sandboxed when it asks for the sandbox.
    if policy.sandbox.mode == SandboxMode::Enforce {
        ctx.sandbox = SandboxState::Enforced;
    }
    let mut diags = Vec::new();
    for ex in &policy.examples {
        let decision = evaluate::evaluate(policy, &ctx, &ex.command);
        if decision.verdict != ex.expect {
            let why = decision
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect::<Vec<_>>()
                .join("; ");
            diags.push(Diagnostic::new(
                Severity::Error,
                DiagnosticCode::PolicyExampleFailed,
                format!(
                    "example `{}` must be {} but is {}{}",
                    ex.command,
                    ex.expect,
                    decision.verdict,
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({why})")
                    }
                ),
                ex.rule.location.clone(),
            ));
        }
    }
    diags
}

/// Lint a policy file (or a shipped policy name): its load errors (examples included), or
/// else [`lint::lint_policy`]'s warnings. A file that cannot be read is an `Err` (exit 2 in
/// `policy-check lint`).
pub fn lint_name_or_file(spec: &str) -> Result<Vec<Diagnostic>, PolicyError> {
    let (loaded, origin) = match policy::shipped_source(spec) {
        Some(_) => (Policy::shipped(spec), format!("shipped:{spec}")),
        None => (
            Policy::from_file(spec),
            Path::new(spec).display().to_string(),
        ),
    };
    match loaded {
        Ok(policy) => Ok(lint::lint_policy(&policy, &origin)),
        Err(PolicyError::Invalid(mut out)) => {
            // Stable order: this file first, then included ones, each by position.
            out.sort_by(|a, b| {
                (a.location.file != origin, a.location.line, a.location.col).cmp(&(
                    b.location.file != origin,
                    b.location.line,
                    b.location.col,
                ))
            });
            Ok(out)
        }
        Err(e) => Err(e),
    }
}
