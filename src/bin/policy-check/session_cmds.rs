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
//! With `--ask prompt`, a call the policy marks `ask` first gets an `approval_request` line and
//! waits for the application's `approval_response` line ([`crate::approve`]).
//!
//! One bash session serves every line; at end of input it is killed (its whole process group).
//! Exit status: 0 at end of input, 2 when the session cannot start or stdout fails.
//!
//! `run` runs one command: its output goes to stdout. Exit status: 0 the command ran and
//! exited 0; 1 the policy refused it (the explanation goes to stderr); 2 a usage error or an
//! invalid policy; 3 it ran and failed (nonzero exit status, timeout, session error).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use shellgate::middleware::{ApprovalRequest, AuditLog, BashSession, Guard, Outcome, NOT_A_CALL};
use shellgate::Policy;

use crate::approve::{approval_response, Ask, Event, LineApprover, Lines};

fn guard(policy: &Policy, cwd: &Path, timeout: Duration) -> Result<Guard<BashSession>, String> {
    Guard::reference(policy.clone(), cwd, timeout).map_err(|e| e.to_string())
}

/// `policy-check serve`: JSON lines in, one JSON line out per line in (and, with
/// `--ask prompt`, an `approval_request` line out and its answer in: see [`approve`]).
pub fn serve_cmd(
    policy: &Policy,
    cwd: &Path,
    timeout: Duration,
    audit: Option<&Path>,
    ask: (Ask, Duration),
) -> Result<u8, String> {
    let mut guard = guard(policy, cwd, timeout)?;
    if let Some(path) = audit {
        guard = guard.with_audit(AuditLog::open(path).map_err(|e| e.to_string())?);
    }
    // Lines are capped like `check`'s, so endless input cannot exhaust memory; a line that
    // is too long still gets its answer.
    let input = Lines::stdin();
    guard = match ask.0 {
        Ask::Deny => guard,
        Ask::Allow => guard.with_approver(|_: &ApprovalRequest<'_>| true),
        Ask::Prompt => guard.with_approver(LineApprover::new(input.clone(), ask.1)),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    loop {
        let answered = match input.next() {
            Event::Eof => break,
            Event::Line(line) => match approval_response(&line) {
                // An answer nobody waits for (late, or for another call) gets none.
                Some((id, _)) => {
                    eprintln!(
                        "shellgate: ignoring an approval_response for {id:?}: none is awaited"
                    );
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
    command: &str,
) -> Result<u8, String> {
    let mut guard = guard(policy, cwd, timeout)?;
    let call = guard.call(
        "run",
        &shellgate::middleware::BashInput::Command(command.to_string()),
    );
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
