//! Streaming redaction: a line machine fed chunks of any size.

use super::engine::{Kind, RuleSet, Scratch};
use super::{Stats, MAX_BLOCK_BYTES, MAX_BLOCK_LINES, MAX_LINE};

/// A multi-line block being held until it closes.
#[derive(Debug)]
struct Hold {
    rule: u32,
    /// The opening line.
    begin: Vec<u8>,
    /// Body lines held so far.
    body: Vec<u8>,
    lines: usize,
}

/// What a section's mapping says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Its deciding key says so (`kind: Secret`), or the rule has no `section_if`.
    Redact,
    /// Its deciding key says otherwise (`kind: ConfigMap`).
    Keep,
    /// The mapping ended without a deciding key (output cut by `head` or `grep`): each value
    /// is redacted if it is shaped like secret data (see [`super::engine::secret_shaped`]).
    ByShape,
}

/// A section of a `section_if` rule held until its mapping says whether it is redacted.
#[derive(Debug)]
struct SectionHold {
    rule: u32,
    /// Indentation of the header line.
    indent: usize,
    /// The held segments, header first, and where each ends in `segs`.
    segs: Vec<u8>,
    ends: Vec<usize>,
}

/// A streaming redactor: feed it chunks of any size, in order; what it writes is exactly what
/// [`RuleSet::redact`] writes for the concatenation of the chunks.
///
/// Memory is bounded: a partial line is carried until its newline or until it reaches
/// [`MAX_LINE`] bytes (a longer line is cut into segments at the same places whole-buffer
/// redaction cuts it), and a multi-line block is held until it closes or reaches
/// [`MAX_BLOCK_LINES`] / [`MAX_BLOCK_BYTES`].
///
/// Use one `Redactor` per stream: stdout and stderr each get their own, so a line split across
/// the two is never joined and a block opened on one cannot swallow the other.
#[derive(Debug)]
pub struct Redactor<'r> {
    set: &'r RuleSet,
    /// Bytes of the current, incomplete segment.
    pending: Vec<u8>,
    hold: Option<Hold>,
    /// Inside a block that exceeded the bound: body lines are dropped until it ends.
    drain: Option<u32>,
    /// Inside a section (rule, indentation of the header line, whether only secret-shaped
    /// values are redacted).
    section: Option<(u32, usize, bool)>,
    /// A section waiting for its deciding key line.
    section_hold: Option<SectionHold>,
    /// The last deciding key line of a `section_if` rule still in scope: (rule, indentation,
    /// whether it said "redact").
    key_seen: Option<(u32, usize, bool)>,
    /// While held sections are replayed: their decision.
    forced: Option<Decision>,
    counts: Vec<u64>,
    hits: Vec<(usize, usize, u32)>,
    /// Candidate rules of the current segment, with where their last keyword starts in it.
    cands: Vec<(u32, usize)>,
    scratch: Scratch,
}

/// Where the segment starting at `start` ends, if it is complete: after the first newline within
/// [`MAX_LINE`] bytes; else, when [`MAX_LINE`] bytes are available, after the last blank, comma or
/// semicolon in the second half of that window, or at the window's end.
pub(crate) fn segment_end(buf: &[u8], start: usize) -> Option<usize> {
    let window_end = buf.len().min(start.saturating_add(MAX_LINE));
    let window = &buf[start..window_end];
    if let Some(i) = memchr::memchr(b'\n', window) {
        return Some(start + i + 1);
    }
    if window.len() < MAX_LINE {
        return None;
    }
    let half = MAX_LINE / 2;
    match window[half..]
        .iter()
        .rposition(|&b| matches!(b, b' ' | b'\t' | b',' | b';'))
    {
        Some(i) => Some(start + half + i + 1),
        None => Some(window_end),
    }
}

/// A body line of a key block: blank, an armor header (`Proc-Type: ...`), or base64 possibly
/// indented, quoted or followed by a continuation backslash.
fn is_body_line(line: &[u8]) -> bool {
    let t = trim(line);
    if t.is_empty() {
        return true;
    }
    let t = strip_edges(t);
    if t.iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return true;
    }
    // Armor header: `Name: value`.
    if let Some(colon) = t.iter().position(|&b| b == b':') {
        let name = &t[..colon];
        return !name.is_empty()
            && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
            && t.get(colon + 1) == Some(&b' ');
    }
    false
}

fn trim(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &line[start..end.max(start)]
}

fn strip_edges(mut t: &[u8]) -> &[u8] {
    while let [b'"' | b'\'' | b'+' | b'>', rest @ ..] = t {
        t = rest;
    }
    while let [rest @ .., b'"' | b'\'' | b',' | b'\\'] = t {
        t = rest;
    }
    t
}

fn has_key_material(body: &[u8]) -> bool {
    body.split(|&b| b == b'\n').any(|l| {
        let t = strip_edges(trim(l));
        !t.is_empty() && !t.contains(&b':') && t.iter().any(|b| b.is_ascii_alphanumeric())
    })
}

/// Sorts candidates by rule and keeps one per rule, with its last keyword start.
pub(crate) fn dedup_candidates(cands: &mut Vec<(u32, usize)>) {
    cands.sort_unstable();
    cands.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 = kept.1.max(later.1);
            true
        } else {
            false
        }
    });
}

fn indent_of(line: &[u8]) -> usize {
    line.iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count()
}

/// A YAML document marker (`---`, `...`).
fn is_document_marker(line: &[u8]) -> bool {
    let t = trim(line);
    t == b"..." || t.starts_with(b"---") && !matches!(t.get(3), Some(b) if !b.is_ascii_whitespace())
}

/// Whether `line` leaves the mapping whose keys are indented by `indent`: a document marker,
/// a line indented less, or one at that indentation that is neither a `key:` line nor JSON
/// closing brackets (`},`).
fn ends_mapping(line: &[u8], indent: usize) -> bool {
    if is_document_marker(line) {
        return true;
    }
    if is_blank(line) {
        return false;
    }
    let i = indent_of(line);
    let closer = trim(line).iter().all(|b| matches!(b, b'}' | b']' | b','));
    i < indent || i == indent && !is_key_line(line) && !closer
}

/// `key:` or `"key":` (YAML or JSON), possibly as a list item (`- key:`). A redaction marker
/// counts as the name characters it replaced (`xoxb-...data:` is `[REDACTED:slack-token]:` on a
/// second pass), so that redacted output is read as the same mapping and redaction stays
/// idempotent.
fn is_key_line(line: &[u8]) -> bool {
    let t = trim(line);
    let t = t.strip_prefix(b"- ").unwrap_or(t);
    let t = t.strip_prefix(b"\"").unwrap_or(t);
    let mut name = 0;
    loop {
        let run = t[name..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
            .count();
        name += run;
        match marker_len(&t[name..]) {
            Some(m) => name += m,
            None => break,
        }
    }
    let rest = &t[name..];
    let rest = rest.strip_prefix(b"\"").unwrap_or(rest);
    name > 0 && rest.first() == Some(&b':')
}

/// Length of the `[REDACTED:<id>]` marker `s` starts with, if it starts with one.
fn marker_len(s: &[u8]) -> Option<usize> {
    let rest = s.strip_prefix(b"[REDACTED:")?;
    let id = rest
        .iter()
        .take_while(|&&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        .count();
    (id > 0 && rest.get(id) == Some(&b']')).then_some(10 + id + 1)
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| b.is_ascii_whitespace())
}

impl<'r> Redactor<'r> {
    /// A redactor over a rule set (e.g. [`RuleSet::builtin`]).
    pub fn new(set: &'r RuleSet) -> Self {
        Redactor {
            set,
            pending: Vec::new(),
            hold: None,
            drain: None,
            section: None,
            section_hold: None,
            key_seen: None,
            forced: None,
            counts: vec![0; set.rules.len()],
            hits: Vec::new(),
            cands: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// Redacts what can be decided of `chunk` and appends it to `out`; the rest is carried.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        if chunk.is_empty() {
            return;
        }
        let mut data = chunk;
        // Complete the carried segment first, from the front of `data`; a forced split can
        // leave a remainder that is carried again.
        while !self.pending.is_empty() {
            let need = MAX_LINE - self.pending.len().min(MAX_LINE);
            let take_upto = data.len().min(need);
            match memchr::memchr(b'\n', &data[..take_upto]) {
                Some(i) => {
                    self.pending.extend_from_slice(&data[..=i]);
                    data = &data[i + 1..];
                }
                None => {
                    self.pending.extend_from_slice(&data[..take_upto]);
                    data = &data[take_upto..];
                    if self.pending.len() < MAX_LINE {
                        // No newline and no full window yet: `data` is used up.
                        return;
                    }
                }
            }
            let mut pending = std::mem::take(&mut self.pending);
            match segment_end(&pending, 0) {
                // Still incomplete: `data` is used up.
                None => {
                    self.pending = pending;
                    return;
                }
                Some(end) => {
                    let rest = pending.split_off(end);
                    self.run(&pending, out);
                    self.pending = rest;
                }
            }
        }
        // Complete segments of `data`: up to the last newline, then forced splits of the tail.
        let mut end = memchr::memrchr(b'\n', data).map_or(0, |i| i + 1);
        while let Some(e) = segment_end(data, end) {
            end = e;
        }
        if end > 0 {
            self.run(&data[..end], out);
        }
        self.pending.extend_from_slice(&data[end..]);
    }

    /// Ends the stream: redacts the last partial line and any open block, appending to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            let mut cands = Vec::new();
            self.set.candidates(&pending, &mut cands);
            self.step(&pending, &cands, out);
        }
        // Replaying held lines can hold again (a block's body holding a section header or
        // another block's opening line); each round holds fewer lines.
        loop {
            if let Some(h) = self.section_hold.take() {
                // Never decided: redacted (see `SectionIf`).
                self.replay(h, Decision::ByShape, out);
            } else if let Some(h) = self.hold.take() {
                self.flush_hold(h, out);
            } else {
                break;
            }
        }
        self.drain = None;
        self.section = None;
        self.key_seen = None;
    }

    /// Redactions made so far, per rule id.
    pub fn stats(&self) -> Stats {
        Stats::from_counts(self.set, &self.counts)
    }

    /// Processes a region made of complete segments.
    fn run(&mut self, region: &[u8], out: &mut Vec<u8>) {
        let mut hits = std::mem::take(&mut self.hits);
        let mut cands = std::mem::take(&mut self.cands);
        self.set.hits(region, &mut hits);
        let mut pos = 0;
        let mut hi = 0;
        while pos < region.len() {
            let stateful = self.hold.is_some()
                || self.drain.is_some()
                || self.section.is_some()
                || self.section_hold.is_some()
                || self.key_seen.is_some();
            let (seg_start, seg_end) = if stateful {
                (pos, segment_end(region, pos).unwrap_or(region.len()))
            } else {
                let Some(&(h, _, _)) = hits.get(hi) else {
                    out.extend_from_slice(&region[pos..]);
                    break;
                };
                // Start of the line holding the hit (or `pos`, itself a segment start).
                let mut s = memchr::memrchr(b'\n', &region[pos..h]).map_or(pos, |i| pos + i + 1);
                // Inside an over-long line, walk its segments to the one holding the hit.
                let e = loop {
                    let e = segment_end(region, s).unwrap_or(region.len());
                    if h < e {
                        break e;
                    }
                    s = e;
                };
                out.extend_from_slice(&region[pos..s]);
                (s, e)
            };
            while hits.get(hi).is_some_and(|&(h, _, _)| h < seg_start) {
                hi += 1;
            }
            cands.clear();
            while let Some(&(h, e, r)) = hits.get(hi) {
                if h >= seg_end {
                    break;
                }
                if e <= seg_end {
                    cands.push((r, h - seg_start));
                }
                hi += 1;
            }
            dedup_candidates(&mut cands);
            self.step(&region[seg_start..seg_end], &cands, out);
            pos = seg_end;
        }
        self.hits = hits;
        self.cands = cands;
    }

    /// Processes one segment with its candidate rules.
    fn step(&mut self, seg: &[u8], cands: &[(u32, usize)], out: &mut Vec<u8>) {
        if self.section_hold.is_some() && self.hold_section(seg, out) {
            return;
        }
        if let Some((_, indent, _)) = self.key_seen {
            if ends_mapping(seg, indent) {
                self.key_seen = None;
            }
        }
        if let Some(mut h) = self.hold.take() {
            let end = match self
                .set
                .rules
                .get(h.rule as usize)
                .map(|r| &r.compiled().kind)
            {
                Some(Kind::Block { end, .. }) => end.is_match(seg),
                _ => true,
            };
            // The closing line is then processed like any other: it may open another block.
            if !end && is_body_line(seg) {
                if h.lines < MAX_BLOCK_LINES && h.body.len() + seg.len() <= MAX_BLOCK_BYTES {
                    h.body.extend_from_slice(seg);
                    h.lines += 1;
                    self.hold = Some(h);
                    return;
                }
                // Bound reached: redact what is held and drop the rest of the body.
                let rule = h.rule;
                self.flush_hold(h, out);
                self.drain = Some(rule);
                return;
            }
            self.flush_hold(h, out);
            // The held lines may have changed the state this line is read in (a `kind:`
            // line, a section header, a block opening): read it again from the top, as it
            // would have been read had no block been held.
            return self.step(seg, cands, out);
        }
        if let Some(rule) = self.drain {
            let end = match self
                .set
                .rules
                .get(rule as usize)
                .map(|r| &r.compiled().kind)
            {
                Some(Kind::Block { end, .. }) => end.is_match(seg),
                _ => true,
            };
            if !end && is_body_line(seg) && !is_blank(seg) {
                return;
            }
            self.drain = None;
        }
        // A block rule's opening line starts holding.
        for &(c, _) in cands {
            if let Some(Kind::Block { begin, .. }) =
                self.set.rules.get(c as usize).map(|r| &r.compiled().kind)
            {
                if begin.is_match(seg) {
                    self.hold = Some(Hold {
                        rule: c,
                        begin: seg.to_vec(),
                        body: Vec::new(),
                        lines: 0,
                    });
                    return;
                }
            }
        }
        self.plain(seg, cands, out);
    }

    /// Redacts a line outside any block, tracking sections.
    fn plain(&mut self, seg: &[u8], cands: &[(u32, usize)], out: &mut Vec<u8>) {
        let mut extra = None;
        if let Some((rule, indent, shape)) = self.section {
            if is_blank(seg) {
                extra = None;
            } else if indent_of(seg) > indent {
                extra = Some((rule, shape));
            } else {
                self.section = None;
            }
        }
        if extra.is_none() {
            for &(c, _) in cands {
                if let Some(Kind::Section { header, when }) =
                    self.set.rules.get(c as usize).map(|r| &r.compiled().kind)
                {
                    let indent = indent_of(seg);
                    if let Some((key, value)) = when {
                        if key.is_match(seg) {
                            self.key_seen = Some((c, indent, value.is_match(seg)));
                        }
                    }
                    if header.is_match(seg) {
                        let decided = match when {
                            None => Some(Decision::Redact),
                            Some(_) => self.forced.or(match self.key_seen {
                                Some((r, i, true)) if r == c && i == indent => {
                                    Some(Decision::Redact)
                                }
                                Some((r, i, false)) if r == c && i == indent => {
                                    Some(Decision::Keep)
                                }
                                _ => None,
                            }),
                        };
                        match decided {
                            Some(Decision::Redact) => self.section = Some((c, indent, false)),
                            Some(Decision::ByShape) => self.section = Some((c, indent, true)),
                            Some(Decision::Keep) => {}
                            None => {
                                // Undecided: hold the section until its mapping decides.
                                self.section_hold = Some(SectionHold {
                                    rule: c,
                                    indent,
                                    segs: seg.to_vec(),
                                    ends: vec![seg.len()],
                                });
                                return;
                            }
                        }
                        break;
                    }
                }
            }
        }
        self.set
            .redact_line(seg, cands, extra, out, &mut self.counts, &mut self.scratch);
    }

    /// Takes `seg` into the held section, or decides the section (and returns `false`: `seg`
    /// is then processed as usual).
    fn hold_section(&mut self, seg: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(h) = self.section_hold.as_mut() else {
            return false;
        };
        let when = match self
            .set
            .rules
            .get(h.rule as usize)
            .map(|r| &r.compiled().kind)
        {
            Some(Kind::Section {
                when: Some(when), ..
            }) => Some(when),
            _ => None,
        };
        let decision = if ends_mapping(seg, h.indent) {
            // The mapping ended undecided.
            Decision::ByShape
        } else if let Some((key, value)) =
            when.filter(|_| !is_blank(seg) && indent_of(seg) == h.indent)
        {
            if key.is_match(seg) {
                if value.is_match(seg) {
                    Decision::Redact
                } else {
                    Decision::Keep
                }
            } else {
                return self.absorb(seg, out);
            }
        } else {
            return self.absorb(seg, out);
        };
        if let Some(h) = self.section_hold.take() {
            self.replay(h, decision, out);
        }
        false
    }

    /// Adds `seg` to the held section, unless that would pass the bound: then the section is
    /// decided as redacted and `seg` processed as usual (returns `false`).
    fn absorb(&mut self, seg: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(h) = self.section_hold.as_mut() else {
            return false;
        };
        if h.ends.len() <= MAX_BLOCK_LINES && h.segs.len() + seg.len() <= MAX_BLOCK_BYTES {
            h.segs.extend_from_slice(seg);
            h.ends.push(h.segs.len());
            return true;
        }
        if let Some(h) = self.section_hold.take() {
            self.replay(h, Decision::ByShape, out);
        }
        false
    }

    /// Processes the segments of a held section with its decision.
    fn replay(&mut self, h: SectionHold, redact: Decision, out: &mut Vec<u8>) {
        let before = self.forced.replace(redact);
        let mut start = 0;
        let mut cands = Vec::new();
        for &end in &h.ends {
            let seg = &h.segs[start..end];
            self.set.candidates(seg, &mut cands);
            self.step(seg, &cands, out);
            start = end;
        }
        self.forced = before;
    }

    /// Writes a held block: its opening line, one marker line for the body (when it has key
    /// material; else the body as it was).
    fn flush_hold(&mut self, h: Hold, out: &mut Vec<u8>) {
        let mut cands = Vec::new();
        self.set.candidates(&h.begin, &mut cands);
        // The opening line is redacted as a plain line, without reopening a block.
        self.plain(&h.begin, &cands, out);
        if has_key_material(&h.body) {
            let indent = indent_of(&h.body);
            out.extend_from_slice(&h.body[..indent]);
            if let Some(rule) = self.set.rules.get(h.rule as usize) {
                out.extend_from_slice(&rule.marker);
            }
            if let Some(c) = self.counts.get_mut(h.rule as usize) {
                *c += 1;
            }
            if h.body.ends_with(b"\n") {
                out.push(b'\n');
            }
        } else {
            // Not a block after all: its lines are read as any lines are, with the state they
            // change (a `kind:` line and the lines that end its mapping, section headers), so
            // that output is read the same way when it comes back redacted (idempotence).
            for line in h.body.split_inclusive(|&b| b == b'\n') {
                let mut c = Vec::new();
                self.set.candidates(line, &mut c);
                self.step(line, &c, out);
            }
        }
    }
}
