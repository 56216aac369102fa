//! The trace of a decision: which rule decided each part of a command, allows included.
//!
//! A [`Trace`] is recorded while the evaluator walks the command, so it must stay cheap on
//! the allow path: a step is a few integers (the part, its span, an index into a table of the
//! distinct rules the command met, an index into one shared text buffer for the entry, the
//! verdict). A rule is cloned into the table once per command, not once per step, and nothing
//! is formatted until a report asks ([`Trace::steps`]).

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::codes::ReasonCode;
use crate::policy::{RuleRef, Verdict};
use crate::shell::Span;

/// What part of a command a [`TraceStep`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Part {
    /// The program word, decided by its `[programs.NAME]` rule (or the policy's default).
    Program,
    /// A subcommand (`git status`), decided by its `[programs.NAME.subcommands.SUB]` rule.
    Subcommand,
    /// A program that runs another one (`timeout`, `xargs`, `bash -c`): `[wrappers]`.
    Wrapper,
    /// An option, decided by an entry of its program rule's option lists.
    Option,
    /// An operand that is not a path (text, a pattern, a script), typed by `operands`.
    Operand,
    /// A path read or written, decided by a `[paths]` pattern.
    Path,
    /// A redirection, decided by `[redirects]`.
    Redirect,
    /// An assignment to a variable, decided by `[env]`.
    Assignment,
    /// An expansion: a substitution, arithmetic, an indirect or environment read.
    Expansion,
    /// Something about a whole command: a function definition, `&`, a `cd`, a limit, the
    /// kernel sandbox.
    Command,
    /// The command's text could not be read (a parse error, an empty command, an internal
    /// failure).
    Syntax,
}

impl Part {
    /// The kebab-case name used in JSON (`program`, `option`, `path`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Program => "program",
            Part::Subcommand => "subcommand",
            Part::Wrapper => "wrapper",
            Part::Option => "option",
            Part::Operand => "operand",
            Part::Path => "path",
            Part::Redirect => "redirect",
            Part::Assignment => "assignment",
            Part::Expansion => "expansion",
            Part::Command => "command",
            Part::Syntax => "syntax",
        }
    }

    /// The part a finding with `code` is about.
    pub(crate) fn of(code: ReasonCode) -> Part {
        use ReasonCode as C;
        match code {
            C::ParseTooLarge
            | C::ParseControlCharacter
            | C::ParseSplitWord
            | C::ParseNestedBacktick
            | C::ParseSyntax
            | C::ParseMissing
            | C::ParseUnsupported
            | C::ParseTooDeep
            | C::ParseTooManyNodes
            | C::ParseDynamicName
            | C::ParseDisagreement
            | C::EmptyCommand
            | C::InternalError => Part::Syntax,
            C::ProgramNotAllowed
            | C::ProgramDenied
            | C::ProgramAsk
            | C::ProgramPath
            | C::DynamicProgram
            | C::SessionState => Part::Program,
            C::WrapperDenied | C::WrapperUnverifiable | C::WrapperAsk => Part::Wrapper,
            C::SubcommandNotAllowed => Part::Subcommand,
            C::OptionDenied
            | C::OptionNotAllowed
            | C::OptionAsk
            | C::OptionRequired
            | C::OptionValueDenied
            | C::OptionRunsProgram => Part::Option,
            C::ArgumentDenied
            | C::ArgumentAsk
            | C::TooManyOperands
            | C::MissingOperand
            | C::DynamicArgument
            | C::WordSplit
            | C::VariableName
            | C::SedScript
            | C::AwkProgram
            | C::JqProgram
            | C::BackupSuffix
            | C::DeviceOperand
            | C::DdOperand => Part::Operand,
            C::PathReadOutside
            | C::PathWriteOutside
            | C::PathReadDenied
            | C::PathWriteDenied
            | C::PathUnresolved
            | C::PathWriteProtected
            | C::PathList
            | C::ModulePath
            | C::SymlinkOutside
            | C::PatchUnchecked => Part::Path,
            C::RedirectRead
            | C::RedirectWrite
            | C::RedirectUnknown
            | C::FdDuplication
            | C::HereDocument => Part::Redirect,
            C::EnvDenied | C::EnvAsk | C::EnvNotAllowed => Part::Assignment,
            C::IndirectExpansion | C::Substitution | C::CodeFromData | C::EnvRead => {
                Part::Expansion
            }
            C::FunctionDefinition
            | C::Background
            | C::CdUnresolved
            | C::CdInLoop
            | C::CommandLimit
            | C::NestingLimit
            | C::SandboxRequired
            | C::SandboxUnavailable
            | C::GitRepositoryUntrusted
            | C::GitConfigRunsProgram => Part::Command,
        }
    }
}

/// One step of a [`Trace`]: a part of the command and the rule that decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceStep<'a> {
    /// What the part is.
    pub part: Part,
    /// Its bytes in the command.
    pub span: Span,
    /// The rule that decided it, with its file:line:col (a `builtin:<code>` rule when no rule
    /// of the policy did).
    pub rule: &'a RuleRef,
    /// The key of the rule that applied, when one list or setting of it did
    /// (`allow_options`, `operands`, `read`, `write`, `allow`), else `None` (the rule itself).
    pub key: Option<&'static str>,
    /// The entry of that list that matched (the option `-l`, the pattern `{workspace}/**`,
    /// the operand kind `pattern`), if any.
    pub entry: Option<&'a str>,
    /// What this step alone decides.
    pub verdict: Verdict,
}

/// A step as stored: indices into the trace's tables, no text of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    part: Part,
    span: Span,
    rule: u32,
    key: Option<&'static str>,
    /// `text[entry.0..entry.1]`; empty: no entry.
    entry: (u32, u32),
    verdict: Verdict,
}

/// Which rule decided each part of a command, in source order: every program, subcommand,
/// wrapper, option, operand, path, redirection and assignment it contains, allowed or not
/// (the findings that are not allows are also the decision's [`Reason`](super::Reason)s).
///
/// Read it with [`Trace::steps`]. Its JSON form is an array of
/// `{"part", "span", "rule", "key", "entry", "verdict"}`, with `rule` as
/// `name (file:line:col)` like a reason's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// The distinct rules the steps point at.
    rules: Vec<RuleRef>,
    /// The entries' text, one after the other.
    text: String,
    steps: Vec<Step>,
}

/// How many of the latest steps a new step is compared with before it is recorded again (the
/// same path checked from every working directory, a word checked by two kinds).
const DEDUP_WINDOW: usize = 8;

impl Trace {
    /// The steps, in source order (by span; steps of one word in the order they were decided).
    pub fn steps(&self) -> impl ExactSizeIterator<Item = TraceStep<'_>> + '_ {
        self.steps.iter().map(move |s| self.view(s))
    }

    /// How many steps there are.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The steps about bytes `start..end` of the command, with spans made relative to `start`
    /// (a trace of one statement of a script checked whole).
    pub fn slice(&self, start: usize, end: usize) -> Trace {
        let mut out = Trace::default();
        for s in self.steps() {
            if s.span.start >= start && s.span.start < end.max(start + 1) {
                let span = Span::new(s.span.start - start, s.span.end.saturating_sub(start));
                out.record(
                    s.part,
                    span,
                    s.rule,
                    s.key,
                    s.entry.unwrap_or(""),
                    s.verdict,
                );
            }
        }
        out
    }

    fn view<'t>(&'t self, s: &Step) -> TraceStep<'t> {
        let (a, b) = (s.entry.0 as usize, s.entry.1 as usize);
        TraceStep {
            part: s.part,
            span: s.span,
            rule: &self.rules[s.rule as usize],
            key: s.key,
            entry: (a < b).then(|| &self.text[a..b]),
            verdict: s.verdict,
        }
    }

    /// Record that `rule` decided `span` (already mapped to the input) as `verdict`.
    pub(super) fn record(
        &mut self,
        part: Part,
        span: Span,
        rule: &RuleRef,
        key: Option<&'static str>,
        entry: &str,
        verdict: Verdict,
    ) {
        let rule = match self.rules.iter().position(|r| r == rule) {
            Some(i) => i,
            None => {
                self.rules.push(rule.clone());
                self.rules.len() - 1
            }
        } as u32;
        // Most entries repeat (the same pattern for every path): point at the last copy.
        let entry = if entry.is_empty() {
            (0, 0)
        } else {
            let found = self.steps.iter().rev().take(DEDUP_WINDOW).find_map(|s| {
                let (a, b) = (s.entry.0 as usize, s.entry.1 as usize);
                (a < b && &self.text[a..b] == entry).then_some(s.entry)
            });
            found.unwrap_or_else(|| {
                let start = self.text.len() as u32;
                self.text.push_str(entry);
                (start, self.text.len() as u32)
            })
        };
        let step = Step {
            part,
            span,
            rule,
            key,
            entry,
            verdict,
        };
        if !self
            .steps
            .iter()
            .rev()
            .take(DEDUP_WINDOW)
            .any(|s| *s == step)
        {
            self.steps.push(step);
        }
    }

    /// Put the steps in source order (stable: the steps of one word keep their order).
    pub(super) fn finish(&mut self) {
        self.steps.sort_by_key(|s| (s.span.start, s.span.end));
    }

    /// How many steps are recorded (a mark to undo to).
    pub(super) fn mark(&self) -> usize {
        self.steps.len()
    }

    /// The steps after `mark`, taken out.
    pub(super) fn split_off(&mut self, mark: usize) -> Vec<Step> {
        self.steps.split_off(mark.min(self.steps.len()))
    }

    /// Steps taken out by [`Trace::split_off`], put back.
    pub(super) fn extend(&mut self, steps: Vec<Step>) {
        self.steps.extend(steps);
    }
}

impl Serialize for TraceStep<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("part", &self.part)?;
        m.serialize_entry("span", &[self.span.start, self.span.end])?;
        m.serialize_entry("rule", &self.rule.to_string())?;
        m.serialize_entry("key", &self.key)?;
        m.serialize_entry("entry", &self.entry)?;
        m.serialize_entry("verdict", &self.verdict)?;
        m.end()
    }
}

impl Serialize for Trace {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for step in self.steps() {
            seq.serialize_element(&step)?;
        }
        seq.end()
    }
}

/// The rule of a finding no rule of the policy decided: the built-in check itself, named
/// `builtin:<code>` (`builtin:wrapper-denied`, `builtin:code-from-data`) at `<built-in>`.
pub(crate) fn builtin_rule(code: ReasonCode) -> RuleRef {
    RuleRef::builtin_check(code.as_str())
}

/// The kebab-case name of an operand kind, as the policy spells it.
fn kind_name(kind: crate::policy::ArgKind) -> &'static str {
    kind.name()
}

impl super::Eval<'_> {
    /// A program (or subcommand) rule whose verdict is allow applies to `span`.
    pub(super) fn program_allowed(&mut self, rule: &crate::policy::ProgramRule, span: Span) {
        let part = if rule.name.contains(' ') {
            Part::Subcommand
        } else {
            Part::Program
        };
        self.allowed_by(part, span, &rule.rule, None, "");
    }

    /// Option `name` passed `rule`: by its `key` list (`allow_options`), or, with no key,
    /// because the rule has no option allowlist and does not refuse it.
    pub(super) fn option_allowed(
        &mut self,
        rule: &crate::policy::ProgramRule,
        key: Option<&'static str>,
        name: &str,
        span: Span,
    ) {
        self.allowed_by(Part::Option, span, &rule.rule, key, name);
    }

    /// An operand of `kind` that is not a path (paths are traced by the `[paths]` pattern
    /// that allows them) passed `rule`'s `operands`.
    pub(super) fn operand_allowed(
        &mut self,
        rule: &crate::policy::ProgramRule,
        kind: crate::policy::ArgKind,
        span: Span,
    ) {
        use crate::policy::ArgKind as K;
        if !matches!(kind, K::PathRead | K::PathWrite) {
            self.allowed_by(
                Part::Operand,
                span,
                &rule.rule,
                Some("operands"),
                kind_name(kind),
            );
        }
    }
}
