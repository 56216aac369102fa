//! Finding a call's output in the shell's streams: skipped up to the call's random begin
//! line ([`Stream`]), then scanned up to its sentinel line with the exit status and working
//! directory ([`SentinelScanner`]).

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::super::Gap;
use super::capture::{Capture, Sink};
use super::shell::Wait;
use crate::redact::{Redactor, RuleSet};

/// One of the session's two output streams during a call: skipped up to the call's begin
/// line, then scanned up to its sentinel line.
pub(super) struct Stream<'r> {
    pub(super) begin: Vec<u8>,
    /// Bytes that might be the start of `begin` (before it was seen).
    pub(super) held: Vec<u8>,
    pub(super) begun: bool,
    pub(super) done: bool,
    pub(super) status: Option<(i32, Option<PathBuf>)>,
    pub(super) scanner: SentinelScanner<'r>,
}

impl<'r> Stream<'r> {
    pub(super) fn new(begin: &str, scanner: SentinelScanner<'r>) -> Stream<'r> {
        Stream {
            begin: begin.as_bytes().to_vec(),
            held: Vec::new(),
            begun: begin.is_empty(),
            done: false,
            status: None,
            scanner,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        if self.done {
            return; // after the sentinel: a background job's output, dropped
        }
        let rest;
        let data = if self.begun {
            chunk
        } else {
            self.held.extend_from_slice(chunk);
            match memchr::memmem::find(&self.held, &self.begin) {
                Some(i) => {
                    self.begun = true;
                    rest = self.held.split_off(i + self.begin.len());
                    self.held.clear();
                    &rest[..]
                }
                None => {
                    let keep = self.held.len().min(self.begin.len() - 1);
                    self.held.drain(..self.held.len() - keep);
                    return;
                }
            }
        };
        if let Some(Wait::Done { status, cwd }) = self.scanner.push(data) {
            self.done = true;
            self.status = Some((status, cwd));
        }
    }
}

/// Finds the sentinel line `\nSENTINEL STATUS PWD SENTINEL\n` in the stream and keeps what
/// comes before it in a [`Capture`].
pub(super) struct SentinelScanner<'r> {
    /// `\nSENTINEL `: the start of the sentinel line.
    pub(super) start: Vec<u8>,
    /// ` SENTINEL\n`: its end.
    pub(super) end: Vec<u8>,
    /// Bytes that might be the beginning of `start`, not yet committed.
    pub(super) pending: Vec<u8>,
    /// After `start` was seen: the rest of the sentinel line so far.
    pub(super) trailer: Option<Vec<u8>>,
    pub(super) capture: Sink<'r>,
}

/// Longest sentinel line accepted (the working directory is in it).
pub(super) const MAX_TRAILER: usize = 64 * 1024;

impl<'r> SentinelScanner<'r> {
    pub(super) fn new(
        sentinel: &str,
        max_output: usize,
        rules: Option<&'r RuleSet>,
    ) -> SentinelScanner<'r> {
        SentinelScanner {
            start: format!("\n{sentinel} ").into_bytes(),
            end: format!(" {sentinel}\n").into_bytes(),
            pending: Vec::new(),
            trailer: None,
            capture: Sink {
                redactor: rules.map(Redactor::new),
                buf: Vec::new(),
                capture: Capture::new(max_output),
            },
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) -> Option<Wait> {
        let trailer = match self.trailer.as_mut() {
            Some(t) => {
                t.extend_from_slice(chunk);
                t
            }
            None => {
                self.pending.extend_from_slice(chunk);
                match memchr::memmem::find(&self.pending, &self.start) {
                    Some(i) => {
                        self.capture.push(&self.pending[..i]);
                        let rest = self.pending.split_off(i + self.start.len());
                        self.pending.clear();
                        self.trailer.insert(rest)
                    }
                    None => {
                        let keep = self.pending.len().min(self.start.len() - 1);
                        let commit = self.pending.len() - keep;
                        self.capture.push(&self.pending[..commit]);
                        self.pending.drain(..commit);
                        return None;
                    }
                }
            }
        };
        let Some(j) = memchr::memmem::find(trailer, &self.end) else {
            if trailer.len() > MAX_TRAILER {
                // Not a sentinel line after all (cannot happen without the token): give up
                // on this call; the timeout restarts the session.
                trailer.truncate(MAX_TRAILER);
            }
            return None;
        };
        let line = &trailer[..j];
        let (status, pwd) = match memchr::memchr(b' ', line) {
            Some(k) => (&line[..k], &line[k + 1..]),
            None => (line, &b""[..]),
        };
        let status = std::str::from_utf8(status)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(-1);
        let cwd = Some(PathBuf::from(std::ffi::OsStr::from_bytes(pwd))).filter(|p| p.is_absolute());
        // Anything after the sentinel line came from a background job; it is dropped.
        Some(Wait::Done { status, cwd })
    }

    /// What was captured, with bytes that could have been the sentinel's start committed.
    pub(super) fn into_output(mut self) -> (Vec<u8>, Option<Gap>) {
        let pending = std::mem::take(&mut self.pending);
        self.capture.push(&pending);
        self.capture.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanner_finds_a_sentinel_split_across_chunks() {
        let mut s = SentinelScanner::new("SG_END_abc", 1024, None);
        let stream = b"hello\nworld\nSG_END_abc 3 /tmp/x y SG_END_abc\ntrailing";
        let mut done = None;
        for chunk in stream.chunks(3) {
            if let Some(d) = s.push(chunk) {
                done = Some(d);
                break;
            }
        }
        match done {
            Some(Wait::Done { status, cwd }) => {
                assert_eq!(status, 3);
                assert_eq!(cwd, Some(PathBuf::from("/tmp/x y")));
            }
            _ => panic!("no sentinel"),
        }
        assert_eq!(s.into_output(), (b"hello\nworld".to_vec(), None));
    }
}
