//! `serve --ask deny|allow|prompt`: who decides the commands a policy marks `ask`.
//!
//! With `prompt`, the application on the other end of the JSON-lines channel does: for each
//! such command serve writes one line
//!
//! ```json
//! {"type": "approval_request", "tool_use_id": "toolu_..", "command": "make test",
//!  "cwd": "/srv/project", "message": "...", "reasons": [{"code", "verdict", "rule", "message", "span"}]}
//! ```
//!
//! and waits for one line back,
//! `{"type": "approval_response", "tool_use_id": "toolu_..", "decision": "allow"}` (or
//! `"deny"`), before the call's answer. No answer within the timeout, end of input, an answer
//! that is not exactly `"allow"`, or another kind of line instead of the answer (that line is
//! then answered as usual, after this call's) is a deny. An `approval_response` that comes
//! when none is awaited (late, or for another call) is ignored, with a note on stderr.

use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde_json::{json, Value};
use shellgate::middleware::{ApprovalRequest, Approver};
use shellgate::report;

/// Who decides `ask` verdicts in `serve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Ask {
    /// Nobody: a command that needs approval is refused (the default).
    Deny,
    /// Approve every one (the policy's `ask` then means `allow`).
    Allow,
    /// Ask the application over the JSON-lines channel: an `approval_request` line out, an
    /// `approval_response` line back.
    Prompt,
}

/// One read from standard input.
pub enum Event {
    /// A line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the cap, consumed and dropped.
    TooLong,
    /// End of input.
    Eof,
    /// Reading failed.
    Failed(String),
}

/// Standard input as lines, read by a thread so that a wait for an answer can time out;
/// shared by serve's loop and the approver.
#[derive(Clone)]
pub struct Lines {
    rx: Arc<Mutex<Receiver<Event>>>,
    /// A line the approver read instead of its answer, for serve's loop to answer next.
    pushed_back: Arc<Mutex<Option<Event>>>,
}

impl Lines {
    /// Starts the reader thread.
    ///
    /// `on_eof` runs on the reader thread once stdin has ended (serve stops a running command
    /// then). The channel holds a few lines, so that end of input is seen while a command
    /// runs, and a flood of input still waits in the pipe rather than in memory.
    pub fn stdin(on_eof: impl FnOnce() + Send + 'static) -> Lines {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        std::thread::spawn(move || {
            read_all(&tx);
            on_eof();
        });
        Lines {
            rx: Arc::new(Mutex::new(rx)),
            pushed_back: Arc::new(Mutex::new(None)),
        }
    }

    /// The next event, waiting as long as it takes.
    pub fn next(&self) -> Event {
        if let Some(ev) = self.take_pushed_back() {
            return ev;
        }
        match self.rx.lock() {
            Ok(rx) => rx.recv().unwrap_or(Event::Eof),
            Err(_) => Event::Failed("the input reader failed".into()),
        }
    }

    /// The next event within `wait`, or `None`.
    fn next_within(&self, wait: Duration) -> Option<Event> {
        if let Some(ev) = self.take_pushed_back() {
            return Some(ev);
        }
        let rx = self.rx.lock().ok()?;
        match rx.recv_timeout(wait) {
            Ok(ev) => Some(ev),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Event::Eof),
        }
    }

    fn take_pushed_back(&self) -> Option<Event> {
        self.pushed_back.lock().ok().and_then(|mut p| p.take())
    }

    fn push_back(&self, ev: Event) {
        if let Ok(mut p) = self.pushed_back.lock() {
            *p = Some(ev);
        }
    }
}

fn read_all(tx: &SyncSender<Event>) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        let ev = match super::read_line_capped(&mut input, &mut line, super::MAX_LINE) {
            Ok(super::LineRead::Line) => Event::Line(std::mem::take(&mut line)),
            Ok(super::LineRead::TooLong) => Event::TooLong,
            Ok(super::LineRead::Eof) => Event::Eof,
            Err(e) => Event::Failed(format!("cannot read stdin: {e}")),
        };
        let last = matches!(ev, Event::Eof | Event::Failed(_));
        if tx.send(ev).is_err() || last {
            return;
        }
    }
}

/// `Some((tool_use_id, allowed))` when `line` is an `approval_response` (a missing or
/// unknown decision is a deny).
pub fn approval_response(line: &[u8]) -> Option<(String, bool)> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("approval_response") {
        return None;
    }
    let id = v
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Some((
        id,
        v.get("decision").and_then(Value::as_str) == Some("allow"),
    ))
}

/// Asks the application over the JSON-lines channel; see the [module docs](self).
pub struct LineApprover {
    lines: Lines,
    timeout: Duration,
}

impl LineApprover {
    /// Reads answers from `lines`, waiting at most `timeout` for each.
    pub fn new(lines: Lines, timeout: Duration) -> LineApprover {
        LineApprover { lines, timeout }
    }
}

impl Approver for LineApprover {
    fn approve(&mut self, req: &ApprovalRequest<'_>) -> bool {
        let id = req.tool_use_id;
        let request = json!({
            "type": "approval_request",
            "tool_use_id": id,
            "command": req.command,
            "cwd": req.cwd,
            "message": report::for_approval(req.command, req.decision),
            "reasons": req.decision.reasons,
        });
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{request}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return false;
        }
        drop(out);
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ev = if left.is_zero() {
                None
            } else {
                self.lines.next_within(left)
            };
            match ev {
                None => {
                    eprintln!(
                        "shellgate: no approval_response for {id} within {:?}: refused",
                        self.timeout
                    );
                    return false;
                }
                Some(Event::Line(line)) => match approval_response(&line) {
                    Some((rid, allowed)) if rid == id => return allowed,
                    Some((rid, _)) => {
                        eprintln!("shellgate: ignoring an approval_response for {rid:?} while waiting for {id}");
                    }
                    None => {
                        eprintln!(
                            "shellgate: another line came instead of the approval_response for {id}: refused"
                        );
                        self.lines.push_back(Event::Line(line));
                        return false;
                    }
                },
                Some(ev @ (Event::Eof | Event::Failed(_))) => {
                    self.lines.push_back(ev);
                    return false;
                }
                Some(Event::TooLong) => {
                    self.lines.push_back(Event::TooLong);
                    return false;
                }
            }
        }
    }
}
