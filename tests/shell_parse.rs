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
