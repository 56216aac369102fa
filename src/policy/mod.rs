//! Policies: TOML files validated (every problem, with its file:line:col) and compiled once.
//!
//! Loading goes in stages, after cargo-deny: the TOML is read into raw serde types
//! (`raw.rs`), each file is validated against its own source text so that every diagnostic
//! points into the right file, included files are applied first, and the result is an
//! immutable [`Policy`] that is cheap to share between threads and evaluates without
//! recompiling anything.
//!
//! This layer never runs the evaluator: the public loaders ([`Policy::from_toml`] and the
//! like) are in [`crate::load`], which validates here and then checks the `[examples]`.

pub mod binary;
mod compiled;
mod index;
pub mod lint;
mod load;
pub mod migrate;
pub mod program_map;
pub(crate) mod raw;
pub mod sandbox;
pub mod schema;
pub mod snapshots;

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::codes::DiagnosticCode;

pub use compiled::{
    ArgKind, ArgRule, EnvReads, EnvRules, Example, Glob, LazyGlob, Limits, NamePattern,
    OperandSpec, PathAnchor, PathPattern, PathRules, Policy, ProgramRule, RedirectRules, Setting,
    ShellRules, WrapperRules,
};
pub(crate) use index::OptionFacts;
pub(crate) use load::{
    library_source, lint_option_tables, load_str, load_str_lenient, shipped_source,
};
pub use load::{LIBRARY, SHIPPED};

/// What a policy says about (part of) a command. Ordered so that the strictest wins with
/// `max()`: `Allow < Ask < Deny`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Runs without asking.
    Allow,
    /// Runs only if a person approves.
    Ask,
    /// Does not run.
    Deny,
}

impl Verdict {
    /// The lowercase name used in policies and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }

    /// Parse `allow` / `ask` / `deny`.
    pub fn parse(s: &str) -> Option<Verdict> {
        match s {
            "allow" => Some(Verdict::Allow),
            "ask" => Some(Verdict::Ask),
            "deny" => Some(Verdict::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A place in a policy file: `file:line:col` (1-based), or a built-in default.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Location {
    /// The file, or `<built-in>` for defaults, or `shipped:NAME` for embedded policies.
    pub file: String,
    /// 1-based line (0 when not applicable).
    pub line: usize,
    /// 1-based column in characters (0 when not applicable).
    pub col: usize,
}

impl Location {
    /// The location of a built-in default.
    pub fn builtin() -> Location {
        Location {
            file: "<built-in>".into(),
            line: 0,
            col: 0,
        }
    }

    /// The location of byte `offset` in `source`, which is the text of `file`.
    pub fn at(file: &str, source: &str, offset: usize) -> Location {
        let offset = offset.min(source.len());
        let before = source.get(..offset).unwrap_or(source);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        Location {
            file: file.to_string(),
            line,
            col,
        }
    }
}

/// Where each line of a text starts, so that the [`Location`] of an offset is a binary search
/// and not a count of the newlines before it (a policy of 1,500 lines has thousands of rules,
/// each with its location).
pub(crate) struct Lines<'a> {
    source: &'a str,
    /// The offset of each line's first byte: 0, then one past each `\n`.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(source: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', source.as_bytes()).map(|i| i + 1))
            .collect();
        Lines { source, starts }
    }

    /// [`Location::at`]`(file, source, offset)`.
    pub(crate) fn at(&self, file: &str, offset: usize) -> Location {
        let mut offset = offset.min(self.source.len());
        if !self.source.is_char_boundary(offset) {
            // As `Location::at`: the whole text is before an offset inside a character.
            offset = self.source.len();
        }
        // The starts at or before `offset`: one more than the newlines before it.
        let line = self.starts.partition_point(|&s| s <= offset);
        let line_start = self.starts[line - 1];
        let col = self.source[line_start..offset].chars().count() + 1;
        Location {
            file: file.to_string(),
            line,
            col,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        }
    }
}

/// The policy rule a reason comes from: a dotted name and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct RuleRef {
    /// A dotted name such as `programs.find.deny_options` or `policy.default`.
    pub name: String,
    /// Where the rule is written.
    pub location: Location,
}

impl RuleRef {
    /// A rule that is a built-in default.
    pub fn builtin(name: &str) -> RuleRef {
        RuleRef {
            name: name.to_string(),
            location: Location::builtin(),
        }
    }
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.location)
    }
}

/// How bad a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The rule works but is probably not what was meant (a `lint-*` code).
    Warning,
    /// The policy does not load (a `policy-*` code).
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One problem found in a policy file: a load error, or a linter's warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error (the policy does not load) or warning (from the linter).
    pub severity: Severity,
    /// Stable kebab-case code: `policy-*` for load errors, `lint-*` for warnings (see the
    /// README for the list).
    pub code: &'static str,
    /// What is wrong and what to do.
    pub message: String,
    /// Where.
    pub location: Location,
}

impl Diagnostic {
    /// A problem of `severity` with `code` at `location`.
    pub(crate) fn new(
        severity: Severity,
        code: DiagnosticCode,
        message: impl Into<String>,
        location: Location,
    ) -> Diagnostic {
        Diagnostic {
            severity,
            code: code.as_str(),
            message: message.into(),
            location,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}[{}]: {}",
            self.location, self.severity, self.code, self.message
        )
    }
}

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// A policy file could not be read.
    #[error("{path}: cannot read policy: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The policy has problems; every one found is listed.
    #[error("{}", render_diagnostics(.0))]
    Invalid(Vec<Diagnostic>),
    /// No policy of this name is shipped inside the binary.
    #[error("no shipped policy is named `{name}` (shipped: {})", .known.join(", "))]
    UnknownShipped {
        /// The name asked for.
        name: String,
        /// The names that are shipped.
        known: Vec<&'static str>,
    },
    /// `--policy NAME` names neither a shipped policy nor an existing file: most often a
    /// misspelt shipped name, so the error offers the closest one.
    #[error(
        "`{spec}` is neither a shipped policy nor a file{}; shipped policies: {}, or give the path of a policy file",
        .suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        .known.join(", ")
    )]
    NotFound {
        /// What was asked for.
        spec: String,
        /// The shipped name closest to `spec`, when one is close.
        suggestion: Option<&'static str>,
        /// The names that are shipped.
        known: Vec<&'static str>,
    },
}

impl PolicyError {
    /// The diagnostics, if this is an invalid policy.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            PolicyError::Invalid(d) => d,
            PolicyError::Io { .. }
            | PolicyError::UnknownShipped { .. }
            | PolicyError::NotFound { .. } => &[],
        }
    }
}

fn render_diagnostics(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for (i, d) in diags.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&d.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Lines, Location};

    #[test]
    fn lines_agree_with_location_at_on_every_offset() {
        for text in [
            "",
            "\n",
            "a",
            "ab\ncd\n\nef",
            "\n\nx = \"é\"\n# ünïcode — ok\r\ny\n",
            "no newline at the end é",
        ] {
            let lines = Lines::new(text);
            for offset in 0..text.len() + 3 {
                assert_eq!(
                    lines.at("f.toml", offset),
                    Location::at("f.toml", text, offset),
                    "{text:?} at {offset}"
                );
            }
        }
    }
}
