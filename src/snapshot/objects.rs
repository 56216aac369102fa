//! Content-addressed file contents: `objects/<first two hex digits>/<rest>` holds the bytes
//! whose blake3 hash is the name. Every write goes to a temporary name first and is renamed
//! into place, so an object that exists is whole.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::SnapshotError;

/// The object directory of one store.
pub(crate) struct Objects {
    dir: PathBuf,
}

/// A temporary name in `dir` no other writer uses.
pub(crate) fn temp_in(dir: &Path, what: &str) -> PathBuf {
    // A collision only fails one write (create_new), never corrupts one.
    let n = getrandom::u64().unwrap_or(0);
    dir.join(format!(".tmp-{what}-{}-{n:016x}", std::process::id()))
}

/// Write `bytes` to `path` atomically (a temporary file in the same directory, renamed).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_in(dir, "w");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes));
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(SnapshotError::io("write", path, e));
    }
    Ok(())
}

impl Objects {
    pub(crate) fn new(dir: PathBuf) -> Objects {
        Objects { dir }
    }

    pub(crate) fn path(&self, hash: &str) -> PathBuf {
        let (a, b) = hash.split_at(hash.len().min(2));
        self.dir.join(a).join(b)
    }

    /// Copy `file` into the store; its hash, its size and how many bytes were new. The copy
    /// is made first (`std::fs::copy`: `copy_file_range`, which clones extents on
    /// filesystems that can) and the copy is hashed, so the name always matches the bytes
    /// even if the file changes meanwhile.
    pub(crate) fn store_file(&self, file: &Path) -> Result<(String, u64, u64), SnapshotError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| SnapshotError::io("create", &self.dir, e))?;
        let tmp = temp_in(&self.dir, "obj");
        let done = (|| {
            std::fs::copy(file, &tmp).map_err(|e| SnapshotError::io("copy", file, e))?;
            let mut h = blake3::Hasher::new();
            let size = std::fs::File::open(&tmp)
                .and_then(|mut f| std::io::copy(&mut f, &mut h))
                .map_err(|e| SnapshotError::io("read", &tmp, e))?;
            let hash = h.finalize().to_hex().to_string();
            let dest = self.path(&hash);
            if dest.is_file() {
                let _ = std::fs::remove_file(&tmp);
                return Ok((hash, size, 0));
            }
            let parent = dest.parent().unwrap_or(&self.dir);
            std::fs::create_dir_all(parent).map_err(|e| SnapshotError::io("create", parent, e))?;
            // Objects are read-only to whoever else looks; the copy keeps the file's mode.
            let _ =
                std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600));
            std::fs::rename(&tmp, &dest).map_err(|e| SnapshotError::io("write", &dest, e))?;
            Ok((hash, size, size))
        })();
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }

    /// Every object's hash and size.
    pub(crate) fn all(&self) -> Vec<(String, PathBuf, u64)> {
        let mut out = Vec::new();
        let Ok(top) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for a in top.flatten() {
            let an = a.file_name().to_string_lossy().to_string();
            if an.starts_with(".tmp-") {
                // A copy a crash left behind: never part of a snapshot.
                let _ = std::fs::remove_file(a.path());
                continue;
            }
            let Ok(inner) = std::fs::read_dir(a.path()) else {
                continue;
            };
            for b in inner.flatten() {
                let size = b.metadata().map(|m| m.len()).unwrap_or(0);
                out.push((
                    format!("{an}{}", b.file_name().to_string_lossy()),
                    b.path(),
                    size,
                ));
            }
        }
        out
    }
}
