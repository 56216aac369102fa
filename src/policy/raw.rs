//! The policy file as written: the top-level table of serde types mirroring the TOML, before
//! validation. Each section's own raw type is beside its validation in `load/` (cargo-deny
//! style) and re-exported here.
//!
//! Every field is optional here so that included files can be merged before defaults apply.
//! Values that validation must point at carry their [`Spanned`] location. Unknown keys are
//! not rejected by serde here: the loader collects every one of them (with `serde_ignored`)
//! so that a file with several typos reports them all at once.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

pub(crate) use super::load::{
    RawEnv, RawExamples, RawLimits, RawMeta, RawPaths, RawProgram, RawRedirects, RawShell,
    RawWrappers,
};

/// A whole policy file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    /// Name, description, default verdict and includes.
    pub policy: Option<RawMeta>,
    /// Limits on the size and structure of one command.
    pub limits: Option<RawLimits>,
    /// Shell-level switches: substitutions, functions, background jobs, expansions.
    pub shell: Option<RawShell>,
    /// Where reads and writes are allowed (lexical, against the working directory).
    pub paths: Option<RawPaths>,
    /// Redirections: `2>&1`, here-documents, `< file`, `> file`.
    pub redirects: Option<RawRedirects>,
    /// Assignments to variables, wherever they happen, and reads of the environment.
    /// (Boxed: the raw policy lives on the stack of the loader, which must fit a small one.)
    pub env: Option<Box<RawEnv>>,
    /// Programs that run other programs (`bash -c`, `timeout`, ...) that are unwrapped and checked.
    pub wrappers: Option<RawWrappers>,
    /// The allowlist: one rule per program name.
    #[serde(default)]
    pub programs: BTreeMap<String, RawProgram>,
    /// Commands that must be allowed, asked or denied; checked at load and by `policy-check test`.
    pub examples: Option<RawExamples>,
    /// Output redaction settings (validated by the redaction module).
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub redact: Option<toml::Value>,
    /// The kernel sandbox of the reference executor (Landlock, limits) and the rules that
    /// apply only under it.
    pub sandbox: Option<super::sandbox::RawSandbox>,
    /// Workspace snapshots before every call that may write, for `policy-check undo`.
    pub snapshots: Option<Box<super::snapshots::RawSnapshots>>,
}

/// A verdict as written in a policy (schema only).
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
#[allow(dead_code)]
pub(crate) enum VerdictName {
    /// Runs without asking.
    Allow,
    /// Runs only if a person approves.
    Ask,
    /// Does not run.
    Deny,
}

/// `[shell] substitutions`: "inner" or a verdict (schema only).
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
#[allow(dead_code)]
pub(crate) enum SubstitutionSetting {
    /// Allowed when every inner command is allowed.
    Inner,
    /// Every substitution is allowed (inner commands are still checked).
    Allow,
    /// Every substitution needs approval.
    Ask,
    /// Every substitution is denied.
    Deny,
}
