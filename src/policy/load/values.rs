//! Validating the values every section shares: verdicts, verdict settings and counts.

use toml::Spanned;

use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::{Setting, Verdict};

impl Loader {
    pub(super) fn verdict(&mut self, file: &File, v: &Spanned<String>) -> Option<Verdict> {
        let parsed = Verdict::parse(v.get_ref());
        if parsed.is_none() {
            self.diag(
                DiagnosticCode::PolicyInvalidVerdict,
                format!(
                    "`{}` is not a verdict: use \"allow\", \"ask\" or \"deny\"",
                    v.get_ref()
                ),
                file.loc(v.span()),
            );
        }
        parsed
    }

    pub(super) fn setting(
        &mut self,
        file: &File,
        name: &str,
        v: &Option<Spanned<String>>,
        slot: &mut Setting,
    ) {
        if let Some(v) = v {
            if let Some(verdict) = self.verdict(file, v) {
                *slot = Setting {
                    verdict,
                    rule: file.rule(name, v.span()),
                };
            }
        }
    }

    pub(super) fn count(
        &mut self,
        file: &File,
        v: &Option<Spanned<i64>>,
        min: i64,
        slot: &mut usize,
    ) {
        if let Some(v) = v {
            match usize::try_from(*v.get_ref()) {
                Ok(n) if *v.get_ref() >= min => *slot = n,
                _ => self.diag(
                    DiagnosticCode::PolicyInvalidLimit,
                    format!("{} is out of range (at least {min})", v.get_ref()),
                    file.loc(v.span()),
                ),
            }
        }
    }
}
