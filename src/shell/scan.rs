//! A lexical pre-pass over command text, independent of tree-sitter.
//!
//! It follows bash's quoting contexts (quotes, `$(...)`, backticks, `${...}`, arithmetic,
//! `[[ ]]`, comments, here-document bodies) closely enough to
//! - apply the guards that need context (line continuations inside words, escapes inside
//!   backticks, unquoted here-document bodies),
//! - find every redirection operator and here-document, and
//! - find where a substitution ends, for the word lowering.
//!
//! tree-sitter-bash misreads several redirections (`<>`, two here-docs on a line, `<<<` after
//! another redirection, tab-indented `<<-` bodies). So the pre-pass rewrites each redirection
//! operator to a plain `<` padded with blanks (same length, so every byte offset stays valid)
//! and blanks here-document bodies; the lowering gets the real operator back from a
//! [`Site`] keyed by the operator's offset. Every site must be claimed by the lowering and
//! every redirection node must have a site: a disagreement is an error, never a guess.

use super::guards;
use super::{ParseError, ParseErrorKind, RedirectOp, Span};

/// A redirection operator found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    /// Offset of the operator's first byte (the fd digits come before it).
    pub pos: usize,
    /// Length of the operator.
    pub len: usize,
    /// The explicit fd, with the offset where its digits start.
    pub fd: Option<(u32, usize)>,
    /// The operator; `>&` is `DupOut` here and resolved against its target later.
    pub op: RedirectOp,
    /// For `<<` and `<<-`: the here-document.
    pub heredoc: Option<HereDocSite>,
}

/// A here-document found by the pre-pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HereDocSite {
    /// `<<-`: leading tabs are stripped from body lines.
    pub strip_tabs: bool,
    /// Whether any part of the delimiter was quoted.
    pub quoted: bool,
    /// The delimiter after quote removal.
    pub delimiter: String,
    /// The body text (without the delimiter line).
    pub body: Span,
    /// The body, if found yet.
    found: bool,
}

impl HereDocSite {
    /// A here-document whose body is found by the parser (see [`Scanner::heredoc_body_at`]).
    pub(crate) fn new(strip_tabs: bool, quoted: bool, delimiter: String) -> Self {
        HereDocSite {
            strip_tabs,
            quoted,
            delimiter,
            body: Span::default(),
            found: true,
        }
    }
}

#[cfg(test)]
impl HereDocSite {
    /// A found here-document, for tests of the body lowering.
    pub(crate) fn for_tests(strip_tabs: bool, quoted: bool, body: Span) -> Self {
        HereDocSite {
            strip_tabs,
            quoted,
            delimiter: "EOF".into(),
            body,
            found: true,
        }
    }
}

/// Where a scan stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    /// The end of the range.
    #[cfg_attr(not(feature = "paranoid"), allow(dead_code))]
    End,
    /// The `)` matching an opened `$(`, `<(`, `>(`.
    Paren,
}

/// Position and counters of one command-context scan.
struct NormalState {
    i: usize,
    word_start: bool,
    /// Whether the next word is in command position (where `case` is a reserved word).
    cmd_pos: bool,
    parens: usize,
    /// For each open `(`: whether it opened a subshell (a word start in command position).
    subshells: Vec<bool>,
    cases: usize,
    /// Whether the next word may be an assignment: in command position, or after an
    /// assignment (where a reserved word is not recognized: `x=1 fi` runs `fi`).
    assign_ok: bool,
    /// The offsets of the word and the `=` of the assignment word being scanned.
    assign: Option<(usize, usize)>,
    /// The assignments before it in the same prefix.
    prefix: Vec<(usize, usize)>,
    /// Whether the prefix has a redirection (every assignment of it is then disguised).
    prefix_redirect: bool,
    /// Whether the word being scanned is the target of a redirection of the prefix.
    target: bool,
    /// Whether the word being scanned started where an assignment may be.
    prefix_word: bool,
}

impl NormalState {
    /// The assignment prefix of a command ends (a word that is not an assignment, a
    /// separator).
    fn end_prefix(&mut self) {
        self.prefix.clear();
        self.prefix_redirect = false;
        self.target = false;
    }
}

/// Reserved words that end a compound command.
const CLOSERS: &[&[u8]] = &[b"fi", b"done", b"esac", b"}"];

/// Reserved words bash recognizes right after a closer without a separator.
const AFTER_CLOSER: &[&[u8]] = &[
    b"fi", b"done", b"esac", b"}", b"then", b"do", b"else", b"elif",
];

/// Reserved words after which the next word is again in command position.
const LEADING_RESERVED: &[&[u8]] = &[
    b"then", b"do", b"else", b"elif", b"if", b"while", b"until", b"!", b"time", b"{", b"}",
];

/// The scanner over `src[..end]` (absolute offsets into the top-level text).
pub(crate) struct Scanner<'a> {
    s: &'a [u8],
    end: usize,
    /// Redirection sites found, in order.
    pub sites: Vec<Site>,
    /// Byte ranges to blank in the working copy (here-doc bodies and delimiter lines).
    pub blanks: Vec<(usize, usize)>,
    /// Single bytes to replace in the working copy (`;&` and `;;&` become `;;`, which
    /// tree-sitter-bash can parse; which case bodies run does not change what is checked).
    pub rewrites: Vec<(usize, u8)>,
    /// Text that the working copy replaces by `0` and blanks: arithmetic (`$((...))`,
    /// `((...))`, `$[...]`), which the lowering reads from the input with its own lexer and
    /// tree-sitter-bash rejects when valid (`1$(echo 2)`, `10#$x`), and backquoted bodies,
    /// which the lowering parses on their own.
    pub fills: Vec<(usize, usize)>,
    /// `;` written into the working copy between a closing reserved word (`fi`, `done`,
    /// `esac`, `}`, a subshell's `)`) and a reserved word right after it (`fi done`), which
    /// bash accepts and tree-sitter-bash does not: (closer start, closer end, offset of the
    /// `;`). The lowering checks that the tree has the closer as a token there.
    pub separators: Vec<(usize, usize, usize)>,
    /// Assignments in command position followed by a redirection (`x=1 >f`): the offset of
    /// the word and of its `=`. tree-sitter-bash cannot parse an assignment-only command with
    /// a redirection, so the working copy has the `=` replaced (the word becomes a program
    /// name to it) and the lowering reads the word back as an assignment.
    pub assignments: Vec<(usize, usize)>,
    pending: Vec<usize>,
    /// Bounds the recursion of nested contexts.
    depth: usize,
    max_depth: usize,
}

pub(crate) fn err(
    kind: ParseErrorKind,
    start: usize,
    end: usize,
    message: impl Into<String>,
) -> ParseError {
    ParseError {
        kind,
        span: Span::new(start, end),
        message: message.into(),
    }
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t')
}

/// Whether a byte ends a word for the reserved-word checks.
fn ends_word(b: Option<u8>) -> bool {
    b.is_none_or(guards::is_meta)
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(src: &'a str, end: usize, max_depth: usize) -> Self {
        Scanner {
            s: src.as_bytes(),
            end: end.min(src.len()),
            sites: Vec::new(),
            blanks: Vec::new(),
            rewrites: Vec::new(),
            fills: Vec::new(),
            separators: Vec::new(),
            assignments: Vec::new(),
            pending: Vec::new(),
            depth: 0,
            max_depth,
        }
    }

    fn at(&self, i: usize) -> Option<u8> {
        if i < self.end {
            self.s.get(i).copied()
        } else {
            None
        }
    }

    fn starts(&self, i: usize, pat: &str) -> bool {
        i + pat.len() <= self.end && self.s.get(i..i + pat.len()) == Some(pat.as_bytes())
    }

    fn enter(&mut self, pos: usize) -> Result<(), ParseError> {
        self.depth += 1;
        if super::stack_exhausted() {
            return Err(err(
                ParseErrorKind::TooDeep,
                pos,
                pos + 1,
                "the command nests too deeply for the stack available",
            ));
        }
        if self.depth > self.max_depth {
            return Err(err(
                ParseErrorKind::TooDeep,
                pos,
                pos + 1,
                format!("nesting deeper than {} levels", self.max_depth),
            ));
        }
        Ok(())
    }

    /// Scans a whole script from `start`.
    #[cfg_attr(not(feature = "paranoid"), allow(dead_code))]
    pub(crate) fn scan_script(&mut self, start: usize) -> Result<(), ParseError> {
        self.scan_normal(start, Term::End)?;
        if let Some(&p) = self.pending.first() {
            let pos = self.sites.get(p).map_or(start, |s| s.pos);
            return Err(err(
                ParseErrorKind::Missing,
                pos,
                pos + 2,
                "a here-document has no body (its command line never ends)",
            ));
        }
        Ok(())
    }

    /// For `$(` whose `(` is at `open`: the offset of the matching `)`.
    pub(crate) fn paren_end(&mut self, open: usize) -> Result<usize, ParseError> {
        self.scan_normal(open + 1, Term::Paren)
    }

    /// For a backtick at `open`: the offset of the closing backtick.
    ///
    /// Like bash, this is the first backtick not escaped by a backslash: quotes, `$(`,
    /// `${` inside do not count (`` `echo '`;rm x;`'` `` runs `rm`). The escapes that
    /// would change the inner text (`` \` ``, `\$`, `\\`, and `\"` inside double quotes)
    /// are refused, so the text between the backticks is exactly the script bash runs.
    pub(crate) fn backtick_end(&mut self, open: usize, in_dq: bool) -> Result<usize, ParseError> {
        let mut i = open + 1;
        while let Some(b) = self.at(i) {
            match b {
                b'`' => {
                    // The body is parsed on its own (from the input) by the word lowering;
                    // tree-sitter-bash need not read it (it refuses `` `echo a$` ``).
                    self.fills.push((open + 1, i));
                    return Ok(i);
                }
                b'\\' => {
                    match self.at(i + 1) {
                        // bash removes a backslash-newline from a backquoted body before it
                        // parses it, even inside quotes there (`b ' \<newline>x'` passes " x");
                        // the body's own parse keeps it inside quotes. Refused outright.
                        Some(b'\n') => {
                            return Err(err(
                                ParseErrorKind::SplitWord,
                                i,
                                i + 2,
                                "a backslash-newline inside backquotes (bash removes it even inside quotes there); write the substitution as $( ) or on one line",
                            ))
                        }
                        Some(n) => guards::check_backtick_escape(n, in_dq, i)?,
                        None => {}
                    }
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            open,
            self.end,
            "an unterminated backtick substitution",
        ))
    }

    /// For `"` at `open`: the offset of the closing quote.
    pub(crate) fn dq_end(&mut self, open: usize) -> Result<usize, ParseError> {
        self.scan_dq(open + 1)
    }

    /// For `${` whose `{` is at `open`: the offset of the matching `}`.
    pub(crate) fn brace_param_end(&mut self, open: usize) -> Result<usize, ParseError> {
        self.scan_brace_param(open + 1)
    }

    /// For `(` at `open` (of `$((` or `((`): the offset of its matching `)`, counting parens
    /// and skipping quotes only (arithmetic context).
    pub(crate) fn arith_paren_end(&mut self, open: usize) -> Result<usize, ParseError> {
        let mut depth = 0usize;
        let mut i = open;
        while let Some(b) = self.at(i) {
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                b'\\' => {
                    if self.at(i + 1) == Some(b'\n') {
                        guards::check_line_continuation(self.s, i, 0)?;
                    }
                    i += 1;
                }
                b'\'' => i = self.single_quote_end(i)?,
                b'"' => i = self.scan_dq(i + 1)?,
                b'`' => i = self.backtick_end(i, false)?,
                _ => {}
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            open,
            self.end,
            "an unterminated arithmetic expression",
        ))
    }

    /// For `'` at `open`: the offset of the closing quote.
    pub(crate) fn single_quote_end(&self, open: usize) -> Result<usize, ParseError> {
        let mut i = open + 1;
        while let Some(b) = self.at(i) {
            if b == b'\'' {
                return Ok(i);
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            open,
            self.end,
            "an unterminated single quote",
        ))
    }

    /// For `$'` with the quote at `open`: the offset of the closing quote.
    pub(crate) fn ansi_c_end(&self, open: usize) -> Result<usize, ParseError> {
        let mut i = open + 1;
        while let Some(b) = self.at(i) {
            match b {
                b'\\' => i += 1,
                b'\'' => return Ok(i),
                _ => {}
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            open,
            self.end,
            "an unterminated $'...' string",
        ))
    }

    /// Handles a `$` at `i` in any expanding context; returns the offset of the last byte
    /// of the construct (so the caller continues after it).
    fn scan_dollar(&mut self, i: usize, in_dq: bool) -> Result<usize, ParseError> {
        match self.at(i + 1) {
            Some(b'(') => {
                if self.at(i + 2) == Some(b'(') {
                    if let Some(end) = self.arith_dollar_end(i)? {
                        self.fill_arith(i + 3, end - 1);
                        return Ok(end);
                    }
                }
                self.enter(i)?;
                let r = super::with_stack(|| self.paren_end(i + 1));
                self.depth = self.depth.saturating_sub(1);
                r
            }
            Some(b'{') => {
                self.enter(i)?;
                let r = super::with_stack(|| self.brace_param_end(i + 1));
                self.depth = self.depth.saturating_sub(1);
                r
            }
            Some(b'[') => {
                let mut j = i + 2;
                while let Some(b) = self.at(j) {
                    if b == b']' {
                        // Only without a `[` inside: this `]` may be a subscript's, not the end
                        // bash sees, and then tree-sitter's reading stays a cross-check.
                        if !self.s.get(i + 2..j).is_some_and(|t| t.contains(&b'[')) {
                            self.fill_arith(i + 2, j);
                        }
                        return Ok(j);
                    }
                    j += 1;
                }
                Err(err(
                    ParseErrorKind::Missing,
                    i,
                    self.end,
                    "an unterminated $[...]",
                ))
            }
            Some(b'\'') if !in_dq => self.ansi_c_end(i + 1),
            Some(b'"') if !in_dq => {
                self.enter(i)?;
                let r = super::with_stack(|| self.scan_dq(i + 2));
                self.depth = self.depth.saturating_sub(1);
                r
            }
            next => {
                self.bare_dollar(i, next, in_dq);
                Ok(i)
            }
        }
    }

    /// A `$` at `i` that starts no expansion is a literal `$` to bash; tree-sitter-bash
    /// refuses it before `/`, `.`, `;`, `|`, `)` or a closing backtick (`sed s/a$/b/`). The
    /// working copy has a word character there instead (words are read from the input).
    fn bare_dollar(&mut self, i: usize, next: Option<u8>, in_dq: bool) {
        let expands = next.is_some_and(|c| {
            c == b'_'
                || c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'(' | b'{' | b'[' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-'
                )
                || (!in_dq && matches!(c, b'\'' | b'"'))
        });
        if !expands {
            self.rewrites.push((i, b'a'));
        }
    }

    /// Records arithmetic text `a..b` to be filled in the working copy (see [`Self::fills`]).
    /// Segments between top-level `;` (of `for ((;;))`) are filled one by one, so the
    /// separators stay.
    fn fill_arith(&mut self, a: usize, b: usize) {
        let mut depth = 0usize;
        let mut seg = a;
        for k in a..b {
            match self.at(k) {
                Some(b'(') => depth += 1,
                Some(b')') => depth = depth.saturating_sub(1),
                Some(b';') if depth == 0 => {
                    self.fills.push((seg, k));
                    seg = k + 1;
                }
                _ => {}
            }
        }
        self.fills.push((seg, b));
    }

    /// For `$((` at `i`: `Some(offset of the final ')')` when it is an arithmetic expansion
    /// (the inner `(` closes right before the outer one), `None` for `$( (...) ...)`.
    pub(crate) fn arith_dollar_end(&mut self, i: usize) -> Result<Option<usize>, ParseError> {
        let outer = match self.arith_paren_end(i + 1) {
            Ok(o) => o,
            Err(_) => return Ok(None),
        };
        let inner = self.arith_paren_end(i + 2)?;
        Ok((inner + 1 == outer).then_some(outer))
    }

    fn scan_dq(&mut self, start: usize) -> Result<usize, ParseError> {
        self.enter(start)?;
        let mut i = start;
        while let Some(b) = self.at(i) {
            match b {
                b'"' => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(i);
                }
                b'\\' => {
                    if self.at(i + 1) == Some(b'\n') {
                        guards::check_line_continuation(self.s, i, 0)?;
                    }
                    i += 1;
                }
                b'$' => i = self.scan_dollar(i, true)?,
                b'`' => i = self.backtick_end(i, true)?,
                _ => {}
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            start.saturating_sub(1),
            self.end,
            "an unterminated double quote",
        ))
    }

    fn scan_brace_param(&mut self, start: usize) -> Result<usize, ParseError> {
        self.enter(start)?;
        let mut i = start;
        // Like bash, the first unquoted `}` closes (`${x:-{a}b}` is `{a` then `b}`).
        while let Some(b) = self.at(i) {
            match b {
                b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(i);
                }
                b'\\' => {
                    if self.at(i + 1) == Some(b'\n') {
                        guards::check_line_continuation(self.s, i, 0)?;
                    }
                    i += 1;
                }
                b'\'' => i = self.single_quote_end(i)?,
                b'"' => i = self.scan_dq(i + 1)?,
                b'$' => i = self.scan_dollar(i, false)?,
                b'`' => i = self.backtick_end(i, false)?,
                _ => {}
            }
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            start.saturating_sub(2),
            self.end,
            "an unterminated ${...}",
        ))
    }

    /// Scans command context from `start` until `term`; returns the terminator's offset.
    ///
    /// Only the arms that recurse stay in this function, so its stack frame stays small
    /// (it is on the stack once per nesting level); the rest is in [`Self::normal_misc`].
    fn scan_normal(&mut self, start: usize, term: Term) -> Result<usize, ParseError> {
        self.enter(start)?;
        let mut st = NormalState {
            i: start,
            word_start: true,
            cmd_pos: true,
            parens: 0,
            subshells: Vec::new(),
            cases: 0,
            assign_ok: true,
            assign: None,
            prefix: Vec::new(),
            prefix_redirect: false,
            target: false,
            prefix_word: false,
        };
        while let Some(b) = self.at(st.i) {
            let i = st.i;
            self.track_assignment(b, &mut st);
            let recursed = match b {
                b'"' => Some(self.scan_dq(i + 1)?),
                b'`' => Some(self.backtick_end(i, false)?),
                b'$' => Some(self.scan_dollar(i, false)?),
                b'<' | b'>' if self.at(i + 1) == Some(b'(') => {
                    Some(super::with_stack(|| self.paren_end(i + 1))?)
                }
                b'[' if st.word_start
                    && self.at(i + 1) == Some(b'[')
                    && ends_word(self.at(i + 2)) =>
                {
                    Some(self.skip_double_bracket(i)?)
                }
                _ => None,
            };
            if let Some(last) = recursed {
                st.i = last + 1;
                st.word_start = false;
                st.cmd_pos = false;
                continue;
            }
            if let Some(end) = self.normal_misc(b, &mut st, term)? {
                self.depth = self.depth.saturating_sub(1);
                return Ok(end);
            }
        }
        // An assignment that ends the text (`>f x=1`).
        if let Some(cur) = st.assign.take() {
            st.prefix.push(cur);
            if st.prefix_redirect {
                self.disguise_prefix(&mut st);
            }
        }
        self.normal_end(start, term)
    }

    /// Follows the assignment prefix of a simple command: at the start of a word where an
    /// assignment may be, notes one; at its end, records it when a redirection follows (see
    /// [`Self::assignments`]). Also keeps `cmd_pos` false after any word that is not a
    /// reserved word, so that a closer (`fi`) is recognized only where bash does.
    fn track_assignment(&mut self, b: u8, st: &mut NormalState) {
        let i = st.i;
        if let Some(cur) = st.assign {
            if guards::is_meta(b) {
                st.assign = None;
                st.assign_ok = is_blank(b);
                st.prefix.push(cur);
                let mut k = i;
                while self.at(k).is_some_and(is_blank) {
                    k += 1;
                }
                if st.prefix_redirect || self.redirect_at(k) {
                    self.disguise_prefix(st);
                }
                if !st.assign_ok {
                    st.end_prefix();
                }
            }
            return;
        }
        if st.target {
            // The target of a redirection of the prefix: assignments may follow it.
            if guards::is_meta(b) {
                st.target = false;
                st.assign_ok = is_blank(b);
                if !st.assign_ok {
                    st.end_prefix();
                }
            }
            return;
        }
        if !st.word_start || guards::is_meta(b) {
            return;
        }
        st.prefix_word = st.cmd_pos || st.assign_ok;
        if st.prefix_word {
            if let Some(eq) = self.assignment_eq(i) {
                st.assign = Some((i, eq));
                st.cmd_pos = false;
                return;
            }
        }
        st.assign_ok = false;
        if !b.is_ascii_digit() {
            // Digits may be the descriptor of a redirection of the prefix (`2>f x=1`).
            st.end_prefix();
        }
        if !(b.is_ascii_alphabetic() || matches!(b, b'!' | b'{' | b'}')) {
            st.cmd_pos = false;
        }
    }

    /// Every assignment of the prefix so far is recorded and disguised in the working copy:
    /// `x=1` becomes `x-1`, `x+=1` becomes `x--1` (tree-sitter-bash reads `x:1` after a
    /// redirection or an assignment as a broken assignment, and `x-1` as a word everywhere).
    fn disguise_prefix(&mut self, st: &mut NormalState) {
        for (ws, eq) in std::mem::take(&mut st.prefix) {
            self.assignments.push((ws, eq));
            self.rewrites.push((eq, b'-'));
            if eq > ws && self.at(eq - 1) == Some(b'+') {
                self.rewrites.push((eq - 1, b'-'));
            }
        }
        st.prefix_redirect = true;
    }

    /// At a redirection operator at `i`: whether it belongs to the assignment prefix of its
    /// command (then its target is skipped and assignments may follow).
    fn prefix_redirect(&self, i: usize, st: &NormalState) -> bool {
        if st.word_start {
            return st.cmd_pos || st.assign_ok;
        }
        // `2>`: the digits started the word.
        let mut k = i;
        while k > 0 && self.s.get(k - 1).is_some_and(u8::is_ascii_digit) {
            k -= 1;
        }
        st.prefix_word
            && k < i
            && (k == 0 || self.s.get(k - 1).is_some_and(|&b| guards::is_meta(b)))
    }

    /// For a word at `i`: the offset of its `=` when it is `NAME=...` or `NAME+=...` (not an
    /// array value `NAME=(...)`).
    pub(crate) fn assignment_eq(&self, i: usize) -> Option<usize> {
        let first = self.at(i)?;
        if !(first == b'_' || first.is_ascii_alphabetic()) {
            return None;
        }
        let mut j = i + 1;
        while self
            .at(j)
            .is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric())
        {
            j += 1;
        }
        if self.at(j) == Some(b'+') {
            j += 1;
        }
        (self.at(j) == Some(b'=') && self.at(j + 1) != Some(b'(')).then_some(j)
    }

    /// Whether a redirection operator (with its descriptor digits) starts at `k`.
    fn redirect_at(&self, k: usize) -> bool {
        let mut j = k;
        while self.at(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        match self.at(j) {
            Some(b'<' | b'>') => self.at(j + 1) != Some(b'('),
            Some(b'&') => j == k && self.at(j + 1) == Some(b'>'),
            _ => false,
        }
    }

    /// After a closing reserved word `src[start..end]`: when blanks and then a reserved word
    /// bash accepts there follow (`fi done`), the first blank becomes `;` in the working copy.
    fn closer_follow(&mut self, start: usize, end: usize) {
        let mut k = end;
        while self.at(k).is_some_and(is_blank) {
            k += 1;
        }
        if k == end {
            return;
        }
        let mut e = k;
        while !ends_word(self.at(e)) {
            e += 1;
        }
        let tok = self.s.get(k..e).unwrap_or_default();
        if AFTER_CLOSER.contains(&tok) {
            self.rewrites.push((end, b';'));
            self.separators.push((start, end, end));
        }
    }

    /// One byte of command context that does not open a nested context; `Some` when the
    /// scan ends at this byte.
    #[inline(never)]
    fn normal_misc(
        &mut self,
        b: u8,
        st: &mut NormalState,
        term: Term,
    ) -> Result<Option<usize>, ParseError> {
        let mut i = st.i;
        let mut next_word_start = guards::is_meta(b);
        match b {
            b'\\' => {
                if self.at(i + 1) == Some(b'\n') {
                    guards::check_line_continuation(self.s, i, 0)?;
                }
                i += 1;
            }
            b'\'' => i = self.single_quote_end(i)?,
            b'#' if st.word_start => {
                while self.at(i + 1).is_some_and(|c| c != b'\n') {
                    i += 1;
                }
            }
            b'\n' if !self.pending.is_empty() => {
                st.i = self.read_heredocs(i + 1)?;
                st.word_start = true;
                st.cmd_pos = true;
                return Ok(None);
            }
            b'(' => {
                if st.word_start && self.at(i + 1) == Some(b'(') {
                    // `((` starts an arithmetic command when it closes with `))`.
                    let outer = self.arith_paren_end(i);
                    let inner = self.arith_paren_end(i + 1);
                    if let (Ok(o), Ok(n)) = (outer, inner) {
                        if n + 1 == o {
                            self.fill_arith(i + 2, n);
                            st.i = o + 1;
                            st.word_start = false;
                            return Ok(None);
                        }
                    }
                }
                st.subshells.push(st.word_start && st.cmd_pos);
                st.parens += 1;
                st.cmd_pos = true;
            }
            b')' => {
                if st.parens > 0 {
                    st.parens -= 1;
                    st.cmd_pos = false;
                    if st.subshells.pop() == Some(true) {
                        self.closer_follow(i, i + 1);
                    }
                } else if term == Term::Paren && st.cases == 0 {
                    return Ok(Some(i));
                } else {
                    // A case pattern's `)`: its commands follow.
                    st.cmd_pos = true;
                }
                st.word_start = true;
                st.i = i + 1;
                return Ok(None);
            }
            c if st.word_start
                && (c.is_ascii_alphabetic() || c == b'!' || c == b'{' || c == b'}') =>
            {
                // A plain word: `case` in command position opens patterns whose `)` do
                // not close a substitution; `esac` ends them.
                let mut j = i + 1;
                while self
                    .at(j)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    && c != b'!'
                    && c != b'{'
                    && c != b'}'
                {
                    j += 1;
                }
                if ends_word(self.at(j)) {
                    let tok = self.s.get(i..j).unwrap_or_default();
                    if st.cmd_pos && CLOSERS.contains(&tok) {
                        self.closer_follow(i, j);
                    }
                    if st.cmd_pos && tok == b"case" {
                        st.cases += 1;
                    } else if tok == b"esac" && st.cases > 0 {
                        st.cases -= 1;
                    }
                    st.cmd_pos = LEADING_RESERVED.contains(&tok);
                    st.word_start = false;
                    st.i = j;
                    return Ok(None);
                }
                st.cmd_pos = false;
            }
            // After a redirection bash recognizes no reserved word (`>f done` runs `done`);
            // in the assignment prefix, assignments may follow its target (`>f x=1`).
            b'<' | b'>' | b'&' if b != b'&' || self.at(i + 1) == Some(b'>') => {
                let prefix = self.prefix_redirect(i, st);
                i = self.redirect(i)?;
                next_word_start = true;
                st.cmd_pos = false;
                st.assign_ok = false;
                if prefix {
                    // The assignments before it were disguised at their end.
                    st.target = true;
                    st.prefix_redirect = true;
                } else {
                    st.end_prefix();
                }
            }
            b';' if self.at(i + 1) == Some(b';') && self.at(i + 2) == Some(b'&') => {
                self.rewrites.push((i + 2, b' '));
                i += 2;
                st.cmd_pos = true;
            }
            b';' if self.at(i + 1) == Some(b'&') => {
                self.rewrites.push((i + 1, b';'));
                i += 1;
                st.cmd_pos = true;
            }
            b';' | b'&' | b'|' | b'\n' => {
                st.cmd_pos = true;
                st.end_prefix();
            }
            _ => {}
        }
        st.word_start = next_word_start;
        st.i = i + 1;
        Ok(None)
    }

    #[inline(never)]
    fn normal_end(&mut self, start: usize, term: Term) -> Result<usize, ParseError> {
        match term {
            Term::End => {
                self.depth = self.depth.saturating_sub(1);
                Ok(self.end)
            }
            Term::Paren => Err(err(
                ParseErrorKind::Missing,
                start.saturating_sub(2),
                self.end,
                "an unterminated $(...) or (...)",
            )),
        }
    }

    /// Skips `[[ ... ]]` starting at `i`; returns the offset of the last `]`.
    fn skip_double_bracket(&mut self, start: usize) -> Result<usize, ParseError> {
        let mut i = start + 2;
        let mut prev_blank = true;
        while let Some(b) = self.at(i) {
            match b {
                b']' if prev_blank && self.at(i + 1) == Some(b']') && ends_word(self.at(i + 2)) => {
                    return Ok(i + 1);
                }
                b'\\' => {
                    if self.at(i + 1) == Some(b'\n') {
                        guards::check_line_continuation(self.s, i, 0)?;
                    }
                    i += 1;
                }
                b'\'' => i = self.single_quote_end(i)?,
                b'"' => i = self.scan_dq(i + 1)?,
                b'$' => i = self.scan_dollar(i, false)?,
                b'`' => i = self.backtick_end(i, false)?,
                _ => {}
            }
            prev_blank = matches!(b, b' ' | b'\t' | b'\n' | b'(' | b'!');
            i += 1;
        }
        Err(err(
            ParseErrorKind::Missing,
            start,
            self.end,
            "an unterminated [[ ... ]]",
        ))
    }

    /// Records the redirection whose operator starts at `i`; returns its last byte.
    fn redirect(&mut self, i: usize) -> Result<usize, ParseError> {
        let (op, len, heredoc_strip) = if self.starts(i, "<<<") {
            (RedirectOp::HereString, 3, None)
        } else if self.starts(i, "<<-") {
            (RedirectOp::HereDoc, 3, Some(true))
        } else if self.starts(i, "<<") {
            (RedirectOp::HereDoc, 2, Some(false))
        } else if self.starts(i, "<&") {
            (RedirectOp::DupIn, 2, None)
        } else if self.starts(i, "<>") {
            (RedirectOp::ReadWrite, 2, None)
        } else if self.starts(i, "<") {
            (RedirectOp::Read, 1, None)
        } else if self.starts(i, ">>") {
            (RedirectOp::Append, 2, None)
        } else if self.starts(i, ">|") {
            (RedirectOp::Clobber, 2, None)
        } else if self.starts(i, ">&") {
            (RedirectOp::DupOut, 2, None)
        } else if self.starts(i, ">") {
            (RedirectOp::Write, 1, None)
        } else if self.starts(i, "&>>") {
            (RedirectOp::AppendAll, 3, None)
        } else {
            (RedirectOp::WriteAll, 2, None)
        };
        // An fd number: digits that form the start of a word right before the operator.
        let mut k = i;
        while k > 0 && self.s.get(k - 1).is_some_and(u8::is_ascii_digit) {
            k -= 1;
        }
        let mut fd = None;
        // `&>` takes no descriptor: in `echo a 2&>f` the 2 is an argument.
        let takes_fd = self.at(i) != Some(b'&');
        if takes_fd && k < i && (k == 0 || self.s.get(k - 1).is_some_and(|&b| guards::is_meta(b))) {
            let digits = std::str::from_utf8(self.s.get(k..i).unwrap_or_default()).unwrap_or("");
            let n: u32 = digits.parse().map_err(|_| {
                err(
                    ParseErrorKind::Unsupported,
                    k,
                    i,
                    "a file descriptor number that is too large",
                )
            })?;
            fd = Some((n, k));
        }
        if i > 0 && self.s.get(i - 1) == Some(&b'}') && op != RedirectOp::HereString {
            // `{var}>file` allocates a descriptor into a variable; refuse it rather than
            // guess whether the braces were a word.
            let line_start = self
                .s
                .get(..i)
                .and_then(|p| p.iter().rposition(|&b| guards::is_meta(b)));
            let ws = line_start.map_or(0, |p| p + 1);
            if self.s.get(ws) == Some(&b'{') {
                return Err(err(
                    ParseErrorKind::Unsupported,
                    ws,
                    i + len,
                    "a {name} file descriptor redirection is not supported",
                ));
            }
        }
        let mut heredoc = None;
        if let Some(strip_tabs) = heredoc_strip {
            let (delimiter, quoted) = self.heredoc_delimiter(i + len)?;
            heredoc = Some(HereDocSite {
                strip_tabs,
                quoted,
                delimiter,
                body: Span::default(),
                found: false,
            });
            self.pending.push(self.sites.len());
        }
        self.sites.push(Site {
            pos: i,
            len,
            fd,
            op,
            heredoc,
        });
        Ok(i + len - 1)
    }

    /// Reads the delimiter word after `<<` starting at `start` (blanks skipped).
    pub(crate) fn heredoc_delimiter(&self, start: usize) -> Result<(String, bool), ParseError> {
        let mut i = start;
        while self.at(i).is_some_and(is_blank) {
            i += 1;
        }
        let word_start = i;
        let mut out = Vec::new();
        let mut quoted = false;
        while let Some(b) = self.at(i) {
            if guards::is_meta(b) {
                break;
            }
            match b {
                b'\\' => {
                    quoted = true;
                    if let Some(n) = self.at(i + 1) {
                        out.push(n);
                        i += 1;
                    }
                }
                b'\'' => {
                    quoted = true;
                    let e = self.single_quote_end(i)?;
                    out.extend_from_slice(self.s.get(i + 1..e).unwrap_or_default());
                    i = e;
                }
                b'"' => {
                    quoted = true;
                    let mut j = i + 1;
                    loop {
                        match self.at(j) {
                            None => {
                                return Err(err(
                                    ParseErrorKind::Missing,
                                    i,
                                    self.end,
                                    "an unterminated quote in a here-document delimiter",
                                ))
                            }
                            Some(b'"') => break,
                            Some(b'\\')
                                if matches!(self.at(j + 1), Some(b'"' | b'\\' | b'$' | b'`')) =>
                            {
                                j += 1;
                                out.push(self.at(j).unwrap_or(b'\\'));
                            }
                            Some(c) => out.push(c),
                        }
                        j += 1;
                    }
                    i = j;
                }
                b'$' | b'`' => {
                    return Err(err(
                        ParseErrorKind::Unsupported,
                        word_start,
                        i + 1,
                        "a here-document delimiter with `$` or a backtick is not supported",
                    ))
                }
                c => out.push(c),
            }
            i += 1;
        }
        if i == word_start {
            return Err(err(
                ParseErrorKind::Syntax,
                start.saturating_sub(2),
                start,
                "a here-document operator without a delimiter",
            ));
        }
        let delimiter = String::from_utf8(out).map_err(|_| {
            err(
                ParseErrorKind::Syntax,
                word_start,
                i,
                "a here-document delimiter that is not UTF-8",
            )
        })?;
        Ok((delimiter, quoted))
    }

    /// Reads the bodies of pending here-documents starting at `start` (just after a
    /// newline); returns the offset after the last delimiter line.
    fn read_heredocs(&mut self, start: usize) -> Result<usize, ParseError> {
        let pending = std::mem::take(&mut self.pending);
        let mut pos = start;
        for idx in pending {
            let Some(hd) = self.sites.get(idx).and_then(|s| s.heredoc.clone()) else {
                continue;
            };
            let op_pos = self.sites.get(idx).map_or(start, |s| s.pos);
            let (body, next) = self.heredoc_body_at(&hd, op_pos, pos)?;
            let (body_start, body_end) = (body.start, body.end);
            if let Some(Some(h)) = self.sites.get_mut(idx).map(|s| s.heredoc.as_mut()) {
                h.body = Span::new(body_start, body_end);
                h.found = true;
            }
            self.blanks.push((body_start, next));
            pos = next;
        }
        Ok(pos)
    }

    /// The body of the here-document `hd` (operator at `op_pos`) starting at `start`, just
    /// after the newline that ends its command line, and the offset after its delimiter line.
    pub(crate) fn heredoc_body_at(
        &self,
        hd: &HereDocSite,
        op_pos: usize,
        start: usize,
    ) -> Result<(Span, usize), ParseError> {
        let body_start = start;
        let mut line_start = start;
        let body_end;
        let next;
        loop {
            if line_start >= self.end {
                return Err(err(
                    ParseErrorKind::Missing,
                    op_pos,
                    self.end,
                    format!(
                        "the here-document ending with `{}` is not terminated",
                        hd.delimiter
                    ),
                ));
            }
            // In an unquoted body a backslash-newline joins lines before the delimiter
            // is looked for (`EO\<newline>F` ends the body; `foo\<newline>EOF` does not).
            let mut logical: Vec<u8> = Vec::new();
            let mut phys = line_start;
            let line_end = loop {
                let le = (phys..self.end)
                    .find(|&j| self.s.get(j) == Some(&b'\n'))
                    .unwrap_or(self.end);
                let line = self.s.get(phys..le).unwrap_or_default();
                let trailing = line.iter().rev().take_while(|&&b| b == b'\\').count();
                if !hd.quoted && trailing % 2 == 1 && le < self.end {
                    if hd.strip_tabs {
                        return Err(err(
                            ParseErrorKind::SplitWord,
                            le - 1,
                            le + 1,
                            "a backslash-newline inside a tab-stripped here-document body",
                        ));
                    }
                    logical.extend_from_slice(line.get(..line.len() - 1).unwrap_or_default());
                    phys = le + 1;
                    continue;
                }
                logical.extend_from_slice(line);
                break le;
            };
            let cmp = if hd.strip_tabs {
                let t = logical.iter().take_while(|&&b| b == b'\t').count();
                logical.get(t..).unwrap_or_default()
            } else {
                &logical[..]
            };
            if cmp == hd.delimiter.as_bytes() {
                body_end = line_start;
                next = (line_end + 1).min(self.end);
                break;
            }
            line_start = line_end + 1;
        }
        Ok((Span::new(body_start, body_end), next))
    }

    /// Whether every here-document got its body.
    #[cfg_attr(not(feature = "paranoid"), allow(dead_code))]
    pub(crate) fn all_bodies_found(&self) -> Option<usize> {
        self.sites
            .iter()
            .find(|s| s.heredoc.as_ref().is_some_and(|h| !h.found))
            .map(|s| s.pos)
    }
}

/// The working copy of `src[start..end]`: redirection operators rewritten to `<`,
/// here-document bodies blanked, and every byte of a non-ASCII character replaced by `a`;
/// lengths unchanged.
///
/// tree-sitter-bash's external scanner calls `isdigit` on the lookahead code point after a
/// `{`, which reads outside glibc's table for code points past 255: `{` followed by U+10FFFF
/// crashed the process with SIGSEGV (tree-sitter-bash#337, unfixed in 0.25.1). bash itself
/// never treats a non-ASCII character as an operator or a blank, only as part of a word, so
/// an ASCII letter in its place leaves the structure bash sees unchanged (no reserved word
/// has two `a`s in a row); the words themselves are read from the original text.
#[cfg(any(test, feature = "paranoid"))]
pub(crate) fn working_copy(src: &str, start: usize, end: usize, sc: &Scanner<'_>) -> Vec<u8> {
    let mut w: Vec<u8> = src.as_bytes().get(start..end).unwrap_or_default().to_vec();
    for b in w.iter_mut().filter(|b| !b.is_ascii()) {
        *b = b'a';
    }
    for site in &sc.sites {
        for k in 0..site.len {
            if let Some(b) = site.pos.checked_sub(start).and_then(|p| w.get_mut(p + k)) {
                *b = if k == 0 { b'<' } else { b' ' };
            }
        }
    }
    for &(p, byte) in &sc.rewrites {
        if let Some(b) = p.checked_sub(start).and_then(|p| w.get_mut(p)) {
            *b = byte;
        }
    }
    for &(a, b) in &sc.blanks {
        for p in a..b {
            if let Some(byte) = p.checked_sub(start).and_then(|p| w.get_mut(p)) {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
        }
    }
    for &(a, b) in &sc.fills {
        let text = src.as_bytes().get(a..b).unwrap_or_default();
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        for p in a..b {
            if let Some(byte) = p.checked_sub(start).and_then(|p| w.get_mut(p)) {
                *byte = if p == a { b'0' } else { b' ' };
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(src: &str) -> Result<(Vec<Site>, String), ParseError> {
        let mut sc = Scanner::new(src, src.len(), 128);
        sc.scan_script(0)?;
        let w = working_copy(src, 0, src.len(), &sc);
        Ok((sc.sites, String::from_utf8(w).unwrap()))
    }

    #[test]
    fn rewrites_redirections_keeping_offsets() {
        let (sites, w) = scan("cat 3<>z >&- 2>&1 &>>y <<<s").unwrap();
        assert_eq!(w, "cat 3< z < - 2< 1 <  y <  s");
        let ops: Vec<_> = sites.iter().map(|s| (s.op, s.fd.map(|f| f.0))).collect();
        assert_eq!(
            ops,
            vec![
                (RedirectOp::ReadWrite, Some(3)),
                (RedirectOp::DupOut, None),
                (RedirectOp::DupOut, Some(2)),
                (RedirectOp::AppendAll, None),
                (RedirectOp::HereString, None)
            ]
        );
    }

    #[test]
    fn heredocs_on_one_line() {
        let src = "cat <<A <<'B' >out\na $(x)\nA\nb\nB\necho";
        let (sites, w) = scan(src).unwrap();
        assert_eq!(w, "cat < A < 'B' <out\n      \n \n \n \necho");
        let a = sites[0].heredoc.as_ref().unwrap();
        assert_eq!(&src[a.body.range()], "a $(x)\n");
        assert!(!a.quoted);
        let b = sites[1].heredoc.as_ref().unwrap();
        assert_eq!(&src[b.body.range()], "b\n");
        assert!(b.quoted);
    }

    #[test]
    fn no_redirection_in_arithmetic_tests_or_quotes() {
        let (sites, _) =
            scan("echo $((1<<2)) '>' \">\" \\> ; ((x<<=1)); [[ a < b ]]; cat <(ls)").unwrap();
        assert!(sites.is_empty(), "{sites:?}");
    }

    #[test]
    fn substitution_ends() {
        let src = "$(echo ')' \"$(a)\" ${x:-)}; case x in a) b;; esac)z";
        let mut sc = Scanner::new(src, src.len(), 128);
        assert_eq!(sc.paren_end(1).unwrap(), src.len() - 2);
        // `case` as an argument is not a reserved word: the `)` closes.
        let src = "$(echo case x in a) b";
        let mut sc = Scanner::new(src, src.len(), 128);
        assert_eq!(sc.paren_end(1).unwrap(), 18);
    }

    #[test]
    fn nested_backtick_escape_is_refused() {
        let e = scan("echo `echo \\`id\\``").unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::NestedBacktick);
        assert!(scan("echo '\\`'").is_ok());
    }

    #[test]
    fn unterminated_heredoc_is_missing() {
        assert_eq!(
            scan("cat <<EOF\nabc\n").unwrap_err().kind,
            ParseErrorKind::Missing
        );
    }
}
