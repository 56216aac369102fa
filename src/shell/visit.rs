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
