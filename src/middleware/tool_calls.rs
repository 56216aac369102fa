//! The [`Guard`] answering every tool shape: which tools are enabled, the rate limit, and
//! the dispatch of each call to its tool ([`super::text_editor`], [`super::code_execution`]),
//! all under the same policy.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::audit::AuditRecord;
use super::blocks::{InputError, ToolResult, ToolUse, BASH_TOOL_NAME};
use super::files::FileTool;
use super::outputs::OutputFiles;
use super::shapes::{
    CodeExecutionErrorCode as Code, CodeExecutionResult, ToolSet, BASH_CODE_EXECUTION_NAME,
    TEXT_EDITOR_CODE_EXECUTION_NAME, TEXT_EDITOR_TOOL_NAME,
};
use super::text_editor::EditorLimits;
use super::{Call, Executor, Guard, Outcome};
use crate::codes::RuntimeCode;

/// Calls answered in the last minute, for `--max-calls-per-minute`.
#[derive(Debug)]
pub(crate) struct RateLimit {
    per_minute: u32,
    recent: VecDeque<Instant>,
}

impl RateLimit {
    /// Whether one more call may go ahead now (it is counted if so).
    fn admit(&mut self) -> bool {
        let now = Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60))
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.per_minute as usize {
            return false;
        }
        self.recent.push_back(now);
        true
    }
}

impl<E: Executor> Guard<E> {
    /// Answer the tools in `tools` (the default: `bash` alone); calls of others get an
    /// `is_error` result saying the tool is unknown.
    pub fn with_tools(mut self, tools: ToolSet) -> Guard<E> {
        self.tools = tools;
        self
    }

    /// Do the text editor's file operations with `files` (the default: [`super::LocalFiles`]
    /// in this process).
    pub fn with_files(mut self, files: impl FileTool + 'static) -> Guard<E> {
        self.files = Box::new(files);
        self
    }

    /// Limit the text editor tools.
    pub fn with_editor_limits(mut self, limits: EditorLimits) -> Guard<E> {
        self.editor_limits = limits;
        self
    }

    /// Make code execution calls' `$OUTPUT_DIR`s in `outputs`, and keep their files there
    /// (the default: a temporary [`OutputFiles`], made at the first call and removed with
    /// the guard). Files larger than `max_file_bytes` answer `output_file_too_large`.
    pub fn with_output_files(mut self, outputs: OutputFiles, max_file_bytes: u64) -> Guard<E> {
        self.outputs = Some(outputs);
        self.max_output_file_bytes = max_file_bytes;
        self
    }

    /// Where code execution calls' files are kept, once there is a place.
    pub fn output_files(&self) -> Option<&OutputFiles> {
        self.outputs.as_ref()
    }

    /// Answer at most `per_minute` calls in any 60 seconds; the others get
    /// `too_many_requests` (code execution) or an `is_error` result saying so.
    pub fn with_rate_limit(mut self, per_minute: u32) -> Guard<E> {
        self.rate = Some(RateLimit {
            per_minute,
            recent: VecDeque::new(),
        });
        self
    }

    /// Answer one call of any enabled tool, in its tool's shape, with how it ended: `bash`
    /// and `str_replace_based_edit_tool` with a `tool_result`, `bash_code_execution` and
    /// `text_editor_code_execution` with a [`CodeExecutionResult`]
    /// ([`ResultBlock::into_tool_result`](super::ResultBlock::into_tool_result) makes any of them a `tool_result`). Tools not
    /// enabled ([`Guard::with_tools`]) are unknown: an `is_error` result. This is the typed
    /// entry point; [`Guard::handle_json`] reads the JSON of a block or a whole message.
    ///
    /// ```
    /// use serde_json::json;
    /// use shellgate::middleware::{from_fn, Guard, Outcome, Output, ToolSet, ToolUse};
    /// use shellgate::{Context, Policy};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n")?;
    /// let policy = Policy::from_toml("[paths]\nread = [\"{workspace}/**\"]\n", "p.toml")?;
    /// let no_shell = from_fn(|_: &str| Ok(Output::new(Vec::new(), 0)));
    /// let mut guard = Guard::new(policy, Context::new(dir.path()), no_shell)
    ///     .with_tools(ToolSet::all());
    /// let view = |id: &str, path: &str| ToolUse {
    ///     kind: "tool_use".into(),
    ///     id: id.into(),
    ///     name: "str_replace_based_edit_tool".into(),
    ///     input: json!({"command": "view", "path": path}),
    /// };
    /// let shown = guard.handle(&view("t1", "notes.txt"));
    /// assert_eq!(shown.outcome, Outcome::Completed { status: Some(0) });
    /// let shown = shown.result.as_tool_result().unwrap();
    /// assert_eq!(shown.content, "     1\talpha\n     2\tbeta\n");
    /// let refused = guard.handle(&view("t2", "/etc/passwd"));
    /// assert!(matches!(refused.outcome, Outcome::Refused { .. }));
    /// let refused = refused.result.into_tool_result();
    /// assert!(refused.is_error && refused.content.contains("[path-read-outside]"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&mut self, tool_use: &ToolUse) -> Call {
        let id = tool_use.id.as_str();
        let name = tool_use.name.as_str();
        let enabled = match name {
            BASH_TOOL_NAME => self.tools.bash,
            TEXT_EDITOR_TOOL_NAME => self.tools.text_editor,
            BASH_CODE_EXECUTION_NAME | TEXT_EDITOR_CODE_EXECUTION_NAME => self.tools.code_execution,
            _ => false,
        };
        if !enabled {
            let e = self.unknown_tool(name);
            return self.invalid(id, None, e);
        }
        if let Some(rate) = self.rate.as_mut() {
            if !rate.admit() {
                let e = InputError::TooManyRequests {
                    per_minute: rate.per_minute,
                };
                let mut rec = AuditRecord::new(id);
                rec.action = RuntimeCode::RateLimited.as_str();
                rec.is_error = true;
                self.audit(&rec);
                let msg = e.to_string();
                let msg = msg.trim_start_matches("Error: ");
                let result = match name {
                    BASH_CODE_EXECUTION_NAME => {
                        CodeExecutionResult::bash_error(id, Code::TooManyRequests, msg).into()
                    }
                    TEXT_EDITOR_CODE_EXECUTION_NAME => {
                        CodeExecutionResult::editor_error(id, Code::TooManyRequests, msg).into()
                    }
                    _ => ToolResult::error(id, e.to_string()).into(),
                };
                return Call {
                    result,
                    outcome: Outcome::Failed {
                        code: RuntimeCode::RateLimited.as_str(),
                    },
                };
            }
        }
        match name {
            BASH_TOOL_NAME => self.bash(tool_use),
            BASH_CODE_EXECUTION_NAME => self.code_execution(id, &tool_use.input),
            _ => {
                let code = name == TEXT_EDITOR_CODE_EXECUTION_NAME;
                self.text_editor(id, &tool_use.input, code)
            }
        }
    }

    /// The error for a tool name that is not enabled.
    pub(super) fn unknown_tool(&self, name: &str) -> InputError {
        let names = self.tools.names();
        if names == [BASH_TOOL_NAME] {
            return InputError::UnknownTool {
                name: name.to_string(),
            };
        }
        InputError::UnknownToolOf {
            name: name.to_string(),
            available: names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}
