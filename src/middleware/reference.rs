//! The reference guard: a [`BashSession`] behind the policy, as `policy-check serve` and
//! `run` set it up ([`Guard::reference`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::executor::ExecError;
use super::filter::RedactThenTruncate;
use super::guard::Guard;
use super::session::{BashSession, SessionConfig};
use crate::evaluate::Context;
use crate::policy::Policy;
use crate::redact::RedactError;
use crate::truncate::TruncateConfig;

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
