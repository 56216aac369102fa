//! Walking the IR: every simple command anywhere, including inside nested scripts.

use super::ir::*;

impl Script {
    /// Every simple command in this script and in every script nested in it (function
    /// bodies, compound bodies, substitutions in any word, here-document bodies,
    /// arithmetic, parameter expansions). Each script's commands come in source order;
    /// a script nested in a command comes after all commands of the enclosing script.
    pub fn all_simple_commands(&self) -> Vec<&SimpleCommand> {
        let mut out = Vec::new();
        let mut stack: Vec<&Script> = vec![self];
        while let Some(script) = stack.pop() {
            let mut nested: Vec<&Script> = Vec::new();
            for cmd in &script.commands {
                collect_command(cmd, &mut out, &mut nested);
            }
            nested.reverse();
            stack.extend(nested);
        }
        out
    }

    /// Every word anywhere in this script's own commands (not inside nested scripts).
    pub fn words(&self) -> Vec<&Word> {
        let mut out = Vec::new();
        for cmd in &self.commands {
            command_words(cmd, &mut out);
        }
        out
    }
}

fn collect_command<'a>(
    cmd: &'a Command,
    out: &mut Vec<&'a SimpleCommand>,
    nested: &mut Vec<&'a Script>,
) {
    match cmd {
        Command::Simple(s) => out.push(s),
        Command::Compound(c) => nested.push(&c.body),
        Command::Function(f) => nested.push(&f.body),
    }
    let mut words = Vec::new();
    command_words(cmd, &mut words);
    for w in words {
        nested.extend(w.nested_scripts());
    }
}

fn arith_words<'a>(a: &'a Arithmetic, out: &mut Vec<&'a Word>) {
    out.extend(a.words.iter());
}

fn assignment_words<'a>(a: &'a Assignment, out: &mut Vec<&'a Word>) {
    out.extend(a.subscript.iter());
    out.extend(a.value.iter());
    out.extend(a.array.iter());
}

fn redirect_words<'a>(r: &'a Redirect, out: &mut Vec<&'a Word>) {
    out.push(&r.target);
    if let Some(h) = &r.heredoc {
        out.push(&h.body);
    }
}

/// The words a command itself expands (not those of commands in its body).
pub(crate) fn command_words<'a>(cmd: &'a Command, out: &mut Vec<&'a Word>) {
    match cmd {
        Command::Simple(s) => {
            s.assignments.iter().for_each(|a| assignment_words(a, out));
            out.extend(s.words.iter());
            s.redirects.iter().for_each(|r| redirect_words(r, out));
        }
        Command::Compound(c) => {
            out.extend(c.words.iter());
            c.arithmetic.iter().for_each(|a| arith_words(a, out));
            c.assignments.iter().for_each(|a| assignment_words(a, out));
            c.redirects.iter().for_each(|r| redirect_words(r, out));
        }
        Command::Function(f) => f.redirects.iter().for_each(|r| redirect_words(r, out)),
    }
}

impl Script {
    /// The structure of this script without its spans, one line per top-level command with
    /// its span: what each command is, how it is joined, its keywords, assignments, words
    /// (part by part, nested scripts inline) and redirections. Two readings of one command
    /// agree when their shapes are equal; the `paranoid` setting and the reader tests compare
    /// them.
    #[doc(hidden)]
    pub fn shape(&self) -> Vec<(Span, String)> {
        self.commands
            .iter()
            .map(|c| {
                let mut out = String::new();
                shape_command(c, &mut out);
                (c.span(), out)
            })
            .collect()
    }
}

fn shape_script(s: &Script, out: &mut String) {
    out.push('{');
    for c in &s.commands {
        super::with_stack(|| shape_command(c, out));
        out.push(' ');
    }
    out.push('}');
}

fn shape_command(c: &Command, out: &mut String) {
    use std::fmt::Write;
    match c {
        Command::Simple(s) => {
            let _ = write!(
                out,
                "simple[{:?} {:?} bg={} piped={}]",
                s.join, s.keywords, s.background, s.piped_input
            );
            s.assignments.iter().for_each(|a| shape_assignment(a, out));
            for w in &s.words {
                out.push(' ');
                shape_word(w, out);
            }
            s.redirects.iter().for_each(|r| shape_redirect(r, out));
        }
        Command::Compound(cc) => {
            let _ = write!(
                out,
                "{:?}[{:?} {:?} bg={}]",
                cc.kind, cc.join, cc.keywords, cc.background
            );
            cc.assignments.iter().for_each(|a| shape_assignment(a, out));
            for w in &cc.words {
                out.push(' ');
                shape_word(w, out);
            }
            for a in &cc.arithmetic {
                shape_arith(a, out);
            }
            for w in &cc.names {
                out.push_str(" name:");
                shape_word(w, out);
            }
            cc.redirects.iter().for_each(|r| shape_redirect(r, out));
            out.push(' ');
            shape_script(&cc.body, out);
        }
        Command::Function(f) => {
            let _ = write!(out, "function[{:?}] {}", f.join, f.name);
            f.redirects.iter().for_each(|r| shape_redirect(r, out));
            out.push(' ');
            shape_script(&f.body, out);
        }
    }
}

fn shape_assignment(a: &Assignment, out: &mut String) {
    out.push(' ');
    out.push_str(&a.name);
    if let Some(s) = &a.subscript {
        out.push('[');
        shape_word(s, out);
        out.push(']');
    }
    out.push_str(if a.append { "+=" } else { "=" });
    if let Some(v) = &a.value {
        shape_word(v, out);
    }
    if !a.array.is_empty() {
        out.push('(');
        for w in &a.array {
            shape_word(w, out);
            out.push(' ');
        }
        out.push(')');
    }
}

fn shape_redirect(r: &Redirect, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, " {:?}{:?}:", r.fd, r.op);
    shape_word(&r.target, out);
    if let Some(h) = &r.heredoc {
        let _ = write!(out, "<<quoted={}:", h.quoted);
        shape_word(&h.body, out);
    }
}

fn shape_arith(a: &Arithmetic, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, " arith[{:?} {:?}", a.variables, a.assigns);
    for w in &a.words {
        out.push(' ');
        shape_word(w, out);
    }
    out.push(']');
}

/// A word: its static value when it has one, else each part.
fn shape_word(w: &Word, out: &mut String) {
    match w.static_value() {
        Some(v) => {
            out.push_str(&format!("{v:?}"));
        }
        None => {
            out.push('<');
            for p in &w.parts {
                shape_part(p, out);
            }
            out.push('>');
        }
    }
}

fn shape_part(p: &WordPart, out: &mut String) {
    use std::fmt::Write;
    match p {
        WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
            let _ = write!(out, "{s:?}");
        }
        WordPart::DoubleQuoted(parts) => {
            out.push_str("dq(");
            parts.iter().for_each(|p| shape_part(p, out));
            out.push(')');
        }
        WordPart::Param(pe) => {
            let _ = write!(out, "param({} {:?} {}", pe.name, pe.operator, pe.indirect);
            if let Some(s) = &pe.subscript {
                out.push('[');
                shape_word(s, out);
                out.push(']');
            }
            for w in &pe.words {
                out.push(' ');
                shape_word(w, out);
            }
            pe.arithmetic.iter().for_each(|a| shape_arith(a, out));
            out.push(')');
        }
        WordPart::CommandSubst(s) => {
            out.push_str("cmd");
            shape_script(s, out);
        }
        WordPart::ProcessSubst { output, script } => {
            let _ = write!(out, "proc({output})");
            shape_script(script, out);
        }
        WordPart::Arithmetic(a) => shape_arith(a, out),
        WordPart::Glob(g) => {
            let _ = write!(out, "glob({g:?})");
        }
        WordPart::Brace(b) => {
            let _ = write!(out, "brace({b:?})");
        }
        WordPart::Tilde(t) => {
            let _ = write!(out, "tilde({t:?})");
        }
    }
}
