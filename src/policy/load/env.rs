//! `[env]`: which variables may be assigned, as name patterns.

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::raw::VerdictName;
use crate::policy::NamePattern;

/// `[env]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawEnv {
    /// Variable-name globs that may be assigned.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Variable-name globs whose assignment needs approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Variable-name globs that must not be assigned (checked first).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
    /// The verdict for names no pattern matches.
    #[schemars(with = "Option<VerdictName>")]
    pub default: Option<Spanned<String>>,
    /// Message for refusals.
    pub message: Option<String>,
}

impl Loader {
    pub(super) fn name_patterns(
        &mut self,
        file: &File,
        name: &str,
        list: &[Spanned<String>],
    ) -> Vec<NamePattern> {
        let mut out = Vec::new();
        for item in list {
            let text = item.get_ref();
            let ok_chars = text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_*?[]!-".contains(c));
            let glob = if ok_chars && !text.is_empty() {
                self.glob(text, false).ok()
            } else {
                None
            };
            match glob {
                Some(g) => out.push(NamePattern {
                    text: text.clone(),
                    glob: g,
                    rule: file.rule(name, item.span()),
                }),
                None => self.diag(
                    DiagnosticCode::PolicyInvalidGlob,
                    format!("`{text}` is not a variable-name pattern"),
                    file.loc(item.span()),
                ),
            }
        }
        out
    }

    pub(super) fn apply_env(&mut self, file: &File, e: RawEnv) {
        let allow = self.name_patterns(file, "env.allow", &e.allow);
        let ask = self.name_patterns(file, "env.ask", &e.ask);
        let deny = self.name_patterns(file, "env.deny", &e.deny);
        for d in &deny {
            if let Some(a) = allow.iter().chain(&ask).find(|a| a.text == d.text) {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!("`{}` is in env.deny and also in {}", d.text, a.rule.name),
                    a.rule.location.clone(),
                );
            }
        }
        let mut env = self.policy.env.clone();
        env.allow.extend(allow);
        env.ask.extend(ask);
        env.deny.extend(deny);
        self.setting(file, "env.default", &e.default, &mut env.default);
        if e.message.is_some() {
            env.message = e.message;
        }
        self.policy.env = env;
    }
}
