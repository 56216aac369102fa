//! The running shell process of a session: spawned (directly or through the sandbox
//! launcher) with its pipes and reader threads, waited on with a deadline, killed with its
//! process group.

use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::super::ExecError;
use super::config::{SessionConfig, DEFAULT_PATH, ENV_ALLOWLIST};
use super::sentinel::{SentinelScanner, Stream};
use super::token;
use super::wrapper::wrapper_functions;
use crate::sandbox::cgroup::SessionCgroup;
use crate::sandbox::contain;

/// How long a new shell may take to report ready, at least.
pub(super) const MIN_START_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a waiting call checks whether the shell itself has exited (a background job can
/// keep the pipe open after the shell is gone).
pub(super) const EXIT_POLL: Duration = Duration::from_millis(100);

/// The file descriptor on which the shell keeps the session's second pipe (its stderr at
/// startup): high, so that scripts using fds 3 to 9 do not clobber it.
pub(super) const ERR_FD: u32 = 62;

/// The fd for the second pipe under an open-files limit of `limit`: [`ERR_FD`], or the
/// highest one the limit leaves (`None` when it leaves none above stderr).
fn err_fd(limit: Option<u64>) -> Option<u32> {
    match limit {
        Some(n) if n <= u64::from(ERR_FD) => {
            u32::try_from(n).ok()?.checked_sub(1).filter(|f| *f >= 3)
        }
        _ => Some(ERR_FD),
    }
}

/// How long stderr's end line may lag behind stdout's before it is given up for lost.
pub(super) const ERR_GRACE: Duration = Duration::from_secs(2);

/// A running shell. Dropping it kills its process group and reaps it.
#[derive(Debug)]
pub(super) struct Shell {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    /// Chunks of the shell's stdout (`false`) and of its second pipe (`true`).
    pub(super) rx: Receiver<(bool, Vec<u8>)>,
    pub(super) pgid: Option<Pid>,
    /// The shell itself (the launcher's child under the launcher).
    pub(super) shell_pid: Option<Pid>,
    /// The session's private temporary directory (under the launcher), removed at the end.
    pub(super) tmp: Option<PathBuf>,
    /// The session's cgroup (always in the jail unless the policy makes it optional; without
    /// the jail, when `processes` is limited and one can be made).
    pub(super) cgroup: Option<SessionCgroup>,
    /// The session's own processes, from the launcher down to the shell: all that the end of
    /// a call leaves alive in the cgroup.
    pub(super) keep: Vec<Pid>,
    /// Where the shell keeps the second pipe (code execution calls' stderr).
    pub(super) err_fd: u32,
    /// The random part of the names of the session's wrapper functions and variables
    /// ([`call_line`]).
    pub(super) id: String,
}

pub(super) enum Wait {
    Done { status: i32, cwd: Option<PathBuf> },
    TimedOut,
    Exited,
}

impl Shell {
    pub(super) fn spawn(config: &SessionConfig) -> Result<(Shell, PathBuf), ExecError> {
        let mut tmp = None;
        let mut cgroup = None;
        let mut cmd = match &config.launcher {
            None => Command::new(&config.bash),
            Some(l) => {
                let name = token()?;
                let dir = std::env::temp_dir().join(format!("shellgate-{name}"));
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&dir)
                    .map_err(|e| ExecError::Start(format!("{}: {e}", dir.display())))?;
                tmp = Some(dir.clone());
                let mut cmd = Command::new(&l.program);
                cmd.arg("sandbox")
                    .arg("--errors-to-stdout")
                    .args(l.spec.to_args())
                    .arg("--tmp")
                    .arg(&dir);
                if l.spec.jail {
                    match SessionCgroup::create(&name, &l.spec.limits) {
                        Ok(cg) => cgroup = Some(cg),
                        Err(_) if l.spec.limits.cgroup_optional => {}
                        Err(e) => {
                            let _ = std::fs::remove_dir_all(&dir);
                            return Err(ExecError::Start(e.to_string()));
                        }
                    }
                } else if l.spec.limits.processes.is_some() {
                    cgroup = SessionCgroup::create(&name, &l.spec.limits).ok();
                }
                for d in cgroup.iter().flat_map(|c| c.dirs()) {
                    cmd.arg("--cgroup").arg(d);
                }
                cmd.arg("--").arg(&config.bash);
                cmd
            }
        };
        // From here on, a failure removes the temporary directory and the cgroup.
        let cleanup = TmpGuard(tmp.clone());
        cmd.arg("--noprofile").arg("--norc").env_clear();
        for name in ENV_ALLOWLIST {
            if let Some(v) = std::env::var_os(name) {
                cmd.env(name, v);
            } else if *name == "PATH" {
                cmd.env(name, DEFAULT_PATH);
            }
        }
        // bash keeps a logical $PWD (symlinks as given) only if it is told where it is.
        cmd.env("PWD", &config.cwd);
        if let Some(t) = &tmp {
            cmd.env("TMPDIR", t);
        }
        for (k, v) in git_pins(&config.cwd) {
            cmd.env(k, v);
        }
        for (k, v) in &config.env {
            cmd.env(k, v);
        }
        cmd.current_dir(&config.cwd)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| ExecError::Start(format!("{}: {e}", config.bash.display())))?;
        let pgid = i32::try_from(child.id()).ok().map(Pid::from_raw);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ExecError::Start("no pipes to the shell".to_string()));
        };
        // Bounded: if nobody reads (a background job printing between calls), the reader
        // blocks, then the pipe fills, then the writer blocks; memory stays bounded.
        let (tx, rx) = mpsc::sync_channel(16);
        if let Some(p) = pgid {
            let dirs = tmp
                .iter()
                .cloned()
                .chain(cgroup.iter().flat_map(|c| c.dirs().iter().cloned()))
                .collect();
            contain::register(p, dirs);
        }
        std::mem::forget(cleanup); // the Shell owns the directory now
        let limit = config
            .launcher
            .as_ref()
            .and_then(|l| l.spec.limits.open_files);
        let Some(err_fd) = err_fd(limit) else {
            return Err(ExecError::Start(format!(
                "an open-files limit of {} leaves no descriptor for the session's second pipe \
                 (at least 4 are needed)",
                limit.unwrap_or(0)
            )));
        };
        let mut shell = Shell {
            child,
            stdin,
            rx,
            pgid,
            shell_pid: pgid,
            tmp,
            cgroup,
            keep: Vec::new(),
            err_fd,
            id: token()?[..8].to_string(),
        };
        let tx_err = tx.clone();
        std::thread::Builder::new()
            .name("shellgate-bash-reader".to_string())
            .spawn(move || read_pipe(stdout, false, tx))
            .map_err(|e| ExecError::Start(format!("cannot start the output reader: {e}")))?;
        std::thread::Builder::new()
            .name("shellgate-bash-stderr-reader".to_string())
            .spawn(move || read_pipe(stderr, true, tx_err))
            .map_err(|e| ExecError::Start(format!("cannot start the output reader: {e}")))?;

        // stderr joins stdout (the bash tool interleaves them); the second pipe stays on
        // `err_fd` for code execution calls, which capture stderr apart; if it cannot be
        // kept, the start fails rather than lose stderr.
        let token = token()?;
        // The glob rule of the policy (`evaluate/globs.rs`) holds under bash's default
        // globbing options: pinned here, whatever the environment said.
        const GLOB_DEFAULTS: &str = "\\builtin shopt -u dotglob nocaseglob globstar nullglob failglob extglob 2>/dev/null; \\builtin shopt -s globskipdots 2>/dev/null\n";
        let script = format!(
            "exec {err_fd}>&2 2>&1 || exit 97\n{GLOB_DEFAULTS}{}{}\\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} 0 \"$PWD\" SG_END_{token}\n",
            config.limits.script(),
            wrapper_functions(&shell.id),
        );
        if let Err(e) = shell
            .stdin
            .write_all(script.as_bytes())
            .and_then(|()| shell.stdin.flush())
        {
            return Err(ExecError::Start(format!("cannot write to the shell: {e}")));
        }
        let mut out = Stream::new(
            "",
            SentinelScanner::new(&format!("SG_END_{token}"), 16 * 1024, None),
        );
        let deadline = Instant::now() + config.timeout.max(MIN_START_TIMEOUT);
        match shell.wait(&mut out, None, deadline) {
            Wait::Done { cwd, .. } => {
                if config.launcher.is_some() {
                    // From the launcher down, each process has one child until the shell
                    // (exec'd by stage 2): launcher → shell, or in the jail launcher →
                    // bubblewrap → bubblewrap's init → shell. Nothing else runs yet.
                    let mut chain: Vec<Pid> = pgid.into_iter().collect();
                    while let Some(&last) = chain.last() {
                        match contain::children(last).as_slice() {
                            [only] if chain.len() < 8 => chain.push(*only),
                            _ => break,
                        }
                    }
                    shell.shell_pid = chain.get(1..).and_then(|c| c.last().copied());
                    shell.keep = chain;
                }
                Ok((shell, cwd.unwrap_or_else(|| config.cwd.clone())))
            }
            Wait::TimedOut => Err(ExecError::Start(
                "the shell did not become ready in time".to_string(),
            )),
            Wait::Exited => {
                let (out, _) = out.scanner.into_output();
                let out = String::from_utf8_lossy(&out);
                Err(ExecError::Start(format!(
                    "the shell exited at startup (a resource limit that cannot be set?): {}",
                    out.trim()
                )))
            }
        }
    }

    /// Kill every process the shell started (the shell itself stays): by the cgroup when the
    /// session has one (frozen while it is emptied, so nothing forks past it), else by the
    /// process tree.
    pub(super) fn kill_descendants(&self) {
        if let (Some(cg), false) = (&self.cgroup, self.keep.is_empty()) {
            cg.kill_except(&self.keep, Duration::from_secs(2));
        }
        if let Some(p) = self.shell_pid {
            contain::kill_tree(p, Duration::from_secs(2));
        }
    }

    /// Feed output into `out` (and `err`) until their sentinel lines, the deadline, or the
    /// shell's exit. Once `out` is done, `err` gets [`ERR_GRACE`] more; if its end line is
    /// still missing then, the call is done with `err` incomplete (`done` false).
    pub(super) fn wait(
        &mut self,
        out: &mut Stream,
        mut err: Option<&mut Stream>,
        deadline: Instant,
    ) -> Wait {
        let mut grace: Option<Instant> = None;
        loop {
            if out.done {
                let err_done = err.as_ref().is_none_or(|e| e.done);
                let until = *grace.get_or_insert_with(|| deadline.min(Instant::now() + ERR_GRACE));
                if err_done || Instant::now() >= until {
                    let (status, cwd) = out.status.take().unwrap_or((-1, None));
                    return Wait::Done { status, cwd };
                }
            }
            let now = Instant::now();
            let until = grace.unwrap_or(deadline);
            if now >= until {
                return Wait::TimedOut;
            }
            match self.rx.recv_timeout((until - now).min(EXIT_POLL)) {
                Ok((is_err, chunk)) => match (is_err, err.as_deref_mut()) {
                    (false, _) => out.push(&chunk),
                    (true, Some(e)) => e.push(&chunk),
                    (true, None) => {} // not this call's: a background job's stderr
                },
                Err(RecvTimeoutError::Disconnected) => return Wait::Exited,
                Err(RecvTimeoutError::Timeout) => {
                    if matches!(self.child.try_wait(), Ok(Some(_))) {
                        // Gone, though something still holds the pipe: take what is there.
                        while let Ok((is_err, chunk)) = self.rx.try_recv() {
                            match (is_err, err.as_deref_mut()) {
                                (false, _) => out.push(&chunk),
                                (true, Some(e)) => e.push(&chunk),
                                (true, None) => {}
                            }
                        }
                        if out.done {
                            let (status, cwd) = out.status.take().unwrap_or((-1, None));
                            return Wait::Done { status, cwd };
                        }
                        return Wait::Exited;
                    }
                }
            }
        }
    }

    /// The shell's exit status, once it has exited (killing the group first if it has not).
    pub(super) fn exit_status(&mut self) -> Option<i32> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return status.code();
        }
        self.kill_group();
        self.child.wait().ok().and_then(|s| s.code())
    }

    pub(super) fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is already gone) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // Kill before reaping: while the shell is unreaped (or any member lives), its pid
        // cannot be reused, so the signal cannot reach a stranger's group. The tree first:
        // without the launcher's PID namespace, that is how processes that left the group
        // are found (those still below the shell).
        self.kill_descendants();
        self.kill_group();
        let _ = self.child.wait();
        if let Some(p) = self.pgid {
            contain::unregister(p);
        }
        self.cgroup = None; // kills what is left inside, removes it
        if let Some(t) = self.tmp.take() {
            // The jail is gone: the placeholders over missing protected names can go.
            crate::sandbox::launch::remove_placeholders_of(&t);
            let _ = std::fs::remove_dir_all(t);
        }
    }
}

/// Removes a session's temporary directory if the start fails before a [`Shell`] owns it.
pub(super) struct TmpGuard(Option<PathBuf>);

impl Drop for TmpGuard {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            let _ = std::fs::remove_dir_all(t);
        }
    }
}

pub(super) fn read_pipe(mut out: impl Read, is_err: bool, tx: SyncSender<(bool, Vec<u8>)>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match out.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tx.send((is_err, buf[..n].to_vec())).is_err() {
                    return; // the session is gone
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The environment that pins the repository git uses in the session (issue 22): git never
/// discovers a bare repository it was not pointed at (`safe.bareRepository=explicit`, given
/// as command-line scope through `GIT_CONFIG_COUNT`, the scope git honours it from), and when
/// the workspace is itself a repository, discovery never climbs above it
/// (`GIT_CEILING_DIRECTORIES`). The policy layer checks the same (`git-repository-untrusted`);
/// this holds for what it cannot see (a script's own `git` calls).
pub(crate) fn git_pins(workspace: &std::path::Path) -> Vec<(&'static str, std::ffi::OsString)> {
    let mut pins = vec![
        ("GIT_CONFIG_COUNT", "1".into()),
        ("GIT_CONFIG_KEY_0", "safe.bareRepository".into()),
        ("GIT_CONFIG_VALUE_0", "explicit".into()),
    ];
    if workspace.join(".git").exists() {
        if let Some(parent) = workspace.parent() {
            pins.push(("GIT_CEILING_DIRECTORIES", parent.as_os_str().to_owned()));
        }
    }
    pins
}
