//! `policy-check serve` and `policy-check run`: commands through a policy into a real bash
//! session.
//!
//! `serve` reads JSON lines on stdin and writes exactly one JSON line per input line:
//! - a `tool_use` block → its `tool_result` block;
//! - an object with a `content` array (an assistant message or a whole API response) → one
//!   user message `{"role": "user", "content": [tool_result, ...]}` answering each `tool_use`
//!   in it, in order (a tool other than `bash` gets an `is_error` result);
//! - anything else (malformed JSON, not UTF-8, a blank line, another kind of object) →
//!   `{"type": "error", "error": {"type": "invalid_request_error", "message": "..."}}`.
//!
//! One bash session serves every line. At end of input (by default) a running command is
//! stopped at once, lines read but not yet run are answered with an error, and the session
//! is killed with every process it started; `--at-eof finish` answers every line read first.
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

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shellgate::evaluate::SandboxState;
use shellgate::middleware::sandbox::{self, SandboxSpec};
use shellgate::middleware::{
    contain, ApprovalRequest, AuditLog, BashSession, Guard, Launcher, Outcome, NOT_A_CALL,
};
use shellgate::Policy;

use crate::approve::{approval_response, Ask, Event, LineApprover, Lines};

/// Session options shared by `serve` and `run`.
#[derive(clap::Args)]
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
    limits: super::sandbox_cmd::LimitArgs,
}

/// What `serve` does at end of input.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AtEof {
    /// Stop a running command at once; lines not yet run get an error answer.
    Stop,
    /// Answer every line already read, then exit.
    Finish,
}

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
fn handle_signals(what: &'static str) -> Result<(), String> {
    contain::on_termination_signals(move |sig| {
        STOPPING.store(true, Ordering::SeqCst);
        contain::end_all_sessions();
        eprintln!(
            "policy-check {what}: {sig}: the bash session and every process it started were              killed; the pending call, if any, was dropped unanswered"
        );
        std::process::exit(128 + sig as i32);
    })
    .map_err(|e| format!("cannot handle signals: {e}"))
}

fn guard(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
) -> Result<Guard<BashSession>, String> {
    Guard::reference_with(policy.clone(), cwd, timeout, |config, ctx| {
        let mut config = config.keep_background(args.keep_background);
        if args.no_sandbox {
            ctx.sandbox = SandboxState::Off;
        } else {
            ctx.sandbox = sandbox::state_for(policy);
            let mut spec = SandboxSpec::from_policy(policy, ctx);
            spec.landlock = ctx.sandbox == SandboxState::Enforced;
            args.limits.apply(&mut spec);
            let program =
                std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
            config = config.launcher(Launcher { program, spec });
        }
        Ok(config)
    })
    .map_err(|e| e.to_string())
}

/// `policy-check serve`: JSON lines in, one JSON line out per line in (and, with
/// `--ask prompt`, an `approval_request` line out and its answer in: see [`approve`]).
pub fn serve_cmd(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    audit: Option<&Path>,
    ask: (Ask, Duration),
    args: &SessionArgs,
    at_eof: AtEof,
) -> Result<u8, String> {
    handle_signals("serve")?;
    let mut guard = guard(policy, cwd, timeout, args)?;
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
                contain::kill_all_sessions();
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
            Event::Failed(e) => return Err(e),
        };
        busy.store(false, Ordering::SeqCst);
        unless_stopping();
        let mut text = answered.map_err(|e| format!("cannot encode an answer: {e}"))?;
        text.push('\n');
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write output: {e}"))?;
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
    match guard.handle_value(&value) {
        Some(answer) => serde_json::to_string(&answer),
        None => error(NOT_A_CALL),
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
pub fn run_cmd(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    args: &SessionArgs,
    command: &str,
) -> Result<u8, String> {
    handle_signals("run")?;
    let mut guard = guard(policy, cwd, timeout, args)?;
    let call = guard.call(
        "run",
        &shellgate::middleware::BashInput::Command(command.to_string()),
    );
    unless_stopping();
    let content = &call.result.content;
    let (code, to_stderr) = match call.outcome {
        Outcome::Completed { status: Some(0) } => (0, false),
        Outcome::Refused { .. } => (1, true),
        Outcome::Invalid => return Err(content.clone()),
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
    written.map_err(|e| format!("cannot write output: {e}"))?;
    Ok(code)
}
