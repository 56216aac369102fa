//! Arguments of a program: options (clusters `-rf`, glued values `-ofile`, `--opt=value`,
//! GNU abbreviations `--out`), subcommands, and typed operands.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::{ArgKind, OptionFacts, ProgramRule, Verdict};
use crate::shell::{Fields, Param, Span, Word, WordPart};

/// A word standing for arguments only known at run time (what `xargs` reads, find's `{}`).
pub(super) fn stdin_word(span: Span) -> Word {
    Word {
        span,
        parts: vec![WordPart::Param(Param {
            name: "@".into(),
            span,
            indirect: false,
            operator: None,
            subscript: None,
            words: Vec::new(),
            arithmetic: Vec::new(),
        })],
    }
}

/// The options of find that run a command (see [`Eval::find_exec`]).
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// The value of an option: a separate word, or glued text in the option's own word.
#[derive(Clone)]
enum Value<'w> {
    Word(&'w Word),
    Glued(String, Span),
}

struct Parsed<'w> {
    operands: Vec<&'w Word>,
    /// Indices into `operands` of words that may become any number of words.
    many: BTreeSet<usize>,
    /// The options given that some check asks about later (`required_options`,
    /// `implicit_operand_options`); no other option is looked up here.
    seen: BTreeSet<String>,
    write_mode: bool,
    pattern_given: bool,
}

/// A word's value after quote removal, if it has one without any expansion: borrowed for a
/// word of one literal part (most words), as [`Word::static_value`] otherwise.
pub(super) fn static_text(w: &Word) -> Option<Cow<'_, str>> {
    match w.parts.as_slice() {
        [] => Some(Cow::Borrowed("")),
        [WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s)] => {
            Some(Cow::Borrowed(s))
        }
        _ => w.static_value().map(Cow::Owned),
    }
}

impl Eval<'_> {
    /// Check `args` of a program under `rule`. `name_span` is the program word.
    pub(super) fn args(
        &mut self,
        rule: &ProgramRule,
        args: &[Word],
        name_span: Span,
        cmd_span: Span,
    ) {
        debug_assert!(
            rule.index_is_current(),
            "the index of `{}` is stale: Policy::reindex after changing its lists",
            rule.name
        );
        let ix = &rule.index;
        if rule.verdict != Verdict::Allow {
            let msg = rule.message.clone().unwrap_or_else(|| {
                format!(
                    "`{}` is {} by the policy",
                    rule.name,
                    verdict_word(rule.verdict)
                )
            });
            let code = if rule.verdict == Verdict::Deny {
                ReasonCode::ProgramDenied
            } else {
                ReasonCode::ProgramAsk
            };
            self.reason(code, rule.verdict, Some(&rule.rule), msg, name_span);
            if rule.verdict == Verdict::Deny {
                return;
            }
        }
        if rule.runs_workspace_code {
            self.workspace_code(rule, name_span);
        }
        // find's -exec family runs a payload: unwrap it if the policy allows, else refuse.
        let unwrapped;
        let args: &[Word] = if rule.name == "find"
            && args
                .iter()
                .any(|w| static_text(w).is_some_and(|s| FIND_EXEC.contains(&&*s)))
        {
            unwrapped = self.find_exec(rule, args);
            &unwrapped
        } else {
            args
        };
        // Brace expansion comes before anything else bash does with the words.
        let expanded: Vec<Word>;
        let args: &[Word] = if args
            .iter()
            .any(|w| w.parts.iter().any(|p| matches!(p, WordPart::Brace(_))))
        {
            expanded = args
                .iter()
                .flat_map(|w| super::braces::expand(w).unwrap_or_else(|| vec![w.clone()]))
                .collect();
            &expanded
        } else {
            args
        };
        let has_subcommands = !rule.subcommands.is_empty();
        let restricted = ix.restricted;
        let known = self.known();
        let mut p = Parsed {
            operands: Vec::new(),
            many: BTreeSet::new(),
            seen: BTreeSet::new(),
            write_mode: false,
            pattern_given: false,
        };
        let mut after_dd = false;
        let mut dd_rest: Option<usize> = None;
        let mut sub_rest = args.len();
        let plus_options = ix.plus_options;
        let declaration = ix.declaration;
        // The option a letter of a cluster is, reused for every letter.
        let mut short = String::new();
        let mut i = 0;
        while i < args.len() {
            let w = &args[i];
            i += 1;
            // Programs that stop reading options at their first operand (`printf FORMAT`).
            // Only an operand that is surely a word counts: `$x` may expand to none, and then
            // the next word is the first again.
            let options_over =
                after_dd || (rule.options_before_operands && p.operands.len() > p.many.len());
            let s: Cow<str> = match static_text(w) {
                Some(s) => s,
                None => match w.fields(&known) {
                    Fields::Static(s) => Cow::Owned(s),
                    // A declaration builtin does not split or glob an argument written as an
                    // assignment (`export a=$x` assigns all of `$x`): one operand.
                    _ if declaration && assigned_name(w).is_some() => {
                        p.operands.push(w);
                        continue;
                    }
                    fields => {
                        if !rule.args.is_empty() {
                            self.patterns_unchecked(rule, w);
                        }
                        if !options_over {
                            let rest = &args[i..];
                            self.dynamic_arg(rule, w, &fields, restricted, plus_options, rest);
                        }
                        if fields.is_many() {
                            p.many.insert(p.operands.len());
                        }
                        p.operands.push(w);
                        if has_subcommands && p.operands.len() == 1 {
                            sub_rest = i;
                            break;
                        }
                        continue;
                    }
                },
            };
            let s: &str = &s;
            for ar in &rule.args {
                if ar.pattern.is_match(s) {
                    let msg = ar.message.clone().unwrap_or_else(|| {
                        format!("`{s}` is {} for `{}`", verdict_word(ar.verdict), rule.name)
                    });
                    let code = if ar.verdict == Verdict::Deny {
                        ReasonCode::ArgumentDenied
                    } else {
                        ReasonCode::ArgumentAsk
                    };
                    self.reason(code, ar.verdict, Some(&ar.rule), msg, w.span);
                }
            }
            // `set +o vi`, `declare +x NAME`: these builtins take `+` options too.
            let plus = plus_options && s.starts_with('+') && s.len() >= 2;
            if options_over || s == "-" || (!s.starts_with('-') && !plus) || s.len() < 2 {
                p.operands.push(w);
                if has_subcommands && p.operands.len() == 1 {
                    sub_rest = i;
                    break;
                }
                continue;
            }
            if s == "--" {
                if rule.after_double_dash.is_some() {
                    dd_rest = Some(i);
                    break;
                }
                after_dd = true;
                continue;
            }
            if rule.single_dash_long || s.starts_with("--") {
                let (name, glued) = match s.split_once('=') {
                    _ if !rule.glued_options.is_empty() => glued_option(rule, s),
                    Some((n, v)) => (n, Some(v)),
                    None => (s, None),
                };
                let canonical = resolve_long(rule, name);
                let facts = ix.facts(canonical);
                let value = match glued {
                    Some(v) => Some(Value::Glued(v.to_string(), w.span)),
                    None if facts.any(OptionFacts::WITH_VALUE) => {
                        let v = args.get(i).map(Value::Word);
                        // Only an exact name surely takes the next word: for an abbreviation
                        // (`--word-diff` for `--word-diff-regex`?) the next word is checked as
                        // its value and also read as an argument, whichever bash's tool sees.
                        if canonical == name {
                            i += 1;
                        }
                        v
                    }
                    None => None,
                };
                // `jq --arg NAME VALUE`: the value checked by kind is the second word.
                let value = if facts.any(OptionFacts::TWO_VALUES)
                    && matches!(value, Some(Value::Word(_)))
                    && canonical == name
                {
                    i += 1;
                    args.get(i - 1).map(Value::Word)
                } else {
                    value
                };
                if has_subcommands && !facts.known() {
                    self.unknown_before_subcommand(rule, name, w.span);
                }
                if facts.any(OptionFacts::DELEGATE) {
                    self.option(rule, canonical, name, value.clone(), w.span, &mut p);
                    self.delegate(rule, name, value, args.get(i..).unwrap_or(&[]), cmd_span);
                    return;
                }
                self.option(rule, canonical, name, value, w.span, &mut p);
                after_dd |= facts.any(OptionFacts::TERMINAL);
                continue;
            }
            // A cluster of short options: `-rf`, `-n5`, `-ofile` (or `+o` for `set`).
            let sign = if plus { '+' } else { '-' };
            // The sign is one byte: the letters start at 1.
            for (at, c) in s[1..].char_indices() {
                short.clear();
                short.push(sign);
                short.push(c);
                let opt = short.as_str();
                let rest = &s[1 + at + c.len_utf8()..];
                let facts = ix.facts(opt);
                if has_subcommands && !facts.known() {
                    self.unknown_before_subcommand(rule, opt, w.span);
                }
                if facts.any(OptionFacts::WITH_VALUE) {
                    let value = if rest.is_empty() {
                        let v = args.get(i).map(Value::Word);
                        i += 1;
                        v
                    } else {
                        Some(Value::Glued(rest.to_string(), w.span))
                    };
                    if facts.any(OptionFacts::DELEGATE) {
                        self.option(rule, opt, opt, value.clone(), w.span, &mut p);
                        self.delegate(rule, opt, value, args.get(i..).unwrap_or(&[]), cmd_span);
                        return;
                    }
                    self.option(rule, opt, opt, value, w.span, &mut p);
                    after_dd |= facts.any(OptionFacts::TERMINAL);
                    break;
                }
                if facts.any(OptionFacts::OPTIONAL_VALUE) {
                    let value = (!rest.is_empty()).then(|| Value::Glued(rest.to_string(), w.span));
                    self.option(rule, opt, opt, value, w.span, &mut p);
                    break;
                }
                self.option(rule, opt, opt, None, w.span, &mut p);
            }
        }
        if has_subcommands {
            let sub_word = p.operands.first().copied();
            match sub_word.and_then(Word::static_value) {
                Some(sub) => {
                    let rest_start = sub_rest;
                    self.check_required(rule, &p, name_span);
                    match rule.subcommands.get(&sub) {
                        Some(sub_rule) => {
                            let span = sub_word.map_or(name_span, |w| w.span);
                            self.args(sub_rule, &args[rest_start..], span, cmd_span)
                        }
                        None => {
                            let msg = format!(
                                "`{} {sub}` is not an allowed subcommand (allowed: {})",
                                rule.name,
                                rule.subcommands
                                    .keys()
                                    .cloned()
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            );
                            let span = sub_word.map_or(name_span, |w| w.span);
                            self.reason(
                                ReasonCode::SubcommandNotAllowed,
                                rule.unknown_subcommand,
                                Some(&rule.rule),
                                msg,
                                span,
                            );
                        }
                    }
                }
                None if sub_word.is_some() => {
                    let span = sub_word.map_or(name_span, |w| w.span);
                    self.reason(
                        ReasonCode::DynamicArgument,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "the subcommand of `{}` is not known before it runs",
                            rule.name
                        ),
                        span,
                    );
                }
                None => {
                    let msg = format!("`{}` without a subcommand is not allowed", rule.name);
                    self.reason(
                        ReasonCode::SubcommandNotAllowed,
                        rule.unknown_subcommand,
                        Some(&rule.rule),
                        msg,
                        name_span,
                    );
                }
            }
            return;
        }
        self.check_required(rule, &p, name_span);
        let count = p.operands.len();
        if count < rule.min_operands {
            self.reason(
                ReasonCode::MissingOperand,
                Verdict::Deny,
                Some(&rule.rule),
                format!(
                    "`{}` needs at least {} operand(s) here",
                    rule.name, rule.min_operands
                ),
                name_span,
            );
        }
        let mut spec = Cow::Borrowed(&rule.operands);
        if p.pattern_given
            && spec.head.first().is_some_and(|k| {
                matches!(
                    k,
                    ArgKind::Pattern | ArgKind::SedScript | ArgKind::AwkProgram
                )
            })
        {
            spec.to_mut().head.remove(0);
        }
        // A glob match named like `-fx` or `-efoo` would supply the pattern itself, and the
        // word read as the pattern would be a file to read (found by the argv campaign:
        // `grep "$(..)" -f-*`): that word is checked as a path too.
        let pattern_may_move = !p.pattern_given
            && !rule.pattern_options.is_empty()
            && p.many
                .iter()
                .any(|&i| p.operands[i].fields(&known).may_be_option(plus_options));
        let mut cd_target: Option<(Span, Option<Vec<Option<PathBuf>>>)> = None;
        let mut path_operands = 0;
        for (idx, w) in p.operands.iter().enumerate() {
            let Some(mut kind) = spec.kind_of(idx, count) else {
                let extra = match &rule.message {
                    Some(m) if rule.extra_operands != Verdict::Deny => m.clone(),
                    _ => format!(
                        "`{}` does not take this many operands (an extra one may be an output file)",
                        rule.name
                    ),
                };
                self.reason(
                    ReasonCode::TooManyOperands,
                    rule.extra_operands,
                    Some(&rule.rule),
                    extra,
                    w.span,
                );
                continue;
            };
            if p.write_mode && kind == ArgKind::PathRead {
                kind = ArgKind::PathWrite;
            }
            // A word that may become any number of words is only read right where every word
            // it becomes has the same kind: among the repeated middle operands, with the
            // fixed trailing ones still after it (`cp src/* dest/`, not `cp a src/*`, whose
            // last match would be the destination).
            if p.many.contains(&idx) {
                let in_middle = spec.repeat.is_some()
                    && idx >= spec.head.len()
                    && count - idx > spec.tail.len();
                // A glob as the last leading operand whose extra matches are more of the
                // repeated kind (`grep ^[<>] f`): checked as both kinds, not refused.
                let lands = (!in_middle && super::globs::is_pure_glob(w, &known))
                    .then(|| super::globs::lands_in_repeat(&spec, idx))
                    .flatten();
                if let Some(repeat) = lands {
                    if repeat != kind {
                        self.value(rule, repeat, Value::Word(w));
                    }
                } else if !in_middle {
                    let policy = self.policy;
                    let msg = format!(
                        "this word may become any number of words when it runs, and the operands of `{}` mean different things by position; name the operand exactly",
                        rule.name
                    );
                    self.setting(
                        ReasonCode::WordSplit,
                        &policy.shell.dynamic_arguments,
                        msg,
                        w.span,
                    );
                    // Its words may land where the repeated kind is, too: checked as both.
                    if let Some(other) = spec.repeat.filter(|&r| r != kind) {
                        self.value(rule, other, Value::Word(w));
                    }
                } else if let Some(repeat) = spec.repeat {
                    kind = repeat;
                }
            }
            if idx == 0 && pattern_may_move && kind == ArgKind::Pattern {
                self.value(rule, ArgKind::PathRead, Value::Word(w));
            }
            if matches!(kind, ArgKind::PathRead | ArgKind::PathWrite) {
                path_operands += 1;
            }
            let resolved = self.value(rule, kind, Value::Word(w));
            if rule.name == "cd" {
                cd_target = Some((w.span, resolved));
            }
        }
        // `ls`, `find`, `du`, `grep -r` with no operand read the working directory: that is
        // a path read like any other (it matters where the directory is outside the workspace).
        if let Some(implicit) = &rule.implicit_operand {
            let applies = rule.implicit_operand_options.is_empty()
                || rule
                    .implicit_operand_options
                    .iter()
                    .any(|o| p.seen.contains(o));
            if path_operands == 0 && applies {
                let w = Word {
                    span: name_span,
                    parts: vec![WordPart::Literal(implicit.clone())],
                };
                self.path(&w, false);
            }
        }
        // `cargo fmt -- FILES`: what follows `--` is another program's, with its own rule.
        if let (Some(start), Some(dd)) = (dd_rest, &rule.after_double_dash) {
            self.args(dd, &args[start..], name_span, cmd_span);
        }
        // Later commands may run in the directory `cd` goes to from any directory the command
        // may be in by then: each one is recorded. A target that is not one exact path (a
        // glob) would leave later relative paths unchecked, so that `cd` is refused.
        if let Some((span, Some(targets))) = cd_target {
            if targets.iter().all(Option::is_some) {
                let targets: Vec<PathBuf> = targets.into_iter().flatten().collect();
                for dir in &targets {
                    if !self.cwds.contains(dir) {
                        self.cwds.push(dir.clone());
                    }
                }
                self.cd_targets = Some(targets);
            } else {
                self.reason(
                    ReasonCode::CdUnresolved,
                    Verdict::Deny,
                    Some(&rule.rule),
                    "`cd` to a directory that is not one exact path: the paths of the commands after it could not be checked".to_string(),
                    span,
                );
            }
        }
    }

    /// Before a subcommand, an option the policy does not know might take the next word as
    /// its value, and then the real subcommand is another word: refuse it.
    fn unknown_before_subcommand(&mut self, rule: &ProgramRule, written: &str, span: Span) {
        let m = format!(
            "`{written}` is not an option the policy knows for `{}`; before the subcommand it could change which word is the subcommand",
            rule.name
        );
        self.reason(
            ReasonCode::OptionNotAllowed,
            Verdict::Deny,
            Some(&rule.rule),
            m,
            span,
        );
    }

    /// `python3 -m pytest ARGS`: the rest of the arguments belong to the program named by the
    /// option's value, and are checked by that program's rule.
    fn delegate(
        &mut self,
        rule: &ProgramRule,
        opt: &str,
        value: Option<Value>,
        rest: &[Word],
        cmd_span: Span,
    ) {
        let (name, span) = match &value {
            Some(Value::Word(w)) => (w.static_value(), w.span),
            Some(Value::Glued(s, sp)) => (Some(s.clone()), *sp),
            None => (None, cmd_span),
        };
        let policy = self.policy;
        let target = name.as_deref().and_then(|n| policy.programs.get(n));
        match (name, target) {
            (Some(_), Some(target)) => {
                self.args(target, rest, span, cmd_span);
            }
            (name, _) => {
                let what = name.map_or_else(
                    || "a value that is not known".to_string(),
                    |n| format!("`{n}`"),
                );
                let m = format!(
                    "`{} {opt}` runs {what}, which the policy does not allow",
                    rule.name
                );
                self.reason(
                    ReasonCode::OptionValueDenied,
                    Verdict::Deny,
                    Some(&rule.rule),
                    m,
                    span,
                );
            }
        }
    }

    fn check_required(&mut self, rule: &ProgramRule, p: &Parsed, span: Span) {
        if !rule.required_options.is_empty() && rule.required_options.is_disjoint(&p.seen) {
            let want = rule
                .required_options
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            self.reason(
                ReasonCode::OptionRequired,
                Verdict::Deny,
                Some(&rule.rule),
                format!("`{}` is allowed only with {want}", rule.name),
                span,
            );
        }
    }

    fn option(
        &mut self,
        rule: &ProgramRule,
        name: &str,
        written: &str,
        value: Option<Value>,
        span: Span,
        p: &mut Parsed,
    ) {
        let ix = &rule.index;
        let facts = ix.facts(name);
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
            self.reason(
                ReasonCode::OptionDenied,
                Verdict::Deny,
                Some(&rule.rule),
                m,
                span,
            );
        } else if facts.any(OptionFacts::ASK) {
            let m = with_extra(format!(
                "option `{written}` of `{}` needs approval",
                rule.name
            ));
            self.reason(
                ReasonCode::OptionAsk,
                Verdict::Ask,
                Some(&rule.rule),
                m,
                span,
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
                let hint = super::kinds::allowed_hint(allowed, written);
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
            }
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
        self.value(rule, kind, value);
    }

    /// Check one value of a given kind; for path kinds, returns what [`Eval::path`] returns.
    fn value(
        &mut self,
        rule: &ProgramRule,
        kind: ArgKind,
        value: Value,
    ) -> Option<Vec<Option<PathBuf>>> {
        if kind.is_inert() {
            // Text and patterns are never checked.
            return None;
        }
        if let (ArgKind::PathRead | ArgKind::PathWrite, Value::Word(w)) = (kind, &value) {
            // The word itself is the path (no need of its text here).
            let resolved = self.path(w, kind == ArgKind::PathWrite);
            if kind == ArgKind::PathWrite {
                self.device_operand(rule, resolved.as_deref(), w.span);
            }
            return resolved;
        }
        let (text, span, word) = match value {
            Value::Word(w) => (w.static_value(), w.span, Some(w)),
            Value::Glued(s, sp) => (Some(s), sp, None),
        };
        match kind {
            ArgKind::Text | ArgKind::Pattern => None,
            ArgKind::PathRead | ArgKind::PathWrite => {
                let write = kind == ArgKind::PathWrite;
                let resolved = match word {
                    Some(w) => self.path(w, write),
                    None => {
                        let w = Word {
                            span,
                            parts: vec![WordPart::Literal(text.unwrap_or_default())],
                        };
                        self.path(&w, write)
                    }
                };
                if write {
                    self.device_operand(rule, resolved.as_deref(), span);
                }
                resolved
            }
            ArgKind::Variable => {
                match text {
                    Some(name) if super::is_identifier(&name) => self.env_name(&name, span),
                    _ => self.reason(
                        ReasonCode::VariableName,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "`{}` assigns a variable whose name is not a plain static name",
                            rule.name
                        ),
                        span,
                    ),
                }
                None
            }
            ArgKind::Assignment => {
                match text {
                    Some(t) => {
                        let name = t
                            .split('=')
                            .next()
                            .unwrap_or_default()
                            .trim_end_matches('+');
                        if super::is_identifier(name) {
                            self.env_name(name, span);
                        } else {
                            self.reason(
                                ReasonCode::VariableName,
                                Verdict::Deny,
                                Some(&rule.rule),
                                format!("`{}` of `{name}` (not a plain variable name) cannot be checked", rule.name),
                                span,
                            );
                        }
                    }
                    // `export foo=$(pwd)`: the name is written out, only the value is known at
                    // run time (and a declaration builtin does not split an assignment word).
                    None if word.is_some_and(|w| assigned_name(w).is_some()) => {
                        if let Some(name) = word.and_then(assigned_name) {
                            self.env_name(&name, span);
                        }
                    }
                    None => self.reason(
                        ReasonCode::VariableName,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "`{}` with an assignment that is not known before it runs",
                            rule.name
                        ),
                        span,
                    ),
                }
                None
            }
            ArgKind::PathList
            | ArgKind::ModulePath
            | ArgKind::Program
            | ArgKind::BackupSuffix
            | ArgKind::Pathspec
            | ArgKind::JqProgram => self.hidden_input(rule, kind, text, span, word),
            ArgKind::SedScript | ArgKind::AwkProgram => {
                let check = if kind == ArgKind::SedScript {
                    super::check_sed
                } else {
                    super::check_awk
                };
                let code = if kind == ArgKind::SedScript {
                    ReasonCode::SedScript
                } else {
                    ReasonCode::AwkProgram
                };
                match text {
                    Some(t) => {
                        if let Err(why) = check(&t) {
                            self.reason(
                                code,
                                Verdict::Deny,
                                Some(&rule.rule),
                                format!("{why}; `{}` may only read", rule.name),
                                span,
                            );
                        }
                    }
                    None => self.reason(
                        code,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!("the `{}` program is not known before it runs", rule.name),
                        span,
                    ),
                }
                None
            }
        }
    }

    /// An argument without a static value, where options are still read: it could expand to
    /// an option the rule refuses, or to several words that the rule never saw.
    fn dynamic_arg(
        &mut self,
        rule: &ProgramRule,
        w: &Word,
        fields: &Fields,
        restricted: bool,
        plus: bool,
        rest: &[Word],
    ) {
        if !restricted || !fields.may_be_option(plus) {
            // Every word it becomes is an operand: the operand checks see it.
            return;
        }
        // File names matched by a glob are whole names without `/`: where every option is
        // allowed, or no option of the program can do harm with such a value, only a match
        // that is `--` or exactly a value-taking option changes anything.
        // Only a match that is `--` or exactly a value-taking option shifts the later words.
        if let Fields::Many { split: false, .. } = fields {
            // A program with refused options is never harmless: a match could be one.
            if rule.index.harmless_globs && !glob_may_shift(rule, w) {
                return;
            }
            if self.glob_judged(rule, w, rest) {
                return;
            }
        }
        let policy = self.policy;
        let s = &policy.shell.dynamic_arguments;
        match fields {
            Fields::Many { split: true, .. } => {
                let msg = format!(
                    "bash splits this word into words that are only known when it runs, and any of them could be an option of `{}`; quote the expansion (\"$x\") or put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::WordSplit, s, msg, w.span);
            }
            Fields::Many { .. } => {
                let msg = format!(
                    "the glob could expand to file names that look like options of `{}` (a file can be named `--pre=sh`); write `./` before it, or put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::DynamicArgument, s, msg, w.span);
            }
            _ => {
                let msg = format!(
                    "an argument of `{}` is not known before it runs and could be an option; put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::DynamicArgument, s, msg, w.span);
            }
        }
    }

    /// Split find's `-exec CMD ... ;` / `-ok` / `-execdir` / `-okdir` payloads out of `args`,
    /// checking each as a command (when `find` is an allowed wrapper) or refusing it.
    fn find_exec(&mut self, rule: &ProgramRule, args: &[Word]) -> Vec<Word> {
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

/// Whether a file name a glob matches could take the next word as an option's value, or be
/// `--`: the only matches that change what the words after it are, when no option of the
/// program can do harm by itself. That is `--`; a value-taking long option or any prefix of it
/// that GNU getopt_long accepts as an abbreviation (`--delim`); a value-taking option of a
/// program whose options are words (`find -name`); and a cluster of short options that ends
/// in a value-taking one (`-sd` is `-s -d VALUE`).
fn glob_may_shift(rule: &ProgramRule, w: &Word) -> bool {
    let Some(pattern) = w.glob_pattern() else {
        return true;
    };
    let Ok(glob) = globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    else {
        return true;
    };
    let m = glob.compile_matcher();
    if m.is_match("--") {
        return true;
    }
    let mut short_letters = Vec::new();
    for o in &rule.options_with_value {
        if o.starts_with("--") {
            let abbreviations = (3..=o.len()).filter(|&n| o.is_char_boundary(n));
            if abbreviations.into_iter().any(|n| m.is_match(&o[..n])) {
                return true;
            }
        } else if rule.single_dash_long || o.chars().count() != 2 {
            if m.is_match(o) {
                return true;
            }
        } else if let Some(c) = o.chars().nth(1) {
            short_letters.push(c);
        }
    }
    let ends_in_value_option = match last_char(&pattern) {
        LastChar::Any => !short_letters.is_empty(),
        LastChar::Is(c) => short_letters.contains(&c),
    };
    // Every match ends with the pattern's literal tail (`.md` of `*.md`). Where the rule names
    // every option the program has, a cluster can only take the next word if each character
    // before its last is an option without a value: `-x.md` is no cluster of grep's (`.` is
    // no option letter, and getopt stops there with an error).
    if ends_in_value_option && rule.options_complete {
        let tail = literal_tail(&pattern);
        let chars: Vec<char> = tail.chars().collect();
        if chars.len() >= 2 {
            let flag = |c: char| {
                let o = format!("-{c}");
                !rule.options_with_value.contains(&o)
                    && (rule.allow_options.as_ref().is_some_and(|a| a.contains(&o))
                        || rule.deny_options.contains(&o)
                        || rule.flags.contains(&o))
            };
            if !chars[..chars.len() - 1].iter().all(|&c| flag(c)) {
                return false;
            }
        }
    }
    ends_in_value_option
}

/// The literal characters at the end of a glob pattern, after its last metacharacter
/// (escapes removed).
fn literal_tail(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = chars.len();
    while i > 0 {
        let c = chars[i - 1];
        let escaped = i >= 2 && chars[i - 2] == '\\';
        if escaped {
            out.push(c);
            i -= 2;
        } else if matches!(c, '*' | '?' | ']' | '[' | '\\') {
            break;
        } else {
            out.push(c);
            i -= 1;
        }
    }
    out.reverse();
    out.into_iter().collect()
}

/// What the last character of a glob's matches can be.
enum LastChar {
    Any,
    Is(char),
}

fn last_char(pattern: &str) -> LastChar {
    let chars: Vec<char> = pattern.chars().collect();
    let Some(&last) = chars.last() else {
        return LastChar::Any;
    };
    let escaped = chars.len() >= 2 && chars[chars.len() - 2] == '\\' && {
        // An odd run of backslashes before it escapes it.
        let run = chars[..chars.len() - 1]
            .iter()
            .rev()
            .take_while(|&&c| c == '\\')
            .count();
        run % 2 == 1
    };
    if escaped || !matches!(last, '*' | '?' | ']') {
        LastChar::Is(last)
    } else {
        LastChar::Any
    }
}

/// An option word of a program with `glued_options` (`gcc -Iinclude`): the option and its
/// glued value. A listed word (`-Wall`, `-std=c99`) is itself; otherwise the longest glued
/// option it starts with takes the rest as its value.
fn glued_option<'s>(rule: &ProgramRule, s: &'s str) -> (&'s str, Option<&'s str>) {
    let split = s.split_once('=');
    let known = |n: &str| rule.index.facts(n).known();
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

/// The variable a declaration-builtin argument assigns when its name and `=` are literal
/// text (`foo=$(pwd)`, `foo+="$x"`).
fn assigned_name(w: &Word) -> Option<String> {
    let prefix = match w.parts.first() {
        Some(WordPart::Literal(s)) => s,
        _ => return None,
    };
    let (name, _) = prefix.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    super::is_identifier(name).then(|| name.to_string())
}

/// A long option as written, resolved to the option it abbreviates (GNU getopt accepts
/// any unambiguous prefix: `--out` is `--output`). Ambiguous or unknown names stay as they are.
fn resolve_long<'x>(rule: &'x ProgramRule, name: &'x str) -> &'x str {
    if !name.starts_with("--") || name.len() < 3 {
        return name;
    }
    rule.index.resolve_long(name)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allowed",
        Verdict::Ask => "subject to approval",
        Verdict::Deny => "denied",
    }
}
