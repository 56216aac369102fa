//! `policy-check mcp` over stdio with raw JSON-RPC: the handshake, the tools, refusals, a
//! hostile client (malformed JSON, batches, a huge line, calls before `initialize`), and
//! cancellation killing what the call started. The official Python client's run is
//! python/tests/test_mcp_client.py.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Mcp {
    fn start(workspace: &std::path::Path) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_policy-check"))
            .args(["mcp", "--policy", "developer", "--cwd"])
            .arg(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start policy-check mcp");
        let stdin = child.stdin.take();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the server wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines,
        }
    }

    fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    fn next(&self) -> Value {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("an answer from the server")
    }

    /// The answer with this id (notifications in between are skipped).
    fn answer(&self, id: i64) -> Value {
        loop {
            let v = self.next();
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        let init = self.answer(1);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    fn call(&mut self, id: i64, tool: &str, arguments: Value) -> (String, bool) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
        let answer = self.answer(id);
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        (text.to_string(), result["isError"] == json!(true))
    }

    /// Close stdin (the MCP shutdown) and wait for the exit status.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_timeout(&mut self.child, Duration::from_secs(10)).expect("the server exits")
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_timeout(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Pids whose command line is exactly `argv` (from /proc).
fn processes_with(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

fn wait_until(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn handshake_tools_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hi\n").unwrap();
    let mut mcp = Mcp::start(dir.path());
    let init = mcp.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "shellgate");
    mcp.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = mcp.answer(2);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bash", "str_replace_based_edit_tool"]);
    assert_eq!(
        mcp.call(3, "bash", json!({"command": "ls"})),
        ("a.txt\n".into(), false)
    );
    // Output is redacted before the client sees it.
    let (text, _) = mcp.call(
        30,
        "bash",
        json!({"command": "echo key=ghp_q7rk2vbn9wlmz4xt8yh3pjc6dfgs1uawQ7Rk"}),
    );
    assert!(
        text.contains("[REDACTED:") && !text.contains("ghp_q7rk"),
        "{text}"
    );
    let (text, is_error) = mcp.call(4, "bash", json!({"command": "cat /etc/shadow"}));
    assert!(is_error && text.contains("[path-read-outside]"), "{text}");
    let (text, is_error) = mcp.call(
        5,
        "str_replace_based_edit_tool",
        json!({"command": "create", "path": "/tmp/shellgate-mcp-outside.txt", "file_text": "x"}),
    );
    assert!(is_error && text.contains("[path-write-outside]"), "{text}");
    assert!(!std::path::Path::new("/tmp/shellgate-mcp-outside.txt").exists());
    // Invalid arguments are an isError result too, never a crash.
    let (text, is_error) = mcp.call(6, "bash", json!({"command": 42}));
    assert!(is_error && text.contains("command"), "{text}");
    // An unknown tool is a protocol error naming the tools.
    mcp.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "python", "arguments": {}}}));
    let unknown = mcp.answer(7);
    assert!(unknown["error"]["message"]
        .as_str()
        .unwrap()
        .contains("\"bash\""));
    assert!(mcp.finish().success());
}

#[test]
fn a_hostile_client_gets_errors_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = Mcp::start(dir.path());
    // Before initialize: a request is refused saying why, a notification ignored.
    mcp.send(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "touch pwned"}}}));
    let early = mcp.answer(10);
    assert_eq!(early["error"]["code"], -32600);
    assert!(early["error"]["message"]
        .as_str()
        .unwrap()
        .contains("before initialize"));
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Not JSON, not UTF-8, a batch, JSON that is no JSON-RPC message.
    mcp.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 11, \"method\": ");
    let parse = mcp.next();
    assert_eq!(
        (parse["error"]["code"].clone(), parse["id"].clone()),
        (json!(-32700), Value::Null)
    );
    mcp.send_raw(b"\xff\xfe");
    assert_eq!(mcp.next()["error"]["code"], -32700);
    mcp.send_raw(b"[{\"jsonrpc\": \"2.0\", \"id\": 12, \"method\": \"ping\"}]");
    assert_eq!(mcp.next()["error"]["code"], -32600);
    mcp.send(json!({"jsonrpc": "1.0", "id": 13, "method": 7}));
    let bad = mcp.next();
    assert_eq!(
        (bad["error"]["code"].clone(), bad["id"].clone()),
        (json!(-32600), json!(13))
    );
    // A line past the limit is dropped with an error, and the server reads on.
    let mut huge =
        b"{\"jsonrpc\": \"2.0\", \"id\": 14, \"method\": \"ping\", \"params\": {\"x\": \"".to_vec();
    huge.resize(huge.len() + (17 << 20), b'a');
    huge.extend_from_slice(b"\"}}");
    mcp.send_raw(&huge);
    let dropped = mcp.next();
    assert_eq!(dropped["error"]["code"], -32600);
    assert!(dropped["error"]["message"]
        .as_str()
        .unwrap()
        .contains("longer than"));
    // Then a normal session.
    mcp.initialize();
    assert_eq!(
        mcp.call(15, "bash", json!({"command": "echo ok"})),
        ("ok\n".into(), false)
    );
    mcp.send(json!({"jsonrpc": "2.0", "id": 16, "method": "no/such/method"}));
    assert_eq!(mcp.answer(16)["error"]["code"], -32601);
    assert!(!dir.path().join("pwned").exists());
    assert!(mcp.finish().success());
}

#[test]
fn cancellation_kills_what_the_call_started() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = Mcp::start(dir.path());
    mcp.initialize();
    // A background child orphaned by a subshell (reparented, not a child of the call): both die with the call.
    let argv = ["sleep", "100.75"];
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "(sleep 100.75 &) ; sleep 100.75"}}}),
    );
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&argv).len() == 2),
        "the sleeps never started"
    );
    mcp.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 20, "reason": "user pressed stop"}}),
    );
    assert!(
        wait_until(Duration::from_secs(5), || processes_with(&argv).is_empty()),
        "left running: {:?}",
        processes_with(&argv)
    );
    // The next call gets a fresh session.
    assert_eq!(
        mcp.call(21, "bash", json!({"command": "echo again"})),
        ("again\n".into(), false)
    );
    assert!(mcp.finish().success());
}

#[test]
fn end_of_input_kills_a_running_command_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = Mcp::start(dir.path());
    mcp.initialize();
    let argv = ["sleep", "100.5"];
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "sleep 100.5"}}}),
    );
    assert!(wait_until(Duration::from_secs(10), || processes_with(
        &argv
    )
    .len()
        == 1));
    let started = Instant::now();
    let status = mcp.finish();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    assert!(processes_with(&argv).is_empty());
}
