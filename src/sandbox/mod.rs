//! The kernel sandbox of the reference executor: the session's own world (a jail), built from
//! the policy.
//!
//! - [`SandboxSpec::from_policy`]: what a policy grants in a context (roots, network, limits,
//!   protected paths), as data that crosses the process boundary to the launcher.
//! - [`plan`]: spec → [`JailPlan`](plan::JailPlan), the mount view and namespaces bubblewrap
//!   builds, printable with `policy-check sandbox --print-plan`.
//! - [`cgroup`]: one cgroup per session (memory, processes, CPU), and the end-of-call kill.
//! - [`landlock`] and `seccomp`: the second wall, applied inside the jail.
//! - `launch`: the launcher (`policy-check sandbox`), the one entry point the session uses.
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

use crate::codes::{ReasonCode, RuntimeCode};
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
            SandboxError::Setup(_) => RuntimeCode::SandboxSetup.as_str(),
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
    /// The policy's protected names (`[paths] protected` below `{workspace}`), with whether
    /// each is a directory: found in the workspaces each time a jail is built ([`protect`]).
    #[serde(default)]
    pub protected_names: Vec<(String, bool)>,
    /// The bubblewrap binary.
    #[serde(default)]
    pub bwrap: Option<PathBuf>,
    /// Whether that bubblewrap has `--tmp-overlay` (asked once, when the spec is made).
    #[serde(default)]
    pub overlay: bool,
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
        spec.protected_names = protected_names(policy);
        spec.overlay = spec.jail && spec.bwrap.as_deref().is_some_and(plan::bwrap_has_overlay);
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

/// How far [`protect`] looks for protected names below a workspace root (directories deep),
/// and at most how many directories it reads: bounded, so a huge tree costs bounded time.
pub const PROTECT_DEPTH: usize = 4;
/// See [`PROTECT_DEPTH`].
pub const PROTECT_DIRS: usize = 5000;

/// Directories [`protect`] does not descend into (build output, dependencies, git's store).
const PROTECT_SKIP: &[&str] = &[
    "node_modules",
    "target",
    ".git",
    "__pycache__",
    ".venv",
    "venv",
];

/// A protected name that does not exist yet: mounted over as an empty read-only file or
/// directory in the jail (bubblewrap makes the mount point; the launcher removes it after the
/// session if it is still empty), so the session cannot create it either.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placeholder {
    /// The path.
    pub path: PathBuf,
    /// A directory (else a file).
    pub dir: bool,
}

/// The protected names of a policy's `[paths] protected` that concern the jail: each
/// `{workspace}/**/NAME` (or `{workspace}/NAME`, or `.../DIR/NAME`) pattern, with whether it
/// names a directory (a `NAME/**` pattern beside it).
pub fn protected_names(policy: &Policy) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = Vec::new();
    let rests: Vec<&str> = policy
        .paths
        .protected
        .iter()
        .filter(|p| p.anchor == PathAnchor::Workspace)
        .filter_map(|p| p.text.strip_prefix("{workspace}/"))
        .map(|r| r.strip_prefix("**/").unwrap_or(r))
        .collect();
    for rest in &rests {
        if rest.ends_with("/**") || rest.is_empty() || rest.starts_with("**") {
            continue;
        }
        let dir = rests.iter().any(|r| *r == format!("{rest}/**"));
        names.push((rest.to_string(), dir));
    }
    for rest in &rests {
        // `.husky/**` alone: the directory.
        if let Some(d) = rest.strip_suffix("/**") {
            if !d.contains(['*', '?']) && !names.iter().any(|(n, _)| n == d) {
                names.push((d.to_string(), true));
            }
        }
    }
    names
}

/// The protected paths of a policy in the context's workspaces, to be mounted read-only in
/// the jail, and the placeholders for those missing at each workspace root.
///
/// - each protected name ([`protected_names`]) that exists in a workspace root or a
///   directory below it (to [`PROTECT_DEPTH`] levels, at most [`PROTECT_DIRS`] directories,
///   not inside `node_modules`, `target`, `.git` and the like); a glob name
///   (`shellgate*.toml`) by its matches;
/// - at each workspace root, each missing name as a [`Placeholder`] (a glob name by its
///   literal form, `shellgate.toml`; a missing parent, `.vscode` of `.vscode/tasks.json`,
///   as a whole directory);
/// - the read-only parts of each repository's `.git` ([`GIT_READ_ONLY`]; a `.git` that is a
///   file or a link, pointing git elsewhere, is itself protected);
/// - the names for a bare repository's shape (`HEAD`, `objects`, `config`) only where a
///   directory is one (`HEAD` and `objects/` both there).
///
/// A protected path reached through a symbolic link (the path itself, or a directory between
/// it and the workspace root) is an error: bubblewrap would follow it, mounting whatever it
/// points to, and the session could replace the link.
pub fn protect(
    names: &[(String, bool)],
    workspaces: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<Placeholder>), SandboxError> {
    let mut out = Vec::new();
    let mut holders = Vec::new();
    for w in workspaces {
        let mut frontier = vec![(w.clone(), 0usize)];
        let mut read = 0;
        while let Some((d, depth)) = frontier.pop() {
            read += 1;
            if read > PROTECT_DIRS {
                break;
            }
            protect_in(&d, names, &mut out, (&d == w).then_some(&mut holders));
            if depth >= PROTECT_DEPTH {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && !PROTECT_SKIP.iter().any(|s| name == *s) {
                    frontier.push((e.path(), depth + 1));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    holders.sort_by(|a: &Placeholder, b| a.path.cmp(&b.path));
    holders.dedup();
    // A placeholder below another (`.vscode` for both of its files) is covered by it, and so
    // is one inside a directory that is protected whole (`.cargo/config` when `.cargo`
    // exists and is mounted read-only: nothing can be created there, and bubblewrap could
    // not make the placeholder's mount point in it).
    let all = holders.clone();
    holders.retain(|h| {
        !all.iter()
            .any(|o| o.dir && h.path != o.path && h.path.starts_with(&o.path))
            && !out
                .iter()
                .any(|p| h.path != *p && h.path.starts_with(p) && p.is_dir())
    });
    for p in out.iter().chain(holders.iter().map(|h| &h.path)) {
        let Some(w) = workspaces.iter().find(|w| p.starts_with(w)) else {
            continue;
        };
        let mut at = p.as_path();
        while at != w.as_path() {
            if std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(SandboxError::Setup(format!(
                    "the protected path {} is reached through the symbolic link {}: the jail \
                     cannot mount it read-only (remove the link, or unprotect the path)",
                    p.display(),
                    at.display()
                )));
            }
            let Some(up) = at.parent() else { break };
            at = up;
        }
    }
    Ok((out, holders))
}

/// The protected names in one directory `d`; `holders`: also the placeholders for missing ones.
fn protect_in(
    d: &std::path::Path,
    names: &[(String, bool)],
    out: &mut Vec<PathBuf>,
    mut holders: Option<&mut Vec<Placeholder>>,
) {
    let exists = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok();
    let bare = d.join("HEAD").is_file() && d.join("objects").is_dir();
    for (rest, dir) in names {
        if ["HEAD", "objects", "config"].contains(&rest.as_str()) {
            if bare {
                out.push(d.join(rest));
            }
            continue;
        }
        let (parent, name) = match rest.rsplit_once('/') {
            Some((p, n)) => (d.join(p), n),
            None => (d.to_path_buf(), rest.as_str()),
        };
        if parent.to_string_lossy().contains(['*', '?', '[', '{']) {
            continue;
        }
        let mut found = false;
        if name.contains(['*', '?']) {
            if let Ok(entries) = std::fs::read_dir(&parent) {
                for e in entries.flatten() {
                    if wildcard(name, &e.file_name().to_string_lossy()) {
                        out.push(e.path());
                        found = true;
                    }
                }
            }
        } else if exists(&parent.join(name)) {
            out.push(parent.join(name));
            found = true;
        }
        // Only names inside `.git` get a placeholder. One in the work tree is a file git sees:
        // `git status` listed a dozen untracked placeholders in every session, `git add -A`
        // committed empty `.npmrc`, `.envrc` and `shellgate.toml` files, `git clean -fdx`
        // failed on their mount points, and an empty `Makefile`, `Cargo.toml` or `build.rs`
        // changes what the build tools do. A missing protected name in the work tree can
        // therefore be created by code in the jail (the policy layer still refuses it to
        // shell commands and file tools, and every call's snapshot records it): README.
        let holder_ok = rest.starts_with(".git/");
        if let (false, true, Some(h)) = (found, holder_ok, holders.as_deref_mut()) {
            let literal: String = name.chars().filter(|c| !matches!(c, '*' | '?')).collect();
            if exists(&parent) {
                h.push(Placeholder {
                    path: parent.join(literal),
                    dir: *dir,
                });
            } else {
                // The highest missing ancestor below `d`, as a directory.
                let mut top = parent.clone();
                while let Some(up) = top.parent() {
                    if exists(up) || up == d {
                        break;
                    }
                    top = up.to_path_buf();
                }
                h.push(Placeholder {
                    path: top,
                    dir: true,
                });
            }
        }
    }
    let git = d.join(".git");
    match std::fs::symlink_metadata(&git) {
        Ok(m) if m.is_dir() => {
            for part in GIT_READ_ONLY {
                let p = git.join(part);
                if exists(&p) {
                    out.push(p);
                } else if *part == "hooks" {
                    if let Some(h) = holders.as_deref_mut() {
                        h.push(Placeholder { path: p, dir: true });
                    }
                }
            }
        }
        Ok(_) => out.push(git),
        Err(_) => {}
    }
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
    use super::{protect, wildcard, Placeholder};

    fn names() -> Vec<(String, bool)> {
        vec![
            (".claude".into(), true),
            (".npmrc".into(), false),
            (".vscode/tasks.json".into(), false),
            ("shellgate*.toml".into(), false),
        ]
    }

    #[test]
    fn protect_finds_existing_names_and_holds_the_place_of_missing_ones_in_git() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().to_path_buf();
        std::fs::create_dir_all(ws.join("sub/.claude")).unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::write(ws.join("shellgate-dev.toml"), "").unwrap();
        let (found, holders) = protect(&names(), std::slice::from_ref(&ws)).unwrap();
        for p in [
            "sub/.claude",
            ".git/hooks",
            ".git/config",
            "shellgate-dev.toml",
        ] {
            assert!(found.contains(&ws.join(p)), "{p}: {found:?}");
        }
        let want = |p: &str, dir: bool| Placeholder {
            path: ws.join(p),
            dir,
        };
        // A missing name in the work tree gets no placeholder (git would see it); one inside
        // `.git` would, but `.git/hooks` exists and is protected whole here.
        assert!(!holders.contains(&want(".claude", true)), "{holders:?}");
        assert!(!holders.contains(&want(".npmrc", false)), "{holders:?}");
        assert!(!holders.contains(&want(".vscode", true)), "{holders:?}");
        assert!(
            holders.iter().all(|h| h.path.starts_with(ws.join(".git"))),
            "{holders:?}"
        );
        // Only at the workspace root.
        assert!(!holders.iter().any(|h| h.path.starts_with(ws.join("sub"))));
    }

    #[test]
    fn a_protected_path_behind_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("tasks.json"), "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.join(".vscode")).unwrap();
        let e = protect(&names(), &[ws]).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }

    #[test]
    fn wildcards_match_whole_names() {
        assert!(wildcard("shellgate*.toml", "shellgate.toml"));
        assert!(wildcard("shellgate*.toml", "shellgate-dev.toml"));
        assert!(!wildcard("shellgate*.toml", "shellgate.toml.bak"));
        assert!(!wildcard("shellgate*.toml", "xshellgate.toml"));
    }
}
