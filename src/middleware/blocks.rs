//! The message blocks of a call and its answer: `tool_use` (and `server_tool_use`) in, the
//! bash tool's input, `tool_result` blocks and the user message that carries them out.
//!
//! For the bash tool, as the bash-tool documentation shapes them: the model sends `{"type": "tool_use", "id": "toolu_..", "name": "bash", "input": {...}}`
//! where `input` is `{"command": "..."}` or `{"restart": true}`; the application answers with
//! `{"type": "tool_result", "tool_use_id": "toolu_..", "content": "...", "is_error": bool}`,
//! every result of one turn in one user message, in order.
//!
//! [`ToolUse::input`] is kept as raw JSON: whether it is a valid bash input is decided by
//! [`BashInput::from_json`], so that a bad input becomes an `is_error` result instead of a
//! deserialisation failure that would drop the call.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name of the bash tool in `tool_use` blocks.
pub const BASH_TOOL_NAME: &str = "bash";

/// A `tool_use` block from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// `"tool_use"`, or `"server_tool_use"` (the code execution tool's calls).
    #[serde(rename = "type")]
    pub kind: String,
    /// The id the result must quote (`toolu_...`).
    pub id: String,
    /// The tool's name; the bash tool is [`BASH_TOOL_NAME`].
    pub name: String,
    /// The tool input, unvalidated: see [`BashInput::from_json`].
    #[serde(default)]
    pub input: Value,
}

impl ToolUse {
    /// A bash `tool_use` block running `command` (handy in tests and examples).
    pub fn bash(id: impl Into<String>, command: impl Into<String>) -> ToolUse {
        ToolUse {
            kind: "tool_use".to_string(),
            id: id.into(),
            name: BASH_TOOL_NAME.to_string(),
            input: serde_json::json!({ "command": command.into() }),
        }
    }

    /// Read a `tool_use` block from JSON. Only the envelope is checked here (`type` is
    /// `tool_use` or `server_tool_use`, `id` and `name` are strings); the input is checked by
    /// [`BashInput::from_json`].
    pub fn from_json(value: &Value) -> Result<ToolUse, InputError> {
        let obj = value.as_object().ok_or(InputError::NotAnObject {
            what: "a tool_use block",
        })?;
        let kind = match obj.get("type") {
            Some(Value::String(t)) if t == "tool_use" || t == "server_tool_use" => t.clone(),
            Some(Value::String(t)) => return Err(InputError::NotToolUse { found: t.clone() }),
            _ => {
                return Err(InputError::WrongType {
                    field: "type",
                    expected: "the string \"tool_use\" or \"server_tool_use\"",
                })
            }
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(InputError::WrongType {
                    field: "id",
                    expected: "a string",
                })
            }
        };
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(InputError::WrongType {
                    field: "name",
                    expected: "a string",
                })
            }
        };
        Ok(ToolUse {
            kind,
            id,
            name,
            input: obj.get("input").cloned().unwrap_or(Value::Null),
        })
    }
}

/// What a bash `tool_use` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BashInput {
    /// `{"command": "..."}`: run this in the session.
    Command(String),
    /// `{"restart": true}`: kill the session and start a fresh one.
    Restart,
}

impl BashInput {
    /// Validate a bash tool input. Accepted: `{"command": STRING}` (with `"restart": false`
    /// or absent) and `{"restart": true}` (with no command). Other keys are ignored.
    pub fn from_json(input: &Value) -> Result<BashInput, InputError> {
        let obj = input.as_object().ok_or(InputError::NotAnObject {
            what: "the bash tool input",
        })?;
        let restart = match obj.get("restart") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(InputError::WrongType {
                    field: "restart",
                    expected: "a boolean",
                })
            }
        };
        let command = match obj.get("command") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(InputError::WrongType {
                    field: "command",
                    expected: "a string",
                })
            }
        };
        match (command, restart) {
            (Some(_), true) => Err(InputError::CommandAndRestart),
            (Some(c), false) if c.trim().is_empty() => Err(InputError::EmptyCommand),
            (Some(c), false) => Ok(BashInput::Command(c)),
            (None, true) => Ok(BashInput::Restart),
            (None, false) => Err(InputError::MissingCommand),
        }
    }
}

/// Why a block or a tool input is not acceptable. Its text is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Something that must be a JSON object is not.
    #[error("Error: invalid input: {what} must be a JSON object")]
    NotAnObject {
        /// What was expected to be an object.
        what: &'static str,
    },
    /// A block whose `type` is not `tool_use`.
    #[error("Error: invalid input: expected a tool_use block, found type {found:?}")]
    NotToolUse {
        /// The type found.
        found: String,
    },
    /// A field with the wrong JSON type (or missing).
    #[error("Error: invalid input: `{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// Neither `command` nor `restart: true`.
    #[error("Error: invalid input: give either {{\"command\": \"...\"}} or {{\"restart\": true}}")]
    MissingCommand,
    /// A command that is empty or only whitespace.
    #[error("Error: invalid input: the command is empty")]
    EmptyCommand,
    /// Both a command and `restart: true`.
    #[error("Error: invalid input: give either a command or restart, not both")]
    CommandAndRestart,
    /// A `tool_use` for a tool this application does not have.
    #[error("Error: unknown tool {name:?}; the only tool here is \"bash\"")]
    UnknownTool {
        /// The tool name the model used.
        name: String,
    },
    /// A `tool_use` for a tool this application does not have, where it has several.
    #[error("Error: unknown tool {name:?}; the tools here are {available}")]
    UnknownToolOf {
        /// The tool name the model used.
        name: String,
        /// The tools there are, quoted, comma-separated.
        available: String,
    },
    /// The call is refused before it is read: too many calls in the last minute.
    #[error("Error: too many requests: at most {per_minute} calls per minute are answered; wait and try again")]
    TooManyRequests {
        /// The limit.
        per_minute: u32,
    },
    /// Input that is not JSON at all.
    #[error("Error: malformed JSON: {message}")]
    MalformedJson {
        /// The parser's message.
        message: String,
    },
}

/// The `"type"` tag of a tool result: always `tool_result`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolResultType {
    /// `"tool_result"`.
    #[default]
    #[serde(rename = "tool_result")]
    ToolResult,
}

/// A `tool_result` block for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: ToolResultType,
    /// The id of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The text the model sees.
    pub content: String,
    /// Whether the call failed (refused, invalid, timed out, nonzero exit status, ...).
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<String>, content: impl Into<String>) -> ToolResult {
        ToolResult {
            kind: ToolResultType::ToolResult,
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// An `is_error` result.
    pub fn error(tool_use_id: impl Into<String>, content: impl Into<String>) -> ToolResult {
        ToolResult {
            kind: ToolResultType::ToolResult,
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// The `"role"` of a [`UserMessage`]: always `user`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserRole {
    /// `"user"`.
    #[default]
    #[serde(rename = "user")]
    User,
}

/// One user message carrying every tool result of a turn, in the order of the `tool_use`s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Always `"user"`.
    pub role: UserRole,
    /// The results.
    pub content: Vec<super::ResultBlock>,
}

impl UserMessage {
    /// A user message with these results.
    pub fn new(content: Vec<super::ResultBlock>) -> UserMessage {
        UserMessage {
            role: UserRole::User,
            content,
        }
    }
}
