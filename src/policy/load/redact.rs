//! `[redact]`: the policy's credential rules, compiled at load so a broken one is a load error.

use super::{first_line, File, Loader};
use crate::codes::DiagnosticCode;

impl Loader {
    /// `[redact]`: extend or override the built-in credential rules. Validated here (every
    /// regex compiled) so a broken rule is a load error at the policy's location.
    pub(super) fn apply_redact(&mut self, file: &File, value: toml::Value) {
        let loc = file.loc(file.key(&["redact"]));
        let config: crate::redact::RedactConfig = match value.try_into() {
            Ok(c) => c,
            Err(e) => {
                self.diag(
                    DiagnosticCode::PolicyRedact,
                    format!("[redact]: {}", first_line(e.message())),
                    loc,
                );
                return;
            }
        };
        let mut merged = self.policy.redact.take().unwrap_or_default();
        merged.merge(config);
        if let Err(e) = crate::redact::RuleSet::with_config(&merged) {
            self.diag(DiagnosticCode::PolicyRedact, format!("[redact]: {e}"), loc);
            return;
        }
        self.policy.redact = Some(merged);
    }
}
