//! Redacts one of the benchmark inputs N times, for profilers (the criterion benchmark runs
//! too many iterations for callgrind). Instruction counts in BENCHMARKS.md come from:
//!
//! ```sh
//! cargo build --profile profiling --example redact_profile   # release, with symbols
//! valgrind --tool=callgrind --collect-atstart=no \
//!   --toggle-collect='shellgate::redact::engine::RuleSet::redact' \
//!   target/profiling/examples/redact_profile log 2      # or `dense`
//! ```

#[path = "../benches/support/inputs.rs"]
mod inputs;

/// `redact_profile start`: where a new process's time goes before its first redacted lines.
fn start() {
    use shellgate::redact::{RedactConfig, RuleSet, BUILTIN_RULES};
    let t = std::time::Instant::now();
    let table: toml::Table = toml::from_str(BUILTIN_RULES).expect("toml");
    let table_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let config = RedactConfig::from_toml_str(BUILTIN_RULES).expect("rules parse");
    let parse_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let set = RuleSet::builtin();
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let _ = set.redact(b"   Compiling serde v1.0.215\n");
    let log_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let _ = set.redact(b"export API_KEY=0yilnnn2qUkxV7yiH1DAPmB26N3hiD0s\n");
    let secret_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let eager = RuleSet::from_parts(config.rules.clone(), &config.allow).expect("compiles");
    let eager_ms = t.elapsed().as_secs_f64() * 1e3;
    if std::env::var_os("PROFILE_PATTERNS").is_some() {
        for p in config
            .allow
            .iter()
            .chain(config.rules.iter().map(|r| &r.regex))
        {
            // The least of 5 compiles: this machine is shared.
            let ms = (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let _ = regex::bytes::RegexBuilder::new(p).unicode(false).build();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .fold(f64::MAX, f64::min);
            if ms > 0.2 {
                println!("{ms:6.2} ms  {}", &p[..p.len().min(90)]);
            }
        }
    }
    println!(
        "toml table {table_ms:.2} ms | rules parse {parse_ms:.2} ms | built-in set (parse + lazy build) {build_ms:.2} ms | \
         first log line {log_ms:.2} ms | first secret line {secret_ms:.2} ms | (every rule compiled: {eager_ms:.2} ms; {} rules, {} keys)",
        eager.len(),
        table.len()
    );
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    if which == "start" {
        return start();
    }
    if let Some(kind) = which.strip_prefix("dump-") {
        // The benchmark input on stdout, for profiling the CLI on it.
        use std::io::Write;
        let input = if kind == "log" {
            inputs::build_log()
        } else {
            inputs::lookalike_log()
        };
        let _ = std::io::stdout().write_all(&input);
        return;
    }
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let input = if which == "log" {
        inputs::build_log()
    } else {
        inputs::lookalike_log()
    };
    let set = shellgate::redact::RuleSet::builtin();
    let t = std::time::Instant::now();
    let mut total = 0;
    for _ in 0..n {
        total += set.redact(std::hint::black_box(&input)).0.len();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{which}: {:.1} MB/s ({total} bytes out)",
        (input.len() * n) as f64 / secs / 1e6
    );
}
