//! `[paths]`: read, write, deny and protected path patterns, anchored and compiled.

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::{PathAnchor, PathPattern};

/// `[paths]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct RawPaths {
    /// Path patterns where reads are allowed: `{workspace}`, `{home}`, `~` or `/` followed by a glob.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read: Vec<Spanned<String>>,
    /// Path patterns where writes are allowed.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub write: Vec<Spanned<String>>,
    /// Path patterns where reads are denied even if `read` allows them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny_read: Vec<Spanned<String>>,
    /// Path patterns where writes are denied even if `write` allows them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny_write: Vec<Spanned<String>>,
    /// Message for path refusals (reads and writes, unless one of the two below is set).
    pub message: Option<String>,
    /// Message for refused reads (instead of `message`).
    pub read_message: Option<String>,
    /// Message for refused writes (instead of `message`).
    pub write_message: Option<String>,
    /// Files whose writing changes what later tools run (agents' settings, tool configs,
    /// repositories): writes are denied unless `unprotected` names them.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub protected: Vec<Spanned<String>>,
    /// Protected files this policy opts back in for writing.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub unprotected: Vec<Spanned<String>>,
    /// Why protected files are protected (shown with their refusals).
    pub protected_message: Option<String>,
}

impl Loader {
    /// `[paths]`: each pattern validated and appended; messages replace included ones.
    pub(super) fn apply_paths(&mut self, file: &File, p: RawPaths) {
        let mut paths = std::mem::take(&mut self.policy.paths);
        for (list, name, dest) in [
            (&p.read, "paths.read", &mut paths.read),
            (&p.write, "paths.write", &mut paths.write),
            (&p.deny_read, "paths.deny_read", &mut paths.deny_read),
            (&p.deny_write, "paths.deny_write", &mut paths.deny_write),
            (&p.protected, "paths.protected", &mut paths.protected),
            (&p.unprotected, "paths.unprotected", &mut paths.unprotected),
        ] {
            for item in list {
                if let Some(pat) = self.path_pattern(file, name, item) {
                    dest.push(pat);
                }
            }
        }
        if p.message.is_some() {
            // A file's own `message` is not shadowed by an included file's per-kind one.
            paths.read_message = None;
            paths.write_message = None;
        }
        for (new, dest) in [
            (p.message, &mut paths.message),
            (p.read_message, &mut paths.read_message),
            (p.write_message, &mut paths.write_message),
        ] {
            if new.is_some() {
                *dest = new;
            }
        }
        if p.protected_message.is_some() {
            paths.protected_message = p.protected_message;
        }
        self.policy.paths = paths;
    }

    pub(super) fn path_pattern(
        &mut self,
        file: &File,
        name: &str,
        item: &Spanned<String>,
    ) -> Option<PathPattern> {
        let text = item.get_ref();
        let loc = file.loc(item.span());
        let Some((anchor, rest)) = split_anchor(text) else {
            self.diag(
                DiagnosticCode::PolicyInvalidPath,
                format!("`{text}` must start with {ANCHORS}"),
                loc,
            );
            return None;
        };
        let rest = rest.trim_start_matches('/').trim_end_matches('/');
        if rest.split('/').any(|c| c == ".." || c == ".") {
            self.diag(
                DiagnosticCode::PolicyInvalidPath,
                format!("`{text}` must not contain `.` or `..`"),
                loc,
            );
            return None;
        }
        let rest = if rest.is_empty() {
            None
        } else {
            match self.glob(rest, true) {
                Ok(g) => Some(g),
                Err(e) => {
                    self.diag(
                        DiagnosticCode::PolicyInvalidGlob,
                        format!("`{text}`: {e}"),
                        loc,
                    );
                    return None;
                }
            }
        };
        Some(PathPattern {
            text: text.clone(),
            anchor,
            rest,
            rule: file.rule(name, item.span()),
        })
    }
}

/// What a path in a policy may start with, as told in a diagnostic.
pub(super) const ANCHORS: &str = "{workspace}, {home}, {output_dir}, ~ or /";

/// A policy path's anchor and the rest of it (`{workspace}/src` is the workspace and `/src`;
/// an absolute path is anchored at the root and keeps its text), or `None` when it has none
/// of [`ANCHORS`]. Path rules and `[sandbox]` roots read anchors the same way.
pub(super) fn split_anchor(text: &str) -> Option<(PathAnchor, &str)> {
    if let Some(r) = text.strip_prefix("{workspace}") {
        Some((PathAnchor::Workspace, r))
    } else if let Some(r) = text.strip_prefix("{output_dir}") {
        Some((PathAnchor::OutputDir, r))
    } else if let Some(r) = text.strip_prefix("{home}") {
        Some((PathAnchor::Home, r))
    } else if let Some(r) = text.strip_prefix('~') {
        Some((PathAnchor::Home, r))
    } else if text.starts_with('/') {
        Some((PathAnchor::Root, text))
    } else {
        None
    }
}
