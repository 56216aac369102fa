//! Loading one policy: TOML text → raw types → each section validated → merged with its
//! includes → compiled [`Policy`] (the examples are run above, in [`crate::load`]).
//!
//! Every problem is collected (not just the first) with the file:line:col it comes from.
//! This file holds the driver: the entry points, the built-in defaults, and the order in
//! which one file's sections are applied. Each section's raw type and validation is in its
//! own file below.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;

use super::compiled::*;
use super::raw::*;
use super::{Diagnostic, Lines, Location, PolicyError, RuleRef, Severity, Verdict};
use crate::codes::DiagnosticCode;

mod deserialize;
mod env;
mod examples;
mod include;
mod merge;
mod options;
mod paths;
mod programs;
mod redact;
mod sandbox;
mod settings;
mod shipped;
mod snapshots;
mod values;
mod wrappers;

pub(crate) use env::RawEnv;
pub(crate) use examples::RawExamples;
pub(crate) use options::{lint_option_tables, OLD_OPTION_KEYS};
pub(crate) use paths::RawPaths;
pub(crate) use programs::RawProgram;
pub(crate) use settings::{RawLimits, RawMeta, RawRedirects, RawShell};
pub(crate) use shipped::{library_source, shipped_source};
pub use shipped::{LIBRARY, SHIPPED};
pub(crate) use wrappers::RawWrappers;

use deserialize::key_span;

pub(crate) fn load_str(source: &str, origin: &str) -> Result<Policy, PolicyError> {
    let (policy, diags) = load_str_lenient(source, origin)?;
    if diags.is_empty() {
        Ok(*policy)
    } else {
        Err(PolicyError::Invalid(diags))
    }
}

/// The policy as far as it validates, beside every problem found. A value that fails is
/// left out and the rest is applied, so the linter can warn about the parts that did load in
/// the same run as the load errors. Only [`load_str`]'s `Ok` is a policy to evaluate with.
pub(crate) fn load_str_lenient(
    source: &str,
    origin: &str,
) -> Result<(Box<Policy>, Vec<Diagnostic>), PolicyError> {
    let dir = Path::new(origin)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Deserialising recurses (bounded by toml's own nesting limit), and a `Policy` is large:
    // build it where there is room whatever thread the caller loads from (a hook's may be
    // small), and hand it back boxed.
    crate::shell::with_stack(|| {
        let mut loader = Box::new(Loader {
            diags: Vec::new(),
            policy: defaults(),
            stack: Vec::new(),
            compiled: Compiled::default(),
        });
        loader.apply(source, origin, &dir, true)?;
        loader.policy.reindex();
        let Loader { policy, diags, .. } = *loader;
        Ok((Box::new(policy), diags))
    })
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
            paranoid: None,
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
            read: Box::new(EnvReads {
                allow: Vec::new(),
                deny: Vec::new(),
                default: Setting::builtin(Deny, "env.read_default"),
                message: None,
            }),
        },
        wrappers: WrapperRules::default(),
        programs: Default::default(),
        examples: Vec::new(),
        redact: None,
        sandbox: Default::default(),
        snapshots: Default::default(),
        sources: Vec::new(),
    }
}

struct Loader {
    diags: Vec<Diagnostic>,
    policy: Policy,
    /// Files being applied, for include cycle detection.
    stack: Vec<String>,
    compiled: Compiled,
}

/// The patterns this load has compiled, by text. Policies repeat them (developer.toml writes
/// one option-value regex 32 times), and compiling is the dearest step of a load; a clone
/// shares the compiled automaton (each clone gets its own match caches).
#[derive(Default)]
struct Compiled {
    regexes: HashMap<String, Regex>,
    /// By pattern and `literal_separator`.
    globs: HashMap<(String, bool), GlobMatcher>,
}

/// One file being validated: its name, text and parsed table, for locations.
struct File<'a> {
    origin: &'a str,
    source: &'a str,
    table: Option<toml::de::DeTable<'a>>,
    /// The line starts of `source`, made at the first location asked for.
    lines: OnceCell<Lines<'a>>,
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
        self.lines
            .get_or_init(|| Lines::new(self.source))
            .at(self.origin, span.start)
    }

    fn rule(&self, name: impl Into<String>, span: Range<usize>) -> RuleRef {
        RuleRef {
            name: name.into(),
            location: self.loc(span),
        }
    }
}

impl Loader {
    /// `Regex::new(pattern)`, compiled once per load.
    fn regex(&mut self, pattern: &str) -> Result<Regex, regex::Error> {
        if let Some(re) = self.compiled.regexes.get(pattern) {
            return Ok(re.clone());
        }
        let re = Regex::new(pattern)?;
        self.compiled
            .regexes
            .insert(pattern.to_string(), re.clone());
        Ok(re)
    }

    /// The matcher of `GlobBuilder::new(pattern).literal_separator(literal_separator)`,
    /// compiled once per load (or none, for a pattern without glob syntax).
    fn glob(&mut self, pattern: &str, literal_separator: bool) -> Result<Glob, globset::Error> {
        if !pattern.contains(Glob::SYNTAX) {
            return Ok(Glob::Exact(pattern.to_string()));
        }
        let key = (pattern.to_string(), literal_separator);
        if let Some(g) = self.compiled.globs.get(&key) {
            return Ok(Glob::Matcher(LazyGlob::ready(
                pattern,
                literal_separator,
                g.clone(),
            )));
        }
        let g = GlobBuilder::new(pattern)
            .literal_separator(literal_separator)
            .build()?
            .compile_matcher();
        self.compiled.globs.insert(key, g.clone());
        Ok(Glob::Matcher(LazyGlob::ready(
            pattern,
            literal_separator,
            g,
        )))
    }

    fn diag(&mut self, code: DiagnosticCode, message: impl Into<String>, location: Location) {
        self.diags
            .push(Diagnostic::new(Severity::Error, code, message, location));
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
            lines: OnceCell::new(),
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

    /// One file's sections, in an order where each check sees what it depends on (programs
    /// after wrappers, for the program-and-wrapper contradiction).
    fn apply_raw(&mut self, file: &File, raw: RawPolicy, top: bool) {
        if file.origin.starts_with(shipped::LIBRARY_PREFIX) {
            // A module of the program library holds program rules and nothing else: where
            // reads and writes go, and every verdict default, is the including policy's.
            let others = [
                ("policy", raw.policy.is_some()),
                ("limits", raw.limits.is_some()),
                ("shell", raw.shell.is_some()),
                ("paths", raw.paths.is_some()),
                ("redirects", raw.redirects.is_some()),
                ("env", raw.env.is_some()),
                ("wrappers", raw.wrappers.is_some()),
                ("examples", raw.examples.is_some()),
                ("redact", raw.redact.is_some()),
                ("sandbox", raw.sandbox.is_some()),
                ("snapshots", raw.snapshots.is_some()),
            ];
            for (section, present) in others {
                if present {
                    self.diag(
                        DiagnosticCode::PolicyInclude,
                        format!(
                            "`{}` is a program module: it may hold only [programs], not [{section}]",
                            file.origin
                        ),
                        file.loc(file.key(&[section])),
                    );
                }
            }
            self.apply_programs(file, raw.programs);
            return;
        }
        if let Some(meta) = raw.policy {
            self.apply_meta(file, meta);
        }
        if let Some(l) = raw.limits {
            self.apply_limits(file, l);
        }
        if let Some(s) = raw.shell {
            self.apply_shell(file, s);
        }
        if let Some(p) = raw.paths {
            self.apply_paths(file, p);
        }
        if let Some(r) = raw.redirects {
            self.apply_redirects(file, r);
        }
        if let Some(e) = raw.env {
            self.apply_env(file, *e);
        }
        if let Some(w) = raw.wrappers {
            self.apply_wrappers(file, w);
        }
        self.apply_programs(file, raw.programs);
        if let Some(value) = raw.redact {
            self.apply_redact(file, value);
        }
        if let Some(sandbox) = raw.sandbox {
            self.apply_sandbox(file, sandbox);
        }
        if let Some(snapshots) = raw.snapshots {
            self.apply_snapshots(file, *snapshots);
        }
        if top {
            if let Some(ex) = raw.examples {
                self.apply_examples(file, ex);
            }
        }
    }
}

/// The first line of an error message (toml's and regex's run on with context).
fn first_line(msg: &str) -> String {
    msg.trim().lines().next().unwrap_or("").to_string()
}
