//! Credential redaction of command output, before it reaches the model.
//!
//! A [`RuleSet`] is a compiled pack of rules (the built-in pack lives in `src/redact/rules.toml`
//! and uses the same TOML schema users extend it with, see [`RedactConfig`] and [`RuleDef`]).
//! Each secret a rule finds is replaced by `[REDACTED:<rule-id>]`; the text around it stays:
//!
//! ```
//! let out = shellgate::redact::redact(b"aws_secret_access_key = q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iOnB5t\n");
//! assert_eq!(out, b"aws_secret_access_key = [REDACTED:aws-secret-access-key]\n");
//! ```
//!
//! # How it runs
//! Input is cut into lines (segments of at most [`MAX_LINE`] bytes: a longer line is cut after
//! the last blank, comma or semicolon in the second half of each window, else at the window's
//! end). Case-sensitive keyword searchers scan the input: aho-corasick's packed Teddy searcher,
//! in groups of at most 20 keywords (Teddy handles up to 64, but measured on build logs, groups
//! of 16 to 24 cost least: larger groups verify more false candidates, smaller ones make more
//! passes). A rule's regex runs only on the lines holding one of its keywords, and lines with no
//! keyword are copied as they are. Keywords are a speed/recall trade-off: a regex never sees a
//! line without one, and a match is only taken where it holds one (the search stops after the
//! rule's last keyword in the line), so a rule lists the casings it catches (`token`, `TOKEN`). Matches are filtered by the rule's entropy
//! threshold, stopwords and allow patterns, and by the global allow patterns; of overlapping
//! matches, the rule listed first wins. A match that touches an existing `[REDACTED:...]` marker
//! is ignored, so redaction is idempotent.
//!
//! A built-in rule's regexes compile when one of its keywords first shows up, and the global
//! allow patterns compile once for the whole set, so a process that redacts a few lines pays
//! for the few rules they need (user rules compile when their set is built, so that their
//! errors are reported then). The test suite proves, from each regex's syntax tree, that every
//! match of a built-in rule holds one of its keywords.
//!
//! A section rule (Kubernetes `data:`) can be limited by a sibling key of its mapping
//! ([`SectionIf`]: `kind: Secret`); such a section is held, bounded, until its mapping says
//! whether it is redacted; when the mapping ends undecided (output cut by `head` or `grep`),
//! each of its values is redacted if it is shaped like secret data (base64, or a token-like
//! run with a secret's entropy), and plain settings stay. Section state reads a line that
//! starts with a redaction marker as the key line it was, so redacted output is read as the
//! same mappings: redacting it again changes nothing.
//!
//! Multi-line private-key blocks are held from their `-----BEGIN` line until their `-----END`
//! line (at most [`MAX_BLOCK_LINES`] lines and [`MAX_BLOCK_BYTES`] bytes of body); the body
//! becomes one marker line. A block that does not close (a non-key line, the end of the stream,
//! or the bound) is redacted all the same; past the bound, the rest of its body is dropped.
//!
//! # Streaming
//! [`Redactor`] takes chunks of any size and writes exactly what [`RuleSet::redact`] writes for
//! the whole input: both run the same line machine. Keep stdout and stderr apart, one
//! `Redactor` each. Input is bytes: invalid UTF-8 passes through untouched unless it is part of
//! a secret.

mod config;
mod engine;
mod gate;
mod stream;

pub use config::{BlockDef, RedactConfig, RedactError, RuleDef, SectionIf};
pub use engine::{entropy_threshold, shannon_entropy, RuleSet, BUILTIN_RULES};
pub use stream::Redactor;

use std::collections::BTreeMap;

/// Longest segment the line machine works on, in bytes; longer lines are cut (see module docs).
pub const MAX_LINE: usize = 64 * 1024;
/// Most body lines held for one multi-line block.
pub const MAX_BLOCK_LINES: usize = 1024;
/// Most body bytes held for one multi-line block.
pub const MAX_BLOCK_BYTES: usize = 128 * 1024;

/// Redacts a buffer with the built-in pack (bytes in, bytes out; a fuzzing entry point).
pub fn redact(input: &[u8]) -> Vec<u8> {
    RuleSet::builtin().redact(input).0
}

/// How many secrets each rule redacted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    counts: BTreeMap<String, u64>,
}

impl Stats {
    pub(crate) fn from_counts(set: &RuleSet, counts: &[u64]) -> Stats {
        Stats {
            counts: set
                .ids()
                .zip(counts)
                .filter(|(_, &c)| c > 0)
                .map(|(id, &c)| (id.to_string(), c))
                .collect(),
        }
    }

    /// Redactions made by one rule.
    pub fn get(&self, id: &str) -> u64 {
        self.counts.get(id).copied().unwrap_or(0)
    }

    /// All redactions.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// (rule id, count) for every rule that redacted something, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.iter().map(|(k, &v)| (k.as_str(), v))
    }

    /// Adds another set of counts (e.g. stdout's and stderr's).
    pub fn merge(&mut self, other: &Stats) {
        for (k, v) in &other.counts {
            *self.counts.entry(k.clone()).or_insert(0) += v;
        }
    }
}
