//! Our own lexer for shell words, over the original text.
//!
//! tree-sitter says where a word is; this module says what it is: quote removal, escapes,
//! `$'...'` decoding, every expansion (with nested scripts re-parsed through
//! [`Ctx::parse_range`]), globs, brace expansions and tilde prefixes. An unquoted
//! metacharacter inside what tree-sitter called one word means the two readings disagree,
//! and is refused.

use super::ctx::{is_name, Ctx};
use super::scan::{err, HereDocSite};
use super::*;

/// Where a `~` is a tilde prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TildeMode {
    /// Never.
    Off,
    /// At the start, and after the first unquoted `=` (bash does this for any word).
    Leading,
    /// Assignment values: at the start and after every unquoted `:`, and after the first `=`.
    Assign,
}

/// How a word is lexed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WordOpts {
    glob: bool,
    brace: bool,
    tilde: TildeMode,
    /// Whether unquoted blanks and `(`, `)`, `|`, `<`, `>`... may appear (regexes, array
    /// values of declarations, words inside `${...}`).
    allow_meta: bool,
    /// Whether single quotes are ordinary characters: bash expands an array subscript
    /// as if double-quoted, so `a['$(id)']=1` runs `id` (for indexed arrays).
    squote_literal: bool,
}

/// A command argument.
pub(crate) const ARG: WordOpts = WordOpts {
    glob: true,
    brace: true,
    tilde: TildeMode::Leading,
    allow_meta: false,
    squote_literal: false,
};
/// An assignment value (no globbing, no brace expansion).
pub(crate) const ASSIGN: WordOpts = WordOpts {
    glob: false,
    brace: false,
    tilde: TildeMode::Assign,
    allow_meta: false,
    squote_literal: false,
};
/// An `X=value` argument of `declare`/`export`/...: may hold an array value.
pub(crate) const DECL: WordOpts = WordOpts {
    glob: false,
    brace: true,
    tilde: TildeMode::Assign,
    allow_meta: true,
    squote_literal: false,
};
/// A pattern (`case`, right of `==` in `[[ ]]`).
pub(crate) const PATTERN: WordOpts = WordOpts {
    glob: true,
    brace: false,
    tilde: TildeMode::Leading,
    allow_meta: false,
    squote_literal: false,
};
/// An operand of `[[ ]]` or `[ ]`.
pub(crate) const TEST_OPERAND: WordOpts = WordOpts {
    glob: false,
    brace: false,
    tilde: TildeMode::Leading,
    allow_meta: false,
    squote_literal: false,
};
/// The right side of `=~`.
pub(crate) const REGEX: WordOpts = WordOpts {
    glob: false,
    brace: false,
    tilde: TildeMode::Off,
    allow_meta: true,
    squote_literal: false,
};
/// An array subscript.
pub(crate) const SUBSCRIPT: WordOpts = WordOpts {
    glob: false,
    brace: false,
    tilde: TildeMode::Off,
    allow_meta: true,
    squote_literal: true,
};
/// A word inside `${...}`.
const PARAM_WORD: WordOpts = WordOpts {
    glob: false,
    brace: false,
    tilde: TildeMode::Leading,
    allow_meta: true,
    squote_literal: false,
};

/// How far the glob and brace look-ahead goes before assuming the worst.
const SCAN_LIMIT: usize = 512;

/// What follows a `[` in a word.
enum BracketEnd {
    /// A plain bracket expression ending at this `]`.
    Simple(usize),
    /// A bracket expression with quotes or expansions inside, or one too long to check.
    Complex,
    /// No closing `]`: a literal `[`.
    None,
}

/// Accumulates parts, merging adjacent literal text.
#[derive(Default)]
struct Parts {
    parts: Vec<WordPart>,
    lit: String,
}

impl Parts {
    fn flush(&mut self) {
        if !self.lit.is_empty() {
            self.parts
                .push(WordPart::Literal(std::mem::take(&mut self.lit)));
        }
    }
    fn push(&mut self, p: WordPart) {
        self.flush();
        self.parts.push(p);
    }
    fn finish(mut self) -> Vec<WordPart> {
        self.flush();
        self.parts
    }
}

impl Ctx<'_> {
    fn byte(&self, i: usize) -> Option<u8> {
        self.src.as_bytes().get(i).copied()
    }

    /// The char starting at `i` (which must be a char boundary) and its length.
    fn char_at(&self, i: usize) -> Result<(char, usize), ParseError> {
        self.src
            .get(i..)
            .and_then(|s| s.chars().next())
            .map(|c| (c, c.len_utf8()))
            .ok_or_else(|| {
                err(
                    ParseErrorKind::Syntax,
                    i,
                    i + 1,
                    "a word that is not on character boundaries",
                )
            })
    }

    /// Lowers `src[start..end]` as one word.
    pub(crate) fn word(
        &mut self,
        start: usize,
        end: usize,
        opts: WordOpts,
    ) -> Result<Word, ParseError> {
        self.steps += (end.saturating_sub(start) + 1) as u64;
        let parts = self.lex_unquoted(start, end, opts)?;
        Ok(Word {
            span: Span::new(start, end),
            parts,
        })
    }

    /// `src[a..b]` split at its unquoted blanks: the words bash makes of text tree-sitter
    /// read as one word (`` `a` `b` `` as one backtick substitution, `{ }` as one word).
    /// Quotes, escapes and every expansion are skipped whole.
    #[cfg(feature = "paranoid")]
    pub(crate) fn split_blanks(&mut self, a: usize, b: usize) -> Result<Vec<Span>, ParseError> {
        let mut out = Vec::new();
        let mut start = a;
        let mut i = a;
        while i < b {
            let Some(c) = self.byte(i) else { break };
            let next = self.byte(i + 1).filter(|_| i + 1 < b);
            let last = match c {
                b' ' | b'\t' => {
                    if start < i {
                        out.push(Span::new(start, i));
                    }
                    start = i + 1;
                    i
                }
                b'\\' => i + 1,
                b'\'' => self.scanner(b).single_quote_end(i)?,
                b'"' => self.scanner(b).dq_end(i)?,
                b'`' => self.scanner(b).backtick_end(i, false)?,
                b'<' | b'>' if next == Some(b'(') => self.scanner(b).paren_end(i + 1)?,
                b'*' | b'?' | b'+' | b'@' | b'!' if next == Some(b'(') => {
                    self.scanner(b).arith_paren_end(i + 1)?
                }
                b'$' => match next {
                    Some(b'\'') => self.scanner(b).ansi_c_end(i + 1)?,
                    Some(b'"') => self.scanner(b).dq_end(i + 1)?,
                    Some(b'[') => (i + 2..b)
                        .find(|&j| self.byte(j) == Some(b']'))
                        .unwrap_or(i),
                    Some(b'(' | b'{') => self.skip_dollar(i, b)?,
                    _ => i,
                },
                _ => i,
            };
            i = last + 1;
        }
        if start < b {
            out.push(Span::new(start, b));
        }
        // bash removes a backslash-newline before it splits words: `} \<newline> {` is two
        // words, not three.
        out.retain(|s| {
            let text = self.src.as_bytes().get(s.range()).unwrap_or_default();
            !text.chunks(2).all(|c| c == b"\\\n")
        });
        Ok(out)
    }

    /// `name[sub]=value` as one word, its subscript lexed as a subscript.
    pub(crate) fn word_with_subscript(
        &mut self,
        s: Span,
        lb: usize,
        rb: usize,
    ) -> Result<Word, ParseError> {
        let mut parts = self.lex_unquoted(s.start, lb, DECL)?;
        parts.extend(self.lex_unquoted(lb, rb, SUBSCRIPT)?);
        parts.extend(self.lex_unquoted(rb, s.end, DECL)?);
        let mut merged: Vec<WordPart> = Vec::new();
        for p in parts {
            match (merged.last_mut(), p) {
                (Some(WordPart::Literal(a)), WordPart::Literal(b)) => a.push_str(&b),
                (_, p) => merged.push(p),
            }
        }
        Ok(Word {
            span: s,
            parts: merged,
        })
    }

    fn lex_unquoted(
        &mut self,
        a: usize,
        b: usize,
        opts: WordOpts,
    ) -> Result<Vec<WordPart>, ParseError> {
        self.enter(a)?;
        let r = super::with_stack(|| self.lex_unquoted_inner(a, b, opts));
        self.leave();
        r
    }

    fn lex_unquoted_inner(
        &mut self,
        a: usize,
        b: usize,
        opts: WordOpts,
    ) -> Result<Vec<WordPart>, ParseError> {
        let mut p = Parts::default();
        let mut i = a;
        let mut seen_eq = false;
        let mut tilde_at = if opts.tilde == TildeMode::Off {
            None
        } else {
            Some(a)
        };
        while i < b {
            let Some(c) = self.byte(i) else { break };
            if c == b'~' && tilde_at == Some(i) {
                if let Some((user, next)) = self.tilde_prefix(i, b) {
                    p.push(WordPart::Tilde(user));
                    i = next;
                    continue;
                }
            }
            let next = self.byte(i + 1).filter(|_| i + 1 < b);
            match c {
                b'\\' => match next {
                    Some(b'\n') => i += 2,
                    Some(_) => {
                        let (ch, len) = self.char_at(i + 1)?;
                        p.lit.push(ch);
                        i += 1 + len;
                    }
                    None => {
                        p.lit.push('\\');
                        i += 1;
                    }
                },
                b'\'' if opts.squote_literal => {
                    p.lit.push('\'');
                    i += 1;
                }
                b'\'' => {
                    let e = self.scanner(b).single_quote_end(i)?;
                    p.push(WordPart::SingleQuoted(self.text(i + 1, e)?.to_string()));
                    i = e + 1;
                }
                b'"' | b'`' => {
                    let (part, n) = self.lx_quoted_or_subst(c, i, b)?;
                    p.push(part);
                    i = n;
                }
                b'<' | b'>' if next == Some(b'(') => {
                    let (part, n) = self.lx_quoted_or_subst(c, i, b)?;
                    p.push(part);
                    i = n;
                }
                b'$' => {
                    let (part, n) = self.lex_dollar(i, b, opts.squote_literal)?;
                    match part {
                        Some(part) => p.push(part),
                        None => p.lit.push('$'),
                    }
                    i = n;
                }
                b'*' | b'?' | b'+' | b'@' | b'!' if opts.glob && next == Some(b'(') => {
                    let e = self.scanner(b).arith_paren_end(i + 1)?;
                    let text = self.text(i, e + 1)?;
                    if text.contains('$')
                        || text.contains('`')
                        || text.contains("<(")
                        || text.contains(">(")
                    {
                        return Err(err(
                            ParseErrorKind::Unsupported,
                            i,
                            e + 1,
                            "an extended glob with an expansion inside is not supported",
                        ));
                    }
                    p.push(WordPart::Glob(text.to_string()));
                    i = e + 1;
                }
                b'*' | b'?' if opts.glob => {
                    p.push(WordPart::Glob((c as char).to_string()));
                    i += 1;
                }
                b'[' if opts.glob => match self.bracket_end(i, b) {
                    BracketEnd::Simple(e) => {
                        p.push(WordPart::Glob(self.text(i, e + 1)?.to_string()));
                        i = e + 1;
                    }
                    BracketEnd::Complex => {
                        // Quotes or expansions inside: mark the word as a glob and keep
                        // lexing the inside normally.
                        p.push(WordPart::Glob("[".into()));
                        i += 1;
                    }
                    BracketEnd::None => {
                        p.lit.push('[');
                        i += 1;
                    }
                },
                b'{' if opts.brace => match self.brace_end(i, b)? {
                    Some((e, plain)) => {
                        if plain {
                            p.push(WordPart::Brace(self.text(i, e + 1)?.to_string()));
                            i = e + 1;
                        } else {
                            p.push(WordPart::Brace("{".into()));
                            i += 1;
                        }
                    }
                    None => {
                        p.lit.push('{');
                        i += 1;
                    }
                },
                c if super::guards::is_meta(c) && !opts.allow_meta => {
                    return Err(err(
                        ParseErrorKind::Unsupported,
                        i,
                        i + 1,
                        format!(
                            "an unquoted `{}` inside one word: the parser and bash would split this differently",
                            (c as char).escape_default()
                        ),
                    ));
                }
                _ => {
                    let (ch, len) = self.char_at(i)?;
                    p.lit.push(ch);
                    i += len;
                    if ch == '=' && !seen_eq {
                        seen_eq = true;
                        if opts.tilde != TildeMode::Off {
                            tilde_at = Some(i);
                        }
                    } else if ch == ':' && opts.tilde == TildeMode::Assign {
                        tilde_at = Some(i);
                    }
                }
            }
        }
        Ok(p.finish())
    }

    /// `"..."`, a backtick substitution or a process substitution starting at `i`.
    #[inline(never)]
    fn lx_quoted_or_subst(
        &mut self,
        c: u8,
        i: usize,
        b: usize,
    ) -> Result<(WordPart, usize), ParseError> {
        match c {
            b'"' => {
                let e = self.scanner(b).dq_end(i)?;
                let inner = self.lex_dq(i + 1, e, None)?;
                Ok((WordPart::DoubleQuoted(inner), e + 1))
            }
            b'`' => {
                let e = self.scanner(b).backtick_end(i, false)?;
                let script = self.parse_range(i + 1, e)?;
                Ok((WordPart::CommandSubst(script), e + 1))
            }
            _ => {
                let e = self.scanner(b).paren_end(i + 1)?;
                let script = self.parse_range(i + 2, e)?;
                Ok((
                    WordPart::ProcessSubst {
                        output: c == b'>',
                        script,
                    },
                    e + 1,
                ))
            }
        }
    }

    /// A tilde prefix at `i`: the user name (possibly empty) and where it ends.
    fn tilde_prefix(&self, i: usize, b: usize) -> Option<(String, usize)> {
        let mut j = i + 1;
        while j < b {
            let c = self.byte(j)?;
            // bash ends a tilde prefix at `:` in any word (`~:` is `$HOME:`).
            if c == b'/' || c == b':' {
                break;
            }
            if !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.')) {
                return None;
            }
            j += 1;
        }
        Some((self.src.get(i + 1..j)?.to_string(), j))
    }

    /// For `[` at `i`: the offset of a closing `]` in the word, and whether the bracket
    /// expression is plain text (no quotes, escapes or expansions).
    fn bracket_end(&self, i: usize, b: usize) -> BracketEnd {
        // Bounded look-ahead keeps hostile words (`[[[[...`) linear; past the bound the
        // `[` is taken as a glob, which only makes the word dynamic.
        let limit = b.min(i + SCAN_LIMIT);
        let mut j = i + 1;
        if matches!(self.byte(j), Some(b'!' | b'^')) {
            j += 1;
        }
        if self.byte(j) == Some(b']') {
            j += 1;
        }
        let mut simple = true;
        while j < limit {
            match self.byte(j) {
                Some(b']') => {
                    return if simple {
                        BracketEnd::Simple(j)
                    } else {
                        BracketEnd::Complex
                    }
                }
                Some(b'\'' | b'"' | b'\\' | b'$' | b'`') => simple = false,
                None => break,
                _ => {}
            }
            j += 1;
        }
        if limit < b {
            BracketEnd::Complex
        } else {
            BracketEnd::None
        }
    }

    /// For `{` at `i`: whether it opens a brace expansion (a matching `}` with an unquoted
    /// top-level `,` or `..`); returns the `}` and whether the inside is plain text.
    fn brace_end(&mut self, i: usize, b: usize) -> Result<Option<(usize, bool)>, ParseError> {
        // Bounded look-ahead (see `bracket_end`): past the bound, or on a quote we cannot
        // close within it, the `{` is taken as a brace expansion (the word is dynamic).
        let limit = b.min(i + SCAN_LIMIT);
        let give_up = Ok(Some((i, false)));
        let mut depth = 0usize;
        let mut j = i + 1;
        let mut plain = true;
        let mut expands = false;
        while j < limit {
            let Some(c) = self.byte(j) else { break };
            match c {
                b'{' => depth += 1,
                b'}' if depth == 0 => {
                    return Ok(expands.then_some((j, plain)));
                }
                b'}' => depth -= 1,
                b',' if depth == 0 => expands = true,
                b'.' if depth == 0 && self.byte(j + 1) == Some(b'.') => expands = true,
                b'\\' => {
                    plain = false;
                    j += 1;
                }
                b'\'' => {
                    plain = false;
                    match self.scanner(limit).single_quote_end(j) {
                        Ok(e) => j = e,
                        Err(_) => return give_up,
                    }
                }
                b'"' => {
                    plain = false;
                    match self.scanner(limit).dq_end(j) {
                        Ok(e) => j = e,
                        Err(_) => return give_up,
                    }
                }
                b'$' | b'`' | b'<' | b'>' => plain = false,
                _ => {}
            }
            j += 1;
        }
        if limit < b {
            give_up
        } else {
            Ok(None)
        }
    }

    /// Double-quoted text (or an unquoted here-document body when `heredoc` is set, with
    /// its tab stripping).
    fn lex_dq(
        &mut self,
        a: usize,
        b: usize,
        heredoc: Option<bool>,
    ) -> Result<Vec<WordPart>, ParseError> {
        self.enter(a)?;
        let r = super::with_stack(|| self.lex_dq_inner(a, b, heredoc));
        self.leave();
        r
    }

    fn lex_dq_inner(
        &mut self,
        a: usize,
        b: usize,
        heredoc: Option<bool>,
    ) -> Result<Vec<WordPart>, ParseError> {
        let mut p = Parts::default();
        let strip = heredoc == Some(true);
        let mut i = a;
        if strip {
            while i < b && self.byte(i) == Some(b'\t') {
                i += 1;
            }
        }
        while i < b {
            let Some(c) = self.byte(i) else { break };
            match c {
                b'\\' => {
                    let next = self.byte(i + 1).filter(|_| i + 1 < b);
                    match next {
                        Some(b'\n') => i += 2,
                        Some(n @ (b'$' | b'`' | b'\\')) => {
                            p.lit.push(n as char);
                            i += 2;
                        }
                        Some(b'"') if heredoc.is_none() => {
                            p.lit.push('"');
                            i += 2;
                        }
                        _ => {
                            p.lit.push('\\');
                            i += 1;
                        }
                    }
                }
                b'$' => {
                    let (part, n) = self.lex_dollar(i, b, true)?;
                    match part {
                        Some(part) => p.push(part),
                        None => p.lit.push('$'),
                    }
                    i = n;
                }
                b'`' => {
                    let e = self.scanner(b).backtick_end(i, heredoc.is_none())?;
                    let script = self.parse_range(i + 1, e)?;
                    p.push(WordPart::CommandSubst(script));
                    i = e + 1;
                }
                b'\n' => {
                    p.lit.push('\n');
                    i += 1;
                    if strip {
                        while i < b && self.byte(i) == Some(b'\t') {
                            i += 1;
                        }
                    }
                }
                _ => {
                    let (ch, len) = self.char_at(i)?;
                    p.lit.push(ch);
                    i += len;
                }
            }
        }
        Ok(p.finish())
    }

    /// A `$` at `i`: the expansion it starts (or `None` for a literal `$`) and where the
    /// lexing continues.
    fn lex_dollar(
        &mut self,
        i: usize,
        b: usize,
        in_dq: bool,
    ) -> Result<(Option<WordPart>, usize), ParseError> {
        let next = self.byte(i + 1).filter(|_| i + 1 < b);
        match next {
            Some(b'(') => self.lx_dollar_paren(i, b),
            Some(b'{') => self.lx_dollar_brace(i, b, in_dq),
            Some(b'[') => {
                let e = (i + 2..b)
                    .find(|&j| self.byte(j) == Some(b']'))
                    .ok_or_else(|| err(ParseErrorKind::Missing, i, b, "an unterminated $[...]"))?;
                let ar = self.arith(i + 2, e)?;
                Ok((Some(WordPart::Arithmetic(ar)), e + 1))
            }
            Some(b'\'') if !in_dq => self.lx_ansi_c(i, b),
            Some(b'"') if !in_dq => {
                let e = self.scanner(b).dq_end(i + 1)?;
                let inner = self.lex_dq(i + 2, e, None)?;
                Ok((Some(WordPart::DoubleQuoted(inner)), e + 1))
            }
            Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
                let mut e = i + 1;
                while self
                    .byte(e)
                    .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric())
                    && e < b
                {
                    e += 1;
                }
                let name = self.text(i + 1, e)?.to_string();
                Ok((Some(WordPart::Param(plain_param(name, Span::new(i, e)))), e))
            }
            Some(c)
                if c.is_ascii_digit()
                    || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') =>
            {
                let name = (c as char).to_string();
                Ok((
                    Some(WordPart::Param(plain_param(name, Span::new(i, i + 2)))),
                    i + 2,
                ))
            }
            _ => Ok((None, i + 1)),
        }
    }

    #[inline(never)]
    fn lx_dollar_paren(
        &mut self,
        i: usize,
        b: usize,
    ) -> Result<(Option<WordPart>, usize), ParseError> {
        if self.byte(i + 2) == Some(b'(') {
            if let Some(e) = self.scanner(b).arith_dollar_end(i)? {
                let ar = self.arith(i + 3, e - 1)?;
                return Ok((Some(WordPart::Arithmetic(ar)), e + 1));
            }
        }
        let e = self.scanner(b).paren_end(i + 1)?;
        let script = self.parse_range(i + 2, e)?;
        Ok((Some(WordPart::CommandSubst(script)), e + 1))
    }

    #[inline(never)]
    fn lx_dollar_brace(
        &mut self,
        i: usize,
        b: usize,
        in_dq: bool,
    ) -> Result<(Option<WordPart>, usize), ParseError> {
        let e = self.scanner(b).brace_param_end(i + 1)?;
        let param = self.param(i, i + 2, e, in_dq)?;
        Ok((Some(WordPart::Param(param)), e + 1))
    }

    #[inline(never)]
    fn lx_ansi_c(&mut self, i: usize, b: usize) -> Result<(Option<WordPart>, usize), ParseError> {
        let e = self.scanner(b).ansi_c_end(i + 1)?;
        let raw = self.text(i + 2, e)?;
        let decoded = super::ansi_c::decode(raw).map_err(|off| {
            err(
                ParseErrorKind::Unsupported,
                i + 2 + off,
                (i + 4 + off).min(e),
                "a $'...' escape that yields a NUL byte or invalid UTF-8",
            )
        })?;
        Ok((Some(WordPart::AnsiC(decoded)), e + 1))
    }

    /// `${...}`: `dollar` is the `$`, the text is `src[a..e]`, `e` is the closing brace.
    fn param(
        &mut self,
        dollar: usize,
        a: usize,
        e: usize,
        in_dq: bool,
    ) -> Result<Param, ParseError> {
        self.enter(a)?;
        let r = super::with_stack(|| self.param_inner(dollar, a, e, in_dq));
        self.leave();
        r
    }

    fn param_inner(
        &mut self,
        dollar: usize,
        a: usize,
        e: usize,
        in_dq: bool,
    ) -> Result<Param, ParseError> {
        let span = Span::new(dollar, e + 1);
        let bad = |msg: &str| {
            err(
                ParseErrorKind::Syntax,
                dollar,
                e + 1,
                format!("bad substitution: {msg}"),
            )
        };
        let mut p = plain_param(String::new(), span);
        let mut i = a;
        let is_name_start = |c: Option<u8>| {
            c.is_some_and(|c| {
                c == b'_'
                    || c.is_ascii_alphanumeric()
                    || matches!(c, b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-')
            })
        };
        if self.byte(i) == Some(b'#') && i + 1 < e && is_name_start(self.byte(i + 1)) {
            p.operator = Some("#".into());
            i += 1;
        } else if self.byte(i) == Some(b'!') && i + 1 < e && is_name_start(self.byte(i + 1)) {
            p.indirect = true;
            i += 1;
        }
        // The name.
        let ns = i;
        match self.byte(i) {
            Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
                while i < e
                    && self
                        .byte(i)
                        .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric())
                {
                    i += 1;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while i < e && self.byte(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
            }
            Some(b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') if i < e => i += 1,
            _ => return Err(bad("no parameter name")),
        }
        p.name = self.text(ns, i)?.to_string();
        // A subscript.
        if self.byte(i) == Some(b'[') && i < e {
            let close = self.subscript_end(i, e)?;
            let w = self.word(i + 1, close, SUBSCRIPT)?;
            let t = self.text(i + 1, close)?;
            if t != "@" && t != "*" {
                // The subscript word already holds its expansions; keep only the names.
                let mut ar = self.arith(i + 1, close)?;
                ar.words.clear();
                p.arithmetic.push(ar);
            }
            p.subscript = Some(w);
            i = close + 1;
        }
        if i == e {
            return Ok(p);
        }
        if p.indirect
            && matches!(self.byte(i), Some(b'*' | b'@'))
            && i + 1 == e
            && p.subscript.is_none()
        {
            p.indirect = false;
            p.operator = Some(format!("!{}", self.byte(i).map(char::from).unwrap_or('*')));
            return Ok(p);
        }
        if p.operator.is_some() {
            return Err(bad("an operator after a length expansion"));
        }
        // Quotes inside a nested `$(...)` are real quotes; only a top-level one is literal.
        if in_dq && self.find_top(i, e, b'\'', true)?.is_some() {
            return Err(err(
                ParseErrorKind::Unsupported,
                i,
                e,
                "a single quote inside ${...} within double quotes (bash keeps it literally) is not supported",
            ));
        }
        const OPS: &[&str] = &[
            ":-", ":=", ":?", ":+", "##", "%%", "//", "/#", "/%", "^^", ",,", "-", "=", "?", "+",
            "#", "%", "/", "^", ",", "@", ":",
        ];
        let rest = self.text(i, e)?;
        let op = OPS
            .iter()
            .find(|o| rest.starts_with(*o))
            .ok_or_else(|| bad("an unknown operator"))?;
        let after = i + op.len();
        match *op {
            "@" => {
                let t = self.text(after, e)?;
                if t.len() != 1 || !t.bytes().all(|c| c.is_ascii_alphabetic()) {
                    return Err(bad("an unknown transformation"));
                }
                p.operator = Some(format!("@{t}"));
            }
            ":" => {
                p.operator = Some(":".into());
                let split = self.find_top(after, e, b':', in_dq)?;
                match split {
                    Some(k) => {
                        p.arithmetic.push(self.arith(after, k)?);
                        p.arithmetic.push(self.arith(k + 1, e)?);
                    }
                    None => p.arithmetic.push(self.arith(after, e)?),
                }
            }
            "/" | "//" | "/#" | "/%" => {
                p.operator = Some((*op).to_string());
                match self.find_top(after, e, b'/', in_dq)? {
                    Some(k) => {
                        p.words.push(self.word(after, k, PARAM_WORD)?);
                        p.words.push(self.word(k + 1, e, PARAM_WORD)?);
                    }
                    None => p.words.push(self.word(after, e, PARAM_WORD)?),
                }
            }
            _ => {
                p.operator = Some((*op).to_string());
                p.words.push(self.word(after, e, PARAM_WORD)?);
            }
        }
        Ok(p)
    }

    /// For `[` at `i` inside `${...}` ending at `e`: the matching `]`.
    fn subscript_end(&mut self, i: usize, e: usize) -> Result<usize, ParseError> {
        let mut depth = 0usize;
        let mut j = i;
        while j < e {
            match self.byte(j) {
                Some(b'[') => depth += 1,
                Some(b']') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(j);
                    }
                }
                Some(b'\\') => j += 1,
                Some(b'\'') => j = self.scanner(e).single_quote_end(j)?,
                Some(b'"') => j = self.scanner(e).dq_end(j)?,
                Some(b'`') => j = self.scanner(e).backtick_end(j, false)?,
                Some(b'$') => j = self.skip_dollar(j, e)?,
                _ => {}
            }
            j += 1;
        }
        Err(err(
            ParseErrorKind::Syntax,
            i,
            e,
            "an unterminated subscript",
        ))
    }

    /// Skips the expansion starting with the `$` at `j`; returns its last byte.
    fn skip_dollar(&mut self, j: usize, e: usize) -> Result<usize, ParseError> {
        match self.byte(j + 1) {
            Some(b'(') => {
                if self.byte(j + 2) == Some(b'(') {
                    if let Some(end) = self.scanner(e).arith_dollar_end(j)? {
                        return Ok(end);
                    }
                }
                self.scanner(e).paren_end(j + 1)
            }
            Some(b'{') => self.scanner(e).brace_param_end(j + 1),
            _ => Ok(j),
        }
    }

    /// The first top-level `target` byte in `src[a..e]`, skipping quotes and expansions.
    fn find_top(
        &mut self,
        a: usize,
        e: usize,
        target: u8,
        in_dq: bool,
    ) -> Result<Option<usize>, ParseError> {
        let mut j = a;
        while j < e {
            match self.byte(j) {
                Some(c) if c == target => return Ok(Some(j)),
                Some(b'\\') => j += 1,
                Some(b'\'') if !in_dq => j = self.scanner(e).single_quote_end(j)?,
                Some(b'"') => j = self.scanner(e).dq_end(j)?,
                Some(b'`') => j = self.scanner(e).backtick_end(j, in_dq)?,
                Some(b'$') => j = self.skip_dollar(j, e)?,
                _ => {}
            }
            j += 1;
        }
        Ok(None)
    }

    /// Analyses arithmetic text `src[a..e]`.
    pub(crate) fn arith(&mut self, a: usize, e: usize) -> Result<Arithmetic, ParseError> {
        self.enter(a)?;
        let mut ar = Arithmetic {
            span: Span::new(a, e),
            variables: vec![],
            assigns: vec![],
            words: vec![],
        };
        let r = self.arith_into(a, e, &mut ar);
        self.leave();
        r?;
        dedup(&mut ar.variables);
        dedup(&mut ar.assigns);
        Ok(ar)
    }

    fn arith_into(&mut self, a: usize, e: usize, ar: &mut Arithmetic) -> Result<(), ParseError> {
        let mut i = a;
        let mut prefix_incdec = false;
        let skip_ws = |s: &Self, mut j: usize| {
            while j < e && s.byte(j).is_some_and(|c| c.is_ascii_whitespace()) {
                j += 1;
            }
            j
        };
        while i < e {
            let Some(c) = self.byte(i) else { break };
            match c {
                c if c.is_ascii_whitespace() => i += 1,
                c if c.is_ascii_digit() => {
                    while i < e
                        && self.byte(i).is_some_and(|c| {
                            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'#' | b'@')
                        })
                    {
                        i += 1;
                    }
                    prefix_incdec = false;
                }
                c if c == b'_' || c.is_ascii_alphabetic() => {
                    let s = i;
                    while i < e
                        && self
                            .byte(i)
                            .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric())
                    {
                        i += 1;
                    }
                    let name = self.text(s, i)?.to_string();
                    ar.variables.push(name.clone());
                    let mut j = skip_ws(self, i);
                    if self.byte(j) == Some(b'[') && j < e {
                        let close = self.subscript_end(j, e)?;
                        self.arith_into(j + 1, close, ar)?;
                        j = close + 1;
                    }
                    let k = skip_ws(self, j);
                    let rest = self.src.get(k..e).unwrap_or("");
                    let assign_op = ["<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|="]
                        .iter()
                        .any(|o| rest.starts_with(o))
                        || (rest.starts_with('=') && !rest.starts_with("=="));
                    let postfix = rest.starts_with("++") || rest.starts_with("--");
                    if prefix_incdec || assign_op || postfix {
                        ar.assigns.push(name);
                    }
                    prefix_incdec = false;
                    i = if postfix { k + 2 } else { j };
                }
                b'$' => {
                    let (part, n) = self.lex_dollar(i, e, true)?;
                    if let Some(part) = part {
                        if let WordPart::Param(p) = &part {
                            // `${#x}` is x's length, a number: x's value is not evaluated.
                            let length = p.operator.as_deref() == Some("#") && p.words.is_empty();
                            if is_name(&p.name) && !p.indirect && !length {
                                ar.variables.push(p.name.clone());
                            }
                        }
                        ar.words.push(Word {
                            span: Span::new(i, n),
                            parts: vec![part],
                        });
                    }
                    i = n;
                }
                b'`' => {
                    let end = self.scanner(e).backtick_end(i, false)?;
                    let script = self.parse_range(i + 1, end)?;
                    ar.words.push(Word {
                        span: Span::new(i, end + 1),
                        parts: vec![WordPart::CommandSubst(script)],
                    });
                    i = end + 1;
                }
                b'"' => {
                    let end = self.scanner(e).dq_end(i)?;
                    let inner = self.lex_dq(i + 1, end, None)?;
                    self.arith_into(i + 1, end, ar)?;
                    ar.words.push(Word {
                        span: Span::new(i, end + 1),
                        parts: vec![WordPart::DoubleQuoted(inner)],
                    });
                    i = end + 1;
                }
                // Quotes do not quote in arithmetic (bash expands it as if double-quoted):
                // step over the quote so that what it encloses is still analysed.
                b'\'' => i += 1,
                b'+' | b'-' if self.byte(i + 1) == Some(c) && i + 1 < e => {
                    prefix_incdec = true;
                    i += 2;
                }
                // The escaped character whole: it may be more than one byte.
                b'\\' => i += 1 + self.char_at(i + 1).map_or(1, |(_, len)| len),
                _ => {
                    if c >= 0x80 {
                        let (_, len) = self.char_at(i)?;
                        i += len;
                    } else {
                        i += 1;
                    }
                    prefix_incdec = false;
                }
            }
        }
        Ok(())
    }

    /// The body of a here-document as a word.
    pub(crate) fn heredoc_body(&mut self, h: &HereDocSite) -> Result<HereDoc, ParseError> {
        let (a, b) = (h.body.start, h.body.end);
        let parts = if h.quoted {
            let text = self.text(a, b)?;
            let body = if h.strip_tabs {
                text.split_inclusive('\n')
                    .map(|l| l.trim_start_matches('\t'))
                    .collect::<String>()
            } else {
                text.to_string()
            };
            if body.is_empty() {
                vec![]
            } else {
                vec![WordPart::Literal(body)]
            }
        } else {
            self.lex_dq(a, b, Some(h.strip_tabs))?
        };
        Ok(HereDoc {
            quoted: h.quoted,
            body: Word {
                span: h.body,
                parts,
            },
        })
    }
}

fn plain_param(name: String, span: Span) -> Param {
    Param {
        name,
        span,
        indirect: false,
        operator: None,
        subscript: None,
        words: vec![],
        arithmetic: vec![],
    }
}

fn dedup(v: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    v.retain(|s| seen.insert(s.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(src: &str, opts: WordOpts) -> Result<Word, ParseError> {
        Ctx::new(src, Limits::default()).word(0, src.len(), opts)
    }

    fn parts(src: &str) -> Vec<WordPart> {
        word(src, ARG).unwrap().parts
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(parts("\\r\\m"), [WordPart::Literal("rm".into())]);
        assert_eq!(
            parts("a'b'\"c\"$'d'"),
            [
                WordPart::Literal("a".into()),
                WordPart::SingleQuoted("b".into()),
                WordPart::DoubleQuoted(vec![WordPart::Literal("c".into())]),
                WordPart::AnsiC("d".into())
            ]
        );
        assert_eq!(
            parts("\"\\$x\\q\""),
            [WordPart::DoubleQuoted(vec![WordPart::Literal(
                "$x\\q".into()
            )])]
        );
    }

    #[test]
    fn tilde_rules() {
        assert_eq!(parts("~"), [WordPart::Tilde(String::new())]);
        assert_eq!(parts("~+/x")[0], WordPart::Tilde("+".into()));
        assert_eq!(parts("~\"u\"")[0], WordPart::Literal("~".into()));
        assert_eq!(
            word("a:~/b", ASSIGN).unwrap().parts[1],
            WordPart::Tilde(String::new())
        );
        assert_eq!(parts("a:~/b"), [WordPart::Literal("a:~/b".into())]);
        assert_eq!(parts("~:x")[0], WordPart::Tilde(String::new()));
    }

    #[test]
    fn braces_and_globs() {
        assert_eq!(parts("{a,b}"), [WordPart::Brace("{a,b}".into())]);
        assert_eq!(parts("{a..c}"), [WordPart::Brace("{a..c}".into())]);
        assert_eq!(parts("{a}"), [WordPart::Literal("{a}".into())]);
        assert_eq!(parts("{'a',b}")[0], WordPart::Brace("{".into()));
        assert_eq!(
            word("{a,b}", ASSIGN).unwrap().static_value().as_deref(),
            Some("{a,b}")
        );
        assert_eq!(parts("[]a]"), [WordPart::Glob("[]a]".into())]);
        assert_eq!(parts("a["), [WordPart::Literal("a[".into())]);
        assert_eq!(
            word("*", ASSIGN).unwrap().static_value().as_deref(),
            Some("*")
        );
    }

    #[test]
    fn dollar_forms() {
        assert_eq!(parts("$"), [WordPart::Literal("$".into())]);
        assert_eq!(parts("$%"), [WordPart::Literal("$%".into())]);
        match &parts("$HOME/x")[0] {
            WordPart::Param(p) => {
                assert_eq!(p.name, "HOME");
                assert_eq!(p.span, Span::new(0, 5));
            }
            other => panic!("{other:?}"),
        }
        match &parts("${#x}")[0] {
            WordPart::Param(p) => {
                assert_eq!((p.name.as_str(), p.operator.as_deref()), ("x", Some("#")))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(word("${x", ARG).unwrap_err().kind, ParseErrorKind::Missing);
        assert_eq!(word("${}", ARG).unwrap_err().kind, ParseErrorKind::Syntax);
        assert_eq!(word("${x;}", ARG).unwrap_err().kind, ParseErrorKind::Syntax);
    }

    #[test]
    fn metacharacters_inside_a_word_are_a_disagreement() {
        assert_eq!(
            word("a b", ARG).unwrap_err().kind,
            ParseErrorKind::Unsupported
        );
        assert_eq!(
            word("a;b", ARG).unwrap_err().kind,
            ParseErrorKind::Unsupported
        );
        assert!(word("a b", REGEX).is_ok());
    }

    #[test]
    fn arithmetic_names() {
        let mut ctx = Ctx::new("a[b[c]]+=d++ + --e * $f - 0x1f + 16#ff", Limits::default());
        let a = ctx.arith(0, ctx.src.len()).unwrap();
        assert_eq!(a.variables, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(a.assigns, ["a", "d", "e"]);
        assert_eq!(a.words.len(), 1);
    }

    #[test]
    fn heredoc_bodies() {
        let src = "\tx $(id)\n\t\\$y\n";
        let mut ctx = Ctx::new(src, Limits::default());
        let site = super::super::scan::HereDocSite::for_tests(true, false, Span::new(0, src.len()));
        let h = ctx.heredoc_body(&site).unwrap();
        assert_eq!(h.body.parts[0], WordPart::Literal("x ".into()));
        assert!(matches!(h.body.parts[1], WordPart::CommandSubst(_)));
        assert_eq!(h.body.parts[2], WordPart::Literal("\n$y\n".into()));
    }
}
