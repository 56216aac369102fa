//! Nothing lost (issue 27): destructive calls through `policy-check serve` under the
//! developer policy, each undone by `policy-check undo`, in a real git repository with an
//! uncommitted change, an untracked file, a stash, two branches, a symlink, an executable
//! and an empty directory.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn bin(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_policy-check"));
    c.env("SHELLGATE_STATE_DIR", state);
    c
}

fn git(ws: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every path under `root` (`.git` included) with its kind, mode and content or target.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<String>) {
        let mut names: Vec<_> = std::fs::read_dir(root.join(rel))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for n in names {
            let r = rel.join(&n);
            let p = root.join(&r);
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.push(format!(
                    "{} -> {}",
                    r.display(),
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{}/ {mode:o}", r.display()));
                walk(root, &r, out);
            } else if r == Path::new(".git/index") {
                // git rewrites its index's stat cache whenever it looks (the session's own
                // `git status` does): its entries are compared through `git status` below.
                out.push(format!("{} {mode:o}", r.display()));
            } else {
                let h = blake3::hash(&std::fs::read(&p).unwrap());
                out.push(format!(
                    "{} {mode:o} {} {}",
                    r.display(),
                    m.size(),
                    h.to_hex()
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, Path::new(""), &mut out);
    out
}

/// What git says about the repository.
fn repo(ws: &Path) -> Vec<String> {
    vec![
        git(
            ws,
            &[
                "status",
                "--porcelain=v1",
                "--untracked-files=all",
                "--ignored",
            ],
        ),
        git(ws, &["log", "--all", "--format=%H %s %D"]),
        git(ws, &["stash", "list", "--format=%H %gs"]),
        git(ws, &["branch", "-a", "-v"]),
    ]
}

/// The files, then what git says (git may refresh its index; the files are read first).
fn state(ws: &Path) -> (Vec<String>, Vec<String>) {
    let t = tree(ws);
    (t, repo(ws))
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let state = dir.path().join("state");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["config", "user.email", "t@example.com"]);
    git(&ws, &["config", "user.name", "t"]);
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("src/s.rs"), "fn main() {}\n").unwrap();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/s.rs", ws.join("link")).unwrap();
    std::fs::write(
        ws.join("wipe.py"),
        // Everything it can: the jail keeps `.git`'s config and hooks read-only (issue 23).
        "import os, shutil\nfor n in os.listdir('.'):\n    p = os.path.join('.', n)\n    \
         shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)\n",
    )
    .unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "first"]);
    git(&ws, &["checkout", "-qb", "other"]);
    std::fs::write(ws.join("b.txt"), "b\n").unwrap();
    git(&ws, &["add", "b.txt"]);
    git(&ws, &["commit", "-qm", "on other"]);
    git(&ws, &["checkout", "-q", "main"]);
    std::fs::write(ws.join("a.txt"), "one\nstashed\n").unwrap();
    git(&ws, &["stash", "-q"]);
    // One uncommitted change, untracked files, an empty directory.
    std::fs::write(ws.join("a.txt"), "one\ntwo\nuncommitted\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "my notes\n").unwrap();
    std::fs::write(ws.join("src/untracked.rs"), "// draft\n").unwrap();
    std::fs::create_dir(ws.join("empty")).unwrap();
    (dir, ws, state)
}

/// Serve `commands` (ids c1, c2, ...) with approvals granted; every answer, in order.
fn serve(state: &Path, ws: &Path, first: usize, commands: &[&str]) -> Vec<Value> {
    let mut child = bin(state)
        .args([
            "serve",
            "--policy",
            "developer",
            "--ask",
            "allow",
            "--at-eof",
            "finish",
            "--cwd",
        ])
        .arg(ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (i, c) in commands.iter().enumerate() {
        let call = json!({"type": "tool_use", "id": format!("c{}", first + i), "name": "bash",
                          "input": {"command": c}});
        input.push_str(&format!("{call}\n"));
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn undo(state: &Path, ws: &Path, to: Option<&str>) -> (i32, String, String) {
    let mut c = bin(state);
    c.args(["undo", "--cwd"]).arg(ws);
    if let Some(id) = to {
        c.args(["--to", id]);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const DESTRUCTIVE: &[&str] = &[
    "git checkout -- .",
    "git restore .",
    ": > notes.txt",
    "sed -i d a.txt",
    "git rm -rf -q .",
    "rm -rf src",
    "git reset --hard -q",
    "git clean -fdxq",
    "git stash drop -q",
    "git branch -D other",
];

#[test]
fn undo_to_the_first_call_gives_back_the_exact_workspace_and_one_undo_only_the_last() {
    let (_dir, ws, state_dir) = setup();
    let before = state(&ws);
    let answers = serve(&state_dir, &ws, 1, DESTRUCTIVE);
    assert_eq!(answers.len(), DESTRUCTIVE.len());
    for (a, c) in answers.iter().zip(DESTRUCTIVE) {
        assert_eq!(a["is_error"], false, "{c}: {a}");
    }
    // The damage is real: the uncommitted change, the untracked files, the stash, a branch.
    let damaged = state(&ws);
    assert!(!ws.join("notes.txt").exists() && !ws.join("src/untracked.rs").exists());
    assert_eq!(damaged.1[2], "");
    assert!(!damaged.1[3].contains("other"));
    let middle = damaged;
    // Sandboxed workspace code that deletes everything, `.git` included.
    let wipe = serve(&state_dir, &ws, 11, &["python3 wipe.py"]);
    assert_eq!(wipe[0]["is_error"], false, "{}", wipe[0]);
    // Everything but what the jail protects inside `.git` is gone.
    let left: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().all(|n| n == ".git"),
        "the script deleted everything: {left:?}"
    );
    assert!(
        !ws.join(".git/HEAD").exists(),
        "and the repository's state with it"
    );

    // One undo reverts only the last call.
    let (code, out, err) = undo(&state_dir, &ws, None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("before #11 c11"), "{out}");
    assert_eq!(state(&ws), middle);

    // The next one walks back one more call: the branch is back, nothing else changes.
    let (code, out, err) = undo(&state_dir, &ws, None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("c10"), "{out}");
    let now = state(&ws);
    assert!(now.1[3].contains("other"), "{:?}", now.1);
    assert_eq!(now.1[2], "", "the stash stays dropped");

    // Back to before the first call: files, modes, symlink, empty directory, repository.
    let (code, out, err) = undo(&state_dir, &ws, Some("c1"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(state(&ws), before);
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\ntwo\nuncommitted\n"
    );

    // Undo is undoable: back to the wiped workspace, then forward to before the first undo.
    let history = bin(&state_dir)
        .args(["history", "--format", "json", "--cwd"])
        .arg(&ws)
        .output()
        .unwrap();
    let items: Vec<Value> = String::from_utf8_lossy(&history.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 14, "11 calls and 3 undos");
    assert_eq!(items[2]["command"], ": > notes.txt");
    assert_eq!(items[2]["changes"]["changed"], json!(["notes.txt"]));
    assert_eq!(
        items[5]["changes"]["removed"],
        json!(["src", "src/untracked.rs"])
    );
    let first_undo = items[11]["id"].as_str().unwrap();
    assert_eq!(first_undo, "undo-12");
    let (code, out, err) = undo(&state_dir, &ws, Some(first_undo));
    assert_eq!(code, 0, "{out}{err}");
    // Back to just after the wipe: only what the jail kept of `.git` is there.
    let left: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| n == ".git"), "{left:?}");
    assert!(!ws.join(".git/HEAD").exists());
}

#[test]
fn undo_refuses_while_serve_holds_the_workspace_and_history_redacts() {
    let (_dir, ws, state_dir) = setup();
    let mut child = bin(&state_dir)
        .args(["serve", "--policy", "developer", "--cwd"])
        .arg(&ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let secret = "ghp_R8xT2mQ9vL4kW7nB3cY6pZ1sD5fG0hJ2aE8u";
    let call = json!({"type": "tool_use", "id": "s1", "name": "bash",
                      "input": {"command": format!("echo {secret} > notes.txt")}});
    writeln!(stdin, "{call}").unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
    assert!(line.contains("\"is_error\":false"), "{line}");
    let (code, _, err) = undo(&state_dir, &ws, None);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a session is using this workspace"), "{err}");
    drop(stdin);
    child.wait().unwrap();
    let history = bin(&state_dir)
        .args(["history", "--cwd"])
        .arg(&ws)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&history.stdout);
    assert!(text.contains("s1") && text.contains("~notes.txt"), "{text}");
    assert!(!text.contains(secret), "{text}");
    let (code, out, err) = undo(&state_dir, &ws, None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "my notes\n"
    );
}

#[test]
fn a_read_only_call_takes_no_snapshot_and_a_failing_store_refuses_the_call() {
    let (_dir, ws, state_dir) = setup();
    let answers = serve(&state_dir, &ws, 1, &["ls", "cat a.txt | wc -l"]);
    assert!(answers.iter().all(|a| a["is_error"] == false));
    let history = bin(&state_dir)
        .args(["history", "--cwd"])
        .arg(&ws)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&history.stdout).contains("no snapshots"));
    // A store that cannot be written: serve does not start rather than run unprotected.
    let blocked = ws.parent().unwrap().join("blocked");
    std::fs::write(&blocked, "a file, not a directory").unwrap();
    let out = bin(&blocked)
        .args(["serve", "--policy", "developer", "--cwd"])
        .arg(&ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot keep workspace snapshots"));
}

fn hook(state: &Path, ws: &Path, payload: Value) -> (i32, String, String) {
    let mut child = bin(state)
        .args([
            "hook",
            "claude-code",
            "--policy",
            "developer",
            "--workspace",
        ])
        .arg(ws)
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_pre_tool_use_hook_snapshots_before_it_allows_a_write() {
    let (_dir, ws, state_dir) = setup();
    let before = state(&ws);
    let payload = |id: &str, tool: &str, input: Value| {
        json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_use_id": id,
               "cwd": ws, "tool_input": input})
    };
    // A read: allowed, no snapshot.
    let (code, out, err) = hook(
        &state_dir,
        &ws,
        payload("h0", "Bash", json!({"command": "ls"})),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"allow\""), "{out}");
    // A write: allowed after a snapshot; the agent then runs it.
    let (code, out, err) = hook(
        &state_dir,
        &ws,
        payload("h1", "Bash", json!({"command": "rm -rf src"})),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"allow\""), "{out}");
    std::fs::remove_dir_all(ws.join("src")).unwrap();
    // The agent's own file tool: decided under [paths] (issue 24), and a snapshot first.
    let (code, out, err) = hook(
        &state_dir,
        &ws,
        payload(
            "h2",
            "Write",
            json!({"file_path": ws.join("notes.txt"), "content": ""}),
        ),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"allow\""), "{out}");
    std::fs::write(ws.join("notes.txt"), "").unwrap();
    let history = bin(&state_dir)
        .args(["history", "--cwd"])
        .arg(&ws)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&history.stdout);
    assert!(
        text.contains("h1 [hook:Bash] rm -rf src") && text.contains("h2 [hook:Write]"),
        "{text}"
    );
    assert!(!text.contains("h0"), "{text}");
    let (code, out, err) = undo(&state_dir, &ws, Some("h1"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(state(&ws), before);
}

#[test]
fn a_call_that_fills_the_budget_makes_the_next_write_fail_closed_and_undo_still_works() {
    let (dir, ws, state_dir) = setup();
    let policy = dir.path().join("small.toml");
    std::fs::write(
        &policy,
        "[policy]\nname = \"small\"\ninclude = [\"developer\"]\n\n[snapshots]\nmax_bytes = 200000\n",
    )
    .unwrap();
    let run = |id: &str, command: &str| -> Value {
        let call =
            json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}});
        let mut child = bin(&state_dir)
            .args(["serve", "--at-eof", "finish", "--policy"])
            .arg(&policy)
            .arg("--cwd")
            .arg(&ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{call}").unwrap();
        let out = child.wait_with_output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // The call that fills the budget is snapshotted first (the workspace still fits) ...
    let a = run("f1", "printf %0300000d 0 > big.txt");
    assert_eq!(a["is_error"], false, "{a}");
    // ... and the next write cannot be: it is refused, not run unprotected.
    let a = run("f2", "rm -rf src");
    assert_eq!(a["is_error"], true, "{a}");
    let text = a["content"].as_str().unwrap();
    assert!(
        text.contains("not run") && text.contains("snapshot-failed") && text.contains("max_bytes"),
        "{text}"
    );
    assert!(ws.join("src/s.rs").exists());
    // A read still runs, and undo takes the workspace back to before the big file.
    assert_eq!(run("f3", "cat a.txt")["is_error"], false);
    std::fs::remove_file(ws.join("big.txt")).unwrap();
    let (code, out, err) = undo(&state_dir, &ws, Some("f1"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(!ws.join("big.txt").exists());
}

#[test]
fn a_rebase_and_a_stash_pop_are_undone_with_the_library() {
    use shellgate::policy::snapshots::SnapshotSettings;
    use shellgate::snapshot::Snapshots;
    let (_dir, ws, state_dir) = setup();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let before = state(&ws);
    let settings = SnapshotSettings {
        dir: Some(state_dir),
        ..SnapshotSettings::default()
    };
    let mut s = Snapshots::open(&ws, &settings).unwrap();
    s.before("r1", "bash", Some("git rebase other")).unwrap();
    git(&ws, &["rebase", "-q", "other"]);
    assert!(ws.join("b.txt").exists());
    s.before("r2", "bash", Some("git stash pop")).unwrap();
    git(&ws, &["stash", "pop", "-q"]);
    assert_eq!(git(&ws, &["stash", "list"]), "");
    drop(s);
    let (code, out, err) = undo(&ws.parent().unwrap().join("state"), &ws, Some("r1"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(state(&ws), before);
}

#[test]
fn the_text_editor_is_snapshotted_before_it_writes_not_before_it_reads() {
    let (_dir, ws, state_dir) = setup();
    let edit = |id: &str, input: Value| json!({"type": "tool_use", "id": id, "name": "str_replace_based_edit_tool", "input": input});
    let lines = [
        edit("e1", json!({"command": "view", "path": "a.txt"})),
        edit(
            "e2",
            json!({"command": "str_replace", "path": "a.txt", "old_str": "uncommitted", "new_str": "edited"}),
        ),
        edit(
            "e3",
            json!({"command": "create", "path": "notes.txt", "file_text": ""}),
        ),
    ];
    let mut child = bin(&state_dir)
        .args([
            "serve",
            "--policy",
            "developer",
            "--tools",
            "bash,text-editor",
            "--at-eof",
            "finish",
            "--cwd",
        ])
        .arg(&ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for l in &lines {
        input.push_str(&format!("{l}\n"));
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        answers.iter().all(|a| a["is_error"] == false),
        "{answers:?}"
    );
    let history = bin(&state_dir)
        .args(["history", "--format", "json", "--cwd"])
        .arg(&ws)
        .output()
        .unwrap();
    let items: Vec<Value> = String::from_utf8_lossy(&history.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["e2", "e3"]);
    assert_eq!(items[0]["tool"], "str_replace_based_edit_tool");
    assert_eq!(items[0]["changes"]["changed"], json!(["a.txt"]));
    let (code, out, err) = undo(&state_dir, &ws, Some("e2"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "one\ntwo\nuncommitted\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "my notes\n"
    );
}
