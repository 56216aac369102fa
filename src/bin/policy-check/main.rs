//! `policy-check` (output branch stand-in): only the `redact` and `truncate` subcommands, to test
//! `output_cmds`; main's real CLI wires the same functions.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod output_cmds;

#[derive(Parser)]
#[command(name = "policy-check", version, about = "shellgate output pipeline")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Redact secrets from stdin to stdout.
    Redact {
        /// A policy file; only its `[redact]` table is read.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// A standalone redaction rules file.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Print a count per rule on stderr.
        #[arg(long)]
        stats: bool,
    },
    /// Truncate stdin to a byte and line budget.
    Truncate {
        /// Byte budget (default 30000).
        #[arg(long)]
        max_bytes: Option<usize>,
        /// Line budget (default 400).
        #[arg(long)]
        max_lines: Option<usize>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Cmd::Redact {
            policy,
            rules,
            stats,
        } => output_cmds::redact_cmd(policy.as_deref(), rules.as_deref(), stats),
        Cmd::Truncate {
            max_bytes,
            max_lines,
        } => output_cmds::truncate_cmd(max_bytes, max_lines),
    };
    match r {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(2)),
        Err(e) => {
            eprintln!("policy-check: {e}");
            ExitCode::from(2)
        }
    }
}
