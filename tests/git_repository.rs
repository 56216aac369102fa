//! The repository git really uses (issue 22, item 2): an embedded or nested repository in the
//! workspace is found as git finds it and refused; the config of a repository the policy
//! names is read, and a key that runs a program refuses the command. Real git shows each
//! planted key running its program (a marker file), then the evaluator refuses the command.

use std::path::Path;
use std::process::Command;

use shellgate::{Context, Policy, Verdict};

fn developer() -> Policy {
    Policy::shipped("developer").expect("valid shipped policy")
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@b")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@b")
        .env_remove("GIT_EDITOR")
        .env_remove("EDITOR")
        .env_remove("VISUAL")
        .env_remove("GIT_PAGER")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("git runs")
}

fn has_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

/// A workspace that is a repository, with a nested repository `sub` whose config runs
/// `marker` on `git status` (core.fsmonitor), and a bare-shaped directory `evil`.
fn workspace(marker: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    git(ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-qm", "one"]);
    std::fs::create_dir(ws.join("sub")).unwrap();
    git(&ws.join("sub"), &["init", "-q"]);
    let hook = format!("touch {}; false", marker.display());
    git(&ws.join("sub"), &["config", "core.fsmonitor", &hook]);
    std::fs::write(ws.join("sub/b.txt"), "b\n").unwrap();
    git(&ws.join("sub"), &["add", "b.txt"]);
    git(&ws.join("sub"), &["commit", "-qm", "one"]);
    // A directory with a repository's shape: git's discovery takes it for a bare repository.
    std::fs::create_dir_all(ws.join("evil/objects")).unwrap();
    std::fs::create_dir_all(ws.join("evil/refs")).unwrap();
    std::fs::write(ws.join("evil/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        ws.join("evil/config"),
        format!("[core]\n\tfsmonitor = \"{hook}\"\n"),
    )
    .unwrap();
    dir
}

#[test]
fn a_nested_repository_runs_its_config_and_is_refused() {
    if !has_git() {
        eprintln!("skipped: no git");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let dir = workspace(&marker);
    let ws = dir.path().canonicalize().unwrap();
    // A symlink to the nested repository, and a `.git` file pointing at it.
    std::os::unix::fs::symlink(ws.join("sub"), ws.join("link")).unwrap();
    std::fs::create_dir(ws.join("gitfile")).unwrap();
    std::fs::write(
        ws.join("gitfile/.git"),
        format!("gitdir: {}\n", ws.join("sub/.git").display()),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    // Ground truth: real git runs the nested repository's core.fsmonitor.
    git(&ws, &["-C", "sub", "status"]);
    assert!(
        marker.exists(),
        "git ran core.fsmonitor of the nested repository"
    );
    let policy = developer();
    let ctx = Context::new(&ws);
    for cmd in [
        "git -C sub status",
        "cd sub && git diff",
        "cd sub && git ls-files",
        "git -C sub grep x",
        "git -C sub add b.txt",
        "git -C . -C sub log",
        "git -C evil status",
        "cd evil && git diff",
        "cd evil/refs && git status",
        "cd sub; git status",
        "timeout 5 git -C sub status",
        "bash -c 'cd sub && git log'",
        "git -C src/../sub status",
        "git -C link status",
        "git -C gitfile status",
    ] {
        let d = policy.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Deny, "{cmd}: {:?}", d.reasons);
        let r = d
            .reasons
            .iter()
            .find(|r| r.code == "git-repository-untrusted")
            .unwrap_or_else(|| panic!("{cmd}: {:?}", d.reasons));
        let named = ["evil", "link", "gitfile"]
            .into_iter()
            .find(|n| cmd.contains(n))
            .unwrap_or("sub");
        assert!(
            r.message.contains(&format!("{}", ws.join(named).display())),
            "{}",
            r.message
        );
    }
    // The workspace's own repository, from anywhere in it, stays allowed, and so does a
    // linked worktree of it (one common directory: the same config and hooks).
    git(&ws, &["worktree", "add", "-q", "wt2"]);
    for cmd in [
        "git -C wt2 status",
        "cd wt2 && git log",
        "git status",
        "git -C src status",
        "cd src && git diff",
        "git log --oneline -3",
    ] {
        let d = policy.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Allow, "{cmd}: {:?}", d.reasons);
    }
    // A context whose workspace is only a name reads nothing.
    let d = policy.evaluate(&Context::example(), "git -C sub status");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reasons);
}

#[test]
fn a_named_repository_is_trusted_unless_its_config_runs_programs() {
    if !has_git() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = workspace(&tmp.path().join("ran"));
    let ws = dir.path().canonicalize().unwrap();
    let src = "[policy]\ninclude = [\"developer\"]\n[programs.git]\n\
               repositories = [\"{workspace}/sub\", \"{workspace}/clean\"]\n";
    let policy = Policy::from_toml(src, "p.toml").expect("loads");
    std::fs::create_dir(ws.join("clean")).unwrap();
    git(&ws.join("clean"), &["init", "-q"]);
    let ctx = Context::new(&ws);
    let d = policy.evaluate(&ctx, "git -C clean status");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reasons);
    let d = policy.evaluate(&ctx, "git -C sub status");
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(
        d.reasons
            .iter()
            .any(|r| r.code == "git-config-runs-program" && r.message.contains("core.fsmonitor")),
        "{:?}",
        d.reasons
    );
    // A hook of its own is a program too.
    let hook = ws.join("clean/.git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nid\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let d = policy.evaluate(&ctx, "git -C clean status");
    assert!(
        d.reasons
            .iter()
            .any(|r| r.code == "git-config-runs-program" && r.message.contains("pre-commit")),
        "{:?}",
        d.reasons
    );
    std::fs::remove_file(&hook).unwrap();
    // An include is followed, whatever its condition.
    std::fs::write(ws.join("inc.cfg"), "[diff \"x\"]\n\ttextconv = sh -c id\n").unwrap();
    let inc = ws.join("inc.cfg");
    git(
        &ws.join("clean"),
        &[
            "config",
            "includeIf.onbranch:nope.path",
            inc.to_str().unwrap(),
        ],
    );
    let d = policy.evaluate(&ctx, "git -C clean status");
    assert!(
        d.reasons
            .iter()
            .any(|r| r.code == "git-config-runs-program" && r.message.contains("diff.x.textconv")),
        "{:?}",
        d.reasons
    );
}

/// Each key of the list that a test can trigger without a network or a terminal runs its
/// program under real git (git-config(1) says so; this shows it).
#[test]
fn program_keys_run_programs_in_real_git() {
    if !has_git() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let m = format!("touch {}", marker.display());
    let cases: &[(&str, String, &[&str])] = &[
        ("core.fsmonitor", format!("{m}; false"), &["status"]),
        ("diff.external", m.clone(), &["diff"]),
        ("diff.x.textconv", format!("{m}; cat"), &["diff"]),
        ("diff.x.command", m.clone(), &["diff"]),
        ("filter.x.clean", format!("{m}; cat"), &["add", "a.txt"]),
        ("filter.x.process", m.clone(), &["add", "a.txt"]),
        (
            "filter.x.smudge",
            format!("{m}; cat"),
            &["checkout", "--", "a.txt"],
        ),
        ("alias.st", format!("!{m}"), &["st"]),
        ("core.editor", m.clone(), &["commit", "-a"]),
    ];
    let policy = developer();
    for (key, value, args) in cases {
        let _ = std::fs::remove_file(&marker);
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let r = ws.join("r");
        std::fs::create_dir(&r).unwrap();
        git(&r, &["init", "-q"]);
        std::fs::write(r.join("a.txt"), "a\n").unwrap();
        std::fs::write(r.join(".gitattributes"), "a.txt diff=x filter=x\n").unwrap();
        git(&r, &["add", "-A"]);
        git(&r, &["commit", "-qm", "one"]);
        std::fs::write(r.join("a.txt"), "a\nb\n").unwrap();
        git(&r, &["config", key, value]);
        git(&r, args);
        assert!(
            marker.exists(),
            "{key} did not run its program via git {args:?}"
        );
        // Named in the policy, the repository is still refused for this key.
        let src = "[policy]\ninclude = [\"developer\"]\n[programs.git]\nrepositories = [\"{workspace}/r\"]\n";
        let named = Policy::from_toml(src, "p.toml").unwrap();
        let d = named.evaluate(&Context::new(&ws), "git -C r status");
        assert!(
            d.reasons
                .iter()
                .any(|r| r.code == "git-config-runs-program"),
            "{key}: {:?}",
            d.reasons
        );
        // Not named, it is not the workspace's repository at all.
        let d = policy.evaluate(&Context::new(&ws), "git -C r status");
        assert!(d
            .reasons
            .iter()
            .any(|r| r.code == "git-repository-untrusted"));
    }
}

/// The reference executor pins the repository: a bare-shaped directory is not used.
#[test]
fn safe_bare_repository_explicit_stops_an_embedded_bare_repository() {
    if !has_git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    git(ws, &["init", "-q", "--bare", "evil"]);
    let out = git(&ws.join("evil"), &["rev-parse", "--git-dir"]);
    assert!(
        out.status.success(),
        "without the pin git uses the bare repository"
    );
    let out = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .current_dir(ws.join("evil"))
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "safe.bareRepository")
        .env("GIT_CONFIG_VALUE_0", "explicit")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("safe.bareRepository"));
}

/// The workspace's own config is the user's, but where it reaches into files the agent may
/// write (an included config in the work tree, a hooks directory in it), those are refused.
#[test]
fn the_own_repository_reaching_into_the_work_tree_is_refused() {
    if !has_git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    git(&ws, &["init", "-q"]);
    let policy = developer();
    let ctx = Context::new(&ws);
    let d = policy.evaluate(&ctx, "git diff");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reasons);
    // A shared config tracked in the work tree, included by the repository's config: the
    // agent may write it, and git obeys it (real git runs the included diff.external).
    let marker = ws.join("ran");
    std::fs::write(
        ws.join("shared.gitconfig"),
        format!("[diff]\n\texternal = touch {}\n", marker.display()),
    )
    .unwrap();
    git(&ws, &["config", "include.path", "../shared.gitconfig"]);
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-qm", "one"]);
    std::fs::write(ws.join("a.txt"), "b\n").unwrap();
    git(&ws, &["diff"]);
    assert!(marker.exists(), "git ran the included diff.external");
    let d = policy.evaluate(&ctx, "git diff");
    assert!(
        d.reasons.iter().any(|r| r.code == "git-config-runs-program"
            && r.message.contains("diff.external")
            && r.message.contains("shared.gitconfig")),
        "{:?}",
        d.reasons
    );
    git(&ws, &["config", "--unset", "include.path"]);
    // A hooks directory in the work tree: refused for what runs hooks, not for a status.
    git(&ws, &["config", "core.hooksPath", ".githooks"]);
    let d = policy.evaluate(&ctx, "git commit -m x");
    assert!(
        d.reasons
            .iter()
            .any(|r| r.code == "git-config-runs-program" && r.message.contains("hooksPath")),
        "{:?}",
        d.reasons
    );
    let d = policy.evaluate(&ctx, "git status");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reasons);
}
