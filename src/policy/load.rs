//! Loading: TOML text → raw types → validated, merged with includes → compiled [`Policy`].
//!
//! Every problem is collected (not just the first) with the file:line:col it comes from.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use regex::Regex;
use toml::Spanned;

use super::compiled::*;
use super::raw::*;
use super::{Diagnostic, Location, PolicyError, RuleRef, Verdict};
use crate::evaluate::{self, Context};

/// The policies shipped inside the library: `(name, TOML source)`.
pub const SHIPPED: &[(&str, &str)] = &[
    ("read-only", include_str!("../../policies/read-only.toml")),
    ("developer", include_str!("../../policies/developer.toml")),
];

#[path = "load_sandbox.rs"]
mod load_sandbox;

/// How deep includes may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Values of the wrong type reported from one file before giving up (each costs a re-read).
const MAX_TYPE_ERRORS: usize = 100;

pub(crate) fn shipped_source(name: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

pub(crate) fn load_file(path: &Path) -> Result<Policy, PolicyError> {
    let source = read(path)?;
    load_str(&source, &path.display().to_string())
}

fn read(path: &Path) -> Result<String, PolicyError> {
    std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn load_str(source: &str, origin: &str) -> Result<Policy, PolicyError> {
    let mut loader = Loader {
        diags: Vec::new(),
        policy: defaults(),
        stack: Vec::new(),
    };
    let dir = Path::new(origin)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Deserialising and checking the examples recurse (bounded by toml's own nesting limit
    // and the parser's): give them room whatever thread the caller loads from.
    crate::shell::with_stack(|| {
        loader.apply(source, origin, &dir, true)?;
        if loader.diags.is_empty() {
            check_examples(&loader.policy, &mut loader.diags);
        }
        Ok::<(), PolicyError>(())
    })?;
    if loader.diags.is_empty() {
        Ok(loader.policy)
    } else {
        Err(PolicyError::Invalid(loader.diags))
    }
}

fn defaults() -> Policy {
    use Verdict::*;
    Policy {
        name: String::new(),
        description: String::new(),
        default: Setting::builtin(Deny, "policy.default"),
        default_message: None,
        limits: Limits::default(),
        shell: ShellRules {
            substitutions: None,
            functions: Setting::builtin(Deny, "shell.functions"),
            background: Setting::builtin(Allow, "shell.background"),
            arithmetic_variables: Setting::builtin(Deny, "shell.arithmetic_variables"),
            indirect_expansion: Setting::builtin(Deny, "shell.indirect_expansion"),
            unresolved_paths: Setting::builtin(Deny, "shell.unresolved_paths"),
            dynamic_arguments: Setting::builtin(Deny, "shell.dynamic_arguments"),
        },
        paths: PathRules::default(),
        redirects: RedirectRules {
            fd_duplication: Setting::builtin(Allow, "redirects.fd_duplication"),
            here_documents: Setting::builtin(Allow, "redirects.here_documents"),
            read: Setting::builtin(Allow, "redirects.read"),
            write: Setting::builtin(Allow, "redirects.write"),
        },
        env: EnvRules {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            default: Setting::builtin(Deny, "env.default"),
            message: None,
        },
        wrappers: WrapperRules::default(),
        programs: BTreeMap::new(),
        examples: Vec::new(),
        redact: None,
        sandbox: Default::default(),
        sources: Vec::new(),
    }
}

struct Loader {
    diags: Vec<Diagnostic>,
    policy: Policy,
    /// Files being applied, for include cycle detection.
    stack: Vec<String>,
}

/// One file being validated: its name, text and parsed table, for locations.
struct File<'a> {
    origin: &'a str,
    source: &'a str,
    table: Option<toml::de::DeTable<'a>>,
}

impl File<'_> {
    /// The span of the key at a dotted path (map keys carry no span through serde).
    fn key(&self, segs: &[&str]) -> Range<usize> {
        let segs: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
        self.table
            .as_ref()
            .and_then(|t| key_span(t, &segs))
            .unwrap_or(0..0)
    }

    fn loc(&self, span: Range<usize>) -> Location {
        Location::at(self.origin, self.source, span.start)
    }

    fn rule(&self, name: impl Into<String>, span: Range<usize>) -> RuleRef {
        RuleRef {
            name: name.into(),
            location: self.loc(span),
        }
    }
}

impl Loader {
    fn diag(&mut self, code: &'static str, message: impl Into<String>, location: Location) {
        self.diags.push(Diagnostic {
            code,
            message: message.into(),
            location,
        });
    }

    fn apply(
        &mut self,
        source: &str,
        origin: &str,
        dir: &Path,
        top: bool,
    ) -> Result<(), PolicyError> {
        let mut file = File {
            origin,
            source,
            table: None,
        };
        let Some(raw) = self.parse(&mut file) else {
            return Ok(());
        };
        self.stack.push(origin.to_string());
        if let Some(meta) = &raw.policy {
            for inc in &meta.include {
                self.include(&file, dir, inc)?;
            }
        }
        self.stack.pop();
        self.policy.sources.push(origin.to_string());
        self.apply_raw(&file, raw, top);
        Ok(())
    }

    fn include(
        &mut self,
        file: &File,
        dir: &Path,
        inc: &Spanned<String>,
    ) -> Result<(), PolicyError> {
        let loc = file.loc(inc.span());
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.diag(
                "policy-include",
                format!("includes nest deeper than {MAX_INCLUDE_DEPTH}"),
                loc,
            );
            return Ok(());
        }
        let name = inc.get_ref();
        let (origin, text, inc_dir) = if let Some(src) = shipped_source(name) {
            (format!("shipped:{name}"), src.to_string(), PathBuf::new())
        } else {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(t) => {
                    let d = path.parent().map(Path::to_path_buf).unwrap_or_default();
                    (path.display().to_string(), t, d)
                }
                Err(e) => {
                    self.diag(
                        "policy-include",
                        format!("cannot read included policy `{}`: {e}", path.display()),
                        loc,
                    );
                    return Ok(());
                }
            }
        };
        if self.stack.contains(&origin) {
            self.diag(
                "policy-include-cycle",
                format!("`{origin}` includes itself"),
                loc,
            );
            return Ok(());
        }
        self.apply(&text, &origin, &inc_dir, false)
    }

    /// TOML → raw types, collecting every unknown key and every value of the wrong type.
    ///
    /// serde stops at the first value of the wrong type, so after one the value is removed
    /// from a copy of the document and the rest is read again, until it reads: each wrong
    /// value is reported once at its own place, and the rest of the file is still validated.
    fn parse(&mut self, file: &mut File) -> Option<RawPolicy> {
        let table = match toml::de::DeTable::parse(file.source) {
            Ok(t) => t,
            Err(e) => {
                let loc = file.loc(e.span().unwrap_or(0..0));
                self.diag("policy-syntax", first_line(e.message()), loc);
                return None;
            }
        };
        let mut work = table.clone();
        let mut unknown: Vec<Vec<String>> = Vec::new();
        let mut found: Vec<(Range<usize>, &'static str, String)> = Vec::new();
        let mut removed_keys: Vec<Vec<String>> = Vec::new();
        let raw = loop {
            let de = toml::de::Deserializer::from(work.clone());
            let result: Result<RawPolicy, _> = serde_ignored::deserialize(de, |path| {
                let mut segs = Vec::new();
                path_segments(&path, &mut segs);
                if !unknown.contains(&segs) {
                    unknown.push(segs);
                }
            });
            let e = match result {
                Ok(raw) => break Some(raw),
                Err(e) => e,
            };
            let span = e.span().unwrap_or(0..0);
            let mut key = Vec::new();
            let removed = !span.is_empty() && remove_at(work.get_mut(), &span, &mut key);
            // A table that lacks a key only because its wrong value was just removed is
            // the same mistake, reported once.
            let cascade = removed && removed_keys.iter().any(|k| k.starts_with(&key));
            if !cascade {
                found.push((span.clone(), "policy-type", type_message(&key, e.message())));
            }
            removed_keys.push(key);
            if !removed {
                break None;
            }
            if found.len() >= MAX_TYPE_ERRORS {
                found.push((
                    span,
                    "policy-type",
                    format!(
                        "more than {MAX_TYPE_ERRORS} values of the wrong type: fix these first"
                    ),
                ));
                break None;
            }
        };
        for segs in unknown {
            let span = key_span(table.get_ref(), &segs).unwrap_or(0..0);
            let dotted = segs.join(".");
            found.push((
                span,
                "policy-unknown-key",
                format!("unknown key `{dotted}`"),
            ));
        }
        // In the order of the file, whatever order serde met them in.
        found.sort_by_key(|(span, _, _)| span.start);
        for (span, code, message) in found {
            self.diag(code, message, file.loc(span));
        }
        file.table = Some(table.into_inner());
        raw
    }

    fn verdict(&mut self, file: &File, v: &Spanned<String>) -> Option<Verdict> {
        let parsed = Verdict::parse(v.get_ref());
        if parsed.is_none() {
            self.diag(
                "policy-invalid-verdict",
                format!(
                    "`{}` is not a verdict: use \"allow\", \"ask\" or \"deny\"",
                    v.get_ref()
                ),
                file.loc(v.span()),
            );
        }
        parsed
    }

    fn setting(
        &mut self,
        file: &File,
        name: &str,
        v: &Option<Spanned<String>>,
        slot: &mut Setting,
    ) {
        if let Some(v) = v {
            if let Some(verdict) = self.verdict(file, v) {
                *slot = Setting {
                    verdict,
                    rule: file.rule(name, v.span()),
                };
            }
        }
    }

    fn count(&mut self, file: &File, v: &Option<Spanned<i64>>, min: i64, slot: &mut usize) {
        if let Some(v) = v {
            match usize::try_from(*v.get_ref()) {
                Ok(n) if *v.get_ref() >= min => *slot = n,
                _ => self.diag(
                    "policy-invalid-limit",
                    format!("{} is out of range (at least {min})", v.get_ref()),
                    file.loc(v.span()),
                ),
            }
        }
    }

    fn apply_raw(&mut self, file: &File, raw: RawPolicy, top: bool) {
        if let Some(meta) = raw.policy {
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
        if let Some(l) = raw.limits {
            let mut limits = self.policy.limits;
            self.count(file, &l.max_bytes, 1, &mut limits.max_bytes);
            self.count(file, &l.max_depth, 1, &mut limits.max_depth);
            self.count(file, &l.max_commands, 1, &mut limits.max_commands);
            self.count(file, &l.max_nesting, 0, &mut limits.max_nesting);
            self.policy.limits = limits;
        }
        if let Some(s) = raw.shell {
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
            self.policy.shell = shell;
        }
        if let Some(p) = raw.paths {
            let mut paths = std::mem::take(&mut self.policy.paths);
            for (list, name, dest) in [
                (&p.read, "paths.read", &mut paths.read),
                (&p.write, "paths.write", &mut paths.write),
                (&p.deny_read, "paths.deny_read", &mut paths.deny_read),
                (&p.deny_write, "paths.deny_write", &mut paths.deny_write),
                (&p.protected, "paths.protected", &mut paths.protected),
                (&p.unprotected, "paths.unprotected", &mut paths.unprotected),
            ] {
                for item in list {
                    if let Some(pat) = self.path_pattern(file, name, item) {
                        dest.push(pat);
                    }
                }
            }
            if p.message.is_some() {
                // A file's own `message` is not shadowed by an included file's per-kind one.
                paths.read_message = None;
                paths.write_message = None;
            }
            for (new, dest) in [
                (p.message, &mut paths.message),
                (p.read_message, &mut paths.read_message),
                (p.write_message, &mut paths.write_message),
            ] {
                if new.is_some() {
                    *dest = new;
                }
            }
            if p.protected_message.is_some() {
                paths.protected_message = p.protected_message;
            }
            self.policy.paths = paths;
        }
        if let Some(r) = raw.redirects {
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
        if let Some(e) = raw.env {
            self.apply_env(file, e);
        }
        if let Some(w) = raw.wrappers {
            self.apply_wrappers(file, w);
        }
        for (key, prog) in raw.programs {
            let name_span = file.key(&["programs", &key]);
            if !valid_program_name(&key) {
                self.diag(
                    "policy-invalid-program",
                    format!("`{key}` is not a program name"),
                    file.loc(name_span),
                );
                continue;
            }
            if evaluate::wrappers::is_wrapper(&key) {
                self.diag(
                    "policy-wrapper-as-program",
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
                self.policy.programs.insert(key, rule);
            }
        }
        for name in self.policy.programs.keys() {
            if let Some(r) = self.policy.wrappers.allow.get(name) {
                self.diags.push(Diagnostic {
                    code: "policy-contradiction",
                    message: format!("`{name}` is both a program and an allowed wrapper"),
                    location: r.location.clone(),
                });
            }
        }
        if let Some(value) = raw.redact {
            self.apply_redact(file, value);
        }
        if let Some(sandbox) = raw.sandbox {
            self.apply_sandbox(file, sandbox);
        }
        if top {
            if let Some(ex) = raw.examples {
                for (list, expect) in [
                    (&ex.allow, Verdict::Allow),
                    (&ex.ask, Verdict::Ask),
                    (&ex.deny, Verdict::Deny),
                ] {
                    for cmd in list {
                        self.policy.examples.push(Example {
                            command: cmd.get_ref().clone(),
                            expect,
                            rule: file.rule(format!("examples.{expect}"), cmd.span()),
                        });
                    }
                }
            }
        }
    }

    /// `[redact]`: extend or override the built-in credential rules. Validated here (every
    /// regex compiled) so a broken rule is a load error at the policy's location.
    fn apply_redact(&mut self, file: &File, value: toml::Value) {
        let loc = file.loc(file.key(&["redact"]));
        let config: crate::redact::RedactConfig = match value.try_into() {
            Ok(c) => c,
            Err(e) => {
                self.diag(
                    "policy-redact",
                    format!("[redact]: {}", first_line(e.message())),
                    loc,
                );
                return;
            }
        };
        let mut merged = self.policy.redact.take().unwrap_or_default();
        merged.merge(config);
        if let Err(e) = crate::redact::RuleSet::with_config(&merged) {
            self.diag("policy-redact", format!("[redact]: {e}"), loc);
            return;
        }
        self.policy.redact = Some(merged);
    }

    fn path_pattern(
        &mut self,
        file: &File,
        name: &str,
        item: &Spanned<String>,
    ) -> Option<PathPattern> {
        let text = item.get_ref();
        let loc = file.loc(item.span());
        let (anchor, rest) = if let Some(r) = text.strip_prefix("{workspace}") {
            (PathAnchor::Workspace, r)
        } else if let Some(r) = text.strip_prefix("{output_dir}") {
            (PathAnchor::OutputDir, r)
        } else if let Some(r) = text.strip_prefix("{home}") {
            (PathAnchor::Home, r)
        } else if let Some(r) = text.strip_prefix('~') {
            (PathAnchor::Home, r)
        } else if text.starts_with('/') {
            (PathAnchor::Root, text.as_str())
        } else {
            self.diag(
                "policy-invalid-path",
                format!("`{text}` must start with {{workspace}}, {{home}}, {{output_dir}}, ~ or /"),
                loc,
            );
            return None;
        };
        let rest = rest.trim_start_matches('/').trim_end_matches('/');
        if rest.split('/').any(|c| c == ".." || c == ".") {
            self.diag(
                "policy-invalid-path",
                format!("`{text}` must not contain `.` or `..`"),
                loc,
            );
            return None;
        }
        let rest = if rest.is_empty() {
            None
        } else {
            match GlobBuilder::new(rest).literal_separator(true).build() {
                Ok(g) => Some(g.compile_matcher()),
                Err(e) => {
                    self.diag("policy-invalid-glob", format!("`{text}`: {e}"), loc);
                    return None;
                }
            }
        };
        Some(PathPattern {
            text: text.clone(),
            anchor,
            rest,
            rule: file.rule(name, item.span()),
        })
    }

    fn name_patterns(
        &mut self,
        file: &File,
        name: &str,
        list: &[Spanned<String>],
    ) -> Vec<NamePattern> {
        let mut out = Vec::new();
        for item in list {
            let text = item.get_ref();
            let ok_chars = text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_*?[]!-".contains(c));
            let glob = if ok_chars && !text.is_empty() {
                GlobBuilder::new(text).build().ok()
            } else {
                None
            };
            match glob {
                Some(g) => out.push(NamePattern {
                    text: text.clone(),
                    glob: g.compile_matcher(),
                    rule: file.rule(name, item.span()),
                }),
                None => self.diag(
                    "policy-invalid-glob",
                    format!("`{text}` is not a variable-name pattern"),
                    file.loc(item.span()),
                ),
            }
        }
        out
    }

    fn apply_env(&mut self, file: &File, e: RawEnv) {
        let allow = self.name_patterns(file, "env.allow", &e.allow);
        let ask = self.name_patterns(file, "env.ask", &e.ask);
        let deny = self.name_patterns(file, "env.deny", &e.deny);
        for d in &deny {
            if let Some(a) = allow.iter().chain(&ask).find(|a| a.text == d.text) {
                self.diags.push(Diagnostic {
                    code: "policy-contradiction",
                    message: format!("`{}` is in env.deny and also in {}", d.text, a.rule.name),
                    location: a.rule.location.clone(),
                });
            }
        }
        let mut env = self.policy.env.clone();
        env.allow.extend(allow);
        env.ask.extend(ask);
        env.deny.extend(deny);
        self.setting(file, "env.default", &e.default, &mut env.default);
        if e.message.is_some() {
            env.message = e.message;
        }
        self.policy.env = env;
    }

    fn apply_wrappers(&mut self, file: &File, w: RawWrappers) {
        let mut wrappers = std::mem::take(&mut self.policy.wrappers);
        for (list, name, ask) in [
            (&w.allow, "wrappers.allow", false),
            (&w.ask, "wrappers.ask", true),
        ] {
            for item in list {
                let n = item.get_ref();
                if !evaluate::wrappers::is_unwrappable(n) {
                    self.diag(
                        "policy-unknown-wrapper",
                        format!(
                            "`{n}` is not a wrapper shellgate can unwrap; supported: {}",
                            evaluate::wrappers::UNWRAPPABLE.join(", ")
                        ),
                        file.loc(item.span()),
                    );
                    continue;
                }
                let other = if ask { &wrappers.allow } else { &wrappers.ask };
                if other.contains_key(n) {
                    self.diag(
                        "policy-contradiction",
                        format!("wrapper `{n}` is in both wrappers.allow and wrappers.ask"),
                        file.loc(item.span()),
                    );
                    continue;
                }
                let dest = if ask {
                    &mut wrappers.ask
                } else {
                    &mut wrappers.allow
                };
                dest.insert(n.clone(), file.rule(name, item.span()));
            }
        }
        if w.message.is_some() {
            wrappers.message = w.message;
        }
        self.policy.wrappers = wrappers;
    }

    fn options(&mut self, file: &File, list: &[Spanned<String>]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for item in list {
            let o = item.get_ref();
            if valid_option(o) {
                out.insert(o.clone());
            } else {
                self.diag(
                    "policy-invalid-option",
                    format!("`{o}` is not an option (it must start with `-`, or `+` for a few programs)"),
                    file.loc(item.span()),
                );
            }
        }
        out
    }

    fn kind(&mut self, file: &File, text: &str, span: Range<usize>) -> Option<ArgKind> {
        let k = ArgKind::parse(text);
        if k.is_none() {
            self.diag(
                "policy-invalid-kind",
                format!(
                    "`{text}` is not an argument kind: use path-read, path-write, text, pattern, \
                     variable, assignment, sed-script, awk-program, path-list, module-path, \
                     program, backup-suffix, pathspec or jq-program"
                ),
                file.loc(span),
            );
        }
        k
    }

    fn operands(&mut self, file: &File, spec: &Spanned<OneOrMany>) -> OperandSpec {
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
                        "policy-invalid-kind",
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

    fn program(
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
        let options_with_value = self.options(file, &raw.options_with_value);
        let allow_options = raw.allow_options.as_ref().map(|l| self.options(file, l));
        let deny_options = self.options(file, &raw.deny_options);
        let ask_options = self.options(file, &raw.ask_options);
        let pattern_options = self.options(file, &raw.pattern_options);
        for o in &deny_options {
            if allow_options.as_ref().is_some_and(|a| a.contains(o)) || ask_options.contains(o) {
                self.diag(
                    "policy-contradiction",
                    format!("option `{o}` of `{name}` is denied and also allowed or asked"),
                    file.loc(span.clone()),
                );
            }
        }
        let mut option_kinds = BTreeMap::new();
        for (opt, kind) in &raw.option_kinds {
            if !valid_option(opt) {
                self.diag(
                    "policy-invalid-option",
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
        for (opt, pat) in &raw.option_values {
            match Regex::new(pat.get_ref()) {
                Ok(re) => {
                    option_values.insert(opt.clone(), re);
                }
                Err(e) => self.diag(
                    "policy-invalid-regex",
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
            match Regex::new(a.pattern.get_ref()) {
                Ok(pattern) => args.push(ArgRule {
                    pattern,
                    verdict,
                    message: a.message.clone(),
                    rule: file.rule(format!("{path}.args[{i}]"), a.pattern.span()),
                }),
                Err(e) => self.diag(
                    "policy-invalid-regex",
                    format!("{path}.args[{i}]: {e}"),
                    file.loc(a.pattern.span()),
                ),
            }
        }
        let mut subcommands = BTreeMap::new();
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
                inherit(
                    sub,
                    &options_with_value,
                    &deny_options,
                    &ask_options,
                    &option_kinds,
                    raw,
                );
                // A subcommand with its own allowlist also allows the program's options,
                // which it inherits: explicitly, by this switch.
                if let (Some(sub_allow), Some(allow)) = (&mut sub.allow_options, &allow_options) {
                    sub_allow.extend(allow.iter().cloned());
                }
            }
        }
        let after_double_dash = raw.after_double_dash.as_ref().and_then(|dd| {
            let mut dd_segs = segs.to_vec();
            dd_segs.push("after_double_dash".into());
            self.program(file, &dd_segs, &format!("{name} --"), dd)
                .map(Box::new)
        });
        let options_with_two_values = self.options(file, &raw.options_with_two_values);
        for o in &options_with_two_values {
            if !options_with_value.contains(o) {
                self.diag(
                    "policy-invalid-option",
                    format!("`{o}` of `{name}` takes two values, so it must also be in options_with_value"),
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
        if self.diags.len() > start {
            return None;
        }
        Some(ProgramRule {
            name: name.to_string(),
            verdict,
            message: raw.message.clone(),
            rule: file.rule(path.clone(), span),
            single_dash_long: raw.single_dash_long,
            options_before_operands: raw.options_before_operands,
            harmless_options: raw.harmless_options,
            options_with_value,
            options_with_optional_value: self.options(file, &raw.options_with_optional_value),
            option_kinds,
            allow_options,
            deny_options,
            ask_options,
            options_message: raw.options_message.clone(),
            write_options: self.options(file, &raw.write_options),
            terminal_options: self.options(file, &raw.terminal_options),
            delegate_options: self.options(file, &raw.delegate_options),
            flags: self.options(file, &raw.flags),
            required_options: self.options(file, &raw.required_options),
            option_values,
            operands,
            pattern_options,
            min_operands,
            implicit_operand: raw.implicit_operand.clone(),
            implicit_operand_options: self.options(file, &raw.implicit_operand_options),
            extra_operands,
            args,
            subcommands,
            unknown_subcommand,
            options_with_two_values,
            after_double_dash,
            no_option_allowlist: raw.no_option_allowlist.clone(),
            options_complete: raw.options_complete,
        })
    }
}

fn inherit(
    sub: &mut ProgramRule,
    with_value: &BTreeSet<String>,
    deny: &BTreeSet<String>,
    ask: &BTreeSet<String>,
    kinds: &BTreeMap<String, ArgKind>,
    raw: &RawProgram,
) {
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

fn first_line(msg: &str) -> String {
    msg.trim().lines().next().unwrap_or("").to_string()
}

fn path_segments(path: &serde_ignored::Path, out: &mut Vec<String>) {
    use serde_ignored::Path as P;
    match path {
        P::Root => {}
        P::Seq { parent, index } => {
            path_segments(parent, out);
            out.push(index.to_string());
        }
        P::Map { parent, key } => {
            path_segments(parent, out);
            out.push(key.clone());
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            path_segments(parent, out)
        }
    }
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// Removes the innermost key (or list item) whose key or value holds `span` from `table`,
/// pushing the path to it on `path`; false when nothing holds it. Every table is searched,
/// whatever its own span: a `[header]` table's span is its header, not its keys.
fn remove_at(table: &mut toml::de::DeTable, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    let keys: Vec<_> = table.keys().cloned().collect();
    for key in keys {
        let Some(value) = table.get_mut(&key) else {
            continue;
        };
        let holds = contains(&value.span(), span) || contains(&key.span(), span);
        path.push(key.get_ref().to_string());
        if remove_in(value.get_mut(), span, path) {
            return true;
        }
        if holds {
            table.remove(&key);
            return true;
        }
        path.pop();
    }
    false
}

/// [`remove_at`] below a value: true when something inside `value` was removed.
fn remove_in(value: &mut toml::de::DeValue, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    use toml::de::{DeArray, DeValue};
    match value {
        DeValue::Table(t) => remove_at(t, span, path),
        DeValue::Array(arr) => {
            for i in 0..arr.len() {
                let item = &mut (**arr)[i];
                let holds = contains(&item.span(), span);
                path.push(i.to_string());
                if remove_in(item.get_mut(), span, path) {
                    return true;
                }
                if holds {
                    let items = std::mem::replace(arr, DeArray::new());
                    *arr = items
                        .into_iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, item)| item)
                        .collect();
                    return true;
                }
                path.pop();
            }
            false
        }
        _ => false,
    }
}

/// serde's message for a value of the wrong type, in words a policy author reads, with the
/// key it is about: "`limits.max_bytes`: expected a whole number, found the string \"big\"".
fn type_message(key: &[String], msg: &str) -> String {
    let msg = first_line(msg);
    let text = if let Some(rest) = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))
    {
        match rest.rsplit_once(", expected ") {
            Some((found, expected)) => {
                format!(
                    "expected {}, found {}",
                    expected_words(expected),
                    found_words(found)
                )
            }
            None => rest.to_string(),
        }
    } else if msg.starts_with("data did not match any variant of untagged enum OneOrMany") {
        "expected a string or a list of strings".to_string()
    } else if let Some(field) = msg.strip_prefix("missing field ") {
        format!("this table needs the key {field}")
    } else {
        msg
    };
    // Keys of list items read `args[0]`, not `args.0`.
    let mut name = String::new();
    for seg in key {
        if seg.parse::<usize>().is_ok() {
            name.push_str(&format!("[{seg}]"));
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(seg);
        }
    }
    if name.is_empty() {
        text
    } else {
        format!("`{name}`: {text}")
    }
}

/// What serde says it expected (a Rust type name or a visitor's phrase), in TOML words.
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" | "bool" => "true or false".into(),
        "a string" | "a borrowed string" | "a string key" | "a char" => {
            "a string (in quotes)".into()
        }
        "a sequence" | "a list" => "a list (`[...]`)".into(),
        "a map" => "a table".into(),
        _ if e.starts_with("struct ") => "a table".into(),
        _ => e.into(),
    }
}

/// serde's `Unexpected` (`string "big"`, `integer `3``, `sequence`) in TOML words.
fn found_words(found: &str) -> String {
    let f = found.trim();
    let bare = |s: &str| s.trim_matches('`').to_string();
    if let Some(v) = f.strip_prefix("integer ") {
        format!("the whole number {}", bare(v))
    } else if let Some(v) = f.strip_prefix("floating point ") {
        format!("the number {}", bare(v))
    } else if let Some(v) = f.strip_prefix("boolean ") {
        bare(v)
    } else if let Some(v) = f.strip_prefix("string ") {
        format!("the string {v}")
    } else {
        match f {
            "sequence" => "a list".into(),
            "map" => "a table".into(),
            _ => f.into(),
        }
    }
}

/// The span of the key at `segs` in the document, for unknown-key diagnostics.
fn key_span(root: &toml::de::DeTable, segs: &[String]) -> Option<Range<usize>> {
    use toml::de::DeValue;
    let mut table = root;
    let mut span = None;
    let mut iter = segs.iter().peekable();
    while let Some(seg) = iter.next() {
        let (k, v) = table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == seg.as_str())?;
        span = Some(k.span());
        let mut value = v.get_ref();
        // Arrays of tables: the next segment is an index. A key whose value is a list (and
        // nothing under it is the unknown key) is the place itself.
        while let DeValue::Array(arr) = value {
            let Some(idx) = iter.peek().and_then(|s| s.parse::<usize>().ok()) else {
                return span;
            };
            iter.next();
            match arr.get(idx) {
                Some(item) => value = item.get_ref(),
                None => return span,
            }
        }
        match value {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    span
}

fn check_examples(policy: &Policy, diags: &mut Vec<Diagnostic>) {
    let mut ctx = Context::example();
    // Examples show the policy as it is meant to run: sandboxed when it asks for the sandbox.
    if policy.sandbox.mode == super::sandbox::SandboxMode::Enforce {
        ctx.sandbox = evaluate::SandboxState::Enforced;
    }
    for ex in &policy.examples {
        let decision = evaluate::evaluate(policy, &ctx, &ex.command);
        if decision.verdict != ex.expect {
            let why = decision
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.message))
                .collect::<Vec<_>>()
                .join("; ");
            diags.push(Diagnostic {
                code: "policy-example-failed",
                message: format!(
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
                location: ex.rule.location.clone(),
            });
        }
    }
}
