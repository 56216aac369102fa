//! `[sandbox]`: how the reference executor confines what a command does once it runs.
//!
//! The raw table (as written) and its compiled form live here together so that the rest of
//! the policy code only names them. Validation is in `load/sandbox.rs` (a child of the
//! loader). The kernel side (Landlock, limits, containment) is
//! [`crate::sandbox`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::raw::RawProgram;
use super::{PathAnchor, ProgramRule, RuleRef};

/// `[sandbox]` as written.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawSandbox {
    /// "enforce": the session runs under Landlock (fail closed when the kernel lacks it);
    /// "off": no kernel sandbox (commands that need it are refused).
    #[schemars(with = "Option<SandboxModeName>")]
    pub mode: Option<Spanned<String>>,
    /// Extra directories (or files) readable by the session, besides `[paths] read` and the
    /// system directories: `{workspace}`, `{home}`, `~` or `/` followed by a literal path.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read: Vec<Spanned<String>>,
    /// Extra directories (or files) writable by the session, besides `[paths] write` and a
    /// private temporary directory.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub write: Vec<Spanned<String>>,
    /// The network: "off" (the default: no TCP connect or bind, no UDP or raw sockets) or "on".
    #[schemars(with = "Option<NetworkName>")]
    pub network: Option<Spanned<String>>,
    /// Resource limits of the session and every process it starts.
    pub limits: Option<RawSandboxLimits>,
    /// Program rules that apply only while the sandbox enforces: running workspace code
    /// (`python3 FILE.py`, `make`, `cc`). Tried when the ordinary rule does not allow a command.
    #[serde(default)]
    pub programs: BTreeMap<String, RawProgram>,
    /// The rule for a program run by a path inside the workspace (`./a.out`, `build/app`),
    /// allowed only while the sandbox enforces.
    pub workspace_binaries: Option<RawProgram>,
    /// Programs of `[sandbox.programs]` (and "workspace_binaries") whose words after the first
    /// operand are the script's own arguments, not the program's options (`python3 x.py -v`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub script_arguments: Vec<Spanned<String>>,
}

/// `[sandbox.limits]` as written.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawSandboxLimits {
    /// CPU seconds per process (RLIMIT_CPU).
    #[schemars(with = "Option<u64>")]
    pub cpu_seconds: Option<Spanned<i64>>,
    /// Address space per process, in bytes (RLIMIT_AS).
    #[schemars(with = "Option<u64>")]
    pub address_space: Option<Spanned<i64>>,
    /// Processes: a pids cgroup where available (root ignores RLIMIT_NPROC), and RLIMIT_NPROC.
    #[schemars(with = "Option<u64>")]
    pub processes: Option<Spanned<i64>>,
    /// Largest file a process may write, in bytes (RLIMIT_FSIZE).
    #[schemars(with = "Option<u64>")]
    pub file_size: Option<Spanned<i64>>,
    /// Open files per process (RLIMIT_NOFILE).
    #[schemars(with = "Option<u64>")]
    pub open_files: Option<Spanned<i64>>,
    /// Memory of the whole session, in bytes (the session cgroup's `memory.max`, which also
    /// counts its private `/tmp`). Default 4 GiB.
    #[schemars(with = "Option<u64>")]
    pub memory: Option<Spanned<i64>>,
    /// CPU of the whole session, in percent of one core (the cgroup's `cpu.max`). Default 200.
    #[schemars(with = "Option<u64>")]
    pub cpu_percent: Option<Spanned<i64>>,
    /// Size of the session's private `/tmp` (a tmpfs), in bytes. Default 1 GiB.
    #[schemars(with = "Option<u64>")]
    pub tmp_size: Option<Spanned<i64>>,
    /// "required" (the default): the session does not start without its cgroup
    /// (`sandbox-unavailable`); "optional": without a usable cgroup hierarchy the session runs
    /// with rlimits only, and processes are ended by walking the process tree.
    #[schemars(with = "Option<CgroupName>")]
    pub cgroup: Option<Spanned<String>>,
}

/// `[sandbox.limits] cgroup` (schema only).
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
#[allow(dead_code)]
pub(crate) enum CgroupName {
    /// No session without its cgroup.
    Required,
    /// rlimits only where no cgroup can be made.
    Optional,
}

/// `[sandbox] mode` (schema only).
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
#[allow(dead_code)]
pub(crate) enum SandboxModeName {
    /// Landlock and resource limits for everything the session runs.
    Enforce,
    /// No kernel sandbox.
    Off,
}

/// `[sandbox] network` (schema only).
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
#[allow(dead_code)]
pub(crate) enum NetworkName {
    /// No TCP connect or bind.
    Off,
    /// TCP unrestricted.
    On,
}

/// Whether the kernel sandbox is wanted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SandboxMode {
    /// No kernel sandbox (the default without a `[sandbox]` table).
    #[default]
    Off,
    /// Landlock and limits; where the kernel lacks Landlock, sandboxed commands are refused.
    Enforce,
}

/// A literal root of `[sandbox] read`/`write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRoot {
    /// As written.
    pub text: String,
    /// The anchor.
    pub anchor: PathAnchor,
    /// The path below the anchor (empty: the anchor itself).
    pub rest: String,
}

/// Resource limits; `None` leaves a limit as inherited (the cgroup's have defaults, see
/// [`SandboxLimits::memory_or_default`] and the like).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct SandboxLimits {
    /// RLIMIT_CPU, seconds.
    pub cpu_seconds: Option<u64>,
    /// RLIMIT_AS, bytes.
    pub address_space: Option<u64>,
    /// Processes (pids cgroup and RLIMIT_NPROC).
    pub processes: Option<u64>,
    /// RLIMIT_FSIZE, bytes.
    pub file_size: Option<u64>,
    /// RLIMIT_NOFILE.
    pub open_files: Option<u64>,
    /// The session cgroup's memory limit, bytes.
    pub memory: Option<u64>,
    /// The session cgroup's CPU limit, percent of one core.
    pub cpu_percent: Option<u64>,
    /// The private `/tmp`'s size, bytes.
    pub tmp_size: Option<u64>,
    /// A session may run without its cgroup.
    #[serde(default)]
    pub cgroup_optional: bool,
}

impl SandboxLimits {
    /// Default memory of a session: 4 GiB.
    pub const DEFAULT_MEMORY: u64 = 4 << 30;
    /// Default CPU: two cores.
    pub const DEFAULT_CPU_PERCENT: u64 = 200;
    /// Default processes of a session (the pids cgroup).
    pub const DEFAULT_PROCESSES: u64 = 1024;
    /// Default private `/tmp`: 1 GiB.
    pub const DEFAULT_TMP_SIZE: u64 = 1 << 30;

    /// `memory`, or its default.
    pub fn memory_or_default(&self) -> u64 {
        self.memory.unwrap_or(Self::DEFAULT_MEMORY)
    }
    /// `cpu_percent`, or its default.
    pub fn cpu_percent_or_default(&self) -> u64 {
        self.cpu_percent.unwrap_or(Self::DEFAULT_CPU_PERCENT)
    }
    /// `processes`, or its default.
    pub fn processes_or_default(&self) -> u64 {
        self.processes.unwrap_or(Self::DEFAULT_PROCESSES)
    }
    /// `tmp_size`, or its default.
    pub fn tmp_size_or_default(&self) -> u64 {
        self.tmp_size.unwrap_or(Self::DEFAULT_TMP_SIZE)
    }
}

/// `[sandbox]`, compiled (merged over includes: scalars override, lists extend).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// `mode`.
    pub mode: SandboxMode,
    /// Extra read roots.
    pub read: Vec<SandboxRoot>,
    /// Extra write roots.
    pub write: Vec<SandboxRoot>,
    /// TCP allowed.
    pub network: bool,
    /// Limits.
    pub limits: SandboxLimits,
    /// Rules for running workspace code, by program name.
    pub programs: BTreeMap<String, ProgramRule>,
    /// The rule for programs run by a path inside the workspace.
    pub workspace_binaries: Option<ProgramRule>,
    /// Programs whose words after the first operand belong to the script they run.
    pub script_arguments: std::collections::BTreeSet<String>,
    /// Where `mode` was set (for reasons).
    pub rule: Option<RuleRef>,
}
