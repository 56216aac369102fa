//! From command text to shellgate's IR: guards, then shellgate's own bash parser.
//!
//! The parser is the trusted core and it fails closed: anything it does not fully understand
//! is a [`ParseError`] with a stable code and a span, never a partial tree.
//!
//! # How a command is read
//! 1. **Guards** (`guards.rs`): size limit; NUL, C0/C1 controls, DEL, bidi overrides and
//!    zero-width characters are refused.
//! 2. **The parser** (`parser.rs`): a hand-written recursive-descent parser of bash's
//!    grammar over a tokenizer that reads as bash's lexer does. Where a word, a quote or a
//!    substitution ends is found by the lexical scanner (`scan.rs`), which follows bash's
//!    quoting contexts (`$(...)` with `case` and comments inside, backticks, `${...}`,
//!    arithmetic, here-document bodies). Here-document bodies are read at the newline
//!    that ends their line. A backslash-newline that joins two parts of one word and an
//!    escape inside backticks that changes the inner text are refused.
//! 3. **Words** (`words.rs`): each word is lowered from the text by our own lexer: quote
//!    removal, escapes, `$'...'`, every expansion, globs, brace expansions, tildes. Scripts
//!    nested in a word are parsed by the same parser (spans stay offsets into the top-level
//!    text).
//!
//! `docs/parser.md` has the grammar coverage table: each construct, how it is read, and
//! which test proves the reading against real bash. tree-sitter-bash, the reader this parser
//! replaced, is kept behind the `paranoid` feature as a judge (`parse_tree_sitter`) and
//! as the second reading of the policy setting `[shell] paranoid` (`cross_check`).
//!
//! Nothing recurses without a depth check, so hostile nesting is a [`ParseErrorKind::TooDeep`]
//! and not a stack overflow. Nested constructs continue on a fresh stack segment when the
//! caller's thread runs low (`stacker`), so parsing needs no particular thread stack size; and
//! should the stack still run short, the nesting is refused rather than overflowed.

mod ansi_c;
mod ctx;
mod fields;
mod guards;
mod ir;
#[cfg(feature = "paranoid")]
mod lower;
mod parser;
mod scan;
mod visit;
pub(crate) use visit::command_words;
mod words;
pub(crate) mod wrappers;

pub use ir::*;

use crate::codes::ReasonCode;
pub(crate) use fields::{is_plain, is_pwd};
pub use fields::{Fields, Known, Lead};

/// Headroom below which a nested construct continues on a fresh stack segment.
const STACK_RED_ZONE: usize = 128 * 1024;
/// Size of each fresh stack segment.
const STACK_SEGMENT: usize = 1024 * 1024;
/// Headroom below which nesting is refused outright: the backstop that makes a stack
/// overflow impossible even where a recursion path has no [`with_stack`].
const STACK_MIN: usize = 32 * 1024;

/// Runs one level of nested work on a stack with room for it.
pub(crate) fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

/// True when so little stack is left that one more level of nesting must be refused.
pub(crate) fn stack_exhausted() -> bool {
    stacker::remaining_stack().is_some_and(|left| left < STACK_MIN)
}

/// Limits that bound the work done on one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Largest accepted input, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of syntax nodes.
    pub max_depth: usize,
    /// Most syntax nodes (commands, words, assignments) accepted in one parse.
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 64 * 1024,
            max_depth: 128,
            max_nodes: 200_000,
        }
    }
}

/// Why a command could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Where, as a byte range of the input.
    pub span: Span,
    /// A human-readable explanation.
    pub message: String,
}

/// The kinds of [`ParseError`]; each has a stable code (see [`ParseErrorKind::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input is larger than [`Limits::max_bytes`].
    TooLarge,
    /// A NUL or a control character other than tab and newline.
    ControlCharacter,
    /// A backslash-newline inside one word, which the parser misreads.
    SplitWord,
    /// An escaped backtick inside a backtick substitution, which the parser misreads.
    NestedBacktick,
    /// A syntax error (an ERROR node).
    Syntax,
    /// Missing syntax (a MISSING node, e.g. an unterminated quote or `fi`).
    Missing,
    /// A construct the lowering does not support.
    Unsupported,
    /// Nesting deeper than [`Limits::max_depth`].
    TooDeep,
    /// More nodes than [`Limits::max_nodes`].
    TooManyNodes,
    /// A name that must be static (a function name, an assigned variable) is not.
    DynamicName,
    /// The second reader of `[shell] paranoid` (tree-sitter-bash) reads the command
    /// differently, or cannot read it.
    Disagreement,
}

impl ParseErrorKind {
    /// The stable kebab-case code of this kind.
    pub fn code(self) -> &'static str {
        self.reason_code().as_str()
    }

    /// The reason code a refusal for this kind carries.
    pub(crate) fn reason_code(self) -> ReasonCode {
        match self {
            ParseErrorKind::TooLarge => ReasonCode::ParseTooLarge,
            ParseErrorKind::ControlCharacter => ReasonCode::ParseControlCharacter,
            ParseErrorKind::SplitWord => ReasonCode::ParseSplitWord,
            ParseErrorKind::NestedBacktick => ReasonCode::ParseNestedBacktick,
            ParseErrorKind::Syntax => ReasonCode::ParseSyntax,
            ParseErrorKind::Missing => ReasonCode::ParseMissing,
            ParseErrorKind::Unsupported => ReasonCode::ParseUnsupported,
            ParseErrorKind::TooDeep => ReasonCode::ParseTooDeep,
            ParseErrorKind::TooManyNodes => ReasonCode::ParseTooManyNodes,
            ParseErrorKind::DynamicName => ReasonCode::ParseDynamicName,
            ParseErrorKind::Disagreement => ReasonCode::ParseDisagreement,
        }
    }
}

/// Parse `src` with the default [`Limits`].
pub fn parse(src: &str) -> Result<Script, ParseError> {
    parse_with(src, &Limits::default())
}

/// Parse `src` with explicit limits.
///
/// Guards run first (size, control characters), then shellgate's own parser. Any doubt is
/// an error.
pub fn parse_with(src: &str, limits: &Limits) -> Result<Script, ParseError> {
    guards::check_input(src, limits)?;
    let mut ctx = ctx::Ctx::new(src, *limits);
    let result = with_stack(|| ctx.parse_range(0, src.len()));
    result.map_err(|e| within(src, e))
}

/// The error with its span inside `src` and widened to whole characters (a one-byte span
/// at a multi-byte character covers the character).
fn within(src: &str, mut e: ParseError) -> ParseError {
    let mut end = e.span.end.min(src.len());
    while !src.is_char_boundary(end) {
        end += 1;
    }
    let mut start = e.span.start.min(end);
    while !src.is_char_boundary(start) {
        start -= 1;
    }
    e.span = Span::new(start, end);
    e
}

/// How much work one parse did, for the linear-time properties of the fuzz targets and tests.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Work {
    /// Bytes tokenized and lexed, counted again at each nesting level that reads them
    /// (a word inside `$(...)` is read by the outer level to find the `)` and by the inner
    /// one to parse it).
    pub steps: u64,
    /// The deepest nesting entered.
    pub deepest: usize,
}

/// [`parse_with`], and the work it took.
#[doc(hidden)]
pub fn parse_measured(src: &str, limits: &Limits) -> (Result<Script, ParseError>, Work) {
    if let Err(e) = guards::check_input(src, limits) {
        return (Err(e), Work::default());
    }
    let mut ctx = ctx::Ctx::new(src, *limits);
    let result = with_stack(|| ctx.parse_range(0, src.len())).map_err(|e| within(src, e));
    let work = Work {
        steps: ctx.steps,
        deepest: ctx.deepest,
    };
    (result, work)
}

/// Whether this build has the second reader (tree-sitter-bash, the `paranoid` feature) that
/// the policy setting `[shell] paranoid` needs.
pub const SECOND_READER: bool = cfg!(feature = "paranoid");

/// Reads `src` with tree-sitter-bash instead of shellgate's own parser (the `paranoid`
/// feature): the judge of the reader tests and the second reading of `[shell] paranoid`.
#[cfg(feature = "paranoid")]
#[doc(hidden)]
pub fn parse_tree_sitter(src: &str, limits: &Limits) -> Result<Script, ParseError> {
    guards::check_input(src, limits)?;
    let mut ctx = ctx::Ctx::new(src, *limits);
    ctx.reader = ctx::Reader::TreeSitter;
    let result = with_stack(|| ctx.parse_range(0, src.len()));
    result.map_err(|e| within(src, e))
}

/// The second reading of `[shell] paranoid`: `src` read again by tree-sitter-bash must have
/// the same [`Script::shape`] as `script`, shellgate's own reading of it. A build without the
/// `paranoid` feature has no second reader and refuses.
#[doc(hidden)]
pub fn cross_check(src: &str, limits: &Limits, script: &Script) -> Result<(), ParseError> {
    let disagree = |span: Span, message: String| ParseError {
        kind: ParseErrorKind::Disagreement,
        span,
        message,
    };
    #[cfg(feature = "paranoid")]
    {
        let other = parse_tree_sitter(src, limits).map_err(|e| {
            disagree(
                e.span,
                format!(
                    "the second reader (tree-sitter-bash) cannot read it: {}",
                    e.message
                ),
            )
        })?;
        let (mine, theirs) = (script.shape(), other.shape());
        for (i, (a, b)) in mine.iter().zip(theirs.iter()).enumerate() {
            if a.1 != b.1 {
                return Err(disagree(
                    a.0.join(b.0),
                    format!(
                        "the two readers (shellgate and tree-sitter-bash) read command {} differently",
                        i + 1
                    ),
                ));
            }
        }
        if mine.len() != theirs.len() {
            return Err(disagree(
                Span::new(0, src.len()),
                format!(
                    "the two readers (shellgate and tree-sitter-bash) find {} and {} commands",
                    mine.len(),
                    theirs.len()
                ),
            ));
        }
        Ok(())
    }
    #[cfg(not(feature = "paranoid"))]
    {
        let _ = (limits, script);
        Err(disagree(
            Span::new(0, src.len()),
            "`[shell] paranoid` needs a second reader, and this build has none (build with the `paranoid` feature)".into(),
        ))
    }
}
