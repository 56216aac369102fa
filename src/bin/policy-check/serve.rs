//! `policy-check serve` and `policy-check run`: commands through a policy into a real bash
//! session.
//!
//! `serve` reads JSON lines on stdin and writes exactly one JSON line per input line:
//! - a `tool_use` block → its `tool_result` block;
//! - an object with a `content` array (an assistant message or a whole API response) → one
//!   user message `{"role": "user", "content": [result, ...]}` answering each `tool_use` and
//!   `server_tool_use` in it, in order (a tool not enabled by `--tools` gets an `is_error`
//!   result);
//! - with `--tools`, `str_replace_based_edit_tool` calls get a `tool_result`, and
//!   `bash_code_execution` / `text_editor_code_execution` calls their typed results
//!   (docs/serve.md);
//! - anything else (malformed JSON, not UTF-8, a blank line, another kind of object) →
//!   `{"type": "error", "error": {"type": "invalid_request_error", "message": "..."}}`.
//!
//! One bash session serves every line. At end of input (by default) every line already read
//! is answered, each under its timeout, then the session is killed with every process it
//! started: `echo LINE | policy-check serve` runs LINE. `--at-eof stop` stops a running
//! command at once instead and answers lines not yet run with an error. A closed stdout (the
//! client gone) kills the session and every process it started at once, whatever runs, and
//! serve exits 2.
//! SIGTERM, SIGINT and SIGHUP kill the session (every process it started), drop the pending
//! call (said on stderr) and exit 128+N. Exit status: 0 at end of input, 2 when the session
//! cannot start or stdout fails.
//!
//! The shell starts through the sandbox launcher (`policy-check sandbox`): its own PID
//! namespace and parent-death signals always (so nothing outlives serve, even SIGKILL of
//! serve), Landlock and limits when the policy's `[sandbox] mode` is `enforce`.
//!
//! With `--ask prompt`, a call the policy marks `ask` first gets an `approval_request` line and
//! waits for the application's `approval_response` line ([`crate::approve`]).
//!
//! `run` runs one command: its output goes to stdout. Exit status: 0 the command ran and
//! exited 0; 1 the policy refused it (the explanation goes to stderr); 2 a usage error or an
//! invalid policy; 3 it ran and failed (nonzero exit status, timeout, session error).

use crate::error::CliError;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shellgate::middleware::{
    contain, Answer, ApprovalRequest, AuditLog, BashSession, Guard, Outcome, OutputFiles,
    ReferenceSetup, ToolSet, ToolUse, NOTHING_TO_ANSWER,
};
use shellgate::Policy;

use crate::approve::{approval_response, Ask, Event, LineApprover, Lines};

/// Session options shared by `serve` and `run`.
#[derive(clap::Args, Clone)]
pub struct SessionArgs {
    /// Run bash directly, without the launcher: no Landlock, no PID namespace (commands
    /// that need the sandbox are refused with `sandbox-required`).
    #[arg(long)]
    no_sandbox: bool,
    /// Let background jobs outlive the call that started them (default: every process a
    /// call started is killed when it ends).
    #[arg(long)]
    keep_background: bool,
    #[command(flatten)]
    limits: super::sandbox::LimitArgs,
    /// The workspace roots, when narrower than the working directory (`policy-check mcp`
    /// narrows them to the client's roots); empty: the working directory.
    #[arg(skip)]
    pub(crate) workspace: Vec<std::path::PathBuf>,
}

/// Which tool shapes `serve` answers, and their limits.
#[derive(clap::Args)]
pub struct ToolArgs {
    /// The tools answered, comma-separated: `bash` (tool_use `bash`), `text-editor`
    /// (`str_replace_based_edit_tool`), `code-execution` (`bash_code_execution` and
    /// `text_editor_code_execution`). Calls of others get an error result.
    #[arg(long, default_value = "bash", value_parser = ToolSet::parse)]
    pub(crate) tools: ToolSet,
    /// Answer at most N calls in any 60 seconds; others get `too_many_requests` (code
    /// execution) or an `is_error` result.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_calls_per_minute: Option<u32>,
    /// Where code execution calls get their `$OUTPUT_DIR` and where their files are kept
    /// (`files/FILE_ID/NAME`; kept after exit). Default: a temporary directory removed at exit.
    #[arg(long, value_name = "DIR")]
    pub(crate) outputs: Option<std::path::PathBuf>,
    /// Largest `$OUTPUT_DIR` file returned; a larger one answers `output_file_too_large`.
    #[arg(long, value_name = "BYTES", default_value = "33554432")]
    pub(crate) max_output_file_bytes: u64,
}

/// What `serve` adds to the session options.
pub struct ServeOptions<'a> {
    /// `--audit FILE`.
    pub audit: Option<&'a Path>,
    /// `--ask` and `--ask-timeout`.
    pub ask: (Ask, Duration),
    /// `--at-eof`.
    pub at_eof: AtEof,
    /// `--tools` and their limits.
    pub tools: &'a ToolArgs,
}

/// What `serve` does at end of input.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AtEof {
    /// Answer every line already read (each under its timeout), then exit.
    Finish,
    /// Stop a running command at once; lines not yet run get an error answer.
    Stop,
}

/// Watch stdout on a thread of its own: when the reading end is closed (the client is gone:
/// a pipe reports POLLERR, a terminal POLLHUP), kill every session at once and exit 2, even
/// while a command runs and nothing is being written.
pub(crate) fn watch_stdout(what: &'static str) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let spawned = std::thread::Builder::new()
        .name("shellgate-stdout".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            loop {
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => {
                        let gone = fds[0].revents().is_some_and(|r| {
                            r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
                        });
                        if gone {
                            break;
                        }
                    }
                    Err(nix::errno::Errno::EINTR) => continue,
                    // Cannot watch: the failed write will say it instead.
                    Err(_) => return,
                }
            }
            STOPPING.store(true, Ordering::SeqCst);
            contain::stop_all_sessions("the client closed stdout");
            contain::end_all_sessions();
            if let Ok(dir) = TEMP_OUTPUTS.lock() {
                if let Some(d) = dir.as_ref() {
                    let _ = std::fs::remove_dir_all(d);
                }
            }
            // Not eprintln!: it panics when stderr is closed too (a client gone closes both),
            // and the thread would end without the exit.
            let _ = writeln!(
                std::io::stderr(),
                "policy-check {what}: stdout was closed (the client is gone): the bash session and every process it started were killed"
            );
            std::process::exit(2);
        });
    if let Err(e) = spawned {
        eprintln!("policy-check {what}: cannot watch stdout: {e}");
    }
}

/// serve's temporary outputs directory (no `--outputs`), removed by the signal handler too.
static TEMP_OUTPUTS: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Set by the signal handler: the process is ending, whatever the main thread sees.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Once a signal is being handled, the main thread writes nothing more and waits for the
/// handler to exit the process (a call it was running fails because its session was killed).
fn unless_stopping() {
    while STOPPING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

/// Kill every session and exit on SIGTERM, SIGINT or SIGHUP.
pub(crate) fn handle_signals(what: &'static str) -> Result<(), CliError> {
    contain::on_termination_signals(move |sig| {
        STOPPING.store(true, Ordering::SeqCst);
        contain::end_all_sessions();
        if let Ok(dir) = TEMP_OUTPUTS.lock() {
            if let Some(d) = dir.as_ref() {
                let _ = std::fs::remove_dir_all(d);
            }
        }
        // Not eprintln!: it panics when stderr is closed, and the signal would not end us.
        let _ = writeln!(
            std::io::stderr(),
            "policy-check {what}: {sig}: the bash session and every process it started were killed; the pending call, if any, was dropped unanswered"
        );
        std::process::exit(128 + sig as i32);
    })
    .map_err(|e| CliError::Failed(format!("cannot handle signals: {e}")))
}

fn guard(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
) -> Result<Guard<BashSession>, CliError> {
    let tools = ToolArgs {
        tools: ToolSet::default(),
        max_calls_per_minute: None,
        outputs: None,
        max_output_file_bytes: 32 << 20,
    };
    tool_guard(policy, cwd, timeout, args, &tools)
}

/// serve's guard with the tool shapes of `tools` ([`Guard::reference_tools`], which the
/// Python package uses too): the session under this program's `sandbox` subcommand unless
/// `--no-sandbox`, code execution's files under `--outputs`.
pub(crate) fn tool_guard(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
    tools: &ToolArgs,
) -> Result<Guard<BashSession>, CliError> {
    let mut setup = ReferenceSetup::new(tools.tools);
    setup.keep_background = args.keep_background;
    setup.workspace = args.workspace.clone();
    setup.max_output_file_bytes = Some(tools.max_output_file_bytes);
    if !args.no_sandbox {
        // No bubblewrap, no jail: refuse to start rather than run unconfined.
        shellgate::sandbox::bwrap_required(policy).map_err(|e| e.to_string())?;
        let program =
            std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        setup.launcher = Some(program);
    }
    if tools.tools.code_execution {
        let o = match &tools.outputs {
            Some(dir) => OutputFiles::new(dir),
            None => OutputFiles::temporary().inspect(|o| {
                if let Ok(mut t) = TEMP_OUTPUTS.lock() {
                    *t = Some(o.root().to_path_buf());
                }
            }),
        };
        setup.outputs =
            Some(o.map_err(|e| format!("cannot make the code execution outputs directory: {e}"))?);
    }
    let (mut guard, _) = Guard::reference_tools(policy.clone(), cwd, timeout, setup, |spec| {
        args.limits.apply(spec)
    })
    .map_err(|e| e.to_string())?;
    if let Some(n) = tools.max_calls_per_minute {
        guard = guard.with_rate_limit(n);
    }
    // Every call that may write is snapshotted first (issue 27): `policy-check undo`.
    crate::undo::with_snapshots(guard, policy, cwd)
}

/// `policy-check serve`: JSON lines in, one JSON line out per line in (and, with
/// `--ask prompt`, an `approval_request` line out and its answer in: see [`approve`]).
pub fn serve(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
    serve: ServeOptions<'_>,
) -> Result<u8, CliError> {
    let ServeOptions {
        audit,
        ask,
        at_eof,
        tools,
    } = serve;
    handle_signals("serve")?;
    watch_stdout("serve");
    let mut guard = tool_guard(policy, cwd, timeout, args, tools)?;
    if let Some(path) = audit {
        guard = guard.with_audit(AuditLog::open(path).map_err(|e| e.to_string())?);
    }
    // Input is read on a thread of its own (`Lines`), so that end of input is seen while a
    // command runs, and an approval can be waited for with a timeout. `busy` and `eof` are
    // each set before the other is read (both SeqCst), so either the reader sees the call
    // running and kills it, or the loop sees end of input first.
    let busy = Arc::new(AtomicBool::new(false));
    let eof = Arc::new(AtomicBool::new(false));
    let input = {
        let (busy, eof) = (busy.clone(), eof.clone());
        Lines::stdin(move || {
            eof.store(true, Ordering::SeqCst);
            if at_eof == AtEof::Stop && busy.load(Ordering::SeqCst) {
                contain::stop_all_sessions("end of input, with --at-eof stop");
            }
        })
    };
    guard = match ask.0 {
        Ask::Deny => guard,
        Ask::Allow => guard.with_approver(|_: &ApprovalRequest<'_>| true),
        Ask::Prompt => guard.with_approver(LineApprover::new(input.clone(), ask.1)),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    loop {
        let event = input.next();
        busy.store(true, Ordering::SeqCst);
        let stopped = at_eof == AtEof::Stop && eof.load(Ordering::SeqCst);
        let answered = match event {
            Event::Eof => break,
            Event::Line(_) if stopped => {
                error("end of input before this line was run: it was not run")
            }
            Event::Line(line) => match approval_response(&line) {
                // An answer nobody waits for (late, or for another call) gets none.
                Some((id, _)) => {
                    eprintln!(
                        "shellgate: ignoring an approval_response for {id:?}: none is awaited"
                    );
                    busy.store(false, Ordering::SeqCst);
                    continue;
                }
                None => answer(&mut guard, &line),
            },
            Event::TooLong => error(&format!(
                "line longer than {} bytes, skipped",
                super::MAX_LINE
            )),
            Event::Failed(e) => return Err(e.into()),
        };
        busy.store(false, Ordering::SeqCst);
        unless_stopping();
        let mut text = answered.map_err(|e| format!("cannot encode an answer: {e}"))?;
        text.push('\n');
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| CliError::write("stdout", e))?;
    }
    // Dropping the guard drops the session, which kills its process group.
    drop(guard);
    Ok(0)
}

fn answer(guard: &mut Guard<BashSession>, line: &[u8]) -> serde_json::Result<String> {
    let Ok(text) = std::str::from_utf8(line) else {
        return error("the line is not valid UTF-8");
    };
    let text = text.trim();
    if text.is_empty() {
        return error("empty line: expected a tool_use block or a message with a content array");
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return error(&format!("malformed JSON: {e}")),
    };
    match guard.handle_json(&value) {
        // An empty user message is no answer: a loop would append it.
        Ok(Answer::Message(m)) if m.content.is_empty() => error(NOTHING_TO_ANSWER),
        Ok(answer) => serde_json::to_string(&answer),
        Err(not_a_call) => error(&not_a_call.to_string()),
    }
}

/// `{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}`, in that
/// order (serde_json's `Value` would sort the keys).
fn error(message: &str) -> serde_json::Result<String> {
    Ok(format!(
        "{{\"type\":\"error\",\"error\":{{\"type\":\"invalid_request_error\",\"message\":{}}}}}",
        serde_json::to_string(message)?
    ))
}

/// `policy-check run`: one command through the policy in a fresh bash session.
pub fn run(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
    command: &str,
) -> Result<u8, CliError> {
    handle_signals("run")?;
    let mut guard = guard(policy, cwd, timeout, args)?;
    // A bash call: always a `tool_result`.
    let call = guard.handle(&ToolUse::bash("run", command));
    unless_stopping();
    let content = &call.result.into_tool_result().content;
    let (code, to_stderr) = match call.outcome {
        Outcome::Completed { status: Some(0) } => (0, false),
        Outcome::Refused { .. } => (1, true),
        Outcome::Invalid => return Err(content.clone().into()),
        _ => (3, false),
    };
    let text = match content.as_str() {
        "(no output)" if code == 0 => String::new(),
        c if c.ends_with('\n') => c.to_string(),
        c => format!("{c}\n"),
    };
    let written = if to_stderr {
        std::io::stderr().write_all(text.as_bytes())
    } else {
        let mut out = std::io::stdout();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    written.map_err(|e| CliError::write("stdout", e))?;
    Ok(code)
}
