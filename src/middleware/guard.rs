//! The [`Guard`]: each call checked against the policy before the executor runs it, then
//! filtered and answered as a `tool_result` ([`Call`], [`Outcome`], [`Answer`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::approver::Approver;
use super::audit::{AuditLog, AuditRecord};
use super::authorize::Asked;
use super::blocks::{BashInput, InputError, ToolResult, ToolUse, UserMessage};
use super::code_execution::DEFAULT_MAX_OUTPUT_FILE_BYTES;
use super::executor::{Executor, Output};
use super::files::{FileTool, LocalFiles};
use super::filter::{OutputFilter, RedactThenTruncate};
use super::outputs::OutputFiles;
use super::shapes::{ResultBlock, ToolSet};
use super::snapshots::{Snapshotter, WriteCall};
use super::text_editor::EditorLimits;
use super::tool_calls;
use crate::evaluate::Context;
use crate::policy::{Policy, Verdict};
use crate::report;

/// How a call ended, beyond its result block.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Refused by the policy (deny, or ask without approval); the executor was not called.
    Refused {
        /// The policy's verdict.
        verdict: Verdict,
    },
    /// The call ran to completion: a command with this exit status (`None`: killed by a
    /// signal), a file operation of the text editor with `Some(0)`.
    Completed {
        /// The exit status.
        status: Option<i32>,
    },
    /// The call could not be done: the executor failed (timeout, session exit, ...:
    /// [`ExecError::code`](super::ExecError::code)), a file operation failed (its
    /// [`CodeExecutionErrorCode`](super::shapes::CodeExecutionErrorCode), such as
    /// `file_not_found`), or the rate limit was reached (`rate-limited`).
    Failed {
        /// What failed.
        code: &'static str,
    },
    /// The session was restarted (or restarting failed: see the result).
    Restarted,
    /// The call was not a valid call of an enabled tool.
    Invalid,
}

/// One handled call ([`Guard::handle`]): the result for the model and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Call {
    /// The result block, in the shape of the call's tool.
    pub result: ResultBlock,
    /// How it ended.
    pub outcome: Outcome,
}

/// What [`Guard::handle_json`] answers: a result block, or a user message of them. It
/// serialises as the bare block or message (what `policy-check serve` prints).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// The answer to one `tool_use` or `server_tool_use` block.
    Block(ResultBlock),
    /// The answer to a message's `content`: one result per call, in order.
    Message(UserMessage),
}

/// Why a message with a `content` array gets no answer when none of its blocks is a call
/// this guard answers (text only, or server tools the API ran): the user message
/// [`Guard::handle_json`] makes of it is empty, and a loop must not append it (the Messages
/// API refuses a user message with no content). `policy-check serve` answers this error, and
/// the Python `Guard.handle` raises it.
pub const NOTHING_TO_ANSWER: &str =
    "the message has no tool_use block to answer (nothing ran): append no user message for it";

/// Why a value got no [`Answer`] from [`Guard::handle_json`]: it is neither a call nor a
/// message with a `content` array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected a tool_use block or a message with a content array")]
pub struct NotACall;

/// Checks each call against a policy before the executor runs it; see the [module
/// docs](crate::middleware).
pub struct Guard<E> {
    pub(super) policy: Arc<Policy>,
    pub(super) context: Context,
    pub(super) executor: E,
    pub(super) filter: Box<dyn OutputFilter>,
    pub(super) approver: Option<Box<dyn Approver>>,
    pub(super) audit: Option<AuditLog>,
    pub(super) tools: ToolSet,
    pub(super) files: Box<dyn FileTool>,
    pub(super) editor_limits: EditorLimits,
    pub(super) outputs: Option<OutputFiles>,
    pub(super) max_output_file_bytes: u64,
    pub(super) rate: Option<tool_calls::RateLimit>,
    pub(super) snapshots: Option<Box<dyn Snapshotter>>,
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
            max_output_file_bytes: DEFAULT_MAX_OUTPUT_FILE_BYTES,
            rate: None,
            snapshots: None,
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

    /// Take a snapshot with `snapshotter` before every allowed call that may write (see
    /// [`Snapshotter`]); a call whose snapshot fails is refused with `snapshot-failed`.
    pub fn with_snapshots(mut self, snapshotter: impl Snapshotter + 'static) -> Guard<E> {
        self.snapshots = Some(Box::new(snapshotter));
        self
    }

    /// Snapshot before a call that may write: `Err(message)` when the snapshot failed and
    /// the call must not run.
    pub(super) fn snapshot_before(
        &mut self,
        tool_use_id: &str,
        tool: &str,
        command: Option<&str>,
    ) -> Result<(), (&'static str, String)> {
        let Some(s) = self.snapshots.as_mut() else {
            return Ok(());
        };
        let call = WriteCall {
            tool_use_id,
            tool,
            command,
        };
        s.before_write(&call).map_err(|e| {
            (
                e.code(),
                format!(
                    "Error: not run: the workspace snapshot that makes this call undoable failed ({}): {e}",
                    e.code()
                ),
            )
        })
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

    /// Answer one JSON value, as `policy-check serve` does: a `tool_use` or `server_tool_use`
    /// block gets its result block, in its tool's shape ([`Guard::handle`]); an object with a
    /// `content` array (an assistant message, a whole API response) gets one user message
    /// answering, in order, each `tool_use` in it and each `server_tool_use` of an enabled
    /// tool that it holds no result for (other blocks are skipped). A block that cannot be
    /// read gets an `is_error` result quoting its `id` when it has a string one. Anything
    /// else is [`NotACall`], and nothing ran.
    ///
    /// ```
    /// use serde_json::json;
    /// use shellgate::middleware::{from_fn, Guard, Output};
    /// use shellgate::{Context, Policy};
    ///
    /// let policy = Policy::from_toml("[programs.echo]\noperands = \"text\"\n", "p.toml")?;
    /// let executor = from_fn(|_: &str| Ok(Output::new(b"hi\n".to_vec(), 0)));
    /// let mut guard = Guard::new(policy, Context::new("/srv/project"), executor);
    /// let response = json!({"role": "assistant", "content": [
    ///     {"type": "text", "text": "Let me look."},
    ///     {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo hi"}},
    /// ]});
    /// let answer = serde_json::to_value(guard.handle_json(&response)?)?;
    /// assert_eq!(answer, json!({"role": "user", "content": [
    ///     {"type": "tool_result", "tool_use_id": "t1", "content": "hi\n", "is_error": false},
    /// ]}));
    /// assert!(guard.handle_json(&json!({"role": "assistant"})).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle_json(&mut self, value: &Value) -> Result<Answer, NotACall> {
        if is_call(value) {
            return Ok(Answer::Block(self.block_json(value)));
        }
        match value.get("content") {
            Some(Value::Array(blocks)) => Ok(Answer::Message(self.turn(blocks))),
            _ => Err(NotACall),
        }
    }

    /// One block given as JSON, in the shape of its tool.
    fn block_json(&mut self, block: &Value) -> ResultBlock {
        match ToolUse::from_json(block) {
            Ok(tool_use) => self.handle(&tool_use).result,
            Err(e) => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                self.invalid(id, None, e).result
            }
        }
    }

    /// Every call of a message's `content` that is ours to answer, as one user message.
    fn turn(&mut self, content: &[Value]) -> UserMessage {
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
        let results = calls.into_iter().map(|b| self.block_json(b)).collect();
        UserMessage::new(results)
    }

    /// One `bash` call (the tool is enabled): its input read, then run or refused.
    pub(super) fn bash(&mut self, tool_use: &ToolUse) -> Call {
        match BashInput::from_json(&tool_use.input) {
            Ok(input) => self.call(&tool_use.id, &input),
            Err(e) => {
                let command = tool_use.input.get("command").and_then(Value::as_str);
                self.invalid(&tool_use.id, command, e)
            }
        }
    }

    /// Handle a validated bash input.
    fn call(&mut self, tool_use_id: &str, input: &BashInput) -> Call {
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
            result: result.into(),
            outcome: Outcome::Restarted,
        }
    }

    fn command(&mut self, id: &str, command: &str, rec: &mut AuditRecord) -> Call {
        self.sync_cwd();
        let call = Asked { id, command };
        let decided = self.authorize(
            call,
            rec,
            |policy, ctx| policy.evaluate(ctx, command),
            |decision| report::for_model(command, decision),
        );
        if let Err(refusal) = decided {
            return Call {
                result: ToolResult::error(id, refusal.text).into(),
                outcome: Outcome::Refused {
                    verdict: refusal.verdict,
                },
            };
        }
        if crate::snapshot::may_write(command) {
            if let Err((code, text)) = self.snapshot_before(id, "bash", rec.command.as_deref()) {
                rec.error = Some(code);
                return Call {
                    result: ToolResult::error(id, text).into(),
                    outcome: Outcome::Failed { code },
                };
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
                    result: result.into(),
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
                    result: ToolResult::error(id, content).into(),
                    outcome: Outcome::Failed { code: e.code() },
                }
            }
        }
    }

    pub(super) fn invalid(&mut self, id: &str, command: Option<&str>, e: InputError) -> Call {
        let mut rec = AuditRecord::new(id);
        rec.action = "invalid";
        rec.command = command.map(|c| self.filter.filter(c.as_bytes()));
        let call = Call {
            result: ToolResult::error(id, e.to_string()).into(),
            outcome: Outcome::Invalid,
        };
        rec.finish(&call, Duration::ZERO);
        self.audit(&rec);
        call
    }

    pub(super) fn sync_cwd(&mut self) {
        if let Some(cwd) = self.executor.cwd() {
            if cwd.is_absolute() {
                self.context.cwd = cwd;
            }
        }
    }

    pub(super) fn audit(&mut self, rec: &AuditRecord) {
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
