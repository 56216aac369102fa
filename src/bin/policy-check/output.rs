//! `policy-check redact` and `policy-check truncate`: the output pipeline on stdin/stdout.

use crate::error::CliError;
use std::io::{ErrorKind, Read, Write};
use std::path::Path;

use shellgate::redact::{RedactConfig, Redactor, RuleSet};
use shellgate::truncate::{TruncateConfig, Truncator};

const CHUNK: usize = 64 * 1024;

/// Builds the rule set from an optional policy file (its `[redact]` table only) and an optional
/// standalone rules file (applied after the policy's).
fn rule_set(policy: Option<&Path>, rules: Option<&Path>) -> Result<Option<RuleSet>, CliError> {
    if policy.is_none() && rules.is_none() {
        return Ok(None);
    }
    let mut config = match policy {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| CliError::read(p, e))?;
            RedactConfig::from_policy_str(&text).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => RedactConfig::default(),
    };
    if let Some(r) = rules {
        config.merge(RedactConfig::load(r).map_err(|e| e.to_string())?);
    }
    RuleSet::with_config(&config)
        .map(Some)
        .map_err(|e| CliError::Failed(format!("redaction rules: {e}")))
}

/// Reads stdin to its end in chunks, handing each to `f`.
fn each_chunk(mut f: impl FnMut(&[u8]) -> std::io::Result<()>) -> Result<(), CliError> {
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(source) => return Err(CliError::read("stdin", source)),
        };
        f(&buf[..n]).map_err(|source| CliError::write("stdout", source))?;
    }
}

/// `policy-check redact [--policy FILE] [--rules FILE] [--stats]`: copies stdin to stdout with
/// secrets redacted, streaming. `--stats` prints, on stderr, how many secrets each rule
/// redacted. Exit code 0; an invalid policy `[redact]` table or rules file is an error.
pub fn redact(policy: Option<&Path>, rules: Option<&Path>, stats: bool) -> Result<i32, CliError> {
    let owned = rule_set(policy, rules)?;
    let set = owned.as_ref().unwrap_or_else(|| RuleSet::builtin());
    let mut redactor = Redactor::new(set);
    let mut stdout = std::io::stdout().lock();
    let mut out = Vec::with_capacity(CHUNK * 2);
    let result = each_chunk(|chunk| {
        out.clear();
        redactor.feed(chunk, &mut out);
        stdout.write_all(&out)?;
        stdout.flush()
    });
    if let Err(e) = result {
        if matches!(&e, CliError::Io { source, .. } if source.kind() == ErrorKind::BrokenPipe) {
            return Ok(0);
        }
        return Err(e);
    }
    out.clear();
    redactor.finish(&mut out);
    match stdout.write_all(&out).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(0),
        Err(source) => return Err(CliError::write("stdout", source)),
        Ok(()) => {}
    }
    if stats {
        let s = redactor.stats();
        let mut err = std::io::stderr().lock();
        for (id, n) in s.iter() {
            let _ = writeln!(err, "{n:>8}  {id}");
        }
        let _ = writeln!(err, "{:>8}  total", s.total());
    }
    Ok(0)
}

/// `policy-check truncate [--max-bytes N] [--max-lines N]`: reads stdin (memory bounded by the
/// budgets) and writes the truncated, valid UTF-8 text to stdout. Exit code 0.
pub fn truncate(max_bytes: Option<usize>, max_lines: Option<usize>) -> Result<i32, CliError> {
    let mut config = TruncateConfig::default();
    if let Some(b) = max_bytes {
        config.max_bytes = b;
    }
    if let Some(l) = max_lines {
        config.max_lines = l;
    }
    let mut t = Truncator::new(&config);
    each_chunk(|chunk| {
        t.feed(chunk);
        Ok(())
    })?;
    let text = t.finish();
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(0),
        Err(source) => Err(CliError::write("stdout", source)),
        Ok(()) => Ok(0),
    }
}
