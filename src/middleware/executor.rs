//! The [`Executor`] seam: the thing that runs one command, what it returns ([`Output`],
//! [`CodeOutput`]) and how it fails ([`ExecError`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::codes::RuntimeCode;

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
    /// The session was killed on purpose while the command ran (end of input, a cancelled
    /// call, the client gone): the command and every process it started were killed.
    #[error(
        "Error: the command was stopped ({cause}): it and every process it started were killed"
    )]
    Stopped {
        /// Why, such as `end of input (--at-eof stop)`.
        cause: &'static str,
        /// Output captured before it was stopped.
        output: Vec<u8>,
        /// Where the executor discarded some of that output while it streamed.
        gap: Option<Gap>,
    },
}

impl ExecError {
    /// Output captured before the failure, if any.
    pub fn output(&self) -> &[u8] {
        match self {
            ExecError::Timeout { output, .. }
            | ExecError::SessionExited { output, .. }
            | ExecError::Stopped { output, .. } => output,
            _ => &[],
        }
    }

    /// Where the executor discarded part of [`ExecError::output`] while it streamed.
    pub fn gap(&self) -> Option<&Gap> {
        match self {
            ExecError::Timeout { gap, .. }
            | ExecError::SessionExited { gap, .. }
            | ExecError::Stopped { gap, .. } => gap.as_ref(),
            _ => None,
        }
    }

    /// A short stable name for the audit log: `timeout`, `session-exited`, `start`, `io`,
    /// `invalid-command`, `failed`, `unavailable`, `stopped`.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::Timeout { .. } => RuntimeCode::Timeout,
            ExecError::SessionExited { .. } => RuntimeCode::SessionExited,
            ExecError::Start(_) => RuntimeCode::Start,
            ExecError::Io(_) => RuntimeCode::Io,
            ExecError::InvalidCommand(_) => RuntimeCode::InvalidCommand,
            ExecError::Failed(_) => RuntimeCode::Failed,
            ExecError::Unavailable(_) => RuntimeCode::Unavailable,
            ExecError::Stopped { .. } => RuntimeCode::Stopped,
        }
        .as_str()
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
    /// [`Guard`](super::Guard) evaluates each command against it. The default: unknown.
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
/// working directory is unknown (commands are evaluated in the [`Context`](crate::Context)'s own `cwd`).
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
