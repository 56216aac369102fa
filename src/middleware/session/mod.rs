//! [`BashSession`]: the persistent bash session of the bash-tool documentation, done right.
//!
//! - **One bash process** (`bash --noprofile --norc`, non-interactive, so no job control), in
//!   its own process group, started in the configured directory with a **controlled
//!   environment**: the parent's environment is cleared and only [`ENV_ALLOWLIST`] is copied
//!   from it, plus the configured extras. State persists across calls: working directory,
//!   variables, functions, files.
//! - **stderr interleaved with stdout** in the order written: the session's first act is
//!   `exec 62>&2 2>&1`, so both go down one pipe. A code execution call
//!   ([`BashSession::run_code_call`]) sends its stderr to fd 62 instead, the session's second
//!   pipe, between begin and end lines of its own, so that it is captured apart; both pipes
//!   feed one channel, so neither fills up while the other is read.
//! - **A random sentinel per call** (16 bytes from the OS's random source, via `getrandom`),
//!   printed after the command with its exit status and the working directory. The command
//!   text is delivered as a counted payload (one short line to the session's wrapper
//!   functions, defined once at startup: `wrapper.rs`), read into a variable and run with
//!   `eval` at the top level, so an unterminated quote, a here-document, a backslash or any
//!   other text in the command cannot swallow or fake the sentinel line (code execution
//!   calls keep a quoted here-document whose delimiter is random too). The command's
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
//! - **The sandbox launcher** ([`SessionConfig::launcher`], see [`crate::sandbox`]): with
//!   `[sandbox] mode = "enforce"` the shell runs in the policy's jail (bubblewrap: its own
//!   mount view, user, PID, IPC, UTS, network and cgroup namespaces, no capabilities, no
//!   controlling terminal; Landlock and seccomp inside) and in a cgroup of its own (memory,
//!   processes, CPU), which the end of each call freezes and empties of everything but the
//!   shell; processes that left the process group (`setsid`, `timeout`, double forks) die
//!   with it, and parent-death signals end it with the guard process, even on SIGKILL.
//!
//! The shell exiting (`exit`, `set -e`, a fatal signal) is reported as an error and a new
//! session is started. Without the launcher, a process that leaves the process group
//! (`setsid`) and its parent escapes the kill.

mod capture;
mod config;
mod sentinel;
mod shell;
mod wrapper;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{CodeOutput, ExecError, Executor, Gap, Output};
use crate::redact::RuleSet;
pub use config::{Launcher, ResourceLimits, SessionConfig, StreamRedaction, ENV_ALLOWLIST};
use sentinel::{SentinelScanner, Stream};
use shell::{Shell, Wait};

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
        let script = match &output_dir {
            // A bash tool call: one short line to the functions defined at startup, and the
            // command as a counted payload (see `wrapper`).
            None => wrapper::call_line(&shell.id, &token, command),
            Some(dir) => code_call_script(command, &token, dir, shell.err_fd).into_bytes(),
        };
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
            SentinelScanner::new(&sentinel, self.config.max_output, rules),
        );
        let mut err = output_dir.is_some().then(|| {
            Stream::new(
                &begin,
                SentinelScanner::new(&sentinel, self.config.max_output, rules),
            )
        });
        let outcome = match shell
            .stdin
            .write_all(&script)
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
                let err_complete = err.as_ref().is_none_or(|e| e.done);
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
                let pgid = self.shell.as_ref().map(|s| s.child.id());
                let status = self.shell.as_mut().and_then(Shell::exit_status);
                let (output, gap) = out.scanner.into_output();
                let stopped = pgid
                    .and_then(|p| i32::try_from(p).ok())
                    .and_then(super::contain::take_stop_cause);
                if let Some(cause) = stopped {
                    let _ = self.start();
                    return Err(ExecError::Stopped { cause, output, gap });
                }
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

/// The wrapper of a code execution call (`$OUTPUT_DIR` set to `dir`, already quoted for single
/// quotes; stderr apart on `err_fd`), sent whole with the command in a quoted here-document.
fn code_call_script(command: &str, token: &str, dir: &str, err_fd: u32) -> String {
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
    // 62 unless an open-files limit says lower, kept from startup), with begin and end lines of its own, and runs only if
    // `$OUTPUT_DIR` really holds the call's directory (an earlier `readonly` cannot
    // leave a stale one).
    let (err_begin, run, err_end) = (
        format!("\\builtin printf '%s\\n' SG_BEGIN_{token} >&{err_fd}\n"),
        format!(
            "if \\builtin export OUTPUT_DIR='{dir}' 2>/dev/null && [[ $OUTPUT_DIR == '{dir}' ]]; \
                     then \\builtin eval \"$SG_CMD_{token}\" < /dev/null 2>&{err_fd}; \
                     else \\builtin printf 'shellgate: OUTPUT_DIR cannot be set (is it readonly?); \
                     the command was not run\\n' >&{err_fd}; (exit 125); fi\n"
        ),
        format!(
            "\\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} 0 - SG_END_{token} >&{err_fd}\n"
        ),
    );
    format!(
        "\\builtin jobs >/dev/null 2>&1\n\\builtin printf '%s\\n' SG_BEGIN_{token}\n{err_begin}\
             IFS= \\builtin read -r -d '' SG_CMD_{token} <<'SG_EOF_{token}' || :\n\
             {command}{newline}SG_EOF_{token}\n\
             {run}\
             \\builtin printf '\\n%s %d %s %s\\n' SG_END_{token} \"$?\" \"$PWD\" SG_END_{token}\n\
             {err_end}\
             \\builtin unset SG_CMD_{token}\n"
    )
}

/// What one script run gave: the status, stdout (or everything, interleaved), and for a
/// code execution call stderr.
struct Ran {
    status: i32,
    out: (Vec<u8>, Option<Gap>),
    err: Option<(Vec<u8>, Option<Gap>)>,
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
