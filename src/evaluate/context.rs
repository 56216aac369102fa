//! [`Context`]: where a command runs (working directory, workspace roots, home, sandbox).

use std::path::{Path, PathBuf};

use super::{normalize, SandboxState};

/// Where a command runs: its working directory, the workspace roots, and the home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The session's current working directory (absolute).
    pub cwd: PathBuf,
    /// The workspace roots that `{workspace}` in path rules stands for.
    pub workspace: Vec<PathBuf>,
    /// The home directory that `~`, `$HOME` and `{home}` stand for.
    pub home: PathBuf,
    /// Whether what runs is confined by the kernel sandbox (rules of `[sandbox.programs]`
    /// apply only when it is).
    pub sandbox: SandboxState,
    /// The `$OUTPUT_DIR` of a code execution call, which `{output_dir}` in path rules and
    /// `$OUTPUT_DIR` in commands stand for; `None` elsewhere (then neither is known).
    pub output_dir: Option<PathBuf>,
    /// Whether the workspace is real and its files may be read while checking (the
    /// repository git would use, and its config): true for [`Context::new`], false for
    /// [`Context::example`], whose workspace is only a name.
    pub filesystem: bool,
}

impl Context {
    /// A context whose workspace and working directory are `root` (made absolute and
    /// normalised lexically), with `HOME` from the environment (or `/root`).
    pub fn new(root: impl AsRef<Path>) -> Context {
        let root = absolute(root.as_ref());
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root"));
        Context {
            cwd: root.clone(),
            workspace: vec![root],
            home: absolute(&home),
            sandbox: SandboxState::Off,
            output_dir: None,
            filesystem: true,
        }
    }

    /// The context policy examples are checked in: workspace `/workspace`, home `/home/user`.
    pub fn example() -> Context {
        Context {
            cwd: PathBuf::from("/workspace"),
            workspace: vec![PathBuf::from("/workspace")],
            home: PathBuf::from("/home/user"),
            sandbox: SandboxState::Off,
            output_dir: None,
            filesystem: false,
        }
    }

    /// The same context with another working directory (relative ones resolve against the
    /// current one).
    pub fn with_cwd(mut self, cwd: impl AsRef<Path>) -> Context {
        self.cwd = normalize(&self.cwd.join(cwd));
        self
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize(p)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        normalize(&cwd.join(p))
    }
}
