//! The launcher, `policy-check sandbox` (so that no `unsafe` `pre_exec` is needed): stage 1
//! ([`launch`]) outside, stage 2 ([`confine_and_exec`]) inside; see the
//! [module docs](super).
//!
//! Without the jail (`mode = "off"`), stage 1 makes the PID namespace itself
//! (`unshare(CLONE_NEWPID)`) and stage 2 is its first process. In the jail, bubblewrap makes
//! every namespace and stage 2 runs inside it, below bubblewrap's own init: so the shell's
//! death (or bubblewrap's) ends every process of the namespace, and the session cgroup holds
//! them all for the end-of-call kill.
//!
//! SIGKILL of the guard reaches stage 1 as SIGTERM (parent-death signal), which kills the
//! shell and removes the session's temporary directory and cgroup; should stage 1 be killed
//! outright, bubblewrap's `--die-with-parent` (and without the jail, the shell's own
//! parent-death signal) still ends the namespace.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::Signal;

use super::cgroup::SessionCgroup;
use super::plan::JailPlan;
use super::{SandboxError, SandboxSpec};
use crate::policy::sandbox::SandboxLimits;

/// Where the jail's private `/tmp` is, inside.
pub const JAIL_TMP: &str = "/tmp";

/// Stage 1: returns the exit status to exit with. `stage2` is the command that runs stage 2
/// (this program again, with the same spec and `--stage2`, then `--` and the program). In the
/// jail (`spec.jail`), stage 2 runs under bubblewrap with the plan's arguments; `tmp` is the
/// session's private host directory (generated files). When the shell is gone (it exited, or
/// SIGTERM, SIGINT or SIGHUP came: SIGTERM is also what the launcher gets when its parent
/// dies), the launcher removes `tmp` and the cgroup before it exits.
pub fn launch(
    spec: &SandboxSpec,
    tmp: Option<&Path>,
    cgroup: &[PathBuf],
    stage2: Command,
) -> Result<i32, SandboxError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
        .map_err(|e| SandboxError::Setup(format!("PR_SET_PDEATHSIG: {e}")))?;
    SessionCgroup::join_self(cgroup)?;
    let mut placeholders = Vec::new();
    let mut cmd = if spec.jail {
        let (cmd, holders) = jailed(spec, tmp, &stage2)?;
        placeholders = holders;
        cmd
    } else {
        // Without a PID namespace (not root, no user namespaces) containment falls back to
        // the process group and the parent-death signals; the guard's own checks still apply.
        let _ = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID);
        stage2
    };
    let mut child = cmd
        .spawn()
        .map_err(|e| SandboxError::Setup(format!("cannot start the sandboxed shell: {e}")))?;
    let first = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = super::contain::on_termination_signals(move |_| {
        let _ = nix::sys::signal::kill(first, Signal::SIGKILL);
    });
    let status = child
        .wait()
        .map_err(|e| SandboxError::Setup(format!("cannot wait for the shell: {e}")))?;
    clean_up(tmp, cgroup);
    remove_placeholders(&placeholders);
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// `bwrap PLAN -- STAGE2...`, with stage 2 told that its temporary directory is the jail's
/// `/tmp`.
fn jailed(
    spec: &SandboxSpec,
    tmp: Option<&Path>,
    stage2: &Command,
) -> Result<(Command, Vec<super::Placeholder>), SandboxError> {
    let Some(bwrap) = spec.bwrap.clone().or_else(super::find_bwrap) else {
        return Err(super::jail_available().err().unwrap_or_else(|| {
            SandboxError::Unavailable("bubblewrap (bwrap) is not installed".into())
        }));
    };
    let exe = PathBuf::from(stage2.get_program());
    let gen = match tmp {
        Some(t) => {
            let g = t.join("generated");
            std::fs::create_dir_all(&g)
                .map_err(|e| SandboxError::Setup(format!("{}: {e}", g.display())))?;
            Some(g)
        }
        None => None,
    };
    let plan = JailPlan::build(spec, gen.as_deref(), Some(&exe), spec.overlay)?;
    if let Some(t) = tmp {
        let list = serde_json::to_string(&plan.placeholders).unwrap_or_default();
        std::fs::write(t.join(PLACEHOLDERS_FILE), list)
            .map_err(|e| SandboxError::Setup(format!("{}: {e}", t.display())))?;
    }
    let mut cmd = Command::new(&bwrap);
    cmd.args(plan.bwrap_args());
    if let Ok(cwd) = std::env::current_dir() {
        cmd.arg("--chdir").arg(cwd);
    }
    cmd.arg("--").arg(&exe);
    let mut tmp_next = false;
    for a in stage2.get_args() {
        if tmp_next {
            cmd.arg(JAIL_TMP);
            tmp_next = false;
            continue;
        }
        tmp_next = a == "--tmp";
        cmd.arg(a);
    }
    Ok((cmd, plan.placeholders))
}

/// Where stage 1 lists the session's placeholders, in its temporary directory: so that the
/// guard removes them too when it ends the session with SIGKILL (stage 1 cannot clean up then).
pub const PLACEHOLDERS_FILE: &str = "placeholders.json";

/// Remove the placeholders listed in a session's temporary directory. Only once the jail is
/// gone: unlinking a mount point from outside detaches the mount inside.
pub fn remove_placeholders_of(tmp: &Path) {
    if let Ok(text) = std::fs::read_to_string(tmp.join(PLACEHOLDERS_FILE)) {
        if let Ok(list) = serde_json::from_str::<Vec<super::Placeholder>>(&text) {
            remove_placeholders(&list);
        }
    }
}

/// Remove the mount points bubblewrap made for the placeholders, if they are still what it
/// made (an empty file, an empty directory): the jail is gone, so nothing inside can race this.
fn remove_placeholders(holders: &[super::Placeholder]) {
    for h in holders {
        let Ok(m) = std::fs::symlink_metadata(&h.path) else {
            continue;
        };
        if h.dir && m.is_dir() {
            let _ = std::fs::remove_dir(&h.path); // only if empty
        } else if !h.dir && m.is_file() && m.len() == 0 {
            let _ = std::fs::remove_file(&h.path);
        }
    }
}

/// Remove the session's temporary directory, leave its cgroup and remove it (once the
/// processes of the namespace are gone).
fn clean_up(tmp: Option<&Path>, cgroup: &[PathBuf]) {
    if let Some(t) = tmp {
        let _ = std::fs::remove_dir_all(t);
    }
    for dir in cgroup {
        if let Some(parent) = dir.parent() {
            let _ = std::fs::write(parent.join("cgroup.procs"), std::process::id().to_string());
        }
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    for dir in cgroup {
        while std::fs::remove_dir(dir).is_err() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Stage 2 of the launcher: limits, Landlock, seccomp, then `exec` of `program`. Returns only
/// on failure.
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
        if let Err(e) = super::landlock::restrict(spec, tmp, spec.jail) {
            return e;
        }
        if !spec.network {
            if let Err(e) = super::seccomp::no_udp_or_raw_sockets() {
                return e;
            }
        }
    } else if let Err(e) = nix::sys::prctl::set_no_new_privs() {
        return SandboxError::Setup(format!("PR_SET_NO_NEW_PRIVS: {e}"));
    }
    if spec.jail {
        if let Err(e) = super::seccomp::jail_filter() {
            return e;
        }
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
