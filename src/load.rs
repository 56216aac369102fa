//! Loading a policy whole: validate it ([`crate::policy`]), then run its `[examples]` through
//! the evaluator ([`crate::evaluate()`]).
//!
//! This layer sits above both, so that the policy layer never runs the evaluator: `policy`
//! turns TOML into a validated [`Policy`] (or every problem with its location), and only here
//! is that policy asked to decide the commands its examples promise. Every public way to load
//! a policy ([`Policy::from_file`], [`Policy::from_toml`], [`Policy::shipped`],
//! [`Policy::from_name_or_file`]) goes through here, and so does the linter's entry point.
//!
//! # Proven examples
//!
//! Running the examples is most of the time a one-command `policy-check check` takes, and for
//! the shipped policies it proves nothing new: their examples are run by a test on every
//! change. So a load whose text is byte for byte the text of a shipped policy compiled into
//! this binary, and whose [`fingerprint`] is the one recorded in [`PROVEN`] (which that test
//! keeps current), does not run them again ([`Examples::Proven`]). Any other text, an edited
//! copy of a shipped file included, has its examples run at load, as before. `policy-check
//! lint` and `test` always run them ([`ExampleCheck::Always`]).
//!
//! Skipping is sound because the outcome of a shipped text's examples depends on nothing but
//! that text: its includes are shipped names (resolved inside the binary wherever the file
//! is), and examples are decided in [`Context::example`], which reads no file.

use std::path::Path;

use crate::codes::DiagnosticCode;
use crate::evaluate::{self, Context, SandboxState};
use crate::policy::sandbox::SandboxMode;
use crate::policy::{self, lint, Diagnostic, Policy, PolicyError, Severity, SHIPPED};

/// Whether a load runs a policy's `[examples]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExampleCheck {
    /// Run them, whatever the policy (`policy-check lint` and `test`).
    Always,
    /// Run them unless the text is a shipped policy's whose examples are proven ([`PROVEN`]).
    UnlessProven,
}

/// What a load did with a policy's `[examples]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Examples {
    /// They were run through the evaluator, and every one is decided as it says.
    Run,
    /// They were not run: the text is a shipped policy's, byte for byte, with a current
    /// [`PROVEN`] fingerprint.
    Proven,
}

/// The shipped policies whose examples a test has run on exactly this text: `(name,
/// fingerprint of its text)`. The test `load::tests::proven_fingerprints_are_current` fails
/// (and prints the new value) when a shipped file changes; a stale entry only means that
/// policy's examples are run at load again.
pub const PROVEN: &[(&str, u64)] = &[
    ("read-only", 0x60de_f576_bc61_84ce),
    ("developer", 0x8182_dc9b_4b12_d2a1),
];

/// FNV-1a (64 bit) of `text`: a marker of which text was proven, not an identity (a load
/// is [`Examples::Proven`] only if its text also equals the shipped one byte for byte).
pub const fn fingerprint(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The fingerprint of each shipped policy's text, in [`SHIPPED`] order, computed at compile
/// time.
const SHIPPED_FINGERPRINTS: [u64; SHIPPED.len()] = {
    let mut out = [0; SHIPPED.len()];
    let mut i = 0;
    while i < SHIPPED.len() {
        out[i] = fingerprint(SHIPPED[i].1);
        i += 1;
    }
    out
};

/// Whether `source` is the text of a shipped policy whose examples are proven.
fn proven(source: &str) -> bool {
    SHIPPED
        .iter()
        .zip(SHIPPED_FINGERPRINTS)
        .any(|(&(name, text), fp)| {
            text == source && PROVEN.iter().any(|&(n, p)| n == name && p == fp)
        })
}

impl Policy {
    /// Load a policy file (and the files it includes).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        load_file(path.as_ref(), ExampleCheck::UnlessProven).map(|(p, _)| p)
    }

    /// Load a policy from TOML text. `origin` names it in diagnostics; includes are resolved
    /// relative to `origin`'s directory.
    pub fn from_toml(source: &str, origin: &str) -> Result<Policy, PolicyError> {
        load_toml(source, origin, ExampleCheck::UnlessProven).map(|(p, _)| p)
    }

    /// One of the policies shipped inside the binary: `read-only` or `developer`. Another
    /// name is [`PolicyError::UnknownShipped`].
    pub fn shipped(name: &str) -> Result<Policy, PolicyError> {
        load_shipped(name, ExampleCheck::UnlessProven).map(|(p, _)| p)
    }

    /// A shipped policy name, or else a file path.
    pub fn from_name_or_file(spec: &str) -> Result<Policy, PolicyError> {
        load_name_or_file(spec, ExampleCheck::UnlessProven).map(|(p, _)| p)
    }
}

/// [`Policy::from_file`], saying whether the examples were run.
pub fn load_file(path: &Path, check: ExampleCheck) -> Result<(Policy, Examples), PolicyError> {
    let source = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_toml(&source, &path.display().to_string(), check)
}

/// [`Policy::from_toml`], saying whether the examples were run.
pub fn load_toml(
    source: &str,
    origin: &str,
    check: ExampleCheck,
) -> Result<(Policy, Examples), PolicyError> {
    let policy = policy::load_str(source, origin)?;
    if check == ExampleCheck::UnlessProven && proven(source) {
        return Ok((policy, Examples::Proven));
    }
    let failed = failed_examples(&policy, Some((origin, source)));
    if failed.is_empty() {
        Ok((policy, Examples::Run))
    } else {
        Err(PolicyError::Invalid(failed))
    }
}

/// [`Policy::shipped`], saying whether the examples were run.
pub fn load_shipped(name: &str, check: ExampleCheck) -> Result<(Policy, Examples), PolicyError> {
    match policy::shipped_source(name) {
        Some(src) => load_toml(src, &format!("shipped:{name}"), check),
        None => Err(PolicyError::UnknownShipped {
            name: name.to_string(),
            known: SHIPPED.iter().map(|(n, _)| *n).collect(),
        }),
    }
}

/// [`Policy::from_name_or_file`], saying whether the examples were run.
pub fn load_name_or_file(
    spec: &str,
    check: ExampleCheck,
) -> Result<(Policy, Examples), PolicyError> {
    match policy::shipped_source(spec) {
        Some(_) => load_shipped(spec, check),
        None => match load_file(Path::new(spec), check) {
            // A bare word that is no file was meant as a shipped name: say which ones exist.
            Err(PolicyError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && looks_like_a_name(spec) =>
            {
                let known: Vec<&'static str> = SHIPPED.iter().map(|(n, _)| *n).collect();
                Err(PolicyError::NotFound {
                    spec: spec.to_string(),
                    suggestion: closest_name(spec, &known),
                    known,
                })
            }
            other => other,
        },
    }
}

/// A `--policy` value with no directory part and no `.toml` ending: a name, not a path.
fn looks_like_a_name(spec: &str) -> bool {
    !spec.contains(std::path::MAIN_SEPARATOR) && !spec.contains('/') && !spec.ends_with(".toml")
}

/// The shipped name closest to `spec`, if it is close enough to be a misspelling (the same
/// measure and threshold clap uses for its "did you mean").
fn closest_name(spec: &str, known: &[&'static str]) -> Option<&'static str> {
    known
        .iter()
        .map(|k| (strsim::jaro(spec, k), *k))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Each example of `policy` whose verdict is not the one it is written with. `source` is the
/// text of the top policy file (`(origin, text)`), so that a failure in one of its examples
/// points at the bytes of the command the deciding reason is about, not at the quote.
fn failed_examples(policy: &Policy, source: Option<(&str, &str)>) -> Vec<Diagnostic> {
    let mut ctx = Context::example();
    // Examples show the policy as it is meant to run: sandboxed when it asks for the sandbox.
    if policy.sandbox.mode == SandboxMode::Enforce {
        ctx.sandbox = SandboxState::Enforced;
    }
    let mut diags = Vec::new();
    for ex in &policy.examples {
        let decision = evaluate::evaluate(policy, &ctx, &ex.command);
        if decision.verdict != ex.expect {
            let why = decision
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect::<Vec<_>>()
                .join("; ");
            diags.push(Diagnostic::new(
                Severity::Error,
                DiagnosticCode::PolicyExampleFailed,
                format!(
                    "example `{}` must be {} but is {}{}",
                    ex.command,
                    ex.expect,
                    decision.verdict,
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(" ({why})")
                    }
                ),
                example_location(&ex.rule.location, &ex.command, &decision, source),
            ));
        }
    }
    diags
}

/// Where a failed example's diagnostic points: under the span of the reason that decided it
/// (the strictest one), when the example is written in `source` as a one-line string whose
/// text is the command byte for byte (no escapes); else at the example's opening quote.
fn example_location(
    at: &crate::policy::Location,
    command: &str,
    decision: &crate::evaluate::Decision,
    source: Option<(&str, &str)>,
) -> crate::policy::Location {
    let fallback = at.clone();
    let Some((origin, text)) = source else {
        return fallback;
    };
    let Some(reason) = decision.reasons.iter().max_by_key(|r| r.verdict) else {
        return fallback;
    };
    if at.file != origin || at.line == 0 || at.col == 0 {
        return fallback;
    }
    let Some(line) = text.lines().nth(at.line - 1) else {
        return fallback;
    };
    let mut chars = line.chars().skip(at.col - 1);
    let Some(quote @ ('"' | '\'')) = chars.next() else {
        return fallback;
    };
    let written: String = chars.take_while(|&c| c != quote).collect();
    if written != command || (quote == '"' && command.contains('\\')) {
        return fallback;
    }
    let Some(before) = command.get(..reason.span.start.min(command.len())) else {
        return fallback;
    };
    crate::policy::Location {
        col: at.col + 1 + before.chars().count(),
        ..fallback
    }
}

/// What [`lint_name_or_file`] found in one policy: every load error and every warning, in one
/// run, and whether the examples could be run.
#[derive(Debug)]
pub struct LintReport {
    /// Load errors (`policy-*`, failed examples included) and `lint-*` warnings: this file's
    /// first, then included ones, each by position.
    pub diagnostics: Vec<Diagnostic>,
    /// The `[examples]` were run. They are not when the policy has load errors: a policy
    /// that does not load decides nothing.
    pub examples_run: bool,
}

/// Lint a policy file (or a shipped policy name): its load errors, its failed examples and
/// [`lint::lint_policy`]'s warnings, all in one run. Where a part of the policy fails to
/// load, the rest is still linted, so fixing one error never uncovers warnings that were
/// there all along. A file that cannot be read is an `Err` (exit 2 in `policy-check lint`).
pub fn lint_name_or_file(spec: &str) -> Result<LintReport, PolicyError> {
    let library = spec
        .strip_prefix("programs:")
        .and_then(policy::library_source);
    let (source, origin) = match (policy::shipped_source(spec), library) {
        (Some(src), _) => (src.to_string(), format!("shipped:{spec}")),
        // A module of the program library, linted as it is included (program rules only).
        (None, Some(src)) => (src.to_string(), spec.to_string()),
        (None, None) => {
            let path = Path::new(spec);
            let source = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            (source, path.display().to_string())
        }
    };
    let (policy, mut out) = policy::load_str_lenient(&source, &origin)?;
    let examples_run = out.is_empty();
    if examples_run {
        out.extend(failed_examples(&policy, Some((&origin, &source))));
    }
    out.extend(lint::lint_policy(&policy, &origin));
    out.extend(policy::lint_option_tables(&source, &origin));
    // Stable order: this file first, then included ones, each by position; at one place,
    // errors before warnings.
    out.sort_by_key(|d| {
        (
            d.location.file != origin,
            d.location.line,
            d.location.col,
            d.severity != Severity::Error,
        )
    });
    Ok(LintReport {
        diagnostics: out,
        examples_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What lets a shipped policy load without its examples: each [`PROVEN`] entry is the
    /// fingerprint of the shipped text as it is now, and that text's examples pass. After an
    /// edit of `policies/*.toml`, put the printed value in [`PROVEN`].
    #[test]
    fn proven_fingerprints_are_current() {
        assert_eq!(
            PROVEN.len(),
            SHIPPED.len(),
            "one PROVEN entry per shipped policy"
        );
        for (i, &(name, text)) in SHIPPED.iter().enumerate() {
            let fp = fingerprint(text);
            assert_eq!(SHIPPED_FINGERPRINTS[i], fp);
            let (policy, examples) =
                load_shipped(name, ExampleCheck::Always).expect("shipped policy loads");
            assert_eq!(examples, Examples::Run);
            assert!(!policy.examples.is_empty(), "{name} has examples");
            assert_eq!(failed_examples(&policy, None), Vec::new(), "{name}");
            let recorded = PROVEN.iter().find(|(n, _)| *n == name).map(|(_, p)| *p);
            assert_eq!(
                recorded,
                Some(fp),
                "policies/{name}.toml changed and its examples pass: set its PROVEN entry in \
                 src/load.rs to {fp:#018x}"
            );
        }
    }

    /// Why a proven text may be loaded from anywhere: what it includes is resolved inside the
    /// binary, not next to the file.
    #[test]
    fn shipped_policies_include_only_shipped_names() {
        for &(name, text) in SHIPPED {
            let table: toml::Table = text.parse().expect("shipped TOML");
            let includes = table
                .get("policy")
                .and_then(|p| p.get("include"))
                .and_then(|i| i.as_array())
                .cloned()
                .unwrap_or_default();
            for inc in includes {
                let inc = inc.as_str().expect("an include is a string");
                assert!(
                    policy::shipped_source(inc).is_some(),
                    "{name} includes `{inc}`, which is not a shipped name: a copy of it \
                     elsewhere would read another file, so it cannot be PROVEN"
                );
            }
        }
        let (dev, _) = load_shipped("developer", ExampleCheck::Always).expect("loads");
        assert_eq!(dev.sources, ["shipped:read-only", "shipped:developer"]);
    }

    #[test]
    fn the_fingerprint_is_fnv1a() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fingerprint(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fingerprint("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fingerprint("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn only_a_shipped_text_with_a_current_fingerprint_is_proven() {
        for &(_, text) in SHIPPED {
            assert!(proven(text));
            assert!(!proven(&format!("{text}\n")));
            assert!(!proven(&text[..text.len() - 1]));
            // One byte changed in the middle, same length.
            let mut bytes = text.as_bytes().to_vec();
            let mid = (bytes.len() / 2..bytes.len())
                .find(|&i| bytes[i].is_ascii())
                .expect("an ASCII byte after the middle");
            bytes[mid] = if bytes[mid] == b' ' { b'\t' } else { b' ' };
            assert!(!proven(
                &String::from_utf8(bytes).expect("an ASCII byte for another")
            ));
        }
        assert!(!proven(""));
    }
}
