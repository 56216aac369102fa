//! `[programs]`: one rule per program (and subcommand), its options, operand kinds and
//! argument patterns validated and compiled.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::compiled::*;
use crate::policy::raw::VerdictName;
use crate::policy::{Diagnostic, Severity, Verdict};
use crate::shell::wrappers;

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
    /// The program's options, one entry per option with all its spellings:
    /// `{ names = ["-o", "--output"], value = "path-write" }`. Its allow entries are the
    /// option allowlist (as `allow_options`); a rule with it has none of the old lists below.
    #[schemars(with = "Option<Vec<super::options::RawOption>>")]
    pub options: Option<Vec<super::options::RawOption>>,
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
    /// What the program (or subcommand) does is defined by files in the workspace (a build
    /// script, lifecycle scripts, a test configuration, a Makefile): it runs only under the
    /// kernel sandbox, and is refused with `sandbox-required` elsewhere.
    #[serde(default)]
    pub runs_workspace_code: bool,
    /// git: repositories besides the workspace's own that git may use (path patterns, as in
    /// `[paths]`: `"{workspace}/vendor/lib"`); their config must not run programs.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub repositories: Vec<Spanned<String>>,
    /// The program only opens its `path-write` operands and option values and writes into
    /// them, as a redirection does (`tee`): a device such as `/dev/null` may be one. Without
    /// it, a device node or `/dev` entry there is refused (`rm /dev/null`, `chmod 000
    /// /dev/null`, `mv x /dev/null`): `device-operand`.
    #[serde(default)]
    pub opens_for_writing: bool,
    /// In a policy that includes another: start this program's rule over instead of extending
    /// the included one (whose denials are then dropped: `lint-replaced-rule` names them).
    #[serde(default)]
    pub replace: bool,
    /// For a program whose options are words (`single_dash_long`): options whose value may
    /// be glued to them (`gcc -Iinclude -DNDEBUG -lpthread -Wno-unused -g3`). A word that is
    /// no listed option and starts with one of these is that option with the rest as its
    /// value (the longest that fits); alone, the option takes the next word only if it is in
    /// `options_with_value`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub glued_options: Vec<Spanned<String>>,
    /// The program reads a first argument without a leading `-` as a cluster of old-style
    /// options whose values are the next words (GNU tar: `tar czf out.tgz src`, and `tar I
    /// ./prog -cf a.tar` runs `./prog`): a command whose first argument does not start with
    /// `-` is refused.
    #[serde(default)]
    pub old_style_options: bool,
    /// Options that make the program write the values of its `path-read` options too (`tar
    /// -c` writes the archive `-f` names): with one of them given, each such value is checked
    /// as a write as well as a read.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub value_write_options: Vec<Spanned<String>>,
    /// The last operand (or the value of `-t`/`--target-directory`) may be a directory the
    /// other operands are written into under their own names (`cp`, `mv`: `cp tasks.json
    /// .vscode/` writes `.vscode/tasks.json`): each `TARGET/NAME` is checked as a write too,
    /// unless `-T`/`--no-target-directory` is given.
    #[serde(default)]
    pub target_directory: bool,
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
    /// The rule does not apply when one of these options is given (`git config --get KEY`
    /// reads the key that `git config KEY VALUE` sets).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub unless_options: Vec<Spanned<String>>,
    /// The rule applies only to a command with at least this many operands (`git config
    /// KEY` reads, `git config KEY VALUE` sets).
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub min_operands: Option<Spanned<i64>>,
}

impl Loader {
    /// `[programs]`: each rule compiled and added (extending an included rule of that name,
    /// or with `replace = true` replacing it).
    pub(super) fn apply_programs(&mut self, file: &File, programs: BTreeMap<String, RawProgram>) {
        for (key, prog) in programs {
            let name_span = file.key(&["programs", &key]);
            if !valid_program_name(&key) {
                self.diag(
                    DiagnosticCode::PolicyInvalidProgram,
                    format!("`{key}` is not a program name"),
                    file.loc(name_span),
                );
                continue;
            }
            if wrappers::is_wrapper(&key) {
                self.diag(
                    DiagnosticCode::PolicyWrapperAsProgram,
                    format!(
                    "`{key}` runs other programs: list it under [wrappers] (its payload is then \
                     checked) instead of [programs]"
                ),
                    file.loc(name_span),
                );
                continue;
            }
            let path = vec!["programs".to_string(), key.clone()];
            if let Some(rule) = self.program(file, &path, &key, &prog) {
                // Written again over an included rule: extended, unless `replace = true`.
                let rule = match self.policy.programs.remove(&key) {
                    Some(old) if prog.replace => super::merge::replaced(old, rule),
                    Some(old) => {
                        if let Some(n) = super::merge::operands_conflict(&old, &rule, &prog) {
                            self.diag(
                                DiagnosticCode::PolicyContradiction,
                                format!(
                                    "`{n}` is defined by an included policy, and a rule written \
                                     again extends it (its denials kept): it cannot change the \
                                     operand kinds, which are checks; write `replace = true` to \
                                     start the rule over"
                                ),
                                file.loc(name_span.clone()),
                            );
                        }
                        super::merge::extend(old, rule, &prog)
                    }
                    None => rule,
                };
                self.policy.programs.insert(key, rule);
            }
        }
        for name in self.policy.programs.keys() {
            if let Some(r) = self.policy.wrappers.allow.get(name) {
                self.diags.push(Diagnostic::new(
                    Severity::Error,
                    DiagnosticCode::PolicyContradiction,
                    format!("`{name}` is both a program and an allowed wrapper"),
                    r.location.clone(),
                ));
            }
        }
    }

    pub(super) fn options(&mut self, file: &File, list: &[Spanned<String>]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for item in list {
            let o = item.get_ref();
            if valid_option(o) {
                out.insert(o.clone());
            } else {
                self.diag(
                    DiagnosticCode::PolicyInvalidOption,
                    format!("`{o}` is not an option (it must start with `-`, or `+` for a few programs)"),
                    file.loc(item.span()),
                );
            }
        }
        out
    }

    pub(super) fn kind(&mut self, file: &File, text: &str, span: Range<usize>) -> Option<ArgKind> {
        let k = ArgKind::parse(text);
        if k.is_none() {
            self.diag(
                DiagnosticCode::PolicyInvalidKind,
                format!(
                    "`{text}` is not an argument kind: use path-read, path-write, text, pattern, \
                     variable, assignment, sed-script, awk-program, path-list, module-path, \
                     program, backup-suffix, pathspec, jq-program or dd-operand"
                ),
                file.loc(span),
            );
        }
        k
    }

    pub(super) fn operands(&mut self, file: &File, spec: &Spanned<OneOrMany>) -> OperandSpec {
        let items: Vec<String> = match spec.get_ref() {
            OneOrMany::One(s) => vec![format!("{}...", s.trim_end_matches("..."))],
            OneOrMany::Many(v) => v.clone(),
        };
        let mut out = OperandSpec {
            head: Vec::new(),
            repeat: None,
            tail: Vec::new(),
        };
        for item in items {
            let (name, repeat) = match item.strip_suffix("...") {
                Some(n) => (n, true),
                None => (item.as_str(), false),
            };
            let Some(kind) = self.kind(file, name, spec.span()) else {
                continue;
            };
            if repeat {
                if out.repeat.is_some() {
                    self.diag(
                        DiagnosticCode::PolicyInvalidKind,
                        "only one operand kind may repeat (end with `...`)",
                        file.loc(spec.span()),
                    );
                }
                out.repeat = Some(kind);
            } else if out.repeat.is_some() {
                out.tail.push(kind);
            } else {
                out.head.push(kind);
            }
        }
        out
    }

    pub(super) fn program(
        &mut self,
        file: &File,
        segs: &[String],
        name: &str,
        raw: &RawProgram,
    ) -> Option<ProgramRule> {
        let start = self.diags.len();
        let path = segs.join(".");
        let seg_refs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let span = file.key(&seg_refs);
        let mut verdict = Verdict::Allow;
        if let Some(v) = &raw.verdict {
            verdict = self.verdict(file, v).unwrap_or(Verdict::Deny);
        }
        // An `options` table is read as the old lists it stands for (`o`); the rest of the
        // rule is read from `raw`.
        let table = self.option_table(file, segs, name, raw);
        let (lists, option_messages) = match &table {
            Some(t) => (&t.lists, t.messages.clone()),
            None => (raw, BTreeMap::new()),
        };
        let options_with_value = self.options(file, &lists.options_with_value);
        let allow_options = lists.allow_options.as_ref().map(|l| self.options(file, l));
        let deny_options = self.options(file, &lists.deny_options);
        let ask_options = self.options(file, &lists.ask_options);
        let pattern_options = self.options(file, &lists.pattern_options);
        for o in &deny_options {
            if allow_options.as_ref().is_some_and(|a| a.contains(o)) || ask_options.contains(o) {
                self.diag(
                    DiagnosticCode::PolicyContradiction,
                    format!("option `{o}` of `{name}` is denied and also allowed or asked"),
                    file.loc(span.clone()),
                );
            }
        }
        let mut option_kinds = BTreeMap::new();
        for (opt, kind) in &lists.option_kinds {
            if !valid_option(opt) {
                self.diag(
                    DiagnosticCode::PolicyInvalidOption,
                    format!("`{opt}` is not an option"),
                    file.loc(kind.span()),
                );
                continue;
            }
            if let Some(k) = self.kind(file, kind.get_ref(), kind.span()) {
                option_kinds.insert(opt.clone(), k);
            }
        }
        let mut option_values = BTreeMap::new();
        for (opt, pat) in &lists.option_values {
            match self.regex(pat.get_ref()) {
                Ok(re) => {
                    option_values.insert(opt.clone(), re);
                }
                Err(e) => self.diag(
                    DiagnosticCode::PolicyInvalidRegex,
                    format!("option value pattern for `{opt}`: {e}"),
                    file.loc(pat.span()),
                ),
            }
        }
        let operands = match &raw.operands {
            Some(spec) => self.operands(file, spec),
            None => OperandSpec::default(),
        };
        let mut min_operands = 0;
        self.count(file, &raw.min_operands, 0, &mut min_operands);
        let mut args = Vec::new();
        for (i, a) in raw.args.iter().enumerate() {
            let verdict = match &a.verdict {
                Some(v) => self.verdict(file, v).unwrap_or(Verdict::Deny),
                None => Verdict::Deny,
            };
            let mut arg_min = 0;
            self.count(file, &a.min_operands, 0, &mut arg_min);
            let unless_options = self.options(file, &a.unless_options);
            match self.regex(a.pattern.get_ref()) {
                Ok(pattern) => args.push(ArgRule {
                    pattern,
                    verdict,
                    message: a.message.clone(),
                    rule: file.rule(format!("{path}.args[{i}]"), a.pattern.span()),
                    unless_options,
                    min_operands: arg_min,
                }),
                Err(e) => self.diag(
                    DiagnosticCode::PolicyInvalidRegex,
                    format!("{path}.args[{i}]: {e}"),
                    file.loc(a.pattern.span()),
                ),
            }
        }
        let mut subcommands = super::super::program_map::ProgramMap::default();
        for (sub, raw_sub) in &raw.subcommands {
            let sub_name = format!("{name} {sub}");
            let mut sub_segs = segs.to_vec();
            sub_segs.push("subcommands".into());
            sub_segs.push(sub.clone());
            if let Some(rule) = self.program(file, &sub_segs, &sub_name, raw_sub) {
                subcommands.insert(sub.clone(), rule);
            }
        }
        if raw.inherit_options {
            // Options of the program also apply after its subcommand (`npm ci --prefix ~`).
            for sub in subcommands.values_mut() {
                sub.edit(|sub| {
                    inherit(
                        sub,
                        &options_with_value,
                        &deny_options,
                        &ask_options,
                        &option_kinds,
                        &option_messages,
                        lists,
                    );
                    // A subcommand with its own allowlist also allows the program's options,
                    // which it inherits: explicitly, by this switch.
                    if let (Some(sub_allow), Some(allow)) = (&mut sub.allow_options, &allow_options)
                    {
                        sub_allow.extend(allow.iter().cloned());
                    }
                });
            }
        }
        let after_double_dash = raw.after_double_dash.as_ref().and_then(|dd| {
            let mut dd_segs = segs.to_vec();
            dd_segs.push("after_double_dash".into());
            self.program(file, &dd_segs, &format!("{name} --"), dd)
                .map(Box::new)
        });
        let options_with_two_values = self.options(file, &lists.options_with_two_values);
        for o in &options_with_two_values {
            if !options_with_value.contains(o) {
                self.diag(
                    DiagnosticCode::PolicyInvalidOption,
                    format!("`{o}` of `{name}` takes two values, so it must also be in options_with_value"),
                    file.loc(span.clone()),
                );
            }
        }
        let glued_options = self.options(file, &lists.glued_options);
        for o in &glued_options {
            if !raw.single_dash_long {
                self.diag(
                    DiagnosticCode::PolicyInvalidOption,
                    format!("`{o}` of `{name}` takes a glued value: glued_options are for programs with single_dash_long (a cluster reads glued values already)"),
                    file.loc(span.clone()),
                );
            }
        }
        let mut extra_operands = Verdict::Deny;
        if let Some(v) = &raw.extra_operands {
            extra_operands = self.verdict(file, v).unwrap_or(Verdict::Deny);
        }
        let mut unknown_subcommand = Verdict::Deny;
        if let Some(v) = &raw.unknown_subcommand {
            unknown_subcommand = self.verdict(file, v).unwrap_or(Verdict::Deny);
        }
        let repositories: Vec<PathPattern> = raw
            .repositories
            .iter()
            .filter_map(|r| self.path_pattern(file, &format!("{path}.repositories"), r))
            .collect();
        if self.diags.len() > start {
            return None;
        }
        Some(ProgramRule::new(ProgramSpec {
            name: name.to_string(),
            verdict,
            message: raw.message.clone(),
            rule: file.rule(path.clone(), span),
            single_dash_long: raw.single_dash_long,
            options_before_operands: raw.options_before_operands,
            harmless_options: raw.harmless_options,
            options_with_value,
            options_with_optional_value: self.options(file, &lists.options_with_optional_value),
            option_kinds,
            allow_options,
            deny_options,
            ask_options,
            options_message: raw.options_message.clone(),
            option_messages,
            option_table: table.is_some(),
            write_options: self.options(file, &lists.write_options),
            terminal_options: self.options(file, &lists.terminal_options),
            delegate_options: self.options(file, &lists.delegate_options),
            flags: self.options(file, &lists.flags),
            required_options: self.options(file, &lists.required_options),
            option_values,
            operands,
            pattern_options,
            min_operands,
            implicit_operand: raw.implicit_operand.clone(),
            implicit_operand_options: self.options(file, &lists.implicit_operand_options),
            extra_operands,
            args,
            subcommands,
            unknown_subcommand,
            options_with_two_values,
            after_double_dash,
            no_option_allowlist: raw.no_option_allowlist.clone(),
            options_complete: raw.options_complete,
            runs_workspace_code: raw.runs_workspace_code,
            opens_for_writing: raw.opens_for_writing,
            repositories,
            replaced: Vec::new(),
            glued_options,
            old_style_options: raw.old_style_options,
            value_write_options: self.options(file, &lists.value_write_options),
            target_directory: raw.target_directory,
        }))
    }
}

fn inherit(
    sub: &mut ProgramSpec,
    with_value: &BTreeSet<String>,
    deny: &BTreeSet<String>,
    ask: &BTreeSet<String>,
    kinds: &BTreeMap<String, ArgKind>,
    messages: &BTreeMap<String, String>,
    raw: &RawProgram,
) {
    for (k, v) in messages {
        sub.option_messages
            .entry(k.clone())
            .or_insert_with(|| v.clone());
    }
    sub.options_with_value.extend(with_value.iter().cloned());
    sub.deny_options.extend(deny.iter().cloned());
    sub.ask_options.extend(
        ask.iter()
            .filter(|o| !sub.deny_options.contains(*o))
            .cloned()
            .collect::<Vec<_>>(),
    );
    for (k, v) in kinds {
        sub.option_kinds.entry(k.clone()).or_insert(*v);
    }
    for o in &raw.options_with_optional_value {
        sub.options_with_optional_value.insert(o.get_ref().clone());
    }
    for o in &raw.flags {
        sub.flags.insert(o.get_ref().clone());
    }
}

fn valid_program_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '=')
}

fn valid_option(o: &str) -> bool {
    (o.starts_with('-') || o.starts_with('+')) && o.len() >= 2 && !o.contains(char::is_whitespace)
}
