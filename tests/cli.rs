//! The `policy-check` command-line contract: outputs and exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_policy-check"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn policy-check");
    {
        let mut input = child.stdin.take().expect("stdin");
        if let Some(data) = stdin {
            input.write_all(data).expect("write stdin");
        }
    }
    child.wait_with_output().expect("wait")
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn check_args_all_allowed_exits_0() {
    let out = run(
        &[
            "check",
            "--policy",
            "read-only",
            "--cwd",
            "/workspace",
            "--format",
            "json",
            "ls -la",
            "cat data.txt|grep x",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let l = lines(&out);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0]["command"], "ls -la");
    assert_eq!(l[0]["decision"], "allow");
    assert_eq!(l[0]["reasons"], serde_json::json!([]));
}

#[test]
fn check_denied_exits_1_with_reasons() {
    let out = run(
        &[
            "check",
            "--policy",
            "read-only",
            "--cwd",
            "/workspace",
            "--format",
            "json",
            "--",
            "ls;rm -rf /",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    assert_eq!(l[0]["decision"], "deny");
    let r = &l[0]["reasons"][0];
    assert_eq!(r["code"], "program-not-allowed");
    assert_eq!(r["span"], serde_json::json!([3, 5]));
    assert!(r["message"].as_str().unwrap().contains("rm"));
}

#[test]
fn check_reads_json_lines_in_order() {
    let input = b"\"ls\"\n{\"command\": \"cat a.txt\\nrm x\"}\n\n{\"command\": \"echo hi\", \"other\": 1}\n";
    let out = run(
        &[
            "check",
            "--policy",
            "read-only",
            "--cwd",
            "/workspace",
            "--format",
            "json",
        ],
        Some(input),
    );
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    let got: Vec<(&str, &str)> = l
        .iter()
        .map(|v| {
            (
                v["command"].as_str().unwrap(),
                v["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("ls", "allow"),
            ("cat a.txt\nrm x", "deny"),
            ("echo hi", "allow")
        ]
    );
}

#[test]
fn bad_stdin_lines_are_named_and_exit_2() {
    let out = run(
        &["check", "--policy", "read-only", "--format", "json"],
        Some(b"\"ls\"\n{\"command\": \"ls\"\n{\"cmd\": 1}\n\xff\xfe\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stdin:2: invalid JSON"), "{err}");
    assert!(
        err.contains("stdin:3: the JSON object has no \"command\""),
        "{err}"
    );
    assert!(err.contains("stdin:4: not valid UTF-8"), "{err}");
    // Each error says which forms a line may take, so the fix is in the message.
    assert!(err.contains("a command as plain text"), "{err}");
    assert_eq!(lines(&out).len(), 1, "the valid line is still answered");
}

#[test]
fn a_plain_stdin_line_is_the_command_itself() {
    // `echo 'ls -la' | policy-check check` is the first thing people try; shell lines that
    // start like JSON but are not JSON (`"$HOME/x"`, `{ ls; }`) are commands too, and JSON
    // literals that are also commands (`true`) are read as the command.
    let input = b"ls -la\n\"ls\" -la\n{ ls; }\ntrue\nls;rm -rf /\n";
    let out = run(
        &["check", "--policy", "read-only", "--format", "json"],
        Some(input),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<(String, String)> = lines(&out)
        .iter()
        .map(|v| {
            (
                v["command"].as_str().unwrap().to_string(),
                v["decision"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("ls -la", "allow"),
        ("\"ls\" -la", "allow"),
        ("{ ls; }", "allow"),
        ("true", "allow"),
        ("ls;rm -rf /", "deny"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(c, d)| (c.to_string(), d.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_misspelt_shipped_policy_name_gets_did_you_mean() {
    let out = run(&["check", "--policy", "develper", "ls"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `developer`?"), "{err}");
    assert!(err.contains("read-only, developer"), "{err}");
    // Nothing close: the list, and no guess.
    let out = run(&["check", "--policy", "zzz", "ls"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("did you mean"), "{err}");
    assert!(err.contains("neither a shipped policy nor a file"), "{err}");
    // A path keeps the I/O error that names it.
    let out = run(&["check", "--policy", "nope/policy.toml", "ls"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope/policy.toml: cannot read policy"),
        "{err}"
    );
}

#[test]
fn run_takes_the_command_as_one_argument_or_after_the_separator() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    for args in [
        vec![
            "run",
            "--policy",
            "read-only",
            "--no-sandbox",
            "--cwd",
            cwd,
            "echo one two",
        ],
        vec![
            "run",
            "--policy",
            "read-only",
            "--no-sandbox",
            "--cwd",
            cwd,
            "--",
            "echo",
            "one",
            "two",
        ],
        vec![
            "run",
            "--policy",
            "read-only",
            "--no-sandbox",
            "--cwd",
            cwd,
            "echo",
            "one",
            "two",
        ],
    ] {
        let out = run(&args, None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "one two\n",
            "{args:?}"
        );
    }
    // The words after the command are the command's, even when they look like options.
    let out = run(
        &[
            "run",
            "--policy",
            "read-only",
            "--no-sandbox",
            "--cwd",
            cwd,
            "echo",
            "--timeout",
            "1",
        ],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "--timeout 1\n");
    // And a refusal is still a refusal.
    let out = run(
        &[
            "run",
            "--policy",
            "read-only",
            "--no-sandbox",
            "--cwd",
            cwd,
            "rm -rf /",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn invalid_policy_exits_2_naming_file_line_col() {
    let dir = std::env::temp_dir().join(format!("shellgate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.toml");
    std::fs::write(
        &p,
        "[policy]\ndefault = \"allow\"\n[programs.ls]\nverdict = \"perhaps\"\n",
    )
    .unwrap();
    let out = run(&["check", "--policy", p.to_str().unwrap(), "ls"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:4:11"), "{err}");
    assert!(err.contains("policy-invalid-verdict"), "{err}");
    let out = run(&["check", "--policy", "/nonexistent.toml", "ls"], None);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn default_policy_is_read_only_and_says_so() {
    let out = run(&["check", "ls"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
}

#[test]
fn explain_draws_carets_under_the_span() {
    let out = run(
        &[
            "explain",
            "--policy",
            "read-only",
            "--cwd",
            "/workspace",
            "ls; rm -rf /",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("program-not-allowed"), "{text}");
    assert!(text.contains("^^"), "{text}");
    assert!(text.contains("decision: deny"), "{text}");
}

#[test]
fn test_subcommand_runs_examples() {
    let out = run(&["test", "--policy", "developer"], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dir = std::env::temp_dir().join(format!("shellgate-cli-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("ex.toml");
    std::fs::write(&p, "[programs.ls]\n[examples]\nallow = [\"rm x\"]\n").unwrap();
    let out = run(&["test", "--policy", p.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ex.toml:3:"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_endless_stdin_line_is_skipped_with_its_line_number() {
    let mut input = Vec::with_capacity(17 << 20);
    input.push(b'"');
    input.resize(17 << 20, b'a');
    input.extend_from_slice(b"\"\n\"ls\"\n");
    let out = run(
        &["check", "--policy", "read-only", "--format", "json"],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdin:1: line longer than"));
    let l = lines(&out);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["command"], "ls");
}

/// A file the tool cannot read or write is named in a `policy-check: PATH: cannot ACTION:`
/// line and exits 2 (not 1, which is a refusal), whichever subcommand met it.
#[test]
fn unreadable_and_unwritable_files_are_named_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sh");
    let missing = missing.to_str().unwrap();
    let unwritable = dir.path().join("no-such-dir").join("policy.toml");
    let unwritable = unwritable.to_str().unwrap();
    for (args, want) in [
        (
            vec!["check", "--policy", "read-only", "--script", missing],
            format!("policy-check: {missing}: cannot read: "),
        ),
        (
            vec!["redact", "--policy", missing],
            format!("policy-check: {missing}: cannot read: "),
        ),
        (
            vec!["init", "--output", unwritable],
            format!("policy-check: {unwritable}: cannot write: "),
        ),
    ] {
        let out = run(&args, Some(b""));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.lines().any(|l| l.starts_with(&want)),
            "{args:?}: want a line starting {want:?}, got {stderr}"
        );
    }
}

#[test]
fn check_with_an_edited_shipped_policy_runs_its_examples() {
    let shipped = include_str!("../policies/developer.toml");
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("developer.toml");
    std::fs::write(&same, shipped).unwrap();
    let needle = "\n[examples]\nallow = [\n";
    let at = shipped.find(needle).expect("an [examples] allow list") + needle.len();
    let edited = format!("{}  \"sudo rm -rf /\",\n{}", &shipped[..at], &shipped[at..]);
    let wrong = dir.path().join("edited.toml");
    std::fs::write(&wrong, edited).unwrap();
    let (same, wrong) = (same.to_str().unwrap(), wrong.to_str().unwrap());

    let out = run(
        &["check", "--policy", same, "--cwd", "/workspace", "ls -la"],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(
        &["check", "--policy", wrong, "--cwd", "/workspace", "ls -la"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("policy-example-failed"), "{err}");
    assert!(err.contains("sudo rm -rf /"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "no decision under a policy that does not load"
    );

    let out = run(&["test", "--policy", wrong], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("policy-example-failed"));
    for spec in ["developer", same] {
        let out = run(&["test", "--policy", spec], None);
        assert_eq!(out.status.code(), Some(0), "{spec}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("example(s) passed"));
    }
}

#[test]
fn lint_shows_load_errors_and_warnings_in_one_run() {
    // One unknown key used to hide every warning until it was fixed; now the parts that
    // load are linted beside the errors, and the summary says the examples did not run.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "[policy]\nname = \"t\"\nbogus_key = 1\n\n[programs.sort]\noperands = \"path-read\"\noptions = [{ names = [\"-o\"] }]\n",
    )
    .unwrap();
    let out = run(&["lint", "--policy", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error[policy-unknown-key]"), "{text}");
    assert!(text.contains("p.toml:3:1"), "{text}");
    assert!(text.contains("warning[lint-dangerous-option]"), "{text}");
    assert!(
        text.contains("1 policy linted: 1 error(s), 1 warning(s); examples not run"),
        "{text}"
    );
    // The same findings as JSON lines, errors and warnings together.
    let out = run(
        &[
            "lint",
            "--format",
            "json",
            "--policy",
            path.to_str().unwrap(),
        ],
        None,
    );
    let codes: Vec<String> = lines(&out)
        .iter()
        .map(|v| v["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes, ["policy-unknown-key", "lint-dangerous-option"]);
}

#[test]
fn a_failed_example_points_at_the_bytes_its_reason_is_about() {
    // The caret used to sit under the example's opening quote; now it is under the span of
    // the reason that decided it, when the string is written without escapes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "[policy]\nname = \"t\"\ninclude = [\"read-only\"]\n\n[examples]\nallow = [\"ls; rm -rf /tmp/x\", \"echo \\\"a\\\"; rm x\"]\n",
    )
    .unwrap();
    let out = run(
        &[
            "lint",
            "--format",
            "json",
            "--policy",
            path.to_str().unwrap(),
        ],
        None,
    );
    let found: Vec<(u64, u64)> = lines(&out)
        .iter()
        .filter(|v| v["code"] == "policy-example-failed")
        .map(|v| (v["line"].as_u64().unwrap(), v["column"].as_u64().unwrap()))
        .collect();
    // `rm` of the first example is at column 15; the second has escapes, so its quote (31).
    assert_eq!(found, [(6, 15), (6, 31)]);
}
