//! The kernel sandbox of the reference executor: what a command may do once it runs.
//!
//! The session's shell starts through a small launcher, `policy-check sandbox [SPEC] -- bash
//! ...`, in two stages (so that no `unsafe` `pre_exec` is needed):
//!
//! 1. [`launch`] (the launcher process, a child of the guard): asks the kernel for SIGTERM
//!    when its parent dies (`PR_SET_PDEATHSIG`; it then kills the shell and cleans up), joins the session's pids cgroup when there
//!    is one, makes a new PID namespace (`unshare(CLONE_NEWPID)`), and starts stage 2 (itself
//!    again) as the first process of that namespace, then waits for it.
//! 2. [`confine_and_exec`] (PID 1 of the namespace): SIGKILL when stage 1 dies, resource
//!    limits (`setrlimit`), Landlock (`no_new_privs`, filesystem rules, TCP, scoped signals
//!    and abstract UNIX sockets), a seccomp filter for what Landlock cannot express (UDP, raw
//!    and packet sockets, io_uring), then `exec` of the shell.
//!
//! So the shell is the init of its own PID namespace: every process it starts, including
//! one that left the process group (`setsid`, double forks, `timeout`), is reparented to it,
//! and when it dies the kernel kills them all. SIGKILL of the guard itself reaches stage 1
//! as SIGTERM (parent-death signal), which kills the shell and removes the session's
//! temporary directory and cgroup; should stage 1 be killed outright, the shell's own
//! parent-death signal (SIGKILL) still ends the namespace.
//!
//! What Landlock allows is derived from the policy ([`SandboxSpec::from_policy`]): reads
//! under the literal prefix of each `[paths] read` pattern, writes under each `[paths]
//! write` one, the `[sandbox] read`/`write` roots, a private temporary directory, and the
//! system directories programs need (`/usr`, `/lib*`, `/etc` without its secrets, `/proc`,
//! a few devices). `[paths] deny_read`/`deny_write` carve-outs stay lexical: Landlock only
//! grants.

use std::ffi::OsString;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::Signal;

use crate::codes::ReasonCode;
use crate::evaluate::{Context, SandboxState};
use crate::policy::sandbox::{SandboxLimits, SandboxMode, SandboxRoot};
use crate::policy::{PathAnchor, Policy};

/// The Landlock ABI the sandbox needs: filesystem with truncate and device ioctls (v5), TCP
/// (v4), scoped signals and abstract UNIX sockets (v6).
const ABI_NEEDED: ABI = ABI::V6;

/// Why the sandbox cannot be set up. The code is stable.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks Landlock or a feature the sandbox needs.
    #[error("sandbox-unavailable: {0}")]
    Unavailable(String),
    /// Setting up a limit, a namespace or the shell failed.
    #[error("sandbox-setup: {0}")]
    Setup(String),
}

impl SandboxError {
    /// The stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            SandboxError::Unavailable(_) => ReasonCode::SandboxUnavailable.as_str(),
            SandboxError::Setup(_) => "sandbox-setup",
        }
    }
}

/// What the launcher enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Apply Landlock (off: only containment and limits).
    pub landlock: bool,
    /// Readable (and executable) roots, besides the system directories.
    pub read: Vec<PathBuf>,
    /// Writable (and readable) roots, besides the private temporary directory.
    pub write: Vec<PathBuf>,
    /// TCP connect and bind allowed.
    pub network: bool,
    /// Resource limits.
    pub limits: SandboxLimits,
}

/// Directories every program needs to read (and run from).
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc",
];

/// Devices every program may read and write.
pub const SYSTEM_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Entries of `/etc` that are never readable (secrets): matched against the name below `/etc`.
pub const ETC_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "master.passwd",
    "security",
    "ssl/private",
    "krb5.keytab",
    "credstore",
    "credstore.encrypted",
    "ssh/ssh_host_*_key",
];

impl SandboxSpec {
    /// The spec a policy asks for in a context: `[paths] read`/`write` (their literal
    /// prefixes), `[sandbox]` roots, network and limits. Landlock is on when the policy's
    /// mode is `enforce`.
    pub fn from_policy(policy: &Policy, ctx: &Context) -> SandboxSpec {
        let sb = &policy.sandbox;
        let mut spec = SandboxSpec {
            landlock: sb.mode == SandboxMode::Enforce,
            network: sb.network,
            limits: sb.limits,
            ..SandboxSpec::default()
        };
        for p in &policy.paths.read {
            spec.read.extend(pattern_roots(p.anchor, &p.text, ctx));
        }
        for p in &policy.paths.write {
            spec.write.extend(pattern_roots(p.anchor, &p.text, ctx));
        }
        for r in &sb.read {
            spec.read.extend(root_paths(r, ctx));
        }
        for r in &sb.write {
            spec.write.extend(root_paths(r, ctx));
        }
        spec.read.sort();
        spec.read.dedup();
        spec.write.sort();
        spec.write.dedup();
        spec
    }

    /// The launcher arguments that express this spec (before `--tmp` and `--`).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        if !self.landlock {
            a.push("--no-landlock".into());
        }
        for p in &self.read {
            a.push("--read".into());
            a.push(p.into());
        }
        for p in &self.write {
            a.push("--write".into());
            a.push(p.into());
        }
        a.push("--network".into());
        a.push(if self.network { "on" } else { "off" }.into());
        let l = &self.limits;
        for (flag, v) in [
            ("--cpu-seconds", l.cpu_seconds),
            ("--address-space", l.address_space),
            ("--processes", l.processes),
            ("--file-size", l.file_size),
            ("--open-files", l.open_files),
        ] {
            if let Some(v) = v {
                a.push(flag.into());
                a.push(v.to_string().into());
            }
        }
        a
    }
}

/// The roots of a `[paths]` pattern: its anchor followed by the components before the first
/// glob character.
fn pattern_roots(anchor: PathAnchor, text: &str, ctx: &Context) -> Vec<PathBuf> {
    let rest = match anchor {
        PathAnchor::Workspace => text.strip_prefix("{workspace}"),
        PathAnchor::Home => text
            .strip_prefix("{home}")
            .or_else(|| text.strip_prefix('~')),
        PathAnchor::Root => Some(text),
        PathAnchor::OutputDir => text.strip_prefix("{output_dir}"),
    }
    .unwrap_or("");
    let literal: Vec<&str> = rest
        .split('/')
        .filter(|c| !c.is_empty())
        .take_while(|c| !c.contains(['*', '?', '[', '{', '\\']))
        .collect();
    bases(anchor, ctx)
        .into_iter()
        .map(|b| literal.iter().fold(b, |p, c| p.join(c)))
        .collect()
}

fn root_paths(root: &SandboxRoot, ctx: &Context) -> Vec<PathBuf> {
    bases(root.anchor, ctx)
        .into_iter()
        .map(|b| {
            if root.rest.is_empty() {
                b
            } else {
                b.join(&root.rest)
            }
        })
        .collect()
}

fn bases(anchor: PathAnchor, ctx: &Context) -> Vec<PathBuf> {
    match anchor {
        PathAnchor::Workspace => ctx.workspace.clone(),
        PathAnchor::Home => vec![ctx.home.clone()],
        PathAnchor::Root => vec![PathBuf::from("/")],
        // The directory every call's `$OUTPUT_DIR` is made in, when the session has one.
        PathAnchor::OutputDir => ctx.output_dir.iter().cloned().collect(),
    }
}

/// Whether this kernel can enforce the sandbox: a Landlock ruleset with every feature the
/// sandbox needs can be created (nothing is restricted by asking).
///
/// `SHELLGATE_NO_LANDLOCK` set in the environment makes it answer as a kernel without
/// Landlock would (only ever stricter: to see the fail-closed behaviour on any machine).
pub fn landlock_available() -> Result<(), SandboxError> {
    if std::env::var_os("SHELLGATE_NO_LANDLOCK").is_some() {
        return Err(SandboxError::Unavailable(
            "SHELLGATE_NO_LANDLOCK is set: treated as a kernel without Landlock".into(),
        ));
    }
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_NEEDED))
        .and_then(|r| r.handle_access(AccessNet::from_all(ABI_NEEDED)))
        .and_then(|r| r.scope(Scope::from_all(ABI_NEEDED)))
        .and_then(|r| r.create())
        .map(drop)
        .map_err(|e| SandboxError::Unavailable(format!("Landlock ABI v6 is needed: {e}")))
}

/// The evaluation state a policy's sandbox gives on this machine.
pub fn state_for(policy: &Policy) -> SandboxState {
    match policy.sandbox.mode {
        SandboxMode::Off => SandboxState::Off,
        SandboxMode::Enforce => match landlock_available() {
            Ok(()) => SandboxState::Enforced,
            Err(_) => SandboxState::Unavailable,
        },
    }
}

/// Stage 1 of the launcher (see the [module docs](self)): returns the exit status to exit
/// with. `stage2` is the command that runs stage 2 (this program again, with the same spec
/// and `--stage2`). When the shell is gone (it exited, or SIGTERM, SIGINT or SIGHUP came:
/// SIGTERM is also what the launcher gets when its parent dies), the launcher removes `tmp`
/// and `cgroup` before it exits, so that even `kill -9` of the guard leaves nothing behind.
pub fn launch(
    tmp: Option<&Path>,
    cgroup: Option<&Path>,
    mut stage2: Command,
) -> Result<i32, SandboxError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
        .map_err(|e| SandboxError::Setup(format!("PR_SET_PDEATHSIG: {e}")))?;
    if let Some(dir) = cgroup {
        std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).map_err(|e| {
            SandboxError::Setup(format!("cannot join the cgroup {}: {e}", dir.display()))
        })?;
    }
    // Without a PID namespace (not root, no user namespaces) containment falls back to the
    // process group and the parent-death signals; the guard's own checks still apply.
    let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID);
    let mut child = stage2
        .spawn()
        .map_err(|e| SandboxError::Setup(format!("cannot start the sandboxed shell: {e}")))?;
    // The shell is the init of its namespace: killing it ends every process in there. (If
    // this launcher is killed before the handler is in place, the shell's own parent-death
    // signal does the same; only the clean-up is lost.)
    let shell = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = crate::middleware::contain::on_termination_signals(move |_| {
        let _ = nix::sys::signal::kill(shell, Signal::SIGKILL);
    });
    let status = child
        .wait()
        .map_err(|e| SandboxError::Setup(format!("cannot wait for the shell: {e}")))?;
    clean_up(tmp, cgroup);
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// Remove the session's temporary directory, leave its cgroup and remove it (once the
/// processes of the namespace are gone).
fn clean_up(tmp: Option<&Path>, cgroup: Option<&Path>) {
    if let Some(t) = tmp {
        let _ = std::fs::remove_dir_all(t);
    }
    let Some(dir) = cgroup else { return };
    if let Some(parent) = dir.parent() {
        let _ = std::fs::write(parent.join("cgroup.procs"), std::process::id().to_string());
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::fs::remove_dir(dir).is_err() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Stage 2 of the launcher: limits, Landlock, then `exec` of `program`. Returns only on
/// failure.
pub fn confine_and_exec(
    spec: &SandboxSpec,
    tmp: Option<&Path>,
    program: &[OsString],
) -> SandboxError {
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
        return SandboxError::Setup(format!("PR_SET_PDEATHSIG: {e}"));
    }
    if let Err(e) = apply_limits(&spec.limits) {
        return e;
    }
    if spec.landlock {
        if let Err(e) = restrict(spec, tmp) {
            return e;
        }
        if !spec.network {
            if let Err(e) = no_udp_or_raw_sockets() {
                return e;
            }
        }
    } else if let Err(e) = nix::sys::prctl::set_no_new_privs() {
        return SandboxError::Setup(format!("PR_SET_NO_NEW_PRIVS: {e}"));
    }
    let Some((first, rest)) = program.split_first() else {
        return SandboxError::Setup("no program to run".into());
    };
    let e = Command::new(first).args(rest).exec();
    SandboxError::Setup(format!("cannot run {}: {e}", Path::new(first).display()))
}

fn apply_limits(l: &SandboxLimits) -> Result<(), SandboxError> {
    for (res, v) in [
        (Resource::RLIMIT_CPU, l.cpu_seconds),
        (Resource::RLIMIT_AS, l.address_space),
        (Resource::RLIMIT_NPROC, l.processes),
        (Resource::RLIMIT_FSIZE, l.file_size),
        (Resource::RLIMIT_NOFILE, l.open_files),
    ] {
        if let Some(v) = v {
            setrlimit(res, v, v)
                .map_err(|e| SandboxError::Setup(format!("setrlimit {res:?} {v}: {e}")))?;
        }
    }
    Ok(())
}

/// What one rule may do.
#[derive(Clone, Copy)]
enum Grant {
    Read,
    ReadWrite,
}

fn restrict(spec: &SandboxSpec, tmp: Option<&Path>) -> Result<(), SandboxError> {
    let unavailable = |e: landlock::RulesetError| SandboxError::Unavailable(e.to_string());
    let mut rules: Vec<(PathBuf, Grant)> = Vec::new();
    for p in SYSTEM_READ {
        rules.push((PathBuf::from(p), Grant::Read));
    }
    rules.extend(etc_entries().into_iter().map(|p| (p, Grant::Read)));
    for p in SYSTEM_DEVICES {
        rules.push((PathBuf::from(p), Grant::ReadWrite));
    }
    rules.extend(spec.read.iter().map(|p| (p.clone(), Grant::Read)));
    rules.extend(spec.write.iter().map(|p| (p.clone(), Grant::ReadWrite)));
    if let Some(t) = tmp {
        rules.push((t.to_path_buf(), Grant::ReadWrite));
    }
    let all = AccessFs::from_all(ABI_NEEDED);
    let read = AccessFs::from_read(ABI_NEEDED);
    let file_only = AccessFs::from_file(ABI_NEEDED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(unavailable)?;
    if !spec.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_NEEDED))
            .map_err(unavailable)?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(ABI_NEEDED))
        .map_err(unavailable)?
        .create()
        .map_err(unavailable)?;
    for (path, grant) in rules {
        // Only directories, regular files and devices: a path that is missing, or that
        // resolves to a pipe or a socket (`/dev/stdout`), gets no rule.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let ft = meta.file_type();
        if !(ft.is_dir() || ft.is_file() || ft.is_char_device()) {
            continue;
        }
        let Ok(fd) = PathFd::new(&path) else { continue };
        let mut access: BitFlags<AccessFs> = match grant {
            Grant::Read => read,
            Grant::ReadWrite => all,
        };
        if !ft.is_dir() {
            access &= file_only;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| SandboxError::Setup(format!("{}: {e}", path.display())))?;
    }
    let status = created.restrict_self().map_err(unavailable)?;
    if status.ruleset != landlock::RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(SandboxError::Unavailable(format!(
            "Landlock is not fully enforced ({:?})",
            status.ruleset
        )));
    }
    Ok(())
}

/// Confine the calling thread (only it, and what it starts) with Landlock to `spec`'s roots:
/// the file tool's worker ([`super::files::LocalFiles::confined`]). No temporary directory.
pub(crate) fn restrict_this_thread(spec: &SandboxSpec) -> Result<(), SandboxError> {
    restrict(spec, None)
}

/// What Landlock cannot express, with seccomp (no `network`): `socket()` for UDP and raw
/// IPv4/IPv6 sockets and for packet sockets fails with EPERM, and so does `io_uring_setup`
/// (its socket operations would not pass through `socket()`).
fn no_udp_or_raw_sockets() -> Result<(), SandboxError> {
    use nix::libc;
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule,
    };
    let setup = |e: seccompiler::BackendError| SandboxError::Setup(format!("seccomp: {e}"));
    let cond = |arg: u8, op: Op, v: i32| Cond::new(arg, Len::Dword, op, v as u64).map_err(setup);
    let mut socket_rules = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
            socket_rules.push(
                SeccompRule::new(vec![
                    cond(0, Op::Eq, family)?,
                    // The type carries SOCK_NONBLOCK / SOCK_CLOEXEC in its high bits.
                    cond(1, Op::MaskedEq(0xf), kind)?,
                ])
                .map_err(setup)?,
            );
        }
    }
    socket_rules.push(SeccompRule::new(vec![cond(0, Op::Eq, libc::AF_PACKET)?]).map_err(setup)?);
    let rules = [
        (libc::SYS_socket, socket_rules),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| SandboxError::Unavailable(format!("seccomp: {e}")))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(setup)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(setup)?;
    seccompiler::apply_filter(&program)
        .map_err(|e| SandboxError::Unavailable(format!("seccomp: {e}")))
}

/// `/etc` without its secrets: each entry (one level down in `ssl` and `ssh`) not in
/// [`ETC_SECRETS`].
fn etc_entries() -> Vec<PathBuf> {
    let secret = |rel: &str| {
        ETC_SECRETS.iter().any(|s| match s.split_once('*') {
            Some((pre, post)) => rel.starts_with(pre) && rel.ends_with(post),
            None => rel == *s,
        })
    };
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/etc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if secret(&name) {
            continue;
        }
        if name == "ssl" || name == "ssh" {
            if let Ok(sub) = std::fs::read_dir(e.path()) {
                for s in sub.flatten() {
                    let rel = format!("{name}/{}", s.file_name().to_string_lossy());
                    if !secret(&rel) {
                        out.push(s.path());
                    }
                }
            }
            continue;
        }
        out.push(e.path());
    }
    out
}

/// A pids cgroup for one session (cgroup v1 `pids` hierarchy, or v2 where the root delegates
/// the `pids` controller): bounds the number of processes even for root, who ignores
/// RLIMIT_NPROC. Dropping it kills what is left inside and removes it.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// Make one with `pids.max = max`; `None` where no writable pids hierarchy exists.
    pub fn create(max: u64, name: &str) -> Option<PidsCgroup> {
        let v1 = Path::new("/sys/fs/cgroup/pids");
        let v2 = Path::new("/sys/fs/cgroup");
        let base = if v1.join("cgroup.procs").exists() {
            v1.to_path_buf()
        } else if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"))
        {
            v2.to_path_buf()
        } else {
            return None;
        };
        let dir = base.join(format!("shellgate-{name}"));
        std::fs::create_dir(&dir).ok()?;
        let cg = PidsCgroup { dir };
        std::fs::write(cg.dir.join("pids.max"), max.to_string()).ok()?;
        Some(cg)
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Pids of the processes inside.
    pub fn procs(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            for p in self.procs() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), Signal::SIGKILL);
            }
            if std::fs::remove_dir(&self.dir).is_ok() || std::time::Instant::now() >= until {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
