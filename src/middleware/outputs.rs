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
//!
//! Everything here runs unconfined, on a directory the session can change while (and after)
//! it runs: so no name below `calls/` is ever followed. `calls/` and `files/` are opened once,
//! when this is made; a call's directory is opened from `calls/`'s handle with `O_NOFOLLOW`
//! (a symlink swapped in for `$OUTPUT_DIR` fails the capture, nothing moves), its entries are
//! examined with `fstatat(AT_SYMLINK_NOFOLLOW)` and moved with `renameat` between handles,
//! and what arrives in `files/` is examined again (an entry swapped for a symlink between the
//! check and the move is removed, not returned).

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::{fstatat, mkdirat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// Most entries of one `$OUTPUT_DIR` looked at.
const MAX_ENTRIES: usize = 1000;

/// See the [module docs](self).
#[derive(Debug)]
pub struct OutputFiles {
    root: PathBuf,
    /// Remove the root when dropped (a temporary one).
    remove: bool,
    /// `calls/` and `files/`, opened when this was made.
    calls: OwnedFd,
    files: OwnedFd,
}

fn open_dir(at: impl AsFd, name: &Path) -> std::io::Result<OwnedFd> {
    openat(
        at,
        name,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(std::io::Error::from)
}

/// Remove `name` below `at` without following any symlink: a symlink or file is unlinked, a
/// directory emptied (depth-first, from handles) and removed.
fn remove_tree(at: &OwnedFd, name: &Path, depth: usize) -> std::io::Result<()> {
    let st = fstatat(at.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFDIR || depth > 64 {
        return unlinkat(at.as_fd(), name, UnlinkatFlags::NoRemoveDir).map_err(Into::into);
    }
    let fd = open_dir(at.as_fd(), name)?;
    for n in entry_names(&fd)? {
        remove_tree(&fd, Path::new(&n), depth + 1)?;
    }
    unlinkat(at.as_fd(), name, UnlinkatFlags::RemoveDir).map_err(Into::into)
}

/// The names in a directory handle (without `.` and `..`).
fn entry_names(fd: &OwnedFd) -> std::io::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let dup = fd.try_clone()?;
    let mut dir = nix::dir::Dir::from_fd(dup)?;
    let mut out = Vec::new();
    for e in dir.iter() {
        let e = e?;
        let b = e.file_name().to_bytes();
        if b != b"." && b != b".." {
            out.push(std::ffi::OsStr::from_bytes(b).to_os_string());
        }
        if out.len() > MAX_ENTRIES * 10 {
            break;
        }
    }
    Ok(out)
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
        let root = crate::evaluate::real_path(&crate::evaluate::normalize(&root));
        let top = nix::fcntl::open(
            &root,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let calls = open_dir(&top, Path::new("calls"))?;
        let files = open_dir(&top, Path::new("files"))?;
        Ok(OutputFiles {
            root,
            remove: false,
            calls,
            files,
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
        let name = format!("call_{}", hex(12)?);
        mkdirat(
            self.calls.as_fd(),
            name.as_str(),
            Mode::from_bits_truncate(0o755),
        )?;
        Ok(self.calls_dir().join(name))
    }

    /// The name below `calls/` of a call directory made by [`OutputFiles::new_call_dir`].
    fn call_name<'p>(&self, dir: &'p Path) -> std::io::Result<&'p Path> {
        match (dir.parent(), dir.file_name()) {
            (Some(p), Some(n)) if p == self.calls_dir() => Ok(Path::new(n)),
            _ => Err(std::io::Error::other(format!(
                "{} is not a call directory of {}",
                dir.display(),
                self.root.display()
            ))),
        }
    }

    /// Remove a call's directory (whatever the session left or swapped in there), following
    /// no symlink.
    pub fn discard(&self, dir: &Path) -> std::io::Result<()> {
        remove_tree(&self.calls, self.call_name(dir)?, 0)
    }

    /// Capture the top-level regular files of `dir` (a call's `$OUTPUT_DIR`), each at most
    /// `max_bytes`, then remove `dir`.
    pub fn capture(&self, dir: &Path, max_bytes: u64) -> std::io::Result<Capture> {
        let result = self.capture_files(dir, max_bytes);
        let _ = self.discard(dir);
        result
    }

    fn capture_files(&self, dir: &Path, max_bytes: u64) -> std::io::Result<Capture> {
        let name = self.call_name(dir)?;
        // ELOOP when the session replaced its `$OUTPUT_DIR` with a symlink.
        let call = open_dir(self.calls.as_fd(), name).map_err(|e| {
            std::io::Error::other(format!(
                "$OUTPUT_DIR is no longer a directory (replaced by the session?): {e}"
            ))
        })?;
        let mut entries = entry_names(&call)?;
        entries.sort();
        entries.truncate(MAX_ENTRIES + 1);
        let mut take = Vec::new();
        let mut skipped = Vec::new();
        if entries.len() > MAX_ENTRIES {
            entries.truncate(MAX_ENTRIES);
            skipped.push(format!(
                "*: more than {MAX_ENTRIES} entries; only the first {MAX_ENTRIES} (by name, of those read) were looked at"
            ));
        }
        for e in entries {
            let Some(name) = e.to_str().map(str::to_string) else {
                skipped.push(format!("{}: its name is not UTF-8", e.to_string_lossy()));
                continue;
            };
            // Never followed: a symlink could name any file of the host.
            match regular(&call, &name)? {
                Kind::Symlink => skipped.push(format!("{name}: a symlink")),
                Kind::Dir => skipped.push(format!(
                    "{name}: a directory (only top-level files are returned)"
                )),
                Kind::Other => skipped.push(format!("{name}: not a regular file")),
                // A hard link to a file elsewhere would hand that file to the application.
                Kind::HardLink => skipped.push(format!("{name}: a hard link")),
                Kind::File(size) if size > max_bytes => {
                    return Ok(Capture::TooLarge { name, size })
                }
                Kind::File(size) => take.push((name, size)),
            }
        }
        let mut files = Vec::new();
        for (name, size) in take {
            let file_id = format!("file_{}", hex(16)?);
            mkdirat(
                self.files.as_fd(),
                file_id.as_str(),
                Mode::from_bits_truncate(0o755),
            )?;
            let dest = open_dir(self.files.as_fd(), Path::new(&file_id))?;
            renameat(call.as_fd(), name.as_str(), dest.as_fd(), name.as_str())?;
            // Checked again where the session cannot reach: an entry swapped between the
            // check and the move is dropped.
            match regular(&dest, &name)? {
                Kind::File(size) if size <= max_bytes => {}
                _ => {
                    let _ = remove_tree(&self.files, Path::new(&file_id), 0);
                    skipped.push(format!("{name}: changed while it was collected"));
                    continue;
                }
            }
            let path = self.root.join("files").join(&file_id).join(&name);
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

/// What an entry is, not following symlinks.
enum Kind {
    File(u64),
    HardLink,
    Symlink,
    Dir,
    Other,
}

fn regular(dir: &OwnedFd, name: &str) -> std::io::Result<Kind> {
    let st = fstatat(dir.as_fd(), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let fmt = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    Ok(if fmt == SFlag::S_IFLNK {
        Kind::Symlink
    } else if fmt == SFlag::S_IFDIR {
        Kind::Dir
    } else if fmt != SFlag::S_IFREG {
        Kind::Other
    } else if st.st_nlink != 1 {
        Kind::HardLink
    } else {
        Kind::File(u64::try_from(st.st_size).unwrap_or(u64::MAX))
    })
}

fn hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
