//! [`FileTool`]: what the text editor's file operations go through (beside the
//! [`Executor`](super::Executor) that runs commands), and [`LocalFiles`], the reference one.
//!
//! The [`Guard`](super::Guard) checks every path against the policy before it calls the file
//! tool, and hands it the path with its symlinks resolved (the real path that was checked).
//! [`LocalFiles`] writes atomically: a temporary file in the same directory, written in full
//! and synced, given the old file's permissions, then renamed over the old one (or linked to
//! a new name, which fails if something appeared there meanwhile). On any failure the
//! temporary file is removed and the target is untouched: nothing is ever half-written.
//!
//! [`LocalFiles::confined`] does its I/O on a thread of its own under Landlock (the same roots
//! as the session's kernel sandbox), so a symlink swapped in after the policy check still
//! cannot lead it outside the policy's paths.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::sandbox::{SandboxError, SandboxSpec};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file of this many bytes.
    File {
        /// Its size.
        size: u64,
    },
    /// A directory.
    Directory,
    /// Anything else (a device, a pipe, a socket): never read or written.
    Other,
}

/// How [`FileTool::write`] may treat an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// The file must not exist yet.
    CreateNew,
    /// The file must exist: it is replaced, keeping its permissions.
    Replace,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The path relative to the listed directory (`src/main.rs`).
    pub path: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// Why a file operation failed. Its text is what the model is told (after `Error: `).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Nothing at that path.
    #[error("`{}` does not exist", .0.display())]
    NotFound(PathBuf),
    /// Something is there already.
    #[error("`{}` already exists", .0.display())]
    Exists(PathBuf),
    /// A file larger than the limit.
    #[error("`{}` is {size} bytes, more than the {max}-byte limit", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Not a regular file (nor a directory, where one is listed).
    #[error("`{}` is not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// A file with other hard links: replacing it would leave the other names with the old
    /// text, so it is not replaced.
    #[error("`{}` has other hard links; it is not replaced (edit it where it really lives)", .0.display())]
    HardLinked(PathBuf),
    /// The kernel sandbox (or the file's permissions) refused it.
    #[error("`{}`: permission denied (by the file's permissions or the kernel sandbox)", .0.display())]
    PermissionDenied(PathBuf),
    /// The file tool cannot work (its confined thread could not start, say).
    #[error("the file tool is unavailable: {0}")]
    Unavailable(String),
    /// Any other I/O failure.
    #[error("`{}`: {source}", .path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

impl FileError {
    fn io(path: &Path, e: std::io::Error) -> FileError {
        match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound(path.to_path_buf()),
            std::io::ErrorKind::AlreadyExists => FileError::Exists(path.to_path_buf()),
            std::io::ErrorKind::PermissionDenied => FileError::PermissionDenied(path.to_path_buf()),
            _ => FileError::Io {
                path: path.to_path_buf(),
                source: e,
            },
        }
    }
}

/// The thing that reads and writes files for the text editor tools: the local file system
/// ([`LocalFiles`]), a container, a remote host. Paths are absolute and already checked
/// against the policy by the [`Guard`](super::Guard).
pub trait FileTool: Send {
    /// What `path` is (symlinks followed).
    fn stat(&mut self, path: &Path) -> Result<FileKind, FileError>;
    /// The contents of the regular file `path`, at most `max` bytes ([`FileError::TooLarge`]
    /// beyond).
    fn read(&mut self, path: &Path, max: u64) -> Result<Vec<u8>, FileError>;
    /// The entries of directory `path`, `depth` levels down (1: its own entries), hidden
    /// names left out, sorted, at most `max` of them; symlinked directories are not entered.
    fn list(&mut self, path: &Path, depth: usize, max: usize) -> Result<Vec<DirEntry>, FileError>;
    /// Write `contents` to `path` atomically (all or nothing), creating missing parent
    /// directories for [`WriteMode::CreateNew`].
    fn write(&mut self, path: &Path, contents: &[u8], mode: WriteMode) -> Result<(), FileError>;
}

impl<F: FileTool + ?Sized> FileTool for Box<F> {
    fn stat(&mut self, path: &Path) -> Result<FileKind, FileError> {
        (**self).stat(path)
    }
    fn read(&mut self, path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
        (**self).read(path, max)
    }
    fn list(&mut self, path: &Path, depth: usize, max: usize) -> Result<Vec<DirEntry>, FileError> {
        (**self).list(path, depth, max)
    }
    fn write(&mut self, path: &Path, contents: &[u8], mode: WriteMode) -> Result<(), FileError> {
        (**self).write(path, contents, mode)
    }
}

/// The local file system; see the [module docs](self).
#[derive(Debug, Default)]
pub struct LocalFiles {
    worker: Option<Worker>,
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Debug)]
struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl LocalFiles {
    /// File operations in this process, with its own permissions.
    pub fn new() -> LocalFiles {
        LocalFiles { worker: None }
    }

    /// File operations on a thread confined by Landlock to `spec`'s roots (reads under its
    /// read and write roots and the system directories, writes under its write roots). Fails
    /// when the kernel cannot enforce it (never a silent fallback).
    pub fn confined(spec: &SandboxSpec) -> Result<LocalFiles, SandboxError> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (jobs, rx) = mpsc::channel::<Job>();
        let spec = spec.clone();
        std::thread::Builder::new()
            .name("shellgate-file-tool".to_string())
            .spawn(move || {
                let confined = crate::sandbox::restrict_this_thread(&spec);
                let ok = confined.is_ok();
                let _ = ready_tx.send(confined);
                if ok {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                }
            })
            .map_err(|e| SandboxError::Setup(format!("cannot start the file tool thread: {e}")))?;
        ready_rx.recv().map_err(|_| {
            SandboxError::Setup("the file tool thread ended before it was confined".into())
        })??;
        Ok(LocalFiles {
            worker: Some(Worker { jobs }),
        })
    }

    /// Whether the I/O runs confined by Landlock.
    pub fn is_confined(&self) -> bool {
        self.worker.is_some()
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, FileError> + Send + 'static,
    ) -> Result<T, FileError> {
        let Some(w) = &self.worker else {
            return f();
        };
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        w.jobs
            .send(job)
            .map_err(|_| FileError::Unavailable("its confined thread is gone".into()))?;
        rx.recv()
            .map_err(|_| FileError::Unavailable("its confined thread is gone".into()))?
    }
}

impl FileTool for LocalFiles {
    fn stat(&mut self, path: &Path) -> Result<FileKind, FileError> {
        let path = path.to_path_buf();
        self.run(move || stat(&path))
    }

    fn read(&mut self, path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
        let path = path.to_path_buf();
        self.run(move || read(&path, max))
    }

    fn list(&mut self, path: &Path, depth: usize, max: usize) -> Result<Vec<DirEntry>, FileError> {
        let path = path.to_path_buf();
        self.run(move || list(&path, depth, max))
    }

    fn write(&mut self, path: &Path, contents: &[u8], mode: WriteMode) -> Result<(), FileError> {
        let path = path.to_path_buf();
        let contents = contents.to_vec();
        self.run(move || write(&path, &contents, mode))
    }
}

fn stat(path: &Path) -> Result<FileKind, FileError> {
    let m = std::fs::metadata(path).map_err(|e| FileError::io(path, e))?;
    Ok(if m.is_file() {
        FileKind::File { size: m.len() }
    } else if m.is_dir() {
        FileKind::Directory
    } else {
        FileKind::Other
    })
}

fn read(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    // O_NONBLOCK: opening a FIFO must not hang; what is not a regular file is refused below.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| FileError::io(path, e))?;
    let m = file.metadata().map_err(|e| FileError::io(path, e))?;
    if !m.is_file() {
        return Err(FileError::NotAFile(path.to_path_buf()));
    }
    if m.len() > max {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: m.len(),
            max,
        });
    }
    let mut buf = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| FileError::io(path, e))?;
    if buf.len() as u64 > max {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: buf.len() as u64,
            max,
        });
    }
    Ok(buf)
}

fn list(path: &Path, depth: usize, max: usize) -> Result<Vec<DirEntry>, FileError> {
    let mut out = Vec::new();
    let mut todo = vec![(path.to_path_buf(), String::new(), 1)];
    while let Some((dir, prefix, level)) = todo.pop() {
        if out.len() > max {
            break;
        }
        let rd = std::fs::read_dir(&dir).map_err(|e| FileError::io(&dir, e))?;
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue; // not UTF-8: cannot be named in JSON
            };
            if name.starts_with('.') {
                continue;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir()); // symlinks are not dirs here
            let rel = format!("{prefix}{name}");
            if is_dir && level < depth {
                todo.push((e.path(), format!("{rel}/"), level + 1));
            }
            out.push(DirEntry { path: rel, is_dir });
            if out.len() > max {
                break;
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn write(path: &Path, contents: &[u8], mode: WriteMode) -> Result<(), FileError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(FileError::NotAFile(path.to_path_buf()));
    };
    let old = std::fs::symlink_metadata(path);
    let perms = match (mode, &old) {
        (WriteMode::CreateNew, Ok(_)) => return Err(FileError::Exists(path.to_path_buf())),
        (WriteMode::CreateNew, Err(_)) => {
            std::fs::create_dir_all(dir).map_err(|e| FileError::io(dir, e))?;
            None
        }
        (WriteMode::Replace, Ok(m)) if m.is_file() && m.nlink() == 1 => {
            Some(m.permissions().mode() & 0o7777)
        }
        // Renaming over a hard-linked file would silently split it from its other names.
        (WriteMode::Replace, Ok(m)) if m.is_file() => {
            return Err(FileError::HardLinked(path.to_path_buf()))
        }
        (WriteMode::Replace, Ok(_)) => return Err(FileError::NotAFile(path.to_path_buf())),
        (WriteMode::Replace, Err(e)) => {
            return Err(FileError::io(path, std::io::Error::from(e.kind())))
        }
    };
    let mut token = [0u8; 8];
    getrandom::fill(&mut token)
        .map_err(|e| FileError::Unavailable(format!("no randomness for a temporary name: {e}")))?;
    let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(
        ".{}.shellgate-{hex}.tmp",
        name.to_string_lossy().chars().take(100).collect::<String>()
    ));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(perms.unwrap_or(0o644))
            .open(&tmp)
            .map_err(|e| FileError::io(&tmp, e))?;
        f.write_all(contents).map_err(|e| FileError::io(path, e))?;
        if let Some(p) = perms {
            // `mode` above is filtered by the umask; the old file's bits are kept exactly.
            f.set_permissions(std::fs::Permissions::from_mode(p))
                .map_err(|e| FileError::io(path, e))?;
        }
        f.sync_all().map_err(|e| FileError::io(path, e))?;
        drop(f);
        match mode {
            WriteMode::Replace => std::fs::rename(&tmp, path).map_err(|e| FileError::io(path, e)),
            // `link` fails if the name appeared meanwhile: never clobbers.
            WriteMode::CreateNew => std::fs::hard_link(&tmp, path)
                .map_err(|e| FileError::io(path, e))
                .map(|()| {
                    let _ = std::fs::remove_file(&tmp);
                }),
        }
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    if result.is_ok() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all(); // the rename itself, durable
        }
    }
    result
}
