//! Programs that run other programs, and how to find the program they run.
//!
//! A wrapper is never waved through: either shellgate knows its syntax, unwraps it and checks
//! the payload like any other command, or the wrapper is refused.

use super::{Span, Word};

/// Wrappers shellgate can unwrap (they may be listed under `[wrappers]` in a policy).
/// `find` is special: it is an ordinary program whose `-exec`/`-ok` primaries are unwrapped.
pub(crate) const UNWRAPPABLE: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "eval", "env", "timeout", "nice", "nohup", "stdbuf",
    "time", "command", "builtin", "sudo", "xargs", "find",
];

/// Programs known to run another program given on their command line. Those not in
/// [`UNWRAPPABLE`] are always refused.
const WRAPPERS: &[&str] = &[
    "bash",
    "sh",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "eval",
    "env",
    "timeout",
    "nice",
    "nohup",
    "stdbuf",
    "time",
    "command",
    "builtin",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "xargs",
    "exec",
    "watch",
    "parallel",
    "flock",
    "setsid",
    "chroot",
    "ionice",
    "chrt",
    "taskset",
    "strace",
    "ltrace",
    "unbuffer",
    "script",
    "nsenter",
    "unshare",
    "firejail",
    "bwrap",
    "systemd-run",
    "dbus-launch",
    "xvfb-run",
    "chronic",
    "ts",
    "catchsegv",
    "valgrind",
    "gdb",
    "lldb",
    "perf",
    "expect",
    "nix-shell",
    "sg",
    "newgrp",
    "setpriv",
    "prlimit",
    "cgexec",
    "numactl",
    "rlwrap",
    "winpty",
    "faketime",
    "proxychains",
    "torsocks",
    "tsocks",
    "npx",
    "bunx",
    "pnpx",
    "uvx",
    "pipx",
    "start-stop-daemon",
    "daemonize",
    "at",
    "batch",
    "crontab",
    "ssh",
];

/// Whether `name` is a program that runs another program from its arguments.
pub(crate) fn is_wrapper(name: &str) -> bool {
    WRAPPERS.contains(&name)
}

/// Whether shellgate knows how to unwrap `name`.
pub(crate) fn is_unwrappable(name: &str) -> bool {
    UNWRAPPABLE.contains(&name)
}

/// Shell builtins that change the state of the persistent session (what later commands
/// mean), refused unless a policy names them.
pub(crate) const SESSION_STATE: &[&str] = &[
    "alias",
    "unalias",
    "hash",
    "enable",
    "trap",
    "set",
    "shopt",
    "source",
    ".",
    "exec",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "cd",
    "pushd",
    "popd",
    "umask",
    "ulimit",
    "bind",
    "complete",
    "compopt",
    "history",
    "fc",
    "let",
    "getopts",
    "shift",
    "disown",
    "jobs",
    "fg",
    "bg",
    "kill",
    "wait",
    "suspend",
    "logout",
    "exit",
    "return",
    "times",
    "caller",
    "dirs",
    "coproc",
];

/// What a wrapper's arguments mean.
#[derive(Debug)]
pub(crate) enum Unwrapped<'a> {
    /// The payload is this command (program and arguments), with extra dynamic arguments
    /// appended by the wrapper at run time (`xargs`).
    Command {
        /// The payload's words.
        words: &'a [Word],
        /// Variable assignments the wrapper makes for the payload (`env NAME=value`).
        assignments: Vec<&'a Word>,
        /// Whether the wrapper appends arguments it reads at run time.
        appends_dynamic: bool,
    },
    /// The payload is shell source text, to parse and check as a script.
    Source {
        /// The text.
        text: String,
        /// Where it came from.
        span: Span,
        /// When the text is exactly the content of one word, its offset in the input.
        offset: Option<usize>,
    },
    /// The wrapper runs nothing else (`env` alone prints the environment, `command -v ls`).
    Nothing,
    /// The wrapper is used in a way that cannot be checked.
    Refuse {
        /// Why.
        message: String,
        /// Where.
        span: Span,
    },
}

/// Options of a simple wrapper: which take a value, and which are refused outright.
struct Spec {
    /// Options without a value; any option not in `flags` or `with_value` is refused.
    flags: &'static [&'static str],
    with_value: &'static [&'static str],
    refuse: &'static [&'static str],
    /// Operands to skip before the payload (`timeout DURATION cmd`).
    leading_operands: usize,
}

fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        // GNU time's -o/--output writes a file and -a appends to it: refused.
        "time" => Spec {
            flags: &["-p", "--portability", "-v", "--verbose", "-q", "--quiet"],
            with_value: &["-f", "--format"],
            refuse: &["-o", "--output", "-a", "--append"],
            leading_operands: 0,
        },
        "nice" => Spec {
            flags: &[],
            with_value: &["-n", "--adjustment"],
            refuse: &[],
            leading_operands: 0,
        },
        "nohup" => Spec {
            flags: &[],
            with_value: &[],
            refuse: &[],
            leading_operands: 0,
        },
        "timeout" => Spec {
            // `-p` and `-f` are the short forms newer coreutils (9.5) gave these flags.
            flags: &[
                "--preserve-status",
                "-p",
                "--foreground",
                "-f",
                "-v",
                "--verbose",
            ],
            with_value: &["-s", "--signal", "-k", "--kill-after"],
            refuse: &[],
            leading_operands: 1,
        },
        "stdbuf" => Spec {
            flags: &[],
            with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
            refuse: &[],
            leading_operands: 0,
        },
        "builtin" => Spec {
            flags: &[],
            with_value: &[],
            refuse: &[],
            leading_operands: 0,
        },
        "sudo" => Spec {
            flags: &[
                "-n",
                "--non-interactive",
                "-H",
                "--set-home",
                "-k",
                "--reset-timestamp",
                "-S",
                "--stdin",
                "-b",
                "--background",
                "-P",
                "--preserve-groups",
            ],
            with_value: &[
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-C",
                "--close-from",
                "-T",
                "--command-timeout",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-D",
                "--chdir",
            ],
            refuse: &[
                "-s",
                "--shell",
                "-i",
                "--login",
                "-e",
                "--edit",
                "-l",
                "--list",
                "-E",
                "--preserve-env",
                "-D",
                "--chdir",
                "-R",
                "--chroot",
            ],
            leading_operands: 0,
        },
        "xargs" => Spec {
            flags: &[
                "-0",
                "--null",
                "-r",
                "--no-run-if-empty",
                "-t",
                "--verbose",
                "-x",
                "--exit",
                "-p",
                "--interactive",
            ],
            with_value: &[
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-e",
                "--eof",
                "-I",
                "-i",
                "--replace",
                "-L",
                "-l",
                "--max-lines",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            ],
            refuse: &["-a", "--arg-file", "--process-slot-var", "-o", "--open-tty"],
            leading_operands: 0,
        },
        _ => return None,
    })
}

/// Find the payload of wrapper `name` given its argument words (after the name).
pub(crate) fn unwrap<'a>(name: &str, args: &'a [Word], whole: Span) -> Unwrapped<'a> {
    match name {
        "bash" | "sh" | "dash" | "zsh" | "ksh" => shell(args, whole),
        "eval" => eval(args, whole),
        "env" => env(args),
        "command" => command(args, whole),
        _ => match spec(name) {
            Some(s) => simple(name, &s, args, whole),
            None => Unwrapped::Refuse {
                message: format!("`{name}` cannot be unwrapped"),
                span: whole,
            },
        },
    }
}

fn refuse(message: impl Into<String>, span: Span) -> Unwrapped<'static> {
    Unwrapped::Refuse {
        message: message.into(),
        span,
    }
}

fn simple<'a>(name: &str, spec: &Spec, args: &'a [Word], whole: Span) -> Unwrapped<'a> {
    let mut i = 0;
    while i < args.len() {
        let Some(s) = args[i].static_value() else {
            return refuse(
                format!("`{name}` has an argument whose value is not known"),
                args[i].span,
            );
        };
        if s == "--" {
            i += 1;
            break;
        }
        if !s.starts_with('-') || s == "-" {
            break;
        }
        let (opt, glued) = match s.split_once('=') {
            Some((o, _)) if o.starts_with("--") => (o.to_string(), true),
            _ if !s.starts_with("--") && s.chars().count() > 2 => {
                (s.chars().take(2).collect::<String>(), true)
            }
            _ => (s.clone(), false),
        };
        if spec.refuse.contains(&opt.as_str()) {
            return refuse(format!("`{name} {opt}` cannot be checked"), args[i].span);
        }
        if name == "nice" && s[1..].chars().all(|c| c.is_ascii_digit()) {
            i += 1;
            continue;
        }
        // An option shellgate does not know could take the payload as its value or change
        // what the wrapper does (GNU `time -o FILE` writes a file): refuse it.
        let known = spec.with_value.contains(&opt.as_str())
            || spec.flags.contains(&s.as_str())
            || (!s.starts_with("--")
                && s[1..]
                    .chars()
                    .all(|c| spec.flags.contains(&format!("-{c}").as_str())));
        if !known {
            return refuse(
                format!("`{name} {s}` is an option shellgate does not know"),
                args[i].span,
            );
        }
        if spec.with_value.contains(&opt.as_str()) && !glued {
            // The value is skipped, so it must be one word: `timeout -k 1$IFS5$IFS-- rm 5 ls`
            // runs `rm`, where a value read as one word would leave `ls` as the command.
            i += 1;
            if let Some(refused) = skipped(name, args.get(i)) {
                return refused;
            }
        }
        i += 1;
    }
    // Leading operands (`timeout DURATION`) are skipped too.
    for k in 0..spec.leading_operands {
        if let Some(refused) = skipped(name, args.get(i + k)) {
            return refused;
        }
    }
    i += spec.leading_operands;
    let words = args.get(i..).unwrap_or(&[]);
    if words.is_empty() {
        if name == "xargs" {
            // xargs with no command runs `echo` with what it reads.
            return Unwrapped::Nothing;
        }
        return refuse(
            format!("`{name}` without a command cannot be checked"),
            whole,
        );
    }
    Unwrapped::Command {
        words,
        assignments: Vec::new(),
        appends_dynamic: name == "xargs",
    }
}

/// A word a wrapper skips over (an option's value, `timeout`'s duration) must be one static
/// word: otherwise the payload bash runs starts elsewhere than the one checked.
fn skipped(name: &str, word: Option<&Word>) -> Option<Unwrapped<'static>> {
    let w = word?;
    match w.static_value() {
        Some(_) => None,
        None => Some(refuse(
            format!("`{name}` has an argument whose value is not known (it could become several words and move the command)"),
            w.span,
        )),
    }
}

fn env(args: &[Word]) -> Unwrapped<'_> {
    let mut i = 0;
    let mut assignments = Vec::new();
    while i < args.len() {
        let Some(s) = args[i].static_value() else {
            return refuse(
                "`env` has an argument whose value is not known",
                args[i].span,
            );
        };
        if s == "--" {
            i += 1;
            break;
        }
        if s == "-i" || s == "-" || s == "--ignore-environment" || s == "-0" || s == "--null" {
            i += 1;
            continue;
        }
        if s == "-u" || s == "--unset" {
            if let Some(refused) = skipped("env", args.get(i + 1)) {
                return refused;
            }
            i += 2;
            continue;
        }
        if s.starts_with("--unset=") || (s.starts_with("-u") && s.len() > 2) {
            i += 1;
            continue;
        }
        if s.starts_with('-') {
            // -S/--split-string re-splits a string into a command; -C changes directory.
            return refuse(format!("`env {s}` cannot be checked"), args[i].span);
        }
        break;
    }
    while i < args.len() {
        match args[i].static_value() {
            Some(s) if s.contains('=') && !s.starts_with('=') => {
                assignments.push(&args[i]);
                i += 1;
            }
            _ => break,
        }
    }
    let words = args.get(i..).unwrap_or(&[]);
    if words.is_empty() && assignments.is_empty() {
        // `env` alone prints the environment (output redaction applies).
        return Unwrapped::Nothing;
    }
    Unwrapped::Command {
        words,
        assignments,
        appends_dynamic: false,
    }
}

fn command<'a>(args: &'a [Word], whole: Span) -> Unwrapped<'a> {
    let mut i = 0;
    while i < args.len() {
        match args[i].static_value().as_deref() {
            Some("-p") => i += 1,
            Some("-v") | Some("-V") | Some("-pv") | Some("-pV") => return Unwrapped::Nothing,
            Some("--") => {
                i += 1;
                break;
            }
            Some(s) if s.starts_with('-') => {
                return refuse(format!("`command {s}` cannot be checked"), args[i].span)
            }
            Some(_) => break,
            None => {
                return refuse(
                    "`command` has an argument whose value is not known",
                    args[i].span,
                )
            }
        }
    }
    let words = args.get(i..).unwrap_or(&[]);
    if words.is_empty() {
        return refuse("`command` without a command", whole);
    }
    Unwrapped::Command {
        words,
        assignments: Vec::new(),
        appends_dynamic: false,
    }
}

fn eval(args: &[Word], whole: Span) -> Unwrapped<'static> {
    let mut text = String::new();
    for (i, w) in args.iter().enumerate() {
        let Some(s) = w.static_value() else {
            return refuse(
                "`eval` of a value that is not known cannot be checked",
                w.span,
            );
        };
        if i > 0 {
            text.push(' ');
        }
        text.push_str(&s);
    }
    if args.is_empty() {
        return Unwrapped::Nothing;
    }
    let span = args
        .first()
        .map_or(whole, |f| f.span.join(args[args.len() - 1].span));
    Unwrapped::Source {
        text,
        span,
        offset: None,
    }
}

fn shell(args: &[Word], whole: Span) -> Unwrapped<'static> {
    let mut i = 0;
    let mut dash_c = false;
    while i < args.len() {
        let Some(s) = args[i].static_value() else {
            return refuse(
                "the shell has an argument whose value is not known",
                args[i].span,
            );
        };
        if s == "--" || s == "-" {
            i += 1;
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if matches!(long, "norc" | "noprofile" | "posix" | "noediting") {
                i += 1;
                continue;
            }
            return refuse(
                format!("`--{long}` makes the shell run code that cannot be checked"),
                args[i].span,
            );
        }
        if let Some(flags) = s.strip_prefix('-').or_else(|| s.strip_prefix('+')) {
            for c in flags.chars() {
                match c {
                    'c' => dash_c = true,
                    'e' | 'u' | 'x' | 'v' | 'f' | 'n' | 'h' | 'B' | 'C' | 'H' | 'P' | 'T' => {}
                    'o' | 'O' => {
                        // The option name follows; `-o` options like `pipefail` are harmless but
                        // some (`-O extdebug`) are not worth the risk: only a known set.
                        i += 1;
                        let ok = args.get(i).and_then(Word::static_value).is_some_and(|o| {
                            matches!(
                                o.as_str(),
                                "pipefail"
                                    | "errexit"
                                    | "nounset"
                                    | "xtrace"
                                    | "noglob"
                                    | "noclobber"
                            )
                        });
                        if !ok {
                            return refuse(
                                "a shell `-o`/`-O` option that cannot be checked",
                                whole,
                            );
                        }
                    }
                    _ => {
                        return refuse(
                            format!("shell option `-{c}` cannot be checked"),
                            args[i].span,
                        )
                    }
                }
            }
            i += 1;
            continue;
        }
        break;
    }
    if !dash_c {
        return refuse(
            "a shell without `-c` runs a script file or its standard input, which cannot be checked",
            whole,
        );
    }
    let Some(payload) = args.get(i) else {
        return refuse("`-c` without a command", whole);
    };
    let Some(text) = payload.static_value() else {
        return refuse("the `-c` command is not known before it runs", payload.span);
    };
    // Later words become $0, $1, ...: the payload sees them only through expansions, which
    // the payload's own check treats as unknown values.
    Unwrapped::Source {
        text,
        span: payload.span,
        offset: single_quoted_offset(payload),
    }
}

/// When `word` is one quoted part with no escapes, the offset of its text in the input.
fn single_quoted_offset(word: &Word) -> Option<usize> {
    use crate::shell::WordPart;
    match word.parts.as_slice() {
        [WordPart::SingleQuoted(_)] => Some(word.span.start + 1),
        _ => None,
    }
}
