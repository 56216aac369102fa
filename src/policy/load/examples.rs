//! `[examples]`: the commands a policy promises to allow, ask or deny, collected here and
//! run through the evaluator by [`crate::load`], the layer above.

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::policy::{Example, Verdict};

/// `[examples]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawExamples {
    /// Commands that must be allowed.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Commands that must need approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Commands that must be denied.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
}

impl Loader {
    /// `[examples]` of the top file (an included file's examples are its own business).
    pub(super) fn apply_examples(&mut self, file: &File, ex: RawExamples) {
        for (list, expect) in [
            (&ex.allow, Verdict::Allow),
            (&ex.ask, Verdict::Ask),
            (&ex.deny, Verdict::Deny),
        ] {
            for cmd in list {
                self.policy.examples.push(Example {
                    command: cmd.get_ref().clone(),
                    expect,
                    rule: file.rule(format!("examples.{expect}"), cmd.span()),
                });
            }
        }
    }
}
