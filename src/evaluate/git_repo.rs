//! The repository git really uses: git's behaviour comes from the config of whichever
//! repository its discovery finds from the directory it runs in, not from its argv. An
//! embedded bare repository (a directory with `HEAD`, `objects/` and `refs/`) or a nested one
//! whose `config` sets `core.fsmonitor` runs that program on `git -C evil status`.
//!
//! So every allowed git command's repository is found as git finds it (the directory the
//! command runs in, `cd` followed, then each `-C`; at each level up, a `.git` directory or a
//! `gitdir:` file, else the directory itself if it has a repository's shape) and it must be
//! the workspace's own repository (what discovery finds from a workspace root) or one the
//! policy names in `[programs.git] repositories`. The one it uses must not set a key that
//! runs a program ([`super::git_config`]).
//!
//! `--git-dir`, `--work-tree`, `--bare`, `-c`, `--config-env` and `GIT_*` assignments are
//! refused by the shipped policies' option and `[env]` rules; this check covers what remains,
//! the directory. It reads the filesystem, so it runs only when the context says the
//! workspace is real (`Context::filesystem`): hooks, `check`, `serve`, `run`.

use std::path::{Path, PathBuf};

use super::{git_config, paths, Eval};
use crate::codes::ReasonCode;
use crate::policy::{ProgramRule, Verdict};
use crate::shell::Word;

/// A repository discovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repo {
    /// The directory discovery stopped in (a work tree's top, or a bare repository).
    pub top: PathBuf,
    /// Its git directory (`top/.git`, where a `gitdir:` file points, or `top` when bare).
    pub git_dir: PathBuf,
}

/// Global options of git that take a value (the next word).
const GLOBAL_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--config-env",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// Subcommands that do not use a discovered repository's config to run anything.
const NO_REPOSITORY: &[&str] = &["init", "clone", "version", "help"];

/// Whether `dir` has a git directory's shape, as git's `is_git_directory` tests it: `HEAD`,
/// and `objects/` and `refs/` (or a `commondir` file naming where they are).
fn is_git_dir(dir: &Path) -> bool {
    let head = dir.join("HEAD");
    if !head.is_file() && !head.is_symlink() {
        return false;
    }
    if dir.join("commondir").is_file() {
        return true;
    }
    dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The repository git's discovery finds from `start` (walking up to `/`), if any.
pub(crate) fn discover(start: &Path) -> Option<Repo> {
    for dir in start.ancestors() {
        let dot = dir.join(".git");
        if dot.is_file() {
            // A `gitdir: PATH` file (a linked worktree, a submodule): relative to its dir.
            let target = std::fs::read_to_string(&dot)
                .ok()
                .and_then(|t| {
                    t.lines()
                        .next()
                        .and_then(|l| l.strip_prefix("gitdir:"))
                        .map(|p| p.trim().to_string())
                })
                .map(|p| paths::normalize(&dir.join(p)))
                // An unreadable or malformed file: git stops here with an error; what it
                // points at is unknown, so it is named as the `.git` file itself.
                .unwrap_or(dot);
            return Some(Repo {
                top: dir.to_path_buf(),
                git_dir: target,
            });
        }
        if dot.is_dir() && is_git_dir(&dot) {
            return Some(Repo {
                top: dir.to_path_buf(),
                git_dir: dot,
            });
        }
        if is_git_dir(dir) {
            return Some(Repo {
                top: dir.to_path_buf(),
                git_dir: dir.to_path_buf(),
            });
        }
    }
    None
}

/// The common directory of a git directory: where a linked worktree's `commondir` points,
/// else itself. Two worktrees of one repository share it (config, hooks, objects).
fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => paths::normalize(&git_dir.join(c.trim())),
        Err(_) => git_dir.to_path_buf(),
    }
}

/// The config files git reads of a repository: its `config`, the common directory's for a
/// linked worktree, and `config.worktree`.
fn config_files(git_dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        let common = paths::normalize(&git_dir.join(common.trim()));
        files.push(common.join("config"));
    }
    files
}

/// The index in `words` (git's arguments) of its subcommand, after the global options.
pub(super) fn subcommand(words: &[Word]) -> Option<usize> {
    let mut i = 0;
    while i < words.len() {
        let v = words[i].static_value()?;
        if !v.starts_with('-') {
            return Some(i);
        }
        i += if GLOBAL_WITH_VALUE.contains(&v.as_str()) {
            2
        } else {
            1
        };
    }
    None
}

/// Subcommands that run hooks (githooks(5)).
const RUNS_HOOKS: &[&str] = &[
    "commit",
    "merge",
    "cherry-pick",
    "checkout",
    "switch",
    "pull",
    "push",
    "rebase",
    "am",
    "revert",
    "gc",
    "worktree",
    "clone",
    "fetch",
];

/// An executable hook of a repository (`hooks/NAME`, not a `.sample`), in it or in its common
/// directory.
fn active_hook(git_dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = vec![git_dir.join("hooks")];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        dirs.push(paths::normalize(&git_dir.join(common.trim())).join("hooks"));
    }
    dirs.into_iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_none_or(|x| x != "sample")
                && std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl Eval<'_> {
    /// Whether the agent may write `p` under this policy (then what git reads there is the
    /// agent's, not the user's).
    fn writable(&self, p: &Path) -> bool {
        let r = paths::Resolved::Exact(paths::normalize(p));
        paths::check(&self.policy.paths, &r, true, self.ctx).is_ok()
    }

    /// The parts of the workspace's own repository's config that lie in files the agent may
    /// write: an included file that sets a program-running key, and a hooks directory.
    fn own_repository_reach(
        &mut self,
        rule: &ProgramRule,
        repo: &Repo,
        sub: &str,
        span: crate::shell::Span,
    ) {
        let mut findings = Vec::new();
        for file in config_files(&repo.git_dir) {
            let Ok(keys) = git_config::scan(&file, &self.ctx.home) else {
                continue; // the user's own file: git reads it as it is
            };
            for k in keys {
                if k.key == "core.hookspath" {
                    let v = k.value.trim();
                    let dir = match v.strip_prefix("~/") {
                        Some(rest) => self.ctx.home.join(rest),
                        None => repo.top.join(v),
                    };
                    if RUNS_HOOKS.contains(&sub) && self.writable(&dir) {
                        findings.push(format!(
                            "its `core.hooksPath` is `{}`, where the agent may write hooks that \
                             `git {sub}` runs",
                            dir.display()
                        ));
                    }
                } else if self.writable(&k.file) {
                    findings.push(format!(
                        "`{}` is set in `{}`, a file the agent may write",
                        k.key,
                        k.file.display()
                    ));
                }
            }
        }
        for f in findings {
            self.reason(
                ReasonCode::GitConfigRunsProgram,
                Verdict::Deny,
                Some(&rule.rule),
                format!(
                    "the workspace's repository makes git run a program from the work tree: {f}"
                ),
                span,
            );
        }
    }

    /// The repository check for a git command (`words` are its arguments) under `rule`.
    pub(super) fn git_repository(&mut self, rule: &ProgramRule, words: &[Word]) {
        if !self.ctx.filesystem {
            return;
        }
        // Each `-C` moves where git starts, relative to the previous one.
        let mut starts: Vec<PathBuf> = self.cwds.clone();
        let mut i = 0;
        let mut sub = None;
        while i < words.len() {
            let Some(v) = words[i].static_value() else {
                return; // refused by the option checks: nothing more to say
            };
            if !v.starts_with('-') {
                sub = Some(v);
                break;
            }
            if v == "-C" {
                let Some(dir) = words.get(i + 1) else { return };
                let mut next = Vec::new();
                for s in &starts {
                    match paths::resolve(dir, self.ctx, s) {
                        paths::Resolved::Exact(p) => next.push(p),
                        _ => return, // the path check refuses it
                    }
                }
                starts = next;
                i += 2;
                continue;
            }
            i += if GLOBAL_WITH_VALUE.contains(&v.as_str()) {
                2
            } else {
                1
            };
        }
        let Some(sub) = sub else { return };
        if NO_REPOSITORY.contains(&sub.as_str()) {
            return;
        }
        let span = words.first().map_or(words[0].span, |w| w.span);
        // The workspace's own repository, and its linked worktrees (one common directory).
        let own: Vec<PathBuf> = self
            .ctx
            .workspace
            .iter()
            .filter_map(|root| discover(root))
            .map(|r| common_dir(&r.git_dir))
            .collect();
        for start in starts {
            let Some(repo) = discover(&start) else {
                continue; // not a repository: git refuses to work
            };
            let named = rule
                .repositories
                .iter()
                .any(|p| paths::matches(p, &repo.top, self.ctx));
            let is_own = own.contains(&common_dir(&repo.git_dir));
            if !is_own && !named {
                self.reason(
                    ReasonCode::GitRepositoryUntrusted,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!(
                        "git would use the repository in `{}` (found from `{}`), which is not \
                         the workspace's own repository: its config and hooks can run programs. \
                         Name it in `[programs.git] repositories` to trust it",
                        repo.top.display(),
                        start.display()
                    ),
                    span,
                );
                continue;
            }
            if is_own && !named {
                // The workspace's own repository: its config is the user's (the policy keeps
                // the agent from writing `.git/`), so it is trusted, except where it reaches
                // into files the agent may write: an included config in the work tree
                // (`include.path = ../.gitconfig`), a hooks directory in it
                // (`core.hooksPath = .githooks`) for a subcommand that runs hooks.
                self.own_repository_reach(rule, &repo, &sub, span);
                continue;
            }
            // Its hooks run on commit, merge, checkout, push...: a named repository's own
            // hooks are programs the policy never saw.
            if let Some(hook) = active_hook(&repo.git_dir) {
                self.reason(
                    ReasonCode::GitConfigRunsProgram,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!(
                        "the repository in `{}` has the hook `{}`, which git runs",
                        repo.top.display(),
                        hook.display()
                    ),
                    span,
                );
            }
            for file in config_files(&repo.git_dir) {
                match git_config::scan(&file, &self.ctx.home) {
                    Ok(keys) => {
                        for k in keys {
                            self.reason(
                                ReasonCode::GitConfigRunsProgram,
                                Verdict::Deny,
                                Some(&rule.rule),
                                format!(
                                    "the repository in `{}` sets `{}` in `{}`, which makes git \
                                     run a program",
                                    repo.top.display(),
                                    k.key,
                                    k.file.display()
                                ),
                                span,
                            );
                        }
                    }
                    Err(e) => self.reason(
                        ReasonCode::GitConfigRunsProgram,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "the config `{}` of the repository in `{}` cannot be read as git \
                             reads it ({}), so what it runs cannot be known",
                            e.file.display(),
                            repo.top.display(),
                            e.why
                        ),
                        span,
                    ),
                }
            }
        }
    }
}
