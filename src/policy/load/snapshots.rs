//! `[snapshots]`: scalars override an included file's; `exclude` replaces it.

use super::super::snapshots::RawSnapshots;
use super::{File, Loader};
use crate::codes::DiagnosticCode;

impl Loader {
    pub(super) fn apply_snapshots(&mut self, file: &File, raw: RawSnapshots) {
        let mut s = std::mem::take(&mut self.policy.snapshots);
        if let Some(e) = raw.enabled {
            s.enabled = *e.get_ref();
        }
        if let Some(dir) = &raw.dir {
            let text = dir.get_ref();
            let path = std::path::Path::new(text);
            if path.is_absolute() || text.starts_with("~/") {
                s.dir = Some(path.to_path_buf());
            } else {
                self.diag(
                    DiagnosticCode::PolicySnapshots,
                    format!(
                        "[snapshots] dir must be an absolute path or start with `~/`, not {text:?}"
                    ),
                    file.loc(dir.span()),
                );
            }
        }
        for (value, out, what) in [
            (&raw.max_count, &mut s.max_count, "max_count"),
            (&raw.max_bytes, &mut s.max_bytes, "max_bytes"),
            (&raw.max_file_bytes, &mut s.max_file_bytes, "max_file_bytes"),
        ] {
            let Some(v) = value else { continue };
            match u64::try_from(*v.get_ref()) {
                Ok(n) if n > 0 => *out = n,
                _ => self.diag(
                    DiagnosticCode::PolicySnapshots,
                    format!("[snapshots] {what} must be at least 1, not {}", v.get_ref()),
                    file.loc(v.span()),
                ),
            }
        }
        if let Some(list) = &raw.exclude {
            s.exclude.clear();
            for name in list {
                let n = name.get_ref();
                if n.is_empty() || n.contains('/') || n == "." || n == ".." || n == ".git" {
                    self.diag(
                        DiagnosticCode::PolicySnapshots,
                        format!("[snapshots] exclude holds directory names (no `/`, not `.git`), not {n:?}"),
                        file.loc(name.span()),
                    );
                } else {
                    s.exclude.push(n.clone());
                }
            }
        }
        self.policy.snapshots = s;
    }
}
