//! The audit log: one JSON object per line for each call the [`Guard`](super::Guard) handles.
//!
//! Each line has: `time` (UTC, RFC 3339), `tool_use_id`, `action` (`command`, `restart`,
//! `invalid`; `code` for a code execution command; `view`, `create`, `str_replace` or
//! `insert` for a file operation, whose path is the `command`; `rate-limited`), `command`
//! (after the guard's [`OutputFilter`](super::OutputFilter), so a secret typed into a command
//! is redacted like one printed by it), `verdict` and `reasons` (stable
//! reason codes), `approved` (for `ask`), `exit_status`, `error` (an
//! [`ExecError::code`](super::ExecError::code)), `is_error`, `duration_ms`, `output_bytes`
//! (raw output the executor returned), `dropped_bytes` (discarded by its cap) and
//! `result_bytes` (the text the model got). Output itself is never logged.
//!
//! Logging is opt-in ([`Guard::with_audit`](super::Guard::with_audit)). A failed write is
//! reported on stderr and never blocks or drops the call.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::{Call, Outcome};
use crate::policy::Verdict;

/// Why the audit log could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The log file could not be opened.
    #[error("audit log {path}: cannot open: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A record could not be written.
    #[error("audit log: write failed (the call went ahead): {0}")]
    Write(#[source] std::io::Error),
}

/// Where audit records go: a file opened for appending, or any writer.
pub struct AuditLog {
    out: Box<dyn Write + Send>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Append to the file at `path`, creating it if needed (never through a symlink).
    pub fn open(path: impl AsRef<Path>) -> Result<AuditLog, AuditError> {
        let path = path.as_ref();
        use std::os::unix::fs::OpenOptionsExt;
        // O_NOFOLLOW: a symlink put at the log's name (by a session that can write there)
        // would send the records into any file serve can write.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path)
            .map_err(|source| AuditError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(AuditLog {
            out: Box::new(file),
        })
    }

    /// Write records to `out`.
    pub fn from_writer(out: impl Write + Send + 'static) -> AuditLog {
        AuditLog { out: Box::new(out) }
    }

    /// Write one record as one line, and flush.
    pub fn record(&mut self, record: &AuditRecord) -> Result<(), AuditError> {
        let mut line = serde_json::to_vec(record).map_err(|e| AuditError::Write(e.into()))?;
        line.push(b'\n');
        self.out.write_all(&line).map_err(AuditError::Write)?;
        self.out.flush().map_err(AuditError::Write)
    }
}

/// One audit line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call was handled (UTC, RFC 3339 with milliseconds).
    pub time: String,
    /// The tool_use id.
    pub tool_use_id: String,
    /// `command`, `restart` or `invalid`.
    pub action: &'static str,
    /// The command, filtered (redacted) like output.
    pub command: Option<String>,
    /// The policy's verdict, when a command was evaluated.
    pub verdict: Option<Verdict>,
    /// The reason codes of the decision.
    pub reasons: Vec<&'static str>,
    /// For `ask`: whether an approver approved (absent: no approver was asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// The command's exit status, when it ran to completion and had one.
    pub exit_status: Option<i32>,
    /// The executor's error code, when it failed.
    pub error: Option<&'static str>,
    /// Whether the result was an `is_error` one.
    pub is_error: bool,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
    /// Bytes of output the executor returned.
    pub output_bytes: Option<u64>,
    /// Bytes the executor discarded to stay within its cap.
    pub dropped_bytes: u64,
    /// Bytes of the text the model got.
    pub result_bytes: usize,
}

impl AuditRecord {
    pub(crate) fn new(tool_use_id: &str) -> AuditRecord {
        AuditRecord {
            time: rfc3339(SystemTime::now()),
            tool_use_id: tool_use_id.to_string(),
            action: "command",
            command: None,
            verdict: None,
            reasons: Vec::new(),
            approved: None,
            exit_status: None,
            error: None,
            is_error: false,
            duration_ms: 0,
            output_bytes: None,
            dropped_bytes: 0,
            result_bytes: 0,
        }
    }

    pub(crate) fn finish(&mut self, call: &Call, took: Duration) {
        self.is_error = call.result.is_error();
        self.result_bytes = call.result.as_tool_result().map_or(0, |r| r.content.len());
        self.duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        if let Outcome::Completed { status } = call.outcome {
            self.exit_status = status;
        }
    }
}

/// `2026-11-30T08:42:07.123Z`.
fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1_796_028_127_123)),
            "2026-11-30T08:42:07.123Z"
        );
    }
}
