//! `policy-check undo` and `policy-check history`: the workspace snapshots taken before each
//! call that may write (`serve`, `run`, the hooks), listed and restored ([`shellgate::snapshot`]).

use std::io::Write;
use std::path::Path;

use shellgate::middleware::{Executor, Guard};
use shellgate::snapshot::{Changes, HistoryItem, Kind, SnapshotError, Snapshots};
use shellgate::Policy;

use crate::error::CliError;

/// `guard` with the policy's snapshots of `workspace`, holding it as a session (so `undo`
/// waits for the session to end); unchanged when `[snapshots] enabled = false`. A store
/// that cannot be opened stops the session from starting: it never runs unprotected.
pub fn with_snapshots<E: Executor>(
    guard: Guard<E>,
    policy: &Policy,
    workspace: &Path,
) -> Result<Guard<E>, CliError> {
    if !policy.snapshots.enabled {
        return Ok(guard);
    }
    let mut s = Snapshots::open(workspace, &policy.snapshots)
        .and_then(|mut s| s.hold_session().map(|()| s))
        .map_err(|e| {
            format!("cannot keep workspace snapshots ({e}); set [snapshots] enabled = false to run without undo")
        })?;
    // The handle is moved into the guard; its session lock lives as long as the guard.
    let _ = &mut s;
    Ok(guard.with_snapshots(s))
}

fn open(policy: &Policy, cwd: &Path) -> Result<Snapshots, CliError> {
    Snapshots::open(cwd, &policy.snapshots).map_err(|e| CliError::Failed(e.to_string()))
}

fn time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn summary(c: &Changes) -> String {
    if c.is_empty() {
        return "no change".into();
    }
    let list = |sign: &str, v: &[String]| -> Vec<String> {
        v.iter().map(|p| format!("{sign}{p}")).collect()
    };
    let mut all = list("+", &c.added);
    all.extend(list("~", &c.changed));
    all.extend(list("-", &c.removed));
    let n = all.len();
    if n > 8 {
        all.truncate(8);
        all.push(format!("... ({n} paths)"));
    }
    all.join(" ")
}

/// `policy-check history --cwd WS [--format json]`.
pub fn history(policy: &Policy, cwd: &Path, json: bool) -> Result<u8, CliError> {
    let mut s = open(policy, cwd)?;
    let items = s.history().map_err(|e| CliError::Failed(e.to_string()))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut text = String::new();
    if json {
        for item in &items {
            let mut v = serde_json::to_value(item).map_err(|e| e.to_string())?;
            if let Some(o) = v.as_object_mut() {
                o.insert("time".into(), time(item.entry.time).into());
                o.remove("manifest");
            }
            text.push_str(&v.to_string());
            text.push('\n');
        }
    } else if items.is_empty() {
        text.push_str("no snapshots of this workspace yet\n");
    } else {
        for HistoryItem { entry, changes } in &items {
            let what = match entry.kind {
                Kind::Call => entry.command.clone().unwrap_or_default(),
                Kind::Undo => format!(
                    "(undo: restored the snapshot #{})",
                    entry.restored.unwrap_or(0)
                ),
            };
            text.push_str(&format!(
                "#{} {} {} [{}] {}\n    {}\n",
                entry.seq,
                time(entry.time),
                entry.id,
                entry.tool,
                what.replace('\n', "\\n"),
                summary(changes)
            ));
        }
    }
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::write("stdout", e))?;
    Ok(0)
}

/// `policy-check undo --cwd WS [--to ID]`: exit 0 restored, 1 nothing to undo or a session
/// holds the workspace, 2 the store failed (a partial restore names the undo to undo).
pub fn undo(policy: &Policy, cwd: &Path, to: Option<&str>, json: bool) -> Result<u8, CliError> {
    let mut s = open(policy, cwd)?;
    match s.undo(to) {
        Ok(r) => {
            let text = if json {
                format!(
                    "{}\n",
                    serde_json::to_string(&r).map_err(|e| e.to_string())?
                )
            } else {
                let mut t = format!(
                    "restored the workspace to before #{} {} ({}): {}\n",
                    r.restored.seq,
                    r.restored.id,
                    r.restored.command.as_deref().unwrap_or(""),
                    summary(&r.changes)
                );
                for (sign, list) in [
                    ("created", &r.changes.added),
                    ("rewrote", &r.changes.changed),
                    ("removed", &r.changes.removed),
                ] {
                    for p in list {
                        t.push_str(&format!("  {sign} {p}\n"));
                    }
                }
                if !r.not_covered.is_empty() {
                    t.push_str(&format!(
                        "  left as they are (not covered by snapshots): {}\n",
                        r.not_covered.join(", ")
                    ));
                }
                t.push_str(&format!(
                    "to undo this undo: policy-check undo --to {}\n",
                    r.undo_id
                ));
                t
            };
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| CliError::write("stdout", e))?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("policy-check undo: {e}");
            Ok(match e {
                SnapshotError::Busy { .. } | SnapshotError::NothingToUndo(_) => 1,
                _ => 2,
            })
        }
    }
}
