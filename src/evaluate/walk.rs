//! The walk over the IR: every command, word, expansion and assignment is visited, and each
//! simple command is handed to [`dispatch`](super::dispatch) once its parts are checked.

use std::path::PathBuf;

use super::cwd::union;
use super::{bindings, nested, test_expr, Eval};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{
    self, Arithmetic, Assignment, Command, Param, SimpleCommand, Span, Word, WordPart,
};

impl Eval<'_> {
    pub(super) fn command(&mut self, cmd: &Command) {
        match cmd {
            Command::Simple(c) => self.simple(c),
            Command::Compound(c) => {
                for w in &c.words {
                    self.word(w);
                }
                match c.kind {
                    // The list of `for`/`select` is globbed like arguments are.
                    shell::CompoundKind::For | shell::CompoundKind::Select => {
                        c.words.iter().for_each(|w| self.glob_reads(w));
                    }
                    // `[[ -f PATH ]]` probes files: operands that name a place outside the
                    // working directory are checked as reads (the IR keeps no operators).
                    shell::CompoundKind::Test => self.probe_paths(&c.words),
                    _ => {}
                }
                // Names an arithmetic `for` proves to hold integers, in its own arithmetic
                // and its body.
                let ints = self.compound_contexts(c);
                for a in &c.arithmetic {
                    self.arithmetic(a);
                }
                for a in &c.assignments {
                    self.assignment(a);
                }
                for r in &c.redirects {
                    self.redirect(r);
                }
                self.keywords(c.background, &c.keywords, c.span);
                let binding = bindings::of_for_loop(c);
                let bound = binding.is_some();
                self.bindings.extend(binding);
                self.compound_body(c);
                if bound {
                    self.bindings.pop();
                }
                self.pop_int_names(ints);
            }
            Command::Function(f) => {
                let s = self.policy.shell.functions.clone();
                self.setting(
                    ReasonCode::FunctionDefinition,
                    &s,
                    format!(
                        "defines the function `{}`, which changes what later commands mean",
                        f.name
                    ),
                    f.name_span,
                );
                for r in &f.redirects {
                    self.redirect(r);
                }
                self.script(&f.body);
            }
        }
    }

    /// The arguments of `test` / `[` with every run-time word that is an operand by position
    /// (see [`test_expr`]) replaced by a plain word, so the option checks see it as the
    /// string it is; the rest unchanged.
    pub(super) fn test_operands(&self, name: &str, args: &[Word]) -> Vec<Word> {
        let expr = match (name, args.split_last()) {
            ("[", Some((last, rest))) if last.static_value().as_deref() == Some("]") => rest,
            _ => args,
        };
        let mut out = args.to_vec();
        if let Some(positions) = test_expr::operand_positions(expr, &self.known()) {
            for i in positions {
                if out[i].static_value().is_none() {
                    out[i] = Word {
                        span: out[i].span,
                        parts: vec![WordPart::Literal("operand".into())],
                    };
                }
            }
        }
        out
    }

    /// `[[ -f PATH ]]`, `[ -f PATH ]` and `test -f PATH` probe files: operands that name a
    /// place outside the working directory are checked as reads (the IR keeps no operators).
    pub(super) fn probe_paths(&mut self, words: &[Word]) {
        for w in words {
            let looks_like_path = matches!(w.parts.first(), Some(WordPart::Tilde(_)))
                || w.static_value().is_some_and(|v| {
                    v.starts_with('/') || v.starts_with("..") || v.contains("/..")
                });
            if looks_like_path {
                self.path(w, false);
            }
        }
    }

    /// `&` and `coproc` leave a job running in the session; `coproc` also assigns `COPROC`
    /// (a `coproc NAME` is recorded by the lowering as an assignment of NAME).
    pub(super) fn keywords(&mut self, background: bool, keywords: &[shell::Keyword], span: Span) {
        let coproc = keywords.contains(&shell::Keyword::Coproc);
        if background || coproc {
            let s = self.policy.shell.background.clone();
            self.setting(
                ReasonCode::Background,
                &s,
                "runs a command in the background".into(),
                span,
            );
        }
        if coproc {
            self.env_name("COPROC", span);
        }
    }

    pub(super) fn count_command(&mut self, span: Span) -> bool {
        self.commands += 1;
        if self.commands == self.max_commands + 1 {
            self.reason(
                ReasonCode::CommandLimit,
                Verdict::Deny,
                None,
                format!("more than {} commands in one input", self.max_commands),
                span,
            );
        }
        self.commands <= self.max_commands
    }

    pub(super) fn simple(&mut self, c: &SimpleCommand) {
        if !self.count_command(c.span) {
            return;
        }
        if let Some(variants) = bindings::variants(c, &self.bindings) {
            // Checked once per value of the loop variables it uses; a `cd` among them goes
            // to every variant's target.
            let mut targets: Option<Vec<PathBuf>> = Some(Vec::new());
            for v in &variants {
                self.cd_targets = None;
                self.simple_checks(v);
                targets = match (targets, self.cd_targets.take()) {
                    (Some(all), Some(t)) => Some(union(&all, &t)),
                    _ => None,
                };
            }
            self.cd_targets = targets.filter(|t| !t.is_empty());
            return;
        }
        self.simple_checks(c);
    }

    /// The checks of one simple command (after loop variables were put in).
    pub(super) fn simple_checks(&mut self, c: &SimpleCommand) {
        let mark = self.assigned_mark();
        for a in &c.assignments {
            self.assignment(a);
        }
        if !c.words.is_empty() {
            // `X=1 cmd $X`: the program's environment, not the shell's; `$X` is not it.
            self.forget_assigned(mark);
        }
        for r in &c.redirects {
            self.redirect(r);
        }
        for w in &c.words {
            self.word(w);
        }
        self.builtin_contexts(&c.words);
        // Expanding a glob reads a directory, whatever the argument means to the program.
        c.words.iter().skip(1).for_each(|w| self.glob_reads(w));
        self.keywords(c.background, &c.keywords, c.span);
        if !c.words.is_empty() {
            self.stdin = super::patches::stdin_of(c);
            self.program(&c.words, c.span);
            self.stdin = super::patches::Stdin::Unknown;
        }
    }

    /// Check every expansion inside a word.
    pub(super) fn word(&mut self, w: &Word) {
        for part in &w.parts {
            self.part(part);
        }
    }

    pub(super) fn part(&mut self, part: &WordPart) {
        match part {
            WordPart::DoubleQuoted(parts) => parts.iter().for_each(|p| self.part(p)),
            WordPart::CommandSubst(s) | WordPart::ProcessSubst { script: s, .. } => {
                if let Some(setting) = self.policy.shell.substitutions.clone() {
                    self.setting(
                        ReasonCode::Substitution,
                        &setting,
                        "a command substitution".into(),
                        s.span,
                    );
                }
                // A substitution runs in a subshell: its `cd`s do not move this shell, and
                // what it assigns is not set after it.
                let before = self.cwds.clone();
                let mark = self.assigned_mark();
                self.script(s);
                self.cwds = before;
                self.forget_assigned(mark);
            }
            WordPart::Param(p) => self.param(p),
            WordPart::Arithmetic(a) => self.arithmetic(a),
            _ => {}
        }
    }

    pub(super) fn param(&mut self, p: &Param) {
        nested(|| {
            self.param_reads(p);
            let risky_op = matches!(p.operator.as_deref(), Some("@P") | Some("@E") | Some("@A"));
            if p.indirect || risky_op {
                let s = self.policy.shell.indirect_expansion.clone();
                self.setting(
                    ReasonCode::IndirectExpansion,
                    &s,
                    format!("`{}` expands a value chosen at run time (indirection or prompt expansion can run code)", p.name),
                    p.span,
                );
            }
            if p.assigns() {
                self.env_name(&p.name, p.span);
            }
            for w in p.words.iter().chain(p.subscript.iter()) {
                self.word(w);
            }
            let sub_span = p.subscript.as_ref().map(|w| w.span);
            if let Some(sub) = &p.subscript {
                self.subscript_inert(sub);
            }
            for a in &p.arithmetic {
                if Some(a.span) == sub_span {
                    // The subscript's names: checked with the subscript just above.
                    for name in &a.assigns {
                        self.env_name(name, a.span);
                    }
                    continue;
                }
                self.arithmetic(a);
            }
        })
    }

    pub(super) fn arithmetic(&mut self, a: &Arithmetic) {
        nested(|| {
            self.arith_inert(a);
            for name in &a.assigns {
                self.env_name(name, a.span);
            }
            for w in &a.words {
                self.word(w);
            }
        })
    }

    pub(super) fn assignment(&mut self, a: &Assignment) {
        self.env_name(&a.name, a.name_span);
        if let Some(sub) = &a.subscript {
            self.word(sub);
            self.subscript_inert(sub);
        }
        for w in a.value.iter().chain(&a.array) {
            self.word(w);
        }
        self.assignment_contexts(a);
        a.array.iter().for_each(|w| self.glob_reads(w));
        // `x=( [sub]=value )`: an indexed array's subscript is arithmetic, and bash runs a
        // `$(..)` in it even when it is quoted.
        for w in &a.array {
            let text = loose_text(w);
            if let Some(rest) = text.strip_prefix('[') {
                let sub = rest
                    .split_once("]=")
                    .or_else(|| rest.split_once("]+="))
                    .map(|(s, _)| s);
                match sub {
                    Some(sub) if !sub.contains('\0') => self.array_subscript_text(sub, w.span),
                    _ => self.array_subscript_text("\0", w.span),
                }
            }
        }
    }

    /// An unquoted glob lists the directory it is expanded in: a read of that directory.
    pub(super) fn glob_reads(&mut self, w: &Word) {
        if w.parts.iter().any(|p| matches!(p, WordPart::Glob(_))) {
            self.path(w, false);
        }
    }
}

/// A word's text with quotes removed and globs kept as written; every expansion becomes NUL.
pub(super) fn loose_text(w: &Word) -> String {
    fn push(p: &WordPart, out: &mut String) {
        match p {
            WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
                out.push_str(s)
            }
            WordPart::Glob(s) | WordPart::Brace(s) => out.push_str(s),
            WordPart::DoubleQuoted(ps) => ps.iter().for_each(|q| push(q, out)),
            WordPart::Tilde(u) => {
                out.push('~');
                out.push_str(u);
            }
            _ => out.push('\0'),
        }
    }
    let mut out = String::new();
    w.parts.iter().for_each(|p| push(p, &mut out));
    out
}

pub(super) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
