//! shellgate's reading against brush-parser's, on the hand-written corpus of
//! `tests/common/corpus.rs`: the simple commands (program and argv) each parser finds,
//! substitutions, process substitutions and here-document bodies included.
//!
//! brush-parser is a second, independent bash parser (a PEG grammar, no tree-sitter). A word
//! that either side cannot give a static value (an expansion, a glob, a brace expansion,
//! which brush leaves as text) matches any word; the rest must be equal. Where brush is
//! wrong, the command is listed in [`KNOWN_BRUSH_ERRORS`] with the reason (checked against
//! real bash by `differential`); every other disagreement fails the test.
//!
//! brush-parser hangs on some inputs (`echo $(cat <<  `), so it runs on a thread with a
//! timeout.

mod common;

use brush_parser::ast;
use brush_parser::word::{ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;
use common::corpus::CORPUS;
use common::{argv_of, match_multisets};
use std::sync::mpsc;
use std::time::Duration;

/// A word without a static value.
const DYN: &str = "<dyn>";

/// Commands of the corpus where brush-parser is wrong (bash agrees with shellgate: the
/// differential test runs every corpus command), with why.
const KNOWN_BRUSH_ERRORS: &[(&str, &str)] = &[
    (
        "( (a) )",
        "brush-parser reads `( (` as an arithmetic command `((a) )` and finds no command; bash runs `a`",
    ),
    // From tests/corpus/bypass.tsv (checked with bash-oracle: bash runs rm in each).
    (
        "[[ 'a[$(rm -rf ~)]' -ne 1 ]]",
        "brush-parser keeps the quoted operand as text; bash evaluates it as arithmetic and the \
         subscript's substitution runs (tests/code_contexts.rs runs the same shape)",
    ),
    (
        "s=abc; echo ${s:$(cat ver.txt)}",
        "brush-parser does not look into a substring offset; bash expands it (code_contexts)",
    ),
    (
        "a=(1); echo ${a['$(rm -rf ~)']}",
        "brush-parser keeps a single-quoted subscript as text; bash expands and evaluates it \
         (code_contexts)",
    ),
    (
        "((rm -rf ~) )",
        "brush-parser reads `((` as an arithmetic command; its `)` and `)` do not touch, so bash \
         reads two subshells and runs rm (bash-oracle)",
    ),
    (
        "for f in a b; { echo $f; }",
        "brush-parser does not parse a `for` body in braces; bash runs it (bash-oracle prints a, b)",
    ),
    (
        "( (rm -rf ~) )",
        "brush-parser reads `( (` as an arithmetic command and finds no command",
    ),
    (
        "! time rm -rf ~",
        "brush-parser reads `time` after `!` as a program; it is the keyword",
    ),
    (
        "time -- rm -rf ~",
        "brush-parser reads `--` after `time` as the program; bash 5.2 skips it",
    ),
    (
        "select x in a; do rm -rf ~; break; done <<< 1",
        "brush-parser does not parse a redirection after `select ... done`",
    ),
    (
        "echo $(case x in x) rm -rf ~;; esac)",
        "brush-parser ends the substitution at the `)` of the case pattern",
    ),
];

fn known_brush_error(src: &str) -> bool {
    KNOWN_BRUSH_ERRORS.iter().any(|(k, _)| *k == src)
}

fn options() -> ParserOptions {
    ParserOptions {
        // bash runs scripts without extglob.
        enable_extended_globbing: false,
        ..ParserOptions::default()
    }
}

/// The simple commands brush-parser finds, as argv with [`DYN`] for non-static words.
fn brush_commands(src: &str) -> Result<Vec<Vec<String>>, String> {
    let mut w = Walker {
        opts: options(),
        out: Vec::new(),
        errors: Vec::new(),
    };
    w.source(src)?;
    if !w.errors.is_empty() {
        return Err(w.errors.join("; "));
    }
    Ok(w.out)
}

/// [`brush_commands`] on a thread: `None` when it did not finish within `timeout`.
fn brush_with_timeout(src: &str, timeout: Duration) -> Option<Result<Vec<Vec<String>>, String>> {
    let (tx, rx) = mpsc::channel();
    let src = src.to_string();
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(move || {
            let _ = tx.send(brush_commands(&src));
        })
        .unwrap();
    // A hung parse keeps its thread until the test binary exits.
    rx.recv_timeout(timeout).ok()
}

struct Walker {
    opts: ParserOptions,
    out: Vec<Vec<String>>,
    errors: Vec<String>,
}

impl Walker {
    fn source(&mut self, src: &str) -> Result<(), String> {
        let mut parser = brush_parser::Parser::new(src.as_bytes(), &self.opts);
        let program = parser
            .parse_program()
            .map_err(|e| format!("brush cannot parse {src:?}: {e}"))?;
        for list in &program.complete_commands {
            self.list(list);
        }
        Ok(())
    }

    fn nested(&mut self, src: &str) {
        if let Err(e) = self.source(src) {
            self.errors.push(e);
        }
    }

    fn list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline) {
        for c in &p.seq {
            self.command(c);
        }
    }

    fn command(&mut self, c: &ast::Command) {
        match c {
            ast::Command::Simple(s) => self.simple(s),
            ast::Command::Compound(cc, redirects) => {
                self.compound(cc);
                self.redirects(redirects.as_ref());
            }
            ast::Command::Function(f) => {
                self.compound(&f.body.0);
                self.redirects(f.body.1.as_ref());
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.ext_test(&t.expr);
                self.redirects(redirects.as_ref());
            }
        }
    }

    fn ext_test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.ext_test(a);
                self.ext_test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.ext_test(a),
            E::UnaryTest(_, w) => {
                self.word(w);
            }
            E::BinaryTest(_, a, b) => {
                self.word(a);
                self.word(b);
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match cc {
            C::Arithmetic(a) => self.expansion_text(&a.expr.value),
            C::ArithmeticForClause(f) => self.list(&f.body.list),
            C::BraceGroup(b) => self.list(&b.list),
            C::Subshell(s) => self.list(&s.list),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.list(&f.body.list);
            }
            C::CaseClause(c) => {
                self.word(&c.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c);
                    }
                    self.list(&e.body);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            C::Coprocess(c) => self.command(&c.body),
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand) {
        let mut argv = Vec::new();
        if let Some(prefix) = &s.prefix {
            // Assignments and redirections: nothing in the prefix is an argument.
            for item in &prefix.0 {
                self.item(item, false);
            }
        }
        if let Some(name) = &s.word_or_name {
            argv.push(self.word(name));
        }
        if let Some(suffix) = &s.suffix {
            for item in &suffix.0 {
                if let Some(w) = self.item(item, true) {
                    argv.push(w);
                }
            }
        }
        if !argv.is_empty() {
            self.out.push(argv);
        }
    }

    /// Walk one prefix or suffix item; its argument word, if it is one. After the program
    /// name an assignment-shaped word (`echo a=b`) is an argument too.
    fn item(&mut self, item: &ast::CommandPrefixOrSuffixItem, suffix: bool) -> Option<String> {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(r) => {
                self.redirect(r);
                None
            }
            I::Word(w) => Some(self.word(w)),
            I::AssignmentWord(_, w) if suffix => Some(self.word(w)),
            I::AssignmentWord(a, _) => {
                self.assignment(a);
                None
            }
            I::ProcessSubstitution(_, sub) => {
                self.list(&sub.list);
                Some(DYN.into())
            }
        }
    }

    fn assignment(&mut self, a: &ast::Assignment) {
        if let ast::AssignmentName::ArrayElementName(_, index) = &a.name {
            self.expansion_text(index);
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                self.word(w);
            }
            ast::AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(k);
                    }
                    self.word(v);
                }
            }
        }
    }

    fn redirects(&mut self, list: Option<&ast::RedirectList>) {
        for r in list.iter().flat_map(|l| l.0.iter()) {
            self.redirect(r);
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) {
        use ast::IoRedirect as R;
        match r {
            R::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(w)
                | ast::IoFileRedirectTarget::Duplicate(w) => {
                    self.word(w);
                }
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.list(&sub.list),
                ast::IoFileRedirectTarget::Fd(_) => {}
            },
            R::HereDocument(_, h) => {
                if h.requires_expansion {
                    match brush_parser::word::parse_heredoc(&h.doc.value, &self.opts) {
                        Ok(pieces) => {
                            self.pieces(&pieces, true);
                        }
                        Err(e) => self.errors.push(format!("here-document: {e}")),
                    }
                }
            }
            R::HereString(_, w) | R::OutputAndError(w, _) => {
                self.word(w);
            }
        }
    }

    /// The static value of a word (or [`DYN`]), walking the scripts nested in it.
    fn word(&mut self, w: &ast::Word) -> String {
        match brush_parser::word::parse(&w.value, &self.opts) {
            Ok(pieces) => self.pieces(&pieces, false).unwrap_or_else(|| DYN.into()),
            Err(e) => {
                self.errors.push(format!("word {:?}: {e}", w.value));
                DYN.into()
            }
        }
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], quoted: bool) -> Option<String> {
        let mut out = String::new();
        let mut dynamic = false;
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.push_str(t),
                WordPiece::AnsiCQuotedText(t) => match ansi_c(t) {
                    Some(s) => out.push_str(&s),
                    None => dynamic = true,
                },
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => match self.pieces(inner, true) {
                    Some(s) => out.push_str(&s),
                    None => dynamic = true,
                },
                WordPiece::EscapeSequence(e) => {
                    let c = &e[1..];
                    // Inside double quotes a backslash only escapes $ ` " \ and newline.
                    if quoted && !matches!(c, "$" | "`" | "\"" | "\\" | "\n") {
                        out.push_str(e);
                    } else if c != "\n" {
                        out.push_str(c);
                    }
                }
                WordPiece::CommandSubstitution(src)
                | WordPiece::BackquotedCommandSubstitution(src) => {
                    self.nested(src);
                    dynamic = true;
                }
                WordPiece::ParameterExpansion(pe) => {
                    self.parameter(pe);
                    dynamic = true;
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.expansion_text(&e.value);
                    dynamic = true;
                }
                WordPiece::TildeExpansion(_) => dynamic = true,
            }
        }
        (!dynamic).then_some(out)
    }

    /// Substitutions inside `${x:-...}`, `${x/pat/rep}`, `${a[...]}` and friends.
    fn parameter(&mut self, pe: &ParameterExpr) {
        use ParameterExpr as P;
        let mut texts: Vec<&str> = Vec::new();
        let parameter = match pe {
            P::Parameter { parameter, .. } | P::ParameterLength { parameter, .. } => parameter,
            P::UseDefaultValues {
                parameter,
                default_value: t,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                default_value: t,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                alternative_value: t,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                error_message: t,
                ..
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                pattern: t,
                ..
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                pattern: t,
                ..
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                pattern: t,
                ..
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                pattern: t,
                ..
            } => {
                texts.extend(t.as_deref());
                parameter
            }
            P::ReplaceSubstring {
                parameter,
                pattern,
                replacement,
                ..
            } => {
                texts.push(pattern);
                texts.extend(replacement.as_deref());
                parameter
            }
            _ => return,
        };
        if let brush_parser::word::Parameter::NamedWithIndex { index, .. } = parameter {
            texts.push(index);
        }
        for text in texts {
            self.expansion_text(text);
        }
    }

    /// Text that bash expands like a double-quoted word (a default value, an array index,
    /// an arithmetic expression): walk the substitutions in it.
    fn expansion_text(&mut self, text: &str) {
        match brush_parser::word::parse(text, &self.opts) {
            Ok(pieces) => {
                self.pieces(&pieces, true);
            }
            Err(e) => self.errors.push(format!("expanded text {text:?}: {e}")),
        }
    }
}

/// Decode the text of `$'...'` (brush-parser keeps it raw). `None` for escapes not handled.
fn ansi_c(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// shellgate's simple commands with a program, keywords dropped.
fn shellgate_commands(src: &str) -> Result<Vec<Vec<String>>, String> {
    let script =
        shellgate::shell::parse(src).map_err(|e| format!("{}: {}", e.kind.code(), e.message))?;
    Ok(argv_of(&script)
        .into_iter()
        .map(|c| c.into_iter().filter(|w| !is_keyword(w)).collect::<Vec<_>>())
        .filter(|c| !c.is_empty())
        .collect())
}

fn is_keyword(w: &str) -> bool {
    matches!(w, "<Time>" | "<Bang>" | "<Coproc>")
}

fn same_argv(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || x == DYN || y == DYN)
}

/// The disagreement between the two readings of `src`, if any.
fn disagreement(src: &str) -> Option<String> {
    let ours = match shellgate_commands(src) {
        Ok(c) => c,
        Err(e) => return Some(format!("{src:?}: shellgate refuses it: {e}")),
    };
    let theirs = match brush_with_timeout(src, Duration::from_secs(5)) {
        None => return Some(format!("{src:?}: brush-parser hangs")),
        Some(Err(e)) => return Some(format!("{src:?}: {e}")),
        Some(Ok(c)) => c,
    };
    let (only_ours, only_theirs) = match_multisets(&ours, &theirs, |a, b| same_argv(a, b));
    if only_ours.is_empty() && only_theirs.is_empty() {
        return None;
    }
    Some(format!(
        "{src:?}\n  shellgate only: {:?}\n  brush only:     {:?}",
        only_ours.iter().map(|&i| &ours[i]).collect::<Vec<_>>(),
        only_theirs.iter().map(|&i| &theirs[i]).collect::<Vec<_>>()
    ))
}

#[test]
fn corpus_agrees_with_brush_parser() {
    let mut failures = Vec::new();
    let mut agreed = 0;
    for &(src, _) in CORPUS {
        let known = KNOWN_BRUSH_ERRORS.iter().find(|(k, _)| *k == src);
        match (disagreement(src), known) {
            (None, None) => agreed += 1,
            (None, Some(_)) => {
                eprintln!("{src:?}: brush-parser now agrees; drop it from the known list")
            }
            (Some(_), Some(_)) => {}
            (Some(d), None) => failures.push(d),
        }
    }
    eprintln!(
        "brush-parser: {agreed}/{} corpus commands agree",
        CORPUS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// brush-parser never reaches a verdict on some inputs: the harness must not hang with it.
#[test]
fn brush_hangs_are_caught_by_the_timeout() {
    let r = brush_with_timeout("echo $(cat <<  ", Duration::from_secs(2));
    // Either a timeout or an error; never a reading with commands in it.
    if let Some(Ok(cmds)) = r {
        panic!("brush-parser read {cmds:?}");
    }
}

/// The same comparison on the project's corpora, `tests/corpus/*.tsv` (bypass payloads and
/// everyday commands; those shellgate refuses to parse are skipped). A new disagreement is
/// to be triaged against bash in a sandbox (`../shared/tools/bash-oracle`: never run bypass
/// payloads with a bare bash): a brush-parser error goes into [`KNOWN_BRUSH_ERRORS`], a
/// shellgate one is a parser bug.
#[test]
fn project_corpora_agree_with_brush_parser() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let (mut total, mut refused, mut known) = (0, 0, 0);
    let mut failures = Vec::new();
    for file in ["bypass.tsv", "ordinary.tsv", "ordinary-refused.tsv"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let Some(field) = line.split('\t').nth(1) else {
                continue;
            };
            let Ok(src) = serde_json::from_str::<String>(&format!("\"{field}\"")) else {
                continue;
            };
            total += 1;
            if shellgate::shell::parse(&src).is_err() {
                refused += 1;
                continue;
            }
            match (disagreement(&src), known_brush_error(&src)) {
                (Some(_), true) => known += 1,
                (Some(d), false) => failures.push(format!("{file}: {d}")),
                _ => {}
            }
        }
    }
    eprintln!(
        "project corpora: {total} commands, {refused} refused by shellgate, {known} known brush errors, {} new disagreements",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
