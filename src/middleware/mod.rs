//! Middleware: what an agent application plugs between the model's `bash` tool calls and the
//! shell that runs them.
//!
//! A [`Guard`] wraps any [`Executor`] (the thing that runs one command). For each call it
//! evaluates the command against a [`Policy`] with the session's real working directory, and
//!
//! - on **deny**, answers an `is_error` [`ToolResult`] saying what was refused, by which rule,
//!   and what is allowed instead ([`report::for_model`]); the executor is **not** called;
//! - on **ask**, consults the [`Approver`], if one is configured; without one (the
//!   non-interactive default) or when it declines, the call is refused like a deny;
//! - on **allow**, runs the command, passes the output through the [`OutputFilter`]
//!   (redaction, then truncation) and answers with it.
//!
//! Invalid calls (no command, both command and restart, wrong JSON types, an unknown tool,
//! malformed JSON) are answered with an `is_error` result too: a call is never dropped and
//! never panics.
//!
//! # Exit status and `is_error`
//!
//! A command that ran and exited with status 0 gives `is_error: false` and its output (or
//! `(no output)`). A nonzero exit status gives `is_error: true`, and the content is the output
//! followed by a last line `exit status N` (or `exit status unknown (killed by a signal)`),
//! so the model sees both what the command printed and that it failed. Executor failures are
//! `is_error` results worded like the bash-tool documentation's examples, such as
//! `Error: command timed out after 30 seconds`, after any output captured before the failure.
//!
//! # Example: wrap a custom executor
//!
//! ```
//! use shellgate::middleware::{from_fn, Guard, Output, ToolUse};
//! use shellgate::{Context, Policy};
//!
//! let policy = Policy::from_toml("[programs.echo]\noperands = \"text\"\n", "mine.toml")?;
//! let mut ran = Vec::new();
//! let executor = from_fn(|cmd: &str| {
//!     ran.push(cmd.to_string()); // run it your way: a container, a remote host, ...
//!     Ok(Output::new(b"hi\n".to_vec(), 0))
//! });
//! let mut guard = Guard::new(policy, Context::new("/srv/project"), executor);
//! let refused = guard.handle(&ToolUse::bash("toolu_01", "rm -rf /"));
//! assert!(refused.is_error && refused.content.contains("not run"));
//! let answer = guard.handle(&ToolUse::bash("toolu_02", "echo hi"));
//! assert_eq!((answer.content.as_str(), answer.is_error), ("hi\n", false));
//! drop(guard);
//! assert_eq!(ran, ["echo hi"]); // the refused command never reached the executor
//! # Ok::<(), shellgate::PolicyError>(())
//! ```
//!
//! The reference executor is [`BashSession`]: one persistent bash process, as the bash-tool
//! documentation describes it, with a timeout that kills the whole process group, output
//! capped while it streams, resource limits and a controlled environment.

pub mod audit;
pub mod contain;
pub mod files;
pub mod outputs;
pub mod sandbox;
pub mod session;
pub mod shapes;
mod tool_calls;
pub mod types;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::evaluate::{Context, Decision};
use crate::policy::{Policy, Verdict};
use crate::redact::{RedactError, RuleSet};
use crate::report;
use crate::truncate::TruncateConfig;

pub use audit::{AuditError, AuditLog, AuditRecord};
pub use files::{FileTool, LocalFiles};
pub use outputs::OutputFiles;
pub use session::{BashSession, Launcher, ResourceLimits, SessionConfig, StreamRedaction};
pub use shapes::{CodeExecutionResult, EditorCommand, ResultBlock, ToolSet};
pub use tool_calls::EditorLimits;
pub use types::{BashInput, InputError, ToolResult, ToolUse, UserMessage, BASH_TOOL_NAME};

/// What an executor returns for a command that ran to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Output {
    /// Standard output and standard error, interleaved in the order they were written
    /// (as far as the executor can tell).
    pub output: Vec<u8>,
    /// The exit status, or `None` when there is none (killed by a signal).
    pub status: Option<i32>,
    /// How many bytes the executor discarded to keep its memory bounded (its own marker in
    /// `output` says where); 0 when nothing was.
    pub dropped: u64,
    /// Where the executor discarded output while it streamed, so that the filter can account
    /// for it in the one marker the model sees; `None` when nothing was.
    pub gap: Option<Gap>,
}

/// What an executor returns for a code execution call (`bash_code_execution`) that ran to
/// completion: stdout and stderr apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeOutput {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Where the executor discarded some of `stdout` while it streamed.
    pub stdout_gap: Option<Gap>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// Where the executor discarded some of `stderr` while it streamed.
    pub stderr_gap: Option<Gap>,
    /// The exit status, or `None` when there is none (killed by a signal).
    pub status: Option<i32>,
}

impl CodeOutput {
    /// Output with an exit status.
    pub fn new(stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>, status: i32) -> CodeOutput {
        CodeOutput {
            stdout: stdout.into(),
            stderr: stderr.into(),
            status: Some(status),
            ..CodeOutput::default()
        }
    }
}

/// Output an executor discarded while it streamed: its marker line in [`Output::output`] and
/// what that marker stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// Byte range of the executor's marker line (newline included) in the output.
    pub marker: std::ops::Range<usize>,
    /// Newlines in the discarded bytes.
    pub lines: u64,
    /// Bytes discarded.
    pub bytes: u64,
}

impl Output {
    /// Output with an exit status.
    pub fn new(output: impl Into<Vec<u8>>, status: i32) -> Output {
        Output {
            output: output.into(),
            status: Some(status),
            dropped: 0,
            gap: None,
        }
    }

    /// Output of a command that has no exit status (killed by a signal).
    pub fn without_status(output: impl Into<Vec<u8>>) -> Output {
        Output {
            output: output.into(),
            status: None,
            dropped: 0,
            gap: None,
        }
    }

    /// The same output, noting that `dropped` bytes were discarded.
    pub fn with_dropped(mut self, dropped: u64) -> Output {
        self.dropped = dropped;
        self
    }

    /// The same output, with a streaming gap (which also sets [`Output::dropped`]).
    pub fn with_gap(mut self, gap: Option<Gap>) -> Output {
        self.dropped = gap.as_ref().map_or(0, |g| g.bytes);
        self.gap = gap;
        self
    }
}

/// Why an executor could not run a command to completion. The text of each is what the model
/// is told.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The command did not finish in time.
    #[error("Error: command timed out after {}{}", seconds(*.after), if *.restarted { " (the bash session was restarted: working directory, variables and background jobs are reset)" } else { "" })]
    Timeout {
        /// The timeout.
        after: Duration,
        /// Output captured before the timeout.
        output: Vec<u8>,
        /// Whether the executor restarted its session.
        restarted: bool,
        /// Where the executor discarded some of that output while it streamed.
        gap: Option<Gap>,
    },
    /// The shell exited while running the command (`exit`, `set -e`, a fatal signal).
    #[error("Error: the bash session exited{} while running the command; a new session was started (working directory and variables are reset)", match .status { Some(s) => format!(" with status {s}"), None => " (killed by a signal)".to_string() })]
    SessionExited {
        /// The shell's exit status.
        status: Option<i32>,
        /// Output captured before the exit.
        output: Vec<u8>,
        /// Where the executor discarded some of that output while it streamed.
        gap: Option<Gap>,
    },
    /// The shell could not be started.
    #[error("Error: could not start the bash session: {0}")]
    Start(String),
    /// Talking to the shell failed.
    #[error("Error: lost contact with the bash session: {0}")]
    Io(#[source] std::io::Error),
    /// The command cannot be delivered to the shell (it contains a NUL byte, say).
    #[error("Error: invalid command: {0}")]
    InvalidCommand(String),
    /// Any other failure, from a custom executor.
    #[error("Error: {0}")]
    Failed(String),
    /// The executor cannot do what was asked (a code execution call to an executor that
    /// cannot capture stderr apart, say).
    #[error("Error: unavailable: {0}")]
    Unavailable(String),
}

impl ExecError {
    /// Output captured before the failure, if any.
    pub fn output(&self) -> &[u8] {
        match self {
            ExecError::Timeout { output, .. } | ExecError::SessionExited { output, .. } => output,
            _ => &[],
        }
    }

    /// Where the executor discarded part of [`ExecError::output`] while it streamed.
    pub fn gap(&self) -> Option<&Gap> {
        match self {
            ExecError::Timeout { gap, .. } | ExecError::SessionExited { gap, .. } => gap.as_ref(),
            _ => None,
        }
    }

    /// A short stable name for the audit log: `timeout`, `session-exited`, `start`, `io`,
    /// `invalid-command`, `failed`, `unavailable`.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::Timeout { .. } => "timeout",
            ExecError::SessionExited { .. } => "session-exited",
            ExecError::Start(_) => "start",
            ExecError::Io(_) => "io",
            ExecError::InvalidCommand(_) => "invalid-command",
            ExecError::Failed(_) => "failed",
            ExecError::Unavailable(_) => "unavailable",
        }
    }
}

/// `30 seconds`, `1 second`, `0.5 seconds`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        let s = d.as_secs();
        format!("{s} second{}", if s == 1 { "" } else { "s" })
    } else {
        format!("{:.1} seconds", d.as_secs_f64())
    }
}

/// The thing that runs one command: a persistent shell, a container, a remote host.
pub trait Executor {
    /// Run `command` to completion.
    fn run(&mut self, command: &str) -> Result<Output, ExecError>;

    /// Start afresh (`{"restart": true}`). The default does nothing.
    fn restart(&mut self) -> Result<(), ExecError> {
        Ok(())
    }

    /// The working directory commands currently run in, when the executor knows it. The
    /// [`Guard`] evaluates each command against it. The default: unknown.
    fn cwd(&self) -> Option<PathBuf> {
        None
    }

    /// Run `command` as a code execution call: `$OUTPUT_DIR` set to `output_dir` (which
    /// exists and is empty), stdout and stderr captured apart. The default cannot:
    /// [`ExecError::Unavailable`].
    fn run_code(&mut self, command: &str, output_dir: &Path) -> Result<CodeOutput, ExecError> {
        let _ = (command, output_dir);
        Err(ExecError::Unavailable(
            "this executor does not run code execution calls".to_string(),
        ))
    }
}

impl<E: Executor + ?Sized> Executor for Box<E> {
    fn run(&mut self, command: &str) -> Result<Output, ExecError> {
        (**self).run(command)
    }
    fn restart(&mut self) -> Result<(), ExecError> {
        (**self).restart()
    }
    fn cwd(&self) -> Option<PathBuf> {
        (**self).cwd()
    }
    fn run_code(&mut self, command: &str, output_dir: &Path) -> Result<CodeOutput, ExecError> {
        (**self).run_code(command, output_dir)
    }
}

impl<E: Executor + ?Sized> Executor for &mut E {
    fn run(&mut self, command: &str) -> Result<Output, ExecError> {
        (**self).run(command)
    }
    fn restart(&mut self) -> Result<(), ExecError> {
        (**self).restart()
    }
    fn cwd(&self) -> Option<PathBuf> {
        (**self).cwd()
    }
    fn run_code(&mut self, command: &str, output_dir: &Path) -> Result<CodeOutput, ExecError> {
        (**self).run_code(command, output_dir)
    }
}

/// An executor made from a closure: see [`from_fn`].
#[derive(Debug, Clone)]
pub struct FnExecutor<F>(F);

/// Make an executor from a closure that runs one command. Restarting does nothing and the
/// working directory is unknown (commands are evaluated in the [`Context`]'s own `cwd`).
pub fn from_fn<F>(f: F) -> FnExecutor<F>
where
    F: FnMut(&str) -> Result<Output, ExecError>,
{
    FnExecutor(f)
}

impl<F> Executor for FnExecutor<F>
where
    F: FnMut(&str) -> Result<Output, ExecError>,
{
    fn run(&mut self, command: &str) -> Result<Output, ExecError> {
        (self.0)(command)
    }
}

/// What happens to a command's output before the model sees it: redaction, then truncation.
pub trait OutputFilter: Send + Sync {
    /// Turn raw output into the text for the model.
    fn filter(&self, output: &[u8]) -> String;

    /// Only the redaction part, for text that is shaped further before [`Self::filter`]
    /// (the text editor numbers a file's lines after redacting it). By default the whole
    /// filter: never less redaction than [`Self::filter`] does.
    fn redact(&self, output: &[u8]) -> Vec<u8> {
        self.filter(output).into_bytes()
    }

    /// Turn an executor's output into the text for the model, accounting for what the
    /// executor discarded while it streamed ([`Output::gap`]). By default, [`Self::filter`]
    /// on the bytes (the executor's own marker line stays in them).
    fn filter_output(&self, output: &Output) -> String {
        self.filter(&output.output)
    }
}

/// The shipped filter, and the [`Guard`]'s default: credential redaction ([`crate::redact`],
/// the built-in rule pack or your own), then truncation to the model's budget
/// ([`crate::truncate`]: head and more tail kept, never cutting a redaction marker).
#[derive(Debug, Clone, Default)]
pub struct RedactThenTruncate {
    rules: Option<Arc<RuleSet>>,
    truncate: TruncateConfig,
}

impl RedactThenTruncate {
    /// Redact with `rules` (say, the built-in pack extended by a policy's `[redact]` table),
    /// then truncate to `truncate`.
    pub fn new(rules: RuleSet, truncate: TruncateConfig) -> RedactThenTruncate {
        RedactThenTruncate {
            rules: Some(Arc::new(rules)),
            truncate,
        }
    }

    /// The same rules, for redacting a [`BashSession`]'s output as it streams
    /// ([`SessionConfig::redaction`]).
    pub fn stream_redaction(&self) -> StreamRedaction {
        match &self.rules {
            Some(rules) => StreamRedaction::Rules(rules.clone()),
            None => StreamRedaction::Builtin,
        }
    }

    /// Redact with the built-in pack, then truncate to `truncate`.
    pub fn builtin(truncate: TruncateConfig) -> RedactThenTruncate {
        RedactThenTruncate {
            rules: None,
            truncate,
        }
    }

    /// Redact with the rules a policy's `[redact]` table gives (the built-in pack when it has
    /// none), then truncate to `truncate`. An invalid `[redact]` table is an error, never a
    /// silent fallback.
    pub fn for_policy(
        policy: &Policy,
        truncate: TruncateConfig,
    ) -> Result<RedactThenTruncate, RedactError> {
        let Some(config) = &policy.redact else {
            return Ok(RedactThenTruncate::builtin(truncate));
        };
        Ok(RedactThenTruncate::new(
            RuleSet::with_config(config)?,
            truncate,
        ))
    }
}

impl OutputFilter for RedactThenTruncate {
    fn filter(&self, output: &[u8]) -> String {
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        let (redacted, _) = rules.redact(output);
        crate::truncate::truncate(&redacted, &self.truncate)
    }

    fn redact(&self, output: &[u8]) -> Vec<u8> {
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        rules.redact(output).0
    }

    /// The executor's marker line is replaced by the gap it stands for, so that the one marker
    /// the model sees counts every line and byte left out, by the executor and by truncation.
    fn filter_output(&self, output: &Output) -> String {
        let bytes = &output.output;
        let Some((gap, head, tail)) = output
            .gap
            .as_ref()
            .and_then(|g| Some((g, bytes.get(..g.marker.start)?, bytes.get(g.marker.end..)?)))
        else {
            return self.filter(bytes);
        };
        let rules = self.rules.as_deref().unwrap_or_else(|| RuleSet::builtin());
        let mut t = crate::truncate::Truncator::new(&self.truncate);
        t.feed(&rules.redact(head).0);
        t.skip(gap.lines, gap.bytes);
        t.feed(&rules.redact(tail).0);
        t.finish()
    }
}

/// A filter that does not redact: lossy UTF-8 and a byte cap. For tests and for output that
/// is known to hold no secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassThrough {
    /// At most this many bytes of output are kept.
    pub max_bytes: usize,
}

impl Default for PassThrough {
    fn default() -> PassThrough {
        PassThrough { max_bytes: 30_000 }
    }
}

impl OutputFilter for PassThrough {
    fn filter(&self, output: &[u8]) -> String {
        if output.len() <= self.max_bytes {
            return String::from_utf8_lossy(output).into_owned();
        }
        let mut text = String::from_utf8_lossy(&output[..self.max_bytes]).into_owned();
        // A character cut in two at the cap shows as U+FFFD; drop it.
        if text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push_str(&format!(
            "\n[... {} more bytes of output not shown ...]",
            output.len() - self.max_bytes
        ));
        text
    }
}

/// A command whose verdict is `ask`, waiting for a decision.
#[derive(Debug)]
#[non_exhaustive]
pub struct ApprovalRequest<'a> {
    /// The tool_use id.
    pub tool_use_id: &'a str,
    /// The command.
    pub command: &'a str,
    /// The policy's decision (verdict `ask`) with its reasons.
    pub decision: &'a Decision,
    /// The working directory it would run in.
    pub cwd: &'a Path,
}

/// Decides `ask` verdicts (a person at a prompt, a second policy, ...). Closures
/// `FnMut(&ApprovalRequest) -> bool` are approvers.
pub trait Approver: Send {
    /// Whether the command may run.
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> bool;
}

impl<F> Approver for F
where
    F: FnMut(&ApprovalRequest<'_>) -> bool + Send,
{
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> bool {
        self(request)
    }
}

/// How a call ended, beyond its [`ToolResult`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Refused by the policy (deny, or ask without approval); the executor was not called.
    Refused {
        /// The policy's verdict.
        verdict: Verdict,
    },
    /// The command ran to completion with this exit status (`None`: killed by a signal).
    Completed {
        /// The exit status.
        status: Option<i32>,
    },
    /// The executor failed (timeout, session exit, ...).
    Failed {
        /// [`ExecError::code`].
        code: &'static str,
    },
    /// The session was restarted (or restarting failed: see the result).
    Restarted,
    /// The call was not a valid bash call.
    Invalid,
}

/// One handled call: the result for the model and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Call {
    /// The `tool_result` block.
    pub result: ToolResult,
    /// How it ended.
    pub outcome: Outcome,
}

/// What [`Guard::handle_value`] answers: a `tool_result` block, or a user message of them.
/// It serialises as the bare block or message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// The answer to one `tool_use` block.
    Result(ToolResult),
    /// The answer to a message's `content`: one result per `tool_use`, in order.
    Message(UserMessage),
    /// The answer to one code execution call (`bash_code_execution`,
    /// `text_editor_code_execution`).
    CodeExecution(CodeExecutionResult),
}

/// Why a value got no [`Answer`] from [`Guard::handle_value`].
pub const NOT_A_CALL: &str = "expected a tool_use block or a message with a content array";

/// Why the reference guard ([`Guard::reference`]) could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// A relative working directory was given and the current one cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    /// The working directory is not a directory.
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The policy's `[redact]` table is invalid.
    #[error("the policy's [redact] table: {0}")]
    Redact(#[source] RedactError),
    /// The bash session could not be started.
    #[error("{0}")]
    Session(#[source] ExecError),
    /// The caller's own configuration of the session failed ([`Guard::reference_with`]).
    #[error("{0}")]
    Configure(String),
}

impl Guard<BashSession> {
    /// The guard `policy-check serve` and `run` use: a [`BashSession`] started in `cwd`
    /// (relative to the current directory) with `timeout` per command, the session's output
    /// redacted as it streams and then filtered by the policy's own `[redact]` rules
    /// ([`RedactThenTruncate::for_policy`]), evaluated with `cwd` as the workspace.
    pub fn reference(
        policy: impl Into<Arc<Policy>>,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Guard<BashSession>, SetupError> {
        Guard::reference_with(policy, cwd, timeout, |config, _| Ok(config))
    }

    /// [`Guard::reference`], with `configure` adjusting the session's configuration and the
    /// evaluation context before the session starts (serve's sandbox launcher, limits and
    /// background-job handling).
    pub fn reference_with(
        policy: impl Into<Arc<Policy>>,
        cwd: &Path,
        timeout: Duration,
        configure: impl FnOnce(SessionConfig, &mut Context) -> Result<SessionConfig, String>,
    ) -> Result<Guard<BashSession>, SetupError> {
        let policy = policy.into();
        let cwd = if cwd.is_absolute() {
            cwd.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(SetupError::CurrentDir)?
                .join(cwd)
        };
        if !cwd.is_dir() {
            return Err(SetupError::NotADirectory(cwd));
        }
        let filter = RedactThenTruncate::for_policy(&policy, TruncateConfig::default())
            .map_err(SetupError::Redact)?;
        let mut ctx = Context::new(&cwd);
        let config = SessionConfig::new(&cwd)
            .timeout(timeout)
            .redaction(filter.stream_redaction());
        let config = configure(config, &mut ctx).map_err(SetupError::Configure)?;
        let session = BashSession::new(config).map_err(SetupError::Session)?;
        Ok(Guard::new(policy, ctx, session).with_filter(filter))
    }
}

/// Checks each call against a policy before the executor runs it; see the [module
/// docs](self).
pub struct Guard<E> {
    policy: Arc<Policy>,
    context: Context,
    executor: E,
    filter: Box<dyn OutputFilter>,
    approver: Option<Box<dyn Approver>>,
    audit: Option<AuditLog>,
    tools: ToolSet,
    files: Box<dyn FileTool>,
    editor_limits: EditorLimits,
    outputs: Option<OutputFiles>,
    max_output_file_bytes: u64,
    rate: Option<tool_calls::RateLimit>,
}

impl<E> std::fmt::Debug for Guard<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("policy", &self.policy.name)
            .field("context", &self.context)
            .field("approver", &self.approver.is_some())
            .field("audit", &self.audit.is_some())
            .finish_non_exhaustive()
    }
}

impl<E: Executor> Guard<E> {
    /// A guard running allowed commands with `executor`. `context` gives the workspace roots
    /// and home; its `cwd` is replaced by the executor's working directory whenever the
    /// executor knows it ([`Executor::cwd`]). Output goes through [`RedactThenTruncate`] with
    /// the built-in rules until [`with_filter`](Guard::with_filter) says otherwise (see
    /// [`RedactThenTruncate::for_policy`] for a policy's own `[redact]` rules); `ask` is
    /// refused until [`with_approver`](Guard::with_approver).
    pub fn new(policy: impl Into<Arc<Policy>>, context: Context, executor: E) -> Guard<E> {
        let mut guard = Guard {
            policy: policy.into(),
            context,
            executor,
            filter: Box::new(RedactThenTruncate::default()),
            approver: None,
            audit: None,
            tools: ToolSet::default(),
            files: Box::new(LocalFiles::new()),
            editor_limits: EditorLimits::default(),
            outputs: None,
            max_output_file_bytes: tool_calls::DEFAULT_MAX_OUTPUT_FILE_BYTES,
            rate: None,
        };
        guard.sync_cwd();
        guard
    }

    /// Filter output (and the commands written to the audit log) with `filter`.
    pub fn with_filter(mut self, filter: impl OutputFilter + 'static) -> Guard<E> {
        self.filter = Box::new(filter);
        self
    }

    /// Let `approver` decide `ask` verdicts.
    pub fn with_approver(mut self, approver: impl Approver + 'static) -> Guard<E> {
        self.approver = Some(Box::new(approver));
        self
    }

    /// Record every call in `log`.
    pub fn with_audit(mut self, log: AuditLog) -> Guard<E> {
        self.audit = Some(log);
        self
    }

    /// The context the next command is evaluated in (its `cwd` is the session's).
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The executor.
    pub fn executor(&self) -> &E {
        &self.executor
    }

    /// The executor, mutably.
    pub fn executor_mut(&mut self) -> &mut E {
        &mut self.executor
    }

    /// The executor, giving up the guard.
    pub fn into_inner(self) -> E {
        self.executor
    }

    /// Answer one `tool_use` block as a `tool_result` (a code execution call's typed result
    /// as its JSON text: [`ResultBlock::into_tool_result`]).
    pub fn handle(&mut self, tool_use: &ToolUse) -> ToolResult {
        self.answer(tool_use).into_tool_result()
    }

    /// Answer one `tool_use` block given as JSON. Anything that is not a valid bash call gets
    /// an `is_error` result (quoting the block's `id` when it has a string one). A code
    /// execution call's result comes back as a `tool_result` whose content is the result's
    /// JSON ([`ResultBlock::into_tool_result`]); [`Guard::answer_json`] keeps its shape.
    pub fn handle_json(&mut self, block: &Value) -> ToolResult {
        self.answer_json(block).into_tool_result()
    }

    /// Answer one `tool_use` or `server_tool_use` block given as JSON, in the shape of its
    /// tool ([`Guard::answer`]). A block that cannot be read gets an `is_error` `tool_result`.
    pub fn answer_json(&mut self, block: &Value) -> ResultBlock {
        match ToolUse::from_json(block) {
            Ok(tool_use) => self.answer(&tool_use),
            Err(e) => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                self.invalid(id, None, e).result.into()
            }
        }
    }

    /// Answer one `tool_use` block given as JSON text. Malformed JSON gets an `is_error`
    /// result too (with an empty `tool_use_id`, since none can be read).
    pub fn handle_str(&mut self, json: &str) -> ToolResult {
        match serde_json::from_str::<Value>(json) {
            Ok(block) => self.handle_json(&block),
            Err(e) => {
                let e = InputError::MalformedJson {
                    message: e.to_string(),
                };
                self.invalid("", None, e).result
            }
        }
    }

    /// Answer every `tool_use` block of an assistant message's `content`, and every
    /// `server_tool_use` of an enabled tool that the message holds no result for, in order,
    /// as one user message. Other blocks (text, thinking, results, other server tools) are
    /// skipped; `tool_use`s of tools not enabled ([`Guard::with_tools`]) get an `is_error`
    /// result saying the tool is unknown.
    pub fn handle_turn(&mut self, content: &[Value]) -> UserMessage {
        // A server tool's call is the application's to answer only when it hosts that tool
        // and the API has not answered it already (web_search and the like run on the API's
        // side: their results are in the message).
        let answered: Vec<&str> = content
            .iter()
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
            .collect();
        let names = self.tools.names();
        let ours = |b: &Value| match b.get("type").and_then(Value::as_str) {
            Some("tool_use") => true,
            Some("server_tool_use") => {
                b.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| names.contains(&n))
                    && !b
                        .get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| answered.contains(&id))
            }
            _ => false,
        };
        let calls: Vec<&Value> = content.iter().filter(|b| ours(b)).collect();
        let results = calls.into_iter().map(|b| self.answer_json(b)).collect();
        UserMessage::new(results)
    }

    /// Answer what `policy-check serve` answers, from one JSON value: a `tool_use` block gets
    /// its `tool_result` ([`handle_json`](Guard::handle_json)); an object with a `content`
    /// array (an assistant message, a whole API response) gets one user message answering each
    /// `tool_use` in it ([`handle_turn`](Guard::handle_turn)). Anything else is `None`: it is
    /// not a call ([`NOT_A_CALL`] says so), and nothing ran.
    pub fn handle_value(&mut self, value: &Value) -> Option<Answer> {
        if is_call(value) {
            return Some(match self.answer_json(value) {
                ResultBlock::Tool(r) => Answer::Result(r),
                ResultBlock::CodeExecution(r) => Answer::CodeExecution(r),
            });
        }
        match value.get("content") {
            Some(Value::Array(blocks)) => Some(Answer::Message(self.handle_turn(blocks))),
            _ => None,
        }
    }

    /// Answer one bash `tool_use` block, with its [`Outcome`] (any other tool is answered
    /// as unknown here: see [`Guard::answer`]).
    pub fn handle_tool_use(&mut self, tool_use: &ToolUse) -> Call {
        if tool_use.name != BASH_TOOL_NAME || !self.tools.bash {
            let e = self.unknown_tool(&tool_use.name);
            return self.invalid(&tool_use.id, None, e);
        }
        match BashInput::from_json(&tool_use.input) {
            Ok(input) => self.call(&tool_use.id, &input),
            Err(e) => {
                let command = tool_use.input.get("command").and_then(Value::as_str);
                self.invalid(&tool_use.id, command, e)
            }
        }
    }

    /// Run `command` as the call `tool_use_id`: evaluate, then run or refuse.
    pub fn run_command(&mut self, tool_use_id: &str, command: &str) -> ToolResult {
        self.call(tool_use_id, &BashInput::Command(command.to_string()))
            .result
    }

    /// Handle a validated bash input.
    pub fn call(&mut self, tool_use_id: &str, input: &BashInput) -> Call {
        let started = Instant::now();
        let mut rec = AuditRecord::new(tool_use_id);
        let call = match input {
            BashInput::Restart => {
                rec.action = "restart";
                self.restart_session(tool_use_id, &mut rec)
            }
            BashInput::Command(command) => {
                rec.command = Some(self.filter.filter(command.as_bytes()));
                self.command(tool_use_id, command, &mut rec)
            }
        };
        rec.finish(&call, started.elapsed());
        self.audit(&rec);
        call
    }

    fn restart_session(&mut self, id: &str, rec: &mut AuditRecord) -> Call {
        let result = match self.executor.restart() {
            Ok(()) => ToolResult::ok(id, "tool has been restarted."),
            Err(e) => {
                rec.error = Some(e.code());
                ToolResult::error(id, e.to_string())
            }
        };
        self.sync_cwd();
        Call {
            result,
            outcome: Outcome::Restarted,
        }
    }

    fn command(&mut self, id: &str, command: &str, rec: &mut AuditRecord) -> Call {
        self.sync_cwd();
        let decision = self.policy.evaluate(&self.context, command);
        rec.verdict = Some(decision.verdict);
        rec.reasons = decision.reasons.iter().map(|r| r.code).collect();
        match decision.verdict {
            Verdict::Allow => {}
            Verdict::Deny => return refused(id, command, &decision, None),
            Verdict::Ask => {
                let approved = match self.approver.as_mut() {
                    None => None,
                    Some(a) => {
                        let request = ApprovalRequest {
                            tool_use_id: id,
                            command,
                            decision: &decision,
                            cwd: &self.context.cwd,
                        };
                        Some(a.approve(&request))
                    }
                };
                rec.approved = approved;
                match approved {
                    Some(true) => {}
                    Some(false) => {
                        return refused(id, command, &decision, Some("Approval was declined."))
                    }
                    None => {
                        let note = "No one can approve commands here, so commands that need approval are refused; \
                                    use a command the policy allows.";
                        return refused(id, command, &decision, Some(note));
                    }
                }
            }
        }
        let run = self.executor.run(command);
        self.sync_cwd();
        match run {
            Ok(out) => {
                rec.output_bytes = Some(out.output.len() as u64);
                rec.dropped_bytes = out.dropped;
                rec.exit_status = out.status;
                let mut content = self.filter.filter_output(&out);
                let ok = out.status == Some(0);
                if !ok {
                    if !content.is_empty() && !content.ends_with('\n') {
                        content.push('\n');
                    }
                    match out.status {
                        Some(s) => content.push_str(&format!("exit status {s}")),
                        None => content.push_str("exit status unknown (killed by a signal)"),
                    }
                } else if content.is_empty() {
                    content.push_str("(no output)");
                }
                let result = if ok {
                    ToolResult::ok(id, content)
                } else {
                    ToolResult::error(id, content)
                };
                Call {
                    result,
                    outcome: Outcome::Completed { status: out.status },
                }
            }
            Err(e) => {
                rec.error = Some(e.code());
                let partial = e.output();
                rec.output_bytes = Some(partial.len() as u64);
                // What the executor dropped while it streamed is counted in the marker here
                // too: a command that timed out after endless output says how much was cut.
                let mut content = if partial.is_empty() {
                    String::new()
                } else {
                    let out = Output::without_status(partial.to_vec()).with_gap(e.gap().cloned());
                    self.filter.filter_output(&out)
                };
                if !content.is_empty() && !content.ends_with('\n') {
                    content.push('\n');
                }
                content.push_str(&e.to_string());
                Call {
                    result: ToolResult::error(id, content),
                    outcome: Outcome::Failed { code: e.code() },
                }
            }
        }
    }

    fn invalid(&mut self, id: &str, command: Option<&str>, e: InputError) -> Call {
        let mut rec = AuditRecord::new(id);
        rec.action = "invalid";
        rec.command = command.map(|c| self.filter.filter(c.as_bytes()));
        let call = Call {
            result: ToolResult::error(id, e.to_string()),
            outcome: Outcome::Invalid,
        };
        rec.finish(&call, Duration::ZERO);
        self.audit(&rec);
        call
    }

    fn sync_cwd(&mut self) {
        if let Some(cwd) = self.executor.cwd() {
            if cwd.is_absolute() {
                self.context.cwd = cwd;
            }
        }
    }

    fn audit(&mut self, rec: &AuditRecord) {
        if let Some(log) = self.audit.as_mut() {
            // Never block or drop the call over the log: report and go on.
            if let Err(e) = log.record(rec) {
                eprintln!("shellgate: {e}");
            }
        }
    }
}

/// Whether a block is a call: `tool_use` or `server_tool_use`.
fn is_call(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("tool_use" | "server_tool_use")
    )
}

fn refused(id: &str, command: &str, decision: &Decision, note: Option<&str>) -> Call {
    let mut content = report::for_model(command, decision);
    if let Some(note) = note {
        content.push('\n');
        content.push_str(note);
    }
    Call {
        result: ToolResult::error(id, content),
        outcome: Outcome::Refused {
            verdict: decision.verdict,
        },
    }
}
