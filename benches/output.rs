//! Output pipeline throughput: redaction of a typical build/test log and of a look-alike-dense
//! input, and truncation, each beside a plain byte copy of the same input (the baseline; read
//! results as ratios).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shellgate::redact::{RedactConfig, Redactor, RuleSet, BUILTIN_RULES};
use shellgate::truncate::{truncate, TruncateConfig};

#[path = "support/inputs.rs"]
mod inputs;
use inputs::{build_log, build_log_of, lookalike_log, lookalike_log_of};

fn copy(input: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(input.len());
    v.extend_from_slice(input);
    v
}

fn bench(c: &mut Criterion) {
    let set = RuleSet::builtin();
    let inputs = [("build-log", build_log()), ("lookalikes", lookalike_log())];
    for (name, input) in &inputs {
        let mut g = c.benchmark_group(format!("redact/{name}"));
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_with_input(BenchmarkId::new("byte-copy", input.len()), input, |b, i| {
            b.iter(|| copy(black_box(i)))
        });
        g.bench_with_input(BenchmarkId::new("redact", input.len()), input, |b, i| {
            b.iter(|| set.redact(black_box(i)))
        });
        g.bench_with_input(
            BenchmarkId::new("redact-stream-64k", input.len()),
            input,
            |b, i| {
                b.iter(|| {
                    let mut r = Redactor::new(set);
                    let mut out = Vec::with_capacity(i.len());
                    for chunk in i.chunks(64 * 1024) {
                        r.feed(black_box(chunk), &mut out);
                    }
                    r.finish(&mut out);
                    out
                })
            },
        );
        g.finish();
    }
    // 50 MB: the look-alike log's counters reach six digits (`secretName: app-tls-104857`),
    // which a 1 MiB input never shows; few samples, each pass takes a while.
    let big = [
        ("build-log-50mb", build_log_of(50_000_000)),
        ("lookalikes-50mb", lookalike_log_of(50_000_000)),
    ];
    for (name, input) in &big {
        let mut g = c.benchmark_group(format!("redact/{name}"));
        g.sample_size(10);
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_with_input(BenchmarkId::new("byte-copy", input.len()), input, |b, i| {
            b.iter(|| copy(black_box(i)))
        });
        g.bench_with_input(
            BenchmarkId::new("redact-stream-64k", input.len()),
            input,
            |b, i| {
                b.iter(|| {
                    let mut r = Redactor::new(set);
                    let mut out = Vec::with_capacity(i.len());
                    for chunk in i.chunks(64 * 1024) {
                        r.feed(black_box(chunk), &mut out);
                    }
                    r.finish(&mut out);
                    out
                })
            },
        );
        g.finish();
    }
    let input = &inputs[0].1;
    let mut g = c.benchmark_group("truncate/build-log");
    g.throughput(Throughput::Bytes(input.len() as u64));
    g.bench_with_input(BenchmarkId::new("byte-copy", input.len()), input, |b, i| {
        b.iter(|| copy(black_box(i)))
    });
    g.bench_with_input(BenchmarkId::new("truncate", input.len()), input, |b, i| {
        b.iter(|| truncate(black_box(i), &TruncateConfig::default()))
    });
    g.finish();
}

/// What a new process pays before its first redacted line: building the built-in set (the
/// rules compile lazily) and redacting one line of a build log and one with a secret, beside
/// parsing the pack's TOML into a plain table (the baseline).
fn start(c: &mut Criterion) {
    let mut g = c.benchmark_group("start");
    g.bench_function("toml-table-baseline", |b| {
        b.iter(|| toml::from_str::<toml::Table>(black_box(BUILTIN_RULES)))
    });
    g.bench_function("rule-set-and-first-lines", |b| {
        b.iter(|| {
            let set = RuleSet::with_config(&RedactConfig::default()).expect("builds");
            let a = set.redact(black_box(b"   Compiling serde v1.0.215\n")).0;
            let s = set.redact(black_box(
                b"export API_KEY=0yilnnn2qUkxV7yiH1DAPmB26N3hiD0s\n",
            ));
            (a, s)
        })
    });
    g.finish();
}

criterion_group!(benches, bench, start);
criterion_main!(benches);
