//! Checks on the raw command text that run before tree-sitter sees it.
//!
//! Each guard refuses input that the parser is known to misread, or that a person reviewing
//! the command could misread (control characters, bidi overrides), with a span on the culprit.

use super::{Limits, ParseError, ParseErrorKind, Span};

/// Size and character checks on the whole input.
pub(crate) fn check_input(src: &str, limits: &Limits) -> Result<(), ParseError> {
    if src.len() > limits.max_bytes {
        return Err(ParseError {
            kind: ParseErrorKind::TooLarge,
            span: Span::new(0, src.len()),
            message: format!(
                "the command is {} bytes long, more than the limit of {} bytes",
                src.len(),
                limits.max_bytes
            ),
        });
    }
    // ASCII text needs no decoding: only its controls and DEL can be refused.
    let ascii_ok =
        |b: &u8| b.is_ascii() && (*b >= 0x20 || *b == b'\t' || *b == b'\n') && *b != 0x7f;
    if src.as_bytes().iter().all(ascii_ok) {
        return Ok(());
    }
    for (i, c) in src.char_indices() {
        if let Some(what) = forbidden_char(c) {
            return Err(ParseError {
                kind: ParseErrorKind::ControlCharacter,
                span: Span::new(i, i + c.len_utf8()),
                message: format!(
                    "the command contains {what} (U+{:04X}) at byte {i}; only tab and newline are accepted",
                    c as u32
                ),
            });
        }
    }
    Ok(())
}

/// What is wrong with `c`, if it may not appear in a command.
fn forbidden_char(c: char) -> Option<&'static str> {
    match c {
        '\t' | '\n' => None,
        '\0' => Some("a NUL byte"),
        '\r' => Some("a carriage return"),
        '\u{7f}' => Some("a DEL character"),
        c if (c as u32) < 0x20 => Some("a control character"),
        '\u{80}'..='\u{9f}' => Some("a C1 control character"),
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {
            Some("a bidirectional override")
        }
        '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => Some("a zero-width character"),
        _ => None,
    }
}

/// Whether `b` ends or separates a word by itself (a shell metacharacter or blank).
pub(crate) fn is_meta(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

/// Checks a backslash-newline at `i` (the backslash) in a context where bash removes it.
///
/// tree-sitter-bash reads `r\<newline>m` as two words while bash joins them into `rm`. A
/// continuation is accepted only when it sits *between* words: preceded by a blank (or the
/// start of the text), or followed by a blank (or the end); an operator before it is fine
/// unless another operator character follows (`&\<newline>&` is `&&` to bash).
pub(crate) fn check_line_continuation(
    text: &[u8],
    i: usize,
    base: usize,
) -> Result<(), ParseError> {
    let prev = if i == 0 {
        None
    } else {
        text.get(i - 1).copied()
    };
    let next = text.get(i + 2).copied();
    let blank = |b: Option<u8>| matches!(b, None | Some(b' ' | b'\t' | b'\n'));
    // An escaped character before the continuation (`a \|\<newline>b`) is part of a word,
    // whatever it is: bash joins it with what follows.
    let backslashes = text[..i.saturating_sub(1)]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count();
    let prev_escaped = i >= 1 && backslashes % 2 == 1;
    let ok = if prev_escaped {
        blank(next)
    } else {
        blank(prev)
            || blank(next)
            || (prev.is_some_and(is_meta) && !next.is_some_and(|n| is_meta(n) || n == b'\\'))
    };
    if ok {
        return Ok(());
    }
    Err(ParseError {
        kind: ParseErrorKind::SplitWord,
        span: Span::new(base + i, base + i + 2),
        message: "a backslash-newline joins two parts of one word (bash reads them as one word, \
                  the parser as two); write the word on one line"
            .into(),
    })
}

/// Refuses backslash escapes inside a backtick substitution that change what the inner
/// command is (`` \` ``, `\$`, `\\`, and `\"` inside double quotes): the parser misreads
/// nested backticks, and the unescaped text would differ from the text we re-parse.
pub(crate) fn check_backtick_escape(next: u8, in_dq: bool, pos: usize) -> Result<(), ParseError> {
    if next == b'`' || next == b'$' || next == b'\\' || (in_dq && next == b'"') {
        let what = if next == b'`' {
            "an escaped backtick"
        } else {
            "an escape"
        };
        return Err(ParseError {
            kind: ParseErrorKind::NestedBacktick,
            span: Span::new(pos, pos + 2),
            message: format!(
                "{what} inside a backtick substitution; use $(...) instead of nested backticks"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(src: &str) -> Option<ParseErrorKind> {
        check_input(src, &Limits::default()).err().map(|e| e.kind)
    }

    #[test]
    fn control_characters_are_refused_with_their_span() {
        for s in [
            "a\0b",
            "ls\r",
            "a\x7fb",
            "\x1b[31m",
            "a\u{202e}b",
            "r\u{200b}m",
            "\u{85}",
        ] {
            assert_eq!(kind(s), Some(ParseErrorKind::ControlCharacter), "{s:?}");
        }
        let e = check_input("ab\rc", &Limits::default()).unwrap_err();
        assert_eq!(e.span, Span::new(2, 3));
        assert_eq!(kind("ls\t-la\nécho ü"), None);
    }

    #[test]
    fn size_limit() {
        let limits = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(
            check_input("12345", &limits).unwrap_err().kind,
            ParseErrorKind::TooLarge
        );
        assert!(check_input("1234", &limits).is_ok());
    }

    #[test]
    fn continuation_rule() {
        let ok = |s: &str| {
            let i = s.find("\\\n").unwrap();
            check_line_continuation(s.as_bytes(), i, 0).is_ok()
        };
        assert!(ok("ls \\\n -la"));
        assert!(ok("ls \\\n-la"));
        assert!(ok("ls\\\n -la"));
        assert!(ok("a |\\\nb"));
        assert!(!ok("r\\\nm"));
        assert!(!ok("--for\\\nce"));
        assert!(!ok("a &\\\n& b"));
        assert!(!ok("$\\\n(id)"));
    }
}
