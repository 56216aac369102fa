//! [`CliError`]: why a `policy-check` command could not do its job (exit status 2), as
//! opposed to a verdict it reached (a refused command exits 1).

use std::path::PathBuf;

/// A failure of `policy-check` itself; `main` prints it after `policy-check: ` and exits 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A policy did not load: every problem, each with its code and `file:line:col`.
    #[error(transparent)]
    Policy(#[from] shellgate::PolicyError),
    /// A file or stream could not be read or written.
    #[error("{}: cannot {action}: {source}", .path.display())]
    Io {
        /// The file, or `stdin` / `stdout`.
        path: PathBuf,
        /// What was being done: `read`, `write`.
        action: &'static str,
        /// The failure.
        source: std::io::Error,
    },
    /// Anything else: bad input, a session or sandbox that could not start. The text says
    /// what and where.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// Reading `path` failed.
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> CliError {
        CliError::Io {
            path: path.into(),
            action: "read",
            source,
        }
    }

    /// Writing `path` failed.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> CliError {
        CliError::Io {
            path: path.into(),
            action: "write",
            source,
        }
    }
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::Failed(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        CliError::Failed(message.to_string())
    }
}
