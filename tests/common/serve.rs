//! `policy-check serve` as a child process, driven one JSON line at a time: what the sandbox
//! and serve tests both need. It is killed when dropped, so a failing test leaves no session.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `policy-check serve --policy DIR/policy.toml --cwd WS EXTRA...`.
pub struct Serve {
    /// The serve process (tests signal or kill it).
    pub child: Child,
    /// Its stdin; `None` once closed (end of input).
    pub stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Serve {
    /// Start serve with the policy `dir/policy.toml` in workspace `ws` (stderr discarded).
    pub fn start(dir: &Path, ws: &Path, extra: &[&str]) -> Serve {
        Serve::start_with_env(dir, ws, extra, &[])
    }

    /// [`Serve::start`] with these environment variables set too.
    pub fn start_with_env(dir: &Path, ws: &Path, extra: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_policy-check"))
            .env("SHELLGATE_STATE_DIR", super::test_state_dir())
            .envs(env.iter().copied())
            .arg("serve")
            .arg("--policy")
            .arg(dir.join("policy.toml"))
            .arg("--cwd")
            .arg(ws)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start policy-check serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("serve's stdout"));
        Serve {
            child,
            stdin,
            stdout,
        }
    }

    /// Write one JSON line.
    pub fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Read one JSON line.
    pub fn read(&mut self) -> Value {
        let mut l = String::new();
        self.stdout.read_line(&mut l).unwrap();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{l:?}: {e}"))
    }

    /// Send a `bash` tool_use of `command` (id `t`).
    pub fn send_bash(&mut self, command: &str) {
        self.send(
            &serde_json::json!({"type": "tool_use", "id": "t", "name": "bash",
                                      "input": {"command": command}}),
        );
    }

    /// Send a `bash` tool_use of `command` and read its answer.
    pub fn call_bash(&mut self, command: &str) -> Value {
        self.send_bash(command);
        self.read()
    }

    /// Serve's process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("a pid fits in i32")
    }

    /// Wait for serve to exit (within `within`).
    pub fn exits_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let until = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < until, "serve did not exit in {within:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Close stdin (end of input) and wait: serve's exit code.
    pub fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().unwrap().code()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
