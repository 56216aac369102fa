//! Integration tests of truncation: budgets, cuts, markers, binary output, streaming.

use proptest::prelude::*;
use shellgate::truncate::{guess_type, is_binary, truncate, TruncateConfig, Truncator};

fn cfg(max_bytes: usize, max_lines: usize) -> TruncateConfig {
    TruncateConfig {
        max_bytes,
        max_lines,
    }
}

fn lines(s: &str) -> usize {
    s.matches('\n').count() + usize::from(!s.is_empty() && !s.ends_with('\n'))
}

#[test]
fn output_that_fits_is_unchanged() {
    let text = "line 1\nline 2\n";
    assert_eq!(truncate(text.as_bytes(), &TruncateConfig::default()), text);
    assert_eq!(truncate(b"", &TruncateConfig::default()), "");
}

#[test]
fn defaults() {
    let c = TruncateConfig::default();
    assert_eq!((c.max_bytes, c.max_lines), (30_000, 400));
    assert!(c.tail_bytes() >= 2 * c.head_bytes() - 1);
}

#[test]
fn many_lines_keep_head_and_more_tail() {
    let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    let out = truncate(text.as_bytes(), &cfg(30_000, 31));
    assert_eq!(lines(&out), 31);
    assert!(out.starts_with("line 1\nline 2\n"));
    assert!(out.ends_with("line 999\nline 1000\n"));
    let head = out.lines().take_while(|l| !l.starts_with("[...")).count();
    assert_eq!(head, 10);
    assert!(out.contains("[... 970 lines, "), "{out}");
}

#[test]
fn byte_budget_cuts_on_line_boundaries() {
    let text: String = (1..=5000).map(|i| format!("entry number {i}\n")).collect();
    let out = truncate(text.as_bytes(), &cfg(2000, 10_000));
    assert!(out.len() <= 2000);
    for l in out.lines() {
        assert!(
            l.starts_with("entry number ") || l.starts_with("[... "),
            "{l:?}"
        );
    }
    assert!(out.ends_with("entry number 5000\n"));
    let omitted_line = out
        .lines()
        .find(|l| l.starts_with("[... "))
        .expect("marker");
    let kept = out.len() - omitted_line.len() - 1;
    assert!(
        omitted_line.contains(&format!("{} bytes omitted", text.len() - kept)),
        "{omitted_line}"
    );
}

#[test]
fn a_single_huge_line_is_elided_in_its_middle() {
    let text = format!("{}{}\n", "a".repeat(50_000), "z".repeat(50_000));
    let out = truncate(text.as_bytes(), &TruncateConfig::default());
    assert!(out.len() <= 30_000);
    assert!(out.starts_with("aaaa"));
    assert!(out.ends_with("zzzz\n"));
    assert!(out.contains("\n[... 0 lines, "));
}

#[test]
fn never_cuts_a_utf8_character_or_a_marker() {
    let unit = "é[REDACTED:github-pat]日本";
    let text = unit.repeat(5000);
    for max in [200, 201, 202, 203, 500, 1000, 1001, 1002] {
        let out = truncate(text.as_bytes(), &cfg(max, 400));
        assert!(out.len() <= max);
        let without_marker: Vec<&str> = out.split('\n').collect();
        for part in [without_marker[0], without_marker[without_marker.len() - 1]] {
            let opens = part.matches("[REDACTED:").count();
            let whole = part.matches("[REDACTED:github-pat]").count();
            assert_eq!(opens, whole, "cut marker at {max}: {part:?}");
            assert!(
                !part.starts_with("REDACTED")
                    && !part.starts_with("github-pat]")
                    && !part.starts_with(']'),
                "cut marker at {max}: {part:?}"
            );
        }
    }
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_eq!(
        truncate(b"caf\xe9 ok\n", &TruncateConfig::default()),
        "caf\u{FFFD} ok\n"
    );
}

#[test]
fn binary_output_is_summarised() {
    let mut elf = b"\x7fELF\x02\x01\x01\x00".to_vec();
    elf.extend(std::iter::repeat_n(0u8, 100_000));
    let out = truncate(&elf, &TruncateConfig::default());
    assert_eq!(
        out,
        "[binary output: 100008 bytes, ELF executable; not shown]\n"
    );
    assert_eq!(guess_type(b"\x89PNG\r\n\x1a\n...."), "PNG image");
    assert_eq!(guess_type(b"\x1f\x8b\x08\x00"), "gzip data");
    assert!(is_binary(&[0xff, 0xfe, 0x81, 0x92, b'a']));
    assert!(!is_binary("héllo wörld\n\x1b[31mred\x1b[0m\n".as_bytes()));
    let gz = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03];
    assert!(truncate(&gz, &TruncateConfig::default()).contains("gzip data"));
}

#[test]
fn streaming_memory_is_bounded() {
    let c = cfg(3000, 50);
    let mut t = Truncator::new(&c);
    let line = b"0123456789 the quick brown fox jumps over the lazy dog\n";
    for _ in 0..200_000 {
        t.feed(line);
    }
    assert!(
        t.buffered() <= 3000 + 2 * 3000 + 512,
        "buffered {}",
        t.buffered()
    );
    let out = t.finish();
    assert!(out.len() <= 3000 && lines(&out) <= 50);
}

fn text_input() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            "[ -~]{0,80}\n".prop_map(String::into_bytes),
            "[a-zé日]{0,200}".prop_map(String::into_bytes),
            Just(b"[REDACTED:aws-secret-access-key]".to_vec()),
            Just(b"\n".to_vec()),
            proptest::collection::vec(128u8..=255, 0..3),
        ],
        0..120,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn within_budget_and_valid(input in text_input(), max_bytes in 0usize..3000, max_lines in 1usize..60) {
        let c = cfg(max_bytes, max_lines);
        let out = truncate(&input, &c);
        prop_assert!(out.len() <= max_bytes, "{} > {}", out.len(), max_bytes);
        prop_assert!(lines(&out) <= max_lines, "{} lines > {}", lines(&out), max_lines);
        prop_assert!(std::str::from_utf8(out.as_bytes()).is_ok());
    }

    #[test]
    fn chunked_equals_whole(input in text_input(), max_bytes in 100usize..3000, max_lines in 1usize..60,
                            cuts in proptest::collection::vec(0usize..300, 0..30)) {
        let c = cfg(max_bytes, max_lines);
        let whole = truncate(&input, &c);
        let mut t = Truncator::new(&c);
        let mut at = 0;
        for cut in cuts {
            let end = (at + cut).min(input.len());
            t.feed(&input[at..end]);
            at = end;
        }
        t.feed(&input[at..]);
        prop_assert_eq!(t.finish(), whole);
    }

    #[test]
    fn keeps_the_last_line_when_it_fits(input in text_input(), last in "[ -~]{1,60}", max_bytes in 400usize..3000, max_lines in 3usize..60) {
        let mut input = input;
        input.push(b'\n');
        input.extend_from_slice(last.as_bytes());
        input.push(b'\n');
        let out = truncate(&input, &cfg(max_bytes, max_lines));
        // Output that is mostly invalid UTF-8 (`\x80\x80\nA\n`) is binary: summarised, with
        // no line kept. That case belongs to the binary tests; here it only has to be right.
        let sniff = &input[..input.len().min(shellgate::truncate::SNIFF_BYTES)];
        if is_binary(sniff) {
            prop_assert!(out.starts_with("[binary output: "), "{:?}", out);
            return Ok(());
        }
        let expected = format!("\n{last}\n");
        prop_assert!(out.ends_with(&expected) || out == format!("{last}\n"), "{:?}", out);
    }

    #[test]
    fn markers_are_never_cut(input in text_input(), max_bytes in 150usize..3000, max_lines in 1usize..60) {
        let out = truncate(&input, &cfg(max_bytes, max_lines));
        let opens = out.matches("[REDACTED:").count();
        let whole = out.matches("[REDACTED:aws-secret-access-key]").count();
        prop_assert_eq!(opens, whole);
        prop_assert_eq!(out.matches("aws-secret-access-key]").count(), whole);
    }
}
