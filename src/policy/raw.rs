//! The policy file as written: serde types mirroring the TOML, before validation.
//!
//! Every field is optional here so that included files can be merged before defaults apply.
//! Values that validation must point at carry their [`Spanned`] location. Unknown keys are
//! not rejected by serde here: the loader collects every one of them (with `serde_ignored`)
//! so that a file with several typos reports them all at once.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// A whole policy file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawPolicy {
    pub policy: Option<RawMeta>,
    pub limits: Option<RawLimits>,
    pub shell: Option<RawShell>,
    pub paths: Option<RawPaths>,
    pub redirects: Option<RawRedirects>,
    pub env: Option<RawEnv>,
    pub wrappers: Option<RawWrappers>,
    #[serde(default)]
    pub programs: BTreeMap<String, RawProgram>,
    pub examples: Option<RawExamples>,
    /// Output redaction settings (validated by the redaction module).
    pub redact: Option<toml::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawMeta {
    pub name: Option<String>,
    pub description: Option<String>,
    pub default: Option<Spanned<String>>,
    pub message: Option<String>,
    #[serde(default)]
    pub include: Vec<Spanned<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawLimits {
    pub max_bytes: Option<Spanned<i64>>,
    pub max_depth: Option<Spanned<i64>>,
    pub max_commands: Option<Spanned<i64>>,
    pub max_nesting: Option<Spanned<i64>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawShell {
    pub substitutions: Option<Spanned<String>>,
    pub functions: Option<Spanned<String>>,
    pub background: Option<Spanned<String>>,
    pub arithmetic_variables: Option<Spanned<String>>,
    pub indirect_expansion: Option<Spanned<String>>,
    pub unresolved_paths: Option<Spanned<String>>,
    pub dynamic_arguments: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawPaths {
    #[serde(default)]
    pub read: Vec<Spanned<String>>,
    #[serde(default)]
    pub write: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny_read: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny_write: Vec<Spanned<String>>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawRedirects {
    pub fd_duplication: Option<Spanned<String>>,
    pub here_documents: Option<Spanned<String>>,
    pub read: Option<Spanned<String>>,
    pub write: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawEnv {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub ask: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
    pub default: Option<Spanned<String>>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawWrappers {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub ask: Vec<Spanned<String>>,
    pub message: Option<String>,
}

/// A program rule (also used for subcommands).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawProgram {
    pub verdict: Option<Spanned<String>>,
    pub message: Option<String>,
    #[serde(default)]
    pub single_dash_long: bool,
    #[serde(default)]
    pub options_with_value: Vec<Spanned<String>>,
    #[serde(default)]
    pub option_kinds: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub allow_options: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub deny_options: Vec<Spanned<String>>,
    #[serde(default)]
    pub ask_options: Vec<Spanned<String>>,
    pub options_message: Option<String>,
    #[serde(default)]
    pub options_with_optional_value: Vec<Spanned<String>>,
    #[serde(default)]
    pub write_options: Vec<Spanned<String>>,
    #[serde(default)]
    pub terminal_options: Vec<Spanned<String>>,
    #[serde(default)]
    pub delegate_options: Vec<Spanned<String>>,
    #[serde(default)]
    pub flags: Vec<Spanned<String>>,
    #[serde(default)]
    pub inherit_options: bool,
    pub extra_operands: Option<Spanned<String>>,
    #[serde(default)]
    pub required_options: Vec<Spanned<String>>,
    #[serde(default)]
    pub option_values: BTreeMap<String, Spanned<String>>,
    pub operands: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    pub pattern_options: Vec<Spanned<String>>,
    pub min_operands: Option<Spanned<i64>>,
    #[serde(default)]
    pub args: Vec<RawArgRule>,
    #[serde(default)]
    pub subcommands: BTreeMap<String, RawProgram>,
    pub unknown_subcommand: Option<Spanned<String>>,
}

/// `"path-read"` or `["pattern", "path-read..."]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct RawArgRule {
    pub pattern: Spanned<String>,
    pub verdict: Option<Spanned<String>>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RawExamples {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub ask: Vec<Spanned<String>>,
    #[serde(default)]
    pub deny: Vec<Spanned<String>>,
}
