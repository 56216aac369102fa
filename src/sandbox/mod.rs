//! The kernel sandbox of the reference executor: the session's own world (a jail), built from
//! the policy.
//!
//! - [`SandboxSpec::from_policy`]: what a policy grants in a context (roots, network, limits,
//!   protected paths), as data that crosses the process boundary to the launcher.
//! - [`plan`]: spec → [`JailPlan`](plan::JailPlan), the mount view and namespaces bubblewrap
//!   builds, printable with `policy-check sandbox --print-plan`.
//! - [`cgroup`]: one cgroup per session (memory, processes, CPU), and the end-of-call kill.
//! - [`landlock`] and [`seccomp`]: the second wall, applied inside the jail.
//! - [`launch`]: the launcher (`policy-check sandbox`), the one entry point the session uses.
//! - [`contain`]: whatever a session starts ends with it.
//!
//! The session's shell starts as
//! `policy-check sandbox --spec JSON --tmp DIR --cgroup DIR... -- bash ...`:
//! 1. stage 1 (a child of the guard, unconfined): parent-death signal, joins the session's
//!    cgroup, builds the plan, runs `bwrap ARGS -- policy-check sandbox --stage2 ... -- bash`;
//! 2. bubblewrap: new user, mount, PID, IPC, UTS, network and cgroup namespaces, the mount view
//!    of the plan, no capabilities, `setsid()`, parent-death signal;
//! 3. stage 2 (inside): rlimits, Landlock, seccomp, then `exec` of the shell.
//!
//! A policy with `[sandbox] mode = "off"` still starts through the launcher for containment
//! (its own PID namespace, parent-death signals), without the jail.

pub mod cgroup;
pub mod contain;
pub mod landlock;
pub mod launch;
pub mod plan;
pub(crate) mod seccomp;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::codes::ReasonCode;
use crate::evaluate::{Context, SandboxState};
use crate::policy::sandbox::{SandboxLimits, SandboxMode, SandboxRoot};
use crate::policy::{PathAnchor, Policy};

pub use landlock::{landlock_available, ETC_SECRETS, SYSTEM_DEVICES, SYSTEM_READ};
pub use launch::{confine_and_exec, launch};

/// Why the sandbox cannot be set up. The code is stable.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel or the machine lacks something the sandbox needs (Landlock, bubblewrap,
    /// a cgroup hierarchy).
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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SandboxSpec {
    /// Apply Landlock (off: only containment and limits).
    pub landlock: bool,
    /// Run inside the bubblewrap jail (the policy's `mode = "enforce"`).
    #[serde(default)]
    pub jail: bool,
    /// Readable (and executable) roots, besides the system directories.
    pub read: Vec<PathBuf>,
    /// Writable (and readable) roots, besides the private temporary directory.
    pub write: Vec<PathBuf>,
    /// TCP connect and bind allowed (and, in the jail, the host's network namespace).
    pub network: bool,
    /// Resource limits.
    pub limits: SandboxLimits,
    /// `$HOME` (an empty tmpfs in the jail, with the granted entries).
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// The workspace roots.
    #[serde(default)]
    pub workspace: Vec<PathBuf>,
    /// Paths mounted read-only over the writable roots ([`protect`]).
    #[serde(default)]
    pub protected: Vec<PathBuf>,
    /// The bubblewrap binary.
    #[serde(default)]
    pub bwrap: Option<PathBuf>,
}

impl SandboxSpec {
    /// The spec a policy asks for in a context: `[paths] read`/`write` (their literal
    /// prefixes), `[sandbox]` roots, network and limits, the protected paths that exist in
    /// the workspace. Landlock and the jail are on when the policy's mode is `enforce`.
    pub fn from_policy(policy: &Policy, ctx: &Context) -> SandboxSpec {
        let sb = &policy.sandbox;
        let mut spec = SandboxSpec {
            landlock: sb.mode == SandboxMode::Enforce,
            jail: sb.mode == SandboxMode::Enforce,
            network: sb.network,
            limits: sb.limits,
            home: Some(ctx.home.clone()),
            workspace: ctx.workspace.clone(),
            bwrap: find_bwrap(),
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
        spec.protected = protect(policy, ctx);
        spec
    }

    /// The launcher arguments that express this spec (before `--tmp` and `--`).
    pub fn to_args(&self) -> Vec<OsString> {
        let json = serde_json::to_string(self).unwrap_or_default();
        vec!["--spec".into(), json.into()]
    }
}

/// Where `bwrap` is: `SHELLGATE_BWRAP` when set (tests point it at a missing file to see the
/// refusal), else the first `bwrap` on `PATH`.
pub fn find_bwrap() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SHELLGATE_BWRAP") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
}

/// Whether the jail can be built here: Landlock, and bubblewrap installed.
pub fn jail_available() -> Result<(), SandboxError> {
    landlock_available()?;
    if find_bwrap().is_none() {
        return Err(SandboxError::Unavailable(
            "bubblewrap (bwrap) is not installed: the session's jail is built with it \
             (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
                .into(),
        ));
    }
    Ok(())
}

/// For `serve` and `run`: a policy whose `[sandbox] mode` is `enforce` needs bubblewrap; its
/// absence is a refusal to start (`sandbox-unavailable`, with how to install it), never a
/// session without its jail.
pub fn bwrap_required(policy: &Policy) -> Result<(), SandboxError> {
    if policy.sandbox.mode != SandboxMode::Enforce || find_bwrap().is_some() {
        return Ok(());
    }
    Err(SandboxError::Unavailable(
        "bubblewrap (bwrap) is not installed: the session's jail is built with it \
         (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
            .into(),
    ))
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

/// Parts of a git directory that stay read-only in the jail: what git obeys to run programs
/// or to find another repository (hooks, config, `info/` with its attributes and excludes,
/// `commondir`, submodules' and worktrees' own git directories). Everything else git writes
/// for `add`, `commit`, `checkout`, `merge`, `stash`, `rebase` stays writable: `objects/`,
/// `refs/`, `logs/`, `index`, `HEAD`, `packed-refs`, `ORIG_HEAD`, `FETCH_HEAD`,
/// `COMMIT_EDITMSG`, `MERGE_*`, `rebase-*`, the `*.lock` files.
pub const GIT_READ_ONLY: &[&str] = &[
    "hooks",
    "config",
    "config.worktree",
    "info",
    "commondir",
    "modules",
    "worktrees",
];

/// The protected paths of a policy that exist in the context's workspaces, to be mounted
/// read-only in the jail: each `[paths] protected` pattern `{workspace}/**/NAME` (or
/// `{workspace}/NAME`) at each workspace root (`shellgate*.toml` by its matches), and the
/// read-only parts of each workspace's `.git` ([`GIT_READ_ONLY`]; a `.git` that is a file or a
/// link, pointing git elsewhere, is itself protected). The patterns for a bare repository's
/// shape (`HEAD`, `objects`, `config`) apply only where the workspace root is one.
pub fn protect(policy: &Policy, ctx: &Context) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in &ctx.workspace {
        let bare = w.join("HEAD").is_file() && w.join("objects").is_dir();
        for p in &policy.paths.protected {
            if p.anchor != PathAnchor::Workspace {
                continue;
            }
            let Some(rest) = p.text.strip_prefix("{workspace}/") else {
                continue;
            };
            let rest = rest.strip_prefix("**/").unwrap_or(rest);
            if rest.ends_with("/**") || rest.is_empty() || rest.starts_with("**") {
                continue; // the directory itself is protected by its own pattern
            }
            if ["HEAD", "objects", "config"].contains(&rest) && !bare {
                continue;
            }
            let (dir, name) = match rest.rsplit_once('/') {
                Some((d, n)) => (w.join(d), n),
                None => (w.clone(), rest),
            };
            if dir.to_string_lossy().contains(['*', '?', '[', '{']) {
                continue;
            }
            if name.contains(['*', '?']) {
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for e in entries.flatten() {
                        if wildcard(name, &e.file_name().to_string_lossy()) {
                            out.push(e.path());
                        }
                    }
                }
            } else {
                let path = dir.join(name);
                if std::fs::symlink_metadata(&path).is_ok() {
                    out.push(path);
                }
            }
        }
        let git = w.join(".git");
        match std::fs::symlink_metadata(&git) {
            Ok(m) if m.is_dir() => {
                for part in GIT_READ_ONLY {
                    let p = git.join(part);
                    if std::fs::symlink_metadata(&p).is_ok() {
                        out.push(p);
                    }
                }
            }
            Ok(_) => out.push(git),
            Err(_) => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `*` and `?` wildcards over a whole name.
fn wildcard(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The evaluation state a policy's sandbox gives on this machine: `Enforced` only when
/// Landlock and bubblewrap are both there.
pub fn state_for(policy: &Policy) -> SandboxState {
    match policy.sandbox.mode {
        SandboxMode::Off => SandboxState::Off,
        SandboxMode::Enforce => match jail_available() {
            Ok(()) => SandboxState::Enforced,
            Err(_) => SandboxState::Unavailable,
        },
    }
}

/// Confine the calling thread with Landlock to `spec`'s roots (the file tool's worker).
pub(crate) fn restrict_this_thread(spec: &SandboxSpec) -> Result<(), SandboxError> {
    landlock::restrict_this_thread(spec)
}

#[cfg(test)]
mod tests {
    use super::wildcard;

    #[test]
    fn wildcards_match_whole_names() {
        assert!(wildcard("shellgate*.toml", "shellgate.toml"));
        assert!(wildcard("shellgate*.toml", "shellgate-dev.toml"));
        assert!(!wildcard("shellgate*.toml", "shellgate.toml.bak"));
        assert!(!wildcard("shellgate*.toml", "xshellgate.toml"));
    }
}
