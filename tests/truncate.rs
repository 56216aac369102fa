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
        "[... 0 lines, 100008 bytes omitted: binary output (ELF executable), not shown ...]\n"
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
            prop_assert!(out.contains(": binary output ("), "{:?}", out);
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

// ---- Truthful markers: shown + omitted = total -------------------------------------------

/// The counts of the marker line `[... N lines, M bytes omitted ...]`, with where the line is.
fn marker(out: &str) -> Option<(usize, usize, u64, u64)> {
    let mut at = 0;
    for line in out.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("[... ") {
            let (n, rest) = rest.split_once(" lines, ")?;
            let (m, _) = rest.split_once(" bytes omitted")?;
            return Some((at, at + line.len(), n.parse().ok()?, m.parse().ok()?));
        }
        at += line.len();
    }
    None
}

fn newlines(s: &str) -> u64 {
    s.matches('\n').count() as u64
}

/// Checks that what `out` shows plus what its marker says was omitted is exactly the text
/// `pre` + a gap of `gap` (lines, bytes) + `post`: the head is a prefix of `pre`, the tail a
/// suffix of `post` (of `pre` without a gap), and the byte and line counts add up.
fn accounts_for(out: &str, pre: &str, gap: Option<(u64, u64)>, post: &str) -> Result<(), String> {
    let (gl, gb) = gap.unwrap_or((0, 0));
    let total_bytes = (pre.len() + post.len()) as u64 + gb;
    let total_lines = newlines(pre) + newlines(post) + gl;
    let Some((ms, me, lines, bytes)) = marker(out) else {
        return if gap.is_none() && out == pre {
            Ok(())
        } else {
            Err(format!("no marker in {out:?}"))
        };
    };
    let (head_part, tail) = (&out[..ms], &out[me..]);
    let tail_src = if gap.is_some() { post } else { pre };
    if !tail_src.ends_with(tail) {
        return Err(format!("tail {tail:?} is not the end of the output"));
    }
    // The truncator ends a partial head line with a newline of its own: try both readings.
    let candidates = [Some(head_part), head_part.strip_suffix('\n')];
    for head in candidates.into_iter().flatten() {
        if pre.starts_with(head)
            && (head.len() + tail.len()) as u64 + bytes == total_bytes
            && newlines(head) + newlines(tail) + lines == total_lines
        {
            return Ok(());
        }
    }
    Err(format!(
        "shown {} + {tail:?} and omitted ({lines} lines, {bytes} bytes) do not add up to \
         {total_lines} lines, {total_bytes} bytes",
        head_part.len()
    ))
}

fn feed_in_chunks(t: &mut Truncator, data: &[u8], cuts: &[usize]) {
    let mut at = 0;
    for &cut in cuts {
        let end = (at + cut).min(data.len());
        t.feed(&data[at..end]);
        at = end;
    }
    t.feed(&data[at..]);
}

#[test]
fn the_marker_counts_lines_and_bytes_and_says_where() {
    let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    let out = truncate(text.as_bytes(), &cfg(30_000, 31));
    let (_, _, lines, bytes) = marker(&out).expect("a marker");
    assert_eq!(lines, 970);
    let omitted: String = (11..=980).map(|i| format!("line {i}\n")).collect();
    assert_eq!(bytes, omitted.len() as u64);
    assert!(out.contains(" bytes omitted from line 11 ...]\n"), "{out}");
    accounts_for(&out, &text, None, "").unwrap();
}

#[test]
fn a_gap_is_counted_in_the_one_marker_and_says_how_to_see_it() {
    let head: String = (1..=100).map(|i| format!("{i}\n")).collect();
    let tail: String = (900..=1000).map(|i| format!("{i}\n")).collect();
    let gap_text: String = (101..900).map(|i| format!("{i}\n")).collect();
    let c = cfg(30_000, 400);
    let mut t = Truncator::new(&c);
    t.feed(head.as_bytes());
    t.skip(newlines(&gap_text), gap_text.len() as u64);
    t.feed(tail.as_bytes());
    let out = t.finish();
    // Everything else fits: head, one marker, tail.
    assert_eq!(out.matches("[... ").count(), 1, "{out}");
    assert!(out.starts_with(&head), "{out}");
    assert!(out.ends_with(&tail), "{out}");
    assert!(out.contains(&format!(
        "[... 799 lines, {} bytes omitted from line 101; the output was cut while it streamed: \
         re-run with a narrower command (head, tail, grep, sed -n) to see that part ...]\n",
        gap_text.len()
    )));
    accounts_for(&out, &head, Some((799, gap_text.len() as u64)), &tail).unwrap();
}

#[test]
fn binary_output_counts_every_byte_and_newline_of_a_gap() {
    let mut t = Truncator::new(&TruncateConfig::default());
    let mut elf = b"\x7fELF\n\x00".to_vec();
    elf.extend(std::iter::repeat_n(0u8, 10_000));
    t.feed(&elf);
    t.skip(7, 50_000_000);
    t.feed(b"\n\x00\x01");
    assert_eq!(
        t.finish(),
        "[... 9 lines, 50010009 bytes omitted: binary output (ELF executable), not shown ...]\n"
    );
}

fn binary_input() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..12_000),
        0usize..12_000,
    )
        .prop_map(|(mut v, at)| {
            // Make sure it is binary: a NUL byte within the sniffed prefix.
            let at = at.min(v.len()).min(shellgate::truncate::SNIFF_BYTES - 1);
            v.insert(at, 0);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn shown_plus_omitted_is_the_total(pre in text_input(), post in text_input(),
                                       gap in proptest::option::of((0u64..50, 0u64..100_000)),
                                       max_bytes in 400usize..4000, max_lines in 2usize..60,
                                       cuts in proptest::collection::vec(0usize..300, 0..20)) {
        let c = cfg(max_bytes, max_lines);
        let gap = gap.map(|(l, b)| (l, b.max(l)));
        let mut t = Truncator::new(&c);
        feed_in_chunks(&mut t, &pre, &cuts);
        let post = if let Some((l, b)) = gap {
            t.skip(l, b);
            feed_in_chunks(&mut t, &post, &cuts);
            post
        } else {
            Vec::new()
        };
        let out = t.finish();
        let all: Vec<u8> = [&pre[..], &post[..]].concat();
        // A gap ends the sniffing: what came before it decides.
        let sniffed = if gap.is_some() { &pre[..] } else { &all[..] };
        let sniff = &sniffed[..sniffed.len().min(shellgate::truncate::SNIFF_BYTES)];
        if is_binary(sniff) {
            let (_, _, lines, bytes) = marker(&out).expect("binary marker");
            let (gl, gb) = gap.unwrap_or((0, 0));
            prop_assert_eq!(lines, all.iter().filter(|&&b| b == b'\n').count() as u64 + gl);
            prop_assert_eq!(bytes, all.len() as u64 + gb);
            return Ok(());
        }
        let (pre, post) = (String::from_utf8_lossy(&pre), String::from_utf8_lossy(&post));
        if let Err(e) = accounts_for(&out, &pre, gap, &post) {
            return Err(TestCaseError::fail(e));
        }
        prop_assert!(out.len() <= max_bytes);
        prop_assert!(lines(&out) <= max_lines);
    }

    #[test]
    fn binary_shown_plus_omitted_is_the_total(data in binary_input(),
                                              gap in proptest::option::of((0u64..50, 0u64..100_000)),
                                              cuts in proptest::collection::vec(0usize..3000, 0..10)) {
        let mut t = Truncator::new(&TruncateConfig::default());
        // The gap comes after the NUL byte that makes it binary (a gap ends the sniffing).
        let nul = data.iter().position(|&b| b == 0).unwrap_or(0);
        let half = (data.len() / 2).max(nul + 1);
        feed_in_chunks(&mut t, &data[..half], &cuts);
        if let Some((l, b)) = gap {
            t.skip(l, b);
        }
        feed_in_chunks(&mut t, &data[half..], &cuts);
        let out = t.finish();
        let (gl, gb) = gap.unwrap_or((0, 0));
        let (_, _, lines, bytes) = marker(&out).expect("binary marker");
        prop_assert!(out.contains(": binary output ("), "{:?}", out);
        prop_assert_eq!(lines, data.iter().filter(|&&b| b == b'\n').count() as u64 + gl);
        prop_assert_eq!(bytes, data.len() as u64 + gb);
    }
}

// ---- Through the real session: what the model is told about a huge output ---------------

mod through_the_session {
    use super::{accounts_for, marker, newlines};
    use shellgate::middleware::{BashSession, Guard, SessionConfig, StreamRedaction, ToolUse};
    use shellgate::{Context, Policy};
    use std::time::{Duration, Instant};

    const POLICY: &str = r#"
[policy]
name = "truncate-test"
default = "deny"

[paths]
read = ["{workspace}", "{workspace}/**"]
write = ["/dev/null"]

[programs.cat]
operands = "path-read"

[programs.seq]
operands = "text"
"#;

    /// A guard over a real session. The big tests switch the session's stream redaction off:
    /// in a debug build it runs at a few MB/s, and what it changes is counted like any other
    /// byte (`stream_redaction_is_counted_as_what_the_model_could_see` checks that).
    fn guard(dir: &std::path::Path, redaction: StreamRedaction) -> Guard<BashSession> {
        let policy = Policy::from_toml(POLICY, "truncate-test.toml").expect("test policy");
        let config = SessionConfig::new(dir)
            .timeout(Duration::from_secs(60))
            .redaction(redaction);
        Guard::new(policy, Context::new(dir), BashSession::new(config).unwrap())
    }

    /// Runs `cmd` and checks that the one marker accounts for `expected`, the whole output.
    fn check(dir: &std::path::Path, cmd: &str, expected: &str, r: StreamRedaction) -> String {
        let mut g = guard(dir, r);
        let started = Instant::now();
        let r = g
            .handle(&ToolUse::bash("toolu_big", cmd))
            .result
            .into_tool_result();
        eprintln!("{cmd}: {:?}", started.elapsed());
        assert!(!r.is_error, "{}", r.content);
        let out = r.content;
        assert!(out.len() <= 30_000, "{} bytes", out.len());
        assert_eq!(out.matches("[... ").count(), 1, "one marker: {out}");
        assert!(out.contains("cut while it streamed: re-run with a narrower command"));
        accounts_for(&out, expected, None, "").unwrap();
        out
    }

    #[test]
    fn cat_of_a_23_mb_file_is_accounted_for() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..3_000_000u32).map(|i| format!("{i}\n")).collect();
        assert!(text.len() > 20_000_000);
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        let out = check(dir.path(), "cat big.txt", &text, StreamRedaction::Off);
        let (_, _, lines, _) = marker(&out).unwrap();
        assert_eq!(lines + newlines(&out) - 1, 3_000_000, "{out}");
    }

    /// A command that is killed by the timeout after endless output: the marker before the
    /// timeout message still counts what the session dropped while it streamed.
    #[test]
    fn output_cut_by_a_timeout_is_accounted_for() {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::from_toml(
            &format!("{POLICY}\n[programs.sleep]\noperands = \"text\"\n"),
            "truncate-test.toml",
        )
        .expect("test policy");
        let config = SessionConfig::new(dir.path())
            .timeout(Duration::from_secs(3))
            .redaction(StreamRedaction::Off);
        let mut g = Guard::new(
            policy,
            Context::new(dir.path()),
            BashSession::new(config).unwrap(),
        );
        let r = g
            .handle(&ToolUse::bash("toolu_slow", "seq 1 2000000; sleep 60"))
            .result
            .into_tool_result();
        assert!(r.is_error, "{}", r.content);
        assert!(r.content.contains("timed out"), "{}", r.content);
        let text: String = (1..=2_000_000u32).map(|i| format!("{i}\n")).collect();
        let body = r.content.split("Error: command timed out").next().unwrap();
        assert_eq!(body.matches("[... ").count(), 1, "one marker: {body}");
        accounts_for(body, &text, None, "").unwrap();
    }

    #[test]
    fn seq_of_five_million_lines_is_accounted_for() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=5_000_000u32).map(|i| format!("{i}\n")).collect();
        let out = check(dir.path(), "seq 1 5000000", &text, StreamRedaction::Off);
        // The lines shown are consecutive up to the marker and from it on.
        let shown: Vec<u64> = out
            .lines()
            .filter(|l| !l.starts_with("[... "))
            .map(|l| l.parse().unwrap())
            .collect();
        let (_, _, omitted, _) = marker(&out).unwrap();
        let head = shown.windows(2).position(|w| w[1] != w[0] + 1).unwrap() + 1;
        assert_eq!(shown[head], shown[head - 1] + omitted + 1, "{out}");
        assert!(
            out.contains(&format!("omitted from line {}", head + 1)),
            "{out}"
        );
        assert_eq!(*shown.last().unwrap(), 5_000_000);
    }

    #[test]
    fn fifty_mb_of_binary_output_is_accounted_for() {
        let dir = tempfile::tempdir().unwrap();
        // Deterministic noise with NUL bytes and newlines.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let data: Vec<u8> = (0..50 * 1024 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        std::fs::write(dir.path().join("blob.bin"), &data).unwrap();
        let mut g = guard(dir.path(), StreamRedaction::Off);
        let started = Instant::now();
        let r = g
            .handle(&ToolUse::bash("toolu_bin", "cat blob.bin"))
            .result
            .into_tool_result();
        eprintln!("cat blob.bin: {:?}", started.elapsed());
        let (_, _, lines, bytes) = marker(&r.content).expect(&r.content);
        assert!(r.content.contains(": binary output ("), "{}", r.content);
        let nl = data.iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!((lines, bytes), (nl, data.len() as u64), "{}", r.content);
    }

    #[test]
    fn stream_redaction_is_counted_as_what_the_model_could_see() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "export API_KEY=0yilnnn2qUkxV7yiH1DAPmB26N3hiD0s\n";
        let text: String = (0..60_000u32)
            .map(|i| {
                if i % 997 == 0 {
                    secret.to_string()
                } else {
                    format!("build step {i} ok\n")
                }
            })
            .collect();
        std::fs::write(dir.path().join("log.txt"), &text).unwrap();
        let (redacted, stats) = shellgate::redact::RuleSet::builtin().redact(text.as_bytes());
        assert_eq!(stats.total(), 61);
        let redacted = String::from_utf8(redacted).unwrap();
        let out = check(
            dir.path(),
            "cat log.txt",
            &redacted,
            StreamRedaction::Builtin,
        );
        assert!(!out.contains("0yilnnn2qUkxV7yiH1DAPmB26N3hiD0s"), "{out}");
    }
}
