//! `[policy] include`: applying other policy files (or shipped ones) first, with depth and
//! cycle checks.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::shipped::{library_source, shipped_source, LIBRARY, LIBRARY_PREFIX};
use super::{File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::PolicyError;

/// How deep includes may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

impl Loader {
    pub(super) fn include(
        &mut self,
        file: &File,
        dir: &Path,
        inc: &Spanned<String>,
    ) -> Result<(), PolicyError> {
        let loc = file.loc(inc.span());
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.diag(
                DiagnosticCode::PolicyInclude,
                format!("includes nest deeper than {MAX_INCLUDE_DEPTH}"),
                loc,
            );
            return Ok(());
        }
        let name = inc.get_ref();
        let (origin, text, inc_dir) = if let Some(module) = name.strip_prefix(LIBRARY_PREFIX) {
            let Some(src) = library_source(module) else {
                let known: Vec<String> = LIBRARY
                    .iter()
                    .map(|(n, _)| format!("{LIBRARY_PREFIX}{n}"))
                    .collect();
                self.diag(
                    DiagnosticCode::PolicyInclude,
                    format!(
                        "no program module `{name}` in the library: it has {}",
                        known.join(", ")
                    ),
                    loc,
                );
                return Ok(());
            };
            (name.to_string(), src.to_string(), PathBuf::new())
        } else if let Some(src) = shipped_source(name) {
            (format!("shipped:{name}"), src.to_string(), PathBuf::new())
        } else {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(t) => {
                    let d = path.parent().map(Path::to_path_buf).unwrap_or_default();
                    (path.display().to_string(), t, d)
                }
                Err(e) => {
                    self.diag(
                        DiagnosticCode::PolicyInclude,
                        format!("cannot read included policy `{}`: {e}", path.display()),
                        loc,
                    );
                    return Ok(());
                }
            }
        };
        if self.stack.contains(&origin) {
            self.diag(
                DiagnosticCode::PolicyIncludeCycle,
                format!("`{origin}` includes itself"),
                loc,
            );
            return Ok(());
        }
        self.apply(&text, &origin, &inc_dir, false)
    }
}
