//! How a [`BashSession`](super::BashSession) is started: [`SessionConfig`], its resource
//! limits, stream redaction, the sandbox launcher, and the environment allowlist.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::redact::RuleSet;
use crate::sandbox::SandboxSpec;

/// The variables copied from the parent's environment (when set). Everything else is cleared.
pub const ENV_ALLOWLIST: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER"];

/// `PATH` when the parent has none.
pub(super) const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Resource limits for the session and every process it starts; `None` leaves a limit as
/// inherited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceLimits {
    /// CPU seconds per process (`ulimit -t`).
    pub cpu_seconds: Option<u64>,
    /// Virtual memory per process, in bytes (`ulimit -v`, rounded up to KiB).
    pub memory_bytes: Option<u64>,
    /// Largest file a process may write, in bytes (`ulimit -f`, rounded up to KiB).
    pub file_size_bytes: Option<u64>,
    /// Processes of the user (`ulimit -u`; not enforced for root).
    pub processes: Option<u64>,
}

impl ResourceLimits {
    pub(super) fn script(&self) -> String {
        let kib = |b: u64| b.div_ceil(1024);
        let mut s = String::new();
        let mut add = |flag: &str, v: Option<u64>| {
            if let Some(v) = v {
                s.push_str(&format!("ulimit -{flag} {v} || exit 97\n"));
            }
        };
        add("t", self.cpu_seconds);
        add("v", self.memory_bytes.map(kib));
        add("f", self.file_size_bytes.map(kib));
        add("u", self.processes);
        s
    }
}

/// Redaction applied to a command's output as it streams, before it is capped.
///
/// Capping keeps the start and the end of a long output and discards the middle; redacting
/// first means a secret cut by that gap (a private-key block, say) cannot leave a part of
/// itself unrecognised. Redaction is idempotent, so the [`Guard`](crate::middleware::Guard)'s own filter
/// may redact again.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum StreamRedaction {
    /// No redaction in the session: output is capped as it comes.
    Off,
    /// The built-in credential rules (the default).
    #[default]
    Builtin,
    /// These rules.
    Rules(Arc<RuleSet>),
}

/// How a [`BashSession`](super::BashSession) is started and run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The directory the session starts (and restarts) in.
    pub cwd: PathBuf,
    /// How long one command may run before the session is killed and restarted.
    pub timeout: Duration,
    /// Bytes of output kept per command; the rest is counted and discarded.
    pub max_output: usize,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Variables set in the session besides [`ENV_ALLOWLIST`] (these win).
    pub env: Vec<(OsString, OsString)>,
    /// The bash binary (found on the parent's `PATH` when not a path).
    pub bash: PathBuf,
    /// Redaction of the output stream before it is capped.
    pub redaction: StreamRedaction,
    /// Start the shell through the sandbox launcher (Landlock, limits, its own PID
    /// namespace); `None` runs bash directly.
    pub launcher: Option<Launcher>,
    /// Let background jobs outlive the call that started them (the default). When `false`,
    /// every process a call started is killed when the call ends (by the process tree, so
    /// also those that left the process group).
    pub keep_background: bool,
}

/// How to start the shell through the sandbox launcher: `PROGRAM sandbox SPEC... --tmp DIR
/// [--cgroup DIR] -- bash --noprofile --norc` (see [`crate::sandbox`]).
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The `policy-check` binary (or any program with its `sandbox` subcommand).
    pub program: PathBuf,
    /// What the launcher enforces.
    pub spec: SandboxSpec,
}

impl SessionConfig {
    /// Defaults: a 30-second timeout, 256 KiB of output kept, built-in stream redaction, no
    /// resource limits, no extra variables, `bash` from `PATH`.
    pub fn new(cwd: impl Into<PathBuf>) -> SessionConfig {
        SessionConfig {
            cwd: cwd.into(),
            timeout: Duration::from_secs(30),
            max_output: 256 * 1024,
            limits: ResourceLimits::default(),
            env: Vec::new(),
            bash: PathBuf::from("bash"),
            redaction: StreamRedaction::default(),
            launcher: None,
            keep_background: true,
        }
    }

    /// Start the shell through the sandbox launcher.
    pub fn launcher(mut self, launcher: Launcher) -> SessionConfig {
        self.launcher = Some(launcher);
        self
    }

    /// Whether background jobs outlive their call.
    pub fn keep_background(mut self, keep: bool) -> SessionConfig {
        self.keep_background = keep;
        self
    }

    /// Set the timeout.
    pub fn timeout(mut self, timeout: Duration) -> SessionConfig {
        self.timeout = timeout;
        self
    }

    /// Set how many bytes of output are kept per command.
    pub fn max_output(mut self, bytes: usize) -> SessionConfig {
        self.max_output = bytes;
        self
    }

    /// Set the resource limits.
    pub fn limits(mut self, limits: ResourceLimits) -> SessionConfig {
        self.limits = limits;
        self
    }

    /// Add a variable to the session's environment.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> SessionConfig {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Set how output is redacted as it streams.
    pub fn redaction(mut self, redaction: StreamRedaction) -> SessionConfig {
        self.redaction = redaction;
        self
    }

    /// Use another bash binary.
    pub fn bash(mut self, bash: impl Into<PathBuf>) -> SessionConfig {
        self.bash = bash.into();
        self
    }
}
