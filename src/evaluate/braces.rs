//! Static brace expansion (`{a,b}`, `{1..3}`, `{a..c}`), so that `mkdir -p src/{a,b}` is
//! checked as the two paths bash creates and `sort {-o,out}` as the `-o out` it becomes.
//!
//! Only plain alternatives are expanded; anything with quotes, expansions or glob characters
//! inside the braces stays dynamic (and is then not proven safe).

use crate::shell::{Word, WordPart};

/// The most words one brace word may expand to before it counts as dynamic.
pub(super) const MAX_EXPANSION: usize = 256;

/// Expand the brace parts of `word`. `None` when it has no brace part or cannot be expanded.
pub(super) fn expand(word: &Word) -> Option<Vec<Word>> {
    if !word.parts.iter().any(|p| matches!(p, WordPart::Brace(_))) {
        return None;
    }
    // Tilde expansion comes after brace expansion (`~{/.ssh,}` is `~/.ssh`): a word with an
    // unquoted `~` anywhere stays dynamic.
    if word.parts.iter().any(|p| {
        matches!(p, WordPart::Tilde(_)) || matches!(p, WordPart::Literal(l) if l.contains('~'))
    }) {
        return None;
    }
    let mut results: Vec<Vec<WordPart>> = vec![Vec::new()];
    for part in &word.parts {
        match part {
            WordPart::Brace(text) => {
                let alts = alternatives(text)?;
                let mut next = Vec::with_capacity(results.len() * alts.len());
                for r in &results {
                    for a in &alts {
                        let mut v = r.clone();
                        v.push(WordPart::Literal(a.clone()));
                        next.push(v);
                    }
                }
                if next.len() > MAX_EXPANSION {
                    return None;
                }
                results = next;
            }
            other => results.iter_mut().for_each(|r| r.push(other.clone())),
        }
    }
    Some(
        results
            .into_iter()
            .map(|parts| Word {
                span: word.span,
                parts,
            })
            .collect(),
    )
}

/// The alternatives of one brace expression as written, e.g. `{a,b{c,d}}` → a, bc, bd.
pub(super) fn alternatives(text: &str) -> Option<Vec<String>> {
    if text
        .chars()
        .any(|c| matches!(c, '\'' | '"' | '\\' | '$' | '`' | '*' | '?' | '[' | '~'))
    {
        return None;
    }
    let out = expand_text(text, 0)?;
    (out.len() <= MAX_EXPANSION).then_some(out)
}

fn expand_text(text: &str, depth: usize) -> Option<Vec<String>> {
    if depth > 8 {
        return None;
    }
    // Find the first top-level `{ ... }` that is a real brace expression.
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let close = matching(bytes, i)?;
            let inner = &text[i + 1..close];
            let prefix = &text[..i];
            let suffix = &text[close + 1..];
            let items = match split_top(inner) {
                Some(items) if items.len() > 1 => {
                    let mut v = Vec::new();
                    for item in items {
                        v.extend(expand_text(item, depth + 1)?);
                        if v.len() > MAX_EXPANSION {
                            return None;
                        }
                    }
                    v
                }
                _ => match sequence(inner) {
                    Seq::Items(seq) => seq,
                    Seq::TooBig => return None,
                    Seq::Not => {
                        // Not an expression: literal braces; continue after them.
                        let rest = expand_text(suffix, depth + 1)?;
                        return Some(
                            rest.into_iter()
                                .map(|r| format!("{prefix}{{{inner}}}{r}"))
                                .collect(),
                        );
                    }
                },
            };
            let tails = expand_text(suffix, depth + 1)?;
            let mut out = Vec::new();
            for item in &items {
                for t in &tails {
                    out.push(format!("{prefix}{item}{t}"));
                    if out.len() > MAX_EXPANSION {
                        return None;
                    }
                }
            }
            return Some(out);
        }
        i += 1;
    }
    Some(vec![text.to_string()])
}

fn matching(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top(inner: &str) -> Option<Vec<&str>> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    Some(items)
}

enum Seq {
    /// Not a sequence expression: the braces are literal.
    Not,
    /// A sequence with more than MAX_EXPANSION items.
    TooBig,
    /// The items.
    Items(Vec<String>),
}

/// `1..5`, `5..1`, `1..10..2`, `a..e`.
fn sequence(inner: &str) -> Seq {
    let parts: Vec<&str> = inner.split("..").collect();
    if parts.len() != 2 && parts.len() != 3 {
        return Seq::Not;
    }
    let step: i64 = match parts.get(2).map(|s| s.parse::<i64>()) {
        Some(Ok(s)) => s.saturating_abs().max(1),
        Some(Err(_)) => return Seq::Not,
        None => 1,
    };
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let count = (a.abs_diff(b) / step.unsigned_abs()).saturating_add(1);
        if count > MAX_EXPANSION as u64 {
            return Seq::TooBig;
        }
        let padded = |p: &str| p.trim_start_matches('-').starts_with('0') && p.len() > 1;
        let width = if padded(parts[0]) || padded(parts[1]) {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        let dir = if b >= a { step } else { -step };
        return Seq::Items(
            (0..count as i64)
                .map(|k| format!("{:0width$}", a + k * dir))
                .collect(),
        );
    }
    let (Some(a), Some(b)) = (single_char(parts[0]), single_char(parts[1])) else {
        return Seq::Not;
    };
    let (lo, hi) = (a.min(b) as u32, a.max(b) as u32);
    let mut v: Vec<String> = (lo..=hi)
        .step_by(step as usize)
        .filter_map(char::from_u32)
        .map(String::from)
        .collect();
    if b < a {
        v.reverse();
    }
    if v.len() > MAX_EXPANSION {
        return Seq::TooBig;
    }
    Seq::Items(v)
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    (it.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(s: &str) -> Vec<String> {
        alternatives(s).unwrap_or_default()
    }

    #[test]
    fn alternatives_match_bash() {
        assert_eq!(alt("{a,b}"), ["a", "b"]);
        assert_eq!(alt("{a,b{c,d}}"), ["a", "bc", "bd"]);
        assert_eq!(alt("{1..3}"), ["1", "2", "3"]);
        assert_eq!(alt("{3..1}"), ["3", "2", "1"]);
        assert_eq!(alt("{01..03}"), ["01", "02", "03"]);
        assert_eq!(alt("{a..c}"), ["a", "b", "c"]);
        assert_eq!(alt("{1..10..4}"), ["1", "5", "9"]);
        assert_eq!(alt("{-o,out}"), ["-o", "out"]);
        assert!(alternatives("{1..100000}").is_none());
        assert!(alternatives("{a,$x}").is_none());
        assert!(alternatives("{*,b}").is_none());
        assert!(alternatives("{~,x}").is_none());
    }
}
