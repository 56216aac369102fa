//! Nothing lost: a snapshot of the workspace before every call that may write, a history of
//! what each call changed, and undo.
//!
//! A store per workspace lives outside it, under `$SHELLGATE_STATE_DIR`, the policy's
//! `[snapshots] dir`, `$XDG_STATE_HOME/shellgate` or `~/.local/state/shellgate`, in a
//! directory named after a hash of the workspace's canonical path:
//!
//! ```text
//! objects/ab/cdef…    file contents, named by their blake3 hash (shared by every snapshot)
//! manifests/<hash>    a manifest: every path with its kind, mode, hash or link target
//! entries/<seq>.json  one per snapshot: the call's id, time, tool, redacted command, manifest
//! session.lock        held (shared) by each session using the workspace; undo needs it free
//! store.lock          held while a snapshot, an undo or a pruning writes the store
//! ```
//!
//! A snapshot scans the workspace (every path, `.git` included; symlinks as links, never
//! followed; the directory names of `[snapshots] exclude` skipped) and copies into
//! `objects/` only the files whose size, times, inode or mode differ from the previous
//! manifest and whose content the store does not hold yet: a call costs a stat of every
//! path plus a copy of what the previous call changed. Objects and manifests are written
//! under temporary names and renamed; the entry, written last, is the commit point, so a
//! crash or a pruning never leaves a half snapshot (only unreferenced objects, which the next
//! pruning removes). What a call changed is the difference between its manifest and the
//! next one (or the workspace as it is now).
//!
//! [`Snapshots::undo`] takes a snapshot first (so an undo is undone with `--to undo-N`), then
//! puts every covered path back as it was: files rewritten through a temporary name and a
//! rename, with their mode and mtime; symlinks; directories and their modes; paths that were
//! not there removed. Paths the snapshot did not cover are left as they are.

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::codes::RuntimeCode;
use crate::policy::snapshots::SnapshotSettings;

mod manifest;
mod objects;
mod restore;
mod writes;

pub use manifest::{Changes, ScanStats};
pub use restore::Restored;
pub use writes::may_write;

use manifest::{Manifest, ScanRules};
use objects::{write_atomic, Objects};

/// Why a snapshot, the history or an undo failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A file operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// To which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No directory for the store: no `SHELLGATE_STATE_DIR`, `[snapshots] dir`,
    /// `XDG_STATE_HOME` or `HOME`.
    #[error("no directory for the snapshot store: set SHELLGATE_STATE_DIR or [snapshots] dir")]
    NoStateDir,
    /// The store would be inside the workspace, where the session can write it.
    #[error("the snapshot store {} is inside the workspace {}: the session could rewrite its own history", store.display(), workspace.display())]
    StoreInWorkspace {
        /// The store.
        store: PathBuf,
        /// The workspace.
        workspace: PathBuf,
    },
    /// One snapshot alone needs more than the store may hold.
    #[error("the workspace needs {needed} bytes for one snapshot, more than [snapshots] max_bytes = {max}: raise it, or exclude large directories ([snapshots] exclude)")]
    OverBudget {
        /// Bytes of one snapshot.
        needed: u64,
        /// The budget.
        max: u64,
    },
    /// A session holds the workspace.
    #[error("a session is using this workspace (policy-check serve, run or a Guard holds {}): stop it first", lock.display())]
    Busy {
        /// The lock file.
        lock: PathBuf,
    },
    /// A stored file that should be there is not readable as it should be.
    #[error("the snapshot store is damaged: {0}")]
    Damaged(String),
    /// Undo found nothing to go back to.
    #[error("{0}")]
    NothingToUndo(String),
    /// Restoring failed part way; the workspace is between states (undo again with `--to`
    /// the undo's id to go back).
    #[error("undo failed part way ({} path(s) could not be restored, first: {}); run `policy-check undo --to {id}` to return to the state before it", failures.len(), failures.first().map(String::as_str).unwrap_or(""))]
    Partial {
        /// The id of the undo entry (its snapshot is the state before the undo).
        id: String,
        /// What could not be restored.
        failures: Vec<String>,
    },
}

impl SnapshotError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> SnapshotError {
        SnapshotError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The stable code of a snapshot failure (`snapshot-failed`, or `snapshot-busy` when a
    /// session or another undo holds the store).
    pub fn code(&self) -> &'static str {
        match self {
            SnapshotError::Busy { .. } => RuntimeCode::SnapshotBusy,
            SnapshotError::NothingToUndo(_) => RuntimeCode::NothingToUndo,
            _ => RuntimeCode::SnapshotFailed,
        }
        .as_str()
    }
}

/// What made a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A call of the agent's tools (before it ran).
    Call,
    /// An undo (before it restored).
    Undo,
}

/// One snapshot in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Its number, increasing.
    pub seq: u64,
    /// The call's `tool_use` id (`undo-<seq>` for an undo).
    pub id: String,
    /// A call or an undo.
    pub kind: Kind,
    /// When its scan started (ns since the epoch).
    pub time: i64,
    /// The tool (`bash`, `str_replace_based_edit_tool`, `hook`, ...).
    pub tool: String,
    /// The command (redacted), when the call had one.
    pub command: Option<String>,
    /// The manifest's hash.
    pub manifest: String,
    /// For an undo: the seq of the snapshot it restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<u64>,
    /// What the snapshot cost.
    pub hashed: u64,
    /// Bytes copied into the store by this snapshot.
    pub stored_bytes: u64,
    /// Paths this snapshot does not cover (excluded, too large, special files).
    #[serde(default)]
    pub not_covered: Vec<String>,
}

/// One line of [`Snapshots::history`]: a snapshot and what its call changed.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryItem {
    /// The snapshot.
    #[serde(flatten)]
    pub entry: Entry,
    /// What the call changed: from this snapshot to the next one (or to the workspace now).
    pub changes: Changes,
}

/// One call's snapshot, as [`Snapshots::before`] took it.
#[derive(Debug, Clone)]
pub struct Taken {
    /// The entry written.
    pub entry: Entry,
    /// What the scan cost.
    pub stats: ScanStats,
}

/// What [`Snapshots::undo`] did.
#[derive(Debug, Clone, Serialize)]
pub struct UndoReport {
    /// The snapshot taken before restoring (undo it with `--to` this id).
    pub undo_id: String,
    /// The snapshot restored.
    pub restored: Entry,
    /// What was put back: `added` were created, `changed` rewritten, `removed` deleted.
    pub changes: Changes,
    /// Paths left as they were because no snapshot covers them.
    pub not_covered: Vec<String>,
}

/// The snapshot store of one workspace.
pub struct Snapshots {
    workspace: PathBuf,
    store: PathBuf,
    settings: SnapshotSettings,
    objects: Objects,
    /// The latest manifest this handle wrote or read, by hash: the stat cache.
    last: Option<(String, Manifest)>,
    session: Option<Flock<File>>,
}

impl std::fmt::Debug for Snapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshots")
            .field("workspace", &self.workspace)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// The directory holding every workspace's store: `$SHELLGATE_STATE_DIR`, else the policy's
/// `[snapshots] dir`, else `$XDG_STATE_HOME/shellgate`, else `~/.local/state/shellgate`.
pub fn state_dir(settings: &SnapshotSettings) -> Result<PathBuf, SnapshotError> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    if let Some(d) = env("SHELLGATE_STATE_DIR").filter(|d| d.is_absolute()) {
        return Ok(d);
    }
    if let Some(d) = &settings.dir {
        if let Ok(rest) = d.strip_prefix("~") {
            return home.map(|h| h.join(rest)).ok_or(SnapshotError::NoStateDir);
        }
        return Ok(d.clone());
    }
    if let Some(d) = env("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        return Ok(d.join("shellgate"));
    }
    home.map(|h| h.join(".local/state/shellgate"))
        .ok_or(SnapshotError::NoStateDir)
}

impl Snapshots {
    /// The store of `workspace` under `settings` (created when missing).
    pub fn open(workspace: &Path, settings: &SnapshotSettings) -> Result<Snapshots, SnapshotError> {
        let workspace = std::fs::canonicalize(workspace)
            .map_err(|e| SnapshotError::io("resolve", workspace, e))?;
        let root = state_dir(settings)?;
        std::fs::create_dir_all(&root).map_err(|e| SnapshotError::io("create", &root, e))?;
        let root =
            std::fs::canonicalize(&root).map_err(|e| SnapshotError::io("resolve", &root, e))?;
        if root.starts_with(&workspace) {
            return Err(SnapshotError::StoreInWorkspace {
                store: root,
                workspace,
            });
        }
        use std::os::unix::ffi::OsStrExt;
        let name = blake3::hash(workspace.as_os_str().as_bytes()).to_hex();
        let store = root.join(&name.as_str()[..24]);
        for sub in ["objects", "manifests", "entries"] {
            let d = store.join(sub);
            std::fs::create_dir_all(&d).map_err(|e| SnapshotError::io("create", &d, e))?;
        }
        let ws_file = store.join("workspace");
        if !ws_file.exists() {
            write_atomic(&ws_file, workspace.as_os_str().as_bytes())?;
        }
        Ok(Snapshots {
            objects: Objects::new(store.join("objects")),
            workspace,
            store,
            settings: settings.clone(),
            last: None,
            session: None,
        })
    }

    /// The workspace (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The store's directory.
    pub fn store(&self) -> &Path {
        &self.store
    }

    /// Mark the workspace as used by a session until this handle is dropped: `undo`
    /// refuses meanwhile. Several sessions may hold it at once.
    pub fn hold_session(&mut self) -> Result<(), SnapshotError> {
        let path = self.store.join("session.lock");
        let f = lock_file(&path)?;
        let held = Flock::lock(f, FlockArg::LockSharedNonblock)
            .map_err(|_| SnapshotError::Busy { lock: path.clone() })?;
        self.session = Some(held);
        Ok(())
    }

    fn store_lock(&self) -> Result<Flock<File>, SnapshotError> {
        let path = self.store.join("store.lock");
        let f = lock_file(&path)?;
        Flock::lock(f, FlockArg::LockExclusive)
            .map_err(|(_, e)| SnapshotError::io("lock", &path, e.into()))
    }

    fn rules(&self) -> ScanRules<'_> {
        ScanRules {
            exclude: &self.settings.exclude,
            max_file_bytes: self.settings.max_file_bytes,
        }
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>, SnapshotError> {
        let dir = self.store.join("entries");
        let mut out = Vec::new();
        let list = std::fs::read_dir(&dir).map_err(|e| SnapshotError::io("read", &dir, e))?;
        for e in list {
            let e = e.map_err(|e| SnapshotError::io("read", &dir, e))?;
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(".tmp-") || !name.ends_with(".json") {
                continue;
            }
            let text =
                std::fs::read(e.path()).map_err(|err| SnapshotError::io("read", &e.path(), err))?;
            let entry: Entry = serde_json::from_slice(&text)
                .map_err(|err| SnapshotError::Damaged(format!("{name}: {err}")))?;
            out.push(entry);
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    fn manifest(&self, hash: &str) -> Result<Manifest, SnapshotError> {
        if let Some((h, m)) = &self.last {
            if h == hash {
                return Ok(m.clone());
            }
        }
        let path = self.store.join("manifests").join(hash);
        let text = std::fs::read(&path).map_err(|e| SnapshotError::io("read", &path, e))?;
        serde_json::from_slice(&text)
            .map_err(|e| SnapshotError::Damaged(format!("manifest {hash}: {e}")))
    }

    /// The manifest to use as stat cache: the newest entry's.
    fn cache(&mut self, entries: &[Entry]) -> Result<(), SnapshotError> {
        let Some(newest) = entries.last() else {
            self.last = None;
            return Ok(());
        };
        if self
            .last
            .as_ref()
            .is_some_and(|(h, _)| *h == newest.manifest)
        {
            return Ok(());
        }
        let mut m = self.manifest(&newest.manifest)?;
        m.taken = newest.time;
        self.last = Some((newest.manifest.clone(), m));
        Ok(())
    }

    /// Take a snapshot before a call: `id` its tool_use id, `tool` its tool, `command` what
    /// it runs (redacted here with the built-in rules, whatever the caller did). Fails
    /// closed: an error means the call must not run.
    pub fn before(
        &mut self,
        id: &str,
        tool: &str,
        command: Option<&str>,
    ) -> Result<Taken, SnapshotError> {
        let _lock = self.store_lock()?;
        let entries = self.entries()?;
        let taken = self.take(&entries, id, Kind::Call, tool, command, None)?;
        self.prune(taken.entry.seq)?;
        Ok(taken)
    }

    /// Scan, store, and commit an entry. The store lock is held by the caller.
    fn take(
        &mut self,
        entries: &[Entry],
        id: &str,
        kind: Kind,
        tool: &str,
        command: Option<&str>,
        restored: Option<u64>,
    ) -> Result<Taken, SnapshotError> {
        let (manifest, stats, same) = self.scan_stored(entries)?;
        let time = manifest.taken;
        let hash = self.commit_manifest(manifest, &stats, same)?;
        let seq = entries.last().map_or(1, |e| e.seq + 1);
        let not_covered = self.last.as_ref().map_or_else(Vec::new, |(_, m)| {
            m.paths
                .iter()
                .filter(|(_, n)| matches!(n, manifest::Node::Skipped { .. }))
                .map(|(k, _)| manifest::decode(k).display().to_string())
                .collect()
        });
        let entry = Entry {
            seq,
            id: if kind == Kind::Undo {
                format!("undo-{seq}")
            } else {
                id.to_string()
            },
            kind,
            time,
            tool: tool.to_string(),
            command: command.map(|c| {
                String::from_utf8_lossy(&crate::redact::redact(c.as_bytes())).into_owned()
            }),
            manifest: hash,
            restored,
            hashed: stats.hashed,
            stored_bytes: stats.stored_bytes,
            not_covered,
        };
        let bytes =
            serde_json::to_vec(&entry).map_err(|e| SnapshotError::Damaged(e.to_string()))?;
        write_atomic(
            &self.store.join("entries").join(format!("{seq:012}.json")),
            &bytes,
        )?;
        Ok(Taken { entry, stats })
    }

    /// Scan with the contents stored; the manifest, what it cost, and its hash when it is
    /// the newest one's (nothing changed: no need to write it again).
    fn scan_stored(
        &mut self,
        entries: &[Entry],
    ) -> Result<(Manifest, ScanStats, Option<String>), SnapshotError> {
        self.cache(entries)?;
        let prev = self.last.take();
        let scanned = manifest::scan(
            &self.workspace,
            prev.as_ref().map(|(_, m)| m),
            &self.rules(),
            Some(&self.objects),
        );
        let (m, stats) = match scanned {
            Ok(done) => done,
            Err(e) => {
                self.last = prev;
                return Err(e);
            }
        };
        if stats.covered_bytes > self.settings.max_bytes {
            self.last = prev;
            return Err(SnapshotError::OverBudget {
                needed: stats.covered_bytes,
                max: self.settings.max_bytes,
            });
        }
        let same = prev.and_then(|(h, p)| (p.paths == m.paths).then_some(h));
        Ok((m, stats, same))
    }

    fn commit_manifest(
        &mut self,
        m: Manifest,
        stats: &ScanStats,
        same: Option<String>,
    ) -> Result<String, SnapshotError> {
        if let Some(hash) = same {
            self.add_store_bytes(stats.stored_bytes)?;
            self.last = Some((hash.clone(), m));
            return Ok(hash);
        }
        let bytes = serde_json::to_vec(&m).map_err(|e| SnapshotError::Damaged(e.to_string()))?;
        let hash = blake3::hash(&bytes).to_hex().to_string();
        let path = self.store.join("manifests").join(&hash);
        let mut added = stats.stored_bytes;
        if !path.exists() {
            write_atomic(&path, &bytes)?;
            added += bytes.len() as u64;
        }
        self.add_store_bytes(added)?;
        self.last = Some((hash.clone(), m));
        Ok(hash)
    }

    /// Keep at most `max_count` entries and `max_bytes` bytes: the oldest entries go first
    /// (never `keep`), then every manifest and object no entry refers to. Runs when a limit
    /// is passed and then prunes to half of it, so that its cost (reading every manifest)
    /// is paid once every `max_count / 2` calls.
    fn prune(&mut self, keep: u64) -> Result<(), SnapshotError> {
        let mut entries = self.entries()?;
        let max_count = usize::try_from(self.settings.max_count).unwrap_or(usize::MAX);
        let bytes = self.store_bytes();
        if entries.len() <= max_count && bytes <= self.settings.max_bytes {
            return Ok(());
        }
        // Down to half: a pruning reads every kept manifest, so it runs once every
        // max_count / 2 snapshots (about one manifest read per call, amortised).
        let count_goal = max_count / 2;
        let bytes_goal = self.settings.max_bytes / 2;
        loop {
            while entries.len() > count_goal.max(1) && entries[0].seq != keep {
                self.drop_entry(&entries.remove(0))?;
            }
            let bytes = self.sweep(&entries)?;
            self.set_store_bytes(bytes)?;
            if bytes <= bytes_goal || entries.len() <= 1 || entries[0].seq == keep {
                return Ok(());
            }
            self.drop_entry(&entries.remove(0))?;
        }
    }

    fn drop_entry(&self, e: &Entry) -> Result<(), SnapshotError> {
        let p = self
            .store
            .join("entries")
            .join(format!("{:012}.json", e.seq));
        std::fs::remove_file(&p).map_err(|err| SnapshotError::io("remove", &p, err))
    }

    /// Bytes in objects and manifests, as counted in the file `bytes` (each snapshot adds
    /// what it wrote; each sweep sets the exact figure). Without the file: an unknown count,
    /// which makes the next pruning count for real.
    fn store_bytes(&self) -> u64 {
        std::fs::read_to_string(self.store.join("bytes"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(u64::MAX)
    }

    fn set_store_bytes(&self, n: u64) -> Result<(), SnapshotError> {
        write_atomic(&self.store.join("bytes"), n.to_string().as_bytes())
    }

    fn add_store_bytes(&self, n: u64) -> Result<(), SnapshotError> {
        match self.store_bytes() {
            u64::MAX => Ok(()),
            b => self.set_store_bytes(b.saturating_add(n)),
        }
    }

    /// Remove manifests and objects that `entries` do not refer to; the bytes left.
    fn sweep(&mut self, entries: &[Entry]) -> Result<u64, SnapshotError> {
        use std::collections::BTreeSet;
        let manifests: BTreeSet<&str> = entries.iter().map(|e| e.manifest.as_str()).collect();
        let mut hashes = BTreeSet::new();
        for h in &manifests {
            for n in self.manifest(h)?.paths.values() {
                if let manifest::Node::File { hash, .. } = n {
                    hashes.insert(hash.clone());
                }
            }
        }
        let mut bytes = 0;
        let mdir = self.store.join("manifests");
        if let Ok(list) = std::fs::read_dir(&mdir) {
            for e in list.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if manifests.contains(name.as_str()) {
                    bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                } else {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        for (hash, path, size) in self.objects.all() {
            if hashes.contains(&hash) {
                bytes += size;
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(bytes)
    }

    /// Every snapshot with what its call changed, oldest first.
    pub fn history(&mut self) -> Result<Vec<HistoryItem>, SnapshotError> {
        let entries = self.entries()?;
        let mut afters = Vec::with_capacity(entries.len());
        for e in entries.iter().skip(1) {
            afters.push(self.manifest(&e.manifest)?);
        }
        if !entries.is_empty() {
            self.cache(&entries)?;
            let prev = self.last.as_ref().map(|(_, m)| m);
            let (now, _) = manifest::scan(&self.workspace, prev, &self.rules(), None)?;
            afters.push(now);
        }
        let mut out = Vec::new();
        for (e, after) in entries.into_iter().zip(afters) {
            let before = self.manifest(&e.manifest)?;
            out.push(HistoryItem {
                changes: manifest::diff(&before, &after),
                entry: e,
            });
        }
        Ok(out)
    }

    /// Restore the workspace: with `to`, to the snapshot before the latest call with that
    /// tool_use id (or the undo `undo-N`); without, to before the latest call that changed
    /// something and is not undone yet (so repeated undos walk back). Refuses while a session
    /// holds the workspace. Takes a snapshot first, so the undo can be undone.
    pub fn undo(&mut self, to: Option<&str>) -> Result<UndoReport, SnapshotError> {
        let path = self.store.join("session.lock");
        // A handle that holds the workspace as a session (the application undoing between
        // its own calls) trades its shared lock for the exclusive one, and back after.
        let held = self.session.take();
        let was_held = held.is_some();
        let file = match held {
            Some(lock) => lock
                .unlock()
                .map_err(|(_, e)| SnapshotError::io("unlock", &path, e.into()))?,
            None => lock_file(&path)?,
        };
        let exclusive = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((file, _)) => {
                if was_held {
                    self.session = Flock::lock(file, FlockArg::LockShared).ok();
                }
                return Err(SnapshotError::Busy { lock: path });
            }
        };
        let result = self.undo_locked(to);
        if was_held {
            let file = exclusive
                .unlock()
                .map_err(|(_, e)| SnapshotError::io("unlock", &path, e.into()))?;
            self.session = Some(
                Flock::lock(file, FlockArg::LockShared)
                    .map_err(|(_, e)| SnapshotError::io("lock", &path, e.into()))?,
            );
        }
        result
    }

    fn undo_locked(&mut self, to: Option<&str>) -> Result<UndoReport, SnapshotError> {
        let _lock = self.store_lock()?;
        let entries = self.entries()?;
        let (current, stats, same) = self.scan_stored(&entries)?;
        let target = match to {
            Some(id) => entries
                .iter()
                .rev()
                .find(|e| e.id == id)
                .cloned()
                .ok_or_else(|| {
                    SnapshotError::NothingToUndo(format!(
                        "no snapshot of a call with id {id:?} (see `policy-check history`)"
                    ))
                })?,
            None => self.latest_change(&entries, &current)?,
        };
        let target_manifest = self.manifest(&target.manifest)?;
        let time = current.taken;
        let hash = self.commit_manifest(current.clone(), &stats, same)?;
        // The snapshot of the state before the undo, committed before anything is touched.
        let seq = entries.last().map_or(1, |e| e.seq + 1);
        let undo_id = format!("undo-{seq}");
        let entry = Entry {
            seq,
            id: undo_id.clone(),
            kind: Kind::Undo,
            time,
            tool: "undo".into(),
            command: Some(format!("undo --to {}", target.id)),
            manifest: hash,
            restored: Some(target.seq),
            hashed: stats.hashed,
            stored_bytes: stats.stored_bytes,
            not_covered: Vec::new(),
        };
        let bytes =
            serde_json::to_vec(&entry).map_err(|e| SnapshotError::Damaged(e.to_string()))?;
        write_atomic(
            &self.store.join("entries").join(format!("{seq:012}.json")),
            &bytes,
        )?;
        let restored = restore::restore(&self.workspace, &current, &target_manifest, &self.objects);
        // The stat cache no longer describes the workspace.
        self.last = None;
        if !restored.failures.is_empty() {
            return Err(SnapshotError::Partial {
                id: undo_id,
                failures: restored.failures,
            });
        }
        Ok(UndoReport {
            undo_id,
            restored: target,
            changes: restored.changes,
            not_covered: restored.not_covered,
        })
    }

    /// The newest call that changed the workspace and is not undone: walking back from the
    /// newest entry, an undo sends the walk to the entry before the one it restored.
    fn latest_change(&self, entries: &[Entry], current: &Manifest) -> Result<Entry, SnapshotError> {
        let mut i = entries.len();
        while i > 0 {
            let e = &entries[i - 1];
            if e.kind == Kind::Undo {
                let target = e.restored.unwrap_or(0);
                match entries.iter().position(|x| x.seq == target) {
                    Some(p) => {
                        i = p;
                        continue;
                    }
                    None => break,
                }
            }
            let after = match entries.get(i) {
                Some(next) => self.manifest(&next.manifest)?,
                None => current.clone(),
            };
            if !manifest::diff(&self.manifest(&e.manifest)?, &after).is_empty() {
                return Ok(e.clone());
            }
            i -= 1;
        }
        Err(SnapshotError::NothingToUndo(
            "nothing to undo: no snapshot before a call that changed the workspace is left".into(),
        ))
    }
}

fn lock_file(path: &Path) -> Result<File, SnapshotError> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| SnapshotError::io("open", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn settings(state: &Path) -> SnapshotSettings {
        SnapshotSettings {
            dir: Some(state.to_path_buf()),
            ..SnapshotSettings::default()
        }
    }

    /// Every path with its kind, mode, content or target: what undo must give back.
    fn state(root: &Path) -> Vec<String> {
        let (m, _) = manifest::scan(
            root,
            None,
            &ScanRules {
                exclude: &[],
                max_file_bytes: u64::MAX,
            },
            None,
        )
        .unwrap();
        m.paths
            .iter()
            .map(|(k, n)| match n {
                manifest::Node::File { hash, mode, .. } => format!("{k} file {mode:o} {hash}"),
                other => format!("{k} {other:?}"),
            })
            .collect()
    }

    #[test]
    fn undo_gives_back_files_modes_links_and_empty_dirs_and_walks_back() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, st) = (tmp.path().join("ws"), tmp.path().join("state"));
        std::fs::create_dir_all(ws.join("src/empty")).unwrap();
        std::fs::write(ws.join("a.txt"), "one\n").unwrap();
        std::fs::write(ws.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(ws.join("run.sh"), PermissionsExt::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("../outside", ws.join("link")).unwrap();
        std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
        std::fs::write(ws.join("node_modules/x/big"), "dep").unwrap();
        let first = state(&ws);
        let mut s = Snapshots::open(&ws, &settings(&st)).unwrap();
        s.before("t1", "bash", Some("rm -rf src")).unwrap();
        std::fs::remove_dir_all(ws.join("src")).unwrap();
        std::fs::remove_file(ws.join("link")).unwrap();
        let second = state(&ws);
        s.before("t2", "bash", Some(": > a.txt")).unwrap();
        std::fs::write(ws.join("a.txt"), "").unwrap();
        std::fs::write(ws.join("new"), "x").unwrap();
        std::fs::set_permissions(ws.join("run.sh"), PermissionsExt::from_mode(0o600)).unwrap();
        // A call that changed nothing is skipped by a plain undo.
        s.before("t3", "bash", Some("ls")).unwrap();
        let h = s.history().unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].changes.removed, ["link", "src", "src/empty"]);
        assert_eq!(h[1].changes.added, ["new"]);
        assert_eq!(h[1].changes.changed, ["a.txt", "run.sh"]);
        assert!(h[2].changes.is_empty());
        let r = s.undo(None).unwrap();
        assert_eq!(r.restored.id, "t2");
        assert_eq!(r.changes.removed, ["new"]);
        assert_eq!(state(&ws), second);
        let r = s.undo(None).unwrap();
        assert_eq!(r.restored.id, "t1");
        assert_eq!(state(&ws), first);
        assert!(matches!(s.undo(None), Err(SnapshotError::NothingToUndo(_))));
        // The excluded directory was never touched.
        assert_eq!(
            std::fs::read(ws.join("node_modules/x/big")).unwrap(),
            b"dep"
        );
        // Undo is undoable: back to the state before the first undo.
        let undo1 = s
            .entries()
            .unwrap()
            .iter()
            .find(|e| e.kind == Kind::Undo)
            .unwrap()
            .id
            .clone();
        s.undo(Some(&undo1)).unwrap();
        assert_eq!(std::fs::read(ws.join("new")).unwrap(), b"x");
        assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"");
    }

    #[test]
    fn a_session_blocks_undo_and_pruning_keeps_whole_snapshots() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, st) = (tmp.path().join("ws"), tmp.path().join("state"));
        std::fs::create_dir_all(&ws).unwrap();
        let mut set = settings(&st);
        set.max_count = 5;
        let mut s = Snapshots::open(&ws, &set).unwrap();
        for i in 0..12 {
            std::fs::write(ws.join("f"), format!("{i}")).unwrap();
            s.before(&format!("t{i}"), "bash", None).unwrap();
        }
        let entries = s.entries().unwrap();
        assert!(entries.len() <= 5, "{}", entries.len());
        assert_eq!(entries.last().unwrap().id, "t11");
        // Every object a kept manifest names is there; nothing else is.
        let objects: Vec<String> = s.objects.all().into_iter().map(|(h, _, _)| h).collect();
        assert_eq!(objects.len(), entries.len());
        let mut other = Snapshots::open(&ws, &set).unwrap();
        other.hold_session().unwrap();
        assert!(matches!(s.undo(None), Err(SnapshotError::Busy { .. })));
        // A session may undo its own calls, unless another session holds the workspace.
        s.hold_session().unwrap();
        assert!(matches!(s.undo(None), Err(SnapshotError::Busy { .. })));
        drop(other);
        s.undo(Some("t9")).unwrap();
        assert_eq!(std::fs::read(ws.join("f")).unwrap(), b"9");
        // It still holds the workspace afterwards.
        let mut third = Snapshots::open(&ws, &set).unwrap();
        assert!(matches!(third.undo(None), Err(SnapshotError::Busy { .. })));
    }

    #[test]
    fn a_store_inside_the_workspace_and_a_snapshot_over_budget_fail_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let inside = settings(&ws.join(".state"));
        assert!(matches!(
            Snapshots::open(&ws, &inside),
            Err(SnapshotError::StoreInWorkspace { .. })
        ));
        let mut small = settings(&tmp.path().join("state"));
        small.max_bytes = 1000;
        std::fs::write(ws.join("big"), vec![b'x'; 2000]).unwrap();
        let mut s = Snapshots::open(&ws, &small).unwrap();
        let e = s.before("t1", "bash", None).unwrap_err();
        assert!(
            matches!(
                e,
                SnapshotError::OverBudget {
                    needed: 2000,
                    max: 1000
                }
            ),
            "{e}"
        );
        assert!(s.entries().unwrap().is_empty());
    }
}
