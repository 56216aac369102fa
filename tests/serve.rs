//! `policy-check serve` and `policy-check run` as subprocesses, the way an application
//! drives them.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::serve::Serve;

const POLICY: &str = r#"
[policy]
name = "serve-test"
default = "deny"

[paths]
read = ["{workspace}", "{workspace}/**"]
write = ["/dev/null", "{workspace}/**"]

[programs.echo]
operands = "text"

[programs.cat]
operands = "path-read"

[programs.pwd]
operands = []

[programs.cd]
operands = ["path-read"]

[programs.sleep]
operands = "text"
"#;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_policy-check"));
    c.env("SHELLGATE_STATE_DIR", crate::common::test_state_dir());
    c
}

/// A workspace with the test policy written next to it (outside the workspace).
fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    (dir, ws)
}

struct Served {
    answers: Vec<Value>,
    code: Option<i32>,
    stderr: String,
}

fn serve(dir: &Path, ws: &Path, extra: &[&str], lines: &[String]) -> Served {
    let mut child = bin()
        .arg("serve")
        .args(if extra.contains(&"--policy") {
            vec![]
        } else {
            vec!["--policy".into(), dir.join("policy.toml").into_os_string()]
        })
        .arg("--cwd")
        .arg(ws)
        .args(if extra.contains(&"--timeout") {
            &[][..]
        } else {
            &["--timeout", "2"][..]
        })
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = lines.join("\n");
    input.push('\n');
    let expected = input.matches('\n').count();
    // Like a client: write, read one answer per line, and only then close stdin (serve
    // stops whatever still runs at end of input).
    let mut stdin = child.stdin.take().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let r = stdin.write_all(input.as_bytes());
        let _ = done_rx.recv_timeout(Duration::from_secs(60));
        drop(stdin);
        r
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    for _ in 0..expected {
        if stdout.read_line(&mut text).unwrap() == 0 {
            break;
        }
    }
    done_tx.send(()).unwrap();
    std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
    let out = child.wait_with_output().unwrap();
    // A server that stops before reading (a policy that does not load) closes its stdin
    // first: the write then fails with a broken pipe, which is that outcome, not an error.
    match writer.join().unwrap() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    let answers = text
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("answer {l:?} is not JSON: {e}"))
        })
        .collect();
    Served {
        answers,
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn tool_use(id: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": input})
}

fn line(v: Value) -> String {
    v.to_string()
}

#[test]
fn serve_answers_every_line_in_order() {
    let (dir, ws) = setup();
    let lines = vec![
        line(tool_use("toolu_1", json!({"command": "rm -rf sub"}))),
        "{not json".to_string(),
        String::new(),
        line(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Two calls."},
            tool_use("toolu_2", json!({"command": "rm -rf /"})),
            {"type": "tool_use", "id": "toolu_3", "name": "web_search", "input": {"query": "x"}},
            tool_use("toolu_4", json!({"restart": true})),
        ]})),
        line(json!({"hello": "world"})),
        line(tool_use(
            "toolu_5",
            json!({"command": "ls", "restart": true}),
        )),
        line(
            json!({"type": "tool_use", "id": "toolu_6", "name": "bash", "input": {"command": ["ls"]}}),
        ),
    ];
    let s = serve(dir.path(), &ws, &[], &lines);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(
        s.answers.len(),
        lines.len(),
        "one answer per line: {:?}",
        s.answers
    );
    let a = &s.answers;

    assert_eq!(a[0]["type"], "tool_result");
    assert_eq!(a[0]["tool_use_id"], "toolu_1");
    assert_eq!(a[0]["is_error"], true);
    assert!(a[0]["content"].as_str().unwrap().contains("was not run"));
    assert!(
        ws.join("sub").is_dir(),
        "a refused command changed the workspace"
    );

    for i in [1, 2, 4] {
        assert_eq!(a[i]["type"], "error", "line {i}: {}", a[i]);
        assert!(a[i]["error"]["message"].is_string());
    }
    assert!(a[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("malformed JSON"));

    assert_eq!(a[3]["role"], "user");
    let results = a[3]["content"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_2", "toolu_3", "toolu_4"]);
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1]["content"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));
    assert_eq!(results[2]["is_error"], false);

    assert_eq!(a[5]["tool_use_id"], "toolu_5");
    assert!(a[5]["content"].as_str().unwrap().contains("not both"));
    assert_eq!(a[6]["tool_use_id"], "toolu_6");
    assert!(a[6]["content"]
        .as_str()
        .unwrap()
        .contains("must be a string"));
}

#[test]
fn serve_writes_the_audit_log() {
    let (dir, ws) = setup();
    let audit = dir.path().join("audit.jsonl");
    let lines = vec![
        line(tool_use(
            "toolu_1",
            json!({"command": "rm -rf / # password=hunter2"}),
        )),
        line(tool_use("toolu_2", json!({"restart": true}))),
    ];
    let s = serve(
        dir.path(),
        &ws,
        &["--audit", audit.to_str().unwrap()],
        &lines,
    );
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    let log = std::fs::read_to_string(&audit).unwrap();
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["tool_use_id"], "toolu_1");
    assert_eq!(records[0]["verdict"], "deny");
    assert_eq!(records[1]["action"], "restart");
}

/// The pids of `parent`'s children.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn serve_kills_its_session_at_end_of_input() {
    let (dir, ws) = setup();
    let mut child = bin()
        .args(["serve", "--timeout", "2", "--policy"])
        .arg(dir.path().join("policy.toml"))
        .arg("--cwd")
        .arg(&ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{}", line(tool_use("t", json!({"restart": true})))).unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("restarted"), "{answer}");
    let shells = children(child.id());
    assert_eq!(shells.len(), 1, "expected one bash child, found {shells:?}");
    drop(stdin);
    let until = Instant::now() + Duration::from_secs(2);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < until, "serve did not exit at end of input");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    assert!(
        !Path::new(&format!("/proc/{}", shells[0])).exists(),
        "the bash session outlived serve"
    );
}

#[test]
fn run_refuses_with_exit_1_and_an_explanation() {
    let (dir, ws) = setup();
    let out = bin()
        .args(["run", "--timeout", "2", "--policy"])
        .arg(dir.path().join("policy.toml"))
        .arg("--cwd")
        .arg(&ws)
        .args(["--", "rm -rf sub"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not run"));
    assert!(out.stdout.is_empty());
    assert!(ws.join("sub").is_dir());
}

#[test]
fn bad_arguments_are_usage_errors() {
    let (dir, ws) = setup();
    let policy = dir.path().join("policy.toml");
    for args in [
        vec!["serve", "--timeout", "0"],
        vec!["serve", "--timeout", "soon"],
        vec!["serve", "--cwd", "/nonexistent/shellgate"],
        vec!["run", "--policy", "/nonexistent/policy.toml", "--", "ls"],
    ] {
        let mut cmd = bin();
        cmd.args(&args);
        if !args.contains(&"--policy") {
            cmd.arg("--policy").arg(&policy);
        }
        if !args.contains(&"--cwd") {
            cmd.arg("--cwd").arg(&ws);
        }
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- the allow path ----

#[test]
fn serve_keeps_one_session_across_lines() {
    let (dir, ws) = setup();
    let lines = vec![
        line(tool_use("t1", json!({"command": "cd sub"}))),
        line(tool_use("t2", json!({"command": "echo kept > note.txt"}))),
        line(tool_use("t3", json!({"command": "pwd; cat note.txt"}))),
        line(tool_use("t4", json!({"command": "cat ../../policy.toml"}))),
    ];
    let s = serve(dir.path(), &ws, &[], &lines);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(s.answers[0]["is_error"], false, "{}", s.answers[0]);
    assert_eq!(s.answers[1]["is_error"], false, "{}", s.answers[1]);
    assert_eq!(
        s.answers[2]["content"],
        format!("{}\nkept\n", ws.join("sub").display())
    );
    // Relative to the session's real cwd (ws/sub), ../../policy.toml is outside the workspace.
    assert_eq!(s.answers[3]["is_error"], true);
    assert!(s.answers[3]["content"]
        .as_str()
        .unwrap()
        .contains("was not run"));
    assert!(ws.join("sub/note.txt").exists());
}

#[test]
fn serve_answers_an_api_response_with_several_tool_uses() {
    let (dir, ws) = setup();
    let response = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Three commands."},
            tool_use("toolu_a", json!({"command": "echo first"})),
            tool_use("toolu_b", json!({"command": "cat missing.txt"})),
            tool_use("toolu_c", json!({"command": "echo 'multi\nline' \"$((2+3))\""})),
        ],
    });
    let s = serve(dir.path(), &ws, &[], &[line(response)]);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    let results = s.answers[0]["content"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["content"], "first\n");
    assert_eq!(results[1]["is_error"], true);
    let missing = results[1]["content"].as_str().unwrap();
    assert!(
        missing.contains("No such file") && missing.ends_with("exit status 1"),
        "{missing}"
    );
    assert_eq!(results[2]["content"], "multi\nline 5\n");
}

#[test]
fn serve_reports_a_timeout_and_recovers() {
    let (dir, ws) = setup();
    let lines = vec![
        line(tool_use("t1", json!({"command": "sleep 10"}))),
        line(tool_use("t2", json!({"command": "echo alive"}))),
    ];
    let started = Instant::now();
    let s = serve(dir.path(), &ws, &["--timeout", "1"], &lines);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(s.answers[0]["is_error"], true);
    assert!(s.answers[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("Error: command timed out after 1 second"));
    assert_eq!(s.answers[1]["content"], "alive\n");
}

#[test]
fn run_prints_the_output_of_an_allowed_command() {
    let (dir, ws) = setup();
    let run = |cmd: &str| {
        bin()
            .args(["run", "--timeout", "2", "--policy"])
            .arg(dir.path().join("policy.toml"))
            .arg("--cwd")
            .arg(&ws)
            .args(["--", cmd])
            .output()
            .unwrap()
    };
    let out = run("echo hi");
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"hi\n"[..])
    );
    let out = run("cat missing.txt");
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn serve_redacts_secrets_in_output_and_in_the_audit_log() {
    let (dir, ws) = setup();
    let audit = dir.path().join("audit.jsonl");
    let secret = "q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iOnB5t";
    let cmd = format!("echo 'aws_secret_access_key = {secret}'");
    let s = serve(
        dir.path(),
        &ws,
        &["--audit", audit.to_str().unwrap()],
        &[line(tool_use("t1", json!({"command": cmd})))],
    );
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(
        s.answers[0]["content"],
        "aws_secret_access_key = [REDACTED:aws-secret-access-key]\n"
    );
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(log.contains("REDACTED") && !log.contains(secret), "{log}");
}

#[test]
fn serve_applies_the_policys_redact_table() {
    let (dir, ws) = setup();
    let extra = "\n[redact]\n\n[[redact.rule]]\nid = \"acme-token\"\nkeywords = [\"acme_\"]\nregex = '''\\b(acme_[a-z0-9]{32})\\b'''\n";
    std::fs::write(dir.path().join("policy.toml"), format!("{POLICY}{extra}")).unwrap();
    let cmd = "echo 'token acme_q7rk2vbn9wlmz4xt8yh3pjc6dfgs1uaw'";
    let s = serve(
        dir.path(),
        &ws,
        &[],
        &[line(tool_use("t1", json!({"command": cmd})))],
    );
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(s.answers[0]["content"], "token [REDACTED:acme-token]\n");

    let bad = "\n[redact]\n\n[[redact.rule]]\nid = \"broken\"\nkeywords = [\"abc\"]\nregex = '''(unclosed'''\n";
    std::fs::write(dir.path().join("policy.toml"), format!("{POLICY}{bad}")).unwrap();
    let s = serve(dir.path(), &ws, &[], &[]);
    assert_eq!(s.code, Some(2));
    assert!(s.stderr.contains("[redact]"), "{}", s.stderr);
}

#[test]
fn serve_answers_an_overlong_line_without_holding_it() {
    let (dir, ws) = setup();
    let lines = vec![
        "x".repeat(17 << 20),
        line(tool_use("t2", json!({"restart": true}))),
    ];
    let s = serve(dir.path(), &ws, &[], &lines);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(s.answers.len(), 2);
    assert_eq!(s.answers[0]["type"], "error");
    assert!(s.answers[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("longer than"));
    assert_eq!(s.answers[1]["tool_use_id"], "t2");
}

// ---------------------------------------------------------------- ask over the channel

/// The test policy plus `touch`, which needs approval.
fn setup_ask() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, ws) = setup();
    let policy =
        format!("{POLICY}\n[programs.touch]\nverdict = \"ask\"\noperands = \"path-write...\"\n");
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    (dir, ws)
}

/// Answer serve's approval request for `id`.
fn approve(s: &mut Serve, id: &str, decision: &str) {
    s.send(&json!({"type": "approval_response", "tool_use_id": id, "decision": decision}));
}

/// Issue 17: with `--ask prompt`, a command the policy marks `ask` is sent to the application
/// as an `approval_request` (id, command, reasons) and runs only on an `allow` answer; a deny,
/// a timeout, an answer for another call, or end of input refuses it.
#[test]
fn serve_asks_the_application_and_runs_only_what_it_approves() {
    let (dir, ws) = setup_ask();
    let mut s = Serve::start(dir.path(), &ws, &["--ask", "prompt", "--ask-timeout", "1"]);

    s.send(&tool_use(
        "toolu_a",
        json!({"command": "touch approved.txt"}),
    ));
    let req = s.read();
    assert_eq!(req["type"], "approval_request", "{req}");
    assert_eq!(req["tool_use_id"], "toolu_a");
    assert_eq!(req["command"], "touch approved.txt");
    assert_eq!(req["cwd"], json!(ws));
    assert_eq!(req["reasons"][0]["code"], "program-ask", "{req}");
    assert!(req["message"]
        .as_str()
        .unwrap()
        .contains("needs your approval"));
    approve(&mut s, "toolu_a", "allow");
    let res = s.read();
    assert_eq!(
        (res["tool_use_id"].clone(), res["is_error"].clone()),
        (json!("toolu_a"), json!(false)),
        "{res}"
    );
    assert!(ws.join("approved.txt").exists());

    s.send(&tool_use(
        "toolu_b",
        json!({"command": "touch declined.txt"}),
    ));
    assert_eq!(s.read()["tool_use_id"], "toolu_b");
    approve(&mut s, "toolu_b", "deny");
    let res = s.read();
    assert_eq!(res["is_error"], true);
    assert!(
        res["content"].as_str().unwrap().contains("declined"),
        "{res}"
    );

    // An answer for another call does not count; then no answer: refused at the timeout.
    s.send(&tool_use("toolu_c", json!({"command": "touch late.txt"})));
    assert_eq!(s.read()["tool_use_id"], "toolu_c");
    approve(&mut s, "toolu_b", "allow");
    let t = Instant::now();
    let res = s.read();
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        (res["tool_use_id"].clone(), res["is_error"].clone()),
        (json!("toolu_c"), json!(true))
    );
    // The late allow is ignored (no answer line): the next line out answers the next call.
    approve(&mut s, "toolu_c", "allow");
    s.send(&tool_use("toolu_d", json!({"command": "echo hi"})));
    let res = s.read();
    assert_eq!(
        (res["tool_use_id"].clone(), res["content"].clone()),
        (json!("toolu_d"), json!("hi\n"))
    );

    // Another call instead of the answer: refused, and that call is answered after it.
    s.send(&tool_use("toolu_e", json!({"command": "touch e.txt"})));
    assert_eq!(s.read()["type"], "approval_request");
    s.send(&tool_use("toolu_f", json!({"command": "echo f"})));
    let (e, f) = (s.read(), s.read());
    assert_eq!(
        (e["tool_use_id"].clone(), e["is_error"].clone()),
        (json!("toolu_e"), json!(true))
    );
    assert_eq!(f["content"], "f\n");

    // End of input while waiting: refused, and serve ends normally.
    s.send(&tool_use("toolu_g", json!({"command": "touch eof.txt"})));
    assert_eq!(s.read()["tool_use_id"], "toolu_g");
    drop(s.stdin.take());
    let res = s.read();
    assert_eq!(
        (res["tool_use_id"].clone(), res["is_error"].clone()),
        (json!("toolu_g"), json!(true))
    );
    assert_eq!(s.finish(), Some(0));
    for f in ["declined.txt", "late.txt", "e.txt", "eof.txt"] {
        assert!(!ws.join(f).exists(), "{f} was created");
    }
}

/// `--ask allow` runs `ask` commands without a request; `--ask deny` (the default) refuses
/// them, saying nobody can approve.
#[test]
fn serve_ask_allow_and_deny() {
    let (dir, ws) = setup_ask();
    let call = line(tool_use("toolu_1", json!({"command": "touch a.txt"})));
    let s = serve(
        dir.path(),
        &ws,
        &["--ask", "allow"],
        std::slice::from_ref(&call),
    );
    assert_eq!(s.answers.len(), 1, "{:?}", s.answers);
    assert_eq!(s.answers[0]["is_error"], false, "{:?}", s.answers);
    assert!(ws.join("a.txt").exists());
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    let s = serve(dir.path(), &ws, &[], &[call]);
    assert_eq!(s.answers[0]["is_error"], true);
    assert!(s.answers[0]["content"]
        .as_str()
        .unwrap()
        .contains("No one can approve"));
    assert!(!ws.join("a.txt").exists());
}

// ---------------------------------------------------------------------------------------
// The code execution and text editor shapes (`serve --tools`).

fn server_tool_use(id: &str, name: &str, input: Value) -> String {
    line(json!({"type": "server_tool_use", "id": id, "name": name, "input": input}))
}

fn code(id: &str, command: &str) -> String {
    server_tool_use(id, "bash_code_execution", json!({ "command": command }))
}

/// The answer with each `file_id` replaced by `FILE_ID`, and the ids in order.
fn without_file_ids(mut answer: Value) -> (Value, Vec<String>) {
    let mut ids = Vec::new();
    if let Some(files) = answer["content"]["content"].as_array_mut() {
        for f in files {
            ids.push(f["file_id"].as_str().unwrap().to_string());
            f["file_id"] = json!("FILE_ID");
        }
    }
    (answer, ids)
}

#[test]
fn code_execution_under_the_developer_policy_answers_its_documented_shapes() {
    let (dir, ws) = setup();
    let outputs = dir.path().join("outputs");
    let out = serve(
        dir.path(),
        &ws,
        &[
            "--policy", "developer", "--tools", "bash,code-execution", "--at-eof", "finish",
            "--outputs", outputs.to_str().unwrap(),
        ],
        &[
            code("s1", "ls \"$OUTPUT_DIR\"; echo out; echo err >&2; echo report > \"$OUTPUT_DIR/report.txt\"; \
                        echo a,b > \"$OUTPUT_DIR/data.csv\"; mkdir \"$OUTPUT_DIR/sub\"; ls \"$OUTPUT_DIR\""),
            code("s2", "ls \"$OUTPUT_DIR\"; ls nope"),
            code("s3", "sleep 5"),
            code("s4", "echo after"),
            server_tool_use("s5", "bash_code_execution", json!({"command": 5})),
            code("s6", "cat /etc/shadow"),
            line(tool_use("b7", json!({"command": "echo out; echo err >&2"}))),
        ],
    );
    assert_eq!(out.answers.len(), 7, "{}", out.stderr);
    let (first, ids) = without_file_ids(out.answers[0].clone());
    assert_eq!(
        first,
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "s1", "content": {
        "type": "bash_code_execution_result",
        "stdout": "out\ndata.csv\nreport.txt\nsub\n",
        "stderr": "err\nshellgate: $OUTPUT_DIR/sub: a directory (only top-level files are returned): not returned\n",
        "return_code": 0,
        "content": [
            {"type": "bash_code_execution_output", "file_id": "FILE_ID"},
            {"type": "bash_code_execution_output", "file_id": "FILE_ID"},
        ]}})
    );
    // Each file_id names files/FILE_ID/NAME under --outputs.
    let found: Vec<(String, String)> = ids
        .iter()
        .map(|id| {
            assert!(id.starts_with("file_") && id.len() == 37, "{id}");
            let entries: Vec<_> = std::fs::read_dir(outputs.join("files").join(id))
                .unwrap()
                .flatten()
                .collect();
            assert_eq!(entries.len(), 1);
            let name = entries[0].file_name().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(entries[0].path()).unwrap())
        })
        .collect();
    assert_eq!(
        found,
        [
            ("data.csv".to_string(), "a,b\n".to_string()),
            ("report.txt".to_string(), "report\n".to_string())
        ]
    );
    // A fresh $OUTPUT_DIR each call: empty again, and the calls' directories are gone.
    assert_eq!(
        out.answers[1],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "s2", "content": {
        "type": "bash_code_execution_result", "stdout": "",
        "stderr": "ls: cannot access 'nope': No such file or directory\n", "return_code": 2, "content": []}})
    );
    assert_eq!(std::fs::read_dir(outputs.join("calls")).unwrap().count(), 0);
    assert_eq!(
        out.answers[2],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "s3", "content": {
        "type": "bash_code_execution_tool_result_error", "error_code": "execution_time_exceeded",
        "error_message": "command timed out after 2 seconds (the bash session was restarted: working directory, variables and background jobs are reset)"}})
    );
    assert_eq!(
        out.answers[3]["content"]["stdout"], "after\n",
        "the session restarted"
    );
    assert_eq!(
        out.answers[4],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "s5", "content": {
        "type": "bash_code_execution_tool_result_error", "error_code": "invalid_tool_input",
        "error_message": "invalid input: `command` must be a string"}})
    );
    assert_eq!(
        out.answers[5],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "s6", "content": {
        "type": "bash_code_execution_tool_result_error", "error_code": "invalid_tool_input",
        "error_message": "This command was refused by the shellgate policy and was not run.\n- [path-read-outside] reading `/etc/shadow` is outside the allowed paths: reads must stay inside the workspace (at `/etc/shadow`; rule `paths.read`)"}})
    );
    // The bash tool beside it still interleaves stdout and stderr.
    assert_eq!(
        out.answers[6],
        json!({"type": "tool_result", "tool_use_id": "b7", "content": "out\nerr\n", "is_error": false})
    );
}

#[test]
fn code_execution_limits_answer_too_many_requests_and_output_file_too_large() {
    let (dir, ws) = setup();
    let out = serve(
        dir.path(),
        &ws,
        &[
            "--policy", "developer", "--tools", "bash,text-editor,code-execution", "--at-eof", "finish",
            "--max-calls-per-minute", "3", "--max-output-file-bytes", "10",
        ],
        &[
            code("l1", "echo 0123456789abcdef > \"$OUTPUT_DIR/big.txt\"; echo small > \"$OUTPUT_DIR/s.txt\""),
            code("l2", "echo 012345678 > \"$OUTPUT_DIR/fits.txt\""),
            line(tool_use("l3", json!({"command": "echo ok"}))),
            code("l4", "echo over"),
            server_tool_use("l5", "text_editor_code_execution", json!({"command": "view", "path": "."})),
            line(json!({"type": "tool_use", "id": "l6", "name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "."}})),
        ],
    );
    assert_eq!(
        out.answers[0],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "l1", "content": {
        "type": "bash_code_execution_tool_result_error", "error_code": "output_file_too_large",
        "error_message": "`big.txt` in $OUTPUT_DIR is 17 bytes, more than the 10-byte limit; no file was returned"}})
    );
    assert_eq!(
        out.answers[1]["content"]["content"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{}",
        out.answers[1]
    );
    assert_eq!(out.answers[2]["is_error"], false);
    let limit = "too many requests: at most 3 calls per minute are answered; wait and try again";
    assert_eq!(
        out.answers[3],
        json!({"type": "bash_code_execution_tool_result", "tool_use_id": "l4", "content": {
        "type": "bash_code_execution_tool_result_error", "error_code": "too_many_requests", "error_message": limit}})
    );
    assert_eq!(
        out.answers[4],
        json!({"type": "text_editor_code_execution_tool_result", "tool_use_id": "l5", "content": {
        "type": "text_editor_code_execution_tool_result_error", "error_code": "too_many_requests", "error_message": limit}})
    );
    assert_eq!(
        out.answers[5],
        json!({"type": "tool_result", "tool_use_id": "l6", "is_error": true, "content": format!("Error: {limit}")})
    );
}

#[test]
fn the_text_editor_is_served_under_the_same_policy_as_bash() {
    let (dir, ws) = setup();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("policy.toml"), ws.join("policy-link")).unwrap();
    let edit = |id: &str, input: Value| {
        line(
            json!({"type": "tool_use", "id": id, "name": "str_replace_based_edit_tool", "input": input}),
        )
    };
    let out = serve(
        dir.path(),
        &ws,
        &[
            "--policy",
            "developer",
            "--tools",
            "text-editor",
            "--at-eof",
            "finish",
        ],
        &[
            edit("e1", json!({"command": "view", "path": "notes.txt"})),
            edit(
                "e2",
                json!({"command": "str_replace", "path": "notes.txt", "old_str": "beta", "new_str": "gamma"}),
            ),
            edit("e3", json!({"command": "view", "path": "policy-link"})),
            edit(
                "e4",
                json!({"command": "create", "path": ".claude/settings.json", "file_text": "{}"}),
            ),
            line(tool_use("e5", json!({"command": "echo hi"}))),
        ],
    );
    assert_eq!(
        out.answers[0],
        json!({"type": "tool_result", "tool_use_id": "e1", "content": "     1\talpha\n     2\tbeta\n", "is_error": false})
    );
    assert_eq!(out.answers[1]["is_error"], false, "{}", out.answers[1]);
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    let real = dir.path().canonicalize().unwrap().join("policy.toml");
    assert_eq!(
        out.answers[2],
        json!({"type": "tool_result", "tool_use_id": "e3", "is_error": true, "content": format!(
        "Error: `view` of `policy-link` was refused by the shellgate policy (reads of this path must be allowed); nothing was read.\n\
         - [path-read-outside] reading `{}` is outside the allowed paths: reads must stay inside the workspace (rule `paths.read`)", real.display())})
    );
    let protected = out.answers[3]["content"].as_str().unwrap();
    assert!(
        protected.contains("[path-write-protected]")
            && protected.contains("rule `paths.protected`"),
        "{protected}"
    );
    assert!(!ws.join(".claude").exists());
    assert_eq!(
        out.answers[4]["content"],
        "Error: unknown tool \"bash\"; the tools here are \"str_replace_based_edit_tool\""
    );
}

#[test]
fn an_unknown_tool_name_in_tools_is_a_usage_error() {
    let (dir, ws) = setup();
    let out = bin()
        .args(["serve", "--tools", "bash,python", "--cwd"])
        .arg(&ws)
        .arg("--policy")
        .arg(dir.path().join("policy.toml"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool \"python\": expected bash, text-editor or code-execution"),
        "{stderr}"
    );
}

#[test]
fn the_temporary_outputs_directory_goes_at_end_of_input_and_on_sigterm() {
    let (dir, ws) = setup();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let outputs_left = || {
        std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("shellgate-outputs-")
            })
            .count()
    };
    for signal in [false, true] {
        let mut child = bin()
            .args(["serve", "--tools", "code-execution", "--cwd"])
            .arg(&ws)
            .arg("--policy")
            .arg(dir.path().join("policy.toml"))
            .env("TMPDIR", &tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", code("t", "echo hi")).unwrap();
        let mut answer = String::new();
        // Kept open until serve exits: a closed stdout means the client is gone (exit 2).
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut answer).unwrap();
        assert!(answer.contains("bash_code_execution_result"), "{answer}");
        assert_eq!(
            outputs_left(),
            1,
            "the outputs directory exists while serve runs"
        );
        if signal {
            let pid = child.id().to_string();
            assert!(Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success());
        } else {
            drop(stdin);
        }
        let status = child.wait().unwrap();
        drop(stdout);
        assert_eq!(status.code(), Some(if signal { 143 } else { 0 }));
        assert_eq!(outputs_left(), 0, "left behind (signal: {signal})");
    }
}

// ---- a pipe: end of input, a closed stdout ----

/// Pids whose command line is exactly `argv` (from /proc, not by name).
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

/// `printf 'LINE\nLINE\n' | policy-check serve ARGS`: every line is written and stdin
/// closed at once, as a shell pipe or `subprocess.run(input=...)` does.
fn piped(dir: &Path, ws: &Path, extra: &[&str], lines: &[String]) -> Served {
    let mut child = bin()
        .arg("serve")
        .arg("--policy")
        .arg(dir.join("policy.toml"))
        .arg("--cwd")
        .arg(ws)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    Served {
        answers: String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_pipe_runs_every_line_it_read_then_stops() {
    let (dir, ws) = setup();
    let lines = [
        line(tool_use("t1", json!({"command": "sleep 0.3; echo first"}))),
        line(tool_use("t2", json!({"command": "echo second"}))),
    ];
    for extra in [&[][..], &["--no-sandbox"][..]] {
        let served = piped(dir.path(), &ws, extra, &lines);
        assert_eq!(served.code, Some(0), "{extra:?}: {}", served.stderr);
        let contents: Vec<&str> = served
            .answers
            .iter()
            .map(|a| a["content"].as_str().unwrap())
            .collect();
        assert_eq!(contents, ["first\n", "second\n"], "{extra:?}");
    }
}

#[test]
fn a_pipe_still_times_out_each_line() {
    let (dir, ws) = setup();
    let lines = [
        line(tool_use("t1", json!({"command": "sleep 30"}))),
        line(tool_use("t2", json!({"command": "echo after"}))),
    ];
    let started = Instant::now();
    let served = piped(dir.path(), &ws, &["--timeout", "1"], &lines);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(served.answers.len(), 2);
    let first = served.answers[0]["content"].as_str().unwrap();
    assert!(first.contains("timed out after 1 second"), "{first}");
    assert_eq!(served.answers[1]["content"], "after\n");
}

#[test]
fn at_eof_stop_says_end_of_input_stopped_the_command() {
    let (dir, ws) = setup();
    for extra in [
        &["--at-eof", "stop"][..],
        &["--at-eof", "stop", "--no-sandbox"][..],
    ] {
        let mut child = bin()
            .arg("serve")
            .arg("--policy")
            .arg(dir.path().join("policy.toml"))
            .arg("--cwd")
            .arg(&ws)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let sleep = ["sleep", "100.375"];
        writeln!(
            stdin,
            "{}",
            line(tool_use("t1", json!({"command": "sleep 100.375"})))
        )
        .unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while processes_with(&sleep).is_empty() {
            assert!(Instant::now() < until, "the sleep never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        let content = answer["content"].as_str().unwrap();
        assert!(
            content.contains("stopped (end of input, with --at-eof stop)")
                && !content.contains("signal"),
            "{extra:?}: {content}"
        );
        assert!(processes_with(&sleep).is_empty());
    }
}

#[test]
fn a_closed_stdout_kills_everything_at_once() {
    let (dir, ws) = setup();
    for extra in [&[][..], &["--no-sandbox"][..]] {
        let mut child = bin()
            .arg("serve")
            .arg("--policy")
            .arg(dir.path().join("policy.toml"))
            .arg("--cwd")
            .arg(&ws)
            .args(["--timeout", "60"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let sleep = ["sleep", "100.625"];
        writeln!(
            stdin,
            "{}",
            line(tool_use("t1", json!({"command": "sleep 100.625"})))
        )
        .unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while processes_with(&sleep).is_empty() {
            assert!(Instant::now() < until, "the sleep never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The client goes away: its end of serve's stdout closes (stdin stays open).
        drop(child.stdout.take());
        let until = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < until,
                "{extra:?}: serve outlived its client"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(2), "{extra:?}");
        assert!(
            processes_with(&sleep).is_empty(),
            "{extra:?}: the sleep outlived serve"
        );
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(stderr.contains("stdout was closed"), "{stderr}");
        drop(stdin);
    }
}

#[test]
fn serve_answers_a_message_with_nothing_to_run_with_an_error() {
    let (dir, ws) = setup();
    let nothing =
        "the message has no tool_use block to answer (nothing ran): append no user message for it";
    let lines = vec![
        line(json!({"role": "assistant", "content": [{"type": "text", "text": "All done."}]})),
        line(json!({"role": "assistant", "content": []})),
        // A server tool the API ran and answered itself: nothing for us either.
        line(json!({"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "Found nothing."},
        ]})),
        line(json!({"role": "assistant", "content": [
            {"type": "text", "text": "One call."},
            tool_use("toolu_1", json!({"command": "echo ok"})),
        ]})),
    ];
    let s = serve(dir.path(), &ws, &[], &lines);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(s.answers.len(), lines.len(), "{:?}", s.answers);
    for a in &s.answers[..3] {
        assert_eq!(a["type"], "error", "{a}");
        assert_eq!(a["error"]["type"], "invalid_request_error");
        assert_eq!(a["error"]["message"], nothing);
    }
    // The session still answers, with a user message that is not empty.
    let last = &s.answers[3];
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(last["content"][0]["content"], "ok\n");
}
