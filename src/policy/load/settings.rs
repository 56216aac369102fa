//! The sections that are verdict switches and counts: `[policy]`, `[limits]`, `[shell]`,
//! `[redirects]`, each raw type beside its validation.

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::policy::raw::{SubstitutionSetting, VerdictName};
use crate::policy::Setting;

/// `[policy]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawMeta {
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
pub(crate) struct RawLimits {
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
pub(crate) struct RawShell {
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
    /// Read each command a second time with tree-sitter-bash and refuse any command the two
    /// readers read differently (needs shellgate built with the `paranoid` feature).
    #[schemars(with = "Option<bool>")]
    pub paranoid: Option<Spanned<bool>>,
}

/// `[redirects]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawRedirects {
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

impl Loader {
    /// `[policy]`: name, description and the default verdict (includes are applied before).
    pub(super) fn apply_meta(&mut self, file: &File, meta: RawMeta) {
        if let Some(n) = meta.name {
            self.policy.name = n;
        }
        if let Some(d) = meta.description {
            self.policy.description = d;
        }
        let mut default = self.policy.default.clone();
        self.setting(file, "policy.default", &meta.default, &mut default);
        self.policy.default = default;
        if meta.message.is_some() {
            self.policy.default_message = meta.message;
        }
    }

    /// `[limits]`.
    pub(super) fn apply_limits(&mut self, file: &File, l: RawLimits) {
        let mut limits = self.policy.limits;
        self.count(file, &l.max_bytes, 1, &mut limits.parse.max_bytes);
        self.count(file, &l.max_depth, 1, &mut limits.parse.max_depth);
        self.count(file, &l.max_commands, 1, &mut limits.max_commands);
        self.count(file, &l.max_nesting, 0, &mut limits.max_nesting);
        self.policy.limits = limits;
    }

    /// `[shell]`.
    pub(super) fn apply_shell(&mut self, file: &File, s: RawShell) {
        let mut shell = self.policy.shell.clone();
        if let Some(v) = &s.substitutions {
            if v.get_ref() == "inner" {
                shell.substitutions = None;
            } else if let Some(verdict) = self.verdict(file, v) {
                shell.substitutions = Some(Setting {
                    verdict,
                    rule: file.rule("shell.substitutions", v.span()),
                });
            }
        }
        self.setting(file, "shell.functions", &s.functions, &mut shell.functions);
        self.setting(
            file,
            "shell.background",
            &s.background,
            &mut shell.background,
        );
        self.setting(
            file,
            "shell.arithmetic_variables",
            &s.arithmetic_variables,
            &mut shell.arithmetic_variables,
        );
        self.setting(
            file,
            "shell.indirect_expansion",
            &s.indirect_expansion,
            &mut shell.indirect_expansion,
        );
        self.setting(
            file,
            "shell.unresolved_paths",
            &s.unresolved_paths,
            &mut shell.unresolved_paths,
        );
        self.setting(
            file,
            "shell.dynamic_arguments",
            &s.dynamic_arguments,
            &mut shell.dynamic_arguments,
        );
        if let Some(p) = &s.paranoid {
            shell.paranoid = None;
            if *p.get_ref() {
                if crate::shell::SECOND_READER {
                    shell.paranoid = Some(file.rule("shell.paranoid", p.span()));
                } else {
                    self.diag(
                        crate::codes::DiagnosticCode::PolicyParanoidUnavailable,
                        "`paranoid = true` needs the second reader (tree-sitter-bash), and this build of shellgate has none: build it with `--features paranoid`",
                        file.loc(p.span()),
                    );
                }
            }
        }
        self.policy.shell = shell;
    }

    /// `[redirects]`.
    pub(super) fn apply_redirects(&mut self, file: &File, r: RawRedirects) {
        let mut red = self.policy.redirects.clone();
        self.setting(
            file,
            "redirects.fd_duplication",
            &r.fd_duplication,
            &mut red.fd_duplication,
        );
        self.setting(
            file,
            "redirects.here_documents",
            &r.here_documents,
            &mut red.here_documents,
        );
        self.setting(file, "redirects.read", &r.read, &mut red.read);
        self.setting(file, "redirects.write", &r.write, &mut red.write);
        self.policy.redirects = red;
    }
}
