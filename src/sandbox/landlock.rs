//! The second wall inside the jail: Landlock (`no_new_privs`, filesystem rules, TCP, scoped
//! signals and abstract UNIX sockets), applied by stage 2 of the launcher to itself before it
//! runs the shell, and by the text editor's worker thread.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

use super::{SandboxError, SandboxSpec};

/// The Landlock ABI the sandbox needs: filesystem with truncate and device ioctls (v5), TCP
/// (v4), scoped signals and abstract UNIX sockets (v6).
const ABI_NEEDED: ABI = ABI::V6;

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

/// Whether `rel` (a path below `/etc`) is one of [`ETC_SECRETS`].
pub(crate) fn etc_secret(rel: &str) -> bool {
    ETC_SECRETS.iter().any(|s| match s.split_once('*') {
        Some((pre, post)) => rel.starts_with(pre) && rel.ends_with(post),
        None => rel == *s,
    })
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

/// What one rule may do.
#[derive(Clone, Copy)]
enum Grant {
    Read,
    ReadWrite,
}

/// Confine the calling thread (and what it starts) to `spec`'s roots, the system directories
/// and `tmp` (writable).
///
/// `in_jail`: the caller runs inside the jail, whose mount view already masks `/etc`'s
/// secrets ([`ETC_SECRETS`], an empty file or directory over each that exists: see
/// `plan.rs`), so `/etc` is one rule. Outside the jail (no jail, or the file tool's worker
/// thread on the host) `/etc` is one rule per entry that is not a secret.
pub(crate) fn restrict(
    spec: &SandboxSpec,
    tmp: Option<&Path>,
    in_jail: bool,
) -> Result<(), SandboxError> {
    let unavailable = |e: landlock::RulesetError| SandboxError::Unavailable(e.to_string());
    let mut rules: Vec<(PathBuf, Grant)> = Vec::new();
    for p in SYSTEM_READ {
        rules.push((PathBuf::from(p), Grant::Read));
    }
    if in_jail && etc_secrets_masked() {
        rules.push((PathBuf::from("/etc"), Grant::Read));
    } else {
        rules.extend(etc_entries().into_iter().map(|p| (p, Grant::Read)));
    }
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
/// the file tool's worker (`LocalFiles::confined`). No temporary directory.
pub(crate) fn restrict_this_thread(spec: &SandboxSpec) -> Result<(), SandboxError> {
    restrict(spec, None, false)
}

/// Whether every secret of `/etc` ([`ETC_SECRETS`]) is, in this mount view, absent or one of
/// the jail's masks: `/dev/null` bound over a file, an empty directory over a directory. The
/// check that lets `/etc` be one Landlock rule inside the jail: a view where any secret is
/// something else (a stage 2 started outside the jail, a mask that did not take) keeps the
/// rule per entry.
fn etc_secrets_masked() -> bool {
    use std::os::unix::fs::MetadataExt;
    let masked = |p: &Path| match std::fs::symlink_metadata(p) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(m) if m.file_type().is_char_device() => {
            m.rdev() == std::fs::metadata("/dev/null").map_or(u64::MAX, |n| n.rdev())
        }
        Ok(m) if m.is_dir() => std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none()),
        Ok(_) => false,
    };
    let etc = Path::new("/etc");
    if !ETC_SECRETS
        .iter()
        .filter(|s| !s.contains('*'))
        .all(|s| masked(&etc.join(s)))
    {
        return false;
    }
    match std::fs::read_dir("/etc/ssh") {
        Ok(dir) => dir.flatten().all(|e| {
            let rel = format!("ssh/{}", e.file_name().to_string_lossy());
            !etc_secret(&rel) || masked(&e.path())
        }),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// `/etc` without its secrets: each entry (one level down in `ssl` and `ssh`) not in
/// [`ETC_SECRETS`].
fn etc_entries() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/etc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if etc_secret(&name) {
            continue;
        }
        if name == "ssl" || name == "ssh" {
            if let Ok(sub) = std::fs::read_dir(e.path()) {
                for s in sub.flatten() {
                    let rel = format!("{name}/{}", s.file_name().to_string_lossy());
                    if !etc_secret(&rel) {
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
