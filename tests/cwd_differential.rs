//! Where `cd` takes later commands, against real bash. Commands are generated from `cd`s
//! (into directories that exist and ones that do not, `..`, absolute paths), negated,
//! grouped, in subshells and pipelines and conditionals, joined by `;`, `&&`, `||` and
//! newlines, and `cat`s of relative paths. Every command the policy allows is run by bash in
//! a scratch tree whose `cat` is a stub that records its real working directory and its
//! arguments: every file it would have read must be inside the workspace.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use shellgate::{Context, Policy, Verdict};

const POLICY: &str = r#"
[policy]
name = "cwd-test"
default = "deny"
[paths]
read = ["{workspace}", "{workspace}/**"]
[programs.cd]
operands = ["path-read"]
min_operands = 1
[programs.cat]
operands = "path-read"
[programs.true]
[programs.false]
[programs.echo]
operands = "text"
[env]
allow = ["[a-z]"]
"#;

/// `root/ws` is the workspace (with `a/b` and `c`); the runs start in `root/ws/a`.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    stubs: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().expect("scratch dir");
        let root = dir.path().canonicalize().expect("canonical");
        let ws = root.join("ws");
        for d in ["ws/a/b", "ws/c", "stubs", "log"] {
            std::fs::create_dir_all(root.join(d)).expect("dirs");
        }
        for f in [
            "secret.txt",
            "ws/f.txt",
            "ws/a/f.txt",
            "ws/a/b/f.txt",
            "ws/c/f.txt",
        ] {
            std::fs::write(root.join(f), "x\n").expect("files");
        }
        let stubs = root.join("stubs");
        let cat = stubs.join("cat");
        std::fs::write(
            &cat,
            "#!/bin/sh\n{ pwd -P; for a in \"$@\"; do printf '%s\\n' \"$a\"; done; printf '\\001\\n'; } >> \"$CWD_LOG\"\n",
        )
        .expect("stub");
        std::fs::set_permissions(&cat, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Tree {
            _dir: dir,
            root,
            ws,
            stubs,
        }
    }

    /// Runs `cmd` with bash from `ws/a`; returns each file `cat` was asked to read, made
    /// absolute against the directory it really ran in.
    fn cat_reads(&self, cmd: &str) -> Vec<PathBuf> {
        let log = self.root.join("log").join("cat.log");
        let _ = std::fs::remove_file(&log);
        let status = Command::new("/bin/bash")
            .args(["--norc", "--noprofile", "-c", cmd])
            .current_dir(self.ws.join("a"))
            .env_clear()
            .env("PATH", &self.stubs)
            .env("HOME", &self.ws)
            .env("CWD_LOG", &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        assert!(status.is_ok(), "bash did not run");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let mut reads = Vec::new();
        for record in text.split("\u{1}\n").filter(|r| !r.is_empty()) {
            let mut lines = record.lines();
            let cwd = PathBuf::from(lines.next().unwrap_or("/"));
            reads.extend(lines.map(|arg| normalize(&cwd.join(arg))));
        }
        reads
    }
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

fn element() -> impl Strategy<Value = String> {
    let target = proptest::sample::select(vec![
        "a", "b", "..", "../..", "../../..", "c", "../c", "nope", "a/b", "./b", "b/..", "WS/c",
        "WS/a/b", "WS",
    ]);
    let file = proptest::sample::select(vec![
        "f.txt",
        "../f.txt",
        "../../f.txt",
        "../../../f.txt",
        "b/f.txt",
        "../secret.txt",
        "../../secret.txt",
        "c/f.txt",
    ]);
    prop_oneof![
        4 => target.clone().prop_map(|t| format!("cd {t}")),
        1 => target.clone().prop_map(|t| format!("! cd {t}")),
        1 => target.clone().prop_map(|t| format!("{{ cd {t}; }}")),
        1 => target.clone().prop_map(|t| format!("( cd {t} )")),
        1 => target.clone().prop_map(|t| format!("cd {t} | true")),
        1 => (target.clone(), file.clone()).prop_map(|(t, f)| format!("if cd {t}; then cat {f}; fi")),
        1 => (target.clone(), file.clone()).prop_map(|(t, f)| format!("for i in 1 2; do cd {t}; cat {f}; done")),
        1 => (target.clone(), file.clone()).prop_map(|(t, f)| format!("for i in 1 2; do cat {f}; ( cd {t} && cat {f} ); done")),
        1 => (target, file.clone()).prop_map(|(t, f)| format!("echo \"$(cd {t}; cat {f})\"")),
        4 => file.prop_map(|f| format!("cat {f}")),
        1 => Just("true".to_string()),
        1 => Just("false".to_string()),
    ]
}

fn command() -> impl Strategy<Value = String> {
    let join = proptest::sample::select(vec![" ; ", " && ", " || ", "\n"]);
    (
        element(),
        proptest::collection::vec((join, element()), 1..6),
    )
        .prop_map(|(first, rest)| {
            rest.into_iter()
                .fold(first, |acc, (j, e)| format!("{acc}{j}{e}"))
        })
}

/// Checks one command; returns whether the policy allowed it.
fn check(tree: &Tree, policy: &Policy, cmd: &str) -> Result<bool, String> {
    let cmd = cmd.replace("WS", &tree.ws.display().to_string());
    let ctx = Context::new(&tree.ws).with_cwd("a");
    let decision = policy.evaluate(&ctx, &cmd);
    if decision.verdict != Verdict::Allow {
        return Ok(false);
    }
    for read in tree.cat_reads(&cmd) {
        if !read.starts_with(&tree.ws) {
            return Err(format!("allowed {cmd:?}, and bash read {}", read.display()));
        }
    }
    Ok(true)
}

fn policy() -> Policy {
    Policy::from_toml(POLICY, "cwd-test.toml").expect("valid test policy")
}

#[test]
fn the_harness_sees_where_cat_runs() {
    let tree = Tree::new();
    assert_eq!(
        tree.cat_reads("cd b; cat f.txt ../x"),
        vec![tree.ws.join("a/b/f.txt"), tree.ws.join("a/x")]
    );
    assert_eq!(
        tree.cat_reads("cd nope; cat ../f.txt"),
        vec![tree.ws.join("f.txt")]
    );
}

#[test]
fn ordinary_cd_shapes() {
    let tree = Tree::new();
    let policy = policy();
    for (cmd, allowed) in [
        ("cd b && cat f.txt", true),
        ("cd .. && cat f.txt", true),
        ("cd b; cat ../f.txt", true),
        ("cd ../.. && cat f.txt", false),
        ("cd nope; cd ..; cat ../secret.txt", false),
        // One pass of the loop stays inside; the second climbs out.
        ("for i in 1 2 3; do cd ..; cat secret.txt; done", false),
        ("for i in 1 2; do cat ../f.txt; cd ..; done", false),
        ("for i in 1 2; do ( cd b && cat f.txt ); done", true),
        ("(cd b); cat ../f.txt", true),
        // After `cd b &&` only `b` is possible; after `cd b;` or `||` the start is too.
        ("cd b && cat ../../f.txt", true),
        ("cd b && cd .. && cat ../f.txt", true),
        ("cd b; cat ../../f.txt", false),
        ("cd b || cat ../../f.txt", false),
        ("! cd b && cat ../../f.txt", false),
        ("cd b && cat ../../f.txt || cat ../../f.txt", false),
        ("cd b && { cd ..; cat ../f.txt; }", true),
        ("echo \"$(cd b; cat f.txt)\"; cat ../f.txt", true),
    ] {
        assert_eq!(check(&tree, &policy, cmd), Ok(allowed), "{cmd}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn allowed_commands_read_only_inside_the_workspace(cmd in command()) {
        let tree = Tree::new();
        if let Err(e) = check(&tree, &policy(), &cmd) {
            prop_assert!(false, "{e}");
        }
    }
}

/// The generator reaches both verdicts often enough for the property to mean something, and
/// 3,000 fixed cases run on every test run: with `cd` recording only one of its possible
/// targets (the hole fixed in `regression_cd_is_tracked_from_every_possible_directory`),
/// this found `false; cd a | true && if cd ..; then cat ../secret.txt; fi || cat b/f.txt`.
#[test]
fn generated_commands_cover_both_verdicts() {
    let tree = Tree::new();
    let policy = policy();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut allowed, total) = (0, 3000);
    for _ in 0..total {
        let cmd = command().new_tree(&mut runner).expect("generate").current();
        if check(&tree, &policy, &cmd).unwrap_or_else(|e| panic!("{e}")) {
            allowed += 1;
        }
    }
    assert!(allowed * 10 >= total, "only {allowed} of {total} allowed");
    assert!(allowed * 10 <= total * 9, "{allowed} of {total} allowed");
}
