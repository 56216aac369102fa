//! Truncation of (already redacted) command output to a byte and line budget.
//!
//! What comes out is always valid UTF-8 (invalid bytes become U+FFFD, as
//! [`String::from_utf8_lossy`] does) and within budget:
//!
//! * **bytes**: the whole output, content and marker line included, is at most
//!   [`TruncateConfig::max_bytes`] bytes;
//! * **lines**: it has at most [`TruncateConfig::max_lines`] lines, the marker line included
//!   (a line is a run of bytes ended by `\n`, or the bytes after the last `\n`).
//!
//! Output that fits both budgets is returned whole. Otherwise a head and a tail are kept, the tail
//! twice the head (errors land at the end), cut at line boundaries where a line boundary exists
//! within the budget, else (one huge line) in the middle of the line, never inside a UTF-8
//! character nor inside a `[REDACTED:...]` marker. Between them one marker line says how much
//! was left out and where: `[... 1234 lines, 56789 bytes omitted from line 11 ...]` (lines =
//! newlines in the omitted text, bytes = UTF-8 bytes of it, line = the first line left out).
//! What the marker counts plus what is shown is always the whole output.
//!
//! Output the producer discarded before truncation (an executor's cap while the output
//! streamed, [`Truncator::skip`]) is counted in the same marker, which then also says that the
//! output was cut while it streamed and that a narrower command shows that part.
//!
//! Output whose first [`SNIFF_BYTES`] bytes hold a NUL byte, or are more than 30% invalid UTF-8
//! and control characters, is binary: it is not shown, and the marker counts all of it
//! (`[... 12 lines, 5123 bytes omitted: binary output (ELF executable), not shown ...]`, lines
//! and bytes of the raw output).
//!
//! [`Truncator`] does the same while streaming, with memory bounded by about
//! `max_bytes + max_bytes * 2 / 3` whatever the input size, and gives exactly the result of
//! [`truncate`] on the concatenation of its chunks.

use serde::{Deserialize, Serialize};

/// Bytes inspected to decide whether output is binary.
pub const SNIFF_BYTES: usize = 8192;

/// What the marker adds when the producer cut the output while it streamed.
const STREAM_NOTE: &str = "; the output was cut while it streamed: re-run with a narrower \
     command (head, tail, grep, sed -n) to see that part";

/// Bytes reserved for the marker line (its longest form, with 20-digit counts).
const MARKER_RESERVE: usize = "\n[... 18446744073709551615 lines, 18446744073709551615 bytes \
     omitted from line 18446744073709551615 ...]\n"
    .len()
    + STREAM_NOTE.len();

/// Lookback kept before the tail window to avoid cutting a `[REDACTED:...]` marker.
const MARKER_LOOKBACK: usize = 96;

/// Budgets for the text sent to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TruncateConfig {
    /// Most bytes of output, marker included (default 30,000).
    pub max_bytes: usize,
    /// Most lines of output, marker line included (default 400).
    pub max_lines: usize,
}

impl Default for TruncateConfig {
    fn default() -> Self {
        TruncateConfig {
            max_bytes: 30_000,
            max_lines: 400,
        }
    }
}

impl TruncateConfig {
    /// Bytes of content kept at the head when truncating (a third of the content budget).
    pub fn head_bytes(&self) -> usize {
        self.content_bytes() / 3
    }

    /// Bytes of content kept at the tail when truncating (the other two thirds).
    pub fn tail_bytes(&self) -> usize {
        self.content_bytes() - self.head_bytes()
    }

    /// Lines kept at the head when truncating.
    pub fn head_lines(&self) -> usize {
        self.max_lines.saturating_sub(1) / 3
    }

    /// Lines kept at the tail when truncating.
    pub fn tail_lines(&self) -> usize {
        self.max_lines.saturating_sub(1) - self.head_lines()
    }

    fn content_bytes(&self) -> usize {
        self.max_bytes.saturating_sub(MARKER_RESERVE)
    }
}

/// Truncates a whole buffer (bytes in, valid UTF-8 out; a fuzzing entry point).
pub fn truncate(input: &[u8], config: &TruncateConfig) -> String {
    let mut t = Truncator::new(config);
    t.feed(input);
    t.finish()
}

/// Streaming lossy UTF-8 decoding, identical to [`String::from_utf8_lossy`] on the whole input.
#[derive(Debug, Default)]
struct Decoder {
    carry: Vec<u8>,
}

impl Decoder {
    fn decode(&mut self, mut s: &[u8], out: &mut String) {
        if !self.carry.is_empty() {
            // Complete (or reject) the carried, incomplete character first.
            let have = self.carry.len();
            let mut tmp = std::mem::take(&mut self.carry);
            tmp.extend_from_slice(&s[..s.len().min(4 - have.min(4))]);
            match std::str::from_utf8(&tmp) {
                Ok(v) => {
                    // The carried prefix plus what follows is valid: emit its first character.
                    let c = v.chars().next().map_or(0, char::len_utf8);
                    out.push_str(&v[..c]);
                    s = &s[c.saturating_sub(have)..];
                }
                Err(e) if e.valid_up_to() > 0 => {
                    let c = std::str::from_utf8(&tmp[..e.valid_up_to()])
                        .ok()
                        .and_then(|v| v.chars().next())
                        .map_or(1, char::len_utf8);
                    out.push_str(std::str::from_utf8(&tmp[..c]).unwrap_or("\u{FFFD}"));
                    s = &s[c.saturating_sub(have)..];
                }
                Err(e) => match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        s = &s[n.saturating_sub(have)..];
                    }
                    None => {
                        // Still incomplete: `s` was too short to decide.
                        self.carry = tmp;
                        return;
                    }
                },
            }
        }
        loop {
            match std::str::from_utf8(s) {
                Ok(v) => {
                    out.push_str(v);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = s.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{FFFD}');
                            s = &rest[n..];
                        }
                        None => {
                            self.carry = rest.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    fn finish(&mut self, out: &mut String) {
        if !self.carry.is_empty() {
            out.push('\u{FFFD}');
            self.carry.clear();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Fewer than [`SNIFF_BYTES`] seen: not decided yet.
    Sniffing,
    Text,
    Binary,
}

/// Streaming truncation with bounded memory: keeps the head, a ring of the tail, and counts the
/// rest. [`Truncator::finish`] returns what [`truncate`] returns for all the bytes fed.
#[derive(Debug)]
pub struct Truncator {
    config: TruncateConfig,
    mode: Mode,
    /// Raw bytes while sniffing; for binary output, its first [`SNIFF_BYTES`] bytes (type guess).
    sniff: Vec<u8>,
    raw_total: u64,
    decoder: Decoder,
    /// Decoded text: its first `max_bytes` bytes.
    prefix: String,
    /// Decoded text: its last `tail_bytes + MARKER_LOOKBACK` bytes (more, until trimmed).
    tail: Vec<u8>,
    /// Decoded bytes and newlines seen.
    total: u64,
    newlines: u64,
    last_byte: Option<u8>,
    scratch: String,
    /// Newlines in the raw bytes (binary output is counted raw).
    raw_newlines: u64,
    /// Output the producer discarded before it reached us ([`Truncator::skip`]).
    skipped: Option<Skipped>,
}

/// What [`Truncator::skip`] was told, and where.
#[derive(Debug, Clone, Copy)]
struct Skipped {
    lines: u64,
    bytes: u64,
    /// Decoded bytes fed before the first skip (the head comes from these only).
    first_at: u64,
    /// Decoded bytes fed before the last skip (the tail comes from those after it only).
    last_at: u64,
}

impl Truncator {
    /// A truncator with the given budgets.
    pub fn new(config: &TruncateConfig) -> Self {
        Truncator {
            config: *config,
            mode: Mode::Sniffing,
            sniff: Vec::new(),
            raw_total: 0,
            decoder: Decoder::default(),
            prefix: String::new(),
            tail: Vec::new(),
            total: 0,
            newlines: 0,
            last_byte: None,
            scratch: String::new(),
            raw_newlines: 0,
            skipped: None,
        }
    }

    /// Takes the next chunk of output.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.raw_total += chunk.len() as u64;
        if self.mode != Mode::Text {
            // Only binary output is counted raw (text is counted as decoded).
            self.raw_newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        }
        match self.mode {
            Mode::Binary => {}
            Mode::Text => self.text(chunk),
            Mode::Sniffing => {
                let room = SNIFF_BYTES - self.sniff.len();
                let (now, later) = chunk.split_at(chunk.len().min(room));
                self.sniff.extend_from_slice(now);
                if self.sniff.len() >= SNIFF_BYTES {
                    self.decide();
                    if self.mode == Mode::Text {
                        self.text(later);
                    }
                }
            }
        }
    }

    /// Notes that the producer discarded `bytes` bytes holding `lines` newlines at this point
    /// of the stream (an executor's cap while the output streamed). They count as omitted in
    /// the marker, which then says the output was cut while streaming; the head is taken from
    /// before the first skip and the tail from after the last one.
    pub fn skip(&mut self, lines: u64, bytes: u64) {
        if self.mode == Mode::Sniffing {
            self.decide();
        }
        self.raw_total += bytes;
        self.raw_newlines += lines;
        if self.mode == Mode::Text {
            // A character cut by the gap is invalid: end it here, as a whole-buffer decode
            // of what was kept would.
            let mut rest = String::new();
            self.decoder.finish(&mut rest);
            self.push_text(&rest);
        }
        let at = self.total;
        let s = self.skipped.get_or_insert(Skipped {
            lines: 0,
            bytes: 0,
            first_at: at,
            last_at: at,
        });
        s.lines += lines;
        s.bytes += bytes;
        s.last_at = at;
        self.tail.clear();
    }

    fn decide(&mut self) {
        self.mode = if is_binary(&self.sniff) {
            Mode::Binary
        } else {
            Mode::Text
        };
        if self.mode == Mode::Text {
            // Text needs no sniff buffer any more: free it (memory stays bounded by budgets).
            let sniff = std::mem::take(&mut self.sniff);
            self.text(&sniff);
        }
    }

    fn text(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let mut s = std::mem::take(&mut self.scratch);
        s.clear();
        self.decoder.decode(chunk, &mut s);
        self.push_text(&s);
        self.scratch = s;
    }

    fn push_text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let bytes = s.as_bytes();
        self.total += bytes.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.last_byte = bytes.last().copied();
        let room = self.config.max_bytes.saturating_sub(self.prefix.len());
        // The head comes from before the first gap only.
        if room > 0 && self.skipped.is_none() {
            let mut cut = room.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.prefix.push_str(&s[..cut]);
        }
        let keep = self.config.tail_bytes() + MARKER_LOOKBACK;
        if bytes.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        } else {
            self.tail.extend_from_slice(bytes);
            if self.tail.len() > 2 * keep {
                let drop = self.tail.len() - keep;
                self.tail.drain(..drop);
            }
        }
    }

    /// Bytes held in memory now (head, tail ring and sniff buffer): bounded by the budgets.
    pub fn buffered(&self) -> usize {
        self.prefix.len() + self.tail.len() + self.sniff.len() + self.decoder.carry.len()
    }

    /// Ends the stream and returns the text for the model.
    pub fn finish(mut self) -> String {
        if self.mode == Mode::Sniffing {
            self.decide();
        }
        if self.mode == Mode::Binary {
            let mut s = format!(
                "[... {} lines, {} bytes omitted: binary output ({}), not shown ...]\n",
                self.raw_newlines,
                self.raw_total,
                guess_type(&self.sniff)
            );
            cut_to(&mut s, self.config.max_bytes);
            return s;
        }
        let mut rest = String::new();
        self.decoder.finish(&mut rest);
        self.push_text(&rest);
        let lines = self.newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'));
        if self.skipped.is_none()
            && self.total <= self.config.max_bytes as u64
            && lines <= self.config.max_lines as u64
        {
            // Fits: `prefix` is the whole text.
            return self.prefix;
        }
        self.assemble()
    }

    /// Builds head + marker + tail.
    fn assemble(&self) -> String {
        let cfg = &self.config;
        let total = usize::try_from(self.total).unwrap_or(usize::MAX);
        let ends_nl = self.last_byte == Some(b'\n');
        // Text the head may come from (before the first gap) and where the tail's may start
        // (after the last gap); without a gap, all of it for both.
        let (pre_len, post_start) = match self.skipped {
            Some(s) => (
                usize::try_from(s.first_at).unwrap_or(usize::MAX),
                usize::try_from(s.last_at).unwrap_or(usize::MAX),
            ),
            None => (total, 0),
        };
        let post_len = total - post_start;

        // Head: within the first head_bytes bytes and head_lines lines.
        let p = self.prefix.as_bytes();
        let window = &p[..p.len().min(cfg.head_bytes()).min(pre_len)];
        let mut head_end = if cfg.head_lines() == 0 {
            0
        } else {
            nth_newline_end(window, cfg.head_lines()).unwrap_or(window.len())
        };
        if head_end == window.len() && window.len() < pre_len && cfg.head_lines() > 0 {
            // The window ends mid-line: back up to its last line boundary, if any.
            head_end = match window.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => back_off_marker(p, floor_boundary(p, head_end)),
            };
        }

        // Tail: within the last tail_bytes bytes and tail_lines lines.
        let keep = cfg.tail_bytes().min(post_len);
        let t = &self.tail[..];
        let base_in_t = t.len().saturating_sub(keep);
        let w = &t[base_in_t..];
        let mut start_in_t = t.len();
        if cfg.tail_lines() > 0 && !w.is_empty() {
            // Newlines that start a kept line: all but a final newline.
            let body = if ends_nl { &w[..w.len() - 1] } else { w };
            let mut count = 0;
            let mut line_cut = None;
            for (i, &b) in body.iter().enumerate().rev() {
                if b == b'\n' {
                    count += 1;
                    if count == cfg.tail_lines() {
                        line_cut = Some(i + 1);
                        break;
                    }
                }
            }
            start_in_t = base_in_t
                + match line_cut {
                    Some(c) => c,
                    None if keep == post_len => 0,
                    None => match body.iter().position(|&b| b == b'\n') {
                        Some(i) => i + 1,
                        None => {
                            let c = ceil_boundary(t, base_in_t);
                            skip_marker(t, c) - base_in_t
                        }
                    },
                };
        }
        // Absolute offset of the tail start; never before the head end.
        let t_base_abs = total - t.len();
        let tail_start = (t_base_abs + start_in_t).max(head_end);
        let tail = &t[tail_start - t_base_abs..];
        let head = &p[..head_end];

        let (gap_lines, gap_bytes) = self.skipped.map_or((0, 0), |s| (s.lines, s.bytes));
        let omitted_bytes = (total - head.len() - tail.len()) as u64 + gap_bytes;
        let head_nl = memchr::memchr_iter(b'\n', head).count() as u64;
        let tail_nl = memchr::memchr_iter(b'\n', tail).count() as u64;
        let omitted_lines = self.newlines - head_nl - tail_nl + gap_lines;

        let mut out = String::with_capacity(head.len() + tail.len() + MARKER_RESERVE);
        out.push_str(&String::from_utf8_lossy(head));
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        let from = head_nl + 1;
        let note = if self.skipped.is_some() {
            STREAM_NOTE
        } else {
            ""
        };
        out.push_str(&format!(
            "[... {omitted_lines} lines, {omitted_bytes} bytes omitted from line {from}{note} ...]\n"
        ));
        out.push_str(&String::from_utf8_lossy(tail));
        cut_to(&mut out, cfg.max_bytes);
        out
    }
}

/// Offset just after the `n`-th newline, if there are that many.
fn nth_newline_end(s: &[u8], n: usize) -> Option<usize> {
    s.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(n.checked_sub(1)?)
        .map(|(i, _)| i + 1)
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

fn floor_boundary(s: &[u8], mut i: usize) -> usize {
    while i > 0 && i < s.len() && is_continuation(s[i]) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_continuation(s[i]) {
        i += 1;
    }
    i
}

const MARKER_OPEN: &[u8] = b"[REDACTED:";

/// A head cut at `c` inside a `[REDACTED:...]` marker moves back to the marker's start.
fn back_off_marker(s: &[u8], c: usize) -> usize {
    let from = c.saturating_sub(MARKER_LOOKBACK);
    let Some(open) = s[from..c]
        .windows(MARKER_OPEN.len())
        .rposition(|w| w == MARKER_OPEN)
        .map(|i| from + i)
    else {
        // `c` may also fall inside the opening `[REDACTED:` itself.
        return back_off_partial_open(s, c);
    };
    match s[open..].iter().position(|&b| b == b']') {
        Some(close) if open + close < c => back_off_partial_open(s, c),
        _ => open,
    }
}

/// If the bytes just before `c` are a proper prefix of `[REDACTED:`, cut before them.
fn back_off_partial_open(s: &[u8], c: usize) -> usize {
    for k in (1..MARKER_OPEN.len()).rev() {
        if c >= k && s[c - k..c] == MARKER_OPEN[..k] {
            return c - k;
        }
    }
    c
}

/// A tail start at `c` inside a `[REDACTED:...]` marker moves past the marker's end.
fn skip_marker(s: &[u8], c: usize) -> usize {
    // A `[REDACTED:` that starts before `c` and ends after it (the cut is inside the opening)...
    let spanning = (1..MARKER_OPEN.len()).find_map(|k| {
        let st = c.checked_sub(k)?;
        (s.get(st..st + MARKER_OPEN.len()) == Some(MARKER_OPEN)).then_some(st)
    });
    // ...or the last whole opening before `c`.
    let from = c.saturating_sub(MARKER_LOOKBACK);
    let open = spanning.or_else(|| {
        s[from..c.min(s.len())]
            .windows(MARKER_OPEN.len())
            .rposition(|w| w == MARKER_OPEN)
            .map(|i| from + i)
    });
    match open {
        Some(o) => match s[o..].iter().position(|&b| b == b']') {
            Some(close) if o + close >= c => o + close + 1,
            _ => c,
        },
        None => c,
    }
}

/// Cuts a string to at most `max` bytes, on a character boundary.
fn cut_to(s: &mut String, max: usize) {
    if s.len() > max {
        let mut c = max;
        while !s.is_char_boundary(c) {
            c -= 1;
        }
        s.truncate(c);
    }
}

/// Whether sniffed bytes look binary: a NUL byte, or more than 30% invalid UTF-8 and control
/// characters (tab, newline, carriage return, form feed, backspace and escape are text).
pub fn is_binary(sniff: &[u8]) -> bool {
    if sniff.contains(&0) {
        return true;
    }
    let mut bad = 0usize;
    for chunk in sniff.utf8_chunks() {
        bad += chunk.invalid().len();
        bad += chunk
            .valid()
            .bytes()
            .filter(|&b| {
                (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x08 | 0x1b)) || b == 0x7f
            })
            .count();
    }
    bad * 10 > sniff.len() * 3
}

/// A guess at what binary data is, from its first bytes.
pub fn guess_type(data: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x7fELF", "ELF executable"),
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"\x1f\x8b", "gzip data"),
        (b"PK\x03\x04", "zip archive"),
        (b"BZh", "bzip2 data"),
        (b"\xfd7zXZ\x00", "xz data"),
        (b"\x28\xb5\x2f\xfd", "zstd data"),
        (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
        (b"\xca\xfe\xba\xbe", "Java class or Mach-O universal binary"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"\xce\xfa\xed\xfe", "Mach-O executable"),
        (b"MZ", "PE/DOS executable"),
        (b"\x00asm", "WebAssembly module"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"RIFF", "RIFF data (WAV/AVI/WebP)"),
        (b"OggS", "Ogg media"),
        (b"ID3", "MP3 audio"),
        (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
        (b"!<arch>\n", "ar archive (static library or .deb)"),
        (b"\xed\xab\xee\xdb", "RPM package"),
        (b"\x00\x00\x01\x00", "ICO image"),
    ];
    for (magic, name) in MAGIC {
        if data.starts_with(magic) {
            return name;
        }
    }
    if data.get(257..262) == Some(b"ustar") {
        return "tar archive";
    }
    if data.len() > 8 && &data[4..8] == b"ftyp" {
        return "MP4/QuickTime media";
    }
    "data"
}
