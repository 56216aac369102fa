//! The option-effect oracle: run a program with each option its rule allows, in the jail, in
//! a scratch workspace with decoys beside it, and report what the option really did that its
//! entry does not say.
//!
//! - [`Scratch`]: the workspace (fixture files), the decoys outside it (a secret, a program
//!   that leaves a mark when run, `$HOME` with an SSH key).
//! - [`Tracer`]: one run under `strace -f` inside bubblewrap's jail (built by
//!   [`crate::sandbox::plan::JailPlan`]: no network, no host paths but the system's read-only
//!   and the scratch tree), read into [`Effect`]s: programs run, decoys touched, writes,
//!   network. No jail, no run: [`OracleError::Jail`].
//! - [`Oracle::check`]: every allowed option of a policy's rules (each value kind tried with a
//!   value inside and one outside); a command is run only when the policy allows it, so any
//!   effect beyond the workspace's reads is a [`Finding`] against the rule (`policy-check
//!   oracle`).
//! - [`help`] reads a program's `--help` (and man page) into its options; [`draft`] types each
//!   with the oracle and writes an option table (`policy-check draft`).

pub mod draft;
pub mod help;
mod known;
mod scratch;
mod trace;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use scratch::Scratch;
pub use trace::{effects, normalize, Effect, Run, Tracer};

use crate::evaluate::{check_file_access, FileAccess};
use crate::policy::{ArgKind, ProgramRule, RuleRef};
use crate::{Policy, Verdict};

/// Why the oracle cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// The jail cannot start: the oracle never runs an option outside it.
    #[error(
        "sandbox-unavailable: the oracle runs programs only inside the jail, which cannot \
         start here: {0}"
    )]
    Jail(String),
    /// strace is missing.
    #[error(
        "strace is not installed: the oracle observes programs with it (Debian/Ubuntu: \
         apt-get install strace)"
    )]
    NoStrace,
    /// The scratch workspace could not be made.
    #[error("the oracle's scratch workspace: {0}")]
    Scratch(String),
}

/// The first `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether `name` is an installed program.
pub fn installed(name: &str) -> bool {
    which(name).is_some()
}

/// What one option of an allowed command did beyond its entry.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Finding {
    /// The program (and subcommand) of the rule.
    pub program: String,
    /// The option.
    pub option: String,
    /// The command that ran (allowed by the policy).
    pub command: String,
    /// What it did.
    pub effect: Effect,
    /// The rule that allowed it.
    #[serde(serialize_with = "rule_text")]
    pub rule: RuleRef,
}

fn rule_text<S: serde::Serializer>(r: &RuleRef, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&r.to_string())
}

/// Per rule: options checked, runs, commands the policy refused (so not run).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Counts {
    /// Allowed options checked.
    pub options: usize,
    /// Commands run.
    pub runs: usize,
    /// Commands the policy refused (a value outside, for example): not run.
    pub refused: usize,
}

/// The oracle's result over a policy.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    /// Per program (and subcommand).
    pub per_program: BTreeMap<String, Counts>,
    /// Every effect beyond an entry.
    pub findings: Vec<Finding>,
    /// Programs, rules or commands not checked, with why.
    pub skipped: Vec<String>,
}

impl Report {
    /// The table for people: one line per program, then what was skipped.
    pub fn summary(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::from("program\toptions\truns\trefused by the policy (not run)\n");
        let (mut o, mut r, mut x) = (0, 0, 0);
        for (p, c) in &self.per_program {
            let _ = writeln!(out, "{p}\t{}\t{}\t{}", c.options, c.runs, c.refused);
            o += c.options;
            r += c.runs;
            x += c.refused;
        }
        let _ = writeln!(
            out,
            "total: {} programs, {o} options, {r} runs, {x} refused",
            self.per_program.len()
        );
        for s in &self.skipped {
            let _ = writeln!(out, "skipped: {s}");
        }
        out
    }
}

/// A scratch tree and a jailed tracer: build once, run many.
#[derive(Debug)]
pub struct Oracle {
    scratch: Scratch,
    pub(crate) tracer: Tracer,
    /// Try every value of every kind (a path inside, a decoy outside, the decoy program, a
    /// number), not only the first.
    pub full: bool,
}

impl Oracle {
    /// Make the scratch tree and check that the jail and strace work.
    pub fn new() -> Result<Oracle, OracleError> {
        let scratch = Scratch::new()?;
        let tracer = Tracer::new(&scratch)?;
        Ok(Oracle {
            scratch,
            tracer,
            full: false,
        })
    }

    /// How long one run may last (20 s by default); a run cut short leaves its option
    /// unsettled.
    pub fn set_time_limit(&mut self, limit: std::time::Duration) {
        self.tracer.limit = limit;
    }

    /// The scratch tree.
    pub fn scratch(&self) -> &Scratch {
        &self.scratch
    }

    /// Run one argv in the jail, traced.
    pub fn run(&self, argv: &[String]) -> Result<Run, String> {
        self.tracer.run(argv, &self.scratch)
    }

    /// Check the rules of `programs` in `policy` (every program of the policy when empty):
    /// each allowed option, with each value kind, run when the policy allows the command.
    pub fn check(&self, policy: &Policy, programs: &[String]) -> Report {
        let mut t = Report::default();
        let names: Vec<String> = if programs.is_empty() {
            policy.programs.keys().map(|k| k.to_string()).collect()
        } else {
            programs.to_vec()
        };
        for program in &names {
            let Some(rule) = policy.programs.get(program) else {
                t.skipped.push(format!("{program}: no rule in the policy"));
                continue;
            };
            if rule.verdict == Verdict::Deny {
                continue;
            }
            if !installed(program) {
                t.skipped.push(format!("{program}: not installed"));
                continue;
            }
            if rule.subcommands.is_empty() {
                self.check_rule(policy, program, None, rule, &mut t);
            } else {
                for (sub, sub_rule) in &rule.subcommands {
                    self.check_rule(policy, program, Some(sub), sub_rule, &mut t);
                }
            }
        }
        t
    }

    /// The words around the option for a rule: the template, else the first probe the policy
    /// allows and the program runs with.
    fn placement(
        &self,
        policy: &Policy,
        program: &str,
        sub: Option<&str>,
    ) -> Option<(Vec<String>, Vec<String>)> {
        let own = |v: Vec<&str>| v.into_iter().map(String::from).collect::<Vec<_>>();
        match sub {
            None => {
                if let Some((pre, post)) = known::template(program) {
                    return Some((own(pre), own(post)));
                }
            }
            Some(sub) => {
                if let Some(post) = known::sub_template(program, sub) {
                    return Some((vec![], own(post)));
                }
            }
        }
        let ctx = self.scratch.context();
        for probe in known::PROBES {
            let mut argv = vec![program.to_string()];
            argv.extend(sub.map(String::from));
            argv.extend(probe.iter().map(|s| s.to_string()));
            if policy.evaluate(&ctx, &shell_words(&argv)).verdict != Verdict::Allow {
                continue;
            }
            if self.run(&argv).is_ok_and(|r| r.status == Some(0)) {
                return Some((vec![], own(probe.to_vec())));
            }
        }
        None
    }

    fn check_rule(
        &self,
        policy: &Policy,
        program: &str,
        sub: Option<&str>,
        rule: &ProgramRule,
        t: &mut Report,
    ) {
        let label = match sub {
            Some(sub) => format!("{program} {sub}"),
            None => program.to_string(),
        };
        let Some(allowed) = &rule.allow_options else {
            t.skipped.push(format!("{label}: no option allowlist"));
            return;
        };
        let Some((pre, post)) = self.placement(policy, program, sub) else {
            t.skipped.push(format!(
                "{label}: no operands found that the policy allows and the program runs with"
            ));
            return;
        };
        let ctx = self.scratch.context();
        let s = &self.scratch;
        // Whether the policy may write the workspace at all: if not (read-only), a write there
        // is an effect beyond the entry too.
        let ws_writable =
            check_file_access(policy, &ctx, "oracle-probe.txt", FileAccess::Write).is_allowed();
        for opt in allowed {
            t.per_program.entry(label.clone()).or_default().options += 1;
            for v in variants(rule, opt, s, self.full) {
                let mut argv: Vec<String> = vec![program.to_string()];
                argv.extend(sub.map(String::from));
                argv.extend(pre.iter().cloned());
                argv.extend(v);
                argv.extend(post.iter().cloned());
                let text = shell_words(&argv);
                let d = policy.evaluate(&ctx, &text);
                let entry = t.per_program.entry(label.clone()).or_default();
                if d.verdict != Verdict::Allow {
                    entry.refused += 1;
                    continue;
                }
                entry.runs += 1;
                match self.run(&argv) {
                    Ok(run) => {
                        for effect in run.effects {
                            if !beyond_entry(program, &effect, s, ws_writable) {
                                continue;
                            }
                            t.findings.push(Finding {
                                program: label.clone(),
                                option: opt.clone(),
                                command: text.clone(),
                                effect,
                                rule: rule.rule.clone(),
                            });
                        }
                        if run.timed_out {
                            t.skipped.push(format!("{text}: timed out"));
                        }
                    }
                    Err(e) => t.skipped.push(format!("{text}: {e}")),
                }
            }
        }
    }
}

/// Whether an effect of an allowed command is more than its rule says: any program run but
/// its documented helpers, any decoy touched, any network, any write outside the workspace
/// but the program's caches, and under a policy that cannot write the workspace, any write
/// there.
fn beyond_entry(program: &str, effect: &Effect, s: &Scratch, ws_writable: bool) -> bool {
    match effect {
        Effect::Runs(exe) => !known::helper_allowed(program, exe, s),
        Effect::Writes(call, p) => {
            let ws = s.ws.display().to_string();
            let inside = p == &ws || p.starts_with(&format!("{ws}/"));
            if inside {
                !ws_writable && !known::restore_allowed(program, call)
            } else {
                !known::write_allowed(program, p, s)
            }
        }
        Effect::TouchesDecoy(..) | Effect::Network(_) | Effect::DecoyProgramRan => true,
    }
}

/// The argv variants tried for one option of a rule.
pub fn variants(rule: &ProgramRule, opt: &str, s: &Scratch, full: bool) -> Vec<Vec<String>> {
    let kind = rule.option_kinds.get(opt).copied().unwrap_or(ArgKind::Text);
    let values: Vec<String> = match kind {
        ArgKind::PathRead | ArgKind::Pathspec => vec!["a.txt".into(), s.secret()],
        ArgKind::PathWrite => vec!["out.txt".into(), s.outside_new()],
        ArgKind::BackupSuffix => vec![".bak".into(), format!("{}/*", s.outside.display())],
        ArgKind::SedScript => vec!["p".into()],
        ArgKind::JqProgram => vec![".".into()],
        ArgKind::Variable => vec!["v".into()],
        // The decoy program as a value is both a path outside (a read of it is seen) and a
        // program (running it is seen): the fast slice tries only that one.
        _ if !full => vec![s.prog()],
        _ => vec!["1".into(), s.secret(), s.prog()],
    };
    let values: Vec<String> = if full {
        values
    } else {
        values.into_iter().take(1).collect()
    };
    let long = opt.starts_with("--") || rule.single_dash_long;
    let mut out = Vec::new();
    if rule.options_with_two_values.contains(opt) {
        for v in &values {
            out.push(vec![opt.to_string(), "n".into(), v.clone()]);
        }
    } else if rule.options_with_value.contains(opt) {
        for v in &values {
            out.push(vec![opt.to_string(), v.clone()]);
        }
    } else if rule.options_with_optional_value.contains(opt) {
        out.push(vec![opt.to_string()]);
        for v in &values {
            out.push(vec![if long {
                format!("{opt}={v}")
            } else {
                format!("{opt}{v}")
            }]);
        }
    } else {
        out.push(vec![opt.to_string()]);
    }
    out
}

/// `argv` as one bash command line, each word quoted when it needs it.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

fn quote(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@".contains(&b))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}
