//! Which bash commands may change the workspace: all but a short list of programs that
//! only read, run with no redirection that writes a file. Anything not proven read-only
//! (an unknown program, a dynamic program name, a function, a write redirection, a
//! program that runs code, any parse failure) counts as a write, so the error is a
//! snapshot too many, never one too few.

use crate::shell::{self, Command, Script, SimpleCommand};

/// Programs that neither write files nor run other programs, whatever their options
/// (`find`, `sort` and the like can, so they are not here).
const READ_ONLY: &[&str] = &[
    "basename", "cat", "cd", "date", "df", "dirname", "du", "echo", "egrep", "false", "fgrep",
    "grep", "head", "id", "ls", "printf", "pwd", "readlink", "realpath", "sleep", "stat", "tail",
    "test", "[", "true", "type", "uname", "wc", "which", "whoami",
];

/// Whether `command` may change files: `false` only when every command it contains, nested
/// ones included, is a program that only reads (`ls`, `cat`, `grep`, `head`, `wc`, ...) whose name is static and no redirection in it
/// opens a file for writing (other than `/dev/null`).
pub fn may_write(command: &str) -> bool {
    match shell::parse(command) {
        Ok(script) => !script_read_only(&script),
        Err(_) => true,
    }
}

fn script_read_only(script: &Script) -> bool {
    script.commands.iter().all(command_read_only)
}

fn command_read_only(cmd: &Command) -> bool {
    let mut words = Vec::new();
    shell::command_words(cmd, &mut words);
    let nested_ok = words
        .iter()
        .all(|w| w.nested_scripts().into_iter().all(script_read_only));
    nested_ok
        && match cmd {
            Command::Simple(s) => simple_read_only(s),
            Command::Compound(c) => {
                c.redirects.iter().all(redirect_read_only) && script_read_only(&c.body)
            }
            // A function body runs later, under a name the next call may use.
            Command::Function(_) => false,
        }
}

fn simple_read_only(s: &SimpleCommand) -> bool {
    if !s.redirects.iter().all(redirect_read_only) {
        return false;
    }
    match s.program() {
        // A bare assignment changes the shell, not files.
        None => true,
        Some(w) => w
            .static_value()
            .is_some_and(|name| READ_ONLY.contains(&name.as_str())),
    }
}

fn redirect_read_only(r: &shell::Redirect) -> bool {
    !r.op.writes() || r.target.static_value().as_deref() == Some("/dev/null")
}

#[cfg(test)]
mod tests {
    use super::may_write;

    #[test]
    fn only_proven_readers_are_not_writes() {
        for cmd in [
            "ls -la",
            "cat a.txt | grep x | wc -l",
            "echo hi 2>/dev/null",
            "if test -f a; then cat a; fi",
            "echo $(cat a)",
            "X=1",
        ] {
            assert!(!may_write(cmd), "{cmd}");
        }
        for cmd in [
            ": > notes.txt",
            "echo x > a.txt",
            "cat a >> b",
            "rm -rf src",
            "git checkout -- .",
            "sed -i d a.txt",
            "python3 wipe.py",
            "echo $(rm x)",
            "cat <(touch y)",
            "{ ls; } > out",
            "f() { ls; }",
            "$X a",
            "ls; rm a",
            "find . -delete",
            "echo 'unterminated",
            "ls &> out",
            "cat a 1<> b",
        ] {
            assert!(may_write(cmd), "{cmd}");
        }
    }
}
