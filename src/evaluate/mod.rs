//! Evaluation: IR + compiled policy + context → [`Decision`].
//!
//! Everything a command would execute or change is visited: every simple command at any
//! depth, every word's substitutions, every assignment, every redirection, and the payloads of
//! wrappers. Each finding that is not an allow becomes a [`Reason`]; the strictest verdict wins.

mod args;
mod bindings;
mod braces;
mod kinds;
mod paths;
mod sandbox;
mod scripts;
mod test_expr;
pub mod wrappers;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::policy::{Policy, RuleRef, Setting, Verdict};
use crate::shell::{
    self, Arithmetic, Assignment, Command, Join, Param, Redirect, RedirectOp, Script,
    SimpleCommand, Span, Word, WordPart,
};

pub use paths::{check_file_access, normalize, real_path, resolve, FileAccess, Resolved};
pub use sandbox::SandboxState;
pub use scripts::{check_awk, check_sed};

/// Allowed program names listed in a refusal of an unknown program before "and N more".
const MAX_ALLOWED_LISTED: usize = 150;

/// Where a command runs: its working directory, the workspace roots, and the home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The session's current working directory (absolute).
    pub cwd: PathBuf,
    /// The workspace roots that `{workspace}` in path rules stands for.
    pub workspace: Vec<PathBuf>,
    /// The home directory that `~`, `$HOME` and `{home}` stand for.
    pub home: PathBuf,
    /// Whether what runs is confined by the kernel sandbox (rules of `[sandbox.programs]`
    /// apply only when it is).
    pub sandbox: SandboxState,
    /// The `$OUTPUT_DIR` of a code execution call, which `{output_dir}` in path rules and
    /// `$OUTPUT_DIR` in commands stand for; `None` elsewhere (then neither is known).
    pub output_dir: Option<PathBuf>,
}

impl Context {
    /// A context whose workspace and working directory are `root` (made absolute and
    /// normalised lexically), with `HOME` from the environment (or `/root`).
    pub fn new(root: impl AsRef<Path>) -> Context {
        let root = absolute(root.as_ref());
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root"));
        Context {
            cwd: root.clone(),
            workspace: vec![root],
            home: absolute(&home),
            sandbox: SandboxState::Off,
            output_dir: None,
        }
    }

    /// The context policy examples are checked in: workspace `/workspace`, home `/home/user`.
    pub fn example() -> Context {
        Context {
            cwd: PathBuf::from("/workspace"),
            workspace: vec![PathBuf::from("/workspace")],
            home: PathBuf::from("/home/user"),
            sandbox: SandboxState::Off,
            output_dir: None,
        }
    }

    /// The same context with another working directory (relative ones resolve against the
    /// current one).
    pub fn with_cwd(mut self, cwd: impl AsRef<Path>) -> Context {
        self.cwd = normalize(&self.cwd.join(cwd));
        self
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize(p)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        normalize(&cwd.join(p))
    }
}

/// One finding: why (part of) a command is not simply allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Stable kebab-case code, such as `program-not-allowed` (see the README for the list).
    pub code: &'static str,
    /// What this finding alone decides.
    pub verdict: Verdict,
    /// The policy rule responsible, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    /// A short explanation the model can act on.
    pub message: String,
    /// The bytes of the command it is about.
    #[serde(serialize_with = "span_pair")]
    pub span: Span,
}

fn span_pair<S: serde::Serializer>(span: &Span, s: S) -> Result<S::Ok, S::Error> {
    [span.start, span.end].serialize(s)
}

/// The outcome of evaluating one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The strictest verdict over everything the command contains.
    pub verdict: Verdict,
    /// Every finding that is not an allow, in source order.
    pub reasons: Vec<Reason>,
}

impl Decision {
    /// Whether the command may run without asking.
    pub fn is_allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

impl Policy {
    /// Evaluate `command` in `ctx`. Never panics: an internal failure is a denial.
    pub fn evaluate(&self, ctx: &Context, command: &str) -> Decision {
        evaluate(self, ctx, command)
    }
}

/// Evaluate `command` under `policy` in `ctx`. Fail-closed: a parse error, a limit, or an
/// internal panic is a denial with a reason.
pub fn evaluate(policy: &Policy, ctx: &Context, command: &str) -> Decision {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        shell::with_stack(|| {
            let mut ev = Eval::new(policy, ctx, command);
            ev.top(command);
            ev.finish()
        })
    }));
    run.unwrap_or_else(|_| Decision {
        verdict: Verdict::Deny,
        reasons: vec![Reason {
            code: "internal-error",
            verdict: Verdict::Deny,
            rule: None,
            message: "shellgate failed while checking this command; it is refused".into(),
            span: Span::new(0, command.len()),
        }],
    })
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
        Decision {
            verdict,
            reasons: self.reasons,
        }
    }

    /// What is known of the values of `$PWD` and `$HOME` where the command runs.
    fn known(&self) -> shell::Known {
        let splits = |p: &Path| shell::Known::value_splits(&p.to_string_lossy());
        shell::Known {
            pwd_splits: self.cwds.iter().any(|d| splits(d)),
            home_splits: splits(&self.ctx.home),
            output_dir_splits: self.ctx.output_dir.as_deref().map(splits),
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
        code: &'static str,
        verdict: Verdict,
        rule: Option<&RuleRef>,
        message: String,
        span: Span,
    ) {
        if verdict == Verdict::Allow {
            return;
        }
        let span = self.span(span);
        self.reasons.push(Reason {
            code,
            verdict,
            rule: rule.cloned(),
            message,
            span,
        });
    }

    fn setting(&mut self, code: &'static str, setting: &Setting, message: String, span: Span) {
        self.reason(code, setting.verdict, Some(&setting.rule), message, span);
    }

    fn top(&mut self, command: &str) {
        self.parse_and_check(command, "the command cannot be checked", true);
    }

    /// Parse `text` under the policy's limits and check it; a parse error is a denial. At the
    /// top, nothing to run (an empty or blank command, or only comments) is refused too: the
    /// model sent no command, and should be told so rather than get an empty success.
    fn parse_and_check(&mut self, text: &str, what: &str, top: bool) {
        let limits = shell::Limits {
            max_bytes: self.policy.limits.max_bytes,
            max_depth: self.policy.limits.max_depth,
            ..shell::Limits::default()
        };
        match shell::parse_with(text, &limits) {
            Ok(script) if top && script.commands.is_empty() => self.reason(
                "empty-command",
                Verdict::Deny,
                None,
                "the command is empty: there is nothing to run".into(),
                Span::new(0, text.len()),
            ),
            Ok(script) => self.script(&script),
            Err(e) => self.reason(
                e.kind.code(),
                Verdict::Deny,
                None,
                format!("{what}: {}", e.message),
                e.span,
            ),
        }
    }

    /// Parse and check a payload (`bash -c`, `eval`).
    fn payload(&mut self, text: &str, span: Span, offset: Option<usize>) {
        if self.nesting >= self.policy.limits.max_nesting {
            self.reason(
                "nesting-limit",
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

    /// Checks a script's commands, each against the directories it may run in.
    ///
    /// The directories follow the script's and-or lists: `ok` and `fail` are where the list
    /// so far leaves the shell when its status is success or failure. A command after `&&`
    /// runs from `ok`, after `||` from `fail`, after `;` or a newline from either. A plain
    /// `cd` (in this shell: not in a pipeline, the background or a coprocess) moves `ok` to
    /// its targets and leaves `fail` where it was (`!` swaps them); any other command leaves
    /// both at every directory it may have moved to (its own `cd`s, union semantics). So after
    /// `cd src &&` only `src` is possible, and after `cd src;` both directories are.
    ///
    /// The walk recurses once per nesting level of the IR (bounded by the parse's depth
    /// limit and the policy's nesting limit); every recursion passes through `script`,
    /// `param` or `arithmetic`, and each of those runs on a stack with room for it.
    fn script(&mut self, script: &Script) {
        shell::with_stack(|| {
            let commands = &script.commands;
            // One and-or element (a command, or one pipeline): where it leaves the shell is
            // `cwds` as its checks leave it, the union of ok and fail. No bookkeeping needed.
            if commands.iter().skip(1).all(|c| c.join() == Join::Pipe) {
                let outer_cd = self.cd_targets.take();
                for cmd in commands {
                    self.command(cmd);
                }
                self.cd_targets = outer_cd;
                return;
            }
            let outer_cd = self.cd_targets.take();
            let entry = self.cwds.clone();
            let (mut ok, mut fail) = (entry.clone(), entry.clone());
            let mut i = 0;
            while let Some(first) = commands.get(i) {
                // One element of the and-or list: a command and the later stages of its pipeline.
                let end = (i + 1..commands.len())
                    .find(|&j| commands.get(j).map(Command::join) != Some(Join::Pipe))
                    .unwrap_or(commands.len());
                let join = first.join();
                let mut cur = match join {
                    Join::And => ok.clone(),
                    Join::Or => fail.clone(),
                    Join::Seq | Join::Pipe => union(&ok, &fail),
                };
                if cur.is_empty() {
                    cur = entry.clone();
                }
                self.cwds = cur.clone();
                self.cd_targets = None;
                for cmd in commands.get(i..end).unwrap_or_default() {
                    self.command(cmd);
                }
                let after = self.cwds.clone();
                let targets = self.cd_targets.take();
                let (e_ok, e_fail) = match (end - i == 1, plain_cd(first), targets) {
                    (true, Some(false), Some(t)) => (t, cur),
                    (true, Some(true), Some(t)) => (cur, t),
                    _ => (after.clone(), after),
                };
                (ok, fail) = match join {
                    Join::And => (e_ok, union(&fail, &e_fail)),
                    Join::Or => (union(&ok, &e_ok), e_fail),
                    Join::Seq | Join::Pipe => (e_ok, e_fail),
                };
                i = end;
            }
            self.cwds = union(&ok, &fail);
            self.cd_targets = outer_cd;
        })
    }

    fn command(&mut self, cmd: &Command) {
        match cmd {
            Command::Simple(c) => self.simple(c),
            Command::Compound(c) => {
                for w in &c.words {
                    self.word(w);
                }
                match c.kind {
                    // The list of `for`/`select` is globbed like arguments are.
                    shell::CompoundKind::For | shell::CompoundKind::Select => {
                        c.words.iter().for_each(|w| self.glob_reads(w));
                    }
                    // `[[ -f PATH ]]` probes files: operands that name a place outside the
                    // working directory are checked as reads (the IR keeps no operators).
                    shell::CompoundKind::Test => self.probe_paths(&c.words),
                    _ => {}
                }
                for a in &c.arithmetic {
                    self.arithmetic(a);
                }
                for a in &c.assignments {
                    self.assignment(a);
                }
                for r in &c.redirects {
                    self.redirect(r);
                }
                self.keywords(c.background, &c.keywords, c.span);
                let binding = bindings::of_for_loop(c);
                let bound = binding.is_some();
                self.bindings.extend(binding);
                self.compound_body(c);
                if bound {
                    self.bindings.pop();
                }
            }
            Command::Function(f) => {
                let s = self.policy.shell.functions.clone();
                self.setting(
                    "function-definition",
                    &s,
                    format!(
                        "defines the function `{}`, which changes what later commands mean",
                        f.name
                    ),
                    f.name_span,
                );
                for r in &f.redirects {
                    self.redirect(r);
                }
                self.script(&f.body);
            }
        }
    }

    /// The arguments of `test` / `[` with every run-time word that is an operand by position
    /// (see [`test_expr`]) replaced by a plain word, so the option checks see it as the
    /// string it is; the rest unchanged.
    fn test_operands(&self, name: &str, args: &[Word]) -> Vec<Word> {
        let expr = match (name, args.split_last()) {
            ("[", Some((last, rest))) if last.static_value().as_deref() == Some("]") => rest,
            _ => args,
        };
        let mut out = args.to_vec();
        if let Some(positions) = test_expr::operand_positions(expr, &self.known()) {
            for i in positions {
                if out[i].static_value().is_none() {
                    out[i] = Word {
                        span: out[i].span,
                        parts: vec![WordPart::Literal("operand".into())],
                    };
                }
            }
        }
        out
    }

    /// `[[ -f PATH ]]`, `[ -f PATH ]` and `test -f PATH` probe files: operands that name a
    /// place outside the working directory are checked as reads (the IR keeps no operators).
    fn probe_paths(&mut self, words: &[Word]) {
        for w in words {
            let looks_like_path = matches!(w.parts.first(), Some(WordPart::Tilde(_)))
                || w.static_value().is_some_and(|v| {
                    v.starts_with('/') || v.starts_with("..") || v.contains("/..")
                });
            if looks_like_path {
                self.path(w, false);
            }
        }
    }

    /// The body of a compound command, with what its `cd`s do to the directories later
    /// commands may run in.
    ///
    /// A subshell (or a command run in the background or as a coprocess) cannot move the
    /// shell it came from: the directories are restored after it. A loop body runs any number
    /// of times, and a `cd` in it goes further on each pass (`for i in 1 2; do cd ..; done`
    /// climbs out of the workspace while one pass stays inside): a loop body that changes the
    /// directories is refused.
    fn compound_body(&mut self, c: &shell::Compound) {
        let before = self.cwds.clone();
        self.script(&c.body);
        let subshell = c.kind == shell::CompoundKind::Subshell
            || c.background
            || c.keywords.contains(&shell::Keyword::Coproc);
        if subshell {
            self.cwds = before;
            return;
        }
        let looping = matches!(
            c.kind,
            shell::CompoundKind::For
                | shell::CompoundKind::ArithFor
                | shell::CompoundKind::Select
                | shell::CompoundKind::While
                | shell::CompoundKind::Until
        );
        let moved =
            self.cwds.len() != before.len() || self.cwds.iter().any(|d| !before.contains(d));
        if looping && moved {
            self.reason(
                "cd-in-loop",
                Verdict::Deny,
                None,
                "a `cd` in a loop goes further on every pass, so the directory later commands run in depends on how often it runs; put the loop body in a subshell `( ... )`".to_string(),
                c.span,
            );
        }
    }

    /// `&` and `coproc` leave a job running in the session; `coproc` also assigns `COPROC`
    /// (a `coproc NAME` is recorded by the lowering as an assignment of NAME).
    fn keywords(&mut self, background: bool, keywords: &[shell::Keyword], span: Span) {
        let coproc = keywords.contains(&shell::Keyword::Coproc);
        if background || coproc {
            let s = self.policy.shell.background.clone();
            self.setting(
                "background",
                &s,
                "runs a command in the background".into(),
                span,
            );
        }
        if coproc {
            self.env_name("COPROC", span);
        }
    }

    fn count_command(&mut self, span: Span) -> bool {
        self.commands += 1;
        if self.commands == self.policy.limits.max_commands + 1 {
            self.reason(
                "command-limit",
                Verdict::Deny,
                None,
                format!(
                    "more than {} commands in one input",
                    self.policy.limits.max_commands
                ),
                span,
            );
        }
        self.commands <= self.policy.limits.max_commands
    }

    fn simple(&mut self, c: &SimpleCommand) {
        if !self.count_command(c.span) {
            return;
        }
        if let Some(variants) = bindings::variants(c, &self.bindings) {
            // Checked once per value of the loop variables it uses; a `cd` among them goes
            // to every variant's target.
            let mut targets: Option<Vec<PathBuf>> = Some(Vec::new());
            for v in &variants {
                self.cd_targets = None;
                self.simple_checks(v);
                targets = match (targets, self.cd_targets.take()) {
                    (Some(all), Some(t)) => Some(union(&all, &t)),
                    _ => None,
                };
            }
            self.cd_targets = targets.filter(|t| !t.is_empty());
            return;
        }
        self.simple_checks(c);
    }

    /// The checks of one simple command (after loop variables were put in).
    fn simple_checks(&mut self, c: &SimpleCommand) {
        for a in &c.assignments {
            self.assignment(a);
        }
        for r in &c.redirects {
            self.redirect(r);
        }
        for w in &c.words {
            self.word(w);
        }
        // Expanding a glob reads a directory, whatever the argument means to the program.
        c.words.iter().skip(1).for_each(|w| self.glob_reads(w));
        self.keywords(c.background, &c.keywords, c.span);
        if !c.words.is_empty() {
            self.program(&c.words, c.span);
        }
    }

    /// Check every expansion inside a word.
    fn word(&mut self, w: &Word) {
        for part in &w.parts {
            self.part(part);
        }
    }

    fn part(&mut self, part: &WordPart) {
        match part {
            WordPart::DoubleQuoted(parts) => parts.iter().for_each(|p| self.part(p)),
            WordPart::CommandSubst(s) | WordPart::ProcessSubst { script: s, .. } => {
                if let Some(setting) = self.policy.shell.substitutions.clone() {
                    self.setting(
                        "substitution",
                        &setting,
                        "a command substitution".into(),
                        s.span,
                    );
                }
                // A substitution runs in a subshell: its `cd`s do not move this shell.
                let before = self.cwds.clone();
                self.script(s);
                self.cwds = before;
            }
            WordPart::Param(p) => self.param(p),
            WordPart::Arithmetic(a) => self.arithmetic(a),
            _ => {}
        }
    }

    fn param(&mut self, p: &Param) {
        shell::with_stack(|| self.param_inner(p))
    }

    fn param_inner(&mut self, p: &Param) {
        let risky_op = matches!(p.operator.as_deref(), Some("@P") | Some("@E") | Some("@A"));
        if p.indirect || risky_op {
            let s = self.policy.shell.indirect_expansion.clone();
            self.setting(
                "indirect-expansion",
                &s,
                format!("`{}` expands a value chosen at run time (indirection or prompt expansion can run code)", p.name),
                p.span,
            );
        }
        if p.assigns() {
            self.env_name(&p.name, p.span);
        }
        for w in p.words.iter().chain(p.subscript.iter()) {
            self.word(w);
        }
        for a in &p.arithmetic {
            self.arithmetic(a);
        }
    }

    fn arithmetic(&mut self, a: &Arithmetic) {
        shell::with_stack(|| self.arithmetic_inner(a))
    }

    fn arithmetic_inner(&mut self, a: &Arithmetic) {
        let vars: Vec<&String> = a.variables.iter().filter(|v| is_identifier(v)).collect();
        if !vars.is_empty() {
            let s = self.policy.shell.arithmetic_variables.clone();
            self.setting(
                "arithmetic-variable",
                &s,
                format!(
                    "arithmetic reads `{}`, whose value bash evaluates as an expression (a value like `a[$(cmd)]` runs cmd)",
                    vars[0]
                ),
                a.span,
            );
        }
        for name in &a.assigns {
            self.env_name(name, a.span);
        }
        for w in &a.words {
            self.word(w);
        }
    }

    fn assignment(&mut self, a: &Assignment) {
        self.env_name(&a.name, a.name_span);
        if let Some(sub) = &a.subscript {
            self.word(sub);
            if sub.static_value().map_or(true, |s| !is_number(&s)) {
                self.subscript_arithmetic(sub.span);
            }
        }
        for w in a.value.iter().chain(&a.array) {
            self.word(w);
        }
        a.array.iter().for_each(|w| self.glob_reads(w));
        // `x=( [sub]=value )`: an indexed array's subscript is arithmetic, and bash runs a
        // `$(..)` in it even when it is quoted.
        for w in &a.array {
            let text = loose_text(w);
            if let Some(rest) = text.strip_prefix('[') {
                let sub = rest
                    .split_once("]=")
                    .or_else(|| rest.split_once("]+="))
                    .map(|(s, _)| s);
                if sub.map_or(true, |s| !is_number(s)) {
                    self.subscript_arithmetic(w.span);
                }
            }
        }
    }

    /// An unquoted glob lists the directory it is expanded in: a read of that directory.
    fn glob_reads(&mut self, w: &Word) {
        if w.parts.iter().any(|p| matches!(p, WordPart::Glob(_))) {
            self.path(w, false);
        }
    }

    fn subscript_arithmetic(&mut self, span: Span) {
        let s = self.policy.shell.arithmetic_variables.clone();
        self.setting(
            "arithmetic-variable",
            &s,
            "an array subscript that is not a plain number is evaluated as arithmetic (it can run commands)".into(),
            span,
        );
    }

    /// An assignment to variable `name`, from anywhere.
    fn env_name(&mut self, name: &str, span: Span) {
        let env = &self.policy.env;
        let message = |what: &str| {
            let mut m = format!("assigning `{name}` {what}");
            if let Some(extra) = &env.message {
                m.push_str(": ");
                m.push_str(extra);
            }
            m
        };
        if let Some(p) = env.deny.iter().find(|p| p.glob.is_match(name)) {
            let (m, r) = (message("is denied"), p.rule.clone());
            self.reason("env-denied", Verdict::Deny, Some(&r), m, span);
        } else if let Some(p) = env.ask.iter().find(|p| p.glob.is_match(name)) {
            let (m, r) = (message("needs approval"), p.rule.clone());
            self.reason("env-ask", Verdict::Ask, Some(&r), m, span);
        } else if !env.allow.iter().any(|p| p.glob.is_match(name)) {
            let (m, s) = (message("is not allowed"), env.default.clone());
            self.setting("env-not-allowed", &s, m, span);
        }
    }

    fn redirect(&mut self, r: &Redirect) {
        self.word(&r.target);
        if let Some(h) = &r.heredoc {
            self.word(&h.body);
        }
        let red = self.policy.redirects.clone();
        match r.op {
            RedirectOp::HereDoc | RedirectOp::HereString => {
                self.setting(
                    "here-document",
                    &red.here_documents,
                    "a here-document".into(),
                    r.span,
                );
            }
            RedirectOp::DupOut | RedirectOp::DupIn => {
                let is_fd = r.target.static_value().is_some_and(|t| {
                    t == "-"
                        || t.trim_end_matches('-').chars().all(|c| c.is_ascii_digit())
                            && !t.is_empty()
                });
                if is_fd {
                    self.setting(
                        "fd-duplication",
                        &red.fd_duplication,
                        "duplicates a file descriptor".into(),
                        r.span,
                    );
                } else if r.op == RedirectOp::DupOut {
                    // `>&word` with a file name is `&>word`.
                    self.setting(
                        "redirect-write",
                        &red.write,
                        "redirects output to a file".into(),
                        r.span,
                    );
                    self.path(&r.target, true);
                } else {
                    self.reason(
                        "redirect-unknown",
                        Verdict::Deny,
                        None,
                        "`<&` needs a file descriptor number".into(),
                        r.span,
                    );
                }
            }
            op => {
                if op.reads() {
                    self.setting(
                        "redirect-read",
                        &red.read,
                        "redirects input from a file".into(),
                        r.span,
                    );
                    self.path(&r.target, false);
                }
                if op.writes() {
                    self.setting(
                        "redirect-write",
                        &red.write,
                        "redirects output to a file".into(),
                        r.span,
                    );
                    self.path(&r.target, true);
                }
            }
        }
    }

    /// Check a path word for reading or writing, against every working directory it may be
    /// resolved in. Unless a resolution is refused, returns one entry per working directory:
    /// the exact path, or `None` where the word is not one exact path (a glob, or a value
    /// known only at run time that the policy's `unresolved_paths` setting lets through).
    fn path(&mut self, w: &Word, write: bool) -> Option<Vec<Option<PathBuf>>> {
        let mut all = Vec::new();
        let cwds = self.cwds.clone();
        for cwd in &cwds {
            let resolved = paths::resolve(w, self.ctx, cwd);
            if let Err((msg, pattern)) =
                paths::check(&self.policy.paths, &resolved, write, self.ctx)
            {
                let mut msg = msg;
                let rules = &self.policy.paths;
                let protected = pattern.is_some_and(|p| p.rule.name == "paths.protected");
                let own = if protected {
                    &rules.protected_message
                } else if write {
                    &rules.write_message
                } else {
                    &rules.read_message
                };
                if let Some(extra) = own.as_ref().or(rules.message.as_ref()) {
                    msg.push_str(": ");
                    msg.push_str(extra);
                }
                match (&resolved, pattern) {
                    (Resolved::Unknown(_), _) => {
                        // The policy's setting decides; the caller learns the path is unknown
                        // (a `cd` to it leaves the directory unknown, which is refused).
                        let s = self.policy.shell.unresolved_paths.clone();
                        self.setting("path-unresolved", &s, msg, w.span);
                        all.push(None);
                        continue;
                    }
                    (_, Some(p)) => {
                        let r = p.rule.clone();
                        self.reason(
                            if protected {
                                "path-write-protected"
                            } else if write {
                                "path-write-denied"
                            } else {
                                "path-read-denied"
                            },
                            Verdict::Deny,
                            Some(&r),
                            msg,
                            w.span,
                        );
                    }
                    (_, None) => {
                        // Outside every allowed path: cite the list that would have to grow.
                        let paths = &self.policy.paths;
                        let list = if write { &paths.write } else { &paths.read };
                        let rule = list.first().map(|p| p.rule.clone());
                        let code = if write {
                            "path-write-outside"
                        } else {
                            "path-read-outside"
                        };
                        self.reason(code, Verdict::Deny, rule.as_ref(), msg, w.span);
                    }
                }
                return None;
            }
            all.push(match resolved {
                Resolved::Exact(p) => Some(p),
                _ => None,
            });
        }
        Some(all)
    }

    /// Check a command's program and arguments (`words` is not empty).
    fn program(&mut self, words: &[Word], span: Span) {
        let Some(first) = words.first() else { return };
        let Some(name) = first.static_value() else {
            let why = first
                .dynamic_reasons()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            self.reason(
                "dynamic-program",
                Verdict::Deny,
                None,
                format!("the program name depends on {why}, so what runs cannot be known"),
                first.span,
            );
            return;
        };
        if self.sandbox_code(&name, words, span) {
            return;
        }
        self.program_named(&name, words, span);
    }

    /// [`Eval::program`] once the program's name is known.
    fn program_named(&mut self, name: &str, words: &[Word], span: Span) {
        let Some(first) = words.first() else { return };
        let name = name.to_string();
        let policy = self.policy;
        if let Some(rule) = policy.programs.get(&name) {
            if name == "[" || name == "test" {
                let args = self.test_operands(&name, &words[1..]);
                self.args(rule, &args, first.span, span);
                if rule.verdict != Verdict::Deny {
                    self.probe_paths(&words[1..]);
                }
                return;
            }
            self.args(rule, &words[1..], first.span, span);
            return;
        }
        if wrappers::is_wrapper(&name) {
            self.wrapper(&name, words, span);
            return;
        }
        if name.contains('/') {
            self.reason(
                "program-path",
                Verdict::Deny,
                None,
                format!(
                    "`{name}` is run by path; only programs named in the policy may run, by name"
                ),
                first.span,
            );
            return;
        }
        let state = wrappers::SESSION_STATE.contains(&name.as_str());
        let mut message = if state {
            format!("`{name}` changes the state of the shell session for later commands and is not allowed")
        } else {
            format!("`{name}` is not an allowed program")
        };
        if let Some(extra) = &policy.default_message {
            message.push_str(": ");
            message.push_str(extra);
        }
        let allowed: Vec<&str> = policy
            .programs
            .iter()
            .filter(|(_, r)| r.verdict == Verdict::Allow)
            .map(|(n, _)| n.as_str())
            .collect();
        if !allowed.is_empty() {
            // Every name, so that a program left out is never mistaken for a forbidden one;
            // past a long list, how many more and where they are.
            let shown = allowed.len().min(MAX_ALLOWED_LISTED);
            let mut list = allowed[..shown].join(", ");
            let more = allowed.len() - shown;
            if more > 0 {
                let file = policy.sources.last().map_or("the policy", String::as_str);
                list.push_str(&format!(
                    ", and {more} more: see the [programs] tables of {file}, or ask \
                     `policy-check explain --policy {file} 'CMD'`"
                ));
            }
            message.push_str(&format!(" (allowed: {list})"));
        }
        let default = policy.default.clone();
        let code = if state {
            "session-state"
        } else {
            "program-not-allowed"
        };
        // Default-deny is the floor: an unknown program is never less than the default.
        self.setting(code, &default, message, first.span);
    }

    fn wrapper(&mut self, name: &str, words: &[Word], span: Span) {
        let w = &self.policy.wrappers;
        let rule = w.allow.get(name).or_else(|| w.ask.get(name)).cloned();
        let Some(rule) = rule else {
            let mut msg = format!("`{name}` runs another command and is not an allowed wrapper");
            if let Some(extra) = &self.policy.wrappers.message {
                msg.push_str(": ");
                msg.push_str(extra);
            }
            self.reason("wrapper-denied", Verdict::Deny, None, msg, words[0].span);
            return;
        };
        if self.policy.wrappers.ask.contains_key(name) {
            self.reason(
                "wrapper-ask",
                Verdict::Ask,
                Some(&rule),
                format!("`{name}` needs approval"),
                words[0].span,
            );
        }
        match wrappers::unwrap(name, &words[1..], span) {
            wrappers::Unwrapped::Nothing => {}
            wrappers::Unwrapped::Refuse { message, span } => {
                self.reason(
                    "wrapper-unverifiable",
                    Verdict::Deny,
                    Some(&rule),
                    message,
                    span,
                );
            }
            wrappers::Unwrapped::Source { text, span, offset } => self.payload(&text, span, offset),
            wrappers::Unwrapped::Command {
                words: inner,
                assignments,
                appends_dynamic,
            } => {
                for a in assignments {
                    if let Some(v) = a.static_value() {
                        let n = v.split('=').next().unwrap_or_default().to_string();
                        self.env_name(&n, a.span);
                    }
                }
                if inner.is_empty() {
                    return;
                }
                if self.nesting >= self.policy.limits.max_nesting + 4 {
                    self.reason(
                        "nesting-limit",
                        Verdict::Deny,
                        None,
                        "wrappers nested too deep".into(),
                        span,
                    );
                    return;
                }
                self.nesting += 1;
                if appends_dynamic {
                    let mut v = inner.to_vec();
                    v.push(args::stdin_word(span));
                    self.program(&v, span);
                } else {
                    self.program(inner, span);
                }
                self.nesting -= 1;
            }
        }
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

/// A word's text with quotes removed and globs kept as written; every expansion becomes NUL.
fn loose_text(w: &Word) -> String {
    fn push(p: &WordPart, out: &mut String) {
        match p {
            WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
                out.push_str(s)
            }
            WordPart::Glob(s) | WordPart::Brace(s) => out.push_str(s),
            WordPart::DoubleQuoted(ps) => ps.iter().for_each(|q| push(q, out)),
            WordPart::Tilde(u) => {
                out.push('~');
                out.push_str(u);
            }
            _ => out.push('\0'),
        }
    }
    let mut out = String::new();
    w.parts.iter().for_each(|p| push(p, &mut out));
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `Some(negated)` when `cmd` is a `cd` that runs in this shell: a simple command named `cd`,
/// not in the background or a coprocess. `negated`: an odd number of `!` before it.
fn plain_cd(cmd: &Command) -> Option<bool> {
    let Command::Simple(c) = cmd else {
        return None;
    };
    let named_cd = c.program().and_then(|w| w.static_value()).as_deref() == Some("cd");
    if !named_cd || c.background || c.keywords.contains(&shell::Keyword::Coproc) {
        return None;
    }
    let bangs = c
        .keywords
        .iter()
        .filter(|k| **k == shell::Keyword::Bang)
        .count();
    Some(bangs % 2 == 1)
}

/// `a` then the directories of `b` it does not hold.
fn union(a: &[PathBuf], b: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = a.to_vec();
    for p in b {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}
