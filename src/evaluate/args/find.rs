//! The special program `find`: its `-exec`, `-execdir`, `-ok` and `-okdir` payloads, split
//! out of its arguments and checked as commands of their own.

use super::*;

/// The options of find that run a command (see [`Eval::find_exec`]).
pub(super) const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

impl Eval<'_> {
    /// Split find's `-exec CMD ... ;` / `-ok` / `-execdir` / `-okdir` payloads out of `args`,
    /// checking each as a command (when `find` is an allowed wrapper) or refusing it.
    pub(super) fn find_exec(&mut self, rule: &ProgramRule, args: &[Word]) -> Vec<Word> {
        const EXEC: &[&str] = FIND_EXEC;
        let mut out = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let s = args[i].static_value();
            if !s.as_deref().is_some_and(|s| EXEC.contains(&s)) {
                out.push(args[i].clone());
                i += 1;
                continue;
            }
            let start = i;
            let opt = s.unwrap_or_default();
            i += 1;
            let mut payload = Vec::new();
            let mut closed = false;
            while i < args.len() {
                match args[i].static_value().as_deref() {
                    Some(";") | Some("+") => {
                        closed = true;
                        i += 1;
                        break;
                    }
                    Some("{}") => payload.push(stdin_word(args[i].span)),
                    _ => payload.push(args[i].clone()),
                }
                i += 1;
            }
            let span = args[start]
                .span
                .join(args[i.saturating_sub(1).min(args.len() - 1)].span);
            // The option itself still goes through the rule (so a policy can deny it).
            out.push(args[start].clone());
            if rule.deny_options.contains(&opt) {
                continue;
            }
            let allowed = self.policy.wrappers.allow.contains_key("find")
                || self.policy.wrappers.ask.contains_key("find");
            if !allowed {
                self.reason(
                    ReasonCode::WrapperDenied,
                    Verdict::Deny,
                    None,
                    format!("`find {opt}` runs another command and find is not an allowed wrapper"),
                    span,
                );
            } else if !closed || payload.is_empty() {
                self.reason(
                    ReasonCode::WrapperUnverifiable,
                    Verdict::Deny,
                    None,
                    format!("`find {opt}` without a complete command"),
                    span,
                );
            } else {
                if self.policy.wrappers.ask.contains_key("find") {
                    let r = self.policy.wrappers.ask.get("find").cloned();
                    self.reason(
                        ReasonCode::WrapperAsk,
                        Verdict::Ask,
                        r.as_ref(),
                        format!("`find {opt}` needs approval"),
                        span,
                    );
                }
                self.program(&payload, span);
            }
        }
        out
    }
}
