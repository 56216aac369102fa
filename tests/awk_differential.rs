//! The awk reader against the real awk on this machine (mawk, `/usr/bin/awk`): programs are
//! generated from pieces that are harmless, pieces that run a command or write a file, and
//! pieces built to make a tokenizer and awk disagree on where strings, regexes and comments
//! are. Every program [`check_awk`] accepts is run by awk in a scratch directory, and must
//! leave that directory as it found it: no command ran (each one would `touch` a file) and
//! no file was written.

use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use shellgate::evaluate::check_awk;

/// Harmless pieces, including ones with `|`, `>` and `"` inside strings, regexes and comments.
const SAFE: &[&str] = &[
    "/a|b/ { n++ }",
    "$1 ~ /x|c/",
    "!/^#|^$/",
    "{ print $1 \" -> \" $2 }",
    "{ split($0, p, \"|\"); print p[1] }",
    "# a comment with | and > and \"",
    "END { print n }",
    "{ s += $2 } END { print s / 2 }",
    "NR > 1 && /c|d/",
    "{ printf \"%s > %s\\n\", $1, $2 }",
    "/a\\/|b/",
    "{ x = \"\\\"|\" }",
];

/// Pieces that run a command or write a file; each leaves a trace in the scratch directory.
const EFFECT: &[&str] = &[
    "{ print \"x\" | \"touch piped\" }",
    "{ print \"x\" > \"written\" }",
    "{ printf \"x\" >> \"appended\" }",
    "BEGIN { print \"x\" | \"touch begin-piped\" }",
];

/// Pieces that make a naive reader lose its place: a quote in a regex after `print`, in a
/// regex with a bracket, in a comment; a division that looks like a regex; `x++ /.../`.
const DESYNC: &[&str] = &[
    "{ print /\"/ }",
    "/[|\"]/",
    "/a|\"/",
    "# \"",
    "x++ /a|b/",
    "/a|b/ / 2",
    "{ print 1 / 2 }",
    "\"",
    "/",
    "\\\n",
];

const GLUE: &[&str] = &[" ", "\n", "; ", " } { ", "\n# x\n"];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(SAFE).prop_map(str::to_string),
        2 => proptest::sample::select(EFFECT).prop_map(str::to_string),
        3 => proptest::sample::select(DESYNC).prop_map(str::to_string),
    ]
}

fn program() -> impl Strategy<Value = String> {
    proptest::collection::vec((piece(), proptest::sample::select(GLUE)), 1..7).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(p, g)| format!("{p}{g}"))
            .collect::<String>()
    })
}

fn awk_available() -> bool {
    Path::new("/usr/bin/awk").exists()
}

/// Runs `program` with the real awk in a fresh directory; returns the names of the files
/// that are there afterwards besides the input.
fn run_awk(program: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("in.txt"), "a b\nc d\n").expect("input");
    let _ = Command::new("/usr/bin/awk")
        .arg(program)
        .arg("in.txt")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "in.txt")
        .collect();
    left.sort();
    left
}

#[test]
fn the_harness_sees_what_awk_does() {
    if !awk_available() {
        eprintln!("no /usr/bin/awk: skipped");
        return;
    }
    assert_eq!(run_awk(EFFECT[0]), vec!["piped"]);
    assert_eq!(run_awk(EFFECT[1]), vec!["written"]);
    assert!(run_awk(SAFE[0]).is_empty());
    // The desync the reader must not fall for, confirmed with the real awk.
    let hidden = "{ print /\"/ } /a|b/ { print \"x\" | \"touch p\" } { print /\"/ }";
    assert_eq!(run_awk(hidden), vec!["p"]);
    assert!(check_awk(hidden).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn accepted_programs_run_no_command_and_write_no_file(prog in program()) {
        if awk_available() && check_awk(&prog).is_ok() {
            let left = run_awk(&prog);
            prop_assert!(left.is_empty(), "accepted {prog:?}, and awk left {left:?}");
        }
    }
}

/// The generator reaches both sides: many programs with an effect piece, and many accepted
/// programs with `|` or `>` in strings, regexes or comments. A program with an effect piece
/// that is accepted (the piece commented out, say) is run: awk must do nothing.
#[test]
fn generated_programs_cover_both_verdicts() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut accepted_with_pipe_text, mut effects) = (0, 0);
    for _ in 0..2000 {
        let prog = program().new_tree(&mut runner).expect("generate").current();
        let ok = check_awk(&prog).is_ok();
        if EFFECT.iter().any(|e| prog.contains(e)) {
            effects += 1;
            // Accepted only where the effect cannot happen (commented out, say): awk decides.
            if ok && awk_available() {
                let left = run_awk(&prog);
                assert!(left.is_empty(), "accepted {prog:?}, and awk left {left:?}");
            }
        } else if ok && (prog.contains('|') || prog.contains('>')) {
            accepted_with_pipe_text += 1;
        }
    }
    assert!(effects > 200, "{effects}");
    assert!(accepted_with_pipe_text > 50, "{accepted_with_pipe_text}");
}
