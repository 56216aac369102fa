//! `policy-check check --script FILE...` (each top-level command of a shell script is one
//! decision, reported at its file:line:col) and `check --format sarif`.

use crate::error::CliError;
use std::io::Write;
use std::path::{Path, PathBuf};

use annotate_snippets::{Level, Renderer, Snippet};
use shellgate::policy::Location;
use shellgate::report::sarif::{self, SarifLevel, SarifLocation, SarifResult};
use shellgate::shell::{self, Span};
use shellgate::{report, Context, Decision, Policy, Reason, RuleRef, Verdict};

/// Output formats of `check` handled here.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// Carets under spans.
    Text,
    /// One JSON object per command.
    Json,
    /// One SARIF 2.1.0 log.
    Sarif,
}

/// Largest script read.
const MAX_SCRIPT: usize = 16 * 1024 * 1024;

/// Where a checked command comes from.
enum Origin {
    /// The n-th command argument (or stdin line).
    Arg(usize),
    /// A command of a script: the file, its text, and the command's byte offset in it.
    Script { path: String, offset: usize },
}

struct Item {
    command: String,
    decision: Decision,
    origin: Origin,
}

/// Runs `check` for command arguments and/or scripts (and stdin JSON lines for SARIF when
/// neither is given). Returns the exit code: 0 all allowed, 1 one refused, 2 unreadable input.
pub fn check_cmd(
    policy: &Policy,
    ctx: &Context,
    out_format: Out,
    commands: &[String],
    scripts: &[PathBuf],
) -> Result<u8, CliError> {
    let mut items = Vec::new();
    let mut sources: Vec<(String, String)> = Vec::new();
    let mut unreadable = false;
    for (i, c) in commands.iter().enumerate() {
        items.push(Item {
            command: c.clone(),
            decision: policy.evaluate(ctx, c),
            origin: Origin::Arg(i),
        });
    }
    if commands.is_empty() && scripts.is_empty() {
        unreadable |= read_stdin(policy, ctx, &mut items)?;
    }
    for path in scripts {
        let name = path.display().to_string();
        let text = match read_script(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("policy-check: {e}");
                unreadable = true;
                continue;
            }
        };
        check_script(policy, ctx, &name, &text, &mut items);
        sources.push((name, text));
    }
    let source_of = |path: &str| -> &str {
        sources
            .iter()
            .find(|(p, _)| p == path)
            .map_or("", |(_, t)| t.as_str())
    };
    let lines: Vec<LineStarts> = sources.iter().map(|(_, t)| LineStarts::new(t)).collect();
    let lines_of = |path: &str| {
        sources
            .iter()
            .position(|(p, _)| p == path)
            .map(|i| &lines[i])
    };
    // One buffer for all of it (stdout alone is flushed at every newline).
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut worst = Verdict::Allow;
    let mut refused = 0usize;
    let mut sarif_results = Vec::new();
    for item in &items {
        worst = worst.max(item.decision.verdict);
        if item.decision.verdict != Verdict::Allow {
            refused += 1;
        }
        match out_format {
            Out::Json => {
                let (file, line, column) = match &item.origin {
                    Origin::Script { path, offset } => {
                        let (line, col) =
                            lines_of(path).map_or((1, 1), |l| l.at(source_of(path), *offset));
                        (Some(path.as_str()), Some(line), Some(col))
                    }
                    Origin::Arg(_) => (None, None, None),
                };
                let line = JsonItem {
                    command: &item.command,
                    decision: item.decision.verdict,
                    reasons: &item.decision.reasons,
                    trace: &item.decision.trace,
                    file,
                    line,
                    column,
                };
                serde_json::to_writer(&mut out, &line)
                    .map_err(|e| format!("cannot write the JSON output: {e}"))?;
                out.write_all(b"\n").map_err(write_err)?;
            }
            Out::Text => {
                let text = match &item.origin {
                    Origin::Arg(_) => report::human(&item.command, &item.decision, false),
                    Origin::Script { path, offset } => {
                        if item.decision.verdict == Verdict::Allow {
                            continue;
                        }
                        human_in_file(path, source_of(path), *offset, &item.decision)
                    }
                };
                out.write_all(text.as_bytes()).map_err(write_err)?;
            }
            Out::Sarif => {
                if let Some(r) = sarif_result(item, source_of) {
                    sarif_results.push(r);
                }
            }
        }
    }
    match out_format {
        Out::Sarif => {
            let log = sarif::log(&sarif_results);
            let text = serde_json::to_string_pretty(&log).map_err(|e| e.to_string())?;
            writeln!(out, "{text}").map_err(write_err)?;
        }
        Out::Text if !scripts.is_empty() => {
            writeln!(
                out,
                "{} command(s) checked, {} refused",
                items.len(),
                refused
            )
            .map_err(write_err)?;
        }
        _ => {}
    }
    out.flush().map_err(write_err)?;
    if unreadable {
        return Ok(2);
    }
    Ok(if worst == Verdict::Allow { 0 } else { 1 })
}

/// One JSON line of `check --format json`: [`report::JsonDecision`]'s fields, and for a
/// command of a script its file, line and column.
#[derive(serde::Serialize)]
struct JsonItem<'a> {
    command: &'a str,
    decision: Verdict,
    reasons: &'a [Reason],
    trace: &'a shellgate::evaluate::Trace,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
}

/// Where each line of a script starts: the line and column of an offset by a binary search,
/// not by counting the newlines before it (once per command: quadratic in the script).
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(text: &str) -> LineStarts {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        LineStarts(starts)
    }

    /// 1-based line and column (in characters) of `offset`, as [`Location::at`] counts them.
    fn at(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.0.partition_point(|&s| s <= offset).max(1);
        let start = self.0[line - 1];
        let col = text.get(start..offset).map_or(0, |s| s.chars().count()) + 1;
        (line, col)
    }
}

fn write_err(e: std::io::Error) -> CliError {
    CliError::write("stdout", e)
}

/// Reads a script as UTF-8, naming the file (and the first bad byte) when it is not.
fn read_script(path: &Path) -> Result<String, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::read(path, e))?;
    if bytes.len() > MAX_SCRIPT {
        return Err(format!("{}: larger than {MAX_SCRIPT} bytes", path.display()).into());
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = e.as_bytes().get(..at).unwrap_or(&[]);
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        CliError::Failed(format!(
            "{}:{line}: not valid UTF-8 (byte offset {at}); shell scripts must be UTF-8 to be checked",
            path.display()
        ))
    })
}

/// Checks a script: the whole text is evaluated at once (so pipelines, here-document bodies
/// and `&&` lists mean what bash makes of them), then every reason is attributed to the
/// top-level statement it falls in (a pipeline or `&&`/`||` list is one statement). A
/// script that does not parse is one denial at the error.
fn check_script(policy: &Policy, ctx: &Context, path: &str, text: &str, items: &mut Vec<Item>) {
    // A script is longer than one agent command: the size limits lifted, the others kept;
    // the one parse here is the one the evaluation checks.
    let limits = shell::Limits {
        max_bytes: policy.limits.parse.max_bytes.max(text.len()),
        ..policy.limits.parse
    };
    let max_commands = policy.limits.max_commands.max(1_000_000);
    let script = match shell::parse_with(text, &limits) {
        Ok(s) => s,
        Err(e) => {
            items.push(Item {
                command: text.to_string(),
                decision: Decision::from_reasons(vec![Reason {
                    code: e.kind.code(),
                    verdict: Verdict::Deny,
                    rule: Some(RuleRef::builtin_check(e.kind.code())),
                    message: format!("the script cannot be checked: {}", e.message),
                    span: e.span,
                }]),
                origin: Origin::Script {
                    path: path.to_string(),
                    offset: 0,
                },
            });
            return;
        }
    };
    let whole =
        shellgate::evaluate::evaluate_parsed(policy, ctx, text, &script, limits, max_commands);
    let units = statements(text, &script.commands);
    let mut decisions: Vec<Decision> = units
        .iter()
        .map(|u| Decision {
            trace: whole.trace.slice(u.start, u.end),
            ..Decision::from_reasons(Vec::new())
        })
        .collect();
    for r in whole.reasons {
        // The last statement that starts at or before the reason (here-document bodies
        // follow their command's line).
        let i = units
            .iter()
            .rposition(|u| u.start <= r.span.start)
            .unwrap_or(0);
        let Some((d, u)) = decisions.get_mut(i).zip(units.get(i)) else {
            continue;
        };
        d.verdict = d.verdict.max(r.verdict);
        d.reasons.push(Reason {
            span: Span {
                start: r.span.start.saturating_sub(u.start),
                end: r.span.end.saturating_sub(u.start),
            },
            ..r
        });
    }
    for (u, decision) in units.iter().zip(decisions) {
        items.push(Item {
            command: text.get(u.start..u.end).unwrap_or("").to_string(),
            decision,
            origin: Origin::Script {
                path: path.to_string(),
                offset: u.start,
            },
        });
    }
}

/// Groups the parser's top-level commands into statements: commands joined by `|`, `|&`,
/// `&&` or `||` (and whitespace or line continuations) are one statement.
fn statements(text: &str, commands: &[shell::Command]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for c in commands {
        let span = c.span();
        if let Some(last) = out.last_mut() {
            let between = text.get(last.end..span.start).unwrap_or(";");
            let ops: String = between
                .replace("\\\n", "")
                .chars()
                .filter(|ch| !ch.is_whitespace())
                .collect();
            if matches!(ops.as_str(), "|" | "|&" | "&&" | "||") {
                last.end = span.end.max(last.end);
                continue;
            }
        }
        out.push(span);
    }
    out
}

/// The reason that decides: the first one with the decision's verdict.
fn primary(d: &Decision) -> Option<&Reason> {
    d.reasons
        .iter()
        .find(|r| r.verdict == d.verdict)
        .or(d.reasons.first())
}

fn sarif_result<'a>(item: &Item, source_of: impl Fn(&str) -> &'a str) -> Option<SarifResult> {
    let d = &item.decision;
    let level = match d.verdict {
        Verdict::Allow => return None,
        Verdict::Ask => SarifLevel::Warning,
        Verdict::Deny => SarifLevel::Error,
    };
    let reason = primary(d);
    let rule_id = reason.map_or("policy-default", |r| r.code).to_string();
    let mut message = format!("`{}`: {}", first_line(&item.command), d.verdict);
    for r in d.reasons.iter().filter(|r| r.verdict == d.verdict) {
        message.push_str(&format!("\n- [{}] {}", r.code, r.message));
        if let Some(rule) = &r.rule {
            message.push_str(&format!(" (rule {rule})"));
        }
    }
    let location = match &item.origin {
        Origin::Arg(index) => SarifLocation::Command {
            text: item.command.clone(),
            index: *index,
        },
        Origin::Script { path, offset } => {
            let src = source_of(path);
            let span = reason.map_or(Span { start: 0, end: 0 }, |r| r.span);
            let start = Location::at(path, src, offset + span.start);
            let end = Location::at(path, src, offset + span.end.max(span.start));
            SarifLocation::File {
                uri: uri_of(path),
                start_line: start.line,
                start_column: start.col,
                end_line: Some(end.line),
                end_column: Some(end.col),
            }
        }
    };
    Some(SarifResult {
        rule_id,
        level,
        message,
        location,
    })
}

/// A relative path as a URI reference (forward slashes, no leading `./`).
fn uri_of(path: &str) -> String {
    let p = path.replace('\\', "/");
    p.strip_prefix("./").unwrap_or(&p).to_string()
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let short: String = line.chars().take(80).collect();
    if short.len() < s.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// Carets under each reason, shown in the script file with its real line numbers.
fn human_in_file(path: &str, source: &str, offset: usize, d: &Decision) -> String {
    let renderer = Renderer::plain();
    let mut out = String::new();
    for r in &d.reasons {
        let level = match r.verdict {
            Verdict::Allow => Level::Info,
            Verdict::Ask => Level::Warning,
            Verdict::Deny => Level::Error,
        };
        let span =
            shellgate::report::caret_range(source, offset + r.span.start, offset + r.span.end);
        let title = format!("{}: {}", r.verdict, r.message);
        let footer = r.rule.as_ref().map(|rule| format!("rule {rule}"));
        let mut msg = level.title(&title).id(r.code).snippet(
            Snippet::source(source)
                .line_start(1)
                .origin(path)
                .fold(true)
                .annotation(level.span(span).label(r.code)),
        );
        if let Some(f) = &footer {
            msg = msg.footer(Level::Note.title(f));
        }
        out.push_str(&renderer.render(msg).to_string());
        out.push('\n');
    }
    let loc = Location::at(path, source, offset);
    out.push_str(&format!("{loc}: decision: {}\n", d.verdict));
    out
}

/// Reads JSON lines from stdin like `check` does; returns whether a line was unreadable.
fn read_stdin(policy: &Policy, ctx: &Context, items: &mut Vec<Item>) -> Result<bool, CliError> {
    crate::for_each_stdin_command(|command| {
        let index = items.len();
        items.push(Item {
            decision: policy.evaluate(ctx, &command),
            command,
            origin: Origin::Arg(index),
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line index gives every offset the line and column [`Location::at`] counts.
    #[test]
    fn line_starts_agree_with_location_at() {
        let text = "ls\n\né ü x\n  日本 | cat\nlast";
        let idx = LineStarts::new(text);
        for offset in (0..=text.len() + 2).filter(|o| text.is_char_boundary(*o.min(&text.len()))) {
            let loc = Location::at("f", text, offset);
            assert_eq!(idx.at(text, offset), (loc.line, loc.col), "offset {offset}");
        }
    }
}
