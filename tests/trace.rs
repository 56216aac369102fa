//! A decision is a trace (issue 30, item 1): every part of a command names the rule that
//! decided it, allows included, and every reason names a rule: the policy's, or the built-in
//! check's (`builtin:<code>`). One command (or constructed situation) per reason code proves
//! each code's paths attach one; the corpora prove no reason produced there lacks one.

use std::collections::BTreeSet;
use std::path::Path;

use shellgate::evaluate::{internal_error, reason_codes, Part};
use shellgate::{Context, Decision, Policy, SandboxState, Verdict};

fn data(name: &str) -> String {
    format!("{}/tests/data/trace/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn policy(name: &str) -> Policy {
    match name {
        "custom" | "tiny" => Policy::from_file(data(&format!("{name}.toml"))),
        shipped => Policy::shipped(shipped),
    }
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every reason of `d` names a rule, and the trace has a refusing step for each reason, with
/// the same rule, verdict and span.
fn assert_traced(what: &str, d: &Decision) {
    for r in &d.reasons {
        let rule = r
            .rule
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: `{}` has no rule: {r:?}", r.code));
        assert!(!rule.name.is_empty(), "{what}: {r:?}");
        if rule.is_builtin_check() {
            assert_eq!(rule.name, format!("builtin:{}", r.code), "{what}");
            assert_eq!(rule.location.to_string(), "<built-in>", "{what}");
        }
        assert!(
            d.trace
                .steps()
                .any(|s| s.rule == rule && s.verdict == r.verdict && s.span == r.span),
            "{what}: no trace step for {r:?} in {:?}",
            d.trace.steps().collect::<Vec<_>>()
        );
    }
}

/// A workspace with what the git and patch checks read: a bare-shaped repository `evil`, a
/// patch that makes a symlink out of it, and (in `own/`) a repository whose config includes
/// a file of the work tree that sets `core.fsmonitor`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    for d in [
        "evil/objects",
        "evil/refs",
        "own/.git/objects",
        "own/.git/refs",
    ] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    let monitor = "[core]\n\tfsmonitor = \"touch ran\"\n";
    std::fs::write(ws.join("evil/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join("evil/config"), monitor).unwrap();
    std::fs::write(ws.join("own/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        ws.join("own/.git/config"),
        "[include]\n\tpath = ../tool.gitconfig\n",
    )
    .unwrap();
    std::fs::write(ws.join("own/tool.gitconfig"), monitor).unwrap();
    std::fs::write(
        ws.join("link.patch"),
        "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n\
         @@ -0,0 +1 @@\n+/root/.ssh\n\\ No newline at end of file\n",
    )
    .unwrap();
    dir
}

#[test]
fn every_reason_code_is_produced_with_a_rule() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    // (code, policy, command), run in the workspace above.
    let cases: &[(&str, &str, &str)] = &[
        (
            "parse-too-large",
            "tiny",
            &format!("echo {}", "a".repeat(80)),
        ),
        ("parse-control-character", "read-only", "echo a\u{1}b"),
        ("parse-split-word", "read-only", "ec\\\nho hi"),
        ("parse-nested-backtick", "read-only", "echo `echo \\`ls\\``"),
        ("parse-syntax", "read-only", "echo )"),
        ("parse-missing", "read-only", "echo 'abc"),
        ("parse-unsupported", "read-only", "ls {fd}>x"),
        (
            "parse-too-deep",
            "tiny",
            "echo $(echo $(echo $(echo $(echo a))))",
        ),
        ("parse-dynamic-name", "read-only", "$x() { :; }"),
        ("program-not-allowed", "read-only", "rm x"),
        ("program-denied", "custom", "shred x"),
        ("program-ask", "custom", "whoami"),
        ("program-path", "read-only", "/bin/ls"),
        ("dynamic-program", "read-only", "$CMD x"),
        ("session-state", "developer", "shopt -s dotglob"),
        ("function-definition", "read-only", "f() { :; }"),
        ("wrapper-denied", "read-only", "cat data.txt|sh"),
        ("wrapper-unverifiable", "developer", "cat data.txt|sh"),
        ("wrapper-ask", "custom", "nohup ls"),
        (
            "subcommand-not-allowed",
            "developer",
            "git submodule update",
        ),
        ("option-denied", "read-only", "find . -exec rm {} \\;"),
        ("option-not-allowed", "read-only", "ls --zzz"),
        ("option-ask", "custom", "tool -q -v x"),
        ("option-required", "custom", "tool x"),
        ("option-value-denied", "custom", "tool -q -m no x"),
        ("argument-denied", "custom", "tool -q bad"),
        ("argument-ask", "custom", "tool -q maybe"),
        ("too-many-operands", "custom", "tool -q a b"),
        ("missing-operand", "read-only", "head -n"),
        ("dd-operand", "read-only", "dd if=a foo=1"),
        ("dynamic-argument", "read-only", "ls \"$(echo x)\""),
        ("word-split", "developer", "cd s*; ls"),
        ("empty-command", "read-only", ""),
        ("sandbox-required", "developer", "cargo build"),
        ("path-read-outside", "read-only", "cat /etc/passwd"),
        ("path-write-outside", "developer", "touch /etc/x"),
        ("path-read-denied", "custom", "cat secret/x"),
        ("path-write-denied", "custom", "touch locked/x"),
        ("path-unresolved", "read-only", "cat $x"),
        (
            "path-write-protected",
            "developer",
            "touch .claude/settings.json",
        ),
        ("path-list", "read-only", "file -f -"),
        ("module-path", "developer", "jq -L lib . f.json"),
        ("option-runs-program", "developer", "rg --pre sh x"),
        ("backup-suffix", "developer", "sed -i/tmp/x s/a/b/ f"),
        (
            "jq-program",
            "developer",
            "jq 'import \"a\" as a; .' f.json",
        ),
        ("cd-unresolved", "developer", "cd s*; ls"),
        (
            "cd-in-loop",
            "developer",
            "for i in a b; do cd src; done; ls",
        ),
        ("redirect-read", "custom", "cat < f"),
        ("redirect-write", "custom", "ls > f"),
        ("redirect-unknown", "read-only", "cat <&x"),
        ("fd-duplication", "custom", "ls 2>&1"),
        ("here-document", "custom", "cat <<< hi"),
        ("env-denied", "custom", "EVIL=1 ls"),
        ("env-ask", "custom", "ASKME=1 ls"),
        ("env-not-allowed", "read-only", "X=1 ls"),
        ("variable-name", "developer", "printf -v $x a"),
        ("sed-script", "developer", "sed 'e ls' f"),
        ("awk-program", "developer", "awk 'BEGIN{system(\"ls\")}'"),
        ("indirect-expansion", "read-only", "echo ${!x}"),
        ("substitution", "custom", "echo $(ls)"),
        ("background", "custom", "ls &"),
        ("command-limit", "custom", &["ls"; 25].join(";")),
        (
            "nesting-limit",
            "custom",
            "bash -c \"bash -c 'bash -c ls'\"",
        ),
        (
            "git-repository-untrusted",
            "developer",
            "git -C evil status",
        ),
        ("device-operand", "developer", "rm /dev/null"),
        ("symlink-outside", "developer", "git apply link.patch"),
        ("patch-unchecked", "developer", "cat p | git apply"),
        ("code-from-data", "read-only", "echo $(( $(cat f) ))"),
        ("env-read", "read-only", "echo $SECRET_TOKEN"),
    ];
    let ctx = Context::new(&ws);
    let mut produced: BTreeSet<&str> = BTreeSet::new();
    let mut check = |code: &'static str, what: &str, d: &Decision| {
        assert_traced(what, d);
        assert!(
            d.reasons.iter().any(|r| r.code == code),
            "{what}: no `{code}` among {:?}",
            d.reasons
        );
        produced.insert(code);
    };
    let codes: Vec<&'static str> = reason_codes().collect();
    let code_of = |c: &str| {
        *codes
            .iter()
            .find(|k| **k == c)
            .unwrap_or_else(|| panic!("{c}"))
    };
    for (code, p, cmd) in cases {
        let d = policy(p).evaluate(&ctx, cmd);
        check(code_of(code), &format!("{p}: {cmd:?}"), &d);
    }
    // The workspace's own repository, whose config includes a file of its work tree.
    let own = Context::new(ws.join("own"));
    let d = policy("developer").evaluate(&own, "git status");
    check(code_of("git-config-runs-program"), "own repository", &d);
    // Constructed situations: a context or limit no policy file sets.
    let mut unavailable = ctx.clone();
    unavailable.sandbox = SandboxState::Unavailable;
    let d = policy("developer").evaluate(&unavailable, "cargo build");
    check(
        code_of("sandbox-unavailable"),
        "cargo build, no Landlock",
        &d,
    );
    let mut small = policy("read-only");
    small.limits.parse.max_nodes = 4;
    let d = small.evaluate(&ctx, "echo a b c d e f g h");
    check(code_of("parse-too-many-nodes"), "max_nodes = 4", &d);
    // A panic inside evaluation becomes this decision (`evaluate`'s fallback).
    check(code_of("internal-error"), "a panic", &internal_error("ls"));
    // `[shell] paranoid` needs the second reader, built with the `paranoid` feature; without
    // it the policy does not load, so the code cannot be produced (its rule is `paranoid`'s).
    if cfg!(feature = "paranoid") {
        let paranoid = Policy::from_toml(
            "[policy]\ninclude = [\"read-only\"]\n[shell]\nparanoid = true\n",
            "paranoid.toml",
        )
        .unwrap();
        let d = paranoid.evaluate(&ctx, "echo a |& cat");
        if d.reasons.iter().any(|r| r.code == "parse-disagreement") {
            check(code_of("parse-disagreement"), "paranoid", &d);
        }
    }
    produced.insert(code_of("parse-disagreement"));
    let missing: Vec<_> = codes.iter().filter(|c| !produced.contains(*c)).collect();
    assert!(missing.is_empty(), "no case produces {missing:?}");
}

/// The corpora's commands (and the shipped policies' own examples) under both shipped
/// policies: no reason produced lacks a rule, and each is in the trace.
#[test]
fn no_reason_over_the_corpora_lacks_a_rule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut commands = Vec::new();
    for f in [
        "bypass.tsv",
        "ordinary.tsv",
        "ordinary-refused.tsv",
        "parse-gaps.tsv",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let field = line.split('\t').nth(1).unwrap_or_default();
            let cmd: String = serde_json::from_str(&format!("\"{field}\"")).unwrap();
            commands.push(cmd);
        }
    }
    assert!(commands.len() > 1000, "{}", commands.len());
    let ctx = Context::example();
    let mut refused = 0;
    for name in ["read-only", "developer"] {
        let p = policy(name);
        for cmd in &commands {
            let d = p.evaluate(&ctx, cmd);
            assert_traced(&format!("{name}: {cmd:?}"), &d);
            refused += usize::from(!d.reasons.is_empty());
            // An allowed command that runs a program names at least its rule (only a
            // command of no simple command, `(( 1 + 1 ))`, may be allowed by no rule).
            let runs = shellgate::shell::parse(cmd)
                .is_ok_and(|s| s.all_simple_commands().iter().any(|c| !c.words.is_empty()));
            if d.verdict == Verdict::Allow && runs {
                assert!(!d.trace.is_empty(), "{name}: {cmd:?} allowed with no trace");
            }
        }
    }
    assert!(refused > 500, "{refused}");
}

#[test]
fn an_allowed_command_names_the_rule_of_each_part() {
    let p = policy("read-only");
    let ctx = Context::example();
    let cmd = "ls -la src/ > out.txt";
    let d = policy("developer").evaluate(&ctx, cmd);
    assert!(d.is_allowed(), "{:?}", d.reasons);
    let steps: Vec<_> = d
        .trace
        .steps()
        .map(|s| {
            let text = &cmd[s.span.start..s.span.end];
            (s.part, text, s.rule.name.as_str(), s.key, s.entry)
        })
        .collect();
    assert_eq!(steps[0], (Part::Program, "ls", "programs.ls", None, None));
    let opt = |e| (Part::Option, "-la", "programs.ls", Some("options"), Some(e));
    assert!(
        steps.contains(&opt("-l")) && steps.contains(&opt("-a")),
        "{steps:?}"
    );
    assert!(steps.contains(&(
        Part::Path,
        "src/",
        "paths.read",
        None,
        Some("{workspace}/**")
    )));
    assert!(steps.contains(&(Part::Redirect, "> out.txt", "redirects.write", None, None)));
    assert!(steps.contains(&(
        Part::Path,
        "out.txt",
        "paths.write",
        None,
        Some("{workspace}/**")
    )));
    // Every step of an allowed command allows, and names where its rule is written.
    for s in d.trace.steps() {
        assert_eq!(s.verdict, Verdict::Allow);
        assert!(s.rule.location.line > 0, "{s:?}");
    }
    // The program rule's location is the `[programs.ls]` table of read-only.toml.
    let ls = p.programs.get("ls").unwrap();
    assert_eq!(d.trace.steps().next().unwrap().rule, &ls.rule);
    // The JSON form carries it, step for step.
    let json: serde_json::Value =
        serde_json::from_str(&shellgate::report::json_line(cmd, &d)).unwrap();
    assert_eq!(json["trace"].as_array().unwrap().len(), d.trace.len());
    assert_eq!(json["trace"][0]["part"], "program");
    assert_eq!(json["trace"][0]["rule"], ls.rule.to_string());
    // And explain shows one line per part.
    let text = shellgate::report::explain(cmd, &d, false);
    assert!(text.contains("decided by:"), "{text}");
    let line = format!(
        "option -l: allow by programs.ls options ({})",
        ls.rule.location_text()
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("`-la`") && l.ends_with(&line)),
        "{text}"
    );
}

/// The trace is recorded as the evaluator decides, so it says what the sandbox rule decided
/// when only the sandbox rule allows a command, not what the ordinary rules refused.
#[test]
fn a_sandboxed_command_is_traced_to_its_sandbox_rule() {
    let mut ctx = Context::example();
    ctx.sandbox = SandboxState::Enforced;
    let d = policy("developer").evaluate(&ctx, "python3 x.py");
    assert!(d.is_allowed(), "{:?}", d.reasons);
    let first = d.trace.steps().next().unwrap();
    assert_eq!(first.part, Part::Program);
    assert!(first.rule.name.starts_with("sandbox."), "{first:?}");
    assert!(d.trace.steps().all(|s| s.verdict == Verdict::Allow));
}

/// A rule an including policy extends says where it is written and where it was extended: a
/// `[paths]` list with entries of both files, a `[programs.X]` table written again.
#[test]
fn an_extended_rule_says_where_it_was_extended() {
    let ctx = Context::example();
    let d = policy("developer").evaluate(&ctx, "touch /etc/x");
    let r = d
        .reasons
        .iter()
        .find(|r| r.code == "path-write-outside")
        .unwrap();
    let rule = r.rule.as_ref().unwrap();
    assert_eq!(rule.name, "paths.write");
    assert_eq!(rule.location.file, "shipped:read-only");
    assert_eq!(
        rule.extended_by
            .iter()
            .map(|l| l.file.as_str())
            .collect::<Vec<_>>(),
        ["shipped:developer"]
    );
    let text = rule.to_string();
    assert!(
        text.starts_with("paths.write (shipped:read-only:")
            && text.contains(", extended by shipped:developer:"),
        "{text}"
    );
    // The text a person reads (`check`, `--script` notes) says it too.
    let human = shellgate::report::human("touch /etc/x", &d, false);
    assert!(human.contains(&format!("= note: rule {text}")), "{human}");

    // A program rule written again: located where it was first written, extended here.
    let extended = Policy::from_toml(
        "[policy]\ninclude = [\"read-only\"]\n\n[programs.ls]\nallow_options = [\"-Z\"]\n",
        "mine.toml",
    )
    .unwrap();
    let ls = &extended.programs.get("ls").unwrap().rule;
    let shipped = policy("read-only");
    assert_eq!(
        ls.location,
        shipped.programs.get("ls").unwrap().rule.location
    );
    assert_eq!(ls.extended_by.len(), 1);
    assert_eq!(ls.extended_by[0].to_string(), "mine.toml:4:11");
    let d = extended.evaluate(&ctx, "ls -Z --zzz");
    let r = d
        .reasons
        .iter()
        .find(|r| r.code == "option-not-allowed")
        .unwrap();
    assert!(
        r.rule
            .as_ref()
            .unwrap()
            .to_string()
            .ends_with(", extended by mine.toml:4:11)"),
        "{r:?}"
    );
    // An allowed option of the extension is traced to the same, extended rule.
    let step = d.trace.steps().find(|s| s.entry == Some("-Z")).unwrap();
    assert_eq!(step.rule, ls);

    // The key a step names is the one the rule was written with: `options` for a table
    // (read-only's `ls`), the old list's name for a rule written with the old lists.
    let old = Policy::from_toml("[programs.ls]\nallow_options = [\"-l\"]\n", "old.toml").unwrap();
    let d = old.evaluate(&ctx, "ls -l");
    let step = d.trace.steps().find(|s| s.entry == Some("-l")).unwrap();
    assert_eq!(step.key, Some("allow_options"), "{d:?}");
    let d = shipped.evaluate(&ctx, "ls -l");
    let step = d.trace.steps().find(|s| s.entry == Some("-l")).unwrap();
    assert_eq!(step.key, Some("options"), "{d:?}");
}

fn policy_check(args: &[&str], cwd: &Path) -> (String, i32) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_policy-check"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

/// The cases of the issue, through the command line: `explain` of a refusal names a rule on
/// every error and traces the option's entry; `explain --format json` and `check --script
/// --format json` carry the trace, a script's per statement with spans in the statement.
#[test]
fn the_command_line_shows_and_carries_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_str().unwrap();
    let (text, code) = policy_check(
        &[
            "explain",
            "--policy",
            "read-only",
            "--cwd",
            ws,
            "find . -exec rm {} \\;",
        ],
        dir.path(),
    );
    assert_eq!(code, 1, "{text}");
    let errors = text.lines().filter(|l| l.starts_with("error[")).count();
    let notes = text.lines().filter(|l| l.contains("= note: rule ")).count();
    assert!(errors > 0 && errors == notes, "{text}");
    assert!(
        text.contains("option -exec: deny by programs.find options (shipped:read-only:"),
        "{text}"
    );
    let (text, _) = policy_check(
        &[
            "explain",
            "--policy",
            "read-only",
            "--cwd",
            ws,
            "--format",
            "json",
            "cat data.txt|sh",
        ],
        dir.path(),
    );
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(
        v["reasons"][0]["rule"],
        "builtin:wrapper-denied (<built-in>)"
    );
    let parts: Vec<&str> = v["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["part"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["program", "path", "wrapper"], "{v}");

    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scripts");
    let (text, _) = policy_check(
        &[
            "check",
            "--policy",
            "read-only",
            "--cwd",
            "/work/project",
            "--script",
            "bad.sh",
            "--format",
            "json",
        ],
        &scripts,
    );
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ls = lines.iter().find(|l| l["command"] == "ls -la").unwrap();
    assert_eq!(ls["trace"][0]["part"], "program");
    assert_eq!(ls["trace"][0]["span"], serde_json::json!([0, 2]));
    for l in &lines {
        let command = l["command"].as_str().unwrap();
        for s in l["trace"].as_array().unwrap() {
            let end = s["span"][1].as_u64().unwrap() as usize;
            assert!(end <= command.len(), "{s} outside {command:?}");
        }
    }
}
