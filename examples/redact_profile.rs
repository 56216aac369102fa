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
    let _ = set.redact(b"warm");
    let t = std::time::Instant::now();
    let mut total = 0;
    for _ in 0..n {
        total += set.redact(std::hint::black_box(&input)).0.len();
    }
    let el = t.elapsed();
    println!(
        "{which}: {:.1} MB/s ({total})",
        (input.len() * n) as f64 / el.as_secs_f64() / 1e6
    );
}
