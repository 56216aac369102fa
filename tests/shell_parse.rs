//! Integration tests of the shell front-end: what commands the IR says would run.

use shellgate::shell::{parse, parse_with, Limits, ParseErrorKind, Script};

/// Every simple command anywhere, as argv with `<dyn>` for non-static words and keywords
/// prefixed as `<Time>`, `<Bang>`, `<Coproc>`.
fn argv(src: &str) -> Vec<Vec<String>> {
    let script = parse(src).unwrap_or_else(|e| panic!("{src:?}: {} {}", e.kind.code(), e.message));
    argv_of(&script)
}

fn argv_of(script: &Script) -> Vec<Vec<String>> {
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

fn v(list: &[&[&str]]) -> Vec<Vec<String>> {
    list.iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect()
}

fn kind(src: &str) -> ParseErrorKind {
    match parse(src) {
        Ok(s) => panic!("{src:?} parsed: {:?}", argv_of(&s)),
        Err(e) => e.kind,
    }
}

#[test]
fn glued_operators_and_lists() {
    assert_eq!(
        argv("cat data.txt|grep x"),
        v(&[&["cat", "data.txt"], &["grep", "x"]])
    );
    assert_eq!(argv("ls;rm -rf /"), v(&[&["ls"], &["rm", "-rf", "/"]]));
    assert_eq!(argv("ls\nrm x"), v(&[&["ls"], &["rm", "x"]]));
    assert_eq!(argv("a&&b||c"), v(&[&["a"], &["b"], &["c"]]));
    assert_eq!(argv("a&b"), v(&[&["a"], &["b"]]));
    assert_eq!(argv("a |& b"), v(&[&["a"], &["b"]]));
}

#[test]
fn substitutions_are_found() {
    assert_eq!(
        argv("echo $(rm -rf /)"),
        v(&[&["echo", "<dyn>"], &["rm", "-rf", "/"]])
    );
    assert_eq!(argv("echo `id`"), v(&[&["echo", "<dyn>"], &["id"]]));
    assert_eq!(argv("x=$(id) ls"), v(&[&["ls"], &["id"]]));
    assert_eq!(argv("echo ${x:-$(id)}"), v(&[&["echo", "<dyn>"], &["id"]]));
    assert_eq!(argv("echo ${a[$(id)]}"), v(&[&["echo", "<dyn>"], &["id"]]));
}

#[test]
fn quoting_gives_static_program_names() {
    assert_eq!(argv("r'm' -rf /"), v(&[&["rm", "-rf", "/"]]));
    assert_eq!(argv("$'\\x72\\x6d' x"), v(&[&["rm", "x"]]));
    assert_eq!(argv("$CMD x"), v(&[&["<dyn>", "x"]]));
}

#[test]
fn heredocs() {
    assert_eq!(argv("cat <<EOF\n$(id)\nEOF"), v(&[&["cat"], &["id"]]));
    assert_eq!(argv("cat <<'EOF'\n$(id)\nEOF"), v(&[&["cat"]]));
    assert_eq!(
        argv("cat <<-EOF\n\t$(id)\n\tEOF\n"),
        v(&[&["cat"], &["id"]])
    );
}

#[test]
fn keywords() {
    assert_eq!(argv("time ls"), v(&[&["<Time>", "ls"]]));
    assert_eq!(argv("! ls"), v(&[&["<Bang>", "ls"]]));
    assert_eq!(argv("coproc ls"), v(&[&["<Coproc>", "ls"]]));
}

#[test]
fn errors() {
    assert!(matches!(
        kind("echo \"abc"),
        ParseErrorKind::Missing | ParseErrorKind::Syntax
    ));
    assert!(matches!(
        kind("if true; then ls"),
        ParseErrorKind::Missing | ParseErrorKind::Syntax
    ));
    assert_eq!(kind("r\\\nm x"), ParseErrorKind::SplitWord);
    assert_eq!(kind("echo `echo \\`id\\``"), ParseErrorKind::NestedBacktick);
    assert_eq!(kind("ls\r"), ParseErrorKind::ControlCharacter);
    let small = Limits {
        max_bytes: 3,
        ..Limits::default()
    };
    assert_eq!(
        parse_with("ls -la", &small).unwrap_err().kind,
        ParseErrorKind::TooLarge
    );
}

#[test]
fn functions_are_checked() {
    assert_eq!(
        argv("ls() { rm -rf /; }; ls"),
        v(&[&["ls"], &["rm", "-rf", "/"]])
    );
}

mod differential {
    //! The argv the IR says would run, against what bash really executes: every program
    //! on PATH is a stub that records its argv, and the builtins used are disabled so that
    //! they go through the stubs too.

    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const BUILTINS: &[&str] = &[
        "echo", "printf", "pwd", "true", "false", "test", "[", "read", "kill",
    ];

    /// Each stub process writes its own record file (pipeline stages run concurrently).
    const STUB: &str = "#!/bin/sh\nprintf '%s\\0' \"${0##*/}\" \"$@\" > \"$ORACLE_LOG/$$\"\n";

    const CASES: &[&str] = &[
        "ls -la",
        "cat data.txt|grep x",
        "ls;rm -rf nothing",
        "ls\nrm x",
        "echo \"$(id)\"",
        "echo \"`id -u`\"",
        "r'm' -rf /tmp/nothing",
        "$'\\x72\\x6d' x",
        "\"e\"ch'o' a\\ b \"c d\"",
        "x=1 ls",
        "a && b",
        "a | b | c",
        "{ ls; pwd; }",
        "(ls; cat f)",
        "if true; then ls; fi",
        "cat <<EOF\n$(id)\nEOF",
        "cat <<'EOF'\n$(id)\nEOF",
        "cat <<-EOF\n\t$(id)\n\tEOF\n",
        "time ls",
        "time -p ls -l",
        "! ls",
        "echo \"${x:-$(id)}\"",
        "echo \"${a[$(id)]}\"",
        "echo $((1+2))",
        "cat < data.txt > out.txt 2>&1",
        "grep -r \"a b\" . --include='*.rs'",
        "git commit -m \"msg with 'quotes'\"",
        "echo \\$HOME \\\"q\\\"",
        "printf '%s\\n' a b",
        "echo a\\\\b",
        "a=(x y); echo \"${a[1]}\"",
        "cat <<A <<B\na\nA\nb $(id)\nB\n",
        "cat <<EOF | grep x\n$(id)\nEOF\n",
        "echo 'it''s' \"a\"'b'c",
        "echo -n $'tab\\there\\x41\\101\\u00e9'",
        "x=$(id) ls",
        "[[ -z $(id) ]] && ls",
        "((x=$(id)+1)); ls",
        "echo \"$(echo \"$(id)\")\"",
        "echo $\"x y\"",
        "ls \\\n  -la",
        "echo a;echo b",
        "ls # comment rm",
        "echo x>out.txt;cat out.txt",
        "echo \"a\\$b \\`c\\` \\\\ \\\"d\\\"\"",
        "echo a=b c==d -- '--x' \"\"",
        "echo $'\\'' \"'\"",
        "test -f data.txt && [ -d . ]",
        "echo \"$((2*3)) ${#x}\" \"$HOME\"x",
    ];

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("shellgate-diff-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn run_bash(cmd: &str, programs: &[String], root: &Path) -> Vec<Vec<String>> {
        let stubs = root.join("stubs");
        let ws = root.join("ws");
        std::fs::create_dir_all(&stubs).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("data.txt"), "x\n").unwrap();
        let log = root.join("log");
        std::fs::create_dir_all(&log).unwrap();
        for p in programs {
            if p.contains('/') || p.is_empty() {
                continue;
            }
            let path = stubs.join(p);
            std::fs::write(&path, STUB).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let disable: Vec<&str> = programs
            .iter()
            .map(String::as_str)
            .filter(|p| BUILTINS.contains(p))
            .collect();
        let prelude = if disable.is_empty() {
            String::new()
        } else {
            format!("enable -n {}\n", disable.join(" "))
        };
        let status = Command::new("/bin/bash")
            .args(["--norc", "--noprofile", "-c"])
            .arg(format!("{prelude}{cmd}"))
            .current_dir(&ws)
            .env_clear()
            .env("PATH", &stubs)
            .env("HOME", &ws)
            .env("LANG", "C.UTF-8")
            .env("ORACLE_LOG", &log)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        let _ = status;
        std::fs::read_dir(&log)
            .unwrap()
            .map(|e| {
                let raw = std::fs::read(e.unwrap().path()).unwrap();
                let mut v: Vec<String> = raw
                    .split(|&b| b == 0)
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect();
                v.pop();
                v
            })
            .collect()
    }

    fn matches(ir: &[String], run: &[String]) -> bool {
        ir.len() == run.len() && ir.iter().zip(run).all(|(a, b)| a == "<dyn>" || a == b)
    }

    #[test]
    fn ir_argv_equals_what_bash_executes() {
        let mut failures = Vec::new();
        for (n, cmd) in CASES.iter().enumerate() {
            let script = match parse(cmd) {
                Ok(s) => s,
                Err(e) => {
                    failures.push(format!("{cmd:?}: parse error {}", e.message));
                    continue;
                }
            };
            let ir: Vec<Vec<String>> = argv_of(&script)
                .into_iter()
                .map(|c| {
                    c.into_iter()
                        .filter(|w| !w.starts_with("<T") && !w.starts_with("<B"))
                        .collect()
                })
                .collect();
            let programs: Vec<String> = ir.iter().filter_map(|c| c.first().cloned()).collect();
            let root = scratch(&n.to_string());
            let mut executed = run_bash(cmd, &programs, &root);
            let _ = std::fs::remove_dir_all(&root);
            let mut remaining = ir.clone();
            executed.retain(|run| match remaining.iter().position(|c| matches(c, run)) {
                Some(p) => {
                    remaining.remove(p);
                    false
                }
                None => true,
            });
            if !executed.is_empty() || !remaining.is_empty() {
                failures.push(format!(
                    "{cmd:?}: bash ran {executed:?} not in the IR; IR has {remaining:?} bash did not run"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

mod limits {
    use super::*;

    /// Runs `f` on a thread with a small stack: a stack overflow would abort the test binary.
    fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    fn big() -> Limits {
        Limits {
            max_bytes: 4 << 20,
            ..Limits::default()
        }
    }

    #[test]
    fn hostile_nesting_is_a_clean_error_on_a_small_stack() {
        let n = 100_000;
        let inputs = vec![
            format!("echo {}x{}", "$(".repeat(n), ")".repeat(n)),
            format!("{}ls{}", "(".repeat(n), ")".repeat(n)),
            format!("{}ls{}", "{ ".repeat(n), "; }".repeat(n)),
            format!("echo {}x{}", "\"$(".repeat(n), ")\"".repeat(n)),
            format!("echo {}x{}", "${a:-".repeat(n), "}".repeat(n)),
            format!("echo $(({}1{}))", "(".repeat(n), ")".repeat(n)),
            format!("echo {}", "`".repeat(n)),
            format!("{} ls", "! ".repeat(n)),
        ];
        for src in inputs {
            let head: String = src.chars().take(12).collect();
            let r = small_stack(move || parse_with(&src, &big()).map(|_| ()).map_err(|e| e.kind));
            let kind = r.expect_err(&head);
            assert!(
                matches!(
                    kind,
                    ParseErrorKind::TooDeep
                        | ParseErrorKind::Syntax
                        | ParseErrorKind::Missing
                        | ParseErrorKind::TooManyNodes
                ),
                "{head}: {kind:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_reports_too_deep() {
        for n in [200, 5000] {
            let src = format!("echo {}x{}", "$(".repeat(n), ")".repeat(n));
            let kind = small_stack(move || parse_with(&src, &big()).unwrap_err().kind);
            assert_eq!(kind, ParseErrorKind::TooDeep, "depth {n}");
            let src = format!("{}ls{}", "(".repeat(n), ")".repeat(n));
            let kind = small_stack(move || parse_with(&src, &big()).unwrap_err().kind);
            assert_eq!(kind, ParseErrorKind::TooDeep, "depth {n}");
        }
    }

    /// The deepest accepted nesting fits the default 2 MiB thread stack even in debug
    /// builds (release builds need far less: about 256 KiB).
    #[test]
    fn deepest_accepted_nesting_fits_a_default_thread_stack() {
        let mut deepest = 0;
        for n in (1..80).rev() {
            let src = format!("echo {}id{}", "$(".repeat(n), ")".repeat(n));
            let r = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || parse(&src).map(|s| s.all_simple_commands().len()))
                .unwrap()
                .join()
                .unwrap();
            if let Ok(count) = r {
                assert_eq!(count, n + 1);
                deepest = n;
                break;
            }
        }
        assert!(
            deepest >= 20,
            "only {deepest} nested substitutions accepted"
        );
        let src = format!("echo {}id{}", "$(".repeat(5), ")".repeat(5));
        assert_eq!(
            small_stack(move || parse(&src).map(|s| s.all_simple_commands().len())),
            Ok(6)
        );
    }

    #[test]
    fn node_limit() {
        let src = "ls a b c; ".repeat(100);
        let limits = Limits {
            max_nodes: 50,
            ..Limits::default()
        };
        assert_eq!(
            parse_with(&src, &limits).unwrap_err().kind,
            ParseErrorKind::TooManyNodes
        );
    }

    #[test]
    fn size_limit() {
        let src = "a".repeat(Limits::default().max_bytes + 1);
        assert_eq!(parse(&src).unwrap_err().kind, ParseErrorKind::TooLarge);
    }
}
