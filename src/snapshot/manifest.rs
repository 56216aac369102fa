//! A manifest: every path of the workspace with what it is (file with its content hash and
//! mode, symlink with its target, directory with its mode, or a path not covered and why),
//! and the scan that makes one, hashing only what changed since the previous manifest.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::objects::Objects;
use super::SnapshotError;

/// One path of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub(crate) enum Node {
    /// A regular file: its content is the object `hash`.
    File {
        /// The blake3 hash of the content (hex).
        hash: String,
        /// Size in bytes.
        size: u64,
        /// Permission bits (`st_mode & 0o7777`).
        mode: u32,
        /// Modification time (ns since the epoch): restored, and part of the stat cache.
        mtime: i64,
        /// Status change time (ns): stat cache only.
        ctime: i64,
        /// Inode number: stat cache only.
        ino: u64,
    },
    /// A symbolic link (never followed): its target, encoded like paths.
    Link {
        /// The target as written.
        target: String,
    },
    /// A directory.
    Dir {
        /// Permission bits.
        mode: u32,
    },
    /// A path the snapshot does not cover (an excluded directory, a file over the size
    /// limit, a socket or device): undo leaves it as it finds it.
    Skipped {
        /// Why.
        why: String,
    },
}

impl Node {
    /// Whether two nodes hold the same state (the stat cache fields aside).
    pub(crate) fn same(&self, other: &Node) -> bool {
        match (self, other) {
            (
                Node::File {
                    hash: a, mode: ma, ..
                },
                Node::File {
                    hash: b, mode: mb, ..
                },
            ) => a == b && ma == mb,
            (a, b) => a == b,
        }
    }
}

/// Every path of a workspace at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// When the scan started (ns since the epoch). Not stored (so that manifests of one
    /// state are one file): the entry's `time` is.
    #[serde(skip)]
    pub taken: i64,
    /// Paths relative to the workspace root ([`encode`]d), sorted.
    pub paths: BTreeMap<String, Node>,
}

/// What a scan cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Paths seen.
    pub paths: u64,
    /// Files whose content was read (new or changed since the previous manifest).
    pub hashed: u64,
    /// Bytes copied into the store (content it did not hold yet).
    pub stored_bytes: u64,
    /// Bytes of every file the manifest covers.
    pub covered_bytes: u64,
}

/// A path relative to the workspace as a manifest key: itself when it is UTF-8 (and does not
/// start with the escape character U+0001), else U+0001 followed by its bytes in hex.
pub(crate) fn encode(rel: &OsStr) -> String {
    match rel.to_str() {
        Some(s) if !s.starts_with('\u{1}') => s.to_string(),
        _ => {
            let mut out = String::from("\u{1}");
            for b in rel.as_bytes() {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}

/// The inverse of [`encode`].
pub(crate) fn decode(key: &str) -> PathBuf {
    match key.strip_prefix('\u{1}') {
        Some(hex) => {
            let bytes: Vec<u8> = (0..hex.len() / 2)
                .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
                .collect();
            PathBuf::from(OsStr::from_bytes(&bytes))
        }
        None => PathBuf::from(key),
    }
}

/// How a scan treats the workspace.
pub(crate) struct ScanRules<'a> {
    /// Directory names skipped wherever they are.
    pub exclude: &'a [String],
    /// Files larger than this are not copied.
    pub max_file_bytes: u64,
}

pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Files modified this close (ns) before the previous scan began are hashed again even when
/// their stat fields match: a write in the same timestamp tick as the scan would leave them
/// unchanged (git's "racily clean" entries).
const RACY_NS: i64 = 2_000_000_000;

/// Scan `root`: every path under it (symlinks as links, never followed), content of new or
/// changed files copied into `objects` (when `objects` is `None`, only hashed). A file whose
/// size, mtime, ctime, inode and mode match `prev` keeps its hash without being read.
pub(crate) fn scan(
    root: &Path,
    prev: Option<&Manifest>,
    rules: &ScanRules<'_>,
    objects: Option<&Objects>,
) -> Result<(Manifest, ScanStats), SnapshotError> {
    let mut m = Manifest {
        taken: now_ns(),
        paths: BTreeMap::new(),
    };
    let mut stats = ScanStats::default();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| SnapshotError::io("read", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SnapshotError::io("read", &dir, e))?;
            let name = entry.file_name();
            let rel_path = rel.join(&name);
            let full = root.join(&rel_path);
            let key = encode(rel_path.as_os_str());
            // Not followed: a directory entry's metadata is the link's own (fstatat with
            // AT_SYMLINK_NOFOLLOW, relative to the open directory).
            let meta = entry
                .metadata()
                .map_err(|e| SnapshotError::io("stat", &full, e))?;
            stats.paths += 1;
            let ft = meta.file_type();
            let node = if ft.is_symlink() {
                let target =
                    std::fs::read_link(&full).map_err(|e| SnapshotError::io("read", &full, e))?;
                Node::Link {
                    target: encode(target.as_os_str()),
                }
            } else if ft.is_dir() {
                if rules.exclude.iter().any(|x| OsStr::new(x) == name) {
                    Node::Skipped {
                        why: "excluded directory ([snapshots] exclude)".into(),
                    }
                } else {
                    stack.push(rel_path.clone());
                    Node::Dir {
                        mode: meta.permissions().mode() & 0o7777,
                    }
                }
            } else if ft.is_file() {
                if meta.len() > rules.max_file_bytes {
                    Node::Skipped {
                        why: format!("{} bytes, over [snapshots] max_file_bytes", meta.len()),
                    }
                } else {
                    let node = file_node(
                        &full,
                        &meta,
                        prev.and_then(|p| p.paths.get(&key).map(|n| (n, p.taken))),
                        objects,
                        &mut stats,
                    )?;
                    stats.covered_bytes += meta.len();
                    node
                }
            } else {
                Node::Skipped {
                    why: "not a file, directory or symlink (a socket, FIFO or device)".into(),
                }
            };
            m.paths.insert(key, node);
        }
    }
    Ok((m, stats))
}

fn file_node(
    full: &Path,
    meta: &std::fs::Metadata,
    prev: Option<(&Node, i64)>,
    objects: Option<&Objects>,
    stats: &mut ScanStats,
) -> Result<Node, SnapshotError> {
    let mode = meta.permissions().mode() & 0o7777;
    let mtime = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
    let ctime = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
    if let Some((
        Node::File {
            hash,
            size,
            mode: pmode,
            mtime: pm,
            ctime: pc,
            ino,
        },
        taken,
    )) = prev
    {
        let same_stat = *size == meta.len()
            && *pmode == mode
            && *pm == mtime
            && *pc == ctime
            && *ino == meta.ino();
        // The cache is the newest entry's manifest, whose objects pruning never removes. A
        // racily clean file is read again, and copied only if its content did change.
        let unchanged = same_stat
            && (taken - mtime >= RACY_NS || {
                stats.hashed += 1;
                hash_file(full)? == *hash
            });
        if unchanged {
            return Ok(Node::File {
                hash: hash.clone(),
                size: *size,
                mode,
                mtime,
                ctime,
                ino: *ino,
            });
        }
    }
    stats.hashed += 1;
    let (hash, size, new) = match objects {
        Some(o) => o.store_file(full)?,
        None => (hash_file(full)?, meta.len(), 0),
    };
    stats.stored_bytes += new;
    Ok(Node::File {
        hash,
        size,
        mode,
        mtime,
        ctime,
        ino: meta.ino(),
    })
}

/// The blake3 hash (hex) of a file's content, read in place.
fn hash_file(full: &Path) -> Result<String, SnapshotError> {
    let mut h = blake3::Hasher::new();
    std::fs::File::open(full)
        .and_then(|mut f| std::io::copy(&mut f, &mut h))
        .map_err(|e| SnapshotError::io("read", full, e))?;
    Ok(h.finalize().to_hex().to_string())
}

/// What changed from one manifest to the next: paths added, changed and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Changes {
    /// Paths that were not there before.
    pub added: Vec<String>,
    /// Paths whose content, mode, link target or kind changed.
    pub changed: Vec<String>,
    /// Paths that are gone.
    pub removed: Vec<String>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

fn shown(key: &str) -> String {
    decode(key).display().to_string()
}

pub(crate) fn diff(before: &Manifest, after: &Manifest) -> Changes {
    let mut c = Changes::default();
    for (k, a) in &before.paths {
        match after.paths.get(k) {
            None => c.removed.push(shown(k)),
            Some(b) if !a.same(b) => c.changed.push(shown(k)),
            Some(_) => {}
        }
    }
    for k in after.paths.keys() {
        if !before.paths.contains_key(k) {
            c.added.push(shown(k));
        }
    }
    c
}
