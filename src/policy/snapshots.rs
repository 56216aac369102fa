//! `[snapshots]`: the per-call workspace snapshots that make every call that may write
//! undoable (`policy-check undo`). The raw table and its compiled form live here together;
//! validation is in `load/snapshots.rs`. The store itself is [`crate::snapshot`].

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// `[snapshots]` as written.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RawSnapshots {
    /// Take a snapshot of the workspace before every call that may write (default true).
    #[schemars(with = "Option<bool>")]
    pub enabled: Option<Spanned<bool>>,
    /// Where stores are kept (one per workspace, under a hash of its path): an absolute path
    /// or `~/...`. Default `$XDG_STATE_HOME/shellgate` (`~/.local/state/shellgate`); the
    /// environment variable `SHELLGATE_STATE_DIR` overrides both. Never inside the workspace.
    #[schemars(with = "Option<String>")]
    pub dir: Option<Spanned<String>>,
    /// How many snapshots to keep per workspace (oldest pruned first; default 100).
    #[schemars(with = "Option<u64>")]
    pub max_count: Option<Spanned<i64>>,
    /// Bytes the store may hold (contents and manifests; default 2 GiB). A snapshot that
    /// alone would need more fails, and the call with it (fail closed).
    #[schemars(with = "Option<u64>")]
    pub max_bytes: Option<Spanned<i64>>,
    /// Files larger than this are not copied (listed as not covered; default 256 MiB).
    #[schemars(with = "Option<u64>")]
    pub max_file_bytes: Option<Spanned<i64>>,
    /// Directory names skipped wherever they are (default `node_modules`, `target`, `.venv`,
    /// `__pycache__`): not snapshotted and never touched by undo. Replaces the default list.
    #[schemars(with = "Option<Vec<String>>")]
    pub exclude: Option<Vec<Spanned<String>>>,
}

/// `[snapshots]`, validated.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotSettings {
    /// Snapshots are taken.
    pub enabled: bool,
    /// The stores' root directory, when the policy names one.
    pub dir: Option<PathBuf>,
    /// Snapshots kept per workspace.
    pub max_count: u64,
    /// Bytes a store may hold.
    pub max_bytes: u64,
    /// Largest file copied.
    pub max_file_bytes: u64,
    /// Directory names skipped.
    pub exclude: Vec<String>,
}

impl Default for SnapshotSettings {
    fn default() -> SnapshotSettings {
        SnapshotSettings {
            enabled: true,
            dir: None,
            max_count: 100,
            max_bytes: 2 << 30,
            max_file_bytes: 256 << 20,
            exclude: ["node_modules", "target", ".venv", "__pycache__"]
                .map(String::from)
                .to_vec(),
        }
    }
}
