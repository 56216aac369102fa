//! The validation path: parse + evaluate of typical agent commands, and policy compile, each
//! beside an in-run baseline so the report reads as a ratio:
//! - validation: the whitespace tripwire of the bash-tool docs (split on whitespace, check the
//!   first word against a set, reject operator words), ported to Rust;
//! - compile: parsing the same TOML into a plain `toml::Table` (no validation).
//!
//! Run: `cargo bench --bench validate` (add `-- --quick` for a short run).

use std::collections::HashSet;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shellgate::{shell, Context, Policy};

const ALLOWED: &[&str] = &[
    "ls", "cat", "echo", "pwd", "grep", "find", "wc", "head", "tail", "sort", "uniq", "cut", "tr",
    "diff", "stat", "du", "file", "basename", "dirname", "realpath", "printf", "true", "false",
    "git",
];

/// The naive guard: first word in the allowlist and no operator word anywhere.
fn tripwire(cmd: &str, allowed: &HashSet<&str>) -> bool {
    let mut words = cmd.split_whitespace();
    match words.next() {
        Some(w) if allowed.contains(w) => {}
        _ => return false,
    }
    !words.any(|w| matches!(w, "|" | "||" | "&&" | ";" | "&" | ">" | ">>" | "<" | "<<"))
}

fn cases() -> Vec<(&'static str, String)> {
    let message: String = (0..64)
        .map(|i| format!("line {i:02}: explain the change in some detail here\n"))
        .collect();
    let commit = format!("git add -A && git commit -F - <<'EOF'\nfix: a thing\n\n{message}EOF");
    let script: String = (0..100)
        .map(|i| match i % 5 {
            0 => format!("ls -la src/dir{i}\n"),
            1 => format!("grep -rn 'pattern {i}' src | head -n {i}\n"),
            2 => format!("cat file{i}.txt | sort | uniq -c\n"),
            3 => format!("find . -name '*.rs{i}' -type f\n"),
            _ => format!("echo \"step {i}: $(pwd)\"\n"),
        })
        .collect();
    vec![
        ("short", "ls -la".to_string()),
        (
            "pipeline",
            "cat data.txt | grep -E 'a|b' | sort | uniq -c | sort -rn | head -20".to_string(),
        ),
        ("commit-4k-heredoc", commit),
        ("script-100", script),
    ]
}

fn validation(c: &mut Criterion) {
    let policy = Policy::shipped("developer").expect("valid shipped policy");
    let ctx = Context::example();
    let allowed: HashSet<&str> = ALLOWED.iter().copied().collect();
    let mut group = c.benchmark_group("validate");
    for (name, cmd) in cases() {
        group.throughput(Throughput::Bytes(cmd.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("tripwire-baseline", name),
            &cmd,
            |b, cmd| b.iter(|| tripwire(black_box(cmd), &allowed)),
        );
        group.bench_with_input(BenchmarkId::new("parse", name), &cmd, |b, cmd| {
            b.iter(|| shell::parse(black_box(cmd)).is_ok())
        });
        group.bench_with_input(BenchmarkId::new("parse+evaluate", name), &cmd, |b, cmd| {
            b.iter(|| policy.evaluate(&ctx, black_box(cmd)).verdict)
        });
    }
    group.finish();
}

fn compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    for (name, src) in shellgate::policy::SHIPPED {
        group.bench_function(BenchmarkId::new("toml-parse-baseline", name), |b| {
            b.iter(|| black_box(src).parse::<toml::Table>().is_ok())
        });
        group.bench_function(BenchmarkId::new("policy-compile", name), |b| {
            b.iter(|| Policy::from_toml(black_box(src), name).is_ok())
        });
    }
    group.finish();
}

criterion_group!(benches, validation, compile);
criterion_main!(benches);
