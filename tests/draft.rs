//! `policy-check draft`: options read from real programs' help texts (fixtures captured from
//! GNU coreutils 9.1 and util-linux 2.38 in `tests/data/help/`), and the held-out authoring
//! check of issue 31 on programs no shipped policy has.

use std::collections::BTreeSet;

use shellgate::oracle::draft::{self, Typed};
use shellgate::oracle::help::{self, Arity, HelpOption};
use shellgate::oracle::{self, Oracle};
use shellgate::{Context, Policy, Verdict};

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/data/help/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Every option a help text names, found independently of the parser (by regexes): each
/// `--long` word on a line that starts (indented) with `-`, and each `-x` that starts such a
/// line. (A man page's prose also names deprecated aliases, `column`'s `--columns`: a draft
/// leaves those out, so they are refused as unknown.)
fn named_in(text: &str) -> BTreeSet<String> {
    let long = regex::Regex::new(r"(?:^|[\s,\[(])(--[a-z0-9][a-z0-9-]*[a-z0-9])").unwrap();
    let short = regex::Regex::new(r"(?m)^\s{1,10}(-[A-Za-z0-9])[,\s=\[<]").unwrap();
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| l.trim_start().starts_with('-')) {
        for c in long.captures_iter(line) {
            out.insert(c[1].to_string());
        }
    }
    for c in short.captures_iter(text) {
        out.insert(c[1].to_string());
    }
    out
}

fn names(list: &[HelpOption]) -> BTreeSet<String> {
    list.iter().flat_map(|o| o.names.iter().cloned()).collect()
}

fn arity(list: &[HelpOption], name: &str) -> Arity {
    list.iter()
        .find(|o| o.names.iter().any(|n| n == name))
        .unwrap_or_else(|| panic!("{name} not found in {list:?}"))
        .arity
}

#[test]
fn every_option_of_the_fixture_help_texts_is_read() {
    for f in [
        "shuf.txt",
        "column.txt",
        "comm.txt",
        "paste.txt",
        "nl.txt",
        "fold.txt",
        "tac.txt",
        "ls.txt",
        "grep.txt",
        "sort.txt",
        "shuf.man.txt",
        "column.man.txt",
    ] {
        let text = fixture(f);
        let got = names(&help::parse(&text));
        let want = named_in(&text);
        let missing: Vec<_> = want.difference(&got).collect();
        assert!(missing.is_empty(), "{f}: not read: {missing:?}");
        assert!(
            !got.iter().any(|n| n == "-NUM"),
            "{f}: a placeholder read as a name"
        );
    }
}

#[test]
fn values_and_aliases_are_read_as_written() {
    let shuf = help::parse(&fixture("shuf.txt"));
    assert_eq!(shuf.len(), 9, "{shuf:?}");
    assert_eq!(shuf[0].names, ["-e", "--echo"]);
    assert_eq!(arity(&shuf, "-e"), Arity::None);
    for n in ["-n", "--head-count", "-o", "--random-source", "-i"] {
        assert_eq!(arity(&shuf, n), Arity::Required, "{n}");
    }
    let ls = help::parse(&fixture("ls.txt"));
    assert_eq!(arity(&ls, "--color"), Arity::Optional);
    assert_eq!(arity(&ls, "--hyperlink"), Arity::Optional);
    assert_eq!(arity(&ls, "-I"), Arity::Required);
    assert_eq!(arity(&ls, "--ignore"), Arity::Required);
    assert_eq!(arity(&ls, "-w"), Arity::Required);
    assert_eq!(arity(&ls, "-l"), Arity::None);
    let grep = help::parse(&fixture("grep.txt"));
    assert_eq!(arity(&grep, "-A"), Arity::Required);
    assert_eq!(arity(&grep, "--color"), Arity::Optional);
    assert_eq!(arity(&grep, "-e"), Arity::Required);
    let sort = help::parse(&fixture("sort.txt"));
    assert_eq!(arity(&sort, "--compress-program"), Arity::Required);
    assert_eq!(arity(&sort, "-k"), Arity::Required);
    // util-linux's `<arg>` placeholders.
    let column = help::parse(&fixture("column.txt"));
    assert_eq!(arity(&column, "-o"), Arity::Required);
    assert_eq!(arity(&column, "--output-separator"), Arity::Required);
    assert_eq!(arity(&column, "-t"), Arity::None);
    // The help text and the man page agree.
    assert_eq!(names(&help::parse(&fixture("shuf.man.txt"))), names(&shuf));
    assert_eq!(
        names(&help::parse(&fixture("column.man.txt"))),
        names(&column)
    );
}

/// The held-out programs: none is in a shipped policy.
const HELD_OUT: &[&str] = &["shuf", "comm", "paste", "column"];

fn oracle_here() -> Option<Oracle> {
    match Oracle::new() {
        Ok(mut o) => {
            o.set_time_limit(std::time::Duration::from_secs(5));
            Some(o)
        }
        Err(e) => {
            assert!(
                !(oracle::installed("strace") && oracle::installed("bwrap")),
                "strace and bwrap are installed, yet the oracle does not start: {e}"
            );
            println!("skipped: {e}");
            None
        }
    }
}

#[test]
fn held_out_programs_are_drafted_loaded_refused_allowed_and_proven() {
    // Issue 31's held-out authoring check: for programs no shipped policy has, `draft` names
    // every option their --help lists, the drafts load under a policy that includes
    // read-only, refuse what writes or reads outside, allow everyday use, and the oracle finds
    // nothing unflagged in them.
    let Some(mut o) = oracle_here() else { return };
    for name in ["read-only", "developer"] {
        let p = Policy::shipped(name).expect("shipped");
        for h in HELD_OUT {
            assert!(
                p.programs.get(h).is_none(),
                "{h} is in {name}: not held out"
            );
        }
    }
    let mut policy_text = String::from("[policy]\ninclude = [\"read-only\"]\n\n");
    let mut drafted = Vec::new();
    for program in HELD_OUT {
        if !oracle::installed(program) {
            println!("{program}: not installed");
            continue;
        }
        let d = draft::draft(&o, program).unwrap_or_else(|e| panic!("{program}: {e}"));
        let help_text = std::process::Command::new(program)
            .arg("--help")
            .output()
            .expect("runs");
        let want = named_in(&String::from_utf8_lossy(&help_text.stdout));
        let got: BTreeSet<String> = d
            .entries
            .iter()
            .flat_map(|e| e.option.names.iter().cloned())
            .collect();
        let missing: Vec<_> = want.difference(&got).collect();
        assert!(missing.is_empty(), "{program}: not drafted: {missing:?}");
        // Never an allow the oracle did not settle: a review note is a denial.
        let toml = d.to_toml();
        for line in toml.lines().filter(|l| l.contains("review =")) {
            assert!(line.contains("verdict = \"deny\""), "{line}");
        }
        assert!(toml.contains("REVIEW BEFORE USE"), "{toml}");
        assert!(
            d.version.as_deref().is_some_and(|v| v.contains(program)),
            "{:?}",
            d.version
        );
        if *program == "shuf" {
            assert_eq!(typed(&d, "--output"), allow("path-write"));
            assert_eq!(typed(&d, "--random-source"), allow("path-read"));
            assert_eq!(typed(&d, "-n"), allow("text"));
            assert_eq!(typed(&d, "-e"), Typed::Allow { value: None });
        }
        policy_text.push_str(&toml);
        policy_text.push('\n');
        drafted.push(program.to_string());
    }
    let policy = Policy::from_toml(&policy_text, "drafts.toml")
        .unwrap_or_else(|e| panic!("the drafts do not load: {e}\n{policy_text}"));
    let ctx = Context::example();
    let installed = |p: &str| drafted.iter().any(|d| d == p);
    for (program, cmd, want) in [
        ("shuf", "shuf -o ../x a.txt", Verdict::Deny),
        (
            "shuf",
            "shuf --random-source=/etc/shadow a.txt",
            Verdict::Deny,
        ),
        ("shuf", "shuf --output=/tmp/x a.txt", Verdict::Deny),
        ("shuf", "shuf -n 3 file", Verdict::Allow),
        ("shuf", "shuf -e a b c", Verdict::Allow),
        (
            "shuf",
            "shuf --random-source=data.bin -n 1 a.txt",
            Verdict::Allow,
        ),
        ("comm", "comm -12 a b", Verdict::Allow),
        ("comm", "comm -3 a /etc/shadow", Verdict::Deny),
        ("paste", "paste -d, a b", Verdict::Allow),
        ("paste", "paste -s a.txt", Verdict::Allow),
        ("column", "column -t f", Verdict::Allow),
        ("column", "column -t -s, data.csv", Verdict::Allow),
        ("column", "column --bogus f", Verdict::Deny),
    ] {
        if !installed(program) {
            continue;
        }
        let d = policy.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, want, "{cmd}: {:?}", d.reasons);
    }
    o.full = true;
    let r = o.check(&policy, &drafted);
    println!("{}", r.summary());
    let found: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("{}: {}", f.command, f.effect))
        .collect();
    assert!(found.is_empty(), "the oracle found: {found:#?}");
    for p in &drafted {
        assert!(
            r.per_program.get(p).is_some_and(|c| c.runs > 0),
            "{}",
            r.summary()
        );
    }
}

fn typed(d: &draft::Draft, name: &str) -> Typed {
    d.entries
        .iter()
        .find(|e| e.option.names.iter().any(|x| x == name))
        .map(|e| e.typed.clone())
        .unwrap_or_else(|| panic!("{name} not drafted"))
}

fn allow(kind: &'static str) -> Typed {
    Typed::Allow { value: Some(kind) }
}

#[test]
fn an_option_that_runs_writes_or_reads_outside_is_denied() {
    // `sort` is in the shipped policies, but its options are a good spread: a program run
    // (--compress-program), a written path (-o), a read list (--files0-from).
    let Some(o) = oracle_here() else { return };
    if !oracle::installed("sort") {
        return;
    }
    let d = draft::draft(&o, "sort").expect("sort");
    let typed = |n: &str| typed(&d, n);
    assert!(
        matches!(
            typed("--compress-program"),
            Typed::Deny { .. } | Typed::Review { .. }
        ),
        "{:?}",
        typed("--compress-program")
    );
    assert_eq!(typed("-o"), allow("path-write"));
    // The help calls the value FILE; it is read only beside -R: found beside that flag.
    assert_eq!(typed("--random-source"), allow("path-read"));
    assert!(
        !matches!(
            typed("--files0-from"),
            Typed::Allow {
                value: None | Some("text")
            }
        ),
        "{:?}",
        typed("--files0-from")
    );
}

fn policy_check(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_policy-check"));
    cmd.args(args).env("SHELLGATE_CACHE", "off");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("runs policy-check")
}

#[test]
fn the_commands_fail_closed_without_the_jail() {
    // No bubblewrap: exit 2 and why, never a run on the host.
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("p.toml");
    std::fs::write(&p, "[programs.shuf]\nallow_options = [\"-n\"]\n").expect("write");
    let missing = dir.path().join("no-bwrap");
    let missing = missing.to_str().expect("utf-8");
    for args in [
        vec!["draft", "comm"],
        vec!["oracle", "--policy", p.to_str().expect("utf-8"), "shuf"],
    ] {
        let out = policy_check(&args, &[("SHELLGATE_BWRAP", missing)]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("sandbox-unavailable"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn draft_writes_atomically_and_oracle_reports_with_the_rule_location() {
    if oracle_here().is_none() || !oracle::installed("comm") || !oracle::installed("shuf") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out_file = dir.path().join("comm.toml");
    let out_path = out_file.to_str().expect("utf-8");
    let out = policy_check(&["draft", "comm", "--output", out_path], &[]);
    assert_eq!(out.status.code(), Some(0), "{:?}", out);
    let text = std::fs::read_to_string(&out_file).expect("written");
    assert!(
        text.starts_with("# Drafted by `policy-check draft comm`"),
        "{text}"
    );
    assert!(text.contains("[programs.comm]"), "{text}");
    // Never over an existing file without --force; no temporary file left behind.
    let again = policy_check(&["draft", "comm", "--output", out_path], &[]);
    assert_eq!(again.status.code(), Some(2));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let unknown = policy_check(&["draft", "no-such-program-here"], &[]);
    assert_eq!(unknown.status.code(), Some(2));

    // A hand-written rule that calls --random-source's value text: exit 1, the finding at the
    // rule's file:line:col, as text and JSON. The drafted comm is clean: exit 0.
    let loose = dir.path().join("loose.toml");
    std::fs::write(
        &loose,
        "[paths]\nread = [\"{workspace}/**\"]\n\n[programs.shuf]\n\
         allow_options = [\"--random-source\"]\noptions_with_value = [\"--random-source\"]\n",
    )
    .expect("write");
    let loose = loose.to_str().expect("utf-8");
    let out = policy_check(&["oracle", "--policy", loose, "shuf"], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("{loose}:4:")) && stdout.contains("--random-source"),
        "{stdout}"
    );
    let out = policy_check(
        &["oracle", "--policy", loose, "--format", "json", "shuf"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["findings"][0]["option"], "--random-source", "{v}");
    assert_eq!(v["findings"][0]["effect"]["kind"], "touches-decoy", "{v}");
    let with_comm = dir.path().join("with-comm.toml");
    std::fs::write(
        &with_comm,
        format!("[policy]\ninclude = [\"read-only\"]\n\n{text}"),
    )
    .expect("write");
    let out = policy_check(
        &[
            "oracle",
            "--policy",
            with_comm.to_str().expect("utf-8"),
            "comm",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
