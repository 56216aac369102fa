//! The [`OutputFilter`] seam: what happens to output before the model sees it, and the two
//! shipped filters ([`RedactThenTruncate`], [`PassThrough`]).

use std::sync::Arc;

use super::executor::Output;
use super::session::StreamRedaction;
use crate::policy::Policy;
use crate::redact::{RedactError, RuleSet};
use crate::truncate::TruncateConfig;

/// What happens to a command's output before the model sees it: redaction, then truncation.
pub trait OutputFilter: Send + Sync {
    /// Turn raw output into the text for the model.
    fn filter(&self, output: &[u8]) -> String;

    /// Only the redaction part, for text that is shaped further before [`Self::filter`]
    /// (the text editor numbers a file's lines after redacting it). By default the whole
    /// filter: never less redaction than [`Self::filter`] does.
    fn redact(&self, output: &[u8]) -> Vec<u8> {
        self.filter(output).into_bytes()
    }

    /// Turn an executor's output into the text for the model, accounting for what the
    /// executor discarded while it streamed ([`Output::gap`]). By default, [`Self::filter`]
    /// on the bytes (the executor's own marker line stays in them).
    fn filter_output(&self, output: &Output) -> String {
        self.filter(&output.output)
    }
}

/// The shipped filter, and the [`Guard`](super::Guard)'s default: credential redaction ([`crate::redact`],
/// the built-in rule pack or your own), then truncation to the model's budget
/// ([`crate::truncate`]: head and more tail kept, never cutting a redaction marker).
#[derive(Debug, Clone, Default)]
pub struct RedactThenTruncate {
    rules: Option<Arc<RuleSet>>,
    truncate: TruncateConfig,
}

impl RedactThenTruncate {
    /// Redact with `rules` (say, the built-in pack extended by a policy's `[redact]` table),
    /// then truncate to `truncate`.
    pub fn new(rules: RuleSet, truncate: TruncateConfig) -> RedactThenTruncate {
        RedactThenTruncate {
            rules: Some(Arc::new(rules)),
            truncate,
        }
    }

    /// The same rules, for redacting a [`BashSession`](super::BashSession)'s output as it streams
    /// ([`SessionConfig::redaction`](super::SessionConfig::redaction)).
    pub fn stream_redaction(&self) -> StreamRedaction {
        match &self.rules {
            Some(rules) => StreamRedaction::Rules(rules.clone()),
            None => StreamRedaction::Builtin,
        }
    }

    /// Redact with the built-in pack, then truncate to `truncate`.
    pub fn builtin(truncate: TruncateConfig) -> RedactThenTruncate {
        RedactThenTruncate {
            rules: None,
            truncate,
        }
    }

    /// Redact with the rules a policy's `[redact]` table gives (the built-in pack when it has
    /// none), then truncate to `truncate`. An invalid `[redact]` table is an error, never a
    /// silent fallback.
    pub fn for_policy(
        policy: &Policy,
        truncate: TruncateConfig,
    ) -> Result<RedactThenTruncate, RedactError> {
        let Some(config) = &policy.redact else {
            return Ok(RedactThenTruncate::builtin(truncate));
        };
        Ok(RedactThenTruncate::new(
            RuleSet::with_config(config)?,
            truncate,
        ))
    }
}

impl OutputFilter for RedactThenTruncate {
    fn filter(&self, output: &[u8]) -> String {
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        let (redacted, _) = rules.redact(output);
        crate::truncate::truncate(&redacted, &self.truncate)
    }

    fn redact(&self, output: &[u8]) -> Vec<u8> {
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        rules.redact(output).0
    }

    /// The executor's marker line is replaced by the gap it stands for, so that the one marker
    /// the model sees counts every line and byte left out, by the executor and by truncation.
    fn filter_output(&self, output: &Output) -> String {
        let bytes = &output.output;
        let Some((gap, head, tail)) = output
            .gap
            .as_ref()
            .and_then(|g| Some((g, bytes.get(..g.marker.start)?, bytes.get(g.marker.end..)?)))
        else {
            return self.filter(bytes);
        };
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        let mut t = crate::truncate::Truncator::new(&self.truncate);
        t.feed(&rules.redact(head).0);
        t.skip(gap.lines, gap.bytes);
        t.feed(&rules.redact(tail).0);
        t.finish()
    }
}

/// A filter that does not redact: lossy UTF-8 and a byte cap. For tests and for output that
/// is known to hold no secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassThrough {
    /// At most this many bytes of output are kept.
    pub max_bytes: usize,
}

impl Default for PassThrough {
    fn default() -> PassThrough {
        PassThrough { max_bytes: 30_000 }
    }
}

impl OutputFilter for PassThrough {
    fn filter(&self, output: &[u8]) -> String {
        if output.len() <= self.max_bytes {
            return String::from_utf8_lossy(output).into_owned();
        }
        let mut text = String::from_utf8_lossy(&output[..self.max_bytes]).into_owned();
        // A character cut in two at the cap shows as U+FFFD; drop it.
        if text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push_str(&format!(
            "\n[... {} more bytes of output not shown ...]",
            output.len() - self.max_bytes
        ));
        text
    }
}
