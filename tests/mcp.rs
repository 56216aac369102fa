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

/// `policy-check mcp --http`: raw HTTP/1.1 requests over a std `TcpStream` (one request per
/// connection), the session lifecycle, the gates (loopback, token, Origin, Host) and a
/// hostile client. The official Python client's run over HTTP is in
/// python/tests/test_mcp_client.py.
mod http {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::{processes_with, wait_timeout, wait_until};

    /// A server on a free loopback port.
    struct Server {
        child: Child,
        port: u16,
    }

    impl Server {
        fn start(workspace: &std::path::Path, extra: &[&str]) -> Server {
            Server::start_with(workspace, extra, true)
        }

        /// With `keep_stderr` false, stderr is closed once the address is read.
        fn start_with(workspace: &std::path::Path, extra: &[&str], keep_stderr: bool) -> Server {
            let mut child = Command::new(env!("CARGO_BIN_EXE_policy-check"))
                .args([
                    "mcp",
                    "--policy",
                    "developer",
                    "--http",
                    "127.0.0.1:0",
                    "--cwd",
                ])
                .arg(workspace)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start policy-check mcp --http");
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut line = String::new();
            stderr.read_line(&mut line).unwrap();
            let port = line
                .trim()
                .strip_prefix("policy-check mcp: listening on http://127.0.0.1:")
                .and_then(|rest| rest.strip_suffix("/mcp"))
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no address in {line:?}"));
            // Keep reading stderr so the server never blocks on it.
            if keep_stderr {
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            }
            Server { child, port }
        }

        /// One request; `headers` as `Name: value` lines.
        fn request(&self, method: &str, headers: &[String], body: &[u8]) -> Response {
            read_response(self.send(method, headers, body))
        }

        /// Send one request; the answer is to be read from the stream.
        fn send(&self, method: &str, headers: &[String], body: &[u8]) -> TcpStream {
            let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            let mut head = format!(
                "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
                self.port,
                body.len()
            );
            for h in headers {
                head.push_str(h);
                head.push_str("\r\n");
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).unwrap();
            // A refusal may come before the whole body is read (and the socket closed).
            let _ = stream.write_all(body);
            stream
        }

        /// A JSON-RPC POST in session `session` (if any).
        fn post(&self, session: Option<&str>, message: &Value) -> Response {
            self.request(
                "POST",
                &mcp_headers(session),
                message.to_string().as_bytes(),
            )
        }

        /// `initialize` then `notifications/initialized`: the session id.
        fn initialize(&self) -> String {
            let init = self.post(
                None,
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw-http", "version": "0"}}}),
            );
            assert_eq!(init.status, 200, "{}", init.text());
            assert_eq!(
                init.messages()[0]["result"]["serverInfo"]["name"],
                "shellgate"
            );
            let id = init
                .header("mcp-session-id")
                .expect("a session id")
                .to_string();
            let ack = self.post(
                Some(&id),
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            );
            assert_eq!(ack.status, 202);
            id
        }

        fn call(&self, session: &str, id: i64, tool: &str, arguments: Value) -> (String, bool) {
            let answer = self.post(
                Some(session),
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}}),
            );
            let messages = answer.messages();
            let result = messages
                .iter()
                .find(|m| m["id"] == json!(id))
                .unwrap_or_else(|| panic!("no answer to {id}: {}", answer.text()));
            let result = &result["result"];
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            (text.to_string(), result["isError"] == json!(true))
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn mcp_headers(session: Option<&str>) -> Vec<String> {
        let mut h = vec![
            "Content-Type: application/json".to_string(),
            "Accept: application/json, text/event-stream".to_string(),
        ];
        if let Some(s) = session {
            h.push(format!("Mcp-Session-Id: {s}"));
            h.push("MCP-Protocol-Version: 2025-11-25".into());
        }
        h
    }

    struct Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Response {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }

        /// The JSON-RPC messages: the body itself (JSON), or each SSE `data:` line.
        fn messages(&self) -> Vec<Value> {
            if self.header("content-type") == Some("application/json") {
                return vec![serde_json::from_slice(&self.body).unwrap()];
            }
            self.text()
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(|d| serde_json::from_str(d).unwrap())
                .collect()
        }
    }

    /// Read a response to the end of the connection (chunked bodies decoded).
    fn read_response(stream: TcpStream) -> Response {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        while line.starts_with("HTTP/1.1 100") {
            // `100 Continue`, then a blank line, then the real status line.
            line.clear();
            reader.read_line(&mut line).unwrap();
            line.clear();
            reader.read_line(&mut line).unwrap();
        }
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
        let chunked = headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v == "chunked");
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                if size == 0 {
                    break;
                }
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk).unwrap();
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            let _ = reader.read_to_end(&mut body);
        }
        Response {
            status,
            headers,
            body,
        }
    }

    #[test]
    fn tools_run_and_refusals_name_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hi\n").unwrap();
        let server = Server::start(dir.path(), &[]);
        let session = server.initialize();
        let tools = server.post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        );
        let names: Vec<String> = tools.messages()[0]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["bash", "str_replace_based_edit_tool"]);
        assert_eq!(
            server.call(&session, 3, "bash", json!({"command": "ls"})),
            ("a.txt\n".into(), false)
        );
        let (text, is_error) =
            server.call(&session, 4, "bash", json!({"command": "cat /etc/shadow"}));
        assert!(is_error && text.contains("[path-read-outside]"), "{text}");
        let outside = dir.path().with_extension("outside");
        let (text, is_error) = server.call(
            &session,
            5,
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": outside, "file_text": "x"}),
        );
        assert!(is_error && text.contains("[path-write-outside]"), "{text}");
        assert!(!outside.exists());
        // Two sessions have two shells: a directory change in one is not seen in the other.
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let other = server.initialize();
        assert_ne!(other, session);
        assert!(
            !server
                .call(&other, 6, "bash", json!({"command": "cd sub"}))
                .1
        );
        let here = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            server
                .call(&session, 7, "bash", json!({"command": "pwd"}))
                .0,
            format!("{}\n", here.display())
        );
        assert_eq!(
            server.call(&other, 8, "bash", json!({"command": "pwd"})).0,
            format!("{}/sub\n", here.display())
        );
    }

    #[test]
    fn a_hostile_client_gets_statuses_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &[]);
        let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": "touch pwned"}}});
        // A call before initialize, with no session or an unknown one.
        assert_eq!(server.post(None, &call).status, 400);
        assert_eq!(server.post(Some("no-such-session"), &call).status, 404);
        let session = server.initialize();
        let raw = |body: &[u8]| server.request("POST", &mcp_headers(Some(&session)), body);
        // Not JSON, a batch, JSON that is no MCP message: JSON-RPC errors, as over stdio.
        let parse = raw(b"{\"jsonrpc\": \"2.0\", \"id\": 11, \"method\": ");
        assert_eq!(parse.status, 400);
        assert_eq!(parse.messages()[0]["error"]["code"], -32700);
        let batch = raw(b"[{\"jsonrpc\": \"2.0\", \"id\": 12, \"method\": \"ping\"}]");
        assert_eq!(batch.messages()[0]["error"]["code"], -32600);
        let bad = raw(b"{\"jsonrpc\": \"1.0\", \"id\": 13, \"method\": 7}");
        assert_eq!(
            (
                bad.messages()[0]["error"]["code"].clone(),
                bad.messages()[0]["id"].clone()
            ),
            (json!(-32600), json!(13))
        );
        // A body past the cap.
        let mut huge =
            b"{\"jsonrpc\": \"2.0\", \"id\": 14, \"method\": \"ping\", \"params\": {\"x\": \""
                .to_vec();
        huge.resize(huge.len() + (17 << 20), b'a');
        huge.extend_from_slice(b"\"}}");
        assert_eq!(raw(&huge).status, 413);
        // An unknown protocol version, a wrong path, a wrong method.
        let mut headers = mcp_headers(Some(&session));
        headers.retain(|h| !h.starts_with("MCP-Protocol-Version"));
        headers.push("MCP-Protocol-Version: 1999-01-01".into());
        let ping = json!({"jsonrpc": "2.0", "id": 15, "method": "ping"}).to_string();
        assert_eq!(
            server.request("POST", &headers, ping.as_bytes()).status,
            400
        );
        assert_eq!(
            server
                .request("PUT", &mcp_headers(Some(&session)), b"")
                .status,
            405
        );
        // DNS rebinding: a web page's Origin, a Host that is not loopback.
        let mut from_page = mcp_headers(Some(&session));
        from_page.push("Origin: http://attacker.example".into());
        assert_eq!(
            server.request("POST", &from_page, ping.as_bytes()).status,
            403
        );
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{ping}",
            ping.len()
        )
        .unwrap();
        assert_eq!(read_response(stream).status, 403);
        // Still serving, and nothing ran.
        assert_eq!(
            server.call(&session, 16, "bash", json!({"command": "echo ok"})),
            ("ok\n".into(), false)
        );
        assert!(!dir.path().join("pwned").exists());
    }

    #[test]
    fn at_most_sixteen_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &[]);
        let sessions: Vec<String> = (0..16).map(|_| server.initialize()).collect();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-http", "version": "0"}}});
        let refused = server.post(None, &init);
        assert_eq!(refused.status, 503, "{}", refused.text());
        assert!(refused.text().contains("16 MCP sessions are open"));
        // The others still serve; ending one makes room.
        assert_eq!(
            server.call(&sessions[15], 2, "bash", json!({"command": "echo ok"})),
            ("ok\n".into(), false)
        );
        let deleted = server.request("DELETE", &mcp_headers(Some(&sessions[0])), b"");
        assert_eq!(deleted.status, 204);
        assert!(wait_until(Duration::from_secs(5), || server
            .post(None, &init)
            .status
            == 200));
    }

    #[test]
    fn non_loopback_needs_allow_remote_and_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_policy-check"))
                .args(["mcp", "--policy", "developer", "--cwd"])
                .arg(dir.path())
                .args(args)
                .output()
                .unwrap()
        };
        let out = run(&["--http", "0.0.0.0:0"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
        let out = run(&["--http", "0.0.0.0:0", "--allow-remote"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote needs --token-file"));
    }

    #[test]
    fn a_token_is_required_when_given() {
        let dir = tempfile::tempdir().unwrap();
        let token = "0123456789abcdef0123456789abcdef";
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{token}\n")).unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let server = Server::start(&ws, &["--token-file", file.to_str().unwrap()]);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-http", "version": "0"}}})
        .to_string();
        let mut headers = mcp_headers(None);
        let refused = server.request("POST", &headers, init.as_bytes());
        assert_eq!(refused.status, 401);
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
        headers.push(format!("Authorization: Bearer {token}x"));
        assert_eq!(
            server.request("POST", &headers, init.as_bytes()).status,
            401
        );
        headers.pop();
        headers.push(format!("Authorization: Bearer {token}"));
        assert_eq!(
            server.request("POST", &headers, init.as_bytes()).status,
            200
        );
    }

    #[test]
    fn cancel_and_delete_kill_what_the_calls_started() {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &[]);
        let (one, two) = (server.initialize(), server.initialize());
        let start = |session: &str, secs: &str| {
            let message = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
                "name": "bash", "arguments": {"command": format!("(sleep {secs} &) ; sleep {secs}")}}});
            let stream = server.send(
                "POST",
                &mcp_headers(Some(session)),
                message.to_string().as_bytes(),
            );
            std::thread::spawn(move || read_response(stream))
        };
        let (a, b) = (["sleep", "100.61"], ["sleep", "100.62"]);
        let first = start(&one, "100.61");
        let second = start(&two, "100.62");
        assert!(
            wait_until(Duration::from_secs(10), || processes_with(&a).len() == 2
                && processes_with(&b).len() == 2),
            "the sleeps never started"
        );
        // Cancelling the call of one session kills its processes, not the other session's.
        let cancel = server.post(
            Some(&one),
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 20, "reason": "stop"}}),
        );
        assert_eq!(cancel.status, 202);
        assert!(
            wait_until(Duration::from_secs(5), || processes_with(&a).is_empty()),
            "left running: {:?}",
            processes_with(&a)
        );
        assert_eq!(processes_with(&b).len(), 2);
        let _ = first.join();
        assert_eq!(
            server.call(&one, 21, "bash", json!({"command": "echo again"})),
            ("again\n".into(), false)
        );
        // Ending the other session (DELETE) kills its running call at once.
        let started = Instant::now();
        let deleted = server.request("DELETE", &mcp_headers(Some(&two)), b"");
        assert_eq!(deleted.status, 204);
        assert!(
            wait_until(Duration::from_secs(2), || processes_with(&b).is_empty()),
            "left running: {:?}",
            processes_with(&b)
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        let _ = second.join();
        assert_eq!(
            server
                .post(
                    Some(&two),
                    &json!({"jsonrpc": "2.0", "id": 22, "method": "ping"})
                )
                .status,
            404
        );
    }

    #[test]
    fn stopping_the_server_kills_every_session() {
        let dir = tempfile::tempdir().unwrap();
        // With stderr closed (a host gone closes every pipe): writing a note there must not
        // keep the signal from ending the server.
        let mut server = Server::start_with(dir.path(), &[], false);
        let session = server.initialize();
        assert_eq!(
            server
                .post(
                    Some("unknown"),
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                )
                .status,
            404
        );
        let argv = ["sleep", "100.63"];
        let body = json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "sleep 100.63"}}});
        let _stream = server.send(
            "POST",
            &mcp_headers(Some(&session)),
            body.to_string().as_bytes(),
        );
        assert!(wait_until(Duration::from_secs(10), || processes_with(
            &argv
        )
        .len()
            == 1));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = wait_timeout(&mut server.child, Duration::from_secs(5)).expect("it exits");
        assert_eq!(status.code(), Some(128 + 15));
        assert!(processes_with(&argv).is_empty());
    }
}
