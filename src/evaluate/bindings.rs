//! Loop variables whose values are known: in `for f in ./src/*.rs; do wc -l "$f"; done`,
//! `"$f"` is one of the list's words, so the body is checked once per list word with `"$f"`
//! replaced by it, instead of as a value known only at run time.
//!
//! The rule, proven against bash in the tests: a `for` loop's variable takes each word of its
//! list after expansion. When every list word is static, a brace expansion of static words, or
//! a glob (each match one value), and nothing in the body can assign the variable, then
//! - `"$f"` (quoted, alone or inside a larger quoted word) is exactly one of those values:
//!   the list word is put in its place (a glob stays a glob, so it is checked as every file it
//!   may match, which is at least as strict as one of them);
//! - an unquoted `$f` is replaced only when the list word is static and bash would not split or
//!   glob its value (a file name matched by a glob may hold spaces, and unquoted it splits).
//!
//! Anything else about the variable stays a run-time value, as before.

use crate::shell::{
    is_plain, Arithmetic, Command, CompoundKind, Known, Script, SimpleCommand, Word, WordPart,
};

use super::braces;

/// The most list words a binding holds, and the most variants of one command it makes.
const MAX_VARIANTS: usize = 64;

/// A loop variable and the words it stands for.
#[derive(Debug, Clone)]
pub(super) struct Binding {
    pub name: String,
    pub values: Vec<Word>,
}

/// The binding a `for` loop makes, if its values are known and its body cannot change them.
pub(super) fn of_for_loop(c: &crate::shell::Compound) -> Option<Binding> {
    if c.kind != CompoundKind::For {
        return None;
    }
    let [var] = c.assignments.as_slice() else {
        return None;
    };
    let mut values = Vec::new();
    for w in &c.words {
        for w in braces::expand(w).unwrap_or_else(|| vec![w.clone()]) {
            let known = w.static_value().is_some()
                || (w.glob_pattern().is_some()
                    && !w.parts.iter().any(|p| matches!(p, WordPart::Brace(_))));
            if !known {
                return None;
            }
            values.push(w);
        }
    }
    if values.is_empty() || values.len() > MAX_VARIANTS || may_assign(&c.body, &var.name) {
        return None;
    }
    Some(Binding {
        name: var.name.clone(),
        values,
    })
}

/// Builtins that can assign a variable named by their arguments (or run code that does).
const ASSIGNING: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "printf",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "getopts",
    "let",
    "unset",
    "eval",
    "source",
    ".",
    "builtin",
    "command",
    "exec",
    "coproc",
];

/// Whether anything in `script` may assign `name` in the loop's own shell (conservative: any
/// assigning builtin at all counts; subshells and substitutions cannot assign it, but they are
/// not told apart here).
pub(super) fn may_assign(script: &Script, name: &str) -> bool {
    script.commands.iter().any(|c| command_may_assign(c, name))
}

fn command_may_assign(cmd: &Command, name: &str) -> bool {
    match cmd {
        Command::Simple(s) => {
            s.assignments.iter().any(|a| a.name == name)
                || s.words.first().is_some_and(|w| match w.static_value() {
                    Some(p) => ASSIGNING.contains(&p.as_str()),
                    None => true,
                })
                || s.words.iter().any(|w| word_may_assign(w, name))
        }
        Command::Compound(c) => {
            c.assignments.iter().any(|a| a.name == name)
                || c.arithmetic.iter().any(|a| arith_assigns(a, name))
                || c.words.iter().any(|w| word_may_assign(w, name))
                || may_assign(&c.body, name)
        }
        // A function defined in the body could assign it when it is called.
        Command::Function(_) => true,
    }
}

fn arith_assigns(a: &Arithmetic, name: &str) -> bool {
    a.assigns.iter().any(|n| n == name) || a.words.iter().any(|w| word_may_assign(w, name))
}

fn word_may_assign(w: &Word, name: &str) -> bool {
    fn part(p: &WordPart, name: &str) -> bool {
        match p {
            WordPart::DoubleQuoted(parts) => parts.iter().any(|p| part(p, name)),
            WordPart::Param(p) => {
                (p.name == name && p.assigns())
                    || p.words.iter().any(|w| word_may_assign(w, name))
                    || p.arithmetic.iter().any(|a| arith_assigns(a, name))
            }
            WordPart::Arithmetic(a) => arith_assigns(a, name),
            _ => false,
        }
    }
    w.parts.iter().any(|p| part(p, name))
}

/// The variants of `cmd` with references to bound variables replaced by their values, or
/// `None` when it references none (or would make too many variants).
pub(super) fn variants(cmd: &SimpleCommand, bindings: &[Binding]) -> Option<Vec<SimpleCommand>> {
    // Outside every loop (most commands) there is nothing to put in, and nothing to copy.
    if bindings.is_empty() {
        return None;
    }
    let mut out = vec![cmd.clone()];
    let mut any = false;
    // The innermost loop's binding of a name hides outer ones.
    let mut seen: Vec<&str> = Vec::new();
    for b in bindings.iter().rev() {
        if seen.contains(&b.name.as_str()) {
            continue;
        }
        seen.push(&b.name);
        if !references(cmd, &b.name) {
            continue;
        }
        if out.len() * b.values.len() > MAX_VARIANTS {
            return None;
        }
        any = true;
        let mut next = Vec::with_capacity(out.len() * b.values.len());
        for c in &out {
            for v in &b.values {
                next.push(substitute(c, &b.name, v));
            }
        }
        out = next;
    }
    any.then_some(out)
}

fn references(cmd: &SimpleCommand, name: &str) -> bool {
    let word_refs = |w: &Word| {
        w.parts.iter().any(|p| match p {
            WordPart::Param(p) => is_plain(p, name),
            WordPart::DoubleQuoted(inner) => inner
                .iter()
                .any(|p| matches!(p, WordPart::Param(p) if is_plain(p, name))),
            _ => false,
        })
    };
    cmd.words.iter().any(word_refs) || cmd.redirects.iter().any(|r| word_refs(&r.target))
}

fn substitute(cmd: &SimpleCommand, name: &str, value: &Word) -> SimpleCommand {
    let mut c = cmd.clone();
    for w in &mut c.words {
        *w = substitute_word(w, name, value);
    }
    for r in &mut c.redirects {
        r.target = substitute_word(&r.target, name, value);
    }
    c
}

fn substitute_word(w: &Word, name: &str, value: &Word) -> Word {
    let static_value = value.static_value();
    let is_ref = |p: &WordPart| matches!(p, WordPart::Param(p) if is_plain(p, name));
    // `"$f"` alone: the list word itself, in the reference's place.
    if let [WordPart::DoubleQuoted(inner)] = w.parts.as_slice() {
        if let [p] = inner.as_slice() {
            if is_ref(p) {
                return Word {
                    span: w.span,
                    parts: value.parts.clone(),
                };
            }
        }
    }
    // Elsewhere only a static value can be put in, as literal text; unquoted, only one that
    // bash would neither split nor glob.
    let Some(text) = static_value else {
        return w.clone();
    };
    let unquoted_ok = !Known::value_splits(&text) && !text.is_empty();
    let parts = w
        .parts
        .iter()
        .map(|p| match p {
            WordPart::Param(_) if is_ref(p) && unquoted_ok => WordPart::Literal(text.clone()),
            WordPart::DoubleQuoted(inner) => WordPart::DoubleQuoted(
                inner
                    .iter()
                    .map(|q| {
                        if is_ref(q) {
                            WordPart::Literal(text.clone())
                        } else {
                            q.clone()
                        }
                    })
                    .collect(),
            ),
            other => other.clone(),
        })
        .collect();
    Word {
        span: w.span,
        parts,
    }
}
