//! Assignments to variables, from anywhere in a command, against `[env]`.

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::Span;

impl Eval<'_> {
    /// An assignment to variable `name`, from anywhere.
    pub(super) fn env_name(&mut self, name: &str, span: Span) {
        self.record_assignment(name);
        let policy = self.policy;
        let env = &policy.env;
        let message = |what: &str| {
            let mut m = format!("assigning `{name}` {what}");
            if let Some(extra) = &env.message {
                m.push_str(": ");
                m.push_str(extra);
            }
            m
        };
        if let Some(p) = env.deny.iter().find(|p| p.glob.is_match(name)) {
            let (m, r) = (message("is denied"), p.rule.clone());
            self.reason(ReasonCode::EnvDenied, Verdict::Deny, Some(&r), m, span);
        } else if let Some(p) = env.ask.iter().find(|p| p.glob.is_match(name)) {
            let (m, r) = (message("needs approval"), p.rule.clone());
            self.reason(ReasonCode::EnvAsk, Verdict::Ask, Some(&r), m, span);
        } else if let Some(p) = env.allow.iter().find(|p| p.glob.is_match(name)) {
            self.allowed_by(super::Part::Assignment, span, &p.rule, None, &p.text);
        } else {
            let (m, s) = (message("is not allowed"), env.default.clone());
            self.setting(ReasonCode::EnvNotAllowed, &s, m, span);
        }
    }
}
