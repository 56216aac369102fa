//! `[wrappers]`: which programs that run other programs are unwrapped (and their payload
//! checked), against the wrapper table in [`crate::shell::wrappers`].

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::shell::wrappers;

/// `[wrappers]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawWrappers {
    /// Wrappers that are unwrapped and their payload checked.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Wrappers that are unwrapped and then need approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Message for refusals.
    pub message: Option<String>,
}

impl Loader {
    pub(super) fn apply_wrappers(&mut self, file: &File, w: RawWrappers) {
        let mut wrappers = std::mem::take(&mut self.policy.wrappers);
        for (list, name, ask) in [
            (&w.allow, "wrappers.allow", false),
            (&w.ask, "wrappers.ask", true),
        ] {
            for item in list {
                let n = item.get_ref();
                if !wrappers::is_unwrappable(n) {
                    self.diag(
                        DiagnosticCode::PolicyUnknownWrapper,
                        format!(
                            "`{n}` is not a wrapper shellgate can unwrap; supported: {}",
                            wrappers::UNWRAPPABLE.join(", ")
                        ),
                        file.loc(item.span()),
                    );
                    continue;
                }
                let other = if ask { &wrappers.allow } else { &wrappers.ask };
                if other.contains_key(n) {
                    self.diag(
                        DiagnosticCode::PolicyContradiction,
                        format!("wrapper `{n}` is in both wrappers.allow and wrappers.ask"),
                        file.loc(item.span()),
                    );
                    continue;
                }
                let dest = if ask {
                    &mut wrappers.ask
                } else {
                    &mut wrappers.allow
                };
                dest.insert(n.clone(), file.rule(name, item.span()));
            }
        }
        if w.message.is_some() {
            wrappers.message = w.message;
        }
        self.policy.wrappers = wrappers;
    }
}
