//! The validation path: parse + evaluate of typical agent commands, and policy compile, each
//! beside in-run baselines so the report reads as a ratio:
//! - validation: the whitespace tripwire of the bash-tool docs (split on whitespace, check the
//!   first word against a set, reject operator words), ported to Rust; and, with the feature
//!   `oracle-brush`, brush-parser's parse alone (`Parser::parse_program`: the AST, words left
//!   unparsed), the parser the issue-12 speed targets are stated against;
//! - compile: parsing the same TOML into a plain `toml::Table` (no validation).
//!
//! The inputs come in pairs of sizes so that linearity reads off the report: the 6- and
//! 16-stage pipelines, the 4 KB and 16 KB here-docs (at most 4.5x apart), the 100- and
//! 1000-command scripts (at most 11x apart).
//!
//! Run: `cargo bench --bench validate` (add `--features oracle-brush` for the brush-parser
//! baseline, `-- --quick` for a short run).

use std::collections::HashSet;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shellgate::{shell, Context, Policy};

const ALLOWED: &[&str] = &[
    "ls", "cat", "echo", "pwd", "grep", "find", "wc", "head", "tail", "sort", "uniq", "cut", "tr",
    "diff", "stat", "du", "file", "basename", "dirname", "realpath", "printf", "true", "false",
    "git", "sed", "awk",
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

/// `git add -A && git commit -F - <<'EOF'` with a message of `lines` lines (64 lines are
/// about 3.5 KB, 256 about 14 KB).
fn commit(lines: usize) -> String {
    let message: String = (0..lines)
        .map(|i| format!("line {i:03}: explain the change in some detail here\n"))
        .collect();
    format!("git add -A && git commit -F - <<'EOF'\nfix: a thing\n\n{message}EOF")
}

/// A script of `n` commands, one a line, cycling through five shapes.
fn script(n: usize) -> String {
    (0..n)
        .map(|i| match i % 5 {
            0 => format!("ls -la src/dir{i}\n"),
            1 => format!("grep -rn 'pattern {i}' src | head -n {i}\n"),
            2 => format!("cat file{i}.txt | sort | uniq -c\n"),
            3 => format!("find . -name '*.rs{i}' -type f\n"),
            _ => format!("echo \"step {i}: $(pwd)\"\n"),
        })
        .collect()
}

fn cases() -> Vec<(&'static str, String)> {
    vec![
        ("short", "ls -la".to_string()),
        (
            "pipeline",
            "cat data.txt | grep -E 'a|b' | sort | uniq -c | sort -rn | head -20".to_string(),
        ),
        (
            "pipeline-16",
            "cat data.txt | grep -v '^#' | cut -d, -f2 | tr a-z A-Z | sort | uniq -c | sort -rn \
             | head -100 | tail -50 | grep -E 'a|b' | sed 's/x/y/' | awk '{print $1}' | sort -u \
             | tr -d ' ' | head -20 | wc -l"
                .to_string(),
        ),
        ("commit-4k-heredoc", commit(64)),
        ("commit-16k-heredoc", commit(256)),
        ("script-100", script(100)),
        ("script-1000", script(1000)),
    ]
}

/// brush-parser's parse of the whole input (the AST; its words are parsed on demand, later).
#[cfg(feature = "oracle-brush")]
fn brush_parse(cmd: &str, opts: &brush_parser::ParserOptions) -> bool {
    brush_parser::Parser::new(cmd.as_bytes(), opts)
        .parse_program()
        .is_ok()
}

/// The developer policy, with room for the 1000-command script (about 1,800 simple commands,
/// over developer's `max_commands = 1000`); nothing else changes.
fn developer() -> Policy {
    Policy::from_toml(
        "[policy]\ninclude = [\"developer\"]\n[limits]\nmax_commands = 4000\n",
        "bench.toml",
    )
    .expect("developer with a larger max_commands")
}

fn validation(c: &mut Criterion) {
    let policy = developer();
    let ctx = Context::example();
    let allowed: HashSet<&str> = ALLOWED.iter().copied().collect();
    #[cfg(feature = "oracle-brush")]
    let brush_opts = brush_parser::ParserOptions {
        // bash runs scripts without extglob.
        enable_extended_globbing: false,
        ..brush_parser::ParserOptions::default()
    };
    let mut group = c.benchmark_group("validate");
    for (name, cmd) in cases() {
        // Every input is one the developer policy allows, so that the whole of it is checked.
        let d = policy.evaluate(&ctx, &cmd);
        assert!(d.is_allowed(), "{name} is not allowed: {:?}", d.reasons);
        #[cfg(feature = "oracle-brush")]
        assert!(brush_parse(&cmd, &brush_opts), "brush-parser reads {name}");
        group.throughput(Throughput::Bytes(cmd.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("tripwire-baseline", name),
            &cmd,
            |b, cmd| b.iter(|| tripwire(black_box(cmd), &allowed)),
        );
        #[cfg(feature = "oracle-brush")]
        group.bench_with_input(
            BenchmarkId::new("brush-parse-baseline", name),
            &cmd,
            |b, cmd| b.iter(|| brush_parse(black_box(cmd), &brush_opts)),
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
    use shellgate::load::{self, ExampleCheck};
    let mut group = c.benchmark_group("compile");
    for (name, src) in shellgate::policy::SHIPPED {
        group.bench_function(BenchmarkId::new("toml-parse-baseline", name), |b| {
            b.iter(|| black_box(src).parse::<toml::Table>().is_ok())
        });
        // What `lint` and `test` pay: validated, compiled, every example run.
        group.bench_function(BenchmarkId::new("policy-compile", name), |b| {
            b.iter(|| load::load_toml(black_box(src), name, ExampleCheck::Always).is_ok())
        });
        // What a load of the shipped text pays: its examples are proven, not run.
        group.bench_function(BenchmarkId::new("policy-load-proven", name), |b| {
            b.iter(|| load::load_toml(black_box(src), name, ExampleCheck::UnlessProven).is_ok())
        });
    }
    group.finish();
}

criterion_group!(benches, validation, compile);
criterion_main!(benches);
