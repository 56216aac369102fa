//! What evaluation returns: a [`Decision`] and its [`Reason`]s, with their one JSON shape.

use serde::Serialize;

use crate::policy::{RuleRef, Verdict};
use crate::shell::Span;

/// One finding: why (part of) a command is not simply allowed.
///
/// Its JSON form is the one every output uses (`check --format json`, the approval channel,
/// the Python package's `to_json`): `{"code", "verdict", "rule", "message", "span"}`, with
/// `rule` as `name (file:line:col)` and `span` as `[start, end]`. Every reason the evaluator
/// gives names a rule: the policy's, or the built-in check's (`builtin:<code>`, see
/// [`RuleRef::builtin_check`]) when no rule of the policy decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Stable kebab-case code, such as `program-not-allowed` (see the README for the list).
    pub code: &'static str,
    /// What this finding alone decides.
    pub verdict: Verdict,
    /// The rule responsible: always set by the evaluator (`None` only in a reason built by
    /// hand).
    #[serde(serialize_with = "rule_text")]
    pub rule: Option<RuleRef>,
    /// A short explanation the model can act on.
    pub message: String,
    /// The bytes of the command it is about.
    #[serde(serialize_with = "span_pair")]
    pub span: Span,
}

fn rule_text<S: serde::Serializer>(rule: &Option<RuleRef>, s: S) -> Result<S::Ok, S::Error> {
    rule.as_ref().map(RuleRef::to_string).serialize(s)
}

fn span_pair<S: serde::Serializer>(span: &Span, s: S) -> Result<S::Ok, S::Error> {
    [span.start, span.end].serialize(s)
}

/// The outcome of evaluating one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The strictest verdict over everything the command contains.
    pub verdict: Verdict,
    /// Every finding that is not an allow, in source order.
    pub reasons: Vec<Reason>,
    /// Which rule decided each part of the command, allows included (empty in a decision
    /// built by hand).
    pub trace: super::Trace,
}

impl Decision {
    /// Whether the command may run without asking.
    pub fn is_allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// A decision of `reasons` (the strictest of their verdicts, allow if none) with no trace:
    /// for callers that combine or build decisions themselves.
    pub fn from_reasons(reasons: Vec<Reason>) -> Decision {
        let verdict = reasons
            .iter()
            .map(|r| r.verdict)
            .max()
            .unwrap_or(Verdict::Allow);
        Decision {
            verdict,
            reasons,
            trace: super::Trace::default(),
        }
    }
}
