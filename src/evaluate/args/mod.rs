//! Arguments of a program: the walk over its words (options, `--`, subcommands, delegation,
//! required options, conditional argument rules) in this file; one option word read against
//! the rule in `options.rs`; operands and option values by kind in `operands.rs`; the
//! special program `find` (`-exec` payloads) in `find.rs`.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::{ArgKind, OptionFacts, ProgramRule, Verdict};
use crate::shell::{Fields, Param, Span, Word, WordPart};

mod find;
mod operands;
mod options;
use find::*;
use operands::*;
use options::*;

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
    /// One of `value_write_options` was given (`tar -c`).
    value_write: bool,
    /// The values of `path-read` options, for `value_write_options` (kept only when the
    /// rule has some).
    read_values: Vec<Value<'w>>,
    /// `args` rules with conditions that matched a word: the rule's index, the word, where.
    conditional: Vec<(usize, String, Span)>,
    /// The options given that a conditional `args` rule names in `unless_options`.
    unless_seen: BTreeSet<String>,
    /// `target_directory`: the value of `-t`/`--target-directory`, and whether
    /// `-T`/`--no-target-directory` was given.
    target: Option<Value<'w>>,
    no_target: bool,
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
        let ix = rule.index();
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
        } else {
            self.program_allowed(rule, name_span);
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
        // GNU tar reads a first argument without a dash as old-style options, whose values
        // are the next words: neither the options nor the operands would be what they seem.
        if rule.old_style_options {
            if let Some(first) = args.first() {
                if !static_text(first).is_some_and(|s| s.starts_with('-')) {
                    self.reason(
                        ReasonCode::ArgumentDenied,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "`{}` reads a first argument without a `-` as old-style options whose values are the next words; write the options with a dash first (`{} -czf out.tgz src`)",
                            rule.name, rule.name
                        ),
                        first.span,
                    );
                }
            }
        }
        let has_subcommands = !rule.subcommands.is_empty();
        let restricted = ix.restricted;
        let known = self.known();
        let mut p = Parsed {
            operands: Vec::new(),
            many: BTreeSet::new(),
            seen: BTreeSet::new(),
            write_mode: false,
            pattern_given: false,
            value_write: false,
            read_values: Vec::new(),
            conditional: Vec::new(),
            unless_seen: BTreeSet::new(),
            target: None,
            no_target: false,
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
            for (at, ar) in rule.args.iter().enumerate() {
                if ar.pattern.is_match(s) {
                    // Decided once the options and operands are known.
                    if ar.is_conditional() {
                        p.conditional.push((at, s.to_string(), w.span));
                        continue;
                    }
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
            self.conditional_args(rule, &p, true);
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
        self.conditional_args(rule, &p, false);
        // `tar -c -f out.tgz`: the archive read in other modes is written in this one.
        if p.value_write {
            for v in std::mem::take(&mut p.read_values) {
                self.value(rule, ArgKind::PathWrite, v);
            }
        }
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
            let found = self.reasons.len();
            let resolved = self.value(rule, kind, Value::Word(w));
            if self.reasons.len() == found {
                self.operand_allowed(rule, kind, w.span);
            }
            if rule.name == "cd" {
                cd_target = Some((w.span, resolved));
            }
        }
        if rule.target_directory {
            self.written_into_directory(&p);
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

    /// The `args` rules with conditions that matched a word, applied where their conditions
    /// hold: fewer operands than `min_operands` (a word that may become several counts as
    /// enough), or one of `unless_options` given, and the rule does not apply.
    /// With `always` (a program with subcommands, whose operands the subcommand reads), every
    /// one applies.
    fn conditional_args(&mut self, rule: &ProgramRule, p: &Parsed, always: bool) {
        for (at, s, span) in &p.conditional {
            let ar = &rule.args[*at];
            let enough = p.operands.len() >= ar.min_operands || !p.many.is_empty();
            let exempt = ar.unless_options.iter().any(|o| p.unless_seen.contains(o));
            if !always && (!enough || exempt) {
                continue;
            }
            let msg = ar.message.clone().unwrap_or_else(|| {
                format!("`{s}` is {} for `{}`", verdict_word(ar.verdict), rule.name)
            });
            let code = if ar.verdict == Verdict::Deny {
                ReasonCode::ArgumentDenied
            } else {
                ReasonCode::ArgumentAsk
            };
            self.reason(code, ar.verdict, Some(&ar.rule), msg, *span);
        }
    }
}
