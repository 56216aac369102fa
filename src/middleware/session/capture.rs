//! A call's output kept within its cap while it streams: redacted first ([`Sink`]), then
//! head and tail kept with the gap between them counted ([`Capture`]).

use super::super::Gap;
use crate::redact::Redactor;

/// Redacts (when configured) and then captures the command's output.
pub(super) struct Sink<'r> {
    pub(super) redactor: Option<Redactor<'r>>,
    pub(super) buf: Vec<u8>,
    pub(super) capture: Capture,
}

impl Sink<'_> {
    pub(super) fn push(&mut self, data: &[u8]) {
        match &mut self.redactor {
            Some(r) => {
                self.buf.clear();
                r.feed(data, &mut self.buf);
                self.capture.push(&self.buf);
            }
            None => self.capture.push(data),
        }
    }

    pub(super) fn finish(mut self) -> (Vec<u8>, Option<Gap>) {
        if let Some(r) = &mut self.redactor {
            self.buf.clear();
            r.finish(&mut self.buf);
            self.capture.push(&self.buf);
        }
        self.capture.finish()
    }
}

/// Keeps the first third and the last two thirds of `max` bytes of a stream, counting the
/// bytes and newlines that fall in between.
pub(super) struct Capture {
    pub(super) head: Vec<u8>,
    /// The stream's last bytes: at most `2 * tail_cap`, trimmed to `tail_cap` at the end.
    pub(super) tail: Vec<u8>,
    pub(super) head_cap: usize,
    pub(super) tail_cap: usize,
    pub(super) dropped: u64,
    pub(super) dropped_lines: u64,
}

impl Capture {
    pub(super) fn new(max: usize) -> Capture {
        let head_cap = max / 3;
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: max - head_cap,
            dropped: 0,
            dropped_lines: 0,
        }
    }

    pub(super) fn drop_bytes(&mut self, bytes: &[u8]) {
        self.dropped += bytes.len() as u64;
        self.dropped_lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
    }

    pub(super) fn push(&mut self, mut data: &[u8]) {
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        if data.len() >= self.tail_cap {
            let old = std::mem::take(&mut self.tail);
            self.drop_bytes(&old);
            let (gone, kept) = data.split_at(data.len() - self.tail_cap);
            self.drop_bytes(gone);
            self.tail = old;
            self.tail.clear();
            self.tail.extend_from_slice(kept);
        } else {
            self.tail.extend_from_slice(data);
            if self.tail.len() > 2 * self.tail_cap {
                self.trim_tail();
            }
        }
    }

    /// Drops all but the last `tail_cap` bytes of the tail.
    pub(super) fn trim_tail(&mut self) {
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        if excess > 0 {
            let gone: Vec<u8> = self.tail.drain(..excess).collect();
            self.drop_bytes(&gone);
        }
    }

    /// The kept output, and the gap when something was discarded: a marker line there says
    /// how many lines and bytes, and the [`Gap`] gives its place, so that a filter can count
    /// them in its own marker.
    pub(super) fn finish(mut self) -> (Vec<u8>, Option<Gap>) {
        self.trim_tail();
        if self.dropped == 0 {
            let mut head = std::mem::take(&mut self.head);
            head.extend_from_slice(&self.tail);
            return (head, None);
        }
        // Cut on line boundaries near the gap, so that no line (and no secret in it) is kept
        // in part.
        let mut head = std::mem::take(&mut self.head);
        let mut tail = std::mem::take(&mut self.tail);
        if let Some(i) = memchr::memrchr(b'\n', &head) {
            if head.len() - i <= head.len() / 4 + 1 {
                let gone = head.split_off(i + 1);
                self.drop_bytes(&gone);
            }
        }
        if let Some(i) = memchr::memchr(b'\n', &tail) {
            if i <= tail.len() / 4 {
                let gone: Vec<u8> = tail.drain(..=i).collect();
                self.drop_bytes(&gone);
            }
        }
        // The newline that ends a partial head line belongs to the marker, not to the output.
        let start = head.len();
        if !head.is_empty() && !head.ends_with(b"\n") {
            head.push(b'\n');
        }
        head.extend_from_slice(
            format!(
                "[... {} lines, {} bytes omitted; the output was cut while it streamed: re-run \
                 with a narrower command (head, tail, grep, sed -n) to see that part ...]\n",
                self.dropped_lines, self.dropped
            )
            .as_bytes(),
        );
        let gap = Gap {
            marker: start..head.len(),
            lines: self.dropped_lines,
            bytes: self.dropped,
        };
        head.extend_from_slice(&tail);
        (head, Some(gap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = Capture::new(30);
        for i in 0..100 {
            c.push(format!("{i:03}\n").as_bytes());
        }
        let (out, gap) = c.finish();
        let gap = gap.expect("a gap");
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("000\n001\n"), "{text}");
        assert!(text.ends_with("098\n099\n"), "{text}");
        let marker = std::str::from_utf8(&out[gap.marker.clone()]).unwrap();
        assert_eq!(
            marker,
            format!(
                "[... {} lines, {} bytes omitted; the output was cut while it streamed: re-run \
                 with a narrower command (head, tail, grep, sed -n) to see that part ...]\n",
                gap.lines, gap.bytes
            )
        );
        let kept_lines = text.lines().filter(|l| l.len() == 3).count() as u64;
        assert_eq!(kept_lines * 4 + gap.bytes, 400, "{text}");
        assert_eq!(kept_lines + gap.lines, 100, "{text}");
    }
}
