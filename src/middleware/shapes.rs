//! The tool shapes a [`Guard`](super::Guard) answers besides the `bash` tool: the client-side
//! text editor tool and the code execution tool's two sub-tools, with their typed results.
//!
//! - `str_replace_based_edit_tool` (`{"type": "text_editor_20250728", ...}`): a client tool,
//!   answered with a plain [`ToolResult`] like `bash`.
//! - `bash_code_execution` and `text_editor_code_execution` (the code execution tool, when an
//!   application hosts its container itself): answered with a [`CodeExecutionResult`] whose
//!   `content` is a typed [`CodeExecutionContent`].
//!
//! Blocks of type `tool_use` and `server_tool_use` are both accepted for every name.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::blocks::{InputError, ToolResult};

/// The client-side text editor tool's name.
pub const TEXT_EDITOR_TOOL_NAME: &str = "str_replace_based_edit_tool";
/// The code execution tool's shell sub-tool.
pub const BASH_CODE_EXECUTION_NAME: &str = "bash_code_execution";
/// The code execution tool's file sub-tool.
pub const TEXT_EDITOR_CODE_EXECUTION_NAME: &str = "text_editor_code_execution";

/// Which tool shapes a guard answers (`serve --tools`). The default is `bash` alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSet {
    /// `bash`.
    pub bash: bool,
    /// `str_replace_based_edit_tool`.
    pub text_editor: bool,
    /// `bash_code_execution` and `text_editor_code_execution`.
    pub code_execution: bool,
}

impl Default for ToolSet {
    fn default() -> ToolSet {
        ToolSet {
            bash: true,
            text_editor: false,
            code_execution: false,
        }
    }
}

impl ToolSet {
    /// Every shape.
    pub fn all() -> ToolSet {
        ToolSet {
            bash: true,
            text_editor: true,
            code_execution: true,
        }
    }

    /// Parse `bash,text-editor,code-execution` (any of them, in any order).
    pub fn parse(list: &str) -> Result<ToolSet, String> {
        let mut set = ToolSet {
            bash: false,
            text_editor: false,
            code_execution: false,
        };
        for name in list.split(',').map(str::trim) {
            match name {
                "bash" => set.bash = true,
                "text-editor" => set.text_editor = true,
                "code-execution" => set.code_execution = true,
                other => {
                    return Err(format!(
                        "unknown tool {other:?}: expected bash, text-editor or code-execution"
                    ))
                }
            }
        }
        Ok(set)
    }

    /// The tool names this set answers, as the model uses them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.bash {
            names.push(super::blocks::BASH_TOOL_NAME);
        }
        if self.text_editor {
            names.push(TEXT_EDITOR_TOOL_NAME);
        }
        if self.code_execution {
            names.push(BASH_CODE_EXECUTION_NAME);
            names.push(TEXT_EDITOR_CODE_EXECUTION_NAME);
        }
        names
    }
}

/// What a text editor call asks for (both the client tool and `text_editor_code_execution`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorCommand {
    /// Show a file (with line numbers, optionally lines `start..=end`, `end == -1` for the
    /// last) or list a directory.
    View {
        /// The path.
        path: String,
        /// `[start, end]`, 1-based, inclusive.
        view_range: Option<(i64, i64)>,
    },
    /// Write a new file (or replace an existing one) with `file_text`.
    Create {
        /// The path.
        path: String,
        /// The whole text.
        file_text: String,
    },
    /// Replace the one occurrence of `old_str` with `new_str`.
    StrReplace {
        /// The path.
        path: String,
        /// Text that must occur exactly once.
        old_str: String,
        /// Its replacement (may be empty).
        new_str: String,
    },
    /// Insert `text` after line `insert_line` (0: at the top).
    Insert {
        /// The path.
        path: String,
        /// The line after which the text goes.
        insert_line: u64,
        /// The text.
        text: String,
    },
}

impl EditorCommand {
    /// The path the command acts on.
    pub fn path(&self) -> &str {
        match self {
            EditorCommand::View { path, .. }
            | EditorCommand::Create { path, .. }
            | EditorCommand::StrReplace { path, .. }
            | EditorCommand::Insert { path, .. } => path,
        }
    }

    /// `view`, `create`, `str_replace` or `insert`.
    pub fn name(&self) -> &'static str {
        match self {
            EditorCommand::View { .. } => "view",
            EditorCommand::Create { .. } => "create",
            EditorCommand::StrReplace { .. } => "str_replace",
            EditorCommand::Insert { .. } => "insert",
        }
    }

    /// Validate a text editor input: `command` and `path` strings, and the fields of that
    /// command with the right JSON types (`insert` takes `insert_text`, or `new_str` as older
    /// tool versions name it). Other keys are ignored.
    pub fn from_json(input: &Value) -> Result<EditorCommand, InputError> {
        let obj = input.as_object().ok_or(InputError::NotAnObject {
            what: "the text editor input",
        })?;
        let string = |field: &'static str| match obj.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(InputError::WrongType {
                field,
                expected: "a string",
            }),
        };
        let command = string("command")?;
        let path = string("path")?;
        if path.is_empty() || path.contains('\0') {
            return Err(InputError::WrongType {
                field: "path",
                expected: "a non-empty path without NUL bytes",
            });
        }
        Ok(match command.as_str() {
            "view" => {
                let view_range = match obj.get("view_range") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(a)) if a.len() == 2 => match (a[0].as_i64(), a[1].as_i64()) {
                        (Some(s), Some(e)) => Some((s, e)),
                        _ => return Err(range_error()),
                    },
                    Some(_) => return Err(range_error()),
                };
                EditorCommand::View { path, view_range }
            }
            "create" => EditorCommand::Create {
                path,
                file_text: string("file_text")?,
            },
            "str_replace" => {
                let old_str = string("old_str")?;
                if old_str.is_empty() {
                    return Err(InputError::WrongType {
                        field: "old_str",
                        expected: "a non-empty string",
                    });
                }
                let new_str = match obj.get("new_str") {
                    None | Some(Value::Null) => String::new(),
                    Some(_) => string("new_str")?,
                };
                EditorCommand::StrReplace {
                    path,
                    old_str,
                    new_str,
                }
            }
            "insert" => {
                let insert_line = obj.get("insert_line").and_then(Value::as_u64).ok_or(
                    InputError::WrongType {
                        field: "insert_line",
                        expected: "a line number (0 or more)",
                    },
                )?;
                let text = string("insert_text").or_else(|_| string("new_str"))?;
                EditorCommand::Insert {
                    path,
                    insert_line,
                    text,
                }
            }
            _ => {
                return Err(InputError::WrongType {
                    field: "command",
                    expected: "one of \"view\", \"create\", \"str_replace\", \"insert\"",
                })
            }
        })
    }
}

fn range_error() -> InputError {
    InputError::WrongType {
        field: "view_range",
        expected: "two integers [start, end] (end -1: to the last line)",
    }
}

/// The `"type"` of a code execution result block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeExecutionResultType {
    /// `bash_code_execution_tool_result`.
    BashCodeExecutionToolResult,
    /// `text_editor_code_execution_tool_result`.
    TextEditorCodeExecutionToolResult,
}

/// A result block of the code execution tool:
/// `{"type": "bash_code_execution_tool_result", "tool_use_id": ..., "content": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeExecutionResult {
    /// Which sub-tool it answers.
    #[serde(rename = "type")]
    pub kind: CodeExecutionResultType,
    /// The id of the `server_tool_use` (or `tool_use`) it answers.
    pub tool_use_id: String,
    /// The typed result.
    pub content: CodeExecutionContent,
}

/// The error codes of the code execution tool's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeExecutionErrorCode {
    /// The input is malformed, or the policy refused the call (its `error_message` says
    /// which rule).
    InvalidToolInput,
    /// The executor cannot do it (the session could not start, an I/O failure).
    Unavailable,
    /// `--max-calls-per-minute` was reached.
    TooManyRequests,
    /// The command timed out (the session was restarted).
    ExecutionTimeExceeded,
    /// A file the command left in `$OUTPUT_DIR` is larger than the cap (bash only).
    OutputFileTooLarge,
    /// The file does not exist (text editor only).
    FileNotFound,
}

/// A file a command left at the top of its `$OUTPUT_DIR`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFileRef {
    /// Always `bash_code_execution_output`.
    #[serde(rename = "type")]
    pub kind: OutputFileType,
    /// How the application finds the file (see [`super::OutputFiles`]).
    pub file_id: String,
}

/// The `"type"` of an [`OutputFileRef`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputFileType {
    /// `bash_code_execution_output`.
    #[default]
    #[serde(rename = "bash_code_execution_output")]
    BashCodeExecutionOutput,
}

/// The `content` of a [`CodeExecutionResult`], tagged by its `"type"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeExecutionContent {
    /// A command ran: its stdout and stderr apart, its status, and its output files.
    BashCodeExecutionResult {
        /// Standard output (redacted, truncated).
        stdout: String,
        /// Standard error (redacted, truncated).
        stderr: String,
        /// The exit status (-1 when killed by a signal).
        return_code: i32,
        /// One entry per top-level file of `$OUTPUT_DIR`.
        content: Vec<OutputFileRef>,
    },
    /// A command could not run or finish.
    BashCodeExecutionToolResultError {
        /// What went wrong.
        error_code: CodeExecutionErrorCode,
        /// Why, for the model (shellgate's extension of the documented shape: the rule that
        /// refused a call, the field that is malformed, ...).
        error_message: String,
    },
    /// A file's text, or a directory listing (one entry a line).
    TextEditorCodeExecutionViewResult {
        /// Always `text` (images and PDFs are not viewed).
        file_type: String,
        /// The text (redacted, truncated).
        content: String,
        /// Lines shown.
        num_lines: Option<u64>,
        /// First line shown (1-based).
        start_line: Option<u64>,
        /// Lines in the file.
        total_lines: Option<u64>,
    },
    /// A file was written.
    TextEditorCodeExecutionCreateResult {
        /// Whether it existed before (and was replaced).
        is_file_update: bool,
    },
    /// One occurrence was replaced.
    TextEditorCodeExecutionStrReplaceResult {
        /// First changed line before (1-based).
        old_start: u64,
        /// Lines of the changed region before.
        old_lines: u64,
        /// First changed line after.
        new_start: u64,
        /// Lines of the changed region after.
        new_lines: u64,
        /// The change in diff form: `-` lines before, `+` lines after (redacted).
        lines: Vec<String>,
    },
    /// A file operation could not be done.
    TextEditorCodeExecutionToolResultError {
        /// What went wrong.
        error_code: CodeExecutionErrorCode,
        /// Why, for the model.
        error_message: String,
    },
}

impl CodeExecutionErrorCode {
    /// The code as it is serialised (`file_not_found`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CodeExecutionErrorCode::InvalidToolInput => "invalid_tool_input",
            CodeExecutionErrorCode::Unavailable => "unavailable",
            CodeExecutionErrorCode::TooManyRequests => "too_many_requests",
            CodeExecutionErrorCode::ExecutionTimeExceeded => "execution_time_exceeded",
            CodeExecutionErrorCode::OutputFileTooLarge => "output_file_too_large",
            CodeExecutionErrorCode::FileNotFound => "file_not_found",
        }
    }
}

impl CodeExecutionResult {
    /// The error code, when the content is an error.
    pub(crate) fn error_code(&self) -> Option<CodeExecutionErrorCode> {
        match self.content {
            CodeExecutionContent::BashCodeExecutionToolResultError { error_code, .. }
            | CodeExecutionContent::TextEditorCodeExecutionToolResultError { error_code, .. } => {
                Some(error_code)
            }
            _ => None,
        }
    }

    /// A `bash_code_execution_tool_result_error`.
    pub fn bash_error(
        tool_use_id: &str,
        error_code: CodeExecutionErrorCode,
        error_message: impl Into<String>,
    ) -> CodeExecutionResult {
        CodeExecutionResult {
            kind: CodeExecutionResultType::BashCodeExecutionToolResult,
            tool_use_id: tool_use_id.to_string(),
            content: CodeExecutionContent::BashCodeExecutionToolResultError {
                error_code,
                error_message: error_message.into(),
            },
        }
    }

    /// A `text_editor_code_execution_tool_result_error`.
    pub fn editor_error(
        tool_use_id: &str,
        error_code: CodeExecutionErrorCode,
        error_message: impl Into<String>,
    ) -> CodeExecutionResult {
        CodeExecutionResult {
            kind: CodeExecutionResultType::TextEditorCodeExecutionToolResult,
            tool_use_id: tool_use_id.to_string(),
            content: CodeExecutionContent::TextEditorCodeExecutionToolResultError {
                error_code,
                error_message: error_message.into(),
            },
        }
    }

    /// Whether the content is an error.
    pub fn is_error(&self) -> bool {
        self.error_code().is_some()
    }
}

/// One block answering one call: a `tool_result` (bash, the text editor) or a code execution
/// result. It serialises as the bare block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResultBlock {
    /// A `tool_result`.
    Tool(ToolResult),
    /// A `bash_code_execution_tool_result` or `text_editor_code_execution_tool_result`.
    CodeExecution(CodeExecutionResult),
}

impl ResultBlock {
    /// The id of the call it answers.
    pub fn tool_use_id(&self) -> &str {
        match self {
            ResultBlock::Tool(r) => &r.tool_use_id,
            ResultBlock::CodeExecution(r) => &r.tool_use_id,
        }
    }

    /// Whether the call failed (an `is_error` tool_result, or an error content).
    pub fn is_error(&self) -> bool {
        match self {
            ResultBlock::Tool(r) => r.is_error,
            ResultBlock::CodeExecution(r) => r.is_error(),
        }
    }

    /// The `tool_result`, when it is one.
    pub fn as_tool_result(&self) -> Option<&ToolResult> {
        match self {
            ResultBlock::Tool(r) => Some(r),
            ResultBlock::CodeExecution(_) => None,
        }
    }

    /// The block as a `tool_result`: itself, or a code execution result's content as JSON
    /// text (`is_error` when it is an error).
    pub fn into_tool_result(self) -> ToolResult {
        match self {
            ResultBlock::Tool(r) => r,
            ResultBlock::CodeExecution(r) => {
                let text = serde_json::to_string(&r.content).unwrap_or_default();
                if r.is_error() {
                    ToolResult::error(r.tool_use_id, text)
                } else {
                    ToolResult::ok(r.tool_use_id, text)
                }
            }
        }
    }
}

impl From<ToolResult> for ResultBlock {
    fn from(r: ToolResult) -> ResultBlock {
        ResultBlock::Tool(r)
    }
}

impl From<CodeExecutionResult> for ResultBlock {
    fn from(r: CodeExecutionResult) -> ResultBlock {
        ResultBlock::CodeExecution(r)
    }
}
