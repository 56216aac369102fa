//! shellgate's own bash parser: command text to the IR in one recursive-descent pass.
//!
//! The tokenizer reads the text the way bash's lexer does: blanks and line continuations
//! between tokens, comments at the start of a token, operators (`;` `&` `&&` `||` `|` `|&`
//! `;;` `;&` `;;&` `(` `)` and every redirection operator, with the fd digits that touch it),
//! and words, whose ends are found by following quotes, escapes and every expansion
//! (`$(...)` with bash's own rules for `case` and comments inside, backticks, `${...}`,
//! `$((...))`, `$'...'`, `$"..."`, `<(...)`, extended globs). Reserved words are words in
//! command position. Here-document bodies are read at the newline that ends their line.
//!
//! The grammar is bash's: lists, and-or lists, pipelines with `time`, `!` and `coproc`,
//! simple commands (assignments, words, redirections in any order), compound commands
//! (`( )`, `{ }`, `(( ))`, `[[ ]]`, `if`, `for`, `for (( ))`, `select`, `while`, `until`,
//! `case`) and function definitions. Each word is lowered by our own word lexer
//! ([`super::words`]), which re-enters this parser for the scripts nested in it, so spans
//! are offsets into the top-level text at every depth.
//!
//! Nesting is bounded by [`Limits::max_depth`] (each compound command, test group and
//! nested script is one level) and runs on a stack with room for it; the work is bounded
//! by [`Limits::max_nodes`]. Anything else the IR cannot represent is refused with the
//! construct named.

use std::collections::BTreeMap;

use super::ctx::{
    arithmetic_compound, bare_assignment, compound, dup_or_write_all, is_name, prepend_keywords,
    set_background, simple, unsupported, Ctx,
};
use super::scan::{err, HereDocSite};
use super::words::{WordOpts, ARG, ASSIGN, DECL, PATTERN, REGEX, SUBSCRIPT, TEST_OPERAND};
use super::*;

/// A control operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Semi,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    PipeAmp,
    DSemi,
    SemiAmp,
    DSemiAmp,
    LParen,
    RParen,
}

/// One token; offsets are into the top-level text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Word(usize, usize),
    Op(Op, usize, usize),
    /// A redirection operator at `pos` (`len` bytes), with the fd digits before it.
    Redir {
        op: RedirectOp,
        pos: usize,
        len: usize,
        fd: Option<(u32, usize)>,
        /// For `<<` and `<<-`: whether leading tabs are stripped.
        heredoc: Option<bool>,
    },
    Newline(usize),
    Eof(usize),
}

impl Tok {
    fn start(self) -> usize {
        match self {
            Tok::Word(a, _) | Tok::Op(_, a, _) => a,
            Tok::Redir { pos, fd, .. } => fd.map_or(pos, |(_, s)| s),
            Tok::Newline(a) | Tok::Eof(a) => a,
        }
    }
    fn end(self) -> usize {
        match self {
            Tok::Word(_, b) | Tok::Op(_, _, b) => b,
            Tok::Redir { pos, len, .. } => pos + len,
            Tok::Newline(a) => a + 1,
            Tok::Eof(a) => a,
        }
    }
}

/// Programs whose `NAME=value` arguments bash parses as assignments (tree-sitter-bash's
/// `declaration_command`).
const DECLARATION_BUILTINS: &[&[u8]] = &[b"declare", b"typeset", b"export", b"readonly", b"local"];

/// Reserved words that end a list (the caller expects one of them).
const LIST_ENDS: &[&[u8]] = &[
    b"then", b"elif", b"else", b"fi", b"do", b"done", b"esac", b"}",
];

/// Words that start a compound command (for `coproc NAME`).
const COMPOUND_STARTERS: &[&[u8]] = &[
    b"{", b"[[", b"while", b"until", b"if", b"for", b"case", b"select",
];

/// `shopt -s extglob` or `shopt -u extglob` (options and names in any order).
fn is_shopt_extglob(program: &Option<String>, words: &[Word]) -> bool {
    program.as_deref() == Some("shopt")
        && words.len() >= 3
        && matches!(
            words.get(1).and_then(Word::static_value).as_deref(),
            Some("-s" | "-u")
        )
        && words[2..]
            .iter()
            .any(|w| w.static_value().as_deref() == Some("extglob"))
}

/// The unary operators of `[[ ]]`.
fn is_unary_test(w: &[u8]) -> bool {
    matches!(w, [b'-', c] if c.is_ascii_alphabetic())
}

/// The binary operators of `[[ ]]` that are words.
fn is_binary_test(w: &[u8]) -> bool {
    matches!(
        w,
        b"=="
            | b"="
            | b"!="
            | b"=~"
            | b"-eq"
            | b"-ne"
            | b"-lt"
            | b"-le"
            | b"-gt"
            | b"-ge"
            | b"-nt"
            | b"-ot"
            | b"-ef"
    )
}

/// The `NAME=`, `NAME+=` or `NAME[...]=` that starts an assignment word.
struct Prefix {
    /// Where the name ends.
    name_end: usize,
    /// The subscript: after its `[`, and its `]`.
    subscript: Option<(usize, usize)>,
    /// Where the value starts (after the `=`).
    value_start: usize,
    /// `+=`
    append: bool,
}

/// A here-document whose body is read at the next newline.
struct Pending {
    /// The redirection's span start: where its body goes.
    key: usize,
    op_pos: usize,
    site: HereDocSite,
}

/// The parse of one range of the text (the whole input or one nested script).
struct Unit<'c, 's> {
    cx: &'c mut Ctx<'s>,
    s: &'s [u8],
    end: usize,
    pos: usize,
    pending: Vec<Pending>,
    bodies: BTreeMap<usize, HereDoc>,
    /// The last token read: (position before its blanks, its start, the token). Tokens are
    /// peeked several times at one position; each is scanned once.
    cached: Option<(usize, usize, Tok)>,
    /// Inside `[[ ]]`, where bash reads extended globs whatever `extglob` is.
    in_cond: bool,
    /// `shopt -s extglob` (or `-u`) seen on the current line: applies from the next line.
    extglob_next: Option<bool>,
}

fn syntax(at: usize, end: usize, msg: impl Into<String>) -> ParseError {
    err(ParseErrorKind::Syntax, at, end.max(at), msg)
}

impl Ctx<'_> {
    /// Parses `src[start..end]` with shellgate's own parser.
    pub(crate) fn parse_own(&mut self, start: usize, end: usize) -> Result<Script, ParseError> {
        let s = self.src.as_bytes();
        let mut u = Unit {
            cx: self,
            s,
            end: end.min(s.len()),
            pos: start,
            pending: Vec::new(),
            bodies: BTreeMap::new(),
            cached: None,
            in_cond: false,
            extglob_next: None,
        };
        let mut commands = u.list()?;
        match u.tok()? {
            Tok::Eof(_) => {}
            t => return Err(u.unexpected(t)),
        }
        if let Some(p) = u.pending.first() {
            return Err(err(
                ParseErrorKind::Missing,
                p.op_pos,
                p.op_pos + 2,
                "a here-document has no body (its command line never ends)",
            ));
        }
        let mut bodies = std::mem::take(&mut u.bodies);
        place_heredocs(&mut commands, &mut bodies)?;
        Ok(Script {
            commands,
            span: Span::new(start, end),
        })
    }
}

/// Puts each here-document body read on the redirection it belongs to (bodies are read
/// after the command that names them has been built).
fn place_heredocs(
    commands: &mut [Command],
    bodies: &mut BTreeMap<usize, HereDoc>,
) -> Result<(), ParseError> {
    for c in commands {
        let (redirects, body) = match c {
            Command::Simple(s) => (&mut s.redirects, None),
            Command::Compound(cc) => (&mut cc.redirects, Some(&mut cc.body)),
            Command::Function(f) => (&mut f.redirects, Some(&mut f.body)),
        };
        for r in redirects.iter_mut() {
            if r.op == RedirectOp::HereDoc && r.heredoc.is_none() {
                r.heredoc = Some(bodies.remove(&r.span.start).ok_or_else(|| {
                    err(
                        ParseErrorKind::Missing,
                        r.span.start,
                        r.span.end,
                        "a here-document body was not found",
                    )
                })?);
            }
        }
        if let Some(body) = body {
            super::with_stack(|| place_heredocs(&mut body.commands, bodies))?;
        }
    }
    Ok(())
}

impl<'s> Unit<'_, 's> {
    fn at(&self, i: usize) -> Option<u8> {
        if i < self.end {
            self.s.get(i).copied()
        } else {
            None
        }
    }

    fn bytes(&self, a: usize, b: usize) -> &'s [u8] {
        self.s.get(a..b.min(self.end)).unwrap_or_default()
    }

    /// Whether bash reads extended globs here: after `shopt -s extglob` on an earlier line
    /// of this input (bash parses a whole line before it runs any of it), or in `[[ ]]`.
    fn extglob(&self) -> bool {
        self.cx.extglob || self.in_cond
    }

    fn word_is(&self, t: Tok, w: &[u8]) -> bool {
        matches!(t, Tok::Word(a, b) if self.bytes(a, b) == w)
    }

    fn unexpected(&self, t: Tok) -> ParseError {
        let what = match t {
            Tok::Eof(_) => "the end of the command".to_string(),
            Tok::Newline(_) => "a newline".to_string(),
            _ => format!(
                "`{}`",
                String::from_utf8_lossy(self.bytes(t.start(), t.end()))
            ),
        };
        let kind = if matches!(t, Tok::Eof(_)) {
            ParseErrorKind::Missing
        } else {
            ParseErrorKind::Syntax
        };
        err(
            kind,
            t.start(),
            t.end().max(t.start() + 1).min(self.s.len().max(t.start())),
            format!("syntax error near {what}"),
        )
    }

    // ----- tokens -------------------------------------------------------------------------

    /// Skips blanks, line continuations and a comment (up to its newline).
    fn skip_blanks(&mut self) -> Result<(), ParseError> {
        loop {
            match self.at(self.pos) {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\\') if self.at(self.pos + 1) == Some(b'\n') => {
                    guards::check_line_continuation(self.s, self.pos, 0)?;
                    self.pos += 2;
                }
                Some(b'#') => {
                    while self.at(self.pos).is_some_and(|b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// The next token, after blanks (not consumed).
    fn tok(&mut self) -> Result<Tok, ParseError> {
        if let Some((before, at, t)) = self.cached {
            if before == self.pos {
                self.pos = at;
                return Ok(t);
            }
        }
        let before = self.pos;
        let t = self.scan_tok()?;
        self.cached = Some((before, self.pos, t));
        Ok(t)
    }

    fn scan_tok(&mut self) -> Result<Tok, ParseError> {
        let before = self.pos;
        let t = self.scan_tok_inner()?;
        self.cx.steps += (t.end().saturating_sub(before) + 1) as u64;
        Ok(t)
    }

    fn scan_tok_inner(&mut self) -> Result<Tok, ParseError> {
        self.skip_blanks()?;
        let i = self.pos;
        let Some(b) = self.at(i) else {
            return Ok(Tok::Eof(self.end));
        };
        let n1 = self.at(i + 1);
        let n2 = self.at(i + 2);
        let op = |op, len| Ok(Tok::Op(op, i, i + len));
        match b {
            b'\n' => Ok(Tok::Newline(i)),
            b';' => match (n1, n2) {
                (Some(b';'), Some(b'&')) => op(Op::DSemiAmp, 3),
                (Some(b';'), _) => op(Op::DSemi, 2),
                (Some(b'&'), _) => op(Op::SemiAmp, 2),
                _ => op(Op::Semi, 1),
            },
            b'&' => match n1 {
                Some(b'&') => op(Op::AndIf, 2),
                Some(b'>') => Ok(self.redir_tok(i, None)),
                _ => op(Op::Amp, 1),
            },
            b'|' => match n1 {
                Some(b'|') => op(Op::OrIf, 2),
                Some(b'&') => op(Op::PipeAmp, 2),
                _ => op(Op::Pipe, 1),
            },
            b'(' => op(Op::LParen, 1),
            b')' => op(Op::RParen, 1),
            b'<' | b'>' if n1 != Some(b'(') => Ok(self.redir_tok(i, None)),
            b'0'..=b'9' => {
                let mut k = i;
                while self.at(k).is_some_and(|c| c.is_ascii_digit()) {
                    k += 1;
                }
                match (self.at(k), self.at(k + 1)) {
                    (Some(b'<' | b'>'), next) if next != Some(b'(') => {
                        let digits = std::str::from_utf8(self.bytes(i, k)).unwrap_or("");
                        let n: u32 = digits.parse().map_err(|_| {
                            err(
                                ParseErrorKind::Unsupported,
                                i,
                                k,
                                "a file descriptor number that is too large",
                            )
                        })?;
                        Ok(self.redir_tok(k, Some((n, i))))
                    }
                    _ => self.word_tok(i),
                }
            }
            _ => self.word_tok(i),
        }
    }

    fn redir_tok(&self, i: usize, fd: Option<(u32, usize)>) -> Tok {
        let starts = |p: &[u8]| self.bytes(i, i + p.len()) == p;
        let (op, len, heredoc) = if starts(b"<<<") {
            (RedirectOp::HereString, 3, None)
        } else if starts(b"<<-") {
            (RedirectOp::HereDoc, 3, Some(true))
        } else if starts(b"<<") {
            (RedirectOp::HereDoc, 2, Some(false))
        } else if starts(b"<&") {
            (RedirectOp::DupIn, 2, None)
        } else if starts(b"<>") {
            (RedirectOp::ReadWrite, 2, None)
        } else if starts(b"<") {
            (RedirectOp::Read, 1, None)
        } else if starts(b">>") {
            (RedirectOp::Append, 2, None)
        } else if starts(b">|") {
            (RedirectOp::Clobber, 2, None)
        } else if starts(b">&") {
            (RedirectOp::DupOut, 2, None)
        } else if starts(b">") {
            (RedirectOp::Write, 1, None)
        } else if starts(b"&>>") {
            (RedirectOp::AppendAll, 3, None)
        } else {
            (RedirectOp::WriteAll, 2, None)
        };
        Tok::Redir {
            op,
            pos: i,
            len,
            fd,
            heredoc,
        }
    }

    fn word_tok(&mut self, i: usize) -> Result<Tok, ParseError> {
        let e = self.word_end(i)?;
        if e == i {
            return Err(syntax(i, i + 1, "a character that starts no token"));
        }
        // `{name}>file` allocates a descriptor into a variable: refused.
        if matches!(self.at(e), Some(b'<' | b'>'))
            && self.at(i) == Some(b'{')
            && self.at(e - 1) == Some(b'}')
            && e - i > 2
        {
            return Err(err(
                ParseErrorKind::Unsupported,
                i,
                e + 1,
                "a {name} file descriptor redirection is not supported",
            ));
        }
        Ok(Tok::Word(i, e))
    }

    /// Where the word starting at `i` ends: the first unquoted metacharacter.
    fn word_end(&mut self, i: usize) -> Result<usize, ParseError> {
        let mut j = i;
        while let Some(b) = self.at(j) {
            let next = self.at(j + 1);
            j = match b {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' => break,
                b'<' | b'>' if next == Some(b'(') => {
                    self.cx.scanner(self.end).paren_end(j + 1)? + 1
                }
                b'<' | b'>' => break,
                b'\\' if next == Some(b'\n') => {
                    guards::check_line_continuation(self.s, j, 0)?;
                    break;
                }
                b'\\' => (j + 2).min(self.end),
                b'\'' => self.cx.scanner(self.end).single_quote_end(j)? + 1,
                b'"' => self.cx.scanner(self.end).dq_end(j)? + 1,
                b'`' => self.cx.scanner(self.end).backtick_end(j, false)? + 1,
                b'$' => self.dollar_end(j)? + 1,
                b'?' | b'*' | b'+' | b'@' | b'!' if next == Some(b'(') && self.extglob() => {
                    self.cx.scanner(self.end).arith_paren_end(j + 1)? + 1
                }
                _ => j + 1,
            };
        }
        Ok(j)
    }

    /// For a `$` at `j`: the offset of the last byte of the expansion it starts (`j` itself
    /// when it starts none).
    fn dollar_end(&mut self, j: usize) -> Result<usize, ParseError> {
        let mut sc = self.cx.scanner(self.end);
        match self.at(j + 1) {
            Some(b'(') => {
                if self.at(j + 2) == Some(b'(') {
                    if let Some(e) = sc.arith_dollar_end(j)? {
                        return Ok(e);
                    }
                }
                self.cx.enter(j)?;
                let r = super::with_stack(|| sc.paren_end(j + 1));
                self.cx.leave();
                r
            }
            Some(b'{') => {
                self.cx.enter(j)?;
                let r = super::with_stack(|| sc.brace_param_end(j + 1));
                self.cx.leave();
                r
            }
            Some(b'[') => (j + 2..self.end)
                .find(|&k| self.s.get(k) == Some(&b']'))
                .ok_or_else(|| {
                    err(
                        ParseErrorKind::Missing,
                        j,
                        self.end,
                        "an unterminated $[...]",
                    )
                }),
            Some(b'\'') => sc.ansi_c_end(j + 1),
            Some(b'"') => sc.dq_end(j + 1),
            _ => Ok(j),
        }
    }

    /// Consumes `t` (which must be the token at the current position); a newline reads the
    /// bodies of the here-documents waiting for it.
    fn bump(&mut self, t: Tok) -> Result<(), ParseError> {
        self.pos = t.end();
        if let Tok::Newline(nl) = t {
            if let Some(on) = self.extglob_next.take() {
                self.cx.extglob = on;
                self.cached = None;
            }
            if !self.pending.is_empty() {
                self.read_heredocs(nl + 1)?;
            }
        }
        Ok(())
    }

    fn read_heredocs(&mut self, start: usize) -> Result<(), ParseError> {
        let mut p = start;
        for Pending {
            key,
            op_pos,
            mut site,
        } in std::mem::take(&mut self.pending)
        {
            let (body, next) = self
                .cx
                .scanner(self.end)
                .heredoc_body_at(&site, op_pos, p)?;
            site.body = body;
            let doc = self.cx.heredoc_body(&site)?;
            self.bodies.insert(key, doc);
            p = next;
        }
        self.pos = p;
        Ok(())
    }

    fn skip_newlines(&mut self) -> Result<(), ParseError> {
        loop {
            match self.tok()? {
                t @ Tok::Newline(_) => self.bump(t)?,
                _ => return Ok(()),
            }
        }
    }

    fn expect_word(&mut self, w: &[u8]) -> Result<Tok, ParseError> {
        let t = self.tok()?;
        if self.word_is(t, w) {
            self.bump(t)?;
            Ok(t)
        } else {
            let mut e = self.unexpected(t);
            e.message = format!("{}: `{}` expected", e.message, String::from_utf8_lossy(w));
            Err(e)
        }
    }

    fn word(&mut self, a: usize, b: usize, opts: WordOpts) -> Result<Word, ParseError> {
        self.cx.count_node(a)?;
        if !self.pending.is_empty() && self.bytes(a, b).contains(&b'\n') {
            return Err(unsupported(
                Span::new(a, b),
                "a word that spans lines before a pending here-document body",
            ));
        }
        self.cx.word(a, b, opts)
    }

    // ----- lists --------------------------------------------------------------------------

    fn is_list_end(&self, t: Tok) -> bool {
        match t {
            Tok::Eof(_) => true,
            Tok::Op(op, ..) => matches!(op, Op::RParen | Op::DSemi | Op::SemiAmp | Op::DSemiAmp),
            Tok::Word(a, b) => LIST_ENDS.contains(&self.bytes(a, b)),
            _ => false,
        }
    }

    /// A list of and-or lists separated by `;`, `&` and newlines, up to a token that ends it
    /// (not consumed).
    fn list(&mut self) -> Result<Vec<Command>, ParseError> {
        let mut out = Vec::new();
        loop {
            self.skip_newlines()?;
            let t = self.tok()?;
            if self.is_list_end(t) {
                return Ok(out);
            }
            let first = out.len();
            self.and_or(&mut out)?;
            let t = self.tok()?;
            match t {
                Tok::Op(Op::Semi, ..) | Tok::Newline(_) => self.bump(t)?,
                Tok::Op(Op::Amp, ..) => {
                    self.bump(t)?;
                    for c in out.iter_mut().skip(first) {
                        set_background(c);
                    }
                }
                _ => return Ok(out),
            }
        }
    }

    /// A list that must hold at least one command, ended by the reserved word `what`.
    fn body_list(&mut self, at: usize, what: &str) -> Result<Vec<Command>, ParseError> {
        let cmds = self.list()?;
        if cmds.is_empty() {
            let t = self.tok()?;
            let mut e = self.unexpected(t);
            if !matches!(t, Tok::Eof(_)) {
                e.span = Span::new(at.min(t.start()), t.end());
            }
            e.message = format!("{}: {what} needs a command", e.message);
            return Err(e);
        }
        Ok(cmds)
    }

    fn and_or(&mut self, out: &mut Vec<Command>) -> Result<(), ParseError> {
        self.pipeline(out, Join::Seq)?;
        loop {
            let t = self.tok()?;
            let join = match t {
                Tok::Op(Op::AndIf, ..) => Join::And,
                Tok::Op(Op::OrIf, ..) => Join::Or,
                _ => return Ok(()),
            };
            self.bump(t)?;
            self.skip_newlines()?;
            self.pipeline(out, join)?;
        }
    }

    fn pipeline(&mut self, out: &mut Vec<Command>, join: Join) -> Result<(), ParseError> {
        let start = out.len();
        let mut keywords = Vec::new();
        let mut kw_start = None;
        loop {
            let t = self.tok()?;
            if self.word_is(t, b"time") && !keywords.contains(&Keyword::Time) {
                self.bump(t)?;
                keywords.push(Keyword::Time);
                for opt in [b"-p".as_slice(), b"--"] {
                    let t = self.tok()?;
                    if self.word_is(t, opt) {
                        self.bump(t)?;
                    }
                }
            } else if self.word_is(t, b"!") {
                self.bump(t)?;
                keywords.push(Keyword::Bang);
            } else {
                break;
            }
            kw_start.get_or_insert(t.start());
            if keywords.len() > self.cx.limits.max_depth {
                return Err(err(
                    ParseErrorKind::TooDeep,
                    t.start(),
                    t.end(),
                    "too many `time` or `!` keywords in a row",
                ));
            }
        }
        let mut stage = 0;
        loop {
            let t = self.tok()?;
            if let Some(k) = kw_start.filter(|_| stage == 0) {
                let starts = matches!(t, Tok::Op(Op::LParen, ..));
                if self.is_list_end(t) || (matches!(t, Tok::Op(..) | Tok::Newline(_)) && !starts) {
                    return Err(unsupported(
                        Span::new(k, t.start().max(k + 1)),
                        "`time` or `!` without a command to apply to",
                    ));
                }
            }
            if stage > 0 && self.word_is(t, b"!") {
                return Err(syntax(t.start(), t.end(), "`!` after `|`"));
            }
            let at = out.len();
            self.command(out)?;
            if let Some(first) = out.get_mut(at) {
                if stage > 0 {
                    if let Command::Simple(s) = first {
                        s.piped_input = true;
                    }
                    first.set_join(Join::Pipe);
                } else {
                    first.set_join(join);
                }
            }
            stage += 1;
            let t = self.tok()?;
            match t {
                Tok::Op(Op::Pipe | Op::PipeAmp, ..) => {
                    self.bump(t)?;
                    self.skip_newlines()?;
                }
                _ => break,
            }
        }
        if !keywords.is_empty() {
            let span = Span::new(kw_start.unwrap_or(0), self.pos);
            for c in out.iter_mut().skip(start) {
                prepend_keywords(c, &keywords, span)?;
            }
        }
        Ok(())
    }

    // ----- commands -----------------------------------------------------------------------

    /// One command (pushed onto `out`).
    fn command(&mut self, out: &mut Vec<Command>) -> Result<(), ParseError> {
        let t = self.tok()?;
        self.cx.count_node(t.start())?;
        self.cx.enter(t.start())?;
        let r = super::with_stack(|| self.command_inner(t));
        self.cx.leave();
        out.push(r?);
        Ok(())
    }

    fn command_inner(&mut self, t: Tok) -> Result<Command, ParseError> {
        match t {
            Tok::Word(a, b) => {
                let w = self.bytes(a, b);
                let compound = match w {
                    b"{" => Some(self.group(t)?),
                    b"if" => Some(self.if_clause(t)?),
                    b"while" => Some(self.while_clause(t, CompoundKind::While)?),
                    b"until" => Some(self.while_clause(t, CompoundKind::Until)?),
                    b"for" => Some(self.for_clause(t, CompoundKind::For)?),
                    b"select" => Some(self.for_clause(t, CompoundKind::Select)?),
                    b"case" => Some(self.case_clause(t)?),
                    b"[[" => Some(self.cond_command(t)?),
                    b"function" => return self.function_keyword(t),
                    b"coproc" => return self.coproc(t),
                    b"then" | b"elif" | b"else" | b"fi" | b"do" | b"done" | b"esac" | b"}" => {
                        return Err(self.unexpected(t))
                    }
                    _ => None,
                };
                match compound {
                    Some(c) => self.compound_redirects(c),
                    None => self.simple_command(),
                }
            }
            Tok::Op(Op::LParen, a, _) => {
                let c = if self.at(a + 1) == Some(b'(') {
                    match self.arith_command(a)? {
                        Some(c) => c,
                        None => self.subshell(t)?,
                    }
                } else {
                    self.subshell(t)?
                };
                self.compound_redirects(c)
            }
            Tok::Redir { .. } => self.simple_command(),
            t => Err(self.unexpected(t)),
        }
    }

    /// The redirections after a compound command; a word after them is a syntax error.
    fn compound_redirects(&mut self, mut c: Compound) -> Result<Command, ParseError> {
        loop {
            let t = self.tok()?;
            match t {
                Tok::Redir { .. } => {
                    let r = self.redirect(t)?;
                    c.span = c.span.join(r.span);
                    c.redirects.push(r);
                }
                Tok::Word(..) if !self.is_list_end(t) => {
                    return Err(syntax(
                        t.start(),
                        t.end(),
                        "a word right after a compound command",
                    ))
                }
                _ => return Ok(Command::Compound(c)),
            }
        }
    }

    fn subshell(&mut self, open: Tok) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let commands = self.body_list(open.start(), "a subshell")?;
        let close = self.tok()?;
        if !matches!(close, Tok::Op(Op::RParen, ..)) {
            return Err(self.unexpected(close));
        }
        self.bump(close)?;
        let span = Span::new(open.start(), close.end());
        Ok(compound(
            CompoundKind::Subshell,
            span,
            Script { commands, span },
        ))
    }

    /// `(( ... ))` at `a`, or `None` when the parentheses are two subshells (`((a) )`).
    fn arith_command(&mut self, a: usize) -> Result<Option<Compound>, ParseError> {
        let Some((inner, outer)) = self.double_paren(a)? else {
            return Ok(None);
        };
        let ar = self.cx.arith(a + 2, inner)?;
        self.pos = outer + 1;
        Ok(Some(arithmetic_compound(Span::new(a, outer + 1), ar)))
    }

    /// For `((` at `a`: the offsets of the `))` that closes it, when the inner parenthesis
    /// closes right before the outer one.
    fn double_paren(&mut self, a: usize) -> Result<Option<(usize, usize)>, ParseError> {
        let mut sc = self.cx.scanner(self.end);
        let Ok(outer) = sc.arith_paren_end(a) else {
            return Ok(None);
        };
        let inner = sc.arith_paren_end(a + 1)?;
        Ok((inner + 1 == outer).then_some((inner, outer)))
    }

    fn group(&mut self, open: Tok) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let commands = self.body_list(open.start(), "a `{ }` group")?;
        let close = self.expect_word(b"}")?;
        let span = Span::new(open.start(), close.end());
        Ok(compound(
            CompoundKind::Group,
            span,
            Script { commands, span },
        ))
    }

    fn if_clause(&mut self, open: Tok) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let mut commands = self.body_list(open.start(), "`if`")?;
        self.expect_word(b"then")?;
        commands.extend(self.body_list(open.start(), "`then`")?);
        loop {
            let t = self.tok()?;
            if self.word_is(t, b"elif") {
                self.bump(t)?;
                commands.extend(self.body_list(t.start(), "`elif`")?);
                self.expect_word(b"then")?;
                commands.extend(self.body_list(t.start(), "`then`")?);
            } else if self.word_is(t, b"else") {
                self.bump(t)?;
                commands.extend(self.body_list(t.start(), "`else`")?);
                break;
            } else {
                break;
            }
        }
        let close = self.expect_word(b"fi")?;
        let span = Span::new(open.start(), close.end());
        Ok(compound(CompoundKind::If, span, Script { commands, span }))
    }

    fn while_clause(&mut self, open: Tok, kind: CompoundKind) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let mut commands = self.body_list(open.start(), "a loop condition")?;
        let end = self.do_group(open.start(), &mut commands)?;
        let span = Span::new(open.start(), end);
        Ok(compound(kind, span, Script { commands, span }))
    }

    /// `do list done` (or `{ list }`, which bash also accepts after `for`); returns its end.
    fn do_group(&mut self, at: usize, commands: &mut Vec<Command>) -> Result<usize, ParseError> {
        let t = self.tok()?;
        if self.word_is(t, b"{") {
            let g = self.group(t)?;
            let end = g.span.end;
            commands.extend(g.body.commands);
            return Ok(end);
        }
        self.expect_word(b"do")?;
        commands.extend(self.body_list(at, "`do`")?);
        Ok(self.expect_word(b"done")?.end())
    }

    fn for_clause(&mut self, open: Tok, kind: CompoundKind) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let mut c = compound(kind.clone(), Span::default(), Script::default());
        let t = self.tok()?;
        if kind == CompoundKind::For && matches!(t, Tok::Op(Op::LParen, ..)) {
            let a = t.start();
            let Some((inner, outer)) = self.double_paren(a)? else {
                return Err(syntax(a, a + 1, "`for (` without `((`"));
            };
            c.kind = CompoundKind::ArithFor;
            c.arithmetic.push(self.cx.arith(a + 2, inner)?);
            self.pos = outer + 1;
            let t = self.tok()?;
            if matches!(t, Tok::Op(Op::Semi, ..)) {
                self.bump(t)?;
            }
            self.skip_newlines()?;
        } else {
            let Tok::Word(a, b) = t else {
                return Err(self.unexpected(t));
            };
            self.bump(t)?;
            let name = String::from_utf8_lossy(self.bytes(a, b)).into_owned();
            if !is_name(&name) {
                return Err(ParseError {
                    kind: ParseErrorKind::DynamicName,
                    span: Span::new(a, b),
                    message: "a loop variable must be a plain name".into(),
                });
            }
            let s = Span::new(a, b);
            c.assignments.push(bare_assignment(name, s));
            self.skip_newlines()?;
            let t = self.tok()?;
            if self.word_is(t, b"in") {
                self.bump(t)?;
                loop {
                    let t = self.tok()?;
                    match t {
                        Tok::Word(a, b) => {
                            self.bump(t)?;
                            let w = self.word(a, b, ARG)?;
                            c.words.push(w);
                        }
                        Tok::Op(Op::Semi, ..) | Tok::Newline(_) => {
                            self.bump(t)?;
                            break;
                        }
                        t => return Err(self.unexpected(t)),
                    }
                }
            } else if matches!(t, Tok::Op(Op::Semi, ..)) {
                self.bump(t)?;
            }
            self.skip_newlines()?;
        }
        let mut commands = Vec::new();
        let end = self.do_group(open.start(), &mut commands)?;
        let span = Span::new(open.start(), end);
        c.span = span;
        c.body = Script { commands, span };
        Ok(c)
    }

    fn case_clause(&mut self, open: Tok) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let mut c = compound(CompoundKind::Case, Span::default(), Script::default());
        let t = self.tok()?;
        let Tok::Word(a, b) = t else {
            return Err(self.unexpected(t));
        };
        self.bump(t)?;
        let subject = self.word(a, b, TEST_OPERAND)?;
        c.words.push(subject);
        self.skip_newlines()?;
        self.expect_word(b"in")?;
        let mut commands = Vec::new();
        let close = loop {
            self.skip_newlines()?;
            let mut t = self.tok()?;
            if self.word_is(t, b"esac") {
                self.bump(t)?;
                break t;
            }
            if matches!(t, Tok::Op(Op::LParen, ..)) {
                self.bump(t)?;
                t = self.tok()?;
            }
            loop {
                let Tok::Word(a, b) = t else {
                    return Err(self.unexpected(t));
                };
                self.bump(t)?;
                let w = self.word(a, b, PATTERN)?;
                c.words.push(w);
                let sep = self.tok()?;
                self.bump(sep)?;
                match sep {
                    Tok::Op(Op::Pipe, ..) => t = self.tok()?,
                    Tok::Op(Op::RParen, ..) => break,
                    other => return Err(self.unexpected(other)),
                }
            }
            commands.extend(self.list()?);
            let t = self.tok()?;
            match t {
                Tok::Op(Op::DSemi | Op::SemiAmp | Op::DSemiAmp, ..) => self.bump(t)?,
                _ if self.word_is(t, b"esac") => {}
                t => return Err(self.unexpected(t)),
            }
        };
        let span = Span::new(open.start(), close.end());
        c.span = span;
        c.body = Script { commands, span };
        Ok(c)
    }

    // ----- [[ ]] --------------------------------------------------------------------------

    fn cond_command(&mut self, open: Tok) -> Result<Compound, ParseError> {
        self.bump(open)?;
        let mut c = compound(CompoundKind::Test, Span::default(), Script::default());
        let outer = std::mem::replace(&mut self.in_cond, true);
        self.cached = None;
        let r = self.cond_or(&mut c);
        let close = r.and_then(|()| self.cond_tok());
        self.in_cond = outer;
        self.cached = None;
        let close = close?;
        if !self.word_is(close, b"]]") {
            return Err(self.unexpected(close));
        }
        self.bump(close)?;
        let span = Span::new(open.start(), close.end());
        c.span = span;
        c.body.span = span;
        Ok(c)
    }

    /// The next token inside `[[ ]]`, where newlines are blanks and `<`, `>` are operators.
    fn cond_tok(&mut self) -> Result<Tok, ParseError> {
        loop {
            let t = self.tok()?;
            match t {
                Tok::Newline(_) => self.bump(t)?,
                Tok::Redir {
                    op: RedirectOp::Read | RedirectOp::Write,
                    pos,
                    fd: None,
                    ..
                } => return Ok(Tok::Word(pos, pos + 1)),
                t => return Ok(t),
            }
        }
    }

    fn cond_or(&mut self, c: &mut Compound) -> Result<(), ParseError> {
        self.cond_and(c)?;
        loop {
            let t = self.cond_tok()?;
            if !matches!(t, Tok::Op(Op::OrIf, ..)) {
                return Ok(());
            }
            self.bump(t)?;
            self.cond_and(c)?;
        }
    }

    fn cond_and(&mut self, c: &mut Compound) -> Result<(), ParseError> {
        self.cond_not(c)?;
        loop {
            let t = self.cond_tok()?;
            if !matches!(t, Tok::Op(Op::AndIf, ..)) {
                return Ok(());
            }
            self.bump(t)?;
            self.cond_not(c)?;
        }
    }

    fn cond_not(&mut self, c: &mut Compound) -> Result<(), ParseError> {
        let t = self.cond_tok()?;
        self.cx.enter(t.start())?;
        let r = super::with_stack(|| {
            if self.word_is(t, b"!") {
                self.bump(t)?;
                self.cond_not(c)
            } else {
                self.cond_primary(c)
            }
        });
        self.cx.leave();
        r
    }

    fn cond_primary(&mut self, c: &mut Compound) -> Result<(), ParseError> {
        let t = self.cond_tok()?;
        match t {
            Tok::Op(Op::LParen, ..) => {
                self.bump(t)?;
                self.cond_or(c)?;
                let close = self.cond_tok()?;
                if !matches!(close, Tok::Op(Op::RParen, ..)) {
                    return Err(self.unexpected(close));
                }
                self.bump(close)
            }
            Tok::Word(a, b) if !self.word_is(t, b"]]") => {
                self.bump(t)?;
                let first = self.bytes(a, b);
                let next = self.cond_tok()?;
                let next_is_operand = matches!(next, Tok::Word(..)) && !self.word_is(next, b"]]");
                if is_unary_test(first) && next_is_operand {
                    let Tok::Word(oa, ob) = next else {
                        return Err(self.unexpected(next));
                    };
                    self.bump(next)?;
                    let w = self.word(oa, ob, TEST_OPERAND)?;
                    if first == b"-v" || first == b"-R" {
                        // A name bash resolves when it runs: its subscript is arithmetic.
                        c.names.push(w.clone());
                    }
                    c.words.push(w);
                    return Ok(());
                }
                let op = match next {
                    Tok::Word(na, nb) if is_binary_test(self.bytes(na, nb)) => self.bytes(na, nb),
                    _ => {
                        let w = self.word(a, b, TEST_OPERAND)?;
                        c.words.push(w);
                        return Ok(());
                    }
                };
                self.bump(next)?;
                let (ra, rb) = if op == b"=~" {
                    self.skip_cond_blanks()?;
                    let ra = self.pos;
                    let rb = self.regex_end(ra)?;
                    self.pos = rb;
                    (ra, rb)
                } else {
                    match self.cond_tok()? {
                        r @ Tok::Word(ra, rb) if !self.word_is(r, b"]]") => {
                            self.bump(r)?;
                            (ra, rb)
                        }
                        r => return Err(self.unexpected(r)),
                    }
                };
                if ra == rb {
                    return Err(syntax(
                        ra,
                        ra + 1,
                        "a `[[ ]]` operator without its right operand",
                    ));
                }
                match op {
                    b"-eq" | b"-ne" | b"-lt" | b"-le" | b"-gt" | b"-ge" => {
                        c.arithmetic.push(self.cx.arith(a, b)?);
                        c.arithmetic.push(self.cx.arith(ra, rb)?);
                    }
                    _ => {
                        let right = match op {
                            b"=~" => REGEX,
                            b"==" | b"=" | b"!=" => PATTERN,
                            _ => TEST_OPERAND,
                        };
                        let l = self.word(a, b, TEST_OPERAND)?;
                        c.words.push(l);
                        let r = self.word(ra, rb, right)?;
                        c.words.push(r);
                    }
                }
                Ok(())
            }
            t => Err(self.unexpected(t)),
        }
    }

    fn skip_cond_blanks(&mut self) -> Result<(), ParseError> {
        loop {
            self.skip_blanks()?;
            if self.at(self.pos) == Some(b'\n') {
                self.pos += 1;
            } else {
                return Ok(());
            }
        }
    }

    /// The end of the regex right of `=~`: bash reads parentheses (with blanks inside) and
    /// `|` as part of it.
    fn regex_end(&mut self, i: usize) -> Result<usize, ParseError> {
        let mut j = i;
        while let Some(b) = self.at(j) {
            j = match b {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'<' | b'>' | b')' => break,
                b'(' => self.cx.scanner(self.end).arith_paren_end(j)? + 1,
                b'|' => j + 1,
                _ => {
                    let e = self.word_end(j)?;
                    if e == j {
                        break;
                    }
                    e
                }
            };
        }
        Ok(j)
    }

    // ----- simple commands ----------------------------------------------------------------

    fn simple_command(&mut self) -> Result<Command, ParseError> {
        let start = self.pos;
        let mut cmd = simple(Span::new(start, start), vec![], vec![], vec![]);
        let mut decl = false;
        let mut last_end = start;
        loop {
            let t = self.tok()?;
            match t {
                Tok::Redir { .. } => {
                    let r = self.redirect(t)?;
                    last_end = r.span.end;
                    cmd.redirects.push(r);
                }
                Tok::Word(a, b) => {
                    self.bump(t)?;
                    if cmd.words.is_empty() {
                        if let Some(asg) = self.assignment(a, b, !cmd.redirects.is_empty())? {
                            last_end = asg.span.end;
                            cmd.assignments.push(asg);
                            continue;
                        }
                        if cmd.assignments.is_empty() && cmd.redirects.is_empty() {
                            if let Some(f) = self.function_parens(a, b)? {
                                return Ok(f);
                            }
                        }
                        decl = DECLARATION_BUILTINS.contains(&self.bytes(a, b));
                        let w = self.word(a, b, ARG)?;
                        cmd.words.push(w);
                        last_end = b;
                    } else if decl {
                        let w = self.declaration_arg(a, b)?;
                        last_end = w.span.end;
                        cmd.words.push(w);
                    } else {
                        let w = self.word(a, b, ARG)?;
                        cmd.words.push(w);
                        last_end = b;
                    }
                }
                _ => break,
            }
        }
        if cmd.words.is_empty() && cmd.assignments.is_empty() && cmd.redirects.is_empty() {
            let t = self.tok()?;
            return Err(self.unexpected(t));
        }
        if cmd
            .words
            .first()
            .is_some_and(|w| is_shopt_extglob(&w.static_value(), &cmd.words))
        {
            let on = cmd.words.get(1).and_then(Word::static_value).as_deref() == Some("-s");
            self.extglob_next = Some(on);
        }
        cmd.span = Span::new(start, last_end);
        Ok(Command::Simple(cmd))
    }

    /// `NAME=`, `NAME+=` or `NAME[...]=` at the start of `a..b`.
    fn assignment_prefix(&mut self, a: usize, b: usize) -> Option<Prefix> {
        let mut k = a;
        while k < b
            && self
                .at(k)
                .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric())
        {
            k += 1;
        }
        if k == a || self.at(a).is_some_and(|c| c.is_ascii_digit()) {
            return None;
        }
        let name_end = k;
        let mut subscript = None;
        if self.at(k) == Some(b'[') {
            let close = self.subscript_close(k, b)?;
            subscript = Some((k + 1, close));
            k = close + 1;
        }
        if self.bytes(k, k + 2) == b"+=" {
            Some(Prefix {
                name_end,
                subscript,
                value_start: k + 2,
                append: true,
            })
        } else if self.at(k) == Some(b'=') && k < b {
            Some(Prefix {
                name_end,
                subscript,
                value_start: k + 1,
                append: false,
            })
        } else {
            None
        }
    }

    /// The `]` that closes the `[` at `open`, within `open..b`.
    fn subscript_close(&mut self, open: usize, b: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut j = open;
        while j < b {
            let c = self.at(j)?;
            match c {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j);
                    }
                }
                b'\\' => j += 1,
                b'\'' => j = self.cx.scanner(b).single_quote_end(j).ok()?,
                b'"' => j = self.cx.scanner(b).dq_end(j).ok()?,
                b'$' => j = self.dollar_end(j).ok()?,
                b'`' => j = self.cx.scanner(b).backtick_end(j, false).ok()?,
                _ => {}
            }
            j += 1;
        }
        None
    }

    /// The word at `a..b` read as an assignment, if it is one (an array value `NAME=(...)`
    /// extends past `b`).
    fn assignment(
        &mut self,
        a: usize,
        b: usize,
        after_redirect: bool,
    ) -> Result<Option<Assignment>, ParseError> {
        let Some(Prefix {
            name_end,
            subscript,
            value_start,
            append,
        }) = self.assignment_prefix(a, b)
        else {
            return Ok(None);
        };
        self.cx.count_node(a)?;
        let name = String::from_utf8_lossy(self.bytes(a, name_end)).into_owned();
        let subscript = match subscript {
            Some((sa, sb)) => Some(self.cx.word(sa, sb, SUBSCRIPT)?),
            None => None,
        };
        let mut asg = Assignment {
            name,
            name_span: Span::new(a, name_end),
            span: Span::new(a, b),
            subscript,
            value: None,
            array: vec![],
            append,
        };
        if value_start == b && self.at(b) == Some(b'(') {
            if after_redirect {
                return Err(syntax(
                    b,
                    b + 1,
                    "an array value after a redirection (bash refuses it)",
                ));
            }
            let (close, elements) = self.array(b)?;
            for (ea, eb) in elements {
                let w = self.word(ea, eb, ARG)?;
                asg.array.push(w);
            }
            asg.span = Span::new(a, close + 1);
        } else {
            asg.value = Some(self.cx.word(value_start, b, ASSIGN)?);
        }
        Ok(Some(asg))
    }

    /// The array value whose `(` is at `open`: the offset of its `)` and its elements.
    /// Leaves the position after the `)`.
    fn array(&mut self, open: usize) -> Result<(usize, Vec<(usize, usize)>), ParseError> {
        self.pos = open + 1;
        let mut elements = Vec::new();
        loop {
            let t = self.tok()?;
            match t {
                Tok::Newline(_) => {
                    if !self.pending.is_empty() {
                        return Err(unsupported(
                            Span::new(open, t.end()),
                            "an array value that spans lines before a pending here-document body",
                        ));
                    }
                    self.bump(t)?;
                }
                Tok::Op(Op::RParen, close, _) => {
                    self.pos = close + 1;
                    if self.at(self.pos).is_some_and(|c| !guards::is_meta(c)) {
                        return Err(syntax(
                            self.pos,
                            self.pos + 1,
                            "text right after an array value",
                        ));
                    }
                    return Ok((close, elements));
                }
                Tok::Word(a, b) => {
                    self.bump(t)?;
                    elements.push((a, b));
                }
                Tok::Eof(_) => {
                    return Err(err(
                        ParseErrorKind::Missing,
                        open,
                        self.end,
                        "an unterminated array value: `)` is missing",
                    ))
                }
                t => return Err(self.unexpected(t)),
            }
        }
    }

    /// An argument of `declare`/`export`/...: `NAME=value` is read as bash reads an
    /// assignment (an array value may follow), anything else as a word.
    fn declaration_arg(&mut self, a: usize, b: usize) -> Result<Word, ParseError> {
        let Some(Prefix {
            subscript,
            value_start,
            ..
        }) = self.assignment_prefix(a, b)
        else {
            return self.word(a, b, ARG);
        };
        let mut end = b;
        if value_start == b && self.at(b) == Some(b'(') {
            let (close, _) = self.array(b)?;
            end = close + 1;
        }
        self.cx.count_node(a)?;
        match subscript {
            // `declare a[i]=v`: the subscript is expanded as if double-quoted.
            Some((lb, rb)) => self.cx.word_with_subscript(Span::new(a, end), lb, rb),
            None => self.cx.word(a, end, DECL),
        }
    }

    fn redirect(&mut self, t: Tok) -> Result<Redirect, ParseError> {
        let Tok::Redir {
            mut op,
            pos,
            len,
            fd,
            heredoc,
        } = t
        else {
            return Err(self.unexpected(t));
        };
        self.bump(t)?;
        let target_tok = self.tok()?;
        let Tok::Word(ta, tb) = target_tok else {
            return Err(err(
                ParseErrorKind::Missing,
                t.start(),
                pos + len,
                "a redirection without a target",
            ));
        };
        let delimiter = match heredoc {
            Some(_) => Some(self.cx.scanner(self.end).heredoc_delimiter(pos + len)?),
            None => None,
        };
        self.bump(target_tok)?;
        let opts = if op == RedirectOp::HereString {
            TEST_OPERAND
        } else {
            ARG
        };
        let target = self.word(ta, tb, opts)?;
        op = dup_or_write_all(op, &target);
        let start = t.start();
        if let (Some(strip_tabs), Some((delimiter, quoted))) = (heredoc, delimiter) {
            self.pending.push(Pending {
                key: start,
                op_pos: pos,
                site: HereDocSite::new(strip_tabs, quoted, delimiter),
            });
        }
        Ok(Redirect {
            span: Span::new(start, tb),
            fd: fd.map(|(n, _)| n),
            op,
            target,
            heredoc: None,
        })
    }

    // ----- functions and coproc -----------------------------------------------------------

    /// `name ( )` after the word `a..b`: a function definition, if the parentheses follow.
    fn function_parens(&mut self, a: usize, b: usize) -> Result<Option<Command>, ParseError> {
        let t = self.tok()?;
        if !matches!(t, Tok::Op(Op::LParen, ..)) {
            return Ok(None);
        }
        self.bump(t)?;
        let close = self.tok()?;
        if !matches!(close, Tok::Op(Op::RParen, ..)) {
            return Err(self.unexpected(close));
        }
        self.bump(close)?;
        self.function_body(a, Span::new(a, b)).map(Some)
    }

    fn function_keyword(&mut self, t: Tok) -> Result<Command, ParseError> {
        self.bump(t)?;
        let name = self.tok()?;
        let Tok::Word(a, b) = name else {
            return Err(self.unexpected(name));
        };
        self.bump(name)?;
        let p = self.tok()?;
        if matches!(p, Tok::Op(Op::LParen, ..)) {
            self.bump(p)?;
            let close = self.tok()?;
            if !matches!(close, Tok::Op(Op::RParen, ..)) {
                return Err(self.unexpected(close));
            }
            self.bump(close)?;
        }
        self.function_body(t.start(), Span::new(a, b))
    }

    fn function_body(&mut self, start: usize, name: Span) -> Result<Command, ParseError> {
        let name_word = self.word(name.start, name.end, ARG)?;
        let name = name_word.static_value().ok_or_else(|| ParseError {
            kind: ParseErrorKind::DynamicName,
            span: name_word.span,
            message: "a function name must be static".into(),
        })?;
        self.skip_newlines()?;
        let t = self.tok()?;
        let mut body = Vec::new();
        let is_compound = match t {
            Tok::Word(a, b) => COMPOUND_STARTERS.contains(&self.bytes(a, b)),
            Tok::Op(Op::LParen, ..) => true,
            _ => false,
        };
        if !is_compound {
            return Err(syntax(
                t.start(),
                t.end(),
                "a function body must be a compound command",
            ));
        }
        self.command(&mut body)?;
        let mut redirects = Vec::new();
        let mut end = body.last().map_or(start, |c| c.span().end);
        let body_span = match body.last_mut() {
            Some(Command::Compound(c)) => {
                // Redirections after the body apply to each run of the function.
                let outer = c.span;
                redirects = std::mem::take(&mut c.redirects);
                c.span = c.body.span;
                end = end.max(outer.end);
                c.body.span
            }
            _ => Span::new(start, end),
        };
        Ok(Command::Function(FunctionDef {
            name,
            name_span: name_word.span,
            span: Span::new(start, end),
            body: Script {
                commands: body,
                span: body_span,
            },
            redirects,
            join: Join::Seq,
        }))
    }

    fn coproc(&mut self, t: Tok) -> Result<Command, ParseError> {
        self.bump(t)?;
        let next = self.tok()?;
        let mut name = None;
        if let Tok::Word(a, b) = next {
            let text = self.bytes(a, b);
            if !COMPOUND_STARTERS.contains(&text) && std::str::from_utf8(text).is_ok_and(is_name) {
                // `coproc NAME compound-command`: NAME names the coprocess.
                let save = self.pos;
                self.pos = b;
                let after = self.tok()?;
                let starts_compound = match after {
                    Tok::Word(c, d) => COMPOUND_STARTERS.contains(&self.bytes(c, d)),
                    Tok::Op(Op::LParen, ..) => true,
                    _ => false,
                };
                if starts_compound {
                    name = Some((String::from_utf8_lossy(text).into_owned(), Span::new(a, b)));
                } else {
                    self.pos = save;
                }
            }
        }
        let mut cmds = Vec::new();
        self.command(&mut cmds)?;
        let mut c = cmds.pop().ok_or_else(|| {
            unsupported(Span::new(t.start(), t.end()), "`coproc` without a command")
        })?;
        prepend_keywords(&mut c, &[Keyword::Coproc], Span::new(t.start(), t.end()))?;
        if let Some((name, name_span)) = name {
            match &mut c {
                Command::Compound(cc) => cc.assignments.push(bare_assignment(name, name_span)),
                _ => {
                    return Err(unsupported(
                        Span::new(t.start(), t.end()),
                        "`coproc NAME` needs a compound command",
                    ))
                }
            }
        }
        Ok(c)
    }
}
