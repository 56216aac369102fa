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
    /// Variable-name globs that may be *expanded* when the command did not assign them
    /// itself: a read of the environment the shell inherited (`echo $HOME`). bash's own
    /// variables (`$?`, `$1`, `RANDOM`, `LINENO`, `BASH_VERSION`, ...) are never reads.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read: Vec<Spanned<String>>,
    /// Variable-name globs whose expansion is refused even when `read` names them (checked
    /// first, and matched against the name in upper case too: `*TOKEN*` refuses `gh_token`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read_deny: Vec<Spanned<String>>,
    /// The verdict for a read that no `read`/`read_deny` pattern matches (built in: deny).
    #[schemars(with = "Option<VerdictName>")]
    pub read_default: Option<Spanned<String>>,
    /// Message for refused reads.
    pub read_message: Option<String>,
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
        let read = self.name_patterns(file, "env.read", &e.read);
        let read_deny = self.name_patterns(file, "env.read_deny", &e.read_deny);
        for d in &read_deny {
            if let Some(a) = read.iter().find(|a| a.text == d.text) {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!("`{}` is in env.read_deny and also in env.read", d.text),
                    a.rule.location.clone(),
                );
            }
        }
        let mut env = self.policy.env.clone();
        env.allow.extend(allow);
        env.ask.extend(ask);
        env.deny.extend(deny);
        env.read.allow.extend(read);
        env.read.deny.extend(read_deny);
        self.setting(file, "env.default", &e.default, &mut env.default);
        self.setting(
            file,
            "env.read_default",
            &e.read_default,
            &mut env.read.default,
        );
        if e.message.is_some() {
            env.message = e.message;
        }
        if e.read_message.is_some() {
            env.read.message = e.read_message;
        }
        self.policy.env = env;
    }
}
