//! `options = [...]`: a program's options as one table, one entry per option with all its
//! spellings (`{ names = ["-n", "--head-count"], value = "number" }`), as clap's `Arg`, zsh's
//! `_arguments` and fish's completion files describe them.
//!
//! An option table is sugar: at load it becomes the parallel lists a rule was written with
//! before (`allow_options`, `options_with_value`, `option_kinds`, `deny_options`, ...), which
//! the rest of the loader validates and compiles as it always did. So a rule written either way
//! compiles to the same [`ProgramRule`](crate::policy::ProgramRule), and `policy-check
//! migrate` (see `src/policy/migrate.rs`) rewrites the old lists into a table without
//! changing a decision. A rule may not mix the two ways (`policy-mixed-option-keys`).

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::programs::RawProgram;
use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::raw::VerdictName;
use crate::policy::{Diagnostic, Lines, Severity, Verdict};

/// One option of a program: its spellings and what it is.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawOption {
    /// Every spelling of the option, short and long together: `["-n", "--head-count"]`.
    #[schemars(with = "Vec<String>", length(min = 1))]
    pub names: Vec<Spanned<String>>,
    /// The option takes a value of this kind ("text", "number" (read as text), "pattern",
    /// "path-read", "path-write", "program", "path-list", "module-path", "backup-suffix",
    /// ...); without it the option is a flag.
    #[schemars(with = "Option<String>")]
    pub value: Option<Spanned<String>>,
    /// The value is optional and only ever glued (`sed -i.bak`, `--in-place=.bak`).
    #[serde(default)]
    pub optional_value: bool,
    /// The option takes two values (`jq --arg NAME VALUE`): the first is text, the second
    /// has the kind `value` gives.
    #[serde(default)]
    pub two_values: bool,
    /// "allow" (the default), "ask" or "deny".
    #[schemars(with = "Option<VerdictName>")]
    pub verdict: Option<Spanned<String>>,
    /// The option is known (its value is read) but not in the allowlist: refused like an
    /// option nobody listed. For a program's options that only its subcommands allow.
    #[serde(default)]
    pub unlisted: bool,
    /// Why it is refused or asked for; shown with the refusal.
    pub message: Option<String>,
    /// A note for the person who settles this entry (`policy-check draft` writes one where
    /// the oracle could not settle an option's effect): `lint-needs-review`.
    pub review: Option<String>,
    /// The option turns the path-read operands into path-write ones (`sed -i`).
    #[serde(default)]
    pub writes_operands: bool,
    /// After the option (and its value) every argument is an operand (`python3 -m`).
    #[serde(default)]
    pub terminal: bool,
    /// The option's value names another program rule that checks the remaining arguments
    /// (`python3 -m pytest ...` is checked by `[programs.pytest]`).
    #[serde(default)]
    pub delegate: bool,
    /// A flag the rule knows even though it does not allow it (so it is not "unknown"
    /// before a subcommand).
    #[serde(default)]
    pub flag: bool,
    /// The command must have at least one of the options marked `required`.
    #[serde(default)]
    pub required: bool,
    /// The option supplies the leading pattern operand (`grep -e`).
    #[serde(default)]
    pub pattern: bool,
    /// The rule's `implicit_operand` applies only with one of the options marked so (`grep -r`).
    #[serde(default)]
    pub implicit_operand: bool,
    /// The allowed values, as a regex matched against the value (`"^pytest$"`).
    #[schemars(with = "Option<String>")]
    pub values: Option<Spanned<String>>,
    /// For a `single_dash_long` program: the value may be glued to the option (`gcc -Iinclude`).
    #[serde(default)]
    pub glued: bool,
}

/// The keys of a program rule that an `options` table replaces.
pub(crate) const OLD_OPTION_KEYS: &[&str] = &[
    "allow_options",
    "options_with_value",
    "option_kinds",
    "deny_options",
    "ask_options",
    "options_with_optional_value",
    "options_with_two_values",
    "write_options",
    "terminal_options",
    "delegate_options",
    "flags",
    "required_options",
    "option_values",
    "pattern_options",
    "implicit_operand_options",
    "glued_options",
];

/// An option table as the old lists, and the entries' own messages.
pub(super) struct Desugared {
    /// A rule holding only the option lists (everything else default).
    pub lists: RawProgram,
    /// `message` of each entry that has one, by spelling.
    pub messages: BTreeMap<String, String>,
}

impl Loader {
    /// The option table of `raw` (at `segs`) as the old lists, or `None` when the rule has no
    /// `options`. A rule that also writes an old list is `policy-mixed-option-keys`.
    pub(super) fn option_table(
        &mut self,
        file: &File,
        segs: &[String],
        name: &str,
        raw: &RawProgram,
    ) -> Option<Desugared> {
        let entries = raw.options.as_ref()?;
        let mut path: Vec<&str> = segs.iter().map(String::as_str).collect();
        for key in OLD_OPTION_KEYS {
            path.push(key);
            let span = file.key(&path);
            path.pop();
            if !span.is_empty() {
                self.diag(
                    DiagnosticCode::PolicyMixedOptionKeys,
                    format!(
                        "`{name}` has an `options` table and `{key}`: write each option once, as \
                         an entry of `options` (`policy-check migrate` moves the old lists there)"
                    ),
                    file.loc(span),
                );
            }
        }
        path.push("options");
        let table_span = file.key(&path);
        let mut out = RawProgram {
            allow_options: Some(Vec::new()),
            ..RawProgram::default()
        };
        let mut messages = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for entry in entries {
            let Some(first) = entry.names.first() else {
                self.diag(
                    DiagnosticCode::PolicyInvalidOption,
                    format!("an `options` entry of `{name}` has no `names`"),
                    file.loc(table_span.clone()),
                );
                continue;
            };
            let at = file.loc(first.span());
            let verdict = match &entry.verdict {
                Some(v) => self.verdict(file, v).unwrap_or(Verdict::Deny),
                None => Verdict::Allow,
            };
            if entry.unlisted && entry.verdict.is_some() {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!(
                        "option `{}` of `{name}` is `unlisted` and has a verdict",
                        first.get_ref()
                    ),
                    at.clone(),
                );
            }
            let takes_value = entry.value.is_some() || entry.two_values;
            if entry.flag && (takes_value || entry.optional_value) {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!(
                        "option `{}` of `{name}` is a `flag` and takes a value",
                        first.get_ref()
                    ),
                    at.clone(),
                );
            }
            if entry.optional_value && entry.two_values {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!(
                        "option `{}` of `{name}` takes two values and an optional one",
                        first.get_ref()
                    ),
                    at.clone(),
                );
            }
            for n in &entry.names {
                if !seen.insert(n.get_ref().clone()) {
                    self.diag(
                        DiagnosticCode::PolicyContradiction,
                        format!(
                            "option `{}` of `{name}` has two entries in `options`",
                            n.get_ref()
                        ),
                        file.loc(n.span()),
                    );
                    continue;
                }
                let push = |list: &mut Vec<Spanned<String>>| list.push(n.clone());
                if !entry.unlisted {
                    match verdict {
                        Verdict::Allow => push(out.allow_options.get_or_insert_default()),
                        // Asked for is allowed once approved: in the allowlist too, as the
                        // old lists of the shipped policies always wrote it.
                        Verdict::Ask => {
                            push(out.allow_options.get_or_insert_default());
                            push(&mut out.ask_options);
                        }
                        Verdict::Deny => push(&mut out.deny_options),
                    }
                }
                if entry.optional_value {
                    push(&mut out.options_with_optional_value);
                } else if takes_value {
                    push(&mut out.options_with_value);
                }
                if entry.two_values {
                    push(&mut out.options_with_two_values);
                }
                if let Some(kind) = &entry.value {
                    // Text is what a value is unless a kind says otherwise; a number (a count,
                    // a size) is text to every check.
                    if !matches!(kind.get_ref().as_str(), "text" | "number") {
                        out.option_kinds.insert(n.get_ref().clone(), kind.clone());
                    }
                }
                if let Some(v) = &entry.values {
                    out.option_values.insert(n.get_ref().clone(), v.clone());
                }
                if entry.writes_operands {
                    push(&mut out.write_options);
                }
                if entry.terminal {
                    push(&mut out.terminal_options);
                }
                if entry.delegate {
                    push(&mut out.delegate_options);
                }
                if entry.flag {
                    push(&mut out.flags);
                }
                if entry.required {
                    push(&mut out.required_options);
                }
                if entry.pattern {
                    push(&mut out.pattern_options);
                }
                if entry.implicit_operand {
                    push(&mut out.implicit_operand_options);
                }
                if entry.glued {
                    push(&mut out.glued_options);
                }
                if let Some(m) = &entry.message {
                    messages.insert(n.get_ref().clone(), m.clone());
                }
            }
        }
        Some(Desugared {
            lists: out,
            messages,
        })
    }
}

/// The warnings about how a file writes its option rules, from its text: every program rule
/// (subcommands, `after_double_dash` and `[sandbox]` rules included) that uses the old option
/// lists (`lint-old-option-keys`, once per rule, at its first old key), and every `options`
/// entry with a `review` note (`lint-needs-review`). Nothing for a file that does not parse
/// (the loader reports that).
pub(crate) fn lint_option_tables(source: &str, origin: &str) -> Vec<Diagnostic> {
    let Ok(table) = toml::de::DeTable::parse(source) else {
        return Vec::new();
    };
    let lines = Lines::new(source);
    let mut out = Vec::new();
    let root = table.get_ref();
    let mut rules: Vec<(String, &toml::de::DeTable)> = Vec::new();
    if let Some(programs) = sub_table(root, "programs") {
        for (k, v) in programs.iter() {
            if let toml::de::DeValue::Table(t) = v.get_ref() {
                rules.push((k.get_ref().to_string(), t));
            }
        }
    }
    if let Some(sandbox) = sub_table(root, "sandbox") {
        if let Some(programs) = sub_table(sandbox, "programs") {
            for (k, v) in programs.iter() {
                if let toml::de::DeValue::Table(t) = v.get_ref() {
                    rules.push((format!("sandbox.programs.{}", k.get_ref()), t));
                }
            }
        }
        if let Some(t) = sub_table(sandbox, "workspace_binaries") {
            rules.push(("sandbox.workspace_binaries".into(), t));
        }
    }
    while let Some((name, rule)) = rules.pop() {
        let old = rule
            .iter()
            .filter(|(k, _)| OLD_OPTION_KEYS.contains(&k.get_ref().as_ref()))
            .min_by_key(|(k, _)| k.span().start);
        if let Some((k, _)) = old {
            out.push(Diagnostic::new(
                Severity::Warning,
                DiagnosticCode::LintOldOptionKeys,
                format!(
                    "`{name}` writes its options in the old lists (`{}`, ...): `policy-check \
                     migrate` rewrites them as one `options` entry per option; the old keys \
                     are read for one more release",
                    k.get_ref()
                ),
                lines.at(origin, k.span().start),
            ));
        }
        if let Some(options) = rule.get("options") {
            if let toml::de::DeValue::Array(entries) = options.get_ref() {
                for e in entries.iter() {
                    let toml::de::DeValue::Table(e) = e.get_ref() else {
                        continue;
                    };
                    let Some(review) = e.get("review") else {
                        continue;
                    };
                    let note = match review.get_ref() {
                        toml::de::DeValue::String(s) => s.to_string(),
                        _ => String::new(),
                    };
                    let names = e.get("names").map(|n| match n.get_ref() {
                        toml::de::DeValue::Array(a) => a
                            .iter()
                            .filter_map(|x| match x.get_ref() {
                                toml::de::DeValue::String(s) => Some(format!("`{s}`")),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                        _ => String::new(),
                    });
                    out.push(Diagnostic::new(
                        Severity::Warning,
                        DiagnosticCode::LintNeedsReview,
                        format!(
                            "option {} of `{name}` needs review: {note}",
                            names.unwrap_or_default()
                        ),
                        lines.at(origin, review.span().start),
                    ));
                }
            }
        }
        if let Some(subs) = sub_table(rule, "subcommands") {
            for (k, v) in subs.iter() {
                if let toml::de::DeValue::Table(t) = v.get_ref() {
                    rules.push((format!("{name} {}", k.get_ref()), t));
                }
            }
        }
        if let Some(t) = sub_table(rule, "after_double_dash") {
            rules.push((format!("{name} --"), t));
        }
    }
    out
}

fn sub_table<'t, 'a>(t: &'t toml::de::DeTable<'a>, key: &str) -> Option<&'t toml::de::DeTable<'a>> {
    match t.get(key)?.get_ref() {
        toml::de::DeValue::Table(t) => Some(t),
        _ => None,
    }
}
