//! Reading the environment: expanding a variable the command did not set, or running a
//! program that prints the environment, against `[env] read`.
//!
//! In hook mode the agent's shell inherits the user's environment, API keys and cloud
//! credentials included, and nothing redacts what the agent sees there. So an expansion of a
//! name the command did not assign itself earlier (in the order bash runs it) is a read of the
//! environment: `read_deny` refuses it (credential-looking names, in any case), `read` allows
//! it, and `read_default` decides the rest. bash's own variables are never reads. The ways to
//! print the environment whole are refused the same way (`env`, `printenv`, `declare -p`,
//! `export -p`, `set`, `compgen -v`, `${!prefix*}`, jq's `env`/`$ENV`, `/proc/*/environ`);
//! one that names a variable (`printenv HOME`, `jq -n '$ENV.HOME'`) reads that variable.

use std::path::Path;

use super::{Eval, Resolved};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{Param, Span, Word};

/// Variables bash sets itself (bash(1) "Shell Variables"), whatever the environment held:
/// their values are the shell's state, not the user's secrets.
const SHELL_VARIABLES: &[&str] = &[
    "BASH",
    "BASHOPTS",
    "BASHPID",
    "BASH_ALIASES",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_CMDS",
    "BASH_COMMAND",
    "BASH_LINENO",
    "BASH_REMATCH",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "DIRSTACK",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "HISTCMD",
    "HOSTTYPE",
    "IFS",
    "LINENO",
    "MACHTYPE",
    "OPTARG",
    "OPTIND",
    "OSTYPE",
    "PIPESTATUS",
    "PPID",
    "RANDOM",
    "REPLY",
    "SECONDS",
    "SHELLOPTS",
    "SRANDOM",
    "UID",
];

/// What the walk knows of the names the command assigns itself.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Names the command has assigned so far, in the order bash runs it.
    pub(super) assigned: Vec<String>,
}

/// Whether `name` is a special parameter (`$?`, `$#`, `$@`, `$1`, ...).
fn is_special(name: &str) -> bool {
    matches!(name, "?" | "#" | "@" | "*" | "$" | "!" | "-")
        || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()))
}

/// What a jq program reads of the environment.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum JqEnv {
    /// `env.NAME` or `$ENV.NAME`.
    Name(String),
    /// `env` or `$ENV` used whole (`jq -n env`, `$ENV | keys`, `env[$k]`).
    All,
}

/// The environment reads of a jq program: the builtin `env` (not a field `.env` nor a
/// variable `$env`) and the variable `$ENV`, anywhere in the text (strings and comments too,
/// which only refuses more).
pub(super) fn jq_env_reads(program: &str) -> Vec<JqEnv> {
    let b = program.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &program[start..i];
        let before = start.checked_sub(1).map(|j| b[j]);
        let reads = match (word, before) {
            ("env", Some(b'.' | b'$')) => false,
            ("env", _) => true,
            ("ENV", Some(b'$')) => true,
            _ => false,
        };
        if !reads {
            continue;
        }
        // `.NAME` right after it names one variable.
        let mut j = i;
        if b.get(j) == Some(&b'.') {
            j += 1;
            let s = j;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            if j > s && !b[s].is_ascii_digit() {
                out.push(JqEnv::Name(program[s..j].to_string()));
                i = j;
                continue;
            }
        }
        out.push(JqEnv::All);
    }
    out
}

/// `/proc/PID/environ`, `/proc/self/task/TID/environ`, and globs that may match one.
fn is_environ_file(resolved: &Resolved) -> bool {
    match resolved {
        Resolved::Exact(p) => {
            p.starts_with("/proc") && p.file_name().is_some_and(|f| f == "environ")
        }
        Resolved::Glob { base, components } => {
            let under_proc = base.starts_with("/proc") || base == Path::new("/");
            let last = components.last().map_or("", String::as_str);
            under_proc && (last == "environ" || last.contains(['*', '?', '[']))
        }
        _ => false,
    }
}

impl Eval<'_> {
    /// The command assigns `name` here (called for every assignment, wherever it is).
    pub(super) fn record_assignment(&mut self, name: &str) {
        self.env_reads.assigned.push(name.to_string());
    }

    /// Names assigned from `mark` on are forgotten: prefix assignments of a command
    /// (`X=1 cmd`) set the program's environment, not the shell's, and its words are
    /// expanded before them.
    pub(super) fn assigned_mark(&self) -> usize {
        self.env_reads.assigned.len()
    }

    pub(super) fn forget_assigned(&mut self, mark: usize) {
        self.env_reads.assigned.truncate(mark);
    }

    /// An expansion of variable `name` (not assigned by the command): a read of the
    /// environment, checked against `[env] read`.
    pub(super) fn env_read(&mut self, name: &str, span: Span) {
        if is_special(name) || SHELL_VARIABLES.contains(&name) {
            return;
        }
        if self.env_reads.assigned.iter().any(|n| n == name) {
            return;
        }
        // The code execution tool's output directory: set by the executor, not inherited.
        if name == "OUTPUT_DIR" && self.ctx.output_dir.is_some() {
            return;
        }
        let env = &*self.policy.env.read;
        let upper = name.to_ascii_uppercase();
        let message = |what: &str| {
            let mut m = format!("expanding `{name}`, which the command did not set, {what}: the environment holds credentials");
            if let Some(extra) = &env.message {
                m.push_str(": ");
                m.push_str(extra);
            }
            m
        };
        if let Some(p) = env
            .deny
            .iter()
            .find(|p| p.glob.is_match(name) || p.glob.is_match(&upper))
        {
            let (m, r) = (message("is denied"), p.rule.clone());
            self.reason(ReasonCode::EnvRead, Verdict::Deny, Some(&r), m, span);
        } else if !env.allow.iter().any(|p| p.glob.is_match(name)) {
            let (m, s) = (message("is not in `[env] read`"), env.default.clone());
            self.setting(ReasonCode::EnvRead, &s, m, span);
        }
    }

    /// A parameter expansion, before anything it assigns (`${X:=v}` reads X first).
    pub(super) fn param_reads(&mut self, p: &Param) {
        if matches!(p.operator.as_deref(), Some("!*" | "!@")) {
            self.env_dump(
                &format!("`${{!{}*}}` lists the names of variables", p.name),
                p.span,
            );
            return;
        }
        self.env_read(&p.name, p.span);
    }

    /// Something that prints the environment, whole or a large part of it.
    fn env_dump(&mut self, what: &str, span: Span) {
        let env = &*self.policy.env.read;
        let mut m = format!("{what}: the environment holds credentials");
        if let Some(extra) = &env.message {
            m.push_str(": ");
            m.push_str(extra);
        }
        // Every name is read: only a policy whose default allows every read lets it through.
        let verdict = if env.deny.is_empty() {
            env.default.verdict
        } else {
            Verdict::Deny
        };
        let rule = env.default.rule.clone();
        self.reason(ReasonCode::EnvRead, verdict, Some(&rule), m, span);
    }

    /// A path that is the environment of a process.
    pub(super) fn environ_path(&mut self, resolved: &Resolved, span: Span) {
        if is_environ_file(resolved) {
            self.env_dump("`/proc/*/environ` is the environment of a process", span);
        }
    }

    /// A jq program's `env` and `$ENV`.
    pub(super) fn jq_env(&mut self, program: &str, span: Span) {
        for r in jq_env_reads(program) {
            match r {
                JqEnv::Name(n) => self.env_read(&n, span),
                JqEnv::All => self.env_dump("jq's `env` / `$ENV` is the whole environment", span),
            }
        }
    }

    /// Programs and builtins that print the environment (`env`, `printenv`, `declare -p`,
    /// `export -p`, `set`, `compgen -v`): `words` is the program and its arguments.
    pub(super) fn env_dumps(&mut self, name: &str, words: &[Word]) {
        let args = &words[1..];
        let texts: Vec<Option<String>> = args.iter().map(Word::static_value).collect();
        let span = words[0].span;
        let is_opt = |t: &Option<String>| {
            t.as_deref()
                .is_some_and(|t| t.starts_with('-') && t.len() > 1)
        };
        match name {
            "printenv" => {
                let names: Vec<(usize, &Option<String>)> = texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| !is_opt(t))
                    .collect();
                if names.is_empty() {
                    self.env_dump("`printenv` prints the whole environment", span);
                }
                for (i, t) in names {
                    match t {
                        Some(n) => self.env_read(n, args[i].span),
                        None => self
                            .env_dump("`printenv` of a name only known at run time", args[i].span),
                    }
                }
            }
            "env" => {
                // `env [-i] [-u NAME] [NAME=VALUE]... [COMMAND]`: without a command it prints.
                let mut i = 0;
                let mut cleared = false;
                while let Some(t) = texts.get(i) {
                    match t.as_deref() {
                        Some("-i" | "-" | "--ignore-environment") => cleared = true,
                        Some("-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string") => {
                            i += 1
                        }
                        Some(t) if t.starts_with('-') || t.contains('=') => {}
                        _ => break,
                    }
                    i += 1;
                }
                if i >= texts.len() && !cleared {
                    self.env_dump("`env` without a command prints the whole environment", span);
                }
            }
            "declare" | "typeset" | "export" | "readonly" | "local" => {
                let operands: Vec<(usize, &Option<String>)> = texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| {
                        !t.as_deref().is_some_and(|t| {
                            (t.starts_with('-') || t.starts_with('+')) && t.len() > 1
                        })
                    })
                    .collect();
                let functions = texts.iter().any(|t| {
                    t.as_deref()
                        .is_some_and(|t| t.starts_with('-') && (t.contains('f') || t.contains('F')))
                });
                let prints = texts.iter().any(|t| {
                    t.as_deref()
                        .is_some_and(|t| t.starts_with('-') && t.contains('p'))
                });
                if functions {
                    return;
                }
                if operands.is_empty() {
                    self.env_dump(
                        &format!("`{name}` without names prints variables and their values"),
                        span,
                    );
                } else if prints {
                    for (i, t) in operands {
                        match t {
                            Some(n) if !n.contains('=') => self.env_read(n, args[i].span),
                            _ => {}
                        }
                    }
                }
            }
            "set" if args.is_empty() => {
                self.env_dump("`set` without arguments prints every variable", span)
            }
            "compgen" => {
                let lists = texts.windows(2).any(|w| {
                    w[0].as_deref() == Some("-A")
                        && matches!(w[1].as_deref(), Some("variable" | "export") | None)
                }) || texts.iter().any(|t| {
                    t.as_deref().is_some_and(|t| {
                        t.starts_with('-')
                            && !t.starts_with("--")
                            && (t.contains('v') || t.contains('e'))
                    })
                });
                if lists {
                    self.env_dump("`compgen -v` / `-e` lists the names of variables", span);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jq_env_reads_find_the_builtin_and_the_variable() {
        assert_eq!(jq_env_reads("env"), vec![JqEnv::All]);
        assert_eq!(jq_env_reads("$ENV | keys"), vec![JqEnv::All]);
        assert_eq!(jq_env_reads("$ENV.HOME"), vec![JqEnv::Name("HOME".into())]);
        assert_eq!(
            jq_env_reads("env.AWS_KEY"),
            vec![JqEnv::Name("AWS_KEY".into())]
        );
        assert_eq!(jq_env_reads("env[\"X\"]"), vec![JqEnv::All]);
        assert!(jq_env_reads(".env.HOME, $env, .environment, .name").is_empty());
    }

    #[test]
    fn environ_files() {
        let exact = |p: &str| Resolved::Exact(p.into());
        assert!(is_environ_file(&exact("/proc/self/environ")));
        assert!(is_environ_file(&exact("/proc/1/task/1/environ")));
        assert!(!is_environ_file(&exact("/workspace/environ")));
        let glob = Resolved::Glob {
            base: "/proc/self".into(),
            components: vec!["env*".into()],
        };
        assert!(is_environ_file(&glob));
    }
}
