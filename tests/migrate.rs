//! Issue 31: `policy-check migrate` changes no decision. The shipped policies as they were
//! before their migration (`tests/data/migrate/*.old.toml`), migrated, load to the same
//! compiled policy (every rule, option and kind; only the lines the rules are written on
//! differ); the shipped policies as they are migrate to themselves, or (a rule in the old
//! form merged since) to the same compiled policy; a migrated file migrates to itself.

use shellgate::policy::migrate::migrate;
use shellgate::Policy;

use crate::option_tables::compiled;

/// The shipped policies in the old form (as they were before `policy-check migrate`), and
/// the shipped policies as they are.
fn corpus() -> Vec<(String, String)> {
    let mut out = vec![
        (
            "read-only".to_string(),
            include_str!("data/migrate/read-only.old.toml").to_string(),
        ),
        (
            "developer".to_string(),
            include_str!("data/migrate/developer.old.toml").to_string(),
        ),
    ];
    for (name, text) in shellgate::policy::SHIPPED {
        out.push((format!("{name} (shipped)"), text.to_string()));
    }
    out
}

#[test]
fn every_shipped_policy_compiles_the_same_after_migration() {
    for (name, text) in &corpus() {
        let text = text.as_str();
        let m = migrate(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let origin = "policy.toml";
        let before = Policy::from_toml(text, origin).unwrap_or_else(|e| panic!("{name}: {e}"));
        let after = Policy::from_toml(&m.text, origin)
            .unwrap_or_else(|e| panic!("{name} migrated: {e}\n{}", m.text));
        assert_eq!(
            compiled(&before),
            compiled(&after),
            "{name}: the migration changed the compiled policy"
        );
        // Run again, it finds nothing to do.
        let again = migrate(&m.text).unwrap();
        assert_eq!(
            again.text, m.text,
            "{name}: a second migration changed the file"
        );
        assert!(again.migrated.is_empty(), "{name}: {:?}", again.migrated);
    }
}

/// The option spellings a rule's old lists name, for the rule `migrate` calls `name`.
fn spellings(doc: &toml::Table, name: &str) -> Vec<String> {
    let mut t: Option<&toml::Table> = None;
    let (root, rest) = match name.strip_prefix("sandbox.programs.") {
        Some(r) => (doc.get("sandbox").and_then(|v| v.get("programs")), r),
        None => (doc.get("programs"), name),
    };
    let mut words = rest.split(' ');
    if let Some(first) = words.next() {
        t = root.and_then(|v| v.get(first)).and_then(|v| v.as_table());
    }
    for w in words {
        let key = if w == "--" { "after_double_dash" } else { w };
        t = t
            .and_then(|x| {
                if key == "after_double_dash" {
                    x.get(key)
                } else {
                    x.get("subcommands").and_then(|s| s.get(key))
                }
            })
            .and_then(|v| v.as_table());
    }
    let mut out: Vec<String> = Vec::new();
    for (k, v) in t.into_iter().flatten() {
        if !k.contains("option") && k != "flags" {
            continue;
        }
        match v {
            toml::Value::Array(a) => {
                out.extend(a.iter().filter_map(|x| x.as_str().map(String::from)))
            }
            toml::Value::Table(m) => out.extend(m.keys().cloned()),
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn joining_spellings_never_changes_the_compiled_policy_whatever_the_aliases_claim() {
    // The worst an alias source can do: claim every option of a rule is one. Only those the
    // lists treat the same may share an entry, so the policy still compiles the same.
    for (name, text) in &corpus()[..2] {
        let text = text.as_str();
        let doc: toml::Table = toml::from_str(text).unwrap();
        let m = shellgate::policy::migrate::migrate_with(text, &|rule| vec![spellings(&doc, rule)])
            .unwrap();
        let origin = format!("{name}.toml");
        let before = Policy::from_toml(text, &origin).unwrap();
        let after =
            Policy::from_toml(&m.text, &origin).unwrap_or_else(|e| panic!("{name} migrated: {e}"));
        assert_eq!(compiled(&before), compiled(&after), "{name}");
        assert!(
            m.text.len() < migrate(text).unwrap().text.len(),
            "{name}: some spellings were joined"
        );
    }
}

#[test]
fn the_migrate_command_writes_checks_and_keeps_what_it_cannot_say() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    let old = "[programs.cut]\noperands = \"path-read\"\nallow_options = [\"-f\"]\noptions_with_value = [\"-f\"]\n\n[programs.tr]\ndeny_options = [\"-x\"]\n";
    std::fs::write(&file, old).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_policy-check"))
            .arg("migrate")
            .args(args)
            .output()
            .unwrap()
    };
    let f = file.to_str().unwrap();
    let check = run(&["--check", f]);
    assert_eq!(check.status.code(), Some(1), "{check:?}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        old,
        "--check writes nothing"
    );
    let out = dir.path().join("out.toml");
    let to = run(&[f, "--output", out.to_str().unwrap()]);
    assert_eq!(to.status.code(), Some(0), "{to:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), old);
    let new = std::fs::read_to_string(&out).unwrap();
    assert!(
        new.contains("options = [\n  { names = [\"-f\"], value = \"text\" },\n]"),
        "{new}"
    );
    // `tr` has no allowlist, so it stays as written, and the command says why.
    assert!(
        new.contains("[programs.tr]\ndeny_options = [\"-x\"]\n"),
        "{new}"
    );
    let stderr = String::from_utf8_lossy(&to.stderr);
    assert!(stderr.contains("`tr` left in the old form"), "{stderr}");
    let inplace = run(&[f]);
    assert_eq!(inplace.status.code(), Some(0), "{inplace:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), new);
    // Migrated, --check finds only the rule it cannot migrate, which changes nothing.
    assert_eq!(run(&["--check", f]).status.code(), Some(0));
    // Both load to the same policy.
    let a = Policy::from_toml(old, "p.toml").unwrap();
    let b = Policy::from_toml(&new, "p.toml").unwrap();
    assert_eq!(compiled(&a), compiled(&b));
}
