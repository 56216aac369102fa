//! Loading policies: every problem is reported with file:line:col and a stable code.

use std::fs;

use crate::common;
use common::on_small_stack;

use shellgate::{Policy, PolicyError};

fn diags(src: &str) -> Vec<(String, String)> {
    match Policy::from_toml(src, "test.toml") {
        Ok(_) => Vec::new(),
        Err(e) => e
            .diagnostics()
            .iter()
            .map(|d| (d.code.to_string(), d.location.to_string()))
            .collect(),
    }
}

#[test]
fn every_unknown_key_is_reported_with_its_location() {
    let src = "[policy]\nname = \"x\"\nnmae = \"typo\"\n\n[programs.ls]\noperandz = \"path-read\"\n\n[shel]\nfunctions = \"deny\"\n";
    let d = diags(src);
    assert_eq!(
        d,
        vec![
            (
                "policy-unknown-key".to_string(),
                "test.toml:3:1".to_string()
            ),
            (
                "policy-unknown-key".to_string(),
                "test.toml:6:1".to_string()
            ),
            (
                "policy-unknown-key".to_string(),
                "test.toml:8:2".to_string()
            ),
        ]
    );
}

#[test]
fn semantic_problems_are_all_collected() {
    let src = r#"
[policy]
default = "maybe"

[paths]
read = ["relative/path", "{workspace}/../x"]

[env]
deny = ["PATH", "bad name"]
allow = ["PATH"]

[wrappers]
allow = ["strace", "bash"]

[programs.xargs]
operands = "text"

[programs.ls]
operands = ["path-read...", "nonsense", "text..."]
deny_options = ["-l", "x"]
allow_options = ["-l"]
args = [{ pattern = "(", verdict = "deny" }]
"#;
    let codes: Vec<String> = diags(src).into_iter().map(|(c, _)| c).collect();
    for want in [
        "policy-invalid-verdict",
        "policy-invalid-path",
        "policy-invalid-glob",
        "policy-contradiction",
        "policy-unknown-wrapper",
        "policy-wrapper-as-program",
        "policy-invalid-kind",
        "policy-invalid-option",
        "policy-invalid-regex",
    ] {
        assert!(
            codes.iter().any(|c| c == want),
            "missing {want} in {codes:?}"
        );
    }
    assert!(codes.len() >= 10, "{codes:?}");
}

#[test]
fn toml_syntax_and_type_errors_name_the_place() {
    let d = diags("[policy]\nname = \n");
    assert_eq!(d[0].0, "policy-syntax");
    assert!(d[0].1.starts_with("test.toml:2:"), "{d:?}");
    let d = diags("[limits]\nmax_bytes = \"big\"\n");
    assert_eq!(d[0].0, "policy-type");
    assert!(d[0].1.starts_with("test.toml:2:"), "{d:?}");
    let d = diags("[limits]\nmax_bytes = -5\n");
    assert_eq!(d[0].0, "policy-invalid-limit");
}

#[test]
fn failing_examples_are_reported_at_their_line() {
    let src = "[programs.ls]\n[examples]\nallow = [\"ls\", \"rm x\"]\ndeny = [\"ls -la\"]\n";
    let d = diags(src);
    assert_eq!(
        d,
        vec![
            (
                "policy-example-failed".to_string(),
                // Under `rm` (the refused program), one past the quote at 16.
                "test.toml:3:17".to_string()
            ),
            (
                "policy-example-failed".to_string(),
                "test.toml:4:9".to_string()
            ),
        ]
    );
}

#[test]
fn includes_apply_first_and_cycles_are_caught() {
    let dir = std::env::temp_dir().join(format!("shellgate-inc-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("base.toml"),
        "[programs.cat]\noperands = \"path-read\"\n",
    )
    .unwrap();
    fs::write(
        dir.join("top.toml"),
        "[policy]\ninclude = [\"base.toml\"]\n[paths]\nread = [\"{workspace}/**\"]\n[examples]\nallow = [\"cat a\"]\ndeny = [\"ls\"]\n",
    )
    .unwrap();
    let p = Policy::from_file(dir.join("top.toml")).expect("loads");
    assert!(p.programs.contains_key("cat"));
    assert_eq!(p.sources.len(), 2);

    fs::write(dir.join("a.toml"), "[policy]\ninclude = [\"b.toml\"]\n").unwrap();
    fs::write(dir.join("b.toml"), "[policy]\ninclude = [\"a.toml\"]\n").unwrap();
    let e = Policy::from_file(dir.join("a.toml")).unwrap_err();
    assert_eq!(e.diagnostics()[0].code, "policy-include-cycle");

    fs::write(
        dir.join("c.toml"),
        "[policy]\ninclude = [\"missing.toml\"]\n",
    )
    .unwrap();
    let e = Policy::from_file(dir.join("c.toml")).unwrap_err();
    assert_eq!(e.diagnostics()[0].code, "policy-include");
    assert!(e.to_string().contains("c.toml:2:"), "{e}");
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn unreadable_policy_is_an_io_error() {
    let e = Policy::from_file("/nonexistent/policy.toml").unwrap_err();
    assert!(matches!(e, PolicyError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/policy.toml"));
}

#[test]
fn shipped_policies_load_and_developer_extends_read_only() {
    let ro = Policy::shipped("read-only").unwrap();
    let dev = Policy::shipped("developer").unwrap();
    assert!(ro.examples.len() >= 20);
    assert!(dev.examples.len() >= 20);
    for name in ro.programs.keys() {
        assert!(dev.programs.contains_key(name), "developer lacks {name}");
    }
    assert!(matches!(
        Policy::shipped("nope"),
        Err(shellgate::PolicyError::UnknownShipped { ref name, .. }) if name == "nope"
    ));
}

#[test]
fn redact_table_is_validated_at_load() {
    let good = "[redact]\ndisable = [\"jwt\"]\n[[redact.rule]]\nid = \"acme-token\"\ndescription = \"Acme\"\nkeywords = [\"acme_\"]\nregex = '''(acme_[a-z0-9]{16})'''\n";
    let p = Policy::from_toml(good, "r.toml").expect("valid redact table");
    let cfg = p.redact.expect("kept");
    assert_eq!(cfg.rules.len(), 1);
    let bad = "[policy]\nname = \"x\"\n\n[redact]\n[[redact.rule]]\nid = \"broken\"\ndescription = \"b\"\nkeywords = [\"abc\"]\nregex = '''(unclosed'''\n";
    let d = diags(bad);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].0, "policy-redact");
    assert_eq!(d[0].1, "test.toml:4:2");
}

/// Loading recurses (TOML nesting, the examples' parses); on a thread with a 64 KiB stack the
/// shipped policies load and a hostile nesting is a located syntax error, not an overflow.
#[test]
fn policies_load_on_a_small_stack_and_deep_nesting_is_an_error() {
    let loaded = on_small_stack(|| {
        let dev = Policy::shipped("developer").unwrap();
        vec![(dev.name.clone(), dev.examples.len().to_string())]
    });
    assert_eq!(loaded[0].0, "developer");
    let errors = on_small_stack(|| {
        let n = 100_000;
        diags(&format!(
            "[policy]\nname = \"x\"\nx = {}{}\n",
            "[".repeat(n),
            "]".repeat(n)
        ))
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "policy-syntax");
    assert!(errors[0].1.starts_with("test.toml:3:"), "{errors:?}");
}

/// Issue 17: one file with ten different mistakes (unknown keys with string, list and table
/// values; values of the wrong type in five shapes; a missing key; a bad verdict) is
/// reported in one load, each at its own line and column, in words a person reads.
#[test]
fn ten_mistakes_in_one_file_are_all_reported_at_their_places() {
    let src = r#"[policy]
name = "ten"
nmae = "typo with a string value"
include = [1]

[paths]
raed = ["{workspace}/**"]
write = "{workspace}"

[limits]
max_bytes = "big"
max_depth = 2.5

[shell]
functions = true
background = "sometimes"

[programs.ls]
alow_options = ["-l"]
args = [{ verdict = "deny" }]

[programs.ls.extra]
x = 1
"#;
    let err = Policy::from_toml(src, "test.toml").unwrap_err();
    let got: Vec<(String, String, String)> = err
        .diagnostics()
        .iter()
        .map(|d| {
            (
                d.code.to_string(),
                d.location.to_string(),
                d.message.clone(),
            )
        })
        .collect();
    let want = [
        ("policy-unknown-key", "test.toml:3:1", "`policy.nmae`"),
        (
            "policy-type",
            "test.toml:4:12",
            "`policy.include[0]`: expected a string (in quotes), found the whole number 1",
        ),
        ("policy-unknown-key", "test.toml:7:1", "`paths.raed`"),
        (
            "policy-type",
            "test.toml:8:9",
            "`paths.write`: expected a list (`[...]`), found the string \"{workspace}\"",
        ),
        (
            "policy-type",
            "test.toml:11:13",
            "`limits.max_bytes`: expected a whole number, found the string \"big\"",
        ),
        (
            "policy-type",
            "test.toml:12:13",
            "`limits.max_depth`: expected a whole number, found the number 2.5",
        ),
        (
            "policy-type",
            "test.toml:15:13",
            "`shell.functions`: expected a string (in quotes), found true",
        ),
        ("policy-invalid-verdict", "test.toml:16:14", "sometimes"),
        (
            "policy-unknown-key",
            "test.toml:19:1",
            "`programs.ls.alow_options`",
        ),
        (
            "policy-type",
            "test.toml:20:9",
            "`programs.ls.args[0]`: this table needs the key `pattern`",
        ),
        (
            "policy-unknown-key",
            "test.toml:22:14",
            "`programs.ls.extra`",
        ),
    ];
    for (code, loc, text) in want {
        assert!(
            got.iter()
                .any(|(c, l, m)| c == code && l == loc && m.contains(text)),
            "missing {code} at {loc} ({text}) in {got:#?}"
        );
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (_, _, m) in &got {
        assert!(
            !m.contains("i64") && !m.contains("sequence") && !m.contains("struct Raw"),
            "{m}"
        );
    }
}

/// The same typo is found at its key whatever the type of its value (issue 17: list and table
/// values were put at 1:1).
#[test]
fn unknown_keys_with_list_and_table_values_are_at_their_key() {
    let d = diags("[paths]\nread = []\nraed = [\"{workspace}\"]\n[programs.ls]\nalow_options = [\"-l\"]\nopts = { a = 1 }\n[[programs.ls.args]]\npattern = \"x\"\nverdit = [\"deny\"]\n");
    let want: Vec<(String, String)> = ["3:1", "5:1", "6:1", "9:1"]
        .iter()
        .map(|p| ("policy-unknown-key".to_string(), format!("test.toml:{p}")))
        .collect();
    assert_eq!(d, want);
}

/// `[shell] paranoid = true` needs the second reader; a build without it refuses to load the
/// policy (fail closed), naming the setting, rather than silently reading once.
#[cfg(not(feature = "paranoid"))]
#[test]
fn paranoid_without_the_second_reader_is_a_load_error() {
    let src = "[policy]\ninclude = [\"developer\"]\n[shell]\nparanoid = true\n";
    let err = shellgate::Policy::from_toml(src, "p.toml").unwrap_err();
    let d = err
        .diagnostics()
        .iter()
        .find(|d| d.code == "policy-paranoid-unavailable")
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(d.location.line, 4, "{d:?}");
    // `paranoid = false` is the default reading and loads.
    let off = "[policy]\ninclude = [\"developer\"]\n[shell]\nparanoid = false\n";
    assert!(shellgate::Policy::from_toml(off, "p.toml").is_ok());
}

/// `policies/NAME.toml` with `sudo rm -rf /` inserted as the first `[examples] allow`: a
/// wrong example, and no longer the shipped text.
fn with_wrong_example(name: &str) -> String {
    let text = shellgate::policy::SHIPPED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("shipped");
    let examples = text.find("\n[examples]\n").expect("an [examples] table");
    let allow = examples + text[examples..].find("allow = [\n").expect("an allow list");
    let at = allow + "allow = [\n".len();
    format!("{}  \"sudo rm -rf /\",\n{}", &text[..at], &text[at..])
}

fn shipped_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("policies/{name}.toml"))
}

#[test]
fn shipped_policies_load_without_running_their_examples() {
    use shellgate::load::{self, ExampleCheck::*, Examples};
    let dir = tempfile::tempdir().unwrap();
    for &(name, text) in shellgate::policy::SHIPPED {
        let (_, by_name) = load::load_name_or_file(name, UnlessProven).unwrap();
        assert_eq!(by_name, Examples::Proven, "{name} by name");
        let (_, by_path) = load::load_file(&shipped_file(name), UnlessProven).unwrap();
        assert_eq!(by_path, Examples::Proven, "policies/{name}.toml");
        // The same bytes elsewhere (includes are shipped names, so the directory is no matter).
        let copy = dir.path().join(format!("{name}.toml"));
        fs::write(&copy, text).unwrap();
        let spec = copy.to_str().unwrap();
        let (_, copied) = load::load_name_or_file(spec, UnlessProven).unwrap();
        assert_eq!(copied, Examples::Proven, "a byte-identical copy of {name}");
        let (_, from_text) = load::load_toml(text, "elsewhere/p.toml", UnlessProven).unwrap();
        assert_eq!(from_text, Examples::Proven);
        // What `policy-check lint` and `test` use: the examples run whatever the text.
        for (got, what) in [
            (load::load_shipped(name, Always), "by name"),
            (load::load_file(&copy, Always), "copy"),
        ] {
            let (policy, examples) = got.unwrap();
            assert_eq!(examples, Examples::Run, "{name} {what} with Always");
            assert!(!policy.examples.is_empty());
        }
    }
}

#[test]
fn an_edited_copy_of_a_shipped_policy_runs_its_examples_and_a_wrong_one_fails() {
    use shellgate::load::{self, ExampleCheck::*, Examples};
    let dir = tempfile::tempdir().unwrap();
    for &(name, text) in shellgate::policy::SHIPPED {
        let wrong = with_wrong_example(name);
        let path = dir.path().join(format!("{name}-wrong.toml"));
        fs::write(&path, &wrong).unwrap();
        let line = wrong[..wrong.find("\"sudo rm -rf /\"").unwrap()]
            .matches('\n')
            .count()
            + 1;
        // Column 3 is the quote; the caret goes under `sudo`, the bytes the refusal is about.
        let want = format!("{}:{line}:4", path.display());
        for got in [
            Policy::from_file(&path),
            Policy::from_name_or_file(path.to_str().unwrap()),
            Policy::from_toml(&wrong, path.to_str().unwrap()),
        ] {
            let e = got.expect_err("a wrong example fails the load");
            let d = e.diagnostics();
            assert_eq!(d.len(), 1, "{e}");
            assert_eq!(d[0].code, "policy-example-failed");
            assert_eq!(d[0].location.to_string(), want);
            assert!(d[0].message.contains("sudo rm -rf /"), "{e}");
        }
        // The smallest edit (one more newline) is not the shipped text either: run.
        let (_, examples) =
            load::load_toml(&format!("{text}\n"), "edited.toml", UnlessProven).unwrap();
        assert_eq!(examples, Examples::Run);
        // lint reports the wrong example too.
        let lint = load::lint_name_or_file(path.to_str().unwrap())
            .unwrap()
            .diagnostics;
        assert!(
            lint.iter().any(|d| d.code == "policy-example-failed"),
            "{lint:?}"
        );
    }
}
