//! Peak memory of the two big inputs the assurance issue names:
//! a 1 MB script through parse + evaluate, and 100 MB of command output streamed through the
//! redactor and the truncator. Prints the peak resident set size (VmHWM) after each phase.
//!
//! Run: `cargo run --release --example peak_memory [script|output]` (one phase per process, so
//! each figure is that phase's own peak).

use shellgate::redact::{Redactor, RuleSet};
use shellgate::shell::{self, Limits};
use shellgate::truncate::{TruncateConfig, Truncator};
use shellgate::{Context, Policy};

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn script_phase() {
    let base = peak_kib();
    let mut script = String::new();
    let mut i = 0;
    while script.len() < 1 << 20 {
        script.push_str(&format!(
            "grep -rn 'needle {i}' src | sort | uniq -c | head -n 5\n"
        ));
        i += 1;
    }
    let limits = Limits {
        max_bytes: 2 << 20,
        max_depth: 128,
        max_nodes: 10_000_000,
    };
    let t = std::time::Instant::now();
    let parsed = shell::parse_with(&script, &limits);
    let parse_time = t.elapsed();
    let commands = parsed.as_ref().map(|s| s.commands.len()).unwrap_or(0);
    println!(
        "1 MB script: {} bytes, {commands} commands parsed in {parse_time:?}",
        script.len()
    );
    println!(
        "  peak RSS after parse: {} KiB (baseline before building the script: {base} KiB)",
        peak_kib()
    );
    let mut policy = Policy::shipped("read-only").expect("valid shipped policy");
    policy.limits.parse.max_bytes = 2 << 20;
    policy.limits.max_commands = 1_000_000;
    let t = std::time::Instant::now();
    let d = policy.evaluate(&Context::example(), &script);
    let first = d
        .reasons
        .first()
        .map_or(String::new(), |r| format!(" ({}: {})", r.code, r.message));
    println!(
        "  evaluate: {}{first} in {:?}; peak RSS {} KiB",
        d.verdict,
        t.elapsed(),
        peak_kib()
    );
}

fn output_phase() {
    let base = peak_kib();
    let line = b"   Compiling serde v1.0.210 (registry+https://github.com/rust-lang/crates.io-index) token=ghp_0123456789abcdefghijABCDEFGHIJklmnopqr\n";
    let chunk: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    let total = 100usize << 20;
    let mut redactor = Redactor::new(RuleSet::builtin());
    let mut truncator = Truncator::new(&TruncateConfig::default());
    let mut out = Vec::new();
    let mut fed = 0;
    let t = std::time::Instant::now();
    while fed < total {
        out.clear();
        redactor.feed(&chunk, &mut out);
        truncator.feed(&out);
        fed += chunk.len();
    }
    out.clear();
    redactor.finish(&mut out);
    truncator.feed(&out);
    let result = truncator.finish();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "100 MB output: {} bytes in {secs:.2} s ({:.0} MB/s), result {} bytes; peak RSS {} KiB (baseline {base} KiB)",
        fed,
        fed as f64 / secs / 1e6,
        result.len(),
        peak_kib()
    );
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("script") => script_phase(),
        Some("output") => output_phase(),
        _ => {
            eprintln!("usage: peak_memory script|output");
            std::process::exit(2);
        }
    }
}
