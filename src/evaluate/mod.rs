//! Evaluation: IR + compiled policy + context → [`Decision`]; this file holds the entry point
//! and the walker's state (span mapping, reasons, payload nesting).
//!
//! Everything a command would execute or change is visited: every simple command at any
//! depth, every word's substitutions, every assignment, every redirection, and the payloads of
//! wrappers. Each finding that is not an allow becomes a [`Reason`]; the strictest verdict wins.
//!
//! The files, in the order a command meets them: `walk.rs` visits the IR, `cwd.rs` follows
//! the working directory through it, `redirects.rs`, `env.rs` and `path_rules.rs` check those
//! parts, and `dispatch.rs` picks the rule for each simple command (`args/` for a program's
//! options and operands, `kinds.rs` for typed operands, `sandbox.rs` for rules that need the
//! sandbox).

mod args;
mod bindings;
mod braces;
mod code_contexts;
mod context;
mod cwd;
mod dd;
mod decision;
mod dispatch;
mod env;
mod env_reads;
mod git_config;
mod git_repo;
mod glob_meet;
mod globs;
mod kinds;
mod patches;
mod path_rules;
mod paths;
mod redirects;
mod sandbox;
mod scripts;
mod test_expr;
mod trace;
mod walk;

use std::path::{Path, PathBuf};

use crate::codes::ReasonCode;
use crate::policy::{Policy, RuleRef, Setting, Verdict};
use crate::shell::{self, Span};

pub use context::Context;
pub use decision::{Decision, Reason};
pub use paths::{
    check_file_access, normalize, real_path, resolve, unresolved_access, FileAccess, Resolved,
};
pub use sandbox::SandboxState;
pub use scripts::{check_awk, check_sed};
pub use trace::{Part, Trace, TraceStep};
use walk::is_identifier;

impl Policy {
    /// Evaluate `command` in `ctx`. Never panics: an internal failure is a denial.
    pub fn evaluate(&self, ctx: &Context, command: &str) -> Decision {
        evaluate(self, ctx, command)
    }
}

/// Evaluate `command` under `policy` in `ctx`. Fail-closed: a parse error, a limit, or an
/// internal panic is a denial with a reason.
pub fn evaluate(policy: &Policy, ctx: &Context, command: &str) -> Decision {
    fail_closed(command.len(), || {
        shell::with_stack(|| {
            let mut ev = Eval::new(policy, ctx, command);
            ev.top(command);
            ev.finish()
        })
    })
}

/// The decision `decide` makes, or, if it panics, a denial (`internal-error`) spanning the
/// `len` bytes checked: every entry point that decides (a command, a file tool's access, a
/// guarded call of any tool) goes through here, so no failure inside a check is an allow.
pub(crate) fn fail_closed(len: usize, decide: impl FnOnce() -> Decision) -> Decision {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decide))
        .unwrap_or_else(|_| internal_error_over(Span::new(0, len)))
}

/// Evaluate `text`, already parsed as `script` (by [`shell::parse_with`] under `limits`),
/// with `limits` and `max_commands` in place of the policy's: a script checked as a whole
/// (`check --script`) is longer than one agent command, and parsing it once saves the second
/// parse, and borrowing the policy its copy. Nested payloads are parsed under `limits` too.
/// Fail-closed like [`evaluate`].
pub fn evaluate_parsed(
    policy: &Policy,
    ctx: &Context,
    text: &str,
    script: &shell::Script,
    limits: shell::Limits,
    max_commands: usize,
) -> Decision {
    fail_closed(text.len(), || {
        shell::with_stack(|| {
            let mut ev = Eval::new(policy, ctx, text);
            ev.limits = limits;
            ev.max_commands = max_commands;
            let saved = ev.code.enter_source(text);
            ev.check_parsed(text, script, "the command cannot be checked", true);
            ev.code.leave_source(saved);
            ev.finish()
        })
    })
}

/// The decision when evaluation itself fails (a panic): a denial of the whole command, with
/// its built-in rule like every refusal.
pub fn internal_error(command: &str) -> Decision {
    internal_error_over(Span::new(0, command.len()))
}

fn internal_error_over(span: Span) -> Decision {
    let rule = trace::builtin_rule(ReasonCode::InternalError);
    let mut trace = Trace::default();
    trace.record(Part::Syntax, span, &rule, None, "", Verdict::Deny);
    Decision {
        verdict: Verdict::Deny,
        reasons: vec![Reason {
            code: ReasonCode::InternalError.as_str(),
            verdict: Verdict::Deny,
            rule: Some(rule),
            message: "shellgate failed while checking this command; it is refused".into(),
            span,
        }],
        trace,
    }
}

/// Every reason code the evaluator can give, in the README table's order.
pub fn reason_codes() -> impl Iterator<Item = &'static str> {
    ReasonCode::ALL.iter().map(|c| c.as_str())
}

/// [`shell::Known::value_splits`] of a path's text, read from its bytes: every character it
/// looks for is ASCII, and an ASCII byte of a path is that character in its lossy text too
/// (bytes that are not UTF-8 become U+FFFD, never one of them).
fn path_splits(p: &Path) -> bool {
    p.as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'*' | b'?' | b'[' | b']'))
}

/// One level of the walk's recursion. The walk recurses once per nesting level of the IR
/// (bounded by the parse's depth limit and the policy's nesting limit), and every recursion
/// passes through here: a nested script ([`Eval::script`]), a parameter expansion or an
/// arithmetic expression. Each continues on a fresh stack segment when the thread runs low,
/// so no nesting the parser admits can overflow the stack, whatever thread evaluates.
fn nested<R>(f: impl FnOnce() -> R) -> R {
    shell::with_stack(f)
}

/// How spans of a re-parsed payload map back to the input.
#[derive(Debug, Clone, Copy)]
enum SpanMap {
    /// Add this offset.
    Offset(usize),
    /// Every span becomes this one (the payload is not a verbatim slice of the input).
    Collapse(Span),
}

struct Eval<'a> {
    policy: &'a Policy,
    ctx: &'a Context,
    reasons: Vec<Reason>,
    commands: usize,
    /// Working directories the command being checked may run in: the session's, or where the
    /// `cd`s before it may have moved the shell (see [`Eval::script`]).
    cwds: Vec<PathBuf>,
    /// Where the `cd` just checked goes, from each directory in `cwds` (set by the `cd`
    /// operand check when every target is one exact path).
    cd_targets: Option<Vec<PathBuf>>,
    map: SpanMap,
    nesting: usize,
    input_len: usize,
    /// Loop variables whose values are known (innermost last).
    bindings: Vec<bindings::Binding>,
    /// The standard input of the simple command being checked (a patch `git apply` reads).
    stdin: patches::Stdin,
    /// What [`code_contexts`] knows while it walks: the text being checked and the names
    /// proven to hold integers.
    code: code_contexts::State,
    /// What [`env_reads`] knows: the names the command assigns itself.
    env_reads: env_reads::State,
    /// The parse limits of every text checked (the policy's, unless [`evaluate_parsed`]).
    limits: shell::Limits,
    /// Most simple commands (the policy's, unless [`evaluate_parsed`]).
    max_commands: usize,
    /// Which rule decided each part, as it is decided.
    trace: Trace,
}

impl<'a> Eval<'a> {
    fn new(policy: &'a Policy, ctx: &'a Context, command: &str) -> Self {
        Eval {
            policy,
            ctx,
            reasons: Vec::new(),
            commands: 0,
            cwds: vec![ctx.cwd.clone()],
            cd_targets: None,
            map: SpanMap::Offset(0),
            nesting: 0,
            input_len: command.len(),
            bindings: Vec::new(),
            stdin: patches::Stdin::Unknown,
            code: code_contexts::State::new(command),
            env_reads: env_reads::State::default(),
            limits: policy.limits.parse,
            max_commands: policy.limits.max_commands,
            trace: Trace::default(),
        }
    }

    fn finish(mut self) -> Decision {
        self.reasons.sort_by_key(|r| (r.span.start, r.span.end));
        self.reasons
            .dedup_by(|a, b| a.code == b.code && a.span == b.span && a.message == b.message);
        let verdict = self
            .reasons
            .iter()
            .map(|r| r.verdict)
            .max()
            .unwrap_or(Verdict::Allow);
        self.trace.finish();
        Decision {
            verdict,
            reasons: self.reasons,
            trace: self.trace,
        }
    }

    /// What is known of the values of `$PWD` and `$HOME` where the command runs.
    fn known(&self) -> shell::Known {
        shell::Known {
            // `$(pwd -P)` is the directory with symlinks resolved: its text splits too.
            pwd_splits: self
                .cwds
                .iter()
                .any(|d| path_splits(d) || std::fs::canonicalize(d).is_ok_and(|r| path_splits(&r))),
            home_splits: path_splits(&self.ctx.home),
            output_dir_splits: self.ctx.output_dir.as_deref().map(path_splits),
        }
    }

    fn span(&self, s: Span) -> Span {
        let mapped = match self.map {
            SpanMap::Offset(o) => s.offset(o),
            SpanMap::Collapse(c) => c,
        };
        Span::new(
            mapped.start.min(self.input_len),
            mapped.end.min(self.input_len),
        )
    }

    fn reason(
        &mut self,
        code: ReasonCode,
        verdict: Verdict,
        rule: Option<&RuleRef>,
        message: String,
        span: Span,
    ) {
        self.reason_at(code, verdict, rule, message, span, None, "");
    }

    /// [`Eval::reason`], with the rule's `key` and the `entry` of it that decided (an option
    /// of `deny_options`), for the trace.
    #[allow(clippy::too_many_arguments)]
    fn reason_at(
        &mut self,
        code: ReasonCode,
        verdict: Verdict,
        rule: Option<&RuleRef>,
        message: String,
        span: Span,
        key: Option<&'static str>,
        entry: &str,
    ) {
        let span = self.span(span);
        let part = trace::Part::of(code);
        if verdict == Verdict::Allow {
            // A setting that allows (`[redirects] write = "allow"`) decided this part.
            if let Some(rule) = rule {
                self.trace.record(part, span, rule, key, entry, verdict);
            }
            return;
        }
        // Every refusal names a rule: the policy's, or else the built-in check that made it.
        let rule = match rule {
            Some(r) => r.clone(),
            None => trace::builtin_rule(code),
        };
        self.trace.record(part, span, &rule, key, entry, verdict);
        self.reasons.push(Reason {
            code: code.as_str(),
            verdict,
            rule: Some(rule),
            message,
            span,
        });
    }

    /// Record that `rule` (its `key`, its `entry`) allowed the part at `span` (a span of the
    /// text being checked, mapped to the input here).
    fn allowed_by(
        &mut self,
        part: trace::Part,
        span: Span,
        rule: &RuleRef,
        key: Option<&'static str>,
        entry: &str,
    ) {
        let span = self.span(span);
        self.trace
            .record(part, span, rule, key, entry, Verdict::Allow);
    }

    fn setting(&mut self, code: ReasonCode, setting: &Setting, message: String, span: Span) {
        self.reason(code, setting.verdict, Some(&setting.rule), message, span);
    }

    fn top(&mut self, command: &str) {
        self.parse_and_check(command, "the command cannot be checked", true);
    }

    /// Parse `text` under the policy's limits and check it; a parse error is a denial. At the
    /// top, nothing to run (an empty or blank command, or only comments) is refused too: the
    /// model sent no command, and should be told so rather than get an empty success.
    fn parse_and_check(&mut self, text: &str, what: &str, top: bool) {
        let saved = self.code.enter_source(text);
        self.parse_and_check_source(text, what, top);
        self.code.leave_source(saved);
    }

    fn parse_and_check_source(&mut self, text: &str, what: &str, top: bool) {
        match shell::parse_with(text, &self.limits) {
            Ok(script) => self.check_parsed(text, &script, what, top),
            Err(e) => self.reason(
                e.kind.reason_code(),
                Verdict::Deny,
                None,
                format!("{what}: {}", e.message),
                e.span,
            ),
        }
    }

    /// Check `text`, parsed as `script` (the second reading of `[shell] paranoid` first).
    fn check_parsed(&mut self, text: &str, script: &shell::Script, what: &str, top: bool) {
        if top && script.commands.is_empty() {
            self.reason(
                ReasonCode::EmptyCommand,
                Verdict::Deny,
                None,
                "the command is empty: there is nothing to run".into(),
                Span::new(0, text.len()),
            );
            return;
        }
        match self.policy.shell.paranoid.clone() {
            Some(rule) => match shell::cross_check(text, &self.limits, script) {
                Ok(()) => self.script(script),
                Err(e) => self.reason(
                    e.kind.reason_code(),
                    Verdict::Deny,
                    Some(&rule),
                    format!("{what}: {}", e.message),
                    e.span,
                ),
            },
            None => self.script(script),
        }
    }

    /// Parse and check a payload (`bash -c`, `eval`).
    fn payload(&mut self, text: &str, span: Span, offset: Option<usize>) {
        if self.nesting >= self.policy.limits.max_nesting {
            self.reason(
                ReasonCode::NestingLimit,
                Verdict::Deny,
                None,
                format!(
                    "commands nested more than {} levels deep cannot be checked",
                    self.policy.limits.max_nesting
                ),
                span,
            );
            return;
        }
        let saved = self.map;
        self.map = match (offset, saved) {
            (Some(o), SpanMap::Offset(base)) => SpanMap::Offset(base + o),
            _ => SpanMap::Collapse(self.span(span)),
        };
        self.nesting += 1;
        self.parse_and_check(text, "the nested command cannot be checked", false);
        self.nesting -= 1;
        self.map = saved;
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    /// A panic inside a check is a denial with a reason spanning what was checked, never
    /// an allow and never a crash; a check that returns is passed through as it is.
    #[test]
    fn a_check_that_panics_is_a_denial() {
        let d = fail_closed(7, || panic!("a bug in a check"));
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(d.reasons.len(), 1);
        assert_eq!(d.reasons[0].code, ReasonCode::InternalError.as_str());
        assert_eq!(d.reasons[0].verdict, Verdict::Deny);
        assert_eq!(d.reasons[0].span, Span::new(0, 7));
        let policy = Policy::from_toml("[programs.ls]\n", "p.toml").expect("loads");
        let allowed = evaluate(&policy, &Context::new("/w"), "ls");
        assert!(allowed.is_allowed(), "{allowed:?}");
        assert_eq!(fail_closed(2, || allowed.clone()), allowed);
    }

    #[test]
    fn path_splits_is_value_splits_of_the_lossy_text() {
        let mut samples: Vec<Vec<u8>> = (0u8..=255).map(|b| vec![b'/', b, b'x']).collect();
        samples.push("/w/ä ö".as_bytes().to_vec());
        samples.push(b"/w/\xff\xfe*".to_vec());
        samples.push(b"/w/\xc3".to_vec());
        samples.push("/w/\u{3000}".as_bytes().to_vec());
        for bytes in samples {
            let p = Path::new(OsStr::from_bytes(&bytes));
            assert_eq!(
                path_splits(p),
                shell::Known::value_splits(&p.to_string_lossy()),
                "{bytes:?}"
            );
        }
    }
}
