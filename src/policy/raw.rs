//! The policy file as written: serde types mirroring the TOML, before validation.
//!
//! Every field is optional here so that included files can be merged before defaults apply.
//! Values that validation must point at carry their [`Spanned`] location. Unknown keys are
//! not rejected by serde here: the loader collects every one of them (with `serde_ignored`)
//! so that a file with several typos reports them all at once.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// A whole policy file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawPolicy {
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
    /// Assignments to variables, wherever they happen.
    pub env: Option<RawEnv>,
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
}

/// `[policy]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawMeta {
    /// The policy name.
    pub name: Option<String>,
    /// What the policy is for.
    pub description: Option<String>,
    /// The verdict for anything no rule names (usually "deny").
    #[schemars(with = "Option<VerdictName>")]
    pub default: Option<Spanned<String>>,
    /// Message for refusals by the default verdict.
    pub message: Option<String>,
    /// Policies applied first: a path relative to this file, or a shipped name ("read-only", "developer").
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub include: Vec<Spanned<String>>,
}

/// `[limits]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawLimits {
    /// Longest command accepted, in bytes (at least 1).
    #[schemars(with = "Option<u64>")]
    pub max_bytes: Option<Spanned<i64>>,
    /// Deepest syntax nesting (at least 1).
    #[schemars(with = "Option<u64>")]
    pub max_depth: Option<Spanned<i64>>,
    /// Most simple commands in one input, nested ones included (at least 1).
    #[schemars(with = "Option<u64>")]
    pub max_commands: Option<Spanned<i64>>,
    /// Deepest nesting of re-parsed payloads such as `bash -c` and `eval` (at least 0).
    #[schemars(with = "Option<u64>")]
    pub max_nesting: Option<Spanned<i64>>,
}

/// `[shell]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawShell {
    /// `$(..)`, backticks, `<(..)`: "inner" allows them when every inner command is allowed; a verdict applies to each.
    #[schemars(with = "Option<SubstitutionSetting>")]
    pub substitutions: Option<Spanned<String>>,
    /// Defining a shell function.
    #[schemars(with = "Option<VerdictName>")]
    pub functions: Option<Spanned<String>>,
    /// Running a command in the background with `&`.
    #[schemars(with = "Option<VerdictName>")]
    pub background: Option<Spanned<String>>,
    /// Arithmetic that reads variables (bash evaluates their values as code).
    #[schemars(with = "Option<VerdictName>")]
    pub arithmetic_variables: Option<Spanned<String>>,
    /// `${!x}` and `${x@P}`.
    #[schemars(with = "Option<VerdictName>")]
    pub indirect_expansion: Option<Spanned<String>>,
    /// A path argument whose value is only known at run time.
    #[schemars(with = "Option<VerdictName>")]
    pub unresolved_paths: Option<Spanned<String>>,
    /// `$x` where it could become an option of a restricted program.
    #[schemars(with = "Option<VerdictName>")]
    pub dynamic_arguments: Option<Spanned<String>>,
}

/// `[paths]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawPaths {
    /// Path patterns where reads are allowed: `{workspace}`, `{home}`, `~` or `/` followed by a glob.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read: Vec<Spanned<String>>,
    /// Path patterns where writes are allowed.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub write: Vec<Spanned<String>>,
    /// Path patterns where reads are denied even if `read` allows them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny_read: Vec<Spanned<String>>,
    /// Path patterns where writes are denied even if `write` allows them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny_write: Vec<Spanned<String>>,
    /// Message for path refusals (reads and writes, unless one of the two below is set).
    pub message: Option<String>,
    /// Message for refused reads (instead of `message`).
    pub read_message: Option<String>,
    /// Message for refused writes (instead of `message`).
    pub write_message: Option<String>,
    /// Files whose writing changes what later tools run (agents' settings, tool configs,
    /// repositories): writes are denied unless `unprotected` names them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub protected: Vec<Spanned<String>>,
    /// Protected files this policy opts back in for writing.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub unprotected: Vec<Spanned<String>>,
    /// Why protected files are protected (shown with their refusals).
    pub protected_message: Option<String>,
}

/// `[redirects]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawRedirects {
    /// `2>&1`, `>&2`, `3<&-`.
    #[schemars(with = "Option<VerdictName>")]
    pub fd_duplication: Option<Spanned<String>>,
    /// `<<EOF` (bodies are checked) and `<<<`.
    #[schemars(with = "Option<VerdictName>")]
    pub here_documents: Option<Spanned<String>>,
    /// `< file` (also checked by [paths]).
    #[schemars(with = "Option<VerdictName>")]
    pub read: Option<Spanned<String>>,
    /// `> file`, `>> file`, `&> file` (also checked by [paths]).
    #[schemars(with = "Option<VerdictName>")]
    pub write: Option<Spanned<String>>,
}

/// `[env]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawEnv {
    /// Variable-name globs that may be assigned.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Variable-name globs whose assignment needs approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Variable-name globs that must not be assigned (checked first).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
    /// The verdict for names no pattern matches.
    #[schemars(with = "Option<VerdictName>")]
    pub default: Option<Spanned<String>>,
    /// Message for refusals.
    pub message: Option<String>,
}

/// `[wrappers]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawWrappers {
    /// Wrappers that are unwrapped and their payload checked.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Wrappers that are unwrapped and then need approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Message for refusals.
    pub message: Option<String>,
}

/// A program rule (also used for subcommands).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawProgram {
    /// "allow" (the default when listed), "ask" or "deny".
    #[schemars(with = "Option<VerdictName>")]
    pub verdict: Option<Spanned<String>>,
    /// Why; shown with refusals from this rule.
    pub message: Option<String>,
    /// Options are words like `-name` (find) rather than clusters like `-la`.
    #[serde(default)]
    pub single_dash_long: bool,
    /// Options are read only before the first operand (`printf FORMAT ARGS`, POSIX
    /// `getopt` without permutation): later words are operands even when they begin with `-`.
    #[serde(default)]
    pub options_before_operands: bool,
    /// No option of the program, written as one file name (no `/`), runs a program, writes a
    /// file, or reads outside the working directory (GNU `cat`, `head`, `grep`): a glob's
    /// matches that look like options are then harmless. Program knowledge: say which version.
    #[serde(default)]
    pub harmless_options: bool,
    /// Options that take a value (`-o FILE`, `-oFILE`, `--out=FILE`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub options_with_value: Vec<Spanned<String>>,
    /// The kind of an option's value, e.g. `{ "-f" = "path-read" }`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub option_kinds: BTreeMap<String, Spanned<String>>,
    /// If set, every option not listed is refused.
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub allow_options: Option<Vec<Spanned<String>>>,
    /// Refused options (long ones also by any unambiguous abbreviation).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny_options: Vec<Spanned<String>>,
    /// Options that need approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask_options: Vec<Spanned<String>>,
    /// Message for option refusals.
    pub options_message: Option<String>,
    /// Options whose value is optional and only ever glued (`sed -i.bak`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub options_with_optional_value: Vec<Spanned<String>>,
    /// Options that turn path-read operands into path-write ones (`sed -i`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub write_options: Vec<Spanned<String>>,
    /// Options after which (and their value) every argument is an operand (`python3 -m`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub terminal_options: Vec<Spanned<String>>,
    /// Options whose value names another program rule that checks the remaining arguments
    /// (`python3 -m pytest ...` is checked by `[programs.pytest]`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub delegate_options: Vec<Spanned<String>>,
    /// Options without a value that the policy knows (so they are not "unknown" before a subcommand).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub flags: Vec<Spanned<String>>,
    /// The program's option rules also apply after its subcommand (`npm ci --prefix ~`).
    #[serde(default)]
    pub inherit_options: bool,
    /// The verdict for operands beyond what `operands` describes (default "deny").
    #[schemars(with = "Option<VerdictName>")]
    pub extra_operands: Option<Spanned<String>>,
    /// At least one of these options must be present.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub required_options: Vec<Spanned<String>>,
    /// Allowed values of an option, as a regex, e.g. `{ "-m" = "^pytest$" }`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub option_values: BTreeMap<String, Spanned<String>>,
    /// Kinds of the positional arguments: "path-read", "path-write", "text", "pattern", "variable", "assignment", "sed-script", "awk-program"; a list where one kind ending in "..." repeats.
    #[schemars(with = "Option<OneOrMany>")]
    pub operands: Option<Spanned<OneOrMany>>,
    /// Options that supply the leading pattern operand (`grep -e`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub pattern_options: Vec<Spanned<String>>,
    /// Fewest operands.
    #[schemars(with = "Option<u64>")]
    pub min_operands: Option<Spanned<i64>>,
    /// The path the program reads when it is given no operand (`.` for `ls`, `find`, `du`,
    /// `rg`, `grep -r`): checked as a path read in the command's directory.
    pub implicit_operand: Option<String>,
    /// When set, the implicit operand applies only with one of these options (`grep -r`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub implicit_operand_options: Vec<Spanned<String>>,
    /// Regex rules on each argument's static value.
    #[serde(default)]
    pub args: Vec<RawArgRule>,
    /// Rules for subcommands, selected by the first operand.
    #[serde(default)]
    pub subcommands: BTreeMap<String, RawProgram>,
    /// The verdict for a subcommand not listed (default "deny").
    #[schemars(with = "Option<VerdictName>")]
    pub unknown_subcommand: Option<Spanned<String>>,
    /// Options that take two values (`jq --arg NAME VALUE`): the first is text, the second
    /// has the kind `option_kinds` gives.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub options_with_two_values: Vec<Spanned<String>>,
    /// The rule for the arguments after `--`, which the program passes on to another one
    /// (`cargo fmt -- FILES` to rustfmt, `cargo test -- ARGS` to the test harness).
    pub after_double_dash: Option<Box<RawProgram>>,
    /// Why the program needs no `allow_options` (`echo` prints every word it gets); silences
    /// the `lint-no-option-allowlist` warning.
    pub no_option_allowlist: Option<String>,
    /// `allow_options` and `deny_options` together name every option the program has, so a
    /// word that expands to a file name starting with `-` (`cat *.md`) can only be one of them.
    #[serde(default)]
    pub options_complete: bool,
}

/// `"path-read"` or `["pattern", "path-read..."]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// An argument pattern of a program rule.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawArgRule {
    /// A regex matched against each argument.
    #[schemars(with = "String")]
    pub pattern: Spanned<String>,
    /// What a match means (default "deny").
    #[schemars(with = "Option<VerdictName>")]
    pub verdict: Option<Spanned<String>>,
    /// Why.
    pub message: Option<String>,
}

/// `[examples]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawExamples {
    /// Commands that must be allowed.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// Commands that must need approval.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ask: Vec<Spanned<String>>,
    /// Commands that must be denied.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
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
