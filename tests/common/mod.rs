//! Helpers shared by the integration tests that compare shellgate's IR with something else:
//! real bash run with recording stubs (`shell_parse`, `differential`) and brush-parser
//! (`brush_compare`), and a small-stack runner (`shell_parse`, `evaluate`, `policy_load`).
//! Each test crate uses only part of this module.
#![allow(dead_code)]

pub mod corpus;
pub mod serve;

use shellgate::shell::{Script, SimpleCommand, Word, WordPart};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every simple command anywhere, as argv with `<dyn>` for non-static words and keywords
/// prefixed as `<Time>`, `<Bang>`, `<Coproc>`.
pub fn argv_of(script: &Script) -> Vec<Vec<String>> {
    script
        .all_simple_commands()
        .iter()
        .filter(|c| !c.words.is_empty() || !c.keywords.is_empty())
        .map(|c| {
            let mut v: Vec<String> = c.keywords.iter().map(|k| format!("<{k:?}>")).collect();
            v.extend(
                c.words
                    .iter()
                    .map(|w| w.static_value().unwrap_or_else(|| "<dyn>".into())),
            );
            v
        })
        .collect()
}

/// Builtins that the tests' programs may shadow: the sandbox disables them with `enable -n`
/// so that bash runs the recording stub instead.
pub const BUILTINS: &[&str] = &[
    "echo", "printf", "pwd", "true", "false", "test", "[", "read", "kill",
];

/// Each stub process appends one record (NUL-separated argv, then `\x01`) to a file of its
/// own: pipeline stages run concurrently, and `>>` keeps a reused pid harmless.
const STUB: &str = "#!/bin/sh\n{ printf '%s\\0' \"${0##*/}\" \"$@\"; printf '\\001'; } >> \"$ORACLE_LOG/$$\"\nexit 0\n";

/// The name under which a command bash could not find is recorded (by its
/// `command_not_found_handle`, which calls a recorder outside `PATH`).
pub const NOT_FOUND: &str = "command-not-found";

/// What one bash run did.
#[derive(Debug)]
pub struct BashRun {
    /// Every stub run, as argv (program name first), in no particular order. A program
    /// bash could not find appears as `[NOT_FOUND, name, args...]`.
    pub executed: Vec<Vec<String>>,
    /// Exit status (`None` when killed).
    pub status: Option<i32>,
    /// Whether it was killed after the timeout.
    pub timed_out: bool,
    /// What bash wrote on stderr (the stubs write nothing).
    pub stderr: String,
}

/// A scratch directory with a workspace (`ws`: a few small files, the working directory and
/// `HOME` of every run) and a `PATH` holding only recording stubs for `programs`.
///
/// Bash runs with an empty environment, `--norc --noprofile`, stdin from /dev/null, and the
/// stubbed builtins disabled. Nothing but the stubs is reachable through `PATH`: anything
/// else bash looks up is recorded as not found. This is no sandbox: only run commands whose
/// every program is a stub (the tests run only commands a stubs-only policy allows).
pub struct Sandbox {
    _root: tempfile::TempDir,
    root: PathBuf,
    /// The workspace (cwd and HOME).
    pub ws: PathBuf,
    stubs: PathBuf,
    programs: Vec<String>,
    runs: std::cell::Cell<usize>,
}

impl Sandbox {
    /// A sandbox with stubs for `programs` (names containing `/` are skipped).
    pub fn new(programs: &[&str]) -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("shellgate-diff.")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let ws = root.join("ws");
        let stubs = root.join("stubs");
        for d in [
            &ws,
            &stubs,
            &root.join("bin"),
            &root.join("tmp"),
            &ws.join("src"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        for (name, body) in [
            ("a.txt", "alpha\n"),
            ("b.txt", "beta\n"),
            ("data.txt", "x\n"),
            ("src/main.rs", "fn main() {}\n"),
        ] {
            std::fs::write(ws.join(name), body).unwrap();
        }
        let mut kept = Vec::new();
        for p in programs {
            if p.contains('/') || p.is_empty() || kept.iter().any(|k| k == p) {
                continue;
            }
            write_exec(&stubs.join(p), STUB);
            kept.push(p.to_string());
        }
        write_exec(&root.join("bin").join(NOT_FOUND), STUB);
        Sandbox {
            _root: dir,
            root,
            ws,
            stubs,
            programs: kept,
            runs: std::cell::Cell::new(0),
        }
    }

    /// Run `cmd` with bash (killed after `timeout`) and collect what the stubs recorded.
    pub fn run(&self, cmd: &str, timeout: Duration) -> BashRun {
        let n = self.runs.get();
        self.runs.set(n + 1);
        let log = self.root.join(format!("log{n}"));
        std::fs::create_dir_all(&log).unwrap();
        let disable: Vec<&str> = self
            .programs
            .iter()
            .map(String::as_str)
            .filter(|p| BUILTINS.contains(p))
            .collect();
        let mut prelude = format!(
            "command_not_found_handle() {{ '{}' \"$@\"; return 127; }}\n",
            self.root.join("bin").join(NOT_FOUND).display()
        );
        if !disable.is_empty() {
            prelude.push_str(&format!("enable -n {}\n", disable.join(" ")));
        }
        let mut child = Command::new("/bin/bash")
            .args(["--norc", "--noprofile", "-c"])
            .arg(format!("{prelude}{cmd}"))
            .current_dir(&self.ws)
            .env_clear()
            .env("PATH", &self.stubs)
            .env("HOME", &self.ws)
            .env("TMPDIR", self.root.join("tmp"))
            .env("LANG", "C.UTF-8")
            .env("ORACLE_LOG", &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run /bin/bash");
        let mut stderr_pipe = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = Vec::new();
            use std::io::Read;
            let _ = (&mut stderr_pipe).take(64 * 1024).read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        });
        let start = Instant::now();
        let (status, timed_out) = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break (st.code(), false);
            }
            if start.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let stderr = reader.join().unwrap_or_default();
        let mut executed = Vec::new();
        for entry in std::fs::read_dir(&log).unwrap() {
            let raw = std::fs::read(entry.unwrap().path()).unwrap();
            for rec in raw.split(|&b| b == 1).filter(|r| !r.is_empty()) {
                let mut v: Vec<String> = rec
                    .split(|&b| b == 0)
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect();
                v.pop();
                executed.push(v);
            }
        }
        let _ = std::fs::remove_dir_all(&log);
        BashRun {
            executed,
            status,
            timed_out,
            stderr,
        }
    }
}

fn write_exec(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// One expected argument of a command the IR says would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// Exactly this word.
    Exact(String),
    /// Exactly one word, value unknown (a quoted expansion, a tilde, a process substitution).
    One,
    /// Any number of words, maybe none (an unquoted expansion: field splitting, globbing).
    Any,
}

/// What the IR says one simple command runs: its argv as patterns.
pub fn expected_argv(c: &SimpleCommand) -> Vec<Arg> {
    let mut out = Vec::new();
    for w in &c.words {
        match brace_expand(w) {
            // bash removes the empty words an unquoted brace expansion makes (`a {,}` is `a`).
            Some(words) => out.extend(
                words
                    .into_iter()
                    .filter(|v| !v.is_empty() || has_quotes(w))
                    .map(Arg::Exact),
            ),
            None => out.push(word_pattern(w)),
        }
    }
    out
}

/// Every command with a program the IR says could run, as argv patterns.
pub fn expected_commands(script: &Script) -> Vec<Vec<Arg>> {
    script
        .all_simple_commands()
        .into_iter()
        .filter(|c| !c.words.is_empty())
        .map(expected_argv)
        .collect()
}

fn has_quotes(w: &Word) -> bool {
    w.parts.iter().any(|p| {
        matches!(
            p,
            WordPart::SingleQuoted(_) | WordPart::DoubleQuoted(_) | WordPart::AnsiC(_)
        )
    })
}

fn word_pattern(w: &Word) -> Arg {
    if let Some(v) = w.static_value() {
        return Arg::Exact(v);
    }
    let unquoted_dynamic = w.parts.iter().any(|p| {
        matches!(
            p,
            WordPart::Param(_)
                | WordPart::CommandSubst(_)
                | WordPart::Arithmetic(_)
                | WordPart::Glob(_)
                | WordPart::Brace(_)
        )
    });
    if unquoted_dynamic {
        Arg::Any
    } else {
        Arg::One
    }
}

/// Static brace expansion of a word whose other parts are static (`x{a,b}y` → `xay`, `xby`);
/// `None` when the word has no brace part or anything else in it is dynamic.
pub fn brace_expand(w: &Word) -> Option<Vec<String>> {
    if !w.parts.iter().any(|p| matches!(p, WordPart::Brace(_))) {
        return None;
    }
    let mut results = vec![String::new()];
    for part in &w.parts {
        let alts = match part {
            WordPart::Brace(text) => brace_alternatives(text)?,
            WordPart::Literal(s) if s.contains('~') => return None,
            other => {
                let single = Word {
                    span: w.span,
                    parts: vec![other.clone()],
                };
                vec![single.static_value()?]
            }
        };
        results = results
            .iter()
            .flat_map(|r| alts.iter().map(move |a| format!("{r}{a}")))
            .collect();
    }
    Some(results)
}

/// `{a,b{c,d}}` → a, bc, bd; `{1..3}` → 1, 2, 3; `{a..c}` → a, b, c. Plain text only.
fn brace_alternatives(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    if inner.contains(['\'', '"', '\\', '$', '`', '*', '?', '[']) {
        return None;
    }
    if let Some((a, b)) = inner.split_once("..") {
        if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
            let v: Vec<String> = if x <= y {
                (x..=y).map(|n| n.to_string()).collect()
            } else {
                (y..=x).rev().map(|n| n.to_string()).collect()
            };
            return Some(v);
        }
        let (mut ca, mut cb) = (a.chars(), b.chars());
        if let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next()) {
            let (lo, hi) = (x.min(y) as u32, x.max(y) as u32);
            let mut v: Vec<String> = (lo..=hi)
                .filter_map(char::from_u32)
                .map(String::from)
                .collect();
            if x > y {
                v.reverse();
            }
            return Some(v);
        }
        return None;
    }
    // Split at top-level commas, expanding nested braces in each alternative.
    let mut alts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                alts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    alts.push(&inner[start..]);
    if alts.len() < 2 {
        return None;
    }
    let mut out = Vec::new();
    for a in alts {
        out.extend(expand_text(a)?);
    }
    Some(out)
}

/// Expand every brace expression in plain text.
fn expand_text(text: &str) -> Option<Vec<String>> {
    let Some(open) = text.find('{') else {
        return Some(vec![text.to_string()]);
    };
    let mut depth = 0;
    let mut close = None;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    let alts = brace_alternatives(&text[open..=close]).unwrap_or_else(|| {
        // Not an expansion (`{a}`): literal.
        vec![text[open..=close].to_string()]
    });
    let rest = expand_text(&text[close + 1..])?;
    let mut out = Vec::new();
    for a in &alts {
        for r in &rest {
            out.push(format!("{}{a}{r}", &text[..open]));
        }
    }
    Some(out)
}

/// Whether `argv` (what bash ran) fits the pattern `pat`.
pub fn fits(pat: &[Arg], argv: &[String]) -> bool {
    match pat.split_first() {
        None => argv.is_empty(),
        Some((Arg::Exact(s), rest)) => argv.first() == Some(s) && fits(rest, &argv[1..]),
        Some((Arg::One, rest)) => !argv.is_empty() && fits(rest, &argv[1..]),
        Some((Arg::Any, rest)) => (0..=argv.len()).any(|k| fits(rest, &argv[k..])),
    }
}

/// Render patterns for a message.
pub fn show(pat: &[Arg]) -> String {
    let v: Vec<String> = pat
        .iter()
        .map(|a| match a {
            Arg::Exact(s) => format!("{s:?}"),
            Arg::One => "<one>".into(),
            Arg::Any => "<any>*".into(),
        })
        .collect();
    format!("[{}]", v.join(", "))
}

/// Match what bash executed against what the IR says. With `exact`, each IR command must
/// account for exactly one execution (a multiset equality); otherwise IR commands may run
/// any number of times, including never (branches, loops). Returns the executions no IR
/// command accounts for and, with `exact`, the IR commands bash did not run.
pub fn compare(
    ir: &[Vec<Arg>],
    executed: &[Vec<String>],
    exact: bool,
) -> (Vec<Vec<String>>, Vec<Vec<Arg>>) {
    if !exact {
        let extra = executed
            .iter()
            .filter(|run| !ir.iter().any(|p| fits(p, run)))
            .cloned()
            .collect();
        return (extra, Vec::new());
    }
    let (extra, missing) = match_multisets(executed, ir, |run, p| fits(p, run));
    (
        extra.into_iter().map(|r| executed[r].clone()).collect(),
        missing.into_iter().map(|i| ir[i].clone()).collect(),
    )
}

/// A maximum matching between `left` and `right` where `fits` says which pairs may match
/// (patterns with wildcards overlap, so greedy matching is not enough: Kuhn's augmenting
/// paths). Returns the unmatched indices of `left` and of `right`.
pub fn match_multisets<L, R>(
    left: &[L],
    right: &[R],
    fits: impl Fn(&L, &R) -> bool,
) -> (Vec<usize>, Vec<usize>) {
    let edges: Vec<Vec<usize>> = left
        .iter()
        .map(|l| (0..right.len()).filter(|&i| fits(l, &right[i])).collect())
        .collect();
    // owner[i] is the left item matched to right item i.
    let mut owner: Vec<Option<usize>> = vec![None; right.len()];
    fn augment(
        l: usize,
        edges: &[Vec<usize>],
        owner: &mut [Option<usize>],
        seen: &mut [bool],
    ) -> bool {
        for &i in &edges[l] {
            if seen[i] {
                continue;
            }
            seen[i] = true;
            let free = match owner[i] {
                None => true,
                Some(o) => augment(o, edges, owner, seen),
            };
            if free {
                owner[i] = Some(l);
                return true;
            }
        }
        false
    }
    let mut unmatched_left = Vec::new();
    for l in 0..left.len() {
        let mut seen = vec![false; right.len()];
        if !augment(l, &edges, &mut owner, &mut seen) {
            unmatched_left.push(l);
        }
    }
    let unmatched_right = (0..right.len()).filter(|&i| owner[i].is_none()).collect();
    (unmatched_left, unmatched_right)
}

/// Runs `f` on a thread with a 64 KiB stack, a 32nd of the default thread stack: parsing,
/// evaluation and policy loading must continue nested work on fresh stack segments (or
/// refuse it), never overflow. In a debug build, the depth limit's worth of nesting once
/// needed more than 200 KiB of the caller's stack.
pub fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(f)
        .expect("spawn a small-stack thread")
        .join()
        .expect("the small-stack thread finished without a panic or an overflow")
}

/// Where the policy-check processes the tests start keep their workspace snapshots
/// (`SHELLGATE_STATE_DIR`): one directory under the system's temporary directory, so that
/// tests never write the user's `~/.local/state`.
pub fn test_state_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("shellgate-test-state-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}
