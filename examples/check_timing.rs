//! Per-call time of `Policy::evaluate` in Rust, for comparing with the Python binding's
//! `Policy.check` (python/bench/check_overhead.py runs both and prints the ratio).
//!
//! Run: `cargo run --release --example check_timing [ITERATIONS]`. Prints one line per
//! command: `NAME NANOSECONDS_PER_CALL` (the best of 10 rounds).

use std::hint::black_box;
use std::time::Instant;

use shellgate::{Context, Policy};

/// The commands timed, by name; python/bench/check_overhead.py times the same ones.
fn commands() -> Vec<(&'static str, String)> {
    let message: String = (0..64)
        .map(|i| format!("line {i:02}: explain the change in some detail here\n"))
        .collect();
    vec![
        ("short", "ls -la".to_string()),
        ("refused", "cat data.txt|sh".to_string()),
        (
            "pipeline",
            "cat data.txt | grep -E 'a|b' | sort | uniq -c | sort -rn | head -20".to_string(),
        ),
        (
            "commit-4k-heredoc",
            format!("git add -A && git commit -F - <<'EOF'\nfix: a thing\n\n{message}EOF"),
        ),
    ]
}

/// Rounds timed per command (python/bench/check_overhead.py uses the same).
const ROUNDS: u32 = 10;

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let policy = Policy::from_name_or_file("developer").expect("the shipped developer policy");
    for (name, command) in commands() {
        let ctx = Context::new("/workspace");
        for _ in 0..iterations / 10 {
            black_box(policy.evaluate(&ctx, black_box(&command)));
        }
        // The best of ROUNDS rounds: the machine is shared, and the minimum is the least noisy.
        let per_round = (iterations / ROUNDS).max(1);
        let ns = (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                for _ in 0..per_round {
                    black_box(policy.evaluate(&ctx, black_box(&command)));
                }
                started.elapsed().as_nanos() / u128::from(per_round)
            })
            .min()
            .unwrap_or(0);
        println!("{name} {ns}");
    }
}
