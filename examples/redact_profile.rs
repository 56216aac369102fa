//! Redacts one of the benchmark inputs N times, for profilers (the criterion benchmark runs
//! too many iterations for callgrind). Instruction counts in BENCHMARKS.md come from:
//!
//! ```sh
//! cargo build --release --example redact_profile
//! valgrind --tool=callgrind --collect-atstart=no \
//!   --toggle-collect='shellgate::redact::engine::RuleSet::redact' \
//!   target/release/examples/redact_profile log 2      # or `dense`
//! ```

#[path = "../benches/support/inputs.rs"]
mod inputs;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
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
