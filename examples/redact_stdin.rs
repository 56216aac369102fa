//! Redacts stdin with the built-in pack and writes the result to stdout (for trying rules).
use std::io::{Read, Write};

fn main() -> std::io::Result<()> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let (out, stats) = shellgate::redact::RuleSet::builtin().redact(&input);
    std::io::stdout().write_all(&out)?;
    for (id, n) in stats.iter() {
        eprintln!("{id}: {n}");
    }
    Ok(())
}
