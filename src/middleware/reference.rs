//! The reference guard: a [`BashSession`] behind the policy, as `policy-check serve` and
//! `run` set it up ([`Guard::reference`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::executor::ExecError;
use super::files::LocalFiles;
use super::filter::RedactThenTruncate;
use super::guard::Guard;
use super::outputs::OutputFiles;
use super::sandbox::{self, SandboxSpec};
use super::session::{BashSession, Launcher, SessionConfig};
use super::shapes::ToolSet;
use crate::evaluate::{Context, SandboxState};
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

/// How [`Guard::reference_tools`] sets up the reference guard with its tool shapes: what
/// `policy-check serve` and the Python package's `Guard` both use, so that they answer alike.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ReferenceSetup {
    /// The tool shapes answered.
    pub tools: ToolSet,
    /// The sandbox launcher (the `policy-check` binary, or any program with its `sandbox`
    /// subcommand); `None`: bash starts directly, with no kernel sandbox (commands that need
    /// it are refused with `sandbox-required`).
    pub launcher: Option<PathBuf>,
    /// Let background jobs outlive their call.
    pub keep_background: bool,
    /// The workspace roots, when narrower than `cwd` (empty: `cwd`).
    pub workspace: Vec<PathBuf>,
    /// Where code execution calls get their `$OUTPUT_DIR`s (with `tools.code_execution`;
    /// default: a temporary directory removed with the guard).
    pub outputs: Option<OutputFiles>,
    /// The largest `$OUTPUT_DIR` file returned.
    pub max_output_file_bytes: Option<u64>,
}

impl ReferenceSetup {
    /// `tools`, bash started directly, everything else default.
    pub fn new(tools: ToolSet) -> ReferenceSetup {
        ReferenceSetup {
            tools,
            ..ReferenceSetup::default()
        }
    }
}

impl Guard<BashSession> {
    /// The reference guard with the tool shapes of `setup.tools`, as `policy-check serve`
    /// runs it: the session under the launcher (its own PID namespace always; Landlock and
    /// limits when the policy's `[sandbox] mode` is `enforce`), the file tool confined by
    /// Landlock like the session when the sandbox enforces, code execution calls with a
    /// `$OUTPUT_DIR` among the sandbox's writable roots. `limits` adjusts the sandbox spec
    /// last (serve's limit options). Returns the spec the session runs under, if any.
    pub fn reference_tools(
        policy: impl Into<Arc<Policy>>,
        cwd: &Path,
        timeout: Duration,
        mut setup: ReferenceSetup,
        limits: impl FnOnce(&mut SandboxSpec),
    ) -> Result<(Guard<BashSession>, Option<SandboxSpec>), SetupError> {
        let policy = policy.into();
        let outputs = match setup.outputs.take() {
            Some(o) => Some(o),
            None if setup.tools.code_execution => Some(OutputFiles::temporary().map_err(|e| {
                SetupError::Configure(format!(
                    "cannot make the code execution outputs directory: {e}"
                ))
            })?),
            None => None,
        };
        let calls = outputs.as_ref().map(OutputFiles::calls_dir);
        let mut used = None;
        let p = policy.clone();
        let mut guard = Guard::reference_with(policy, cwd, timeout, |config, ctx| {
            let mut config = config.keep_background(setup.keep_background);
            if !setup.workspace.is_empty() {
                ctx.workspace = setup.workspace.clone();
            }
            let Some(program) = setup.launcher.clone() else {
                ctx.sandbox = SandboxState::Off;
                return Ok(config);
            };
            ctx.sandbox = sandbox::state_for(&p);
            ctx.output_dir = calls.clone();
            let mut spec = SandboxSpec::from_policy(&p, ctx);
            ctx.output_dir = None;
            if let Some(dir) = &calls {
                spec.write.push(dir.clone());
            }
            spec.landlock = ctx.sandbox == SandboxState::Enforced;
            limits(&mut spec);
            used = Some(spec.clone());
            config = config.launcher(Launcher { program, spec });
            Ok(config)
        })?;
        guard = guard.with_tools(setup.tools);
        if setup.tools.text_editor || setup.tools.code_execution {
            if let Some(spec) = used.as_ref().filter(|s| s.landlock) {
                let files = LocalFiles::confined(spec).map_err(|e| {
                    SetupError::Configure(format!("cannot confine the file tool: {e}"))
                })?;
                guard = guard.with_files(files);
            }
        }
        if let Some(o) = outputs {
            let max = setup
                .max_output_file_bytes
                .unwrap_or(super::code_execution::DEFAULT_MAX_OUTPUT_FILE_BYTES);
            guard = guard.with_output_files(o, max);
        }
        Ok((guard, used))
    }
}
