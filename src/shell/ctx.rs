//! State shared by one parse and every nested parse inside it, and the IR builders both
//! readers of the text use.

use super::scan::{err, Scanner};
use super::*;

/// Which reader turns text into the IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// shellgate's own recursive-descent parser ([`super::parser`]).
    Own,
    /// The tree-sitter-bash lowering ([`super::lower`]): a judge for tests and for the
    /// `paranoid` setting, never the production path.
    #[cfg(feature = "paranoid")]
    TreeSitter,
}

/// State shared by one top-level parse and every nested parse inside it.
pub(crate) struct Ctx<'s> {
    /// The top-level text; every offset is into it.
    pub src: &'s str,
    pub limits: Limits,
    pub(crate) depth: usize,
    /// Syntax nodes (commands and words) made so far, against [`Limits::max_nodes`].
    pub(crate) nodes: usize,
    /// Ranges re-parsed as nested scripts, in order.
    pub(crate) nested_log: Vec<(usize, usize)>,
    pub(crate) reader: Reader,
    /// Work done so far: bytes tokenized, scanned for an end and lexed (see [`Work`]).
    pub(crate) steps: u64,
    /// The deepest nesting entered.
    pub(crate) deepest: usize,
    /// Whether `shopt -s extglob` ran on an earlier line of this input.
    pub(crate) extglob: bool,
    #[cfg(feature = "paranoid")]
    pub(crate) ts: Option<tree_sitter::Parser>,
}

pub(crate) fn unsupported(span: Span, msg: impl Into<String>) -> ParseError {
    ParseError {
        kind: ParseErrorKind::Unsupported,
        span,
        message: msg.into(),
    }
}

impl<'s> Ctx<'s> {
    pub(crate) fn new(src: &'s str, limits: Limits) -> Self {
        Ctx {
            src,
            limits,
            depth: 0,
            nodes: 0,
            nested_log: Vec::new(),
            reader: Reader::Own,
            extglob: false,
            steps: 0,
            deepest: 0,
            #[cfg(feature = "paranoid")]
            ts: None,
        }
    }

    /// Enters one level of nesting, refusing past the depth limit.
    pub(crate) fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        if super::stack_exhausted() {
            return Err(err(
                ParseErrorKind::TooDeep,
                at,
                (at + 1).min(self.src.len()),
                "the command nests too deeply for the stack available",
            ));
        }
        if self.depth > self.limits.max_depth {
            return Err(err(
                ParseErrorKind::TooDeep,
                at,
                (at + 1).min(self.src.len()),
                format!(
                    "the command nests deeper than {} levels",
                    self.limits.max_depth
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub(crate) fn text(&self, start: usize, end: usize) -> Result<&'s str, ParseError> {
        self.src.get(start..end).ok_or_else(|| {
            err(
                ParseErrorKind::Syntax,
                start,
                end,
                "a span that is not on character boundaries",
            )
        })
    }

    pub(crate) fn scanner(&self, end: usize) -> Scanner<'s> {
        Scanner::new(self.src, end, self.limits.max_depth)
    }

    /// Parses `src[start..end]` as a script (a nested one when not the whole input).
    pub(crate) fn parse_range(&mut self, start: usize, end: usize) -> Result<Script, ParseError> {
        self.enter(start)?;
        self.nested_log.push((start, end));
        #[cfg(feature = "paranoid")]
        let log_mark = self.nested_log.len();
        let r = super::with_stack(|| match self.reader {
            Reader::Own => self.parse_own(start, end),
            #[cfg(feature = "paranoid")]
            Reader::TreeSitter => self.parse_range_inner(start, end, log_mark),
        });
        self.leave();
        r
    }

    /// Counts one more syntax node, refusing past [`Limits::max_nodes`].
    pub(crate) fn count_node(&mut self, at: usize) -> Result<(), ParseError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(err(
                ParseErrorKind::TooManyNodes,
                at,
                (at + 1).min(self.src.len()),
                format!(
                    "the command has more than {} syntax nodes",
                    self.limits.max_nodes
                ),
            ));
        }
        Ok(())
    }
}

pub(crate) fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

pub(crate) fn simple(
    span: Span,
    assignments: Vec<Assignment>,
    words: Vec<Word>,
    redirects: Vec<Redirect>,
) -> SimpleCommand {
    SimpleCommand {
        span,
        assignments,
        words,
        redirects,
        keywords: vec![],
        background: false,
        piped_input: false,
        join: Join::Seq,
    }
}

/// Grows every simple command's span to cover its parts, in this script and in the bodies
/// of its compound commands and functions (nested substitutions are scripts of their own and
/// get the same treatment when they are parsed). Recursion is bounded by the depth limit.
#[cfg(feature = "paranoid")]
pub(crate) fn cover_commands(commands: &mut [Command]) {
    for c in commands {
        match c {
            Command::Simple(s) => cover_parts(s),
            Command::Compound(cc) => cover_commands(&mut cc.body.commands),
            Command::Function(f) => cover_commands(&mut f.body.commands),
        }
    }
}

/// Grows the command's span to cover its parts, where tree-sitter's node ends early (a word
/// ending in an escaped blank, `a\<TAB>`): every span nests in its parent's.
#[cfg(feature = "paranoid")]
pub(crate) fn cover_parts(cmd: &mut SimpleCommand) {
    cmd.span = cmd
        .words
        .iter()
        .map(|w| w.span)
        .chain(cmd.assignments.iter().map(|a| a.span))
        .chain(cmd.redirects.iter().map(|r| r.span))
        .fold(cmd.span, Span::join);
}

pub(crate) fn compound(kind: CompoundKind, span: Span, body: Script) -> Compound {
    Compound {
        kind,
        span,
        body,
        words: vec![],
        arithmetic: vec![],
        assignments: vec![],
        names: vec![],
        redirects: vec![],
        background: false,
        keywords: vec![],
        join: Join::Seq,
    }
}

/// `>&WORD` is a descriptor duplication when WORD is a number or `-` (`2>&1`, `>&-`), and
/// `&>WORD` (both streams to the file WORD) otherwise.
pub(crate) fn dup_or_write_all(op: RedirectOp, target: &Word) -> RedirectOp {
    if op != RedirectOp::DupOut {
        return op;
    }
    let is_fd = target.static_value().is_some_and(|v| {
        let v = v.strip_suffix('-').unwrap_or(&v);
        v.is_empty() || v.bytes().all(|b| b.is_ascii_digit())
    });
    if is_fd {
        op
    } else {
        RedirectOp::WriteAll
    }
}

/// A variable a construct assigns by name alone (a loop variable, `coproc NAME`).
pub(crate) fn bare_assignment(name: String, span: Span) -> Assignment {
    Assignment {
        name,
        name_span: span,
        span,
        subscript: None,
        value: None,
        array: Vec::new(),
        append: false,
    }
}

/// `(( expr ))` over `span`: a compound with nothing in its body but the arithmetic.
pub(crate) fn arithmetic_compound(span: Span, ar: Arithmetic) -> Compound {
    let mut c = compound(
        CompoundKind::Arithmetic,
        span,
        Script {
            commands: vec![],
            span,
        },
    );
    c.arithmetic.push(ar);
    c
}

pub(crate) fn set_background(c: &mut Command) {
    match c {
        Command::Simple(s) => s.background = true,
        Command::Compound(c) => c.background = true,
        Command::Function(_) => {}
    }
}

pub(crate) fn prepend_keywords(
    c: &mut Command,
    kws: &[Keyword],
    span: Span,
) -> Result<(), ParseError> {
    let list = match c {
        Command::Simple(s) => &mut s.keywords,
        Command::Compound(c) => &mut c.keywords,
        Command::Function(_) => {
            return Err(unsupported(span, "a keyword before a function definition"));
        }
    };
    let mut new: Vec<Keyword> = kws.to_vec();
    new.append(list);
    *list = new;
    Ok(())
}
