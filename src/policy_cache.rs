//! A cache of compiled policies, so that a process that checks one command (an agent's hook
//! runs one per tool call, `policy-check check`) reads a validated policy instead of parsing,
//! validating and compiling its TOML again.
//!
//! An entry is keyed by this build's identity and the policy's name or file path and text;
//! it lists every file the policy was loaded from with the checksum of the text it had, and
//! holds the policy's binary form ([`crate::policy::binary`]). It is used only when all of it
//! still holds: the same build, the same top text, every included file unchanged, the
//! checksum of the form intact. Anything else (a stale, damaged, foreign or unreadable entry)
//! is a miss: the policy is loaded from its text, its examples are run as usual, and the
//! entry is written again (to a temporary name, then renamed, so a reader never sees half of
//! one). The cache never makes a load fail: it only makes a load faster.
//!
//! An entry is trusted as much as the directory it lives in (like the policy file itself):
//! keep it where the agent cannot write, which is anywhere outside the workspace under the
//! shipped policies (their writes stay in the workspace, and the kernel sandbox never grants
//! the cache).
//!
//! ```
//! use shellgate::policy_cache::PolicyCache;
//!
//! let dir = std::env::temp_dir().join(format!("shellgate-doc-cache-{}", std::process::id()));
//! let cache = PolicyCache::new(&dir);
//! let first = cache.load("read-only")?;  // compiled and written
//! let again = cache.load("read-only")?;  // read back
//! assert_eq!(first.name, again.name);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), shellgate::PolicyError>(())
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::load::{load_name_or_file, ExampleCheck};
use crate::policy::binary::{self, fnv, BUILD_ID};
use crate::policy::{self, Policy, PolicyError};

/// Where compiled policies are kept: see the module documentation.
#[derive(Debug, Clone)]
pub struct PolicyCache {
    dir: PathBuf,
}

/// One cache entry: the files the policy came from and their checksums, then its form.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// `(absolute path, FNV-1a of its text)` of every file loaded; shipped includes are part
    /// of the build and are not listed.
    sources: Vec<(PathBuf, u64)>,
    /// [`binary::to_bytes`] of the policy.
    #[serde(with = "serde_bytes")]
    policy: Vec<u8>,
}

impl PolicyCache {
    /// A cache in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> PolicyCache {
        PolicyCache { dir: dir.into() }
    }

    /// The cache of this user: `$SHELLGATE_CACHE_DIR`, else `$XDG_CACHE_HOME/shellgate`,
    /// else `$HOME/.cache/shellgate`; `None` when `SHELLGATE_CACHE=off` or no directory is
    /// known.
    pub fn from_env() -> Option<PolicyCache> {
        if std::env::var_os("SHELLGATE_CACHE").is_some_and(|v| v == "off") {
            return None;
        }
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = var("SHELLGATE_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("shellgate")))
            .or_else(|| var("HOME").map(|h| h.join(".cache").join("shellgate")))?;
        Some(PolicyCache::new(dir))
    }

    /// [`Policy::from_name_or_file`] through the cache: the same policy, errors and all, read
    /// from the cache when an entry for exactly this build and these texts is there.
    pub fn load(&self, spec: &str) -> Result<Policy, PolicyError> {
        let shipped = policy::shipped_source(spec).is_some();
        // The top text: a file's is read here (a missing file is the usual error, from the
        // normal load); a shipped policy's is part of the build.
        let text = if shipped {
            None
        } else {
            match std::fs::read(spec) {
                Ok(t) => Some(t),
                Err(_) => {
                    return load_name_or_file(spec, ExampleCheck::UnlessProven).map(|(p, _)| p)
                }
            }
        };
        let mut key = Vec::new();
        key.extend_from_slice(BUILD_ID.as_bytes());
        key.push(0);
        key.extend_from_slice(spec.as_bytes());
        key.push(0);
        if let Some(t) = &text {
            let abs = std::path::absolute(spec).unwrap_or_else(|_| PathBuf::from(spec));
            key.extend_from_slice(abs.as_os_str().as_encoded_bytes());
            key.push(0);
            key.extend_from_slice(t);
        }
        let path = self
            .dir
            .join("policies")
            .join(format!("{:016x}.bin", fnv(&key)));
        if let Some(p) = read_entry(&path) {
            return Ok(p);
        }
        let (policy, _) = load_name_or_file(spec, ExampleCheck::UnlessProven)?;
        write_entry(&path, &policy);
        Ok(policy)
    }
}

/// The policy of the entry at `path`, if it is whole and every source is unchanged.
fn read_entry(path: &Path) -> Option<Policy> {
    let bytes = std::fs::read(path).ok()?;
    let entry: Entry = postcard::from_bytes(&bytes).ok()?;
    for (file, sum) in &entry.sources {
        let text = std::fs::read(file).ok()?;
        if fnv(&text) != *sum {
            return None;
        }
    }
    binary::from_bytes(&entry.policy).ok()
}

/// Writes the entry for `policy` at `path`: to a temporary name in the same directory, then
/// renamed over it. Any failure leaves no entry (and no half one); the load goes on.
fn write_entry(path: &Path, policy: &Policy) {
    let Some(form) = binary::to_bytes(policy) else {
        return;
    };
    let mut sources = Vec::new();
    for s in &policy.sources {
        if s.starts_with("shipped:") {
            continue;
        }
        let Ok(text) = std::fs::read(s) else {
            return;
        };
        let abs = std::path::absolute(s).unwrap_or_else(|_| PathBuf::from(s));
        sources.push((abs, fnv(&text)));
    }
    let Ok(bytes) = postcard::to_allocvec(&Entry {
        sources,
        policy: form,
    }) else {
        return;
    };
    let Some(dir) = path.parent() else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    if std::fs::write(&tmp, &bytes).is_ok() && std::fs::rename(&tmp, path).is_ok() {
        return;
    }
    let _ = std::fs::remove_file(&tmp);
}
