//! Policy → jail plan: the world bubblewrap builds for a session, as data
//! ([`JailPlan`]), printable (`policy-check sandbox --print-plan`) and turned into bwrap's
//! arguments ([`JailPlan::bwrap_args`]).
//!
//! The view is built from explicit mounts on an empty root, so what the policy does not grant
//! is absent (`/run` and its sockets, `/sys`, `/home`, `/root`, `/var`, ...):
//! - the system directories read-only (`/usr`, `/bin`, `/sbin`, `/lib*`, `/opt`; symbolic links
//!   such as `/bin -> usr/bin` as links), `/etc` read-only with its secrets masked (an empty
//!   file over `shadow`, `gshadow`, SSH host keys and the like, an empty read-only directory over
//!   `sudoers.d`, `ssl/private`, ...);
//! - a private `/proc` (of the jail's PID namespace) and a minimal `/dev` (bwrap's `--dev`:
//!   null, zero, full, random, urandom, tty, pts, shm);
//! - a private `/tmp` (tmpfs of `tmp_size` bytes; `TMPDIR` points there) and `$HOME` an empty
//!   tmpfs, on which the granted entries are mounted;
//! - `[paths] read` and `[sandbox] read` roots read-only, `[paths] write` and `[sandbox]
//!   write` roots writable, parents before children;
//! - caches (write roots below `$HOME` outside the workspace: `~/.cargo/registry`, `~/.npm`,
//!   `~/.cache`) are the session's own: a copy-on-write overlay whose upper layer is discarded
//!   where bwrap has `--tmp-overlay` (0.10 and later), else read-only (bwrap 0.8 here);
//! - credential files are never mounted: `~/.npmrc` and `~/.gitconfig` are replaced by copies
//!   without their authentication lines, `~/.netrc`, `~/.git-credentials`, `~/.pypirc`,
//!   `~/.docker`, `~/.ssh`, `~/.aws`, `~/.gnupg` are left out even when granted;
//! - protected paths read-only over the writable roots, last (see [`super::protect`]); a
//!   protected name that does not exist yet gets an empty read-only file or directory over it
//!   (bubblewrap makes the mount point, an empty file or directory in the workspace, which
//!   the launcher removes after the session while it is still empty), so the session cannot
//!   create it either;
//! - the launcher itself read-only.

use std::path::{Path, PathBuf};

use super::landlock::{etc_secret, ETC_SECRETS};
use super::{SandboxError, SandboxSpec};

/// One step of the mount view, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// A host path at the same place, read-only.
    ReadOnly(PathBuf),
    /// A host path at the same place, writable.
    Writable(PathBuf),
    /// A cache: copy-on-write (bwrap `--tmp-overlay`) or read-only.
    Cache(PathBuf),
    /// A generated file (a credential file without its secrets) at a path.
    Generated {
        /// The generated copy, on the host.
        source: PathBuf,
        /// Where the jail sees it.
        path: PathBuf,
    },
    /// A symbolic link.
    Symlink {
        /// What it points to.
        target: PathBuf,
        /// The link.
        path: PathBuf,
    },
    /// An empty file over a secret file.
    MaskFile(PathBuf),
    /// An empty read-only directory over a secret directory.
    MaskDir(PathBuf),
    /// A private tmpfs of at most `size` bytes.
    Tmpfs {
        /// Its place.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// A protected path: read-only over a writable root.
    Protected(PathBuf),
    /// A protected name that does not exist: an empty read-only file or directory over it.
    Placeholder {
        /// The path.
        path: PathBuf,
        /// A directory (else a file).
        dir: bool,
        /// The empty file mounted (on the host).
        empty: PathBuf,
    },
    /// The PID namespace's `/proc`.
    Proc,
    /// The minimal `/dev`.
    Dev,
}

/// The jail of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailPlan {
    /// The mounts, in order.
    pub mounts: Vec<Mount>,
    /// The uid (and gid) inside, mapped to the host user running serve.
    pub uid: u32,
    /// The gid inside.
    pub gid: u32,
    /// The host's network namespace is shared (`network = "on"`).
    pub share_net: bool,
    /// Entries granted but left out (credential stores), with why.
    pub left_out: Vec<(PathBuf, &'static str)>,
    /// `$HOME` inside.
    pub home: Option<PathBuf>,
    /// Whether caches are copy-on-write (else read-only).
    pub overlay: bool,
    /// The placeholders among the mounts (removed after the session).
    pub placeholders: Vec<super::Placeholder>,
}

/// Credential stores never mounted, relative to `$HOME`.
pub const CREDENTIAL_STORES: &[&str] = &[
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".docker",
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".kube",
];

/// Files mounted as generated copies without their authentication lines.
pub const SANITIZED: &[&str] = &[".npmrc", ".gitconfig"];

/// The uid a jail runs as when the host user is root: unprivileged, mapped to root outside (so
/// the workspace's files, owned by root, are its own, and files it makes are root's).
pub const JAIL_UID_FOR_ROOT: u32 = 1000;

const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
];

/// Paths the jail provides itself (never bound from the host).
fn provided(p: &Path) -> bool {
    p == Path::new("/")
        || p == Path::new("/tmp")
        || ["/proc", "/dev", "/sys", "/run"]
            .iter()
            .any(|d| p.starts_with(d))
}

/// Whether bwrap at `bwrap` has `--tmp-overlay` (0.10 and later).
pub fn bwrap_has_overlay(bwrap: &Path) -> bool {
    std::process::Command::new(bwrap)
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("--tmp-overlay"))
        .unwrap_or(false)
}

impl JailPlan {
    /// The plan for `spec`, with generated files written into `gen` (the session's private
    /// host directory; `None`: credential files are left out), the launcher `exe` mounted
    /// read-only. Inspects the host filesystem (which entries exist, which are links).
    pub fn build(
        spec: &SandboxSpec,
        gen: Option<&Path>,
        exe: Option<&Path>,
        overlay: bool,
    ) -> Result<JailPlan, SandboxError> {
        let mut mounts = Vec::new();
        for s in SYSTEM {
            let p = Path::new(s);
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = std::fs::read_link(p)
                        .map_err(|e| SandboxError::Setup(format!("{s}: {e}")))?;
                    mounts.push(Mount::Symlink {
                        target,
                        path: p.to_path_buf(),
                    });
                }
                Ok(m) if m.is_dir() => mounts.push(Mount::ReadOnly(p.to_path_buf())),
                _ => {}
            }
        }
        mounts.push(Mount::ReadOnly(PathBuf::from("/etc")));
        mounts.extend(etc_masks());
        mounts.push(Mount::Proc);
        mounts.push(Mount::Dev);
        mounts.push(Mount::Tmpfs {
            path: PathBuf::from("/tmp"),
            size: spec.limits.tmp_size_or_default(),
        });

        let home = spec
            .home
            .clone()
            .filter(|h| !provided(h) && h != Path::new("/"));
        // (path, rank, mount): sorted by depth, then tmpfs < read-only < writable.
        let mut binds: Vec<(PathBuf, u8, Mount)> = Vec::new();
        if let Some(h) = &home {
            binds.push((
                h.clone(),
                0,
                Mount::Tmpfs {
                    path: h.clone(),
                    size: HOME_TMPFS,
                },
            ));
        }
        let mut left_out = Vec::new();
        fn rel_to<'a>(home: &Option<PathBuf>, p: &'a Path) -> Option<&'a Path> {
            home.as_ref().and_then(|h| p.strip_prefix(h).ok())
        }
        let credential = |p: &Path| {
            rel_to(&home, p).is_some_and(|rel| CREDENTIAL_STORES.iter().any(|c| rel.starts_with(c)))
        };
        let in_workspace = |p: &Path| spec.workspace.iter().any(|w| p.starts_with(w));
        for p in &spec.write {
            if provided(p) {
                continue;
            }
            if credential(p) {
                left_out.push((p.clone(), "a credential store"));
                continue;
            }
            let cache =
                rel_to(&home, p).is_some_and(|r| !r.as_os_str().is_empty()) && !in_workspace(p);
            let m = if cache {
                Mount::Cache(p.clone())
            } else {
                Mount::Writable(p.clone())
            };
            binds.push((p.clone(), 2, m));
        }
        for p in &spec.read {
            if provided(p) || spec.write.iter().any(|w| p.starts_with(w)) {
                continue;
            }
            if credential(p) {
                left_out.push((p.clone(), "a credential store"));
                continue;
            }
            let sanitized = rel_to(&home, p)
                .and_then(|r| r.to_str())
                .filter(|r| SANITIZED.contains(r));
            if let Some(name) = sanitized {
                if !p.is_file() {
                    continue;
                }
                let Some(dir) = gen else {
                    // Only described (`--print-plan`): the copy is made when a jail starts.
                    binds.push((
                        p.clone(),
                        1,
                        Mount::Generated {
                            source: PathBuf::from("(made at start)"),
                            path: p.clone(),
                        },
                    ));
                    continue;
                };
                let text = std::fs::read_to_string(p).unwrap_or_default();
                let clean = if name == ".npmrc" {
                    sanitize_npmrc(&text)
                } else {
                    sanitize_gitconfig(&text)
                };
                let source = dir.join(name.trim_start_matches('.'));
                std::fs::write(&source, clean)
                    .map_err(|e| SandboxError::Setup(format!("{}: {e}", source.display())))?;
                binds.push((
                    p.clone(),
                    1,
                    Mount::Generated {
                        source,
                        path: p.clone(),
                    },
                ));
                continue;
            }
            binds.push((p.clone(), 1, Mount::ReadOnly(p.clone())));
        }
        binds.sort_by(|a, b| {
            (a.0.components().count(), a.1, &a.0).cmp(&(b.0.components().count(), b.1, &b.0))
        });
        binds.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        // A credential store inside a granted directory (`~/.config` granted, `~/.config/gh`
        // inside it) is masked.
        let covered: Vec<PathBuf> = binds
            .iter()
            .filter(|(_, rank, _)| *rank > 0)
            .map(|(p, _, _)| p.clone())
            .collect();
        mounts.extend(binds.into_iter().map(|(_, _, m)| m));
        if let Some(h) = &home {
            for c in CREDENTIAL_STORES {
                let p = h.join(c);
                if !covered.iter().any(|g| p.starts_with(g) && &p != g) {
                    continue;
                }
                match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => mounts.push(Mount::MaskDir(p)),
                    Ok(m) if m.is_file() => mounts.push(Mount::MaskFile(p)),
                    _ => {}
                }
            }
        }
        let (protected, placeholders) = super::protect(&spec.protected_names, &spec.workspace)?;
        for p in &protected {
            mounts.push(Mount::Protected(p.clone()));
        }
        let empty = match gen {
            Some(dir) => {
                let e = dir.join("empty");
                std::fs::write(&e, "")
                    .map_err(|err| SandboxError::Setup(format!("{}: {err}", e.display())))?;
                e
            }
            None => PathBuf::from("/dev/null"),
        };
        for h in &placeholders {
            mounts.push(Mount::Placeholder {
                path: h.path.clone(),
                dir: h.dir,
                empty: empty.clone(),
            });
        }
        if let Some(exe) = exe {
            if !SYSTEM.iter().any(|s| exe.starts_with(s)) {
                mounts.push(Mount::ReadOnly(exe.to_path_buf()));
            }
        }
        let host_uid = nix::unistd::geteuid().as_raw();
        let host_gid = nix::unistd::getegid().as_raw();
        let (uid, gid) = if host_uid == 0 {
            (JAIL_UID_FOR_ROOT, JAIL_UID_FOR_ROOT)
        } else {
            (host_uid, host_gid)
        };
        Ok(JailPlan {
            mounts,
            uid,
            gid,
            share_net: spec.network,
            left_out,
            home,
            overlay,
            placeholders,
        })
    }

    /// bubblewrap's arguments for this plan (before `--` and the command).
    pub fn bwrap_args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "shellgate",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if self.share_net {
            a.push("--share-net".into());
        }
        a.extend(["--uid".into(), self.uid.to_string()]);
        a.extend(["--gid".into(), self.gid.to_string()]);
        let s = |p: &Path| p.to_string_lossy().into_owned();
        for m in &self.mounts {
            match m {
                Mount::ReadOnly(p) => a.extend(["--ro-bind-try".into(), s(p), s(p)]),
                Mount::Writable(p) => a.extend(["--bind-try".into(), s(p), s(p)]),
                Mount::Cache(p) if self.overlay => {
                    if p.exists() {
                        a.extend(["--overlay-src".into(), s(p), "--tmp-overlay".into(), s(p)]);
                    }
                }
                Mount::Cache(p) => a.extend(["--ro-bind-try".into(), s(p), s(p)]),
                Mount::Generated { source, path } => {
                    a.extend(["--ro-bind".into(), s(source), s(path)])
                }
                Mount::Symlink { target, path } => {
                    a.extend(["--symlink".into(), s(target), s(path)])
                }
                Mount::MaskFile(p) => a.extend(["--ro-bind".into(), "/dev/null".into(), s(p)]),
                Mount::MaskDir(p) => {
                    a.extend(["--tmpfs".into(), s(p), "--remount-ro".into(), s(p)])
                }
                Mount::Tmpfs { path, size } => {
                    if path == Path::new("/tmp") {
                        a.extend(["--perms".into(), "1777".into()]);
                    }
                    a.extend(["--size".into(), size.to_string(), "--tmpfs".into(), s(path)])
                }
                Mount::Protected(p) => a.extend(["--ro-bind".into(), s(p), s(p)]),
                Mount::Placeholder {
                    path, dir: true, ..
                } => a.extend(["--tmpfs".into(), s(path), "--remount-ro".into(), s(path)]),
                Mount::Placeholder { path, empty, .. } => {
                    a.extend(["--ro-bind".into(), s(empty), s(path)])
                }
                Mount::Proc => a.extend(["--proc".into(), "/proc".into()]),
                Mount::Dev => a.extend(["--dev".into(), "/dev".into()]),
            }
        }
        a.extend(["--setenv".into(), "TMPDIR".into(), "/tmp".into()]);
        a
    }

    /// The plan for people: one line per mount, then what is left out.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let s = |p: &Path| p.display().to_string();
        out.push_str(&format!(
            "namespaces: user (uid {} gid {} inside), mount, pid, ipc, uts (hostname shellgate), cgroup{}\n",
            self.uid,
            self.gid,
            if self.share_net { "; network: the host's" } else { ", network (empty: no interfaces but loopback, no host sockets)" }
        ));
        out.push_str("no capabilities, no_new_privs, new session (no controlling terminal), no nested user namespaces\n");
        for m in &self.mounts {
            let line = match m {
                Mount::ReadOnly(p) => format!("read-only   {}", s(p)),
                Mount::Writable(p) => format!("writable    {}", s(p)),
                Mount::Cache(p) if self.overlay => {
                    format!("cache       {} (copy-on-write, discarded)", s(p))
                }
                Mount::Cache(p) => format!(
                    "cache       {} (read-only: bwrap has no --tmp-overlay)",
                    s(p)
                ),
                Mount::Generated { path, .. } => {
                    format!("generated   {} (a copy without credentials)", s(path))
                }
                Mount::Symlink { target, path } => {
                    format!("symlink     {} -> {}", s(path), s(target))
                }
                Mount::MaskFile(p) => format!("masked      {} (empty)", s(p)),
                Mount::MaskDir(p) => format!("masked      {}/ (empty)", s(p)),
                Mount::Tmpfs { path, size } => {
                    format!("tmpfs       {} ({} MiB)", s(path), size >> 20)
                }
                Mount::Protected(p) => format!("protected   {} (read-only)", s(p)),
                Mount::Placeholder { path, dir, .. } => format!(
                    "protected   {}{} (missing: an empty read-only {} in the jail)",
                    s(path),
                    if *dir { "/" } else { "" },
                    if *dir { "directory" } else { "file" }
                ),
                Mount::Proc => "proc        /proc (this jail's processes only)".to_string(),
                Mount::Dev => {
                    "dev         /dev (null zero full random urandom tty pts shm)".to_string()
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
        for (p, why) in &self.left_out {
            out.push_str(&format!("left out    {} ({why})\n", s(p)));
        }
        out.push_str("everything else is absent\n");
        out
    }
}

/// The size of `$HOME`'s tmpfs (dot files programs write, `~/.bash_history`).
pub const HOME_TMPFS: u64 = 64 << 20;

/// Masks over `/etc`'s secrets ([`ETC_SECRETS`]) that exist here.
fn etc_masks() -> Vec<Mount> {
    let mut out = Vec::new();
    let mut consider = |rel: String| {
        let p = Path::new("/etc").join(&rel);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => out.push(Mount::MaskDir(p)),
            Ok(m) if m.is_file() => out.push(Mount::MaskFile(p)),
            _ => {}
        }
    };
    for s in ETC_SECRETS {
        if !s.contains('*') {
            consider(s.to_string());
        }
    }
    if let Ok(dir) = std::fs::read_dir("/etc/ssh") {
        let mut keys: Vec<String> = dir
            .flatten()
            .map(|e| format!("ssh/{}", e.file_name().to_string_lossy()))
            .filter(|r| r.contains('*') || etc_secret(r))
            .collect();
        keys.sort();
        for k in keys {
            consider(k);
        }
    }
    out
}

/// `.npmrc` without authentication: every line whose key names a token, a password, a user,
/// an e-mail address or a client certificate is dropped.
pub fn sanitize_npmrc(text: &str) -> String {
    const SECRET_KEYS: &[&str] = &[
        "_auth", "token", "password", "username", "email", "certfile", "keyfile", "cert", "key",
        "otp",
    ];
    text.lines()
        .filter(|l| {
            let key = l
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            let last = key.rsplit(':').next().unwrap_or("");
            !SECRET_KEYS.iter().any(|s| last.contains(s))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `.gitconfig` without credentials: the `credential`, `http`, `url` and `include` sections are
/// dropped (helpers, extra headers, tokens in URLs, other files), and so is any line whose key
/// names a password or a token.
pub fn sanitize_gitconfig(text: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('[') {
            let name = t
                .trim_start_matches('[')
                .split([' ', ']', '"', '.'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            skip = ["credential", "http", "url", "include", "includeif"].contains(&name.as_str());
        }
        let key = t
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if skip
            || ["password", "token", "extraheader", "helper"]
                .iter()
                .any(|k| key.contains(k))
        {
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npmrc_loses_its_tokens_and_keeps_the_rest() {
        let t = "registry=https://r.example/\n//r.example/:_authToken=npm_abc\n_auth=eA==\nemail=a@b\nsave-exact=true\n";
        assert_eq!(
            sanitize_npmrc(t),
            "registry=https://r.example/\nsave-exact=true\n"
        );
    }

    #[test]
    fn gitconfig_loses_credential_sections() {
        let t = "[user]\n\tname = A\n[credential]\n\thelper = store\n[url \"https://tok@github.com/\"]\n\tinsteadOf = https://github.com/\n[http \"https://x\"]\n\textraheader = AUTHORIZATION: basic x\n[core]\n\teditor = vi\n";
        assert_eq!(
            sanitize_gitconfig(t),
            "[user]\n\tname = A\n[core]\n\teditor = vi\n"
        );
    }
}
