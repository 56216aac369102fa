//! `git apply` writes what its patch says: the files it names (which may be protected:
//! `.cargo/config.toml`, `shellgate.toml`, an agent's settings) and symlinks whose target is
//! the patch's text (`new file mode 120000` with `+/root/.ssh` makes `link -> /root/.ssh`, and
//! every later lexical path check reads through it). So the patch is read when the command
//! carries it (a here-document, a here-string) or names it (a file, where the context's
//! filesystem may be read), and each path it writes is checked as a `path-write`, each symlink
//! target against the write roots (`symlink-outside`). A patch read from a pipe cannot be
//! checked and is refused (`patch-unchecked`).

use std::path::{Path, PathBuf};

use super::{paths, Eval, Resolved};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{RedirectOp, SimpleCommand, Span, Word, WordPart};

/// What a simple command's standard input is, as far as a patch reader cares.
#[derive(Debug, Clone, Default)]
pub(super) enum Stdin {
    /// Inherited or a pipe: unknown content.
    #[default]
    Unknown,
    /// A here-document or here-string with this static text.
    Text(String, Span),
    /// A file redirected in (`< fix.patch`).
    File(Word),
}

/// The standard input a command's redirections give it (the last one for fd 0 wins).
pub(super) fn stdin_of(c: &SimpleCommand) -> Stdin {
    let mut stdin = Stdin::Unknown;
    for r in &c.redirects {
        if r.fd.is_some_and(|fd| fd != 0) {
            continue;
        }
        stdin = match r.op {
            RedirectOp::HereDoc => match r.heredoc.as_ref().and_then(|h| h.body.static_value()) {
                Some(t) => Stdin::Text(t, r.span),
                None => Stdin::Unknown,
            },
            RedirectOp::HereString => match r.target.static_value() {
                Some(t) => Stdin::Text(t + "\n", r.span),
                None => Stdin::Unknown,
            },
            RedirectOp::Read => Stdin::File(r.target.clone()),
            _ => continue,
        };
    }
    stdin
}

/// One file a patch touches.
#[derive(Debug, Default)]
struct Touched {
    /// Paths it writes (after stripping `-p` components), as in the patch.
    paths: Vec<String>,
    /// Whether a mode line says it is (or becomes, or was) a symlink.
    symlink: bool,
    /// The `+`/`-` lines of its hunks: a symlink's target when it is one.
    content: Vec<String>,
}

/// The files a unified or git patch touches, with `strip` leading components removed.
fn touched(text: &str, strip: usize) -> Vec<Touched> {
    let strip_path = |p: &str| -> Option<String> {
        let p = p.trim_end_matches('\t').split('\t').next().unwrap_or("");
        let p = p.trim();
        if p == "/dev/null" || p.is_empty() {
            return None;
        }
        let p = unquote(p);
        let parts: Vec<&str> = p.split('/').collect();
        // Fewer components than `-p` strips: git rejects it; keep it whole (checked).
        Some(
            parts
                .get(strip..)
                .filter(|r| !r.is_empty())
                .unwrap_or(&parts)
                .join("/"),
        )
    };
    let mut out: Vec<Touched> = Vec::new();
    // Lines of the current hunk still to come, old and new side (from its `@@` header): a
    // `--- x` line inside a hunk is content, after it a file header.
    let (mut old, mut new) = (0usize, 0usize);
    for line in text.lines() {
        if old > 0 || new > 0 {
            let Some(cur) = out.last_mut() else { break };
            match line.as_bytes().first() {
                Some(b' ') | None => {
                    old = old.saturating_sub(1);
                    new = new.saturating_sub(1);
                }
                Some(b'-') => {
                    old = old.saturating_sub(1);
                    cur.content.push(line[1..].to_string());
                }
                Some(b'+') => {
                    new = new.saturating_sub(1);
                    cur.content.push(line[1..].to_string());
                }
                Some(b'\\') => {}
                // A malformed hunk: what follows is read as headers again (git rejects it).
                _ => (old, new) = (0, 0),
            }
            if old > 0 || new > 0 || line.starts_with(['-', '+', ' ', '\\']) || line.is_empty() {
                continue;
            }
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/X b/Y`: both sides are written when names have no spaces; with spaces the
            // `+++`, `rename to` and `copy to` lines name them.
            let mut t = Touched::default();
            t.paths.extend(rest.split(' ').filter_map(strip_path));
            out.push(t);
        } else if let Some(p) = line.strip_prefix("--- ") {
            // A plain unified diff has no `diff --git` line: `---` after a hunk starts a file.
            if out.last().is_none_or(|t| !t.content.is_empty()) {
                out.push(Touched::default());
            }
            if let (Some(p), Some(cur)) = (strip_path(p), out.last_mut()) {
                cur.paths.push(p);
            }
        } else if let Some(cur) = out.last_mut() {
            if let Some(p) = line.strip_prefix("+++ ") {
                cur.paths.extend(strip_path(p));
            } else if let Some(p) = line
                .strip_prefix("rename to ")
                .or_else(|| line.strip_prefix("copy to "))
                .or_else(|| line.strip_prefix("rename from "))
            {
                // Names in these headers carry no `a/`/`b/` prefix.
                cur.paths.push(unquote(p.trim()));
            } else if line.contains(" mode 120000")
                || line.starts_with("index ") && line.ends_with(" 120000")
            {
                cur.symlink = true;
            } else if let Some(h) = line.strip_prefix("@@ ") {
                (old, new) = hunk_counts(h);
            }
        }
    }
    out
}

/// A name as git reads it: `"..."` is C-quoted (`"b/\\056cargo"` is `b/.cargo`), its escapes
/// decoded as git's `unquote_c_style` does, octal bytes included.
fn unquote(p: &str) -> String {
    let Some(q) = p.strip_prefix('"').and_then(|q| q.strip_suffix('"')) else {
        return p.to_string();
    };
    let b = q.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        let octal = |x: Option<&u8>| x.filter(|x| (b'0'..=b'7').contains(x)).map(|x| x - b'0');
        out.push(match c {
            b'a' => 7,
            b'b' => 8,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 11,
            b'f' => 12,
            b'r' => b'\r',
            b'0'..=b'3' => match (octal(b.get(i)), octal(b.get(i + 1))) {
                (Some(x), Some(y)) => {
                    i += 2;
                    (c - b'0') * 64 + x * 8 + y
                }
                _ => c,
            },
            other => other,
        });
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The line counts of a hunk header `-a,b +c,d @@` (a missing count is 1).
fn hunk_counts(h: &str) -> (usize, usize) {
    let mut it = h.split_whitespace();
    let count = |s: Option<&str>, sign: char| -> usize {
        s.and_then(|s| s.strip_prefix(sign))
            .and_then(|r| r.split_once(',').map_or(Some(1), |(_, n)| n.parse().ok()))
            .unwrap_or(0)
    };
    (count(it.next(), '-'), count(it.next(), '+'))
}

fn literal(text: &str, span: Span) -> Word {
    Word {
        span,
        parts: vec![WordPart::Literal(text.to_string())],
    }
}

impl Eval<'_> {
    /// The checks of `git apply ARGS` (`args` after `apply`), with the command's stdin.
    pub(super) fn git_apply(&mut self, args: &[Word], span: Span) {
        let mut strip = 1;
        let mut files = Vec::new();
        let mut check_only = false;
        let mut i = 0;
        let mut after_dd = false;
        while i < args.len() {
            let Some(v) = args[i].static_value() else {
                return; // refused by the option checks
            };
            if after_dd || !v.starts_with('-') || v == "-" {
                files.push(&args[i]);
            } else if v == "--" {
                after_dd = true;
            } else if v == "--check" || v == "--stat" || v == "--numstat" || v == "--summary" {
                // Only reports (with --apply it applies too: then it is not check-only).
                check_only = !args
                    .iter()
                    .any(|a| a.static_value().as_deref() == Some("--apply"));
            } else if let Some(n) = v.strip_prefix("-p") {
                let n = if n.is_empty() {
                    i += 1;
                    args.get(i).and_then(Word::static_value).unwrap_or_default()
                } else {
                    n.to_string()
                };
                strip = n.parse().unwrap_or(1);
            } else if matches!(
                v.as_str(),
                "-C" | "--exclude" | "--include" | "--whitespace" | "--build-fake-ancestor"
            ) {
                i += 1;
            }
            i += 1;
        }
        if check_only {
            return;
        }
        let mut patches: Vec<(String, Span)> = Vec::new();
        if files.is_empty()
            || files
                .iter()
                .any(|f| f.static_value().as_deref() == Some("-"))
        {
            match std::mem::take(&mut self.stdin) {
                Stdin::Text(t, s) => patches.push((t, s)),
                Stdin::File(w) => self.patch_file(&w, &mut patches),
                Stdin::Unknown => {
                    self.reason(
                        ReasonCode::PatchUnchecked,
                        Verdict::Deny,
                        None,
                        "`git apply` would read its patch from a pipe or the terminal, whose \
                         content cannot be checked for the paths and symlinks it writes; give \
                         the patch as a file or a here-document"
                            .into(),
                        span,
                    );
                }
            }
        }
        for f in files {
            if f.static_value().as_deref() != Some("-") {
                self.patch_file(f, &mut patches);
            }
        }
        for (text, pspan) in patches {
            self.patch_text(&text, strip, pspan);
        }
    }

    /// Read a patch file named by `w` (each directory the command may run in), when the
    /// context's files may be read; a file that cannot be read is git's error, not a write.
    fn patch_file(&mut self, w: &Word, out: &mut Vec<(String, Span)>) {
        if !self.ctx.filesystem {
            return;
        }
        for cwd in self.cwds.clone() {
            if let Resolved::Exact(p) = paths::resolve(w, self.ctx, &cwd) {
                if let Ok(bytes) = std::fs::read(&p) {
                    out.push((String::from_utf8_lossy(&bytes).into_owned(), w.span));
                }
            }
        }
    }

    /// Check what one patch writes.
    fn patch_text(&mut self, text: &str, strip: usize, span: Span) {
        for t in touched(text, strip) {
            for p in &t.paths {
                self.path(&literal(p, span), true);
            }
            if !t.symlink {
                continue;
            }
            for link in &t.paths {
                for target in &t.content {
                    for cwd in self.cwds.clone() {
                        let at = paths::normalize(&cwd.join(link));
                        let dir = at
                            .parent()
                            .map(Path::to_path_buf)
                            .unwrap_or(PathBuf::from("/"));
                        let dest = paths::normalize(&dir.join(target));
                        let resolved = Resolved::Exact(dest.clone());
                        if paths::check(&self.policy.paths, &resolved, true, self.ctx).is_err() {
                            self.reason(
                                ReasonCode::SymlinkOutside,
                                Verdict::Deny,
                                None,
                                format!(
                                    "the patch makes `{link}` a symlink to `{target}` (`{}`), \
                                     outside the paths that may be written: every later read \
                                     or write through it would leave them",
                                    dest.display()
                                ),
                                span,
                            );
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::touched;

    #[test]
    fn a_git_patch_names_its_files_and_symlinks() {
        let p = "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1111111\n\
                 --- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/root/.ssh\n\\ No newline at end of file\n\
                 diff --git a/src/x.rs b/src/x.rs\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let t = touched(p, 1);
        assert_eq!(t.len(), 2);
        assert!(t[0].symlink);
        assert!(t[0].paths.iter().all(|p| p == "link"));
        assert_eq!(t[0].content, ["/root/.ssh"]);
        assert!(!t[1].symlink);
        assert!(t[1].paths.iter().all(|p| p == "src/x.rs"));
    }

    #[test]
    fn quoted_names_are_decoded_as_git_does() {
        let p = "diff --git \"a/\\056cargo/config.toml\" \"b/\\056cargo/config.toml\"\n\
                 --- \"a/\\056cargo/config.toml\"\n+++ \"b/\\056cargo/config.toml\"\n@@ -0,0 +1 @@\n+x\n";
        let t = touched(p, 1);
        assert!(
            t[0].paths.contains(&".cargo/config.toml".to_string()),
            "{:?}",
            t[0].paths
        );
        assert_eq!(
            super::unquote("\"a\\tb\\\"c\\\\d\\303\\251\""),
            "a\tb\"c\\dé"
        );
        assert_eq!(super::unquote("plain"), "plain");
    }

    #[test]
    fn a_plain_unified_diff_names_its_files() {
        let p = "--- a/.cargo/config.toml\n+++ b/.cargo/config.toml\n@@ -1 +1 @@\n-a\n+b\n";
        let t = touched(p, 1);
        assert_eq!(t.len(), 1);
        assert!(
            t[0].paths.iter().all(|p| p == ".cargo/config.toml"),
            "{:?}",
            t[0].paths
        );
    }
}
