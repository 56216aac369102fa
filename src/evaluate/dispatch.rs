//! Which rule decides a simple command: its program's rule, a wrapper's (whose payload is
//! checked in turn), or the policy's default for a program it does not name.

use super::{args, Eval};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{wrappers, Span, Word};

/// Allowed program names listed in a refusal of an unknown program before "and N more".
const MAX_ALLOWED_LISTED: usize = 150;

impl Eval<'_> {
    /// Check a command's program and arguments (`words` is not empty).
    pub(super) fn program(&mut self, words: &[Word], span: Span) {
        let Some(first) = words.first() else { return };
        let Some(name) = super::args::static_text(first) else {
            let why = first
                .dynamic_reasons()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            self.reason(
                ReasonCode::DynamicProgram,
                Verdict::Deny,
                None,
                format!("the program name depends on {why}, so what runs cannot be known"),
                first.span,
            );
            return;
        };
        if self.sandbox_code(&name, words, span) {
            return;
        }
        self.program_named(&name, words, span);
    }

    /// [`Eval::program`] once the program's name is known.
    pub(super) fn program_named(&mut self, name: &str, words: &[Word], span: Span) {
        let Some(first) = words.first() else { return };
        self.env_dumps(name, words);
        let policy = self.policy;
        if let Some(rule) = policy.programs.get(name) {
            if name == "[" || name == "test" {
                let args = self.test_operands(name, &words[1..]);
                self.args(rule, &args, first.span, span);
                if rule.verdict != Verdict::Deny {
                    self.probe_paths(&words[1..]);
                }
                return;
            }
            self.args(rule, &words[1..], first.span, span);
            if name == "git" && rule.verdict != Verdict::Deny {
                self.git_repository(rule, &words[1..]);
                if let Some(i) = super::git_repo::subcommand(&words[1..]) {
                    if words[1 + i].static_value().as_deref() == Some("apply") {
                        self.git_apply(&words[2 + i..], first.span);
                    }
                }
            }
            return;
        }
        if wrappers::is_wrapper(name) {
            self.wrapper(name, words, span);
            return;
        }
        if name.contains('/') {
            self.reason(
                ReasonCode::ProgramPath,
                Verdict::Deny,
                None,
                format!(
                    "`{name}` is run by path; only programs named in the policy may run, by name"
                ),
                first.span,
            );
            return;
        }
        let state = wrappers::SESSION_STATE.contains(&name);
        let mut message = if state {
            format!("`{name}` changes the state of the shell session for later commands and is not allowed")
        } else {
            format!("`{name}` is not an allowed program")
        };
        if let Some(extra) = &policy.default_message {
            message.push_str(": ");
            message.push_str(extra);
        }
        let allowed: Vec<&str> = policy
            .programs
            .verdicts()
            .filter(|(_, v)| *v == Verdict::Allow)
            .map(|(n, _)| n.as_str())
            .collect();
        if !allowed.is_empty() {
            // Every name, so that a program left out is never mistaken for a forbidden one;
            // past a long list, how many more and where they are.
            let shown = allowed.len().min(MAX_ALLOWED_LISTED);
            let mut list = allowed[..shown].join(", ");
            let more = allowed.len() - shown;
            if more > 0 {
                let file = policy.sources.last().map_or("the policy", String::as_str);
                list.push_str(&format!(
                    ", and {more} more: see the [programs] tables of {file}, or ask \
                     `policy-check explain --policy {file} 'CMD'`"
                ));
            }
            message.push_str(&format!(" (allowed: {list})"));
            let close = closest_programs(name, &allowed);
            if !close.is_empty() {
                message.push_str(&format!("; closest allowed: {}", close.join(", ")));
            }
        }
        let default = policy.default.clone();
        let code = if state {
            ReasonCode::SessionState
        } else {
            ReasonCode::ProgramNotAllowed
        };
        // Default-deny is the floor: an unknown program is never less than the default.
        self.setting(code, &default, message, first.span);
    }

    pub(super) fn wrapper(&mut self, name: &str, words: &[Word], span: Span) {
        let w = &self.policy.wrappers;
        let rule = w.allow.get(name).or_else(|| w.ask.get(name)).cloned();
        let Some(rule) = rule else {
            let mut msg = format!("`{name}` runs another command and is not an allowed wrapper");
            if let Some(extra) = &self.policy.wrappers.message {
                msg.push_str(": ");
                msg.push_str(extra);
            }
            self.reason(
                ReasonCode::WrapperDenied,
                Verdict::Deny,
                None,
                msg,
                words[0].span,
            );
            return;
        };
        if self.policy.wrappers.ask.contains_key(name) {
            self.reason(
                ReasonCode::WrapperAsk,
                Verdict::Ask,
                Some(&rule),
                format!("`{name}` needs approval"),
                words[0].span,
            );
        } else {
            self.allowed_by(super::Part::Wrapper, words[0].span, &rule, None, name);
        }
        match wrappers::unwrap(name, &words[1..], span) {
            wrappers::Unwrapped::Nothing => {}
            wrappers::Unwrapped::Refuse { message, span } => {
                self.reason(
                    ReasonCode::WrapperUnverifiable,
                    Verdict::Deny,
                    Some(&rule),
                    message,
                    span,
                );
            }
            wrappers::Unwrapped::Source { text, span, offset } => self.payload(&text, span, offset),
            wrappers::Unwrapped::Command {
                words: inner,
                assignments,
                appends_dynamic,
            } => {
                for a in assignments {
                    if let Some(v) = a.static_value() {
                        let n = v.split('=').next().unwrap_or_default().to_string();
                        self.env_name(&n, a.span);
                    }
                }
                if inner.is_empty() {
                    return;
                }
                if self.nesting >= self.policy.limits.max_nesting + 4 {
                    self.reason(
                        ReasonCode::NestingLimit,
                        Verdict::Deny,
                        None,
                        "wrappers nested too deep".into(),
                        span,
                    );
                    return;
                }
                self.nesting += 1;
                if appends_dynamic {
                    let mut v = inner.to_vec();
                    v.push(args::stdin_word(span));
                    self.program(&v, span);
                } else {
                    self.program(inner, span);
                }
                self.nesting -= 1;
            }
        }
    }
}

/// The allowed programs whose names are close to `name` (a version suffix, a typo, another
/// spelling: `python` for `python3`, `rgrep` for `grep`), best first, at most three.
fn closest_programs<'a>(name: &str, allowed: &[&'a str]) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = allowed
        .iter()
        .filter(|a| a.len() > 1 && **a != name)
        .map(|a| {
            let related =
                (a.starts_with(name) || name.starts_with(*a)) && name.len().min(a.len()) >= 2;
            let score = if related {
                1.0
            } else {
                strsim::jaro_winkler(name, a)
            };
            (score, *a)
        })
        .filter(|(score, a)| {
            *score >= 0.85 || strsim::osa_distance(name, a) * 3 <= name.len().max(a.len())
        })
        .collect();
    scored.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(y.1)));
    scored.into_iter().take(3).map(|(_, a)| a).collect()
}

#[cfg(test)]
mod tests {
    use super::closest_programs;

    #[test]
    fn names_close_allowed_programs_only() {
        let allowed = ["cat", "grep", "python3", "ls", "sort", "git", "[", ":"];
        assert_eq!(closest_programs("python", &allowed), vec!["python3"]);
        assert_eq!(closest_programs("rgrep", &allowed)[0], "grep");
        assert_eq!(closest_programs("gti", &allowed), vec!["git"]);
        assert!(closest_programs("perl", &allowed).is_empty());
        assert!(closest_programs("curl", &allowed).is_empty());
    }
}
