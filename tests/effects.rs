//! Effects named by meaning (issue 22, items 3 and 4): a denied effect is denied whatever
//! option, operand or program reaches it. Force pushes by every spelling; symlinks out of the
//! workspace made by a patch `git apply` reads (real git shows the symlink it makes); device
//! nodes that `[paths] write` lists for redirections are never files to remove or change.

use std::process::Command;

use shellgate::{Context, Policy, Verdict};

fn developer() -> Policy {
    Policy::shipped("developer").expect("valid shipped policy")
}

#[track_caller]
fn refused_with(policy: &Policy, ctx: &Context, cmd: &str, code: &str, verdict: Verdict) {
    let d = policy.evaluate(ctx, cmd);
    assert_eq!(d.verdict, verdict, "{cmd}: {:?}", d.reasons);
    assert!(
        d.reasons.iter().any(|r| r.code == code),
        "{cmd}: wanted {code}, got {:?}",
        d.reasons
    );
}

#[track_caller]
fn allowed(policy: &Policy, ctx: &Context, cmd: &str) {
    let d = policy.evaluate(ctx, cmd);
    assert_eq!(d.verdict, Verdict::Allow, "{cmd}: {:?}", d.reasons);
}

#[test]
fn every_spelling_of_a_force_push_is_denied_and_deletions_ask() {
    let p = developer();
    let ctx = Context::example();
    for cmd in [
        "git push --force origin main",
        "git push -f origin main",
        "git push origin main -f",
        "git push -uf origin main",
        "git push --force-with-lease origin main",
        "git push --force-with-lease=main origin main",
        "git push --force-with-lease=main:0123abc origin main",
        "git push --force-with-leas origin main",
        "git push --force-if-includes --force-with-lease origin main",
        "git push --mirror origin",
        "git push origin +main",
        "git push origin +HEAD:main",
        "git remote add --mirror=push backup origin",
    ] {
        let d = p.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Deny, "{cmd}: {:?}", d.reasons);
    }
    for cmd in [
        "git push --delete origin old",
        "git push -d origin old",
        "git push origin :old",
        "git push --prune origin",
        "git branch -D old",
        "git branch -f main HEAD~3",
        "git branch -M old new",
        "git tag -d v1",
        "git tag -f v1",
        "git stash drop",
        "git stash clear",
    ] {
        let d = p.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Ask, "{cmd}: {:?}", d.reasons);
    }
    for cmd in [
        "git push origin main",
        "git push -u origin feature/x",
        "git push --tags",
        "git push --no-force-with-lease origin main",
        "git branch -d merged",
        "git tag v1",
        "git stash pop",
    ] {
        allowed(&p, &ctx, cmd);
    }
}

#[test]
fn device_nodes_are_never_operands_that_remove_or_change_them() {
    let p = developer();
    let ctx = Context::example();
    for cmd in [
        "rm -f /dev/null",
        "rm /dev/tty",
        "chmod 000 /dev/null",
        "mv b.txt /dev/null",
        "mv /dev/null x",
        "cp a.txt /dev/tty",
        "cp --remove-destination a.txt /dev/null",
        "touch /dev/stdout",
        "touch /dev/fd/1",
        "mkdir /dev/x",
        "rm /proc/self/fd/1",
        "sort -o /dev/null a.txt",
        "sed -i s/a/b/ /dev/null",
    ] {
        let d = p.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Deny, "{cmd}: {:?}", d.reasons);
    }
    refused_with(&p, &ctx, "rm -f /dev/null", "device-operand", Verdict::Deny);
    refused_with(
        &p,
        &ctx,
        "chmod 000 /dev/null",
        "device-operand",
        Verdict::Deny,
    );
    // Redirections keep opening them, and tee writes into them as `>` does.
    for cmd in [
        "echo x > /dev/null",
        "ls 2>/dev/null",
        "cargo build 2>&1 >/dev/null | head",
        "echo hi | tee /dev/tty",
        "echo hi | tee /dev/null",
    ] {
        let d = p.evaluate(&ctx, cmd);
        assert!(
            !d.reasons.iter().any(|r| r.code == "device-operand"),
            "{cmd}: {:?}",
            d.reasons
        );
    }
    allowed(&p, &ctx, "echo x > /dev/null 2>/dev/null");
    allowed(&p, &ctx, "echo hi | tee /dev/tty");
    let ro = Policy::shipped("read-only").unwrap();
    allowed(&ro, &ctx, "cat a.txt > /dev/null 2>/dev/null");
}

const SYMLINK_PATCH: &str = "diff --git a/k b/k\nnew file mode 120000\nindex 0000000..1111111\n\
--- /dev/null\n+++ b/k\n@@ -0,0 +1 @@\n+TARGET\n\\ No newline at end of file\n";

/// Ground truth: git apply of such a patch makes the symlink; then the evaluator refuses it,
/// carried in a here-document, a here-string or a file.
#[test]
fn a_patch_that_makes_a_symlink_outside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap();
    let patch = SYMLINK_PATCH.replace("TARGET", target.to_str().unwrap());
    if Command::new("git").arg("--version").output().is_ok() {
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .output()
            .unwrap();
        std::fs::write(ws.join("evil.patch"), &patch).unwrap();
        let out = Command::new("git")
            .args(["apply", "evil.patch"])
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_link(ws.join("k")).unwrap(),
            target,
            "git made the symlink"
        );
        std::fs::remove_file(ws.join("k")).unwrap();
    } else {
        std::fs::write(ws.join("evil.patch"), &patch).unwrap();
    }
    let p = developer();
    let ctx = Context::new(&ws);
    let heredoc = format!("git apply <<'EOF'\n{patch}EOF");
    refused_with(&p, &ctx, &heredoc, "symlink-outside", Verdict::Deny);
    refused_with(
        &p,
        &ctx,
        "git apply evil.patch",
        "symlink-outside",
        Verdict::Deny,
    );
    refused_with(
        &p,
        &ctx,
        "git apply < evil.patch",
        "symlink-outside",
        Verdict::Deny,
    );
    refused_with(
        &p,
        &ctx,
        "git apply -R - < evil.patch",
        "symlink-outside",
        Verdict::Deny,
    );
    let relative = SYMLINK_PATCH.replace("TARGET", "../../../../../../etc");
    refused_with(
        &p,
        &ctx,
        &format!("git apply <<'EOF'\n{relative}EOF"),
        "symlink-outside",
        Verdict::Deny,
    );
    // A symlink inside the workspace, and an ordinary patch, apply.
    let inside = SYMLINK_PATCH.replace("TARGET", "src/main.rs");
    allowed(&p, &ctx, &format!("git apply <<'EOF'\n{inside}EOF"));
    let plain = "--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
    allowed(&p, &ctx, &format!("git apply <<'EOF'\n{plain}EOF"));
    // A patch that writes a protected file is a protected write.
    let cfg = "--- a/.cargo/config.toml\n+++ b/.cargo/config.toml\n@@ -0,0 +1 @@\n+[build]\n";
    refused_with(
        &p,
        &ctx,
        &format!("git apply <<'EOF'\n{cfg}EOF"),
        "path-write-protected",
        Verdict::Deny,
    );
    // From a pipe it cannot be read.
    refused_with(
        &p,
        &ctx,
        "cat evil.patch | git apply",
        "patch-unchecked",
        Verdict::Deny,
    );
    // A dry run writes nothing.
    allowed(&p, &ctx, "git apply --check evil.patch");
}

/// `cp -s` and `cp -l` make a link to their sources: the sources must be writable.
#[test]
fn links_made_by_cp_are_writes_of_their_sources() {
    let src = "[policy]\ninclude = [\"developer\"]\n[paths]\nread = [\"/usr/share/**\"]\n";
    let p = Policy::from_toml(src, "p.toml").unwrap();
    let ctx = Context::example();
    allowed(&p, &ctx, "cp /usr/share/doc/x.txt x.txt");
    for cmd in [
        "cp -s /usr/share/doc/x.txt x",
        "cp --symbolic-link /usr/share/doc/x.txt x",
        "cp -l /usr/share/doc/x.txt x",
        "cp -rs /usr/share/doc d",
    ] {
        refused_with(&p, &ctx, cmd, "path-write-outside", Verdict::Deny);
    }
    allowed(&p, &ctx, "cp -s a.txt b.txt");
}

/// "Runs workspace code" is one property (issue 22, item 5): every rule marked
/// `runs_workspace_code` needs the sandbox; metadata subcommands do not; the files that define
/// what runs are protected.
#[test]
fn workspace_code_runs_only_under_the_sandbox() {
    use shellgate::evaluate::SandboxState;
    let p = developer();
    let mut ctx = Context::example();
    let code = [
        "cargo build",
        "cargo check",
        "cargo test --workspace",
        "cargo bench",
        "cargo clippy --all-targets -- -D warnings",
        "cargo run -- --help",
        "cargo doc --no-deps",
        "npm install",
        "npm i lodash",
        "npm ci",
        "npm test",
        "npm t",
        "npm start",
        "npm run build",
        "npm run-script lint",
        "pytest -q",
        "python3 -m pytest -q tests",
        "python -m pytest",
        "timeout 60 cargo test",
        "bash -c 'npm test'",
    ];
    for (state, reason) in [
        (SandboxState::Off, "sandbox-required"),
        (SandboxState::Unavailable, "sandbox-unavailable"),
    ] {
        ctx.sandbox = state;
        for cmd in code {
            refused_with(&p, &ctx, cmd, reason, Verdict::Deny);
        }
    }
    ctx.sandbox = SandboxState::Enforced;
    for cmd in code {
        allowed(&p, &ctx, cmd);
    }
    ctx.sandbox = SandboxState::Off;
    for cmd in [
        "cargo metadata --format-version 1",
        "cargo tree -d",
        "cargo fmt --all -- --check",
        "cargo clean",
        "npm ls --depth=0",
        "npm outdated",
        "git log --oneline",
    ] {
        allowed(&p, &ctx, cmd);
    }
    for cmd in [
        "echo x > build.rs",
        "echo x > crates/a/build.rs",
        "sed -i s/a/b/ Cargo.toml",
        "echo x > .cargo/config.toml",
        "echo x > .cargo/anything",
        "echo '{}' > package.json",
        "echo x > Makefile",
        "echo x > tests/conftest.py",
        "echo x > pytest.ini",
        "echo x > pyproject.toml",
        "echo x > setup.py",
        "echo x > tox.ini",
        "echo x > rust-toolchain.toml",
    ] {
        refused_with(&p, &ctx, cmd, "path-write-protected", Verdict::Deny);
    }
}

/// Git C-quotes a name with unusual bytes and decodes octal escapes when it applies a patch
/// (`"b/\056cargo/config.toml"` is `.cargo/config.toml`): the names are read as git reads them.
#[test]
fn a_quoted_patch_name_is_read_as_git_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let patch = "diff --git \"a/\\056cargo/config.toml\" \"b/\\056cargo/config.toml\"\n\
                 new file mode 100644\n--- /dev/null\n+++ \"b/\\056cargo/config.toml\"\n\
                 @@ -0,0 +1 @@\n+[build]\n";
    std::fs::write(ws.join("p.patch"), patch).unwrap();
    if Command::new("git").arg("--version").output().is_ok() {
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .output()
            .unwrap();
        let out = Command::new("git")
            .args(["apply", "p.patch"])
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            ws.join(".cargo/config.toml").exists(),
            "git decoded the name"
        );
        std::fs::remove_dir_all(ws.join(".cargo")).unwrap();
    }
    let p = developer();
    let ctx = Context::new(&ws);
    refused_with(
        &p,
        &ctx,
        "git apply p.patch",
        "path-write-protected",
        Verdict::Deny,
    );
    refused_with(
        &p,
        &ctx,
        &format!("git apply <<'EOF'\n{patch}EOF"),
        "path-write-protected",
        Verdict::Deny,
    );
}
