//! The operands of `dd`: `KEY=VALUE` words whose key says what the value is. `if=FILE` is a
//! file read, `of=FILE` a file written (opened for writing, created, truncated unless
//! `conv=notrunc`); the other keys of GNU coreutils 9 (`bs=`, `count=`, `conv=`, `status=`, ...)
//! take numbers or flag lists that never name a file. Any other key is refused: dd rejects it
//! too, and a key this list does not know is not proven harmless.

use std::path::PathBuf;

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::{ProgramRule, Verdict};
use crate::shell::{Span, Word, WordPart};

/// The keys whose values are numbers or flag lists (dd(1), GNU coreutils 9.1).
const TEXT_KEYS: &[&str] = &[
    "bs", "cbs", "conv", "count", "ibs", "iflag", "obs", "oflag", "seek", "skip", "status",
    "iseek", "oseek",
];

/// What the key of a `dd` operand makes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DdKey {
    /// `if=`: a file read.
    Read,
    /// `of=`: a file written.
    Write,
    /// A number or a flag list.
    Text,
}

/// The key of `text` (the operand up to its first `=`), if dd knows it.
pub(super) fn dd_key(key: &str) -> Option<DdKey> {
    match key {
        "if" => Some(DdKey::Read),
        "of" => Some(DdKey::Write),
        k if TEXT_KEYS.contains(&k) => Some(DdKey::Text),
        _ => None,
    }
}

/// `word` (an operand `KEY=VALUE`) split into its key and a word for its value, with the
/// value's expansions kept (`of=~/.bashrc`: bash expands a tilde after `=` in any word that
/// looks like an assignment, and the parser marks it). `None` when the key is not written
/// out before the first `=`.
pub(super) fn split(word: &Word) -> Option<(String, Word)> {
    if let Some(text) = word.static_value() {
        let (key, value) = text.split_once('=')?;
        let parts = if value.is_empty() {
            Vec::new()
        } else {
            vec![WordPart::SingleQuoted(value.to_string())]
        };
        return Some((
            key.to_string(),
            Word {
                span: word.span,
                parts,
            },
        ));
    }
    let WordPart::Literal(first) = word.parts.first()? else {
        return None;
    };
    let (key, value) = first.split_once('=')?;
    let mut parts = Vec::with_capacity(word.parts.len());
    if !value.is_empty() {
        parts.push(WordPart::Literal(value.to_string()));
    }
    parts.extend(word.parts[1..].iter().cloned());
    Some((
        key.to_string(),
        Word {
            span: word.span,
            parts,
        },
    ))
}

impl Eval<'_> {
    /// Check one `dd` operand (kind `dd-operand`): `text` is its static value if it has one.
    pub(super) fn dd_operand(
        &mut self,
        rule: &ProgramRule,
        text: Option<String>,
        span: Span,
        word: Option<&Word>,
    ) -> Option<Vec<Option<PathBuf>>> {
        let owned;
        let word = match word {
            Some(w) => w,
            None => {
                owned = Word {
                    span,
                    parts: vec![WordPart::SingleQuoted(text.unwrap_or_default())],
                };
                &owned
            }
        };
        let name = &rule.name;
        let Some((key, value)) = split(word) else {
            self.reason(
                ReasonCode::DdOperand,
                Verdict::Deny,
                Some(&rule.rule),
                format!("`{name}` takes operands written `KEY=VALUE` with the key written out (`if=FILE`, `of=FILE`, `bs=N`, `count=N`, ...)"),
                span,
            );
            return None;
        };
        let Some(kind) = dd_key(&key) else {
            self.reason(
                ReasonCode::DdOperand,
                Verdict::Deny,
                Some(&rule.rule),
                format!(
                    "`{key}=` is not an operand of `{name}` this policy knows (allowed: if, of, {})",
                    TEXT_KEYS.join(", ")
                ),
                span,
            );
            return None;
        };
        // One word only: `count=$n` with `n='1 of=x'` would be two operands when it runs.
        let known = self.known();
        if value.fields(&known).is_many() {
            self.reason(
                ReasonCode::WordSplit,
                Verdict::Deny,
                Some(&rule.rule),
                format!("this `{name}` operand may become several words when it runs, and each is an operand: name it exactly"),
                span,
            );
            return None;
        }
        match kind {
            DdKey::Text => None,
            DdKey::Read | DdKey::Write if value.parts.is_empty() => {
                self.reason(
                    ReasonCode::DdOperand,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!("`{key}=` of `{name}` without a file"),
                    span,
                );
                None
            }
            DdKey::Read => self.path(&value, false),
            DdKey::Write => {
                let resolved = self.path(&value, true);
                self.device_operand(rule, resolved.as_deref(), span);
                resolved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(parts: Vec<WordPart>) -> Word {
        Word {
            span: Span::default(),
            parts,
        }
    }

    #[test]
    fn splits_at_the_first_equals_sign_and_keeps_expansions() {
        let (k, v) = split(&word(vec![WordPart::Literal("of=a=b".into())])).unwrap();
        assert_eq!(k, "of");
        assert_eq!(v.static_value().as_deref(), Some("a=b"));
        let (k, v) = split(&word(vec![
            WordPart::Literal("of=".into()),
            WordPart::Tilde(String::new()),
            WordPart::Literal("/.bashrc".into()),
        ]))
        .unwrap();
        assert_eq!(k, "of");
        assert!(matches!(v.parts.first(), Some(WordPart::Tilde(_))));
        // A key that is not written out is not known.
        assert!(split(&word(vec![WordPart::Tilde(String::new())])).is_none());
        assert!(split(&word(vec![WordPart::Literal("if".into())])).is_none());
    }

    #[test]
    fn knows_only_dd_keys() {
        assert_eq!(dd_key("if"), Some(DdKey::Read));
        assert_eq!(dd_key("of"), Some(DdKey::Write));
        assert_eq!(dd_key("conv"), Some(DdKey::Text));
        assert_eq!(dd_key("iff"), None);
        assert_eq!(dd_key(""), None);
    }
}
