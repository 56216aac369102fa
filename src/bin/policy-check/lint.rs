//! `policy-check lint --policy FILE...`: load errors and `lint-*` warnings, as text, JSON
//! lines or SARIF. Exit 0 clean, 1 findings, 2 a policy file could not be read.

use crate::error::CliError;
use std::io::Write;

use annotate_snippets::{Level, Renderer, Snippet};
use shellgate::policy::{Diagnostic, Severity};
use shellgate::report::sarif::{self, SarifLevel, SarifLocation, SarifResult};

use crate::scripts::Out;

/// Runs the linter over every policy; returns the exit code.
pub fn lint_cmd(policies: &[String], format: Out) -> Result<u8, CliError> {
    let mut findings: Vec<Diagnostic> = Vec::new();
    let mut unreadable = false;
    let mut linted = 0usize;
    // Policies whose examples could not run because they do not load.
    let mut examples_not_run = 0usize;
    for spec in policies {
        match shellgate::load::lint_name_or_file(spec) {
            Ok(report) => {
                linted += 1;
                if !report.examples_run {
                    examples_not_run += 1;
                }
                findings.extend(report.diagnostics);
            }
            Err(e) => {
                eprintln!("policy-check: {e}");
                unreadable = true;
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let w = |e: std::io::Error| CliError::write("stdout", e);
    match format {
        Out::Text => {
            let mut sources = Sources::default();
            for f in &findings {
                let text = match sources.get(&f.location.file) {
                    Some(src) => render(f, src),
                    None => format!("{f}\n"),
                };
                out.write_all(text.as_bytes()).map_err(w)?;
            }
            let errors = findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .count();
            if linted > 0 {
                writeln!(
                    out,
                    "{} polic{} linted: {} error(s), {} warning(s){}",
                    linted,
                    if linted == 1 { "y" } else { "ies" },
                    errors,
                    findings.len() - errors,
                    match examples_not_run {
                        0 => String::new(),
                        n => format!(
                            "; examples not run in {n} polic{} (fix the errors first: a policy \
                             that does not load decides nothing)",
                            if n == 1 { "y" } else { "ies" }
                        ),
                    }
                )
                .map_err(w)?;
            }
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

/// Policy texts by file name, read once (shipped ones from the binary).
#[derive(Default)]
struct Sources(Vec<(String, Option<String>)>);

impl Sources {
    fn get(&mut self, file: &str) -> Option<&str> {
        if !self.0.iter().any(|(f, _)| f == file) {
            let text = match file.strip_prefix("shipped:") {
                Some(name) => shellgate::policy::SHIPPED
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| (*t).to_string()),
                None => std::fs::read_to_string(file).ok(),
            };
            self.0.push((file.to_string(), text));
        }
        self.0
            .iter()
            .find(|(f, _)| f == file)
            .and_then(|(_, t)| t.as_deref())
    }
}

/// `file:line:col` with the policy line and a caret under the key or value it is about.
fn render(f: &Diagnostic, source: &str) -> String {
    let Some(start) = offset_of(source, f.location.line, f.location.col) else {
        return format!("{f}\n");
    };
    let rest = source.get(start..).unwrap_or("");
    let len: usize = rest
        .char_indices()
        .find(|(i, c)| *i > 0 && (c.is_whitespace() || matches!(c, '=' | ']' | ',')))
        .map_or(rest.len(), |(i, _)| i);
    let mut end = start + len.max(1).min(rest.len());
    while end < source.len() && !source.is_char_boundary(end) {
        end += 1;
    }
    let level = match f.severity {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
    };
    let msg = level.title(&f.message).id(f.code).snippet(
        Snippet::source(source)
            .line_start(1)
            .origin(&f.location.file)
            .fold(true)
            .annotation(level.span(start..end.max(start))),
    );
    format!("{}\n", Renderer::plain().render(msg))
}

/// The byte offset of 1-based `line` and character `col` in `source`.
fn offset_of(source: &str, line: usize, col: usize) -> Option<usize> {
    if line == 0 || col == 0 {
        return None;
    }
    let mut line_start = 0;
    for _ in 1..line {
        line_start += source.get(line_start..)?.find('\n')? + 1;
    }
    let line_text = source.get(line_start..)?;
    let byte = line_text
        .char_indices()
        .nth(col - 1)
        .map(|(i, _)| i)
        .unwrap_or(line_text.len());
    Some(line_start + byte)
}
