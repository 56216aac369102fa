//! Options of a program: one option word read against the rule's option lists (clusters
//! `-rf`, glued values `-ofile`, `--opt=value`, GNU abbreviations `--out`).

use super::*;

/// An option word of a program with `glued_options` (`gcc -Iinclude`): the option and its
/// glued value. A listed word (`-Wall`, `-std=c99`) is itself; otherwise the longest glued
/// option it starts with takes the rest as its value.
pub(super) fn glued_option<'s>(rule: &ProgramRule, s: &'s str) -> (&'s str, Option<&'s str>) {
    let split = s.split_once('=');
    let known = |n: &str| rule.index().facts(n).known();
    if known(s) {
        return (s, None);
    }
    if let Some((n, v)) = split.filter(|(n, _)| known(n)) {
        return (n, Some(v));
    }
    let best = rule
        .glued_options
        .iter()
        .filter(|o| s.len() > o.len() && s.starts_with(o.as_str()))
        .max_by_key(|o| o.len());
    match best {
        Some(o) => (&s[..o.len()], Some(&s[o.len()..])),
        None => match split {
            Some((n, v)) => (n, Some(v)),
            None => (s, None),
        },
    }
}

/// A long option as written, resolved to the option it abbreviates (GNU getopt accepts
/// any unambiguous prefix: `--out` is `--output`). Ambiguous or unknown names stay as they are.
pub(super) fn resolve_long<'x>(rule: &'x ProgramRule, name: &'x str) -> &'x str {
    if !name.starts_with("--") || name.len() < 3 {
        return name;
    }
    rule.index().resolve_long(name)
}

pub(super) fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allowed",
        Verdict::Ask => "subject to approval",
        Verdict::Deny => "denied",
    }
}

impl Eval<'_> {
    pub(super) fn option<'w>(
        &mut self,
        rule: &ProgramRule,
        name: &str,
        written: &str,
        value: Option<Value<'w>>,
        span: Span,
        p: &mut Parsed<'w>,
    ) {
        let ix = rule.index();
        let facts = ix.facts(name);
        if !rule.value_write_options.is_empty() && rule.value_write_options.contains(name) {
            p.value_write = true;
        }
        if rule.args.iter().any(|a| a.unless_options.contains(name)) {
            p.unless_seen.insert(name.to_string());
        }
        if rule.target_directory {
            match name {
                "-T" | "--no-target-directory" => p.no_target = true,
                "-t" | "--target-directory" => p.target = value.clone(),
                _ => {}
            }
        }
        if facts.any(OptionFacts::REQUIRED | OptionFacts::IMPLICIT) {
            p.seen.insert(name.to_string());
        }
        // An abbreviation of a denied option is denied, unless it is itself the full name of
        // an option the rule knows (`jq --arg` is not `--args`).
        let denied_by_prefix = !facts.known()
            && written.starts_with("--")
            && written.len() >= 4
            && ix.denied_with_prefix(written)
            && !ix.facts(written).any(OptionFacts::ALLOW);
        // The message's tail, only when there is a message.
        let extra = rule
            .option_messages
            .get(name)
            .or(rule.options_message.as_ref())
            .or(rule.message.as_ref());
        let with_extra = |m: String| match extra {
            Some(e) => format!("{m}: {e}"),
            None => m,
        };
        if facts.any(OptionFacts::DENY) || denied_by_prefix {
            let m = with_extra(format!("option `{written}` of `{}` is denied", rule.name));
            let entry = if denied_by_prefix { written } else { name };
            self.reason_at(
                ReasonCode::OptionDenied,
                Verdict::Deny,
                Some(&rule.rule),
                m,
                span,
                Some(if rule.option_table {
                    "options"
                } else {
                    "deny_options"
                }),
                entry,
            );
        } else if facts.any(OptionFacts::ASK) {
            let m = with_extra(format!(
                "option `{written}` of `{}` needs approval",
                rule.name
            ));
            self.reason_at(
                ReasonCode::OptionAsk,
                Verdict::Ask,
                Some(&rule.rule),
                m,
                span,
                Some(if rule.option_table {
                    "options"
                } else {
                    "ask_options"
                }),
                name,
            );
        } else if let Some(allowed) = &rule.allow_options {
            if written.starts_with("--")
                && written != name
                && !ix.facts(written).any(OptionFacts::ALLOW)
            {
                // An abbreviation of an allowed option may also be the full name of one the
                // policy does not list (`git push --force` for `--force-with-lease`).
                let m = with_extra(format!(
                    "option `{written}` of `{}` is not allowed: write `{name}` in full if that is what is meant",
                    rule.name
                ));
                self.reason(
                    ReasonCode::OptionNotAllowed,
                    Verdict::Deny,
                    Some(&rule.rule),
                    m,
                    span,
                );
            } else if !facts.any(OptionFacts::ALLOW) {
                let hint = crate::evaluate::kinds::allowed_hint(allowed, written);
                let m = with_extra(format!(
                    "option `{written}` of `{}` is not allowed ({hint})",
                    rule.name
                ));
                self.reason(
                    ReasonCode::OptionNotAllowed,
                    Verdict::Deny,
                    Some(&rule.rule),
                    m,
                    span,
                );
            } else {
                let key = if rule.option_table {
                    "options"
                } else {
                    "allow_options"
                };
                self.option_allowed(rule, Some(key), name, span);
            }
        } else {
            self.option_allowed(rule, None, name, span);
        }
        if facts.any(OptionFacts::WRITE) {
            p.write_mode = true;
        }
        if facts.any(OptionFacts::PATTERN) {
            p.pattern_given = true;
        }
        let Some(value) = value else {
            if facts.any(OptionFacts::WITH_VALUE) {
                self.reason(
                    ReasonCode::MissingOperand,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!("option `{written}` needs a value"),
                    span,
                );
            }
            return;
        };
        if let Some(re) = facts
            .any(OptionFacts::VALUE_PATTERN)
            .then(|| rule.option_values.get(name))
            .flatten()
        {
            let v = match &value {
                Value::Word(w) => static_text(w),
                Value::Glued(s, _) => Some(Cow::Borrowed(s.as_str())),
            };
            if !v.as_deref().is_some_and(|v| re.is_match(v)) {
                let m = with_extra(format!(
                    "this value of `{written}` is not allowed for `{}` (must match `{}`)",
                    rule.name,
                    re.as_str()
                ));
                let vspan = match &value {
                    Value::Word(w) => w.span,
                    Value::Glued(_, s) => *s,
                };
                self.reason(
                    ReasonCode::OptionValueDenied,
                    Verdict::Deny,
                    Some(&rule.rule),
                    m,
                    vspan,
                );
            }
        }
        if let Value::Word(w) = &value {
            // The extra words would be options or operands: either may be checked.
            if (ix.options_restricted || ix.checked_operands)
                && static_text(w).is_none()
                && w.fields(&self.known()).is_many()
                && !self.value_glob_judged(rule, written, w)
            {
                let policy = self.policy;
                let msg = format!(
                    "the value of `{written}` may become several words when bash splits or globs it, and the words after the first would be more arguments of `{}`; quote it",
                    rule.name
                );
                self.setting(
                    ReasonCode::WordSplit,
                    &policy.shell.dynamic_arguments,
                    msg,
                    w.span,
                );
            }
        }
        let kind = ix.kind(name);
        if kind == ArgKind::PathRead && !rule.value_write_options.is_empty() {
            p.read_values.push(value.clone());
        }
        self.value(rule, kind, value);
    }
}
