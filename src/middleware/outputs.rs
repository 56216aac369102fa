//! [`OutputFiles`]: where code execution calls get their fresh `$OUTPUT_DIR`, and where the
//! files they leave there are kept for the application.
//!
//! Layout under the root (`serve --outputs DIR`):
//!
//! - `calls/`: each `bash_code_execution` call gets a new empty directory here as its
//!   `$OUTPUT_DIR` (the only part the kernel sandbox lets the session write). It is removed
//!   once the call's files are captured.
//! - `files/FILE_ID/NAME`: each regular file the call left at the top of its `$OUTPUT_DIR`
//!   is moved (renamed, never copied) here; `FILE_ID` (`file_` and 32 hex digits) is the
//!   `file_id` of its `bash_code_execution_output` entry and `NAME` its name. The session
//!   cannot write here, so a later command cannot change a file after it was reported.
//!
//! An application resolves a `file_id` with [`OutputFiles::resolve`] (or by listing
//! `files/FILE_ID/`, which holds exactly one file).

use std::path::{Path, PathBuf};

/// Most entries of one `$OUTPUT_DIR` looked at.
const MAX_ENTRIES: usize = 1000;

/// See the [module docs](self).
#[derive(Debug)]
pub struct OutputFiles {
    root: PathBuf,
    /// Remove the root when dropped (a temporary one).
    remove: bool,
}

/// A file captured from a call's `$OUTPUT_DIR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedFile {
    /// Its `file_id`.
    pub file_id: String,
    /// Its name in `$OUTPUT_DIR`.
    pub name: String,
    /// Where it is now.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
}

/// What a call left in its `$OUTPUT_DIR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    /// The files, moved into `files/`; `skipped` names what was not taken and why.
    Files {
        /// The captured files, by name.
        files: Vec<CapturedFile>,
        /// `name: why` for entries left out (directories, symlinks, hard links, names that
        /// are not UTF-8).
        skipped: Vec<String>,
    },
    /// A file larger than the cap: nothing was captured.
    TooLarge {
        /// Its name.
        name: String,
        /// Its size.
        size: u64,
    },
}

impl OutputFiles {
    /// Use (and create) `root`; it is kept when this is dropped.
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<OutputFiles> {
        let root = root.into();
        let root = if root.is_absolute() {
            root
        } else {
            std::env::current_dir()?.join(root)
        };
        std::fs::create_dir_all(root.join("calls"))?;
        std::fs::create_dir_all(root.join("files"))?;
        Ok(OutputFiles {
            root: crate::evaluate::real_path(&crate::evaluate::normalize(&root)),
            remove: false,
        })
    }

    /// A new directory under the system's temporary directory, removed when this is dropped.
    pub fn temporary() -> std::io::Result<OutputFiles> {
        let dir = std::env::temp_dir().join(format!("shellgate-outputs-{}", hex(16)?));
        std::fs::create_dir(&dir)?;
        let mut out = OutputFiles::new(&dir)?;
        out.remove = true;
        Ok(out)
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory the calls' `$OUTPUT_DIR`s are made in (a writable root of the kernel
    /// sandbox, and what `{output_dir}` stands for when the sandbox is set up).
    pub fn calls_dir(&self) -> PathBuf {
        self.root.join("calls")
    }

    /// A fresh, empty `$OUTPUT_DIR` for one call.
    pub fn new_call_dir(&self) -> std::io::Result<PathBuf> {
        let dir = self.calls_dir().join(format!("call_{}", hex(12)?));
        std::fs::create_dir(&dir)?;
        Ok(dir)
    }

    /// Capture the top-level regular files of `dir` (a call's `$OUTPUT_DIR`), each at most
    /// `max_bytes`, then remove `dir`.
    pub fn capture(&self, dir: &Path, max_bytes: u64) -> std::io::Result<Capture> {
        let result = self.capture_files(dir, max_bytes);
        let _ = std::fs::remove_dir_all(dir);
        result
    }

    fn capture_files(&self, dir: &Path, max_bytes: u64) -> std::io::Result<Capture> {
        use std::os::unix::fs::MetadataExt;
        let mut entries: Vec<_> = std::fs::read_dir(dir)?
            .take(MAX_ENTRIES + 1)
            .collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        let mut take = Vec::new();
        let mut skipped = Vec::new();
        if entries.len() > MAX_ENTRIES {
            entries.truncate(MAX_ENTRIES);
            skipped.push(format!(
                "*: more than {MAX_ENTRIES} entries; only the first {MAX_ENTRIES} (by name, of those read) were looked at"
            ));
        }
        for e in entries {
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                skipped.push(format!(
                    "{}: its name is not UTF-8",
                    e.file_name().to_string_lossy()
                ));
                continue;
            };
            // Never followed: a symlink could name any file of the host.
            let m = std::fs::symlink_metadata(e.path())?;
            if m.file_type().is_symlink() {
                skipped.push(format!("{name}: a symlink"));
            } else if m.is_dir() {
                skipped.push(format!(
                    "{name}: a directory (only top-level files are returned)"
                ));
            } else if !m.is_file() {
                skipped.push(format!("{name}: not a regular file"));
            } else if m.nlink() != 1 {
                // A hard link to a file elsewhere would hand that file to the application.
                skipped.push(format!("{name}: a hard link"));
            } else if m.len() > max_bytes {
                return Ok(Capture::TooLarge {
                    name,
                    size: m.len(),
                });
            } else {
                take.push((name, e.path(), m.len()));
            }
        }
        let mut files = Vec::new();
        for (name, from, size) in take {
            let file_id = format!("file_{}", hex(16)?);
            let dest_dir = self.root.join("files").join(&file_id);
            std::fs::create_dir(&dest_dir)?;
            let path = dest_dir.join(&name);
            std::fs::rename(&from, &path)?;
            files.push(CapturedFile {
                file_id,
                name,
                path,
                size,
            });
        }
        Ok(Capture::Files { files, skipped })
    }

    /// The file a `file_id` names, if it is one of this root's.
    pub fn resolve(&self, file_id: &str) -> Option<PathBuf> {
        let hex_part = file_id.strip_prefix("file_")?;
        if hex_part.len() != 32 || !hex_part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let dir = self.root.join("files").join(file_id);
        let mut entries = std::fs::read_dir(dir).ok()?.flatten();
        let first = entries.next()?;
        entries.next().is_none().then(|| first.path())
    }
}

impl Drop for OutputFiles {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

fn hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
