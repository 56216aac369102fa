//! The TOML schema shared by the built-in rule pack and by users, and its errors.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One redaction rule, as written in TOML (`[[rule]]` in a rules file, `[[redact.rule]]` in a
/// policy file). The built-in pack (`src/redact/rules.toml`) uses exactly this schema.
///
/// The rule's `regex` is a [`regex::bytes`] pattern, compiled with Unicode *off* (so `.` and
/// `\w` are byte/ASCII classes; write `(?u)` to opt back in). The secret is the capture group
/// named `secret` if there is one, else group 1; it is replaced by `[REDACTED:<id>]`, the rest of
/// the match stays. The regex runs only on lines that contain one of `keywords`
/// (case-sensitive, 3 bytes or more) and a match must hold one of them, so every casing the
/// regex should catch needs a keyword.
///
/// Unknown keys are rejected, and the error names the rule id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct RuleDef {
    /// Stable kebab-case id; appears in the marker `[REDACTED:<id>]` and in statistics.
    pub id: String,
    /// What the rule finds, for people.
    pub description: String,
    /// Case-sensitive literals (3+ bytes, no newline); a line must contain one for the regex to run.
    pub keywords: Vec<String>,
    /// Literals every match contains (all of them, case-sensitive, no newline): a cheap second
    /// filter, so that a line with a keyword but without, say, the `@` of a URL credential
    /// is skipped before the regex runs. Every example must contain them.
    pub requires: Vec<String>,
    /// The pattern; the secret is group `secret` or group 1.
    pub regex: String,
    /// Minimum Shannon entropy (bits per byte) of the secret; below it the match is not a secret.
    /// The threshold is for a secret drawn from a rich alphabet (letters of both cases and
    /// digits); a secret made only of digits, or only of hex digits (UUIDs included), is held
    /// to the same fraction of its alphabet's capacity (see [`super::entropy_threshold`]).
    pub entropy: Option<f64>,
    /// Case-insensitive words that carry no randomness (`test`, `changeme`): they are taken out
    /// of the secret before its entropy is measured, and a secret with fewer than 8 bytes or
    /// too little entropy left is a placeholder (`changeme123`), while `shippo_test_` followed
    /// by 40 random hex digits stays a secret.
    pub stopwords: Vec<String>,
    /// Regexes (bytes, Unicode off); a secret matching one is allowed through.
    pub allow: Vec<String>,
    /// Regexes (bytes, Unicode off) on the capture group named `key` (the name a value is
    /// assigned to): a match whose key matches one names no secret (`credentialsId`,
    /// `secretName`, `publicToken`). Needs a `key` group in `regex`.
    pub key_allow: Vec<String>,
    /// Makes this a multi-line block rule (private-key blocks); see [`BlockDef`].
    pub block: Option<BlockDef>,
    /// Makes this a section rule: the `regex` applies to the lines indented under a header line
    /// that matches this regex (Kubernetes `data:`), until a line indented no deeper than it.
    /// `keywords` then select the header line.
    pub section: Option<String>,
    /// Limits a section rule to the mappings whose sibling key says so (a Kubernetes `data:`
    /// only inside `kind: Secret`); see [`SectionIf`].
    pub section_if: Option<SectionIf>,
    /// Texts the rule must redact (checked by the test suite and by [`super::RuleSet::check_examples`]).
    pub examples: Vec<String>,
    /// Texts the whole pack must leave byte-for-byte untouched.
    pub negatives: Vec<String>,
}

/// A multi-line block: a line ending in a `begin` match opens it, lines that look like key
/// material (base64, armor headers, blank) are held, and a line matching `end` closes it.
/// The held body is replaced by one `[REDACTED:<id>]` line. A block that is not closed (a
/// non-body line, the end of the stream, or the [`super::MAX_BLOCK_LINES`] /
/// [`super::MAX_BLOCK_BYTES`] bound) is redacted all the same when its body has key material.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockDef {
    /// Regex that must match at the end of the opening line (trailing blanks allowed).
    pub begin: String,
    /// Regex that matches the closing line.
    pub end: String,
}

/// When a section is redacted: a line at the header's indentation, in the same mapping (before
/// or after the header), that matches `key` decides: the section is redacted if that line also
/// matches `value`, and left alone if not. With no such line before the mapping ends (a line
/// indented less, a `---` line, the end of the stream, or the [`super::MAX_BLOCK_LINES`] /
/// [`super::MAX_BLOCK_BYTES`] bound), the section's values are redacted by their shape: each
/// base64 value (what every Secret's `data` holds) and each token-like value with a secret's
/// entropy goes, plain settings (`debug`, URLs, numbers) stay, so output cut by `head` or
/// `grep` leaks no Secret and a ConfigMap's settings stay readable. Sections are held until
/// they are decided. The rule's
/// `keywords` must select the `key` lines too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionIf {
    /// Regex of the deciding key line (`kind:`).
    pub key: String,
    /// Regex that key line must match for the section to be redacted (`kind: Secret`).
    pub value: String,
}

/// The strict shape of a rule; [`RuleDef`] goes through a table first so errors can name the id.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleStrict {
    id: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    requires: Vec<String>,
    regex: String,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    key_allow: Vec<String>,
    #[serde(default)]
    block: Option<BlockDef>,
    #[serde(default)]
    section: Option<String>,
    #[serde(default)]
    section_if: Option<SectionIf>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    negatives: Vec<String>,
}

impl TryFrom<toml::Table> for RuleDef {
    type Error = String;

    fn try_from(table: toml::Table) -> Result<Self, String> {
        let id = match table.get("id") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => return Err("rule: `id` must be a string".to_string()),
            None => return Err("rule without an `id`".to_string()),
        };
        let strict: RuleStrict = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| format!("rule `{id}`: {}", e.message()))?;
        Ok(RuleDef {
            id: strict.id,
            description: strict.description,
            keywords: strict.keywords,
            requires: strict.requires,
            regex: strict.regex,
            entropy: strict.entropy,
            stopwords: strict.stopwords,
            allow: strict.allow,
            key_allow: strict.key_allow,
            block: strict.block,
            section: strict.section,
            section_if: strict.section_if,
            examples: strict.examples,
            negatives: strict.negatives,
        })
    }
}

fn default_true() -> bool {
    true
}

/// User configuration of redaction: the `[redact]` table of a policy file, or a standalone rules
/// file with the same keys at top level.
///
/// ```toml
/// [redact]
/// builtin = true                  # start from the built-in pack (default)
/// disable = ["jwt"]               # built-in rule ids to switch off
/// allow = ["^sk-test-fixture-"]   # secrets matching any of these stay (all rules)
///
/// [[redact.rule]]                 # add a rule (same id as a built-in one: replaces it)
/// id = "acme-token"
/// keywords = ["acme_"]
/// regex = '''\b(acme_[a-z0-9]{32})\b'''
/// examples = ["token acme_0123456789abcdef0123456789abcdef"]
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    /// Start from the built-in rule pack (default `true`).
    #[serde(default = "default_true")]
    pub builtin: bool,
    /// Ids of rules to switch off; an id that names no rule is an error.
    #[serde(default)]
    pub disable: Vec<String>,
    /// Allow patterns (regex, bytes, Unicode off) applied to every rule's secret.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules to add; a rule whose id is a built-in id replaces that built-in rule.
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleDef>,
}

impl Default for RedactConfig {
    fn default() -> Self {
        RedactConfig {
            builtin: true,
            disable: Vec::new(),
            allow: Vec::new(),
            rules: Vec::new(),
        }
    }
}

impl RedactConfig {
    /// Parses a standalone rules file (the keys of `[redact]` at top level).
    pub fn from_toml_str(text: &str) -> Result<Self, RedactError> {
        toml::from_str(text).map_err(|e| RedactError::Toml {
            path: None,
            message: e.to_string(),
        })
    }

    /// Reads and parses a standalone rules file.
    pub fn load(path: &Path) -> Result<Self, RedactError> {
        let text = std::fs::read_to_string(path).map_err(|e| RedactError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        toml::from_str(&text).map_err(|e| RedactError::Toml {
            path: Some(path.to_path_buf()),
            message: e.to_string(),
        })
    }

    /// Reads the `[redact]` table of a policy file, ignoring every other table (the policy
    /// module validates those). A policy without `[redact]` gives the default configuration.
    pub fn from_policy_str(text: &str) -> Result<Self, RedactError> {
        let mut table: toml::Table = toml::from_str(text).map_err(|e| RedactError::Toml {
            path: None,
            message: e.to_string(),
        })?;
        match table.remove("redact") {
            None => Ok(RedactConfig::default()),
            Some(value) => value
                .try_into()
                .map_err(|e: toml::de::Error| RedactError::Toml {
                    path: None,
                    message: format!("[redact]: {}", e.message()),
                }),
        }
    }

    /// Appends another configuration (e.g. a rules file on top of a policy's `[redact]`):
    /// rules, disables and allow patterns are added; `builtin` is kept only if both keep it.
    pub fn merge(&mut self, other: RedactConfig) {
        self.builtin &= other.builtin;
        self.disable.extend(other.disable);
        self.allow.extend(other.allow);
        self.rules.extend(other.rules);
    }
}

/// Why a rule set could not be built. Each rule problem names the rule id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// A regex (the rule's `regex`, an `allow` entry, or a block/section regex) does not compile.
    #[error("rule `{id}`: invalid {field}: {message}")]
    BadRegex {
        /// Rule id.
        id: String,
        /// Which field (`regex`, `allow`, `block.begin`, ...).
        field: &'static str,
        /// The regex compiler's message.
        message: String,
    },
    /// The regex has no capture group for the secret.
    #[error(
        "rule `{id}`: regex has no capture group for the secret (add `(...)` or `(?P<secret>...)`)"
    )]
    NoCaptureGroup {
        /// Rule id.
        id: String,
    },
    /// Two rules with the same id in one configuration.
    #[error("rule `{id}`: defined more than once")]
    DuplicateId {
        /// Rule id.
        id: String,
    },
    /// The id is not kebab-case (`[a-z0-9]+(-[a-z0-9]+)*`).
    #[error("rule `{id}`: id must be kebab-case ([a-z0-9] words joined by '-')")]
    BadId {
        /// Rule id.
        id: String,
    },
    /// A keyword is missing, too short, or contains a newline.
    #[error("rule `{id}`: {problem}")]
    BadKeyword {
        /// Rule id.
        id: String,
        /// What is wrong.
        problem: String,
    },
    /// An entropy threshold outside 0..=8.
    #[error("rule `{id}`: entropy must be between 0 and 8 bits per byte, got {value}")]
    BadEntropy {
        /// Rule id.
        id: String,
        /// The value given.
        value: f64,
    },
    /// `disable` names a rule that does not exist.
    #[error("disable: no rule with id `{id}`")]
    UnknownRule {
        /// The id given.
        id: String,
    },
    /// A global allow pattern does not compile.
    #[error("allow pattern {pattern:?}: {message}")]
    BadAllow {
        /// The pattern.
        pattern: String,
        /// The regex compiler's message.
        message: String,
    },
    /// The TOML does not parse or has unknown or mistyped keys (the message names the rule id).
    #[error("{}{message}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Toml {
        /// File, when read from one.
        path: Option<PathBuf>,
        /// Parser message.
        message: String,
    },
    /// A rules file could not be read.
    #[error("{}: {message}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// OS message.
        message: String,
    },
}
