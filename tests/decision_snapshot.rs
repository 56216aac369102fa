//! The decision snapshot: every decision the shipped policies make over the corpora and a
//! fixed set of generated commands, compared with `tests/data/decisions.snap.jsonl`.
//!
//! A refactor of the evaluator or of a policy's spelling (option tables, a program library)
//! must change no decision: this test proves it byte for byte (verdict, every reason's code,
//! verdict, rule name and span, and a hash of the messages). A change that
//! *means* to move decisions updates the snapshot, and the diff of the file is the review:
//!
//! ```text
//! SHELLGATE_SNAPSHOT=update cargo test --test integration decision_snapshot::
//! ```
//!
//! The committed slice is the corpora of `tests/corpus/` and the hand corpus, plus
//! [`GENERATED`] commands from each of two generators with a fixed seed. The long campaign
//! (BENCHMARKS.md) records many more on one commit and compares them on another, outside the
//! repository:
//!
//! ```text
//! SNAPSHOT_CASES=1000000 SNAPSHOT_RECORD=/tmp/before.jsonl cargo test --release --test integration decision_snapshot::campaign -- --nocapture
//! # then, on the changed tree:
//! SNAPSHOT_CASES=1000000 SNAPSHOT_COMPARE=/tmp/before.jsonl cargo test --release --test integration decision_snapshot::campaign -- --nocapture
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use shellgate::{Context, Decision, Policy, SandboxState};

/// Generated commands per generator in the committed slice.
const GENERATED: usize = 400;

/// The seed of the generated commands: fixed, so that the slice is the same on every run.
const SEED: [u8; 32] = *b"shellgate decision snapshot 2026";

fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/decisions.snap.jsonl")
}

/// The contexts a decision is taken in: each shipped policy in the example context, and
/// developer again inside the sandbox (where its workspace-code rules apply).
fn setups() -> Vec<(&'static str, Policy, Context)> {
    let mut sandboxed = Context::example();
    sandboxed.sandbox = SandboxState::Enforced;
    vec![
        (
            "read-only",
            Policy::shipped("read-only").unwrap(),
            Context::example(),
        ),
        (
            "developer",
            Policy::shipped("developer").unwrap(),
            Context::example(),
        ),
        (
            "developer+sandbox",
            Policy::shipped("developer").unwrap(),
            sandboxed,
        ),
    ]
}

/// Every corpus command, in file order, then the hand corpus. Each `tests/corpus/*.tsv` line
/// is `class<TAB>payload<TAB>note` with the payload JSON-string escaped (tests/corpus/README.md).
fn corpus_commands() -> Vec<String> {
    let mut out = Vec::new();
    for file in [
        "bypass.tsv",
        "ordinary.tsv",
        "ordinary-refused.tsv",
        "parse-gaps.tsv",
    ] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() || raw.starts_with('#') {
                continue;
            }
            let payload = raw
                .split('\t')
                .nth(1)
                .unwrap_or_else(|| panic!("{file}:{}", i + 1));
            let command: String = serde_json::from_str(&format!("\"{payload}\""))
                .unwrap_or_else(|e| panic!("{file}:{}: {e}", i + 1));
            out.push(command);
        }
    }
    out.extend(
        crate::common::corpus::CORPUS
            .iter()
            .map(|(c, _)| c.to_string()),
    );
    out
}

/// `n` commands from each generator, drawn from [`SEED`].
fn generated(n: usize) -> Vec<String> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &SEED),
    );
    let fidelity = crate::differential::fidelity_command();
    let mixed = crate::properties::command();
    let mut out = Vec::with_capacity(2 * n);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..n {
        for c in [
            fidelity.new_tree(&mut runner).unwrap().current(),
            mixed.new_tree(&mut runner).unwrap().current(),
        ] {
            // A repeat would only weigh one decision twice.
            if seen.insert(c.clone()) {
                out.push(c);
            }
        }
    }
    out
}

/// FNV-1a over the reasons' messages: a message change shows in the snapshot without the
/// file holding every message (some list a policy's programs).
fn message_hash(d: &Decision) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for r in &d.reasons {
        for b in r.message.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// One setup's decision in a few words: `verdict` then, per reason,
/// `code verdict rule start-end`, then the messages' hash. The rule is named without its
/// file:line:col, so that an edit elsewhere in a policy file moves no line of the snapshot.
fn decision_text(d: &Decision) -> String {
    let mut s = d.verdict.to_string();
    for r in &d.reasons {
        let rule = r.rule.as_ref().map_or("-", |x| x.name.as_str());
        let _ = write!(
            s,
            "; {} {} {} {}-{}",
            r.code, r.verdict, rule, r.span.start, r.span.end
        );
    }
    if !d.reasons.is_empty() {
        let _ = write!(s, "; #{}", message_hash(d));
    }
    s
}

/// The snapshot of `commands`: one JSON line per command, with its decision in every setup.
fn snapshot(commands: &[String]) -> Vec<String> {
    let setups = setups();
    commands
        .iter()
        .map(|c| {
            let mut o = serde_json::Map::new();
            o.insert("command".into(), c.clone().into());
            for (name, policy, ctx) in &setups {
                o.insert(
                    (*name).to_string(),
                    decision_text(&policy.evaluate(ctx, c)).into(),
                );
            }
            serde_json::Value::Object(o).to_string()
        })
        .collect()
}

/// The lines that differ between `want` and `got`, for a failure message (the first 40).
fn differences(want: &[String], got: &[String]) -> String {
    let mut s = String::new();
    let mut n = 0;
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w != g {
            n += 1;
            if n <= 40 {
                let _ = writeln!(s, "line {}:\n  was {w}\n  now {g}", i + 1);
            }
        }
    }
    if want.len() != got.len() {
        let _ = writeln!(s, "{} lines were, {} are now", want.len(), got.len());
    }
    let _ = writeln!(s, "{n} decision(s) changed");
    s
}

#[test]
fn every_decision_matches_the_committed_snapshot() {
    let mut commands = corpus_commands();
    commands.extend(generated(GENERATED));
    let got = snapshot(&commands);
    let path = snapshot_path();
    if std::env::var("SHELLGATE_SNAPSHOT").as_deref() == Ok("update") {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
        eprintln!("wrote {} decisions to {}", got.len(), path.display());
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; write it with SHELLGATE_SNAPSHOT=update",
            path.display()
        )
    });
    let want: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(
        want == got,
        "decisions differ from {}:\n{}If the change is meant, update the snapshot with \
         SHELLGATE_SNAPSHOT=update cargo test --test integration decision_snapshot:: and \
         review the diff.",
        path.display(),
        differences(&want, &got)
    );
}

#[test]
fn the_snapshot_draws_the_same_commands_every_run() {
    // The comparison means something only if the generated slice is the same on each run,
    // and large enough to reach past the corpora.
    assert_eq!(generated(50), generated(50));
    let g = generated(GENERATED);
    assert!(g.len() > GENERATED, "{} distinct commands", g.len());
}

/// The long campaign: record on one tree, compare on another (see the module docs). Without
/// `SNAPSHOT_RECORD` or `SNAPSHOT_COMPARE` it does nothing beyond a small self-check.
#[test]
fn campaign() {
    let cases: usize = std::env::var("SNAPSHOT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let record = std::env::var_os("SNAPSHOT_RECORD").map(PathBuf::from);
    let compare = std::env::var_os("SNAPSHOT_COMPARE").map(PathBuf::from);
    let got = snapshot(&generated(cases));
    if let Some(path) = record {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
        eprintln!("recorded {} decisions in {}", got.len(), path.display());
    }
    if let Some(path) = compare {
        let text = std::fs::read_to_string(&path).unwrap();
        let want: Vec<String> = text.lines().map(str::to_string).collect();
        assert!(want == got, "{}", differences(&want, &got));
        eprintln!("{} decisions identical to {}", got.len(), path.display());
    }
    assert!(got.len() >= cases);
}
