//! shellgate's parser: never panics; a successful parse has every span inside the input and on
//! character boundaries, nested scripts inside their parents; and the work is linear in the
//! input at each nesting level (bytes tokenized and lexed, `shell::parse_measured`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shellgate::shell::{self, Command, Script, Span, Word, WordPart};

fn check_span(src: &str, s: Span, parent: Span) {
    assert!(s.start <= s.end && s.end <= src.len(), "span {s} outside input of {} bytes", src.len());
    assert!(src.is_char_boundary(s.start) && src.is_char_boundary(s.end), "span {s} splits a character");
    assert!(parent.start <= s.start && s.end <= parent.end, "span {s} outside its parent {parent}");
}

fn word(src: &str, w: &Word, parent: Span) {
    check_span(src, w.span, parent);
    for p in &w.parts {
        part(src, p, w.span);
    }
}

fn part(src: &str, p: &WordPart, parent: Span) {
    match p {
        WordPart::DoubleQuoted(ps) => ps.iter().for_each(|q| part(src, q, parent)),
        WordPart::CommandSubst(s) | WordPart::ProcessSubst { script: s, .. } => script(src, s, parent),
        WordPart::Param(pm) => {
            check_span(src, pm.span, parent);
            for w in pm.words.iter().chain(pm.subscript.iter()) {
                word(src, w, pm.span);
            }
        }
        WordPart::Arithmetic(a) => {
            check_span(src, a.span, parent);
            a.words.iter().for_each(|w| word(src, w, a.span));
        }
        _ => {}
    }
}

fn script(src: &str, s: &Script, parent: Span) {
    check_span(src, s.span, parent);
    for c in &s.commands {
        check_span(src, c.span(), s.span);
        match c {
            Command::Simple(sc) => {
                sc.words.iter().for_each(|w| word(src, w, sc.span));
                for a in &sc.assignments {
                    a.value.iter().chain(&a.array).for_each(|w| word(src, w, sc.span));
                }
                for r in &sc.redirects {
                    check_span(src, r.span, Span::new(0, src.len()));
                }
            }
            Command::Compound(cc) => {
                cc.words.iter().for_each(|w| word(src, w, Span::new(0, src.len())));
                script(src, &cc.body, Span::new(0, src.len()));
            }
            Command::Function(f) => script(src, &f.body, Span::new(0, src.len())),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let (result, work) = shell::parse_measured(src, &shell::Limits::default());
    let bound = 16 * (src.len() as u64 + 1) * (work.deepest as u64 + 1);
    assert!(work.steps <= bound, "{} steps for {} bytes at depth {}", work.steps, src.len(), work.deepest);
    match result {
        Ok(s) => script(src, &s, Span::new(0, src.len())),
        Err(e) => check_span(src, e.span, Span::new(0, src.len())),
    }
});
