//! Value kinds for a program's hidden inputs: lists of paths read from a file or stdin, code
//! loaded from module paths, programs an option runs, backup suffixes that are written paths,
//! git pathspecs that turn `git diff` into a read outside the work tree, and jq programs that
//! import modules. Also the wording of `option-not-allowed` (the closest allowed options).

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::{ArgKind, ProgramRule, Verdict};
use crate::shell::{Span, Word, WordPart};

impl Eval<'_> {
    /// Check a value of one of the kinds of this file. `text` is its static value, `word` the
    /// word it is (`None` for a value glued to its option). For path kinds, returns what
    /// [`Eval::path`] returns.
    pub(super) fn hidden_input(
        &mut self,
        rule: &ProgramRule,
        kind: ArgKind,
        text: Option<String>,
        span: Span,
        word: Option<&Word>,
    ) -> Option<Vec<Option<PathBuf>>> {
        let name = &rule.name;
        match kind {
            ArgKind::PathList => {
                let what = match text.as_deref() {
                    Some("-") => "from stdin".to_string(),
                    Some(t) => format!("from `{t}`"),
                    None => "from a file".to_string(),
                };
                self.reason(
                    ReasonCode::PathList,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!(
                        "`{name}` would read a list of paths {what}; the paths in it cannot be checked: give them as arguments"
                    ),
                    span,
                );
                None
            }
            ArgKind::ModulePath => {
                self.reason(
                    ReasonCode::ModulePath,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!("`{name}` would load code from this path, which cannot be checked"),
                    span,
                );
                None
            }
            ArgKind::Program => {
                self.reason(
                    ReasonCode::OptionRunsProgram,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!("this option makes `{name}` run another program"),
                    span,
                );
                None
            }
            ArgKind::BackupSuffix => match text {
                Some(t) if !t.contains('/') => None,
                Some(t)
                    if t.contains('*')
                        && (t.starts_with('/') || !t.split('/').any(|c| c == "..")) =>
                {
                    // GNU sed: `*` is the edited file's name, and a `/` makes it a path,
                    // relative to the edited file's directory (which is checked as written):
                    // without `..`, a relative one stays below it.
                    let path = t.replace('*', "shellgate-backup");
                    self.path_value(Some(path), span, None, true)
                }
                Some(_) => {
                    self.reason(
                        ReasonCode::BackupSuffix,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!("a backup suffix of `{name}` with `/` but no `*`, or with `..`, names a path that cannot be checked"),
                        span,
                    );
                    None
                }
                None => {
                    self.reason(
                        ReasonCode::BackupSuffix,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!("the backup suffix of `{name}` is not known before it runs, and a `/` in it makes it a written path"),
                        span,
                    );
                    None
                }
            },
            ArgKind::Pathspec => match text {
                Some(t) if !pathspec_may_leave(&t) => None,
                t => self.path_value(t, span, word, false),
            },
            ArgKind::JqProgram => {
                if let Some(t) = &text {
                    self.jq_env(t, span);
                }
                let why = match &text {
                    Some(t) => check_jq(t).err(),
                    None => Some("the jq program is not known before it runs".to_string()),
                };
                if let Some(why) = why {
                    self.reason(
                        ReasonCode::JqProgram,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!("{why}; `{name}` may only read its inputs"),
                        span,
                    );
                }
                None
            }
            _ => None,
        }
    }

    fn path_value(
        &mut self,
        text: Option<String>,
        span: Span,
        word: Option<&Word>,
        write: bool,
    ) -> Option<Vec<Option<PathBuf>>> {
        match word {
            Some(w) => self.path(w, write),
            None => {
                let w = Word {
                    span,
                    parts: vec![WordPart::Literal(text.unwrap_or_default())],
                };
                self.path(&w, write)
            }
        }
    }
}

/// Whether a git pathspec or revision could name a path outside the work tree (absolute,
/// `~`, or climbing with `..`), which makes `git diff` read it with `--no-index`.
fn pathspec_may_leave(s: &str) -> bool {
    if s.starts_with(':') {
        // Magic pathspecs (`:/`, `:(top)`, `:!x`) stay inside the repository.
        return false;
    }
    s.starts_with('/') || s.starts_with('~') || s.split('/').any(|c| c == "..")
}

/// Words of jq that load modules or their metadata from the library search path.
const JQ_LOADERS: &[&str] = &["import", "include", "modulemeta", "get_search_list"];

/// A jq program is refused if it names a module loader anywhere as a word that is not a field
/// (`.import`) or a variable (`$import`): in strings and comments too, which only refuses
/// more.
pub(super) fn check_jq(program: &str) -> Result<(), String> {
    let bytes = program.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        let word = &program[start..i];
        let before = start.checked_sub(1).map(|j| bytes[j]);
        if JQ_LOADERS.contains(&word) && !matches!(before, Some(b'.') | Some(b'$')) {
            return Err(format!(
                "the jq program uses `{word}`, which loads code or data from files"
            ));
        }
    }
    Ok(())
}

/// The text after "is not allowed": every allowed option when there are few, else the closest
/// ones to what was written.
pub(super) fn allowed_hint(allowed: &BTreeSet<String>, written: &str) -> String {
    const SHOW_ALL: usize = 12;
    if allowed.is_empty() {
        return "no options are allowed".to_string();
    }
    if allowed.len() <= SHOW_ALL {
        let list = allowed.iter().cloned().collect::<Vec<_>>().join(" ");
        return format!("allowed: {list}");
    }
    let mut scored: Vec<(usize, &String)> = allowed
        .iter()
        .map(|a| (edit_distance(a, written), a))
        .collect();
    scored.sort();
    let best: Vec<&str> = scored.iter().take(3).map(|(_, a)| a.as_str()).collect();
    format!(
        "closest allowed: {}; {} options are allowed",
        best.join(" "),
        allowed.len()
    )
}

/// Levenshtein distance over bytes (options are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jq_loaders_are_refused_but_fields_and_variables_are_not() {
        assert!(check_jq(r#"import "../../root/.docker/config" as $c; $c"#).is_err());
        assert!(check_jq(r#"include "x"; ."#).is_err());
        assert!(check_jq(r#""a" | modulemeta"#).is_err());
        assert!(check_jq(".import | $include | .a.modulemeta").is_ok());
        assert!(check_jq(".version").is_ok());
        assert!(check_jq("[.[] | select(.n > 1)] | length").is_ok());
        // Only more is refused when the word is in a string.
        assert!(check_jq(r#".[] | select(. == "import")"#).is_err());
    }

    #[test]
    fn pathspecs_that_leave_the_tree() {
        for s in ["/etc/shadow", "~/.ssh/id_rsa", "../x", "a/../../x"] {
            assert!(pathspec_may_leave(s), "{s}");
        }
        for s in [
            "src/main.rs",
            "HEAD~1",
            "main...HEAD",
            ":/src",
            "*.rs",
            "a..b",
        ] {
            assert!(!pathspec_may_leave(s), "{s}");
        }
    }

    #[test]
    fn closest_options_are_named() {
        let allowed: BTreeSet<String> = (0..20)
            .map(|i| format!("--opt{i}"))
            .chain(["--hyperlink-format".to_string()])
            .collect();
        let hint = allowed_hint(&allowed, "--hyperlink-formt");
        assert!(
            hint.starts_with("closest allowed: --hyperlink-format"),
            "{hint}"
        );
        let few: BTreeSet<String> = ["-a".to_string(), "-b".to_string()].into();
        assert_eq!(allowed_hint(&few, "-c"), "allowed: -a -b");
    }
}
