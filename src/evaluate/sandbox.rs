//! Rules that apply only under the kernel sandbox: `[sandbox.programs]` and
//! `[sandbox] workspace_binaries`.
//!
//! Running code the agent wrote (`python3 x.py`, `./a.out`, `make`) cannot be checked from the
//! command text; the sandbox bounds what it does instead. So these rules are tried only when
//! the ordinary rules do not allow a command, and a command they allow runs only when the
//! context says the sandbox enforces: otherwise it is refused with `sandbox-required` (the
//! policy or the executor does not sandbox) or `sandbox-unavailable` (the policy asks for the
//! sandbox but the kernel cannot give it).

use crate::codes::ReasonCode;
use crate::policy::{ProgramRule, Verdict};
use crate::shell::{Span, Word};

use super::{paths, Eval};

/// Whether the commands of a context run under the kernel sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxState {
    /// Not sandboxed (a hook, a CI check, an executor without the sandbox, `mode = "off"`).
    #[default]
    Off,
    /// Landlock and the policy's limits confine every process of the session.
    Enforced,
    /// The policy asks for the sandbox but the kernel lacks Landlock (or a needed feature).
    Unavailable,
}

impl<'a> Eval<'a> {
    /// Decide a command for which a sandbox-only rule exists: allowed by the ordinary rules,
    /// else by the sandbox-only rule (under the sandbox only), else refused with the ordinary
    /// rules' reasons. `false` when no sandbox-only rule exists (the caller decides).
    pub(super) fn sandbox_code(&mut self, name: &str, words: &[Word], span: Span) -> bool {
        let Some((rule, label)) = self.sandbox_rule(name, words) else {
            return false;
        };
        let key = if rule.name == "workspace binary" {
            "workspace_binaries"
        } else {
            name
        };
        // The words the rule checks: for a script runner, up to the script itself (what
        // follows is the script's business; its expansions are still checked as words).
        let checked = if self.policy.sandbox.script_arguments.contains(key) {
            &words[..script_end(rule, words)]
        } else {
            words
        };
        // The ordinary rules first: what they allow needs no sandbox. Each rule is checked
        // once (a nested `bash -c` payload is not checked twice per level): its result is
        // kept or set aside.
        let before = self.snapshot();
        self.program_named(name, words, span);
        if self.allowed_since(&before) {
            return true;
        }
        let ordinary = self.restore(before.clone());
        // Then the sandbox-only rule: if it does not allow the command either, the ordinary
        // rules' result is the one to keep.
        self.args(rule, &checked[1..], words[0].span, span);
        if !self.allowed_since(&before) {
            // Both refuse: the sandbox rule's reasons say what it would allow (a missing
            // option, a path), so they are kept too; "not an allowed program" is dropped, as
            // the program is allowed, under the sandbox.
            // After this, `self.reasons[start..]` are the ordinary rules' reasons and
            // `sandboxed.kept` the sandbox-only rule's.
            let sandboxed = self.restore(ordinary);
            let start = before.reasons.min(self.reasons.len());
            let ordinary = &self.reasons[start..];
            // The ordinary rules refuse only for want of the sandbox (`python3 -m pytest`:
            // pytest runs workspace code): that is the whole reason, and the script-runner
            // rule's view of `-m` is beside the point.
            let only_sandbox = !ordinary.is_empty()
                && ordinary.iter().all(|r| {
                    r.code == ReasonCode::SandboxRequired.as_str()
                        || r.code == ReasonCode::SandboxUnavailable.as_str()
                });
            if only_sandbox {
                return true;
            }
            // "Not an allowed program" about this very program is dropped, as the program is
            // allowed, under the sandbox; the ordinary rules' other reasons stay (`sh -c
            // 'printenv'` is still an environment dump).
            let not_listed = ReasonCode::ProgramNotAllowed.as_str();
            let this = words[0].span;
            let rest: Vec<_> = self
                .reasons
                .split_off(start)
                .into_iter()
                .filter(|r| !(r.code == not_listed && r.span == this))
                .collect();
            self.reasons.extend(rest);
            self.reasons.extend(sandboxed.kept);
            self.trace.extend(sandboxed.kept_steps);
            return true;
        }
        let (code, why) = match self.ctx.sandbox {
            SandboxState::Enforced => return true,
            SandboxState::Off => (
                ReasonCode::SandboxRequired,
                "it runs code that cannot be checked from the command, which is allowed only \
                 inside the kernel sandbox, and this session is not sandboxed",
            ),
            SandboxState::Unavailable => (
                ReasonCode::SandboxUnavailable,
                "it runs code that cannot be checked from the command, which is allowed only \
                 inside the kernel sandbox, and this kernel cannot provide it (Landlock is \
                 missing or too old)",
            ),
        };
        let rule_ref = rule.rule.clone();
        self.reason(
            code,
            Verdict::Deny,
            Some(&rule_ref),
            format!("`{label}` is refused: {why}"),
            words[0].span,
        );
        true
    }

    /// A rule marked `runs_workspace_code` (`cargo build`, `npm test`, `pytest`): what it runs
    /// is defined by files in the workspace (build scripts, lifecycle scripts, test
    /// configurations), which the command text does not show. It runs only under the sandbox.
    pub(super) fn workspace_code(&mut self, rule: &ProgramRule, span: Span) {
        let why = match self.ctx.sandbox {
            SandboxState::Enforced => return,
            SandboxState::Off => (ReasonCode::SandboxRequired, "this session is not sandboxed"),
            SandboxState::Unavailable => (
                ReasonCode::SandboxUnavailable,
                "this kernel cannot provide the sandbox (Landlock is missing or too old)",
            ),
        };
        self.reason(
            why.0,
            Verdict::Deny,
            Some(&rule.rule),
            format!(
                "`{}` runs code defined by files in the workspace (build scripts, package \
                 scripts, test configurations), which cannot be checked from the command; it is \
                 allowed only inside the kernel sandbox, and {}",
                rule.name, why.1
            ),
            span,
        );
    }

    /// The sandbox-only rule for this command: `[sandbox.programs.NAME]`, or
    /// `workspace_binaries` for a program given by a path inside a workspace root.
    fn sandbox_rule(&self, name: &str, words: &[Word]) -> Option<(&'a ProgramRule, String)> {
        let policy: &'a crate::policy::Policy = self.policy;
        let sb = &policy.sandbox;
        if let Some(rule) = sb.programs.get(name) {
            return Some((rule, name.to_string()));
        }
        let rule = sb.workspace_binaries.as_ref()?;
        if !name.contains('/') {
            return None;
        }
        let first = words.first()?;
        let inside = !self.cwds.is_empty()
            && self
                .cwds
                .iter()
                .all(|cwd| match paths::resolve(first, self.ctx, cwd) {
                    paths::Resolved::Exact(p) => self
                        .ctx
                        .workspace
                        .iter()
                        .any(|root| p.starts_with(root) && p != *root),
                    _ => false,
                });
        inside.then(|| (rule, name.to_string()))
    }

    /// The state a check changes, to undo it.
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            reasons: self.reasons.len(),
            cd_targets: self.cd_targets.clone(),
            commands: self.commands,
            kept: Vec::new(),
            steps: self.trace.mark(),
            kept_steps: Vec::new(),
        }
    }

    /// Whether nothing was found against the command since `s`.
    fn allowed_since(&self, s: &Snapshot) -> bool {
        self.reasons[s.reasons.min(self.reasons.len())..]
            .iter()
            .all(|r| r.verdict == Verdict::Allow)
    }

    /// Go back to `s` (or, for a snapshot this returned, forward to it again); returns what
    /// was undone, as a snapshot that restores it.
    fn restore(&mut self, s: Snapshot) -> Snapshot {
        let start = s.reasons.min(self.reasons.len());
        let undone = Snapshot {
            reasons: start,
            cd_targets: std::mem::replace(&mut self.cd_targets, s.cd_targets),
            commands: std::mem::replace(&mut self.commands, s.commands),
            kept: self.reasons.split_off(start),
            steps: s.steps.min(self.trace.mark()),
            kept_steps: self.trace.split_off(s.steps),
        };
        self.reasons.extend(s.kept);
        self.trace.extend(s.kept_steps);
        undone
    }
}

/// What [`Eval::restore`] needs: how many reasons there were, the bookkeeping, and the reasons
/// to put back.
#[derive(Clone)]
struct Snapshot {
    reasons: usize,
    cd_targets: Option<Vec<std::path::PathBuf>>,
    commands: usize,
    kept: Vec<super::Reason>,
    /// The same for the trace: how many steps there were, and the steps to put back.
    steps: usize,
    kept_steps: Vec<super::trace::Step>,
}

/// The end of a script runner's own words: just past its first operand (skipping option
/// values), or all of them.
fn script_end(rule: &ProgramRule, words: &[Word]) -> usize {
    let mut i = 1;
    while i < words.len() {
        let Some(v) = words[i].static_value() else {
            return i + 1;
        };
        if v == "--" {
            return (i + 2).min(words.len());
        }
        if v.starts_with('-') && v != "-" {
            i += if rule.options_with_value.contains(&v) {
                2
            } else {
                1
            };
            continue;
        }
        return i + 1;
    }
    words.len()
}
