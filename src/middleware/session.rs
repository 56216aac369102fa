//! [`BashSession`]: the persistent bash session of the bash-tool documentation, done right.
//!
//! - **One bash process** (`bash --noprofile --norc`, non-interactive, so no job control), in
//!   its own process group, started in the configured directory with a **controlled
//!   environment**: the parent's environment is cleared and only [`ENV_ALLOWLIST`] is copied
//!   from it, plus the configured extras. State persists across calls: working directory,
//!   variables, functions, files.
//! - **stderr interleaved with stdout** in the order written: the session's first act is
//!   `exec 2>&1`, so both go down one pipe.
//! - **A random sentinel per call** (16 bytes from the OS's random source, via `getrandom`),
//!   printed after the command with its exit status and the working directory. The command
//!   text is delivered in a quoted here-document whose delimiter is random too, read into a
//!   variable and run with `eval`, so an unterminated quote, a here-document, a backslash or
//!   any other text in the command cannot swallow or fake the sentinel line. The command's
//!   stdin is `/dev/null`, so a command waiting for input sees EOF instead of hanging.
//! - **A timeout that kills the whole process group** (SIGKILL to `-pgid`: the shell and
//!   everything it started, background jobs included) and starts a new session, reported as
//!   an error. Output is read by a thread into a bounded channel; the caller waits on it with
//!   a deadline (no busy loop).
//! - **Output redacted and capped while it streams**: redacted first ([`StreamRedaction`]:
//!   the built-in credential rules by default), so that no secret is cut in two by the cap;
//!   then at most [`SessionConfig::max_output`] bytes are kept
//!   (the first third and the last two thirds; errors land at the end), the rest is counted and
//!   discarded while the stream is still consumed up to the sentinel, so the session stays in
//!   sync and a command printing forever costs bounded memory until the timeout kills it. A
//!   marker line says where and how many lines and bytes were discarded, and [`Output::gap`]
//!   where that line is, so that the filter counts them in the one marker the model sees.
//! - **Resource limits** ([`ResourceLimits`]: CPU time, memory, file size, processes), applied
//!   with `ulimit` (soft and hard) in the session's startup script; a limit that cannot be
//!   applied makes the start fail rather than run unlimited. They apply to the shell itself
//!   and to each process it starts (CPU time is per process; the process limit is per user,
//!   and root is exempt from it).
//!
//! - **Background jobs**: output a job prints between calls comes before the next call's
//!   random begin line and is discarded. With [`SessionConfig::keep_background`] `false`,
//!   every descendant of the shell is killed when its call ends.
//! - **The sandbox launcher** ([`SessionConfig::launcher`], see [`super::sandbox`]): the
//!   shell runs as PID 1 of its own PID namespace under Landlock and limits, so processes that
//!   left the process group (`setsid`, `timeout`, double forks) die with it, and
//!   parent-death signals end it with the guard process, even on SIGKILL.
//!
//! The shell exiting (`exit`, `set -e`, a fatal signal) is reported as an error and a new
//! session is started. Without the launcher, a process that leaves the process group
//! (`setsid`) and its parent escapes the kill.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use std::os::unix::fs::DirBuilderExt;

use super::contain;
use super::sandbox::{PidsCgroup, SandboxSpec};
use super::{CodeOutput, ExecError, Executor, Gap, Output};
use crate::redact::{Redactor, RuleSet};

/// The variables copied from the parent's environment (when set). Everything else is cleared.
pub const ENV_ALLOWLIST: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER"];

/// `PATH` when the parent has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How long a new shell may take to report ready, at least.
const MIN_START_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a waiting call checks whether the shell itself has exited (a background job can
/// keep the pipe open after the shell is gone).
const EXIT_POLL: Duration = Duration::from_millis(100);

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
    fn script(&self) -> String {
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
/// itself unrecognised. Redaction is idempotent, so the [`Guard`](super::Guard)'s own filter
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

/// How a [`BashSession`] is started and run.
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
/// [--cgroup DIR] -- bash --noprofile --norc` (see [`super::sandbox`]).
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

/// One persistent bash process; see the [module docs](self). Dropping it kills the session's
/// whole process group.
#[derive(Debug)]
pub struct BashSession {
    config: SessionConfig,
    shell: Option<Shell>,
    cwd: PathBuf,
}

impl BashSession {
    /// Start a session.
    pub fn new(mut config: SessionConfig) -> Result<BashSession, ExecError> {
        if !config.cwd.is_absolute() {
            let here = std::env::current_dir()
                .map_err(|e| ExecError::Start(format!("cannot read the current directory: {e}")))?;
            config.cwd = here.join(&config.cwd);
        }
        let cwd = config.cwd.clone();
        let mut session = BashSession {
            config,
            shell: None,
            cwd,
        };
        session.start()?;
        Ok(session)
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The session's working directory, as of the last command (`$PWD`).
    pub fn working_dir(&self) -> &Path {
        &self.cwd
    }

    /// The process id of the session's first process (the shell, or the launcher that
    /// started it), which is also its process group id; `None` between a failed restart and
    /// the next call.
    pub fn pid(&self) -> Option<u32> {
        self.shell.as_ref().map(|s| s.child.id())
    }

    /// The shell's own process id (under the launcher, the child of [`BashSession::pid`]).
    pub fn shell_pid(&self) -> Option<u32> {
        self.shell
            .as_ref()
            .and_then(|s| s.shell_pid)
            .and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    fn start(&mut self) -> Result<(), ExecError> {
        self.shell = None; // kills the old one, if any
        let (shell, cwd) = Shell::spawn(&self.config)?;
        self.shell = Some(shell);
        self.cwd = cwd;
        Ok(())
    }

    fn run_command(&mut self, command: &str) -> Result<Output, ExecError> {
        let ran = self.run_script(command, None)?;
        Ok(Output::new(ran.out.0, ran.status).with_gap(ran.out.1))
    }

    /// Run `command` as a code execution call: `$OUTPUT_DIR` set to `output_dir` for it, and
    /// its stderr captured apart from its stdout (both redacted and capped as they stream).
    pub fn run_code_call(
        &mut self,
        command: &str,
        output_dir: &Path,
    ) -> Result<CodeOutput, ExecError> {
        let ran = self.run_script(command, Some(output_dir))?;
        let (stderr, stderr_gap) = ran.err.unwrap_or_default();
        Ok(CodeOutput {
            stdout: ran.out.0,
            stdout_gap: ran.out.1,
            stderr,
            stderr_gap,
            status: Some(ran.status),
        })
    }

    fn run_script(&mut self, command: &str, code: Option<&Path>) -> Result<Ran, ExecError> {
        if command.contains('\0') {
            return Err(ExecError::InvalidCommand(
                "the command contains a NUL byte".to_string(),
            ));
        }
        let output_dir = match code.map(|d| d.to_str()) {
            None => None,
            Some(Some(d)) if !d.contains('\0') => Some(d.replace('\'', "'\\''")),
            Some(_) => {
                return Err(ExecError::InvalidCommand(
                    "the output directory's name is not UTF-8".to_string(),
                ))
            }
        };
        if self.shell.is_none() {
            self.start()?;
        }
        let Some(shell) = self.shell.as_mut() else {
            return Err(ExecError::Start("no session".to_string()));
        };
        let token = token()?;
        let newline = if command.ends_with('\n') { "" } else { "\n" };
        // The command goes into a variable through a quoted here-document, whose body is
        // never expanded and ends only at the random delimiter line. The variable's name is
        // random too, so no earlier command can have made it readonly (which would make
        // `read` fail and `eval` run a stale value). `\builtin` because an alias (with
        // `expand_aliases`) must not turn the wrapper into something else; `|| :` because
        // read returns 1 at the end of its input, which `set -e` must not see.
        // The begin line first: whatever a background job printed since the last call comes
        // before it in the stream and is discarded, never shown as this call's output; so do
        // the shell's notices about jobs that ended (`jobs` reports and forgets them).
        //
        // A code execution call sends its stderr down the session's second pipe (fd
        // ERR_FD, kept from startup), with begin and end lines of its own, and runs only if
        // `$OUTPUT_DIR` really holds the call's directory (an earlier `readonly` cannot
        // leave a stale one).
        let (err_begin, run, err_end) = match &output_dir {
            None => (
                String::new(),
                format!("\\builtin eval \"$SG_CMD_{token}\" < /dev/null\n"),
                String::new(),
            ),
            Some(dir) => (
                format!("\\builtin printf '%s\\n' SG_BEGIN_{token} >&{ERR_FD}\n"),
                format!(
                    "if \\builtin export OUTPUT_DIR='{dir}' 2>/dev/null && [[ $OUTPUT_DIR == '{dir}' ]]; \
                     then \\builtin eval \"$SG_CMD_{token}\" < /dev/null 2>&{ERR_FD}; \
                     else \\builtin printf 'shellgate: OUTPUT_DIR cannot be set (is it readonly?); \
                     the command was not run\\n' >&{ERR_FD}; (exit 125); fi\n"
                ),
                format!(
                    "\\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} 0 - SG_END_{token} >&{ERR_FD}\n"
                ),
            ),
        };
        let script = format!(
            "\\builtin jobs >/dev/null 2>&1\n\\builtin printf '%s\\n' SG_BEGIN_{token}\n{err_begin}\
             IFS= \\builtin read -r -d '' SG_CMD_{token} <<'SG_EOF_{token}' || :\n\
             {command}{newline}SG_EOF_{token}\n\
             {run}\
             \\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} \"$?\" \"$PWD\" SG_END_{token}\n\
             {err_end}\
             \\builtin unset SG_CMD_{token}\n"
        );
        let deadline = Instant::now() + self.config.timeout;
        let rules = match &self.config.redaction {
            StreamRedaction::Off => None,
            StreamRedaction::Builtin => Some(RuleSet::builtin()),
            StreamRedaction::Rules(rules) => Some(&**rules),
        };
        let sentinel = format!("SG_END_{token}");
        let begin = format!("SG_BEGIN_{token}\n");
        let mut out = Stream::new(
            &begin,
            Scanner::new(&sentinel, self.config.max_output, rules),
        );
        let mut err = output_dir.is_some().then(|| {
            Stream::new(
                &begin,
                Scanner::new(&sentinel, self.config.max_output, rules),
            )
        });
        let outcome = match shell
            .stdin
            .write_all(script.as_bytes())
            .and_then(|()| shell.stdin.flush())
        {
            Ok(()) => shell.wait(&mut out, err.as_mut(), deadline),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Wait::Exited,
            Err(e) => {
                self.shell = None;
                let _ = self.start();
                return Err(ExecError::Io(e));
            }
        };
        match outcome {
            Wait::Done { status, cwd } => {
                let err_complete = err.as_ref().map_or(true, |e| e.done);
                if !self.config.keep_background {
                    shell.kill_descendants();
                }
                if let Some(cwd) = cwd {
                    self.cwd = cwd;
                }
                let err = err.map(|e| {
                    let (mut bytes, gap) = e.scanner.into_output();
                    if !err_complete {
                        bytes.extend_from_slice(
                            b"\n[shellgate: the rest of stderr was lost (the session's stderr \
                              pipe was closed); the session was restarted]\n",
                        );
                    }
                    (bytes, gap)
                });
                let out = out.scanner.into_output();
                if !err_complete {
                    let _ = self.start();
                }
                Ok(Ran { status, out, err })
            }
            Wait::TimedOut => {
                let (output, gap) = out.scanner.into_output();
                let restarted = self.start().is_ok();
                Err(ExecError::Timeout {
                    after: self.config.timeout,
                    output,
                    restarted,
                    gap,
                })
            }
            Wait::Exited => {
                let status = self.shell.as_mut().and_then(Shell::exit_status);
                let (output, gap) = out.scanner.into_output();
                // If the new session cannot start, the next call tries again and says why.
                let _ = self.start();
                Err(ExecError::SessionExited {
                    status,
                    output,
                    gap,
                })
            }
        }
    }
}

/// What one script run gave: the status, stdout (or everything, interleaved), and for a
/// code execution call stderr.
struct Ran {
    status: i32,
    out: (Vec<u8>, Option<Gap>),
    err: Option<(Vec<u8>, Option<Gap>)>,
}

/// The file descriptor on which the shell keeps the session's second pipe (its stderr at
/// startup): high, so that scripts using fds 3 to 9 do not clobber it.
const ERR_FD: u32 = 62;

/// How long stderr's end line may lag behind stdout's before it is given up for lost.
const ERR_GRACE: Duration = Duration::from_secs(2);

/// One of the session's two output streams during a call: skipped up to the call's begin
/// line, then scanned up to its sentinel line.
struct Stream<'r> {
    begin: Vec<u8>,
    /// Bytes that might be the start of `begin` (before it was seen).
    held: Vec<u8>,
    begun: bool,
    done: bool,
    status: Option<(i32, Option<PathBuf>)>,
    scanner: Scanner<'r>,
}

impl<'r> Stream<'r> {
    fn new(begin: &str, scanner: Scanner<'r>) -> Stream<'r> {
        Stream {
            begin: begin.as_bytes().to_vec(),
            held: Vec::new(),
            begun: begin.is_empty(),
            done: false,
            status: None,
            scanner,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        if self.done {
            return; // after the sentinel: a background job's output, dropped
        }
        let rest;
        let data = if self.begun {
            chunk
        } else {
            self.held.extend_from_slice(chunk);
            match memchr::memmem::find(&self.held, &self.begin) {
                Some(i) => {
                    self.begun = true;
                    rest = self.held.split_off(i + self.begin.len());
                    self.held.clear();
                    &rest[..]
                }
                None => {
                    let keep = self.held.len().min(self.begin.len() - 1);
                    self.held.drain(..self.held.len() - keep);
                    return;
                }
            }
        };
        if let Some(Wait::Done { status, cwd }) = self.scanner.push(data) {
            self.done = true;
            self.status = Some((status, cwd));
        }
    }
}

impl Executor for BashSession {
    fn run(&mut self, command: &str) -> Result<Output, ExecError> {
        self.run_command(command)
    }

    /// Kill the session's process group and start a new session in the configured directory.
    fn restart(&mut self) -> Result<(), ExecError> {
        self.start()
    }

    fn cwd(&self) -> Option<PathBuf> {
        Some(self.cwd.clone())
    }

    fn run_code(&mut self, command: &str, output_dir: &Path) -> Result<CodeOutput, ExecError> {
        self.run_code_call(command, output_dir)
    }
}

/// A running shell. Dropping it kills its process group and reaps it.
#[derive(Debug)]
struct Shell {
    child: Child,
    stdin: ChildStdin,
    /// Chunks of the shell's stdout (`false`) and of its second pipe (`true`).
    rx: Receiver<(bool, Vec<u8>)>,
    pgid: Option<Pid>,
    /// The shell itself (the launcher's child under the launcher).
    shell_pid: Option<Pid>,
    /// The session's private temporary directory (under the launcher), removed at the end.
    tmp: Option<PathBuf>,
    /// The session's pids cgroup, when `processes` is limited and one can be made.
    cgroup: Option<PidsCgroup>,
}

enum Wait {
    Done { status: i32, cwd: Option<PathBuf> },
    TimedOut,
    Exited,
}

impl Shell {
    fn spawn(config: &SessionConfig) -> Result<(Shell, PathBuf), ExecError> {
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
                if let Some(n) = l.spec.limits.processes {
                    cgroup = PidsCgroup::create(n, &name);
                    if let Some(cg) = &cgroup {
                        cmd.arg("--cgroup").arg(cg.path());
                    }
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
                .chain(cgroup.iter().map(|c: &PidsCgroup| c.path().to_path_buf()))
                .collect();
            contain::register(p, dirs);
        }
        std::mem::forget(cleanup); // the Shell owns the directory now
        let mut shell = Shell {
            child,
            stdin,
            rx,
            pgid,
            shell_pid: pgid,
            tmp,
            cgroup,
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
        // ERR_FD for code execution calls, which capture stderr apart.
        let token = token()?;
        let script = format!(
            "exec {ERR_FD}>&2 2>&1\n{}\\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} 0 \"$PWD\" SG_END_{token}\n",
            config.limits.script()
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
            Scanner::new(&format!("SG_END_{token}"), 16 * 1024, None),
        );
        let deadline = Instant::now() + config.timeout.max(MIN_START_TIMEOUT);
        match shell.wait(&mut out, None, deadline) {
            Wait::Done { cwd, .. } => {
                if config.launcher.is_some() {
                    // The launcher's only child is the shell (exec'd by stage 2).
                    shell.shell_pid = pgid.and_then(|p| contain::children(p).into_iter().next());
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

    /// Kill every process the shell started (the shell itself stays).
    fn kill_descendants(&self) {
        if let Some(p) = self.shell_pid {
            contain::kill_tree(p, Duration::from_secs(2));
        }
    }

    /// Feed output into `out` (and `err`) until their sentinel lines, the deadline, or the
    /// shell's exit. Once `out` is done, `err` gets [`ERR_GRACE`] more; if its end line is
    /// still missing then, the call is done with `err` incomplete (`done` false).
    fn wait(&mut self, out: &mut Stream, mut err: Option<&mut Stream>, deadline: Instant) -> Wait {
        let mut grace: Option<Instant> = None;
        loop {
            if out.done {
                let err_done = err.as_ref().map_or(true, |e| e.done);
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
    fn exit_status(&mut self) -> Option<i32> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return status.code();
        }
        self.kill_group();
        self.child.wait().ok().and_then(|s| s.code())
    }

    fn kill_group(&self) {
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
            let _ = std::fs::remove_dir_all(t);
        }
    }
}

/// Removes a session's temporary directory if the start fails before a [`Shell`] owns it.
struct TmpGuard(Option<PathBuf>);

impl Drop for TmpGuard {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            let _ = std::fs::remove_dir_all(t);
        }
    }
}

fn read_pipe(mut out: impl Read, is_err: bool, tx: SyncSender<(bool, Vec<u8>)>) {
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

/// 32 random hex digits.
fn token() -> Result<String, ExecError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        ExecError::Io(std::io::Error::other(format!(
            "no randomness for the sentinel: {e}"
        )))
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Finds the sentinel line `\nSENTINEL STATUS PWD SENTINEL\n` in the stream and keeps what
/// comes before it in a [`Capture`].
struct Scanner<'r> {
    /// `\nSENTINEL `: the start of the sentinel line.
    start: Vec<u8>,
    /// ` SENTINEL\n`: its end.
    end: Vec<u8>,
    /// Bytes that might be the beginning of `start`, not yet committed.
    pending: Vec<u8>,
    /// After `start` was seen: the rest of the sentinel line so far.
    trailer: Option<Vec<u8>>,
    capture: Sink<'r>,
}

/// Longest sentinel line accepted (the working directory is in it).
const MAX_TRAILER: usize = 64 * 1024;

impl<'r> Scanner<'r> {
    fn new(sentinel: &str, max_output: usize, rules: Option<&'r RuleSet>) -> Scanner<'r> {
        Scanner {
            start: format!("\n{sentinel} ").into_bytes(),
            end: format!(" {sentinel}\n").into_bytes(),
            pending: Vec::new(),
            trailer: None,
            capture: Sink {
                redactor: rules.map(Redactor::new),
                buf: Vec::new(),
                capture: Capture::new(max_output),
            },
        }
    }

    fn push(&mut self, chunk: &[u8]) -> Option<Wait> {
        let trailer = match self.trailer.as_mut() {
            Some(t) => {
                t.extend_from_slice(chunk);
                t
            }
            None => {
                self.pending.extend_from_slice(chunk);
                match memchr::memmem::find(&self.pending, &self.start) {
                    Some(i) => {
                        self.capture.push(&self.pending[..i]);
                        let rest = self.pending.split_off(i + self.start.len());
                        self.pending.clear();
                        self.trailer.insert(rest)
                    }
                    None => {
                        let keep = self.pending.len().min(self.start.len() - 1);
                        let commit = self.pending.len() - keep;
                        self.capture.push(&self.pending[..commit]);
                        self.pending.drain(..commit);
                        return None;
                    }
                }
            }
        };
        let Some(j) = memchr::memmem::find(trailer, &self.end) else {
            if trailer.len() > MAX_TRAILER {
                // Not a sentinel line after all (cannot happen without the token): give up
                // on this call; the timeout restarts the session.
                trailer.truncate(MAX_TRAILER);
            }
            return None;
        };
        let line = &trailer[..j];
        let (status, pwd) = match memchr::memchr(b' ', line) {
            Some(k) => (&line[..k], &line[k + 1..]),
            None => (line, &b""[..]),
        };
        let status = std::str::from_utf8(status)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(-1);
        let cwd = Some(PathBuf::from(std::ffi::OsStr::from_bytes(pwd))).filter(|p| p.is_absolute());
        // Anything after the sentinel line came from a background job; it is dropped.
        Some(Wait::Done { status, cwd })
    }

    /// What was captured, with bytes that could have been the sentinel's start committed.
    fn into_output(mut self) -> (Vec<u8>, Option<Gap>) {
        let pending = std::mem::take(&mut self.pending);
        self.capture.push(&pending);
        self.capture.finish()
    }
}

/// Redacts (when configured) and then captures the command's output.
struct Sink<'r> {
    redactor: Option<Redactor<'r>>,
    buf: Vec<u8>,
    capture: Capture,
}

impl Sink<'_> {
    fn push(&mut self, data: &[u8]) {
        match &mut self.redactor {
            Some(r) => {
                self.buf.clear();
                r.feed(data, &mut self.buf);
                self.capture.push(&self.buf);
            }
            None => self.capture.push(data),
        }
    }

    fn finish(mut self) -> (Vec<u8>, Option<Gap>) {
        if let Some(r) = &mut self.redactor {
            self.buf.clear();
            r.finish(&mut self.buf);
            self.capture.push(&self.buf);
        }
        self.capture.finish()
    }
}

/// Keeps the first third and the last two thirds of `max` bytes of a stream, counting the
/// bytes and newlines that fall in between.
struct Capture {
    head: Vec<u8>,
    /// The stream's last bytes: at most `2 * tail_cap`, trimmed to `tail_cap` at the end.
    tail: Vec<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
    dropped_lines: u64,
}

impl Capture {
    fn new(max: usize) -> Capture {
        let head_cap = max / 3;
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: max - head_cap,
            dropped: 0,
            dropped_lines: 0,
        }
    }

    fn drop_bytes(&mut self, bytes: &[u8]) {
        self.dropped += bytes.len() as u64;
        self.dropped_lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
    }

    fn push(&mut self, mut data: &[u8]) {
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        if data.len() >= self.tail_cap {
            let old = std::mem::take(&mut self.tail);
            self.drop_bytes(&old);
            let (gone, kept) = data.split_at(data.len() - self.tail_cap);
            self.drop_bytes(gone);
            self.tail = old;
            self.tail.clear();
            self.tail.extend_from_slice(kept);
        } else {
            self.tail.extend_from_slice(data);
            if self.tail.len() > 2 * self.tail_cap {
                self.trim_tail();
            }
        }
    }

    /// Drops all but the last `tail_cap` bytes of the tail.
    fn trim_tail(&mut self) {
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        if excess > 0 {
            let gone: Vec<u8> = self.tail.drain(..excess).collect();
            self.drop_bytes(&gone);
        }
    }

    /// The kept output, and the gap when something was discarded: a marker line there says
    /// how many lines and bytes, and the [`Gap`] gives its place, so that a filter can count
    /// them in its own marker.
    fn finish(mut self) -> (Vec<u8>, Option<Gap>) {
        self.trim_tail();
        if self.dropped == 0 {
            let mut head = std::mem::take(&mut self.head);
            head.extend_from_slice(&self.tail);
            return (head, None);
        }
        // Cut on line boundaries near the gap, so that no line (and no secret in it) is kept
        // in part.
        let mut head = std::mem::take(&mut self.head);
        let mut tail = std::mem::take(&mut self.tail);
        if let Some(i) = memchr::memrchr(b'\n', &head) {
            if head.len() - i <= head.len() / 4 + 1 {
                let gone = head.split_off(i + 1);
                self.drop_bytes(&gone);
            }
        }
        if let Some(i) = memchr::memchr(b'\n', &tail) {
            if i <= tail.len() / 4 {
                let gone: Vec<u8> = tail.drain(..=i).collect();
                self.drop_bytes(&gone);
            }
        }
        // The newline that ends a partial head line belongs to the marker, not to the output.
        let start = head.len();
        if !head.is_empty() && !head.ends_with(b"\n") {
            head.push(b'\n');
        }
        head.extend_from_slice(
            format!(
                "[... {} lines, {} bytes omitted; the output was cut while it streamed: re-run \
                 with a narrower command (head, tail, grep, sed -n) to see that part ...]\n",
                self.dropped_lines, self.dropped
            )
            .as_bytes(),
        );
        let gap = Gap {
            marker: start..head.len(),
            lines: self.dropped_lines,
            bytes: self.dropped,
        };
        head.extend_from_slice(&tail);
        (head, Some(gap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = Capture::new(30);
        for i in 0..100 {
            c.push(format!("{i:03}\n").as_bytes());
        }
        let (out, gap) = c.finish();
        let gap = gap.expect("a gap");
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("000\n001\n"), "{text}");
        assert!(text.ends_with("098\n099\n"), "{text}");
        let marker = std::str::from_utf8(&out[gap.marker.clone()]).unwrap();
        assert_eq!(
            marker,
            format!(
                "[... {} lines, {} bytes omitted; the output was cut while it streamed: re-run \
                 with a narrower command (head, tail, grep, sed -n) to see that part ...]\n",
                gap.lines, gap.bytes
            )
        );
        let kept_lines = text.lines().filter(|l| l.len() == 3).count() as u64;
        assert_eq!(kept_lines * 4 + gap.bytes, 400, "{text}");
        assert_eq!(kept_lines + gap.lines, 100, "{text}");
    }

    #[test]
    fn scanner_finds_a_sentinel_split_across_chunks() {
        let mut s = Scanner::new("SG_END_abc", 1024, None);
        let stream = b"hello\nworld\nSG_END_abc 3 /tmp/x y SG_END_abc\ntrailing";
        let mut done = None;
        for chunk in stream.chunks(3) {
            if let Some(d) = s.push(chunk) {
                done = Some(d);
                break;
            }
        }
        match done {
            Some(Wait::Done { status, cwd }) => {
                assert_eq!(status, 3);
                assert_eq!(cwd, Some(PathBuf::from("/tmp/x y")));
            }
            _ => panic!("no sentinel"),
        }
        assert_eq!(s.into_output(), (b"hello\nworld".to_vec(), None));
    }
}
