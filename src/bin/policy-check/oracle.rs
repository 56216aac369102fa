//! `policy-check oracle` (the option-effect oracle on a policy's rules) and `policy-check
//! draft` (an option table from a program's help, typed by the oracle). Both run programs
//! only inside the jail (src/oracle); without it they exit 2 and say why.

use std::io::Write;
use std::path::Path;

use shellgate::oracle::{self, Oracle};
use shellgate::Policy;

use crate::error::CliError;

fn oracle_or_err() -> Result<Oracle, CliError> {
    Oracle::new().map_err(|e| CliError::Failed(e.to_string()))
}

/// `oracle --policy P [PROGRAM...]`: exit 1 if an option of an allowed command does more
/// than its entry says, 0 if none does.
pub fn oracle_cmd(
    policy: &Policy,
    programs: &[String],
    full: bool,
    json: bool,
) -> Result<u8, CliError> {
    let mut o = oracle_or_err()?;
    o.full = full;
    let report = o.check(policy, programs);
    let mut out = std::io::stdout().lock();
    let text = if json {
        let mut t = serde_json::to_string(&report).map_err(|e| e.to_string())?;
        t.push('\n');
        t
    } else {
        let mut t = String::new();
        for f in &report.findings {
            t.push_str(&format!(
                "{}: {}: option {} of `{}`: {} (the rule allows it: {})\n",
                f.rule.location, f.program, f.option, f.command, f.effect, f.rule.name
            ));
        }
        eprint!("{}", report.summary());
        if report.findings.is_empty() {
            eprintln!("policy-check: the oracle found no option whose effect exceeds its entry");
        } else {
            eprintln!(
                "policy-check: {} finding(s): deny these options, or give their values a kind \
                 (path-read, path-write) that the policy checks",
                report.findings.len()
            );
        }
        t
    };
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::write("stdout", e))?;
    // A program named on the command line that could not be checked at all is an error:
    // silence must not pass for a proof.
    let checked = |p: &String| {
        report
            .per_program
            .keys()
            .any(|k| k == p || k.starts_with(&format!("{p} ")))
    };
    let missing: Vec<&str> = programs
        .iter()
        .filter(|p| !checked(p))
        .map(String::as_str)
        .collect();
    if report.findings.is_empty() && !missing.is_empty() {
        return Err(format!(
            "not checked: {} (see the skipped lines)",
            missing.join(", ")
        )
        .into());
    }
    Ok(u8::from(!report.findings.is_empty()))
}

/// `draft PROGRAM [--output FILE]`.
pub fn draft_cmd(
    program: &str,
    output: Option<&Path>,
    force: bool,
    json: bool,
) -> Result<u8, CliError> {
    let mut o = oracle_or_err()?;
    // A filter of its input finishes at once on the small fixtures; one that waits (for a
    // terminal, for endless output) is cut short and left for review.
    o.set_time_limit(std::time::Duration::from_secs(5));
    let d = oracle::draft::draft(&o, program).map_err(|e| CliError::Failed(e.to_string()))?;
    let text = if json {
        let mut t = serde_json::to_string(&d).map_err(|e| e.to_string())?;
        t.push('\n');
        t
    } else {
        d.to_toml()
    };
    match output {
        Some(path) => {
            crate::init::write_file(path, &text, force)?;
            eprintln!(
                "policy-check: wrote {}; review it, include it in a policy, then run \
                 policy-check oracle --policy YOUR-POLICY {program}",
                path.display()
            );
        }
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| CliError::write("stdout", e))?,
    }
    Ok(0)
}
