//! Issue 31: option tables (`options = [{ names = [...], value = "...", verdict = "..." }]`),
//! one entry per option, read as the old parallel lists they stand for.

use shellgate::{Context, Policy, Verdict};

/// A policy's compiled form as JSON, without where each rule is written (the two ways of
/// writing a rule put it on other lines) and without the file names it came from. Program
/// rules (kept as bytes in the policy's own serialisation) are expanded, subcommands too.
pub(crate) fn compiled(policy: &Policy) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("location");
                m.remove("extended_by");
                // How the options were written (a table or the old lists) is not what they say.
                m.remove("option_table");
                m.remove("sources");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    fn rule(r: &shellgate::policy::ProgramRule) -> serde_json::Value {
        let mut v = serde_json::to_value(r).expect("a rule serialises");
        let subs: serde_json::Map<String, serde_json::Value> = r
            .subcommands
            .iter()
            .map(|(n, s)| (n.clone(), rule(s)))
            .collect();
        v["subcommands"] = serde_json::Value::Object(subs);
        if let Some(dd) = &r.after_double_dash {
            v["after_double_dash"] = rule(dd);
        }
        v
    }
    let mut v = serde_json::to_value(policy).expect("a policy serialises");
    let programs: serde_json::Map<String, serde_json::Value> = policy
        .programs
        .iter()
        .map(|(n, r)| (n.clone(), rule(r)))
        .collect();
    v["programs"] = serde_json::Value::Object(programs);
    let sandboxed: serde_json::Map<String, serde_json::Value> = policy
        .sandbox
        .programs
        .iter()
        .map(|(n, r)| (n.clone(), rule(r)))
        .collect();
    v["sandbox"]["programs"] = serde_json::Value::Object(sandboxed);
    strip(&mut v);
    v
}

/// The compiled rule named `name` in a policy's JSON.
fn rule_named<'a>(
    v: &'a mut serde_json::Value,
    name: &str,
) -> Option<&'a mut serde_json::Map<String, serde_json::Value>> {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("name").and_then(|n| n.as_str()) == Some(name) && m.contains_key("verdict") {
                return Some(m);
            }
            m.values_mut().find_map(|x| rule_named(x, name))
        }
        serde_json::Value::Array(a) => a.iter_mut().find_map(|x| rule_named(x, name)),
        _ => None,
    }
}

fn load(src: &str) -> Policy {
    Policy::from_toml(src, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn codes(src: &str) -> Vec<(String, String)> {
    match Policy::from_toml(src, "test.toml") {
        Ok(_) => Vec::new(),
        Err(e) => e
            .diagnostics()
            .iter()
            .map(|d| (d.code.to_string(), d.location.to_string()))
            .collect(),
    }
}

const SHUF_TABLE: &str = r#"
[policy]
include = ["read-only"]

[paths]
write = ["{workspace}", "{workspace}/**"]

[programs.shuf]
operands = "path-read"
options_complete = true
options = [
  { names = ["-e", "--echo"] },
  { names = ["-n", "--head-count"], value = "number" },
  { names = ["-o", "--output"], value = "path-write" },
  { names = ["--random-source"], value = "path-read" },
  { names = ["-i", "--input-range"], value = "text" },
  { names = ["-r", "--repeat"] },
  { names = ["-z", "--zero-terminated"] },
  { names = ["--help"] },
  { names = ["--version"] },
  { names = ["-x"], verdict = "deny", message = "no such thing" },
  { names = ["-y"], verdict = "ask" },
]
"#;

const SHUF_LISTS: &str = r#"
[policy]
include = ["read-only"]

[paths]
write = ["{workspace}", "{workspace}/**"]

[programs.shuf]
operands = "path-read"
options_complete = true
allow_options = ["-e", "--echo", "-n", "--head-count", "-o", "--output", "--random-source",
  "-i", "--input-range", "-r", "--repeat", "-z", "--zero-terminated", "--help", "--version", "-y"]
options_with_value = ["-n", "--head-count", "-o", "--output", "--random-source", "-i", "--input-range"]
option_kinds = { "-o" = "path-write", "--output" = "path-write", "--random-source" = "path-read" }
deny_options = ["-x"]
ask_options = ["-y"]
"#;

#[test]
fn an_option_table_compiles_to_the_rule_the_old_lists_write() {
    let table = load(SHUF_TABLE);
    let lists = load(SHUF_LISTS);
    let mut a = compiled(&table);
    let b = compiled(&lists);
    // The one thing the old lists cannot say: a message for one option.
    let msgs = rule_named(&mut a, "shuf")
        .expect("the shuf rule")
        .insert("option_messages".into(), serde_json::json!({}));
    assert_eq!(msgs, Some(serde_json::json!({ "-x": "no such thing" })));
    assert_eq!(a, b);
}

#[test]
fn an_option_table_decides_what_its_entries_say() {
    let p = load(SHUF_TABLE);
    let ctx = Context::example();
    let v = |cmd: &str| p.evaluate(&ctx, cmd);
    for ok in [
        "shuf -n 3 data.txt",
        "shuf --head-count=3 data.txt",
        "shuf -e a b c",
        "shuf -i 1-10",
        "shuf -o out.txt data.txt",
        "shuf --random-source=data.txt data.txt",
        "shuf -rn5 data.txt",
    ] {
        assert_eq!(v(ok).verdict, Verdict::Allow, "{ok}: {:?}", v(ok));
    }
    for bad in [
        "shuf -o ../x data.txt",
        "shuf --output=/tmp/x data.txt",
        "shuf --random-source=/etc/shadow data.txt",
        "shuf --random-so=/etc/shadow data.txt",
        "shuf -ro../x data.txt",
        "shuf --unknown data.txt",
        "shuf -x data.txt",
    ] {
        assert_eq!(v(bad).verdict, Verdict::Deny, "{bad}: {:?}", v(bad));
    }
    let d = v("shuf -x data.txt");
    assert!(
        d.reasons
            .iter()
            .any(|r| r.message.contains("no such thing")),
        "the entry's message is shown: {d:?}"
    );
    assert_eq!(v("shuf -y data.txt").verdict, Verdict::Ask);
}

#[test]
fn every_entry_key_stands_for_its_old_list() {
    // Each special list, written as entries and as lists: the same compiled rule.
    let table = r#"
[programs.tool]
single_dash_long = true
operands = ["pattern", "path-read..."]
implicit_operand = "."
options = [
  { names = ["-e"], value = "pattern", pattern = true },
  { names = ["-i"], optional_value = true, value = "backup-suffix", writes_operands = true },
  { names = ["-m"], value = "text", values = "^pytest$", terminal = true, delegate = true, required = true },
  { names = ["-r"], implicit_operand = true },
  { names = ["-q"], unlisted = true, flag = true },
  { names = ["-I"], value = "path-read", glued = true },
  { names = ["--arg"], value = "text", two_values = true },
  { names = ["--bad"], verdict = "deny" },
  { names = ["-c"], writes_values = true },
]
"#;
    let lists = r#"
[programs.tool]
single_dash_long = true
operands = ["pattern", "path-read..."]
implicit_operand = "."
allow_options = ["-e", "-i", "-m", "-r", "-I", "--arg", "-c"]
options_with_value = ["-e", "-m", "-I", "--arg"]
options_with_optional_value = ["-i"]
options_with_two_values = ["--arg"]
option_kinds = { "-e" = "pattern", "-i" = "backup-suffix", "-I" = "path-read" }
option_values = { "-m" = "^pytest$" }
pattern_options = ["-e"]
write_options = ["-i"]
terminal_options = ["-m"]
delegate_options = ["-m"]
required_options = ["-m"]
implicit_operand_options = ["-r"]
flags = ["-q"]
glued_options = ["-I"]
deny_options = ["--bad"]
value_write_options = ["-c"]
"#;
    assert_eq!(compiled(&load(table)), compiled(&load(lists)));
    // The comparison sees one key less.
    for key in [
        ", pattern = true",
        ", glued = true",
        ", delegate = true",
        ", flag = true",
        ", writes_values = true",
    ] {
        let fewer = table.replace(key, "");
        assert_ne!(compiled(&load(&fewer)), compiled(&load(lists)), "{key}");
    }
}

#[test]
fn mixing_a_table_with_old_lists_is_an_error_at_the_old_key() {
    let src = "[programs.shuf]\noptions = [{ names = [\"-e\"] }]\nallow_options = [\"-n\"]\n";
    assert_eq!(
        codes(src),
        vec![(
            "policy-mixed-option-keys".to_string(),
            "test.toml:3:1".to_string()
        )]
    );
}

#[test]
fn entry_mistakes_are_reported_at_the_entry() {
    let src = r#"[programs.shuf]
options = [
  { names = ["-e", "--echo"] },
  { names = ["--echo"], value = "number" },
  { names = ["-n"], value = "numbr" },
  { names = ["x"] },
  { names = ["-q"], verdict = "deny", unlisted = true },
  { names = ["-z"], verdict = "maybe" },
  { names = ["-f"], flag = true, value = "text" },
  { names = ["-w"], vlaue = "text" },
]
"#;
    let mut got = codes(src);
    got.sort();
    let mut want = vec![
        ("policy-contradiction", "test.toml:4:14"),
        ("policy-invalid-kind", "test.toml:5:29"),
        ("policy-invalid-option", "test.toml:6:14"),
        ("policy-contradiction", "test.toml:7:14"),
        ("policy-invalid-verdict", "test.toml:8:31"),
        ("policy-contradiction", "test.toml:9:14"),
        ("policy-unknown-key", "test.toml:10:21"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect::<Vec<_>>();
    want.sort();
    assert_eq!(got, want);
    // No names at all: the schema and the loader both refuse it.
    assert_eq!(
        codes("[programs.shuf]\noptions = [{ names = [] }]\n"),
        vec![(
            "policy-invalid-option".to_string(),
            "test.toml:2:1".to_string()
        )]
    );
}

#[test]
fn old_lists_and_review_notes_are_linted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        r#"[programs.shuf]
options = [
  { names = ["-e"] },
  { names = ["--foo"], verdict = "deny", review = "draft: effect not settled by the oracle" },
]

[programs.cut]
operands = "path-read"
allow_options = ["-f"]
options_with_value = ["-f"]

[programs.git.subcommands.log]
allow_options = ["--oneline"]
"#,
    )
    .unwrap();
    let report = shellgate::load::lint_name_or_file(path.to_str().unwrap()).unwrap();
    let got: Vec<(String, usize)> = report
        .diagnostics
        .iter()
        .filter(|d| d.code == "lint-old-option-keys" || d.code == "lint-needs-review")
        .map(|d| (d.code.to_string(), d.location.line))
        .collect();
    assert_eq!(
        got,
        vec![
            ("lint-needs-review".to_string(), 4),
            ("lint-old-option-keys".to_string(), 9),
            ("lint-old-option-keys".to_string(), 13),
        ],
        "{report:?}"
    );
    let review = report
        .diagnostics
        .iter()
        .find(|d| d.code == "lint-needs-review")
        .unwrap();
    assert!(review.message.contains("`--foo`") && review.message.contains("not settled"));
}
