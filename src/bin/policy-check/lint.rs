//! `policy-check lint --policy FILE...`: load errors and `lint-*` warnings, as text, JSON
//! lines or SARIF. Exit 0 clean, 1 findings, 2 a policy file could not be read.

use std::io::Write;

use shellgate::policy::lint::{self, Finding, Severity};
use shellgate::report::sarif::{self, SarifLevel, SarifLocation, SarifResult};

use crate::scripts::Out;

/// Runs the linter over every policy; returns the exit code.
pub fn lint_cmd(policies: &[String], format: Out) -> Result<u8, String> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut unreadable = false;
    for spec in policies {
        match lint::lint_name_or_file(spec) {
            Ok(f) => findings.extend(f),
            Err(e) => {
                eprintln!("policy-check: {e}");
                unreadable = true;
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let w = |e: std::io::Error| format!("cannot write output: {e}");
    match format {
        Out::Text => {
            for f in &findings {
                writeln!(out, "{f}").map_err(w)?;
            }
            let errors = findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .count();
            writeln!(
                out,
                "{} polic{} linted: {} error(s), {} warning(s)",
                policies.len(),
                if policies.len() == 1 { "y" } else { "ies" },
                errors,
                findings.len() - errors
            )
            .map_err(w)?;
        }
        Out::Json => {
            for f in &findings {
                let v = serde_json::json!({
                    "file": f.location.file,
                    "line": f.location.line,
                    "column": f.location.col,
                    "severity": f.severity,
                    "code": f.code,
                    "message": f.message,
                });
                writeln!(out, "{v}").map_err(w)?;
            }
        }
        Out::Sarif => {
            let results: Vec<SarifResult> = findings
                .iter()
                .map(|f| SarifResult {
                    rule_id: f.code.to_string(),
                    level: match f.severity {
                        Severity::Error => SarifLevel::Error,
                        Severity::Warning => SarifLevel::Warning,
                    },
                    message: f.message.clone(),
                    location: SarifLocation::File {
                        uri: f
                            .location
                            .file
                            .strip_prefix("./")
                            .unwrap_or(&f.location.file)
                            .to_string(),
                        start_line: f.location.line,
                        start_column: f.location.col,
                        end_line: None,
                        end_column: None,
                    },
                })
                .collect();
            let text =
                serde_json::to_string_pretty(&sarif::log(&results)).map_err(|e| e.to_string())?;
            writeln!(out, "{text}").map_err(w)?;
        }
    }
    out.flush().map_err(w)?;
    Ok(if unreadable {
        2
    } else if findings.is_empty() {
        0
    } else {
        1
    })
}
