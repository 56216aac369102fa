//! A program rule written again in a policy that includes another: it extends the included
//! rule rather than replacing it, so an include cannot silently drop a denial (a
//! `[programs.sort]` table in a policy that includes `read-only` used to make `sort -o x y`
//! allowed). Denials, refused kinds, value patterns and argument rules are kept; allow lists
//! are merged; the stricter of two verdicts wins. `replace = true` starts the rule over, and
//! the denials it drops are recorded for `lint-replaced-rule`.

use super::programs::RawProgram;
use crate::policy::compiled::{ArgKind, ProgramRule};
use crate::policy::Verdict;

/// `old` (from an included policy) extended by `new` (written in `raw`).
pub(super) fn extend(old: ProgramRule, new: ProgramRule, raw: &RawProgram) -> ProgramRule {
    let (mut old, new) = (old.into_spec(), new.into_spec());
    old.verdict = old.verdict.max(new.verdict);
    if new.message.is_some() {
        old.message = new.message;
    }
    if new.options_message.is_some() {
        old.options_message = new.options_message;
    }
    old.option_table |= new.option_table;
    for (k, v) in new.option_messages {
        old.option_messages.insert(k, v);
    }
    // Where it was first written stays its location; this policy's table extends it.
    old.rule.name = new.rule.name;
    old.rule.extended_by.extend(new.rule.extended_by);
    old.rule.extended_by.push(new.rule.location);
    old.single_dash_long |= new.single_dash_long;
    old.options_before_operands |= new.options_before_operands;
    // Looser switches hold only when both rules say so.
    old.harmless_options &= new.harmless_options;
    old.options_complete &= new.options_complete;
    old.opens_for_writing &= new.opens_for_writing;
    old.runs_workspace_code |= new.runs_workspace_code;
    old.options_with_value.extend(new.options_with_value);
    old.options_with_optional_value
        .extend(new.options_with_optional_value);
    old.options_with_two_values
        .extend(new.options_with_two_values);
    old.write_options.extend(new.write_options);
    old.old_style_options |= new.old_style_options;
    old.glued_options.extend(new.glued_options);
    old.target_directory |= new.target_directory;
    old.value_write_options.extend(new.value_write_options);
    old.terminal_options.extend(new.terminal_options);
    old.delegate_options.extend(new.delegate_options);
    old.flags.extend(new.flags);
    old.pattern_options.extend(new.pattern_options);
    // "At least one of": more alternatives would loosen it; the included list stands.
    if old.required_options.is_empty() {
        old.required_options = new.required_options;
    }
    old.allow_options = match (old.allow_options.take(), new.allow_options) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, b) => a.or(b),
    };
    old.deny_options.extend(new.deny_options);
    old.ask_options.extend(new.ask_options);
    let denied = old.deny_options.clone();
    old.ask_options.retain(|o| !denied.contains(o));
    // The included kinds win: a value typed `program` stays refused.
    for (k, v) in new.option_kinds {
        old.option_kinds.entry(k).or_insert(v);
    }
    for (k, v) in new.option_values {
        old.option_values.entry(k).or_insert(v);
    }
    // The operand kinds are the included rule's checks (a `sed-script` operand is what
    // refuses `sed 1e`): the loader refuses a redefinition that changes them without
    // `replace = true` (see `operands_conflict`).
    old.min_operands = old.min_operands.max(new.min_operands);
    if new.implicit_operand.is_some() {
        old.implicit_operand = new.implicit_operand;
        old.implicit_operand_options = new.implicit_operand_options;
    }
    old.extra_operands = old.extra_operands.max(new.extra_operands);
    old.unknown_subcommand = old.unknown_subcommand.max(new.unknown_subcommand);
    old.args.extend(new.args);
    old.repositories.extend(new.repositories);
    if new.no_option_allowlist.is_some() {
        old.no_option_allowlist = new.no_option_allowlist;
    }
    let mut subs = std::mem::take(&mut old.subcommands);
    for (name, sub) in new.subcommands {
        let merged = match (subs.remove(&name), raw.subcommands.get(&name)) {
            (Some(o), Some(r)) if !r.replace => extend(o, sub, r),
            (Some(o), _) => replaced(o, sub),
            (None, _) => sub,
        };
        subs.insert(name, merged);
    }
    old.subcommands = subs;
    old.after_double_dash = match (old.after_double_dash.take(), new.after_double_dash) {
        (Some(o), Some(n)) => match &raw.after_double_dash {
            Some(r) if !r.replace => Some(Box::new(extend(*o, *n, r))),
            _ => Some(Box::new(replaced(*o, *n))),
        },
        (o, n) => n.or(o),
    };
    ProgramRule::new(old)
}

/// Where an extension (no `replace = true`) would change the included rule's operand kinds:
/// the name of the first rule (program or subcommand) that does.
pub(super) fn operands_conflict(
    old: &ProgramRule,
    new: &ProgramRule,
    raw: &RawProgram,
) -> Option<String> {
    if raw.operands.is_some() && old.operands != new.operands {
        return Some(new.name.clone());
    }
    for (name, sub) in &new.subcommands {
        if let (Some(o), Some(r)) = (old.subcommands.get(name), raw.subcommands.get(name)) {
            if !r.replace {
                if let Some(n) = operands_conflict(o, sub, r) {
                    return Some(n);
                }
            }
        }
    }
    None
}

/// `new` in place of `old` (`replace = true`), with the denials of `old` it drops recorded.
pub(super) fn replaced(old: ProgramRule, mut new: ProgramRule) -> ProgramRule {
    let dropped = dropped(&old, &new);
    new.edit(|new| new.replaced = dropped);
    new
}

/// What `old` refuses or asks for that `new` neither refuses nor checks another way.
fn dropped(old: &ProgramRule, new: &ProgramRule) -> Vec<String> {
    let mut out = Vec::new();
    if old.verdict > new.verdict {
        out.push(format!("its verdict `{}`", old.verdict));
    }
    let checked = |o: &str| {
        crate::policy::lint::covers(new, o)
            || matches!(
                new.option_kinds.get(o),
                Some(ArgKind::Variable | ArgKind::Assignment)
            )
    };
    for o in old.deny_options.iter().chain(&old.ask_options) {
        if !checked(o) {
            out.push(format!("option `{o}`"));
        }
    }
    for (o, k) in &old.option_kinds {
        let refused = matches!(
            k,
            ArgKind::Program | ArgKind::PathList | ArgKind::ModulePath
        );
        if refused && new.option_kinds.get(o) != Some(k) && !new.deny_options.contains(o) {
            out.push(format!("the `{o}` value check"));
        }
    }
    for a in &old.args {
        let kept = new.args.iter().any(|b| {
            b.pattern.as_str() == a.pattern.as_str()
                && b.verdict >= a.verdict
                && b.unless_options.is_subset(&a.unless_options)
                && b.min_operands <= a.min_operands
        });
        if a.verdict != Verdict::Allow && !kept {
            out.push(format!("argument rule `{}`", a.pattern.as_str()));
        }
    }
    for (name, sub) in &old.subcommands {
        match new.subcommands.get(name) {
            Some(n) => out.extend(
                dropped(sub, n)
                    .into_iter()
                    .map(|d| format!("`{name}`: {d}")),
            ),
            // Left out, it falls to `unknown_subcommand`: dropped only if that allows it.
            None if new.unknown_subcommand == Verdict::Allow => {
                out.push(format!("subcommand `{name}`"));
            }
            None => {}
        }
    }
    out
}
