//! Putting a manifest back: what is in the workspace and not in the snapshot goes, what is in
//! the snapshot and differs is written again (through a temporary name and a rename), then
//! directory modes are set deepest first. Paths either side does not cover are left alone.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::manifest::{decode, Changes, Manifest, Node};
use super::objects::{temp_in, Objects};

/// What a restore did.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// Created (`added`), rewritten (`changed`) and deleted (`removed`) paths.
    pub changes: Changes,
    /// Paths left as they are because the snapshot does not cover them.
    pub not_covered: Vec<String>,
    /// Paths that could not be restored, with why.
    pub failures: Vec<String>,
}

fn kind(n: &Node) -> u8 {
    match n {
        Node::File { .. } => 0,
        Node::Link { .. } => 1,
        Node::Dir { .. } => 2,
        Node::Skipped { .. } => 3,
    }
}

/// Bring `root`, whose state is `current`, to `target`.
pub(crate) fn restore(
    root: &Path,
    current: &Manifest,
    target: &Manifest,
    objects: &Objects,
) -> Restored {
    let mut r = Restored::default();
    let show = |k: &str| decode(k).display().to_string();
    // A manifest names paths below the root only: one that does not (a damaged or forged
    // store) restores nothing.
    let bad: Vec<String> = current
        .paths
        .keys()
        .chain(target.paths.keys())
        .filter(|k| !below(&decode(k)))
        .map(|k| format!("{}: not a path inside the workspace", show(k)))
        .collect();
    if !bad.is_empty() {
        r.failures = bad;
        return r;
    }
    // Directories must be writable while their entries change; their modes come last.
    for (k, n) in &current.paths {
        if let Node::Dir { mode } = n {
            if mode & 0o700 != 0o700 {
                let _ = std::fs::set_permissions(
                    root.join(decode(k)),
                    PermissionsExt::from_mode(mode | 0o700),
                );
            }
        }
    }
    let _ = std::fs::set_permissions(
        root,
        PermissionsExt::from_mode(
            std::fs::metadata(root)
                .map(|m| m.permissions().mode() | 0o700)
                .unwrap_or(0o755),
        ),
    );
    // Removals, children before their parents (a child's key sorts after its parent's).
    for (k, n) in current.paths.iter().rev() {
        if matches!(n, Node::Skipped { .. }) {
            r.not_covered.push(show(k));
            continue;
        }
        let keep = match target.paths.get(k) {
            Some(Node::Skipped { .. }) => true,
            Some(t) => kind(t) == kind(n),
            None => false,
        };
        if keep {
            continue;
        }
        let p = root.join(decode(k));
        let done = match n {
            Node::Dir { .. } => std::fs::remove_dir(&p),
            _ => std::fs::remove_file(&p),
        };
        match done {
            Ok(()) => {
                if !target.paths.contains_key(k) {
                    r.changes.removed.push(show(k));
                }
            }
            Err(e) => r.failures.push(format!("{}: cannot remove: {e}", show(k))),
        }
    }
    // Creations and rewrites, parents before their children.
    for (k, t) in &target.paths {
        let p = root.join(decode(k));
        let cur = current.paths.get(k);
        let existed = cur.is_some_and(|c| kind(c) == kind(t));
        let done: std::io::Result<bool> = match t {
            Node::Skipped { .. } => continue,
            Node::Dir { .. } if existed => Ok(false),
            Node::Dir { .. } => std::fs::create_dir(&p).map(|()| true),
            Node::File { .. } | Node::Link { .. } if cur.is_some_and(|c| c.same(t)) => Ok(false),
            Node::File {
                hash, mode, mtime, ..
            } => write_file(&p, objects, hash, *mode, *mtime).map(|()| true),
            Node::Link { target: to } => {
                let tmp = temp_in(p.parent().unwrap_or(root), "link");
                std::os::unix::fs::symlink(decode(to), &tmp)
                    .and_then(|()| std::fs::rename(&tmp, &p))
                    .inspect_err(|_| {
                        let _ = std::fs::remove_file(&tmp);
                    })
                    .map(|()| true)
            }
        };
        match done {
            Ok(true) if existed => r.changes.changed.push(show(k)),
            Ok(true) => {
                if cur.is_some() {
                    r.changes.changed.push(show(k));
                } else {
                    r.changes.added.push(show(k));
                }
            }
            Ok(false) => {}
            Err(e) => r.failures.push(format!("{}: cannot restore: {e}", show(k))),
        }
    }
    // Directory modes, deepest first (a read-only directory is finished before it closes).
    for (k, t) in target.paths.iter().rev() {
        if let Node::Dir { mode } = t {
            let p = root.join(decode(k));
            let changed = !matches!(current.paths.get(k), Some(Node::Dir { mode: m }) if m == mode);
            if let Err(e) = std::fs::set_permissions(&p, PermissionsExt::from_mode(*mode)) {
                r.failures
                    .push(format!("{}: cannot set its mode: {e}", show(k)));
            } else if changed
                && current.paths.contains_key(k)
                && !r.changes.changed.contains(&show(k))
            {
                r.changes.changed.push(show(k));
            }
        }
    }
    r.changes.added.sort();
    r.changes.changed.sort();
    r.changes.removed.sort();
    r.not_covered.sort();
    r
}

/// Whether `rel` is a relative path of plain names (no root, no `.` or `..`).
fn below(rel: &Path) -> bool {
    !rel.as_os_str().is_empty()
        && rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

fn write_file(
    p: &Path,
    objects: &Objects,
    hash: &str,
    mode: u32,
    mtime: i64,
) -> std::io::Result<()> {
    let dir = p.parent().unwrap_or(Path::new("/"));
    let tmp = temp_in(dir, "file");
    let done = (|| {
        let src = objects.path(hash);
        std::fs::copy(&src, &tmp)?;
        let f = std::fs::OpenOptions::new().write(true).open(&tmp)?;
        let secs = mtime.div_euclid(1_000_000_000);
        let nanos = mtime.rem_euclid(1_000_000_000) as u32;
        let when = if secs >= 0 {
            std::time::UNIX_EPOCH + std::time::Duration::new(secs as u64, nanos)
        } else {
            std::time::UNIX_EPOCH
        };
        f.set_modified(when)?;
        drop(f);
        std::fs::set_permissions(&tmp, PermissionsExt::from_mode(mode))?;
        std::fs::rename(&tmp, p)
    })();
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_naming_a_path_outside_the_workspace_restores_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut forged = Manifest::default();
        forged
            .paths
            .insert("../escaped".into(), Node::Dir { mode: 0o755 });
        forged.paths.insert("ok".into(), Node::Dir { mode: 0o755 });
        let objects = Objects::new(tmp.path().join("objects"));
        let r = restore(&ws, &Manifest::default(), &forged, &objects);
        assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
        assert!(!tmp.path().join("escaped").exists() && !ws.join("ok").exists());
    }
}
