//! The bypass corpus and the ordinary-command corpus (`tests/corpus/`, described in its README).
//!
//! - Every payload of `bypass.tsv` must be refused (deny or ask; never allow) under both shipped
//!   policies, `read-only` and `developer`.
//! - Every command of `ordinary.tsv` must be allowed under `developer`.
//!
//! Failures are collected over the whole corpus and printed together (class, command, verdict
//! and every reason) before the test fails, so one run shows every regression.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use shellgate::{Context, Decision, Policy, Verdict};

/// Classes whose `# class: NAME — source: ...` header must be present in `bypass.tsv`.
const BYPASS_CLASSES: &[&str] = &[
    "chaining",
    "substitution",
    "redirect-write",
    "exec-flags",
    "wrappers",
    "fetch-and-run",
    "argument-form",
    "program-name-quoting",
    "ifs",
    "indirection",
    "session-state",
    "path-escape",
    "parser-confusion",
    "keyword-prefix",
    "nested-shell",
    "brace-expansion",
    "optional-value",
    "subcommand-confusion",
    "script-desync",
    "policy-gap",
    "field-splitting",
];

/// Classes whose header must be present in `ordinary.tsv`.
const ORDINARY_CLASSES: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "python",
    "edit",
    "search",
    "pipeline",
    "cd",
    "wrapper",
    "misc",
    "expansion",
];

const MIN_BYPASS: usize = 150;
const MIN_ORDINARY: usize = 150;

fn read_only() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::shipped("read-only").expect("valid shipped policy"))
}

fn developer() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::shipped("developer").expect("valid shipped policy"))
}

/// One corpus line.
#[derive(Debug)]
struct Entry {
    line: usize,
    class: String,
    command: String,
    note: String,
}

/// A parsed corpus file: its entries and the classes named by `# class:` headers.
struct Corpus {
    entries: Vec<Entry>,
    headers: Vec<String>,
}

fn corpus_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("corpus")
        .join(name)
}

/// The payload field is JSON-string escaped (`\n`, `\t`, `\\`, `\"`, `\u0000`) without the
/// surrounding quotes: wrap it in quotes and let serde_json decode it.
fn unescape(field: &str) -> Result<String, String> {
    serde_json::from_str::<String>(&format!("\"{field}\"")).map_err(|e| e.to_string())
}

fn load(name: &str) -> Corpus {
    let path = corpus_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut entries = Vec::new();
    let mut headers = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if let Some(comment) = raw.strip_prefix('#') {
            if let Some(rest) = comment.trim_start().strip_prefix("class:") {
                let name = rest.split('—').next().unwrap_or("").trim();
                headers.push(name.to_string());
            }
            continue;
        }
        let fields: Vec<&str> = raw.split('\t').collect();
        if fields.len() != 3 {
            problems.push(format!(
                "{name}:{line}: {} tab-separated fields, want 3: {raw:?}",
                fields.len()
            ));
            continue;
        }
        let (class, payload, note) = (fields[0], fields[1], fields[2]);
        if class.is_empty() || payload.is_empty() || note.trim().is_empty() {
            problems.push(format!("{name}:{line}: empty class, payload or note"));
            continue;
        }
        match unescape(payload) {
            Ok(command) => entries.push(Entry {
                line,
                class: class.to_string(),
                command,
                note: note.to_string(),
            }),
            Err(e) => problems.push(format!(
                "{name}:{line}: payload is not a JSON string body ({e}): {payload}"
            )),
        }
    }
    assert!(
        problems.is_empty(),
        "malformed corpus lines:\n{}",
        problems.join("\n")
    );
    for e in &entries {
        assert!(
            headers.contains(&e.class),
            "{name}:{}: class `{}` has no `# class: {} — source: ...` header",
            e.line,
            e.class,
            e.class
        );
    }
    Corpus { entries, headers }
}

fn describe(policy: &Policy, e: &Entry, d: &Decision) -> String {
    let mut s = format!(
        "[{}] {}:{} {:?}\n    note: {}\n    {} -> {}",
        policy.name, e.class, e.line, e.command, e.note, policy.name, d.verdict
    );
    if d.reasons.is_empty() {
        s.push_str(" (no reasons)");
    }
    for r in &d.reasons {
        let text = e
            .command
            .get(r.span.range())
            .unwrap_or("<span out of range>");
        s.push_str(&format!(
            "\n      {} ({}): {} [at {:?}]",
            r.code, r.verdict, r.message, text
        ));
    }
    s
}

fn counts(entries: &[Entry]) -> String {
    let mut by_class: BTreeMap<&str, usize> = BTreeMap::new();
    for e in entries {
        *by_class.entry(&e.class).or_default() += 1;
    }
    by_class
        .iter()
        .map(|(c, n)| format!("{c}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn corpus_files_are_well_formed_and_large_enough() {
    let bypass = load("bypass.tsv");
    let ordinary = load("ordinary.tsv");
    for class in BYPASS_CLASSES {
        assert!(
            bypass.headers.iter().any(|h| h == class),
            "bypass.tsv lacks the `# class: {class}` header"
        );
        assert!(
            bypass.entries.iter().filter(|e| e.class == *class).count() >= 2,
            "bypass class {class} has fewer than 2 payloads"
        );
    }
    for class in ORDINARY_CLASSES {
        assert!(
            ordinary.headers.iter().any(|h| h == class),
            "ordinary.tsv lacks the `# class: {class}` header"
        );
        assert!(
            ordinary.entries.iter().any(|e| e.class == *class),
            "ordinary class {class} is empty"
        );
    }
    assert!(
        bypass.entries.len() >= MIN_BYPASS,
        "only {} bypass payloads (want >= {MIN_BYPASS}): {}",
        bypass.entries.len(),
        counts(&bypass.entries)
    );
    assert!(
        ordinary.entries.len() >= MIN_ORDINARY,
        "only {} ordinary commands (want >= {MIN_ORDINARY}): {}",
        ordinary.entries.len(),
        counts(&ordinary.entries)
    );
    // The refused-ordinary file is optional, but when present it must parse.
    if corpus_path("ordinary-refused.tsv").exists() {
        load("ordinary-refused.tsv");
    }
    // No duplicate payloads: a duplicate is a copy-paste slip that hides a missing case.
    let mut seen = BTreeMap::new();
    for e in &bypass.entries {
        if let Some(prev) = seen.insert(e.command.clone(), e.line) {
            panic!(
                "bypass.tsv:{} repeats the payload of line {prev}: {:?}",
                e.line, e.command
            );
        }
    }
}

#[test]
fn no_bypass_payload_is_allowed_under_either_policy() {
    let corpus = load("bypass.tsv");
    let ctx = Context::example();
    let mut failures = Vec::new();
    for policy in [read_only(), developer()] {
        for e in &corpus.entries {
            let d = policy.evaluate(&ctx, &e.command);
            if d.verdict == Verdict::Allow {
                failures.push(describe(policy, e, &d));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} bypass payload decisions were ALLOW ({} payloads: {}):\n\n{}",
        failures.len(),
        corpus.entries.len(),
        counts(&corpus.entries),
        failures.join("\n\n")
    );
}

#[test]
fn every_ordinary_command_is_allowed_under_developer() {
    let corpus = load("ordinary.tsv");
    // As developer is meant to run (`[sandbox] mode = "enforce"`, as its examples are
    // checked): what runs workspace code (`cargo test`, `npm test`, `pytest`) needs the
    // sandbox, and without it is refused with `sandbox-required` and nothing else.
    let unsandboxed = Context::example();
    let mut ctx = Context::example();
    ctx.sandbox = shellgate::evaluate::SandboxState::Enforced;
    let policy = developer();
    let mut failures = Vec::new();
    let mut needs_sandbox = 0;
    for e in &corpus.entries {
        let d = policy.evaluate(&ctx, &e.command);
        if d.verdict != Verdict::Allow {
            failures.push(describe(policy, e, &d));
            continue;
        }
        let bare = policy.evaluate(&unsandboxed, &e.command);
        if bare.verdict != Verdict::Allow {
            needs_sandbox += 1;
            if bare.reasons.iter().any(|r| r.code != "sandbox-required") {
                failures.push(format!(
                    "without the sandbox, refused for more than needing it: {}",
                    describe(policy, e, &bare)
                ));
            }
        }
    }
    eprintln!(
        "{needs_sandbox} of {} ordinary commands run workspace code and need the sandbox",
        corpus.entries.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} ordinary commands are not allowed under developer:\n\n{}",
        failures.len(),
        corpus.entries.len(),
        failures.join("\n\n")
    );
}

/// The refused-ordinary file documents commands the shipped developer policy refuses today
/// although an agent needs them. This pins that they are still refused, so that a policy
/// change that starts allowing one is noticed and the line moves to `ordinary.tsv`.
#[test]
fn ordinary_refused_commands_are_still_refused() {
    if !corpus_path("ordinary-refused.tsv").exists() {
        return;
    }
    let corpus = load("ordinary-refused.tsv");
    let mut ctx = Context::example();
    ctx.sandbox = shellgate::evaluate::SandboxState::Enforced;
    let policy = developer();
    let now_allowed: Vec<String> = corpus
        .entries
        .iter()
        .filter(|e| policy.evaluate(&ctx, &e.command).verdict == Verdict::Allow)
        .map(|e| {
            format!(
                "ordinary-refused.tsv:{} {:?}: now allowed, move it to ordinary.tsv",
                e.line, e.command
            )
        })
        .collect();
    assert!(now_allowed.is_empty(), "{}", now_allowed.join("\n"));
}
