//! Rendering decisions: for people (carets under the span, by annotate-snippets), for
//! machines (one JSON object per command), and short text for the model.

pub mod sarif;

use annotate_snippets::{Level, Renderer, Snippet};
use serde::Serialize;

use crate::evaluate::{Decision, Reason, Trace};
use crate::policy::{RuleRef, Verdict};

/// One command's decision as a JSON object:
/// `{"command", "decision", "reasons": [{"code", "verdict", "rule", "message", "span"}],
/// "trace": [{"part", "span", "rule", "key", "entry", "verdict"}]}` (each reason in
/// [`Reason`]'s JSON form, the trace in [`Trace`]'s).
#[derive(Debug, Serialize)]
pub struct JsonDecision<'a> {
    /// The command text.
    pub command: &'a str,
    /// `allow`, `ask` or `deny`.
    pub decision: Verdict,
    /// Every reason.
    pub reasons: &'a [Reason],
    /// Which rule decided each part.
    pub trace: &'a Trace,
}

/// The JSON form of a decision, as one line.
pub fn json_line(command: &str, decision: &Decision) -> String {
    let obj = JsonDecision {
        command,
        decision: decision.verdict,
        reasons: &decision.reasons,
        trace: &decision.trace,
    };
    serde_json::to_string(&obj).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// A human rendering with carets under each reason's span.
pub fn human(command: &str, decision: &Decision, color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    if decision.reasons.is_empty() {
        return format!("allow: {command}\n");
    }
    let mut out = String::new();
    for r in &decision.reasons {
        let level = level(r.verdict);
        let title = format!("{}: {}", r.verdict, r.message);
        let label = r.rule.as_ref().map(RuleRef::to_string).unwrap_or_default();
        let span = caret_range(command, r.span.start, r.span.end);
        let footer_text = r.rule.as_ref().map(|rule| format!("rule {rule}"));
        let mut msg = level.title(&title).id(r.code).snippet(
            Snippet::source(command).line_start(1).annotation(
                level
                    .span(span)
                    .label(if label.is_empty() { r.code } else { "" }),
            ),
        );
        if let Some(f) = &footer_text {
            msg = msg.footer(Level::Note.title(f));
        }
        out.push_str(&renderer.render(msg).to_string());
        out.push('\n');
    }
    out.push_str(&format!("decision: {}\n", decision.verdict));
    out
}

/// `policy-check explain`: [`human`], then one line per part of the command with the rule
/// that decided it (allowed parts too), in source order:
///
/// ```text
/// decided by:
///   `ls`   program: allow by programs.ls (shipped:read-only:120:1)
///   `-la`  option -l: allow by programs.ls allow_options (shipped:read-only:120:1)
/// ```
pub fn explain(command: &str, decision: &Decision, color: bool) -> String {
    let mut out = human(command, decision, color);
    out.push_str(&trace_lines(command, &decision.trace));
    out
}

/// The trace as text, one line per step (nothing when the trace is empty).
pub fn trace_lines(command: &str, trace: &Trace) -> String {
    if trace.is_empty() {
        return String::new();
    }
    let texts: Vec<String> = trace
        .steps()
        .map(|s| {
            let r = caret_range(command, s.span.start, s.span.end);
            let t: String = command[r].chars().take(40).collect();
            format!("`{}`", t.replace('\n', "\\n"))
        })
        .collect();
    let width = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let mut out = String::from("decided by:\n");
    for (s, text) in trace.steps().zip(&texts) {
        let pad = width - text.chars().count();
        let entry = s.entry.map(|e| format!(" {e}")).unwrap_or_default();
        let key = s.key.map(|k| format!(" {k}")).unwrap_or_default();
        out.push_str(&format!(
            "  {text}{:pad$}  {}{entry}: {} by {}{key} ({})\n",
            "",
            s.part.as_str(),
            s.verdict,
            s.rule.name,
            s.rule.location_text(),
        ));
    }
    out
}

/// A short, actionable text for the model: what was refused, which rule, what to do.
/// Rules are named (`paths.read`) but their file locations are left out.
pub fn for_model(command: &str, decision: &Decision) -> String {
    let head = match decision.verdict {
        Verdict::Allow => return String::new(),
        Verdict::Ask => "This command needs approval and was not run.",
        Verdict::Deny => "This command was refused by the shellgate policy and was not run.",
    };
    reason_list(head.to_string(), command, decision)
}

/// The text of an approval prompt, for the person about to decide (an agent's `ask`): the
/// command has not run yet and runs if they approve. Empty unless the verdict is ask.
pub fn for_approval(command: &str, decision: &Decision) -> String {
    if decision.verdict != Verdict::Ask {
        return String::new();
    }
    let head = "The shellgate policy says this command needs your approval before it runs.";
    reason_list(head.to_string(), command, decision)
}

/// `out`, then a line for each reason of the decision's verdict (at most five).
fn reason_list(mut out: String, command: &str, decision: &Decision) -> String {
    for r in decision
        .reasons
        .iter()
        .filter(|r| r.verdict == decision.verdict)
        .take(5)
    {
        let text = command.get(r.span.start..r.span.end).unwrap_or("");
        let text: String = text.chars().take(60).collect();
        out.push_str(&format!("\n- [{}] {}", r.code, r.message));
        // The rule's name, not its file location: the model needs to know which rule, not
        // where the host keeps its policy.
        // A built-in check's rule is its code, already shown: only a policy rule is named.
        let rule = r
            .rule
            .as_ref()
            .filter(|rule| !rule.is_builtin_check())
            .map(|rule| format!("rule `{}`", rule.name));
        match (text.is_empty(), rule) {
            (false, Some(rule)) => out.push_str(&format!(" (at `{text}`; {rule})")),
            (false, None) => out.push_str(&format!(" (at `{text}`)")),
            (true, Some(rule)) => out.push_str(&format!(" ({rule})")),
            (true, None) => {}
        }
    }
    out
}

fn level(v: Verdict) -> Level {
    match v {
        Verdict::Allow => Level::Info,
        Verdict::Ask => Level::Warning,
        Verdict::Deny => Level::Error,
    }
}

/// `start..end` made safe to put carets under in `text`: inside it, on char boundaries, and
/// one character wide at least when `text` is not empty.
pub fn caret_range(text: &str, start: usize, end: usize) -> std::ops::Range<usize> {
    let mut start = start.min(text.len());
    let mut end = end.min(text.len()).max(start);
    while start > 0 && !text.is_char_boundary(start) {
        start -= 1;
    }
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    if start == end && end < text.len() {
        end += text[end..].chars().next().map_or(0, char::len_utf8);
    }
    start..end
}
