//! Issue 31: `policy-check migrate` changes no decision. Each shipped policy, migrated, loads
//! to the same compiled policy as before (every rule, option and kind; only the lines the
//! rules are written on differ), and the migration of a migrated file is the file itself.

use shellgate::policy::migrate::migrate;
use shellgate::Policy;

use crate::option_tables::compiled;

#[test]
fn every_shipped_policy_compiles_the_same_after_migration() {
    for (name, text) in shellgate::policy::SHIPPED {
        let m = migrate(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let origin = format!("{name}.toml");
        let before = Policy::from_toml(text, &origin).unwrap_or_else(|e| panic!("{name}: {e}"));
        let after = Policy::from_toml(&m.text, &origin)
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
