//! Middleware: what an agent application plugs between the model's `bash` tool calls and the
//! shell that runs them.
//!
//! A [`Guard`] wraps any [`Executor`] (the thing that runs one command). For each call it
//! evaluates the command against a [`Policy`](crate::Policy) with the session's real working directory, and
//!
//! - on **deny**, answers an `is_error` [`ToolResult`] saying what was refused, by which rule,
//!   and what is allowed instead ([`report::for_model`](crate::report::for_model)); the executor is **not** called;
//! - on **ask**, consults the [`Approver`], if one is configured; without one (the
//!   non-interactive default) or when it declines, the call is refused like a deny;
//! - on **allow**, runs the command, passes the output through the [`OutputFilter`]
//!   (redaction, then truncation) and answers with it.
//!
//! Two methods answer calls: [`Guard::handle`] takes a typed [`ToolUse`] of any enabled tool
//! and returns a [`Call`]: the result block in its tool's shape and the [`Outcome`] (refused,
//! completed with an exit status, failed, invalid) that `policy-check run` and the audit log
//! use. [`Guard::handle_json`] takes JSON as `policy-check serve` reads it (a `tool_use` or
//! `server_tool_use` block, or a message or response with a `content` array) and returns the
//! [`Answer`] serve prints, or [`NotACall`].
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
//! use shellgate::middleware::{from_fn, Guard, Outcome, Output, ToolUse};
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
//! assert!(matches!(refused.outcome, Outcome::Refused { .. }));
//! let refused = refused.result.into_tool_result();
//! assert!(refused.is_error && refused.content.contains("not run"));
//! let answer = guard.handle(&ToolUse::bash("toolu_02", "echo hi"));
//! assert_eq!(answer.outcome, Outcome::Completed { status: Some(0) });
//! let answer = answer.result.into_tool_result();
//! assert_eq!((answer.content.as_str(), answer.is_error), ("hi\n", false));
//! drop(guard);
//! assert_eq!(ran, ["echo hi"]); // the refused command never reached the executor
//! # Ok::<(), shellgate::PolicyError>(())
//! ```
//!
//! # Beside the bash tool: the text editor and code execution
//!
//! With [`Guard::with_tools`], the same guard answers the text editor tool
//! (`str_replace_based_edit_tool`) and the code execution tool's sub-tools
//! (`bash_code_execution`, `text_editor_code_execution`) in their own shapes
//! ([`shapes`], [`Guard::handle`]). File operations go through a [`FileTool`] (the reference
//! one is [`LocalFiles`]) beside the [`Executor`], and each path is checked first with
//! [`check_file_access`](crate::evaluate::check_file_access): the `[paths]` rules of shell
//! reads and writes, symlinks resolved. Code execution calls run with a fresh `$OUTPUT_DIR`
//! ([`OutputFiles`]) that the policy knows as `{output_dir}`.
//!
//! The reference executor is [`BashSession`]: one persistent bash process, as the bash-tool
//! documentation describes it, with a timeout that kills the whole process group, output
//! capped while it streams, resource limits and a controlled environment.

pub mod audit;
pub mod blocks;
pub mod files;
pub mod outputs;
pub mod session;
pub mod shapes;

// The kernel sandbox and process containment live in `crate::sandbox`; these names stay for
// the binary and the tests written against them.
#[doc(hidden)]
pub use crate::sandbox;
#[doc(hidden)]
pub use crate::sandbox::contain;

mod approver;
mod authorize;
mod code_execution;
mod executor;
mod filter;
mod guard;
mod reference;
mod snapshots;
mod text_editor;
mod tool_calls;

pub use approver::{ApprovalRequest, Approver};
pub use audit::{AuditError, AuditLog, AuditRecord};
pub use blocks::{BashInput, InputError, ToolResult, ToolUse, UserMessage, BASH_TOOL_NAME};
pub use executor::{from_fn, CodeOutput, ExecError, Executor, FnExecutor, Gap, Output};
pub use files::{FileTool, LocalFiles};
pub use filter::{OutputFilter, PassThrough, RedactThenTruncate};
pub use guard::NOTHING_TO_ANSWER;
pub use guard::{Answer, Call, Guard, NotACall, Outcome};
pub use outputs::OutputFiles;
pub use reference::{ReferenceSetup, SetupError};
pub use session::{BashSession, Launcher, ResourceLimits, SessionConfig, StreamRedaction};
pub use shapes::{CodeExecutionResult, EditorCommand, ResultBlock, ToolSet};
pub use snapshots::{Snapshotter, WriteCall};
pub use text_editor::EditorLimits;
