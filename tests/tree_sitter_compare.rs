//! shellgate's own parser against tree-sitter-bash, the reader it replaced (feature
//! `paranoid`; CI runs `cargo test --features paranoid --test tree_sitter_compare`).
//!
//! On every corpus (the bypass and ordinary corpora of `tests/corpus/`, the hand-written
//! corpus of `tests/common/corpus.rs`) both readers parse each command, and their
//! [`Script::shape`]s (everything but spans) must be equal wherever both read it. Every
//! command where they differ, or where only tree-sitter reads it, is listed below with what
//! real bash does (checked with `bash-oracle` and the `differential` tests): a disagreement
//! that is not listed fails the test, and so does a listed one that no longer happens.
//! Commands only shellgate reads are counted (tree-sitter-bash refuses many valid ones: that
//! is why it was replaced), and must each be read as bash reads them by the differential
//! tests of the main suite.
//!
//! It also checks the `[shell] paranoid` policy setting end to end.

use std::collections::BTreeSet;
use std::path::Path;

use shellgate::shell::{parse, parse_tree_sitter, Limits, Script};
use shellgate::{Context, Policy, Verdict};

/// The shipped `developer` policy with `[shell] paranoid` on.
fn paranoid_policy() -> Policy {
    let text = "[policy]\ninclude = [\"developer\"]\n[shell]\nparanoid = true\n";
    Policy::from_toml(text, "paranoid.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn paranoid_policies_refuse_what_the_readers_read_differently() {
    let policy = paranoid_policy();
    let ctx = Context::example();
    // Both readers agree: decided as without the setting.
    for cmd in [
        "ls -la",
        "cat data.txt | grep x | head -n 3",
        "git status && git diff",
    ] {
        let d = policy.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Allow, "{cmd}: {:?}", d.reasons);
    }
    // Read differently (see KNOWN_DISAGREEMENTS), or valid bash tree-sitter cannot read:
    // refused with the setting named, though the plain policy allows them.
    let plain = Policy::shipped("developer").unwrap();
    for cmd in [
        "! ls | wc -l",
        "for f in ; do ls; done",
        "X=''\\e\\c\\h\\o ls",
    ] {
        let d = policy.evaluate(&ctx, cmd);
        assert_eq!(d.verdict, Verdict::Deny, "{cmd}");
        let r = d
            .reasons
            .iter()
            .find(|r| r.code == "parse-disagreement")
            .unwrap_or_else(|| panic!("{cmd}: {:?}", d.reasons));
        assert!(
            r.rule
                .as_ref()
                .is_some_and(|rule| rule.name == "shell.paranoid"),
            "{r:?}"
        );
        if !cmd.starts_with('X') {
            assert_eq!(plain.evaluate(&ctx, cmd).verdict, Verdict::Allow, "{cmd}");
        }
    }
    // A payload is read twice too.
    let d = policy.evaluate(&ctx, "bash -c '! ls | wc -l'");
    assert_eq!(d.verdict, Verdict::Deny);
}

#[path = "common/corpus.rs"]
mod corpus;

/// Commands the two readers read differently; bash agrees with shellgate in each.
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[
    (
        "[[ x =~ ( $(rm -rf ~) ) ]]",
        "bash reads parentheses after `=~` as part of the regex, blanks inside them included: \
         the regex is `( <output> )`; tree-sitter keeps only the substitution (both find `rm`)",
    ),
    (
        "! ls | wc -l",
        "as `! a | b`: `!` negates the status of the whole pipeline",
    ),
    (
        "! a | b",
        "`!` negates the status of the whole pipeline (bash(1), Pipelines), so both stages carry \
         it, as `time` does; tree-sitter puts it on the first stage only",
    ),
];

/// Commands tree-sitter-bash reads and shellgate refuses, with why the refusal is right.
const KNOWN_OWN_REFUSALS: &[(&str, &str)] = &[];

fn tsv(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').nth(1))
        .map(|p| {
            serde_json::from_str::<String>(&format!("\"{p}\""))
                .unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .collect()
}

fn commands() -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for f in [
        "bypass.tsv",
        "ordinary.tsv",
        "parse-gaps.tsv",
        "ordinary-refused.tsv",
    ] {
        all.extend(tsv(f));
    }
    all.extend(corpus::CORPUS.iter().map(|(c, _)| c.to_string()));
    let mut seen = BTreeSet::new();
    all.retain(|c| seen.insert(c.clone()));
    all
}

fn shape(s: &Script) -> Vec<String> {
    s.shape().into_iter().map(|(_, l)| l).collect()
}

#[test]
fn both_readers_agree_on_every_corpus_command() {
    let limits = Limits::default();
    let (mut agree, mut only_own, mut neither) = (0, 0, 0);
    let mut failures = Vec::new();
    let mut seen_disagreements = BTreeSet::new();
    let mut seen_refusals = BTreeSet::new();
    for cmd in commands() {
        let own = parse(&cmd);
        let ts = parse_tree_sitter(&cmd, &limits);
        match (&own, &ts) {
            (Ok(a), Ok(b)) if shape(a) == shape(b) => agree += 1,
            (Ok(a), Ok(b)) => {
                if KNOWN_DISAGREEMENTS.iter().any(|(k, _)| *k == cmd) {
                    seen_disagreements.insert(cmd.clone());
                } else {
                    failures.push(format!(
                        "{cmd:?}: the readers disagree\n  shellgate:   {:?}\n  tree-sitter: {:?}",
                        shape(a),
                        shape(b)
                    ));
                }
            }
            (Ok(_), Err(_)) => only_own += 1,
            (Err(e), Ok(b)) => {
                if KNOWN_OWN_REFUSALS.iter().any(|(k, _)| *k == cmd) {
                    seen_refusals.insert(cmd.clone());
                } else {
                    failures.push(format!(
                        "{cmd:?}: only tree-sitter reads it; shellgate: {} {}\n  tree-sitter: {:?}",
                        e.kind.code(),
                        e.message,
                        shape(b)
                    ));
                }
            }
            (Err(_), Err(_)) => neither += 1,
        }
    }
    for (k, why) in KNOWN_DISAGREEMENTS {
        if !seen_disagreements.contains(*k) {
            failures.push(format!(
                "{k:?} is listed as a disagreement ({why}) but is not one"
            ));
        }
    }
    for (k, why) in KNOWN_OWN_REFUSALS {
        if !seen_refusals.contains(*k) {
            failures.push(format!(
                "{k:?} is listed as refused by shellgate only ({why}) but is not"
            ));
        }
    }
    println!("agree {agree}, only shellgate reads {only_own}, neither {neither}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(agree > 500, "only {agree} commands compared");
}

mod generated {
    //! Commands built from corpus commands both readers agree on, joined and nested the ways
    //! the grammar allows (lists, pipelines, groups, subshells, conditionals, loops,
    //! substitutions): where both readers read the result, they must read it alike.

    use super::*;
    use proptest::prelude::*;

    /// Corpus commands both readers read alike, one line each (no here-document, no
    /// trailing comment, which would swallow what is appended).
    fn pieces() -> Vec<String> {
        let limits = Limits::default();
        commands()
            .into_iter()
            .filter(|c| !c.contains('\n') && !c.contains("<<") && !c.contains('#'))
            // The tree-sitter reader puts a leading `time`/`!` on every command of the and-or
            // list it starts (`time a && b` times `b` too, to it); bash times and negates one
            // pipeline (`time sleep 0.3 && sleep 0.3` reports 0.3 s), as shellgate reads it.
            .filter(|c| !["time", "!", "coproc"].iter().any(|k| c.starts_with(k)))
            .filter(|c| match (parse(c), parse_tree_sitter(c, &limits)) {
                (Ok(a), Ok(b)) => shape(&a) == shape(&b),
                _ => false,
            })
            .collect()
    }

    /// The shape without the `piped` flags. tree-sitter-bash groups `a | b && c` as
    /// `a | (b && c)` and so marks `c` as reading a pipe; bash's `|` binds tighter than `&&`
    /// (bash(1), Lists), as shellgate reads it. The joins, which say the same, are still
    /// compared.
    fn unpiped(s: &Script) -> Vec<String> {
        shape(s)
            .into_iter()
            .map(|l| l.replace(" piped=true]", "]").replace(" piped=false]", "]"))
            .collect()
    }

    fn combine(a: &str, b: &str, how: u8) -> String {
        match how % 12 {
            0 => format!("{a}; {b}"),
            1 => format!("{a} && {b}"),
            2 => format!("{a} || {b}"),
            3 => format!("{a} | {b}"),
            4 => format!("{{ {a}; }}; {b}"),
            5 => format!("( {a} ) && {b}"),
            6 => format!("if {a}; then {b}; fi"),
            7 => format!("while {a}; do {b}; done"),
            8 => format!("echo \"$({a})\"; {b}"),
            9 => format!("{a}\n{b}"),
            10 => format!("for x in 1 2; do {a}; done; {b}"),
            _ => format!("case y in y) {a};; *) {b};; esac"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn compositions_of_agreed_commands_read_alike(
            i in any::<prop::sample::Index>(),
            j in any::<prop::sample::Index>(),
            k in any::<prop::sample::Index>(),
            how in any::<u8>(),
            how2 in any::<u8>(),
        ) {
            static PIECES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
            let pieces = PIECES.get_or_init(pieces);
            let (a, b, c) = (i.get(pieces), j.get(pieces), k.get(pieces));
            let cmd = combine(&combine(a, b, how), c, how2);
            let limits = Limits::default();
            if let (Ok(x), Ok(y)) = (parse(&cmd), parse_tree_sitter(&cmd, &limits)) {
                prop_assert_eq!(unpiped(&x), unpiped(&y), "{:?}", cmd);
            }
        }
    }
}
