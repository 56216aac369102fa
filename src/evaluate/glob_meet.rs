//! Whether a path bash's glob can match may also be matched by a policy path pattern: the
//! written glob `src/*.pyc` meets `{workspace}/**/.git` nowhere (bash's `*` never matches a
//! name with a leading dot), and `*/*` meets `{workspace}/**/objects` (`x/objects`). Used to
//! judge a written or read glob against `[paths]` deny and protected patterns by the
//! patterns themselves, not by whether the glob lies anywhere below a pattern's anchor.
//!
//! The answer is conservative: `false` only when no name can match both, proven from the
//! literal text at the start and end of the two component patterns, their lengths and
//! bash's dot rule; anything it cannot read (`\`, `{..}`, extglob) may meet anything.
//! bash's glob is read with the reference session's pinned defaults (globstar off: `**` is
//! `*`; dotglob off: a leading `.` must be written); a policy pattern with globset's
//! (`**` any number of directories, a trailing `/**` at least one).

use std::path::{Component, Path};

use globset::GlobBuilder;

/// One component of either side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    /// A literal name.
    Lit(String),
    /// A bash glob component (a leading dot must be explicit).
    Bash(String),
    /// A globset component (`*` also matches a leading dot).
    Glob(String),
    /// globset's `**`: any number of components (at least one at the end).
    AnyDirs,
}

const META: &[char] = &['*', '?', '['];

/// The components of an absolute path, as literals.
pub(super) fn literal(path: &Path) -> Vec<Tok> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Tok::Lit(n.to_string_lossy().into_owned())),
            _ => None,
        })
        .collect()
}

/// A written glob: the directory before its first glob component, then its components.
pub(super) fn bash_glob(base: &Path, components: &[String]) -> Vec<Tok> {
    let mut out = literal(base);
    // `x/./y` is `x/y` (the resolver refuses a `..` after a glob).
    out.extend(
        components
            .iter()
            .filter(|c| !c.is_empty() && *c != ".")
            .map(|c| {
                if c.contains(META) || c.contains(['\\', '(', '{']) {
                    Tok::Bash(c.clone())
                } else {
                    Tok::Lit(c.clone())
                }
            }),
    );
    out
}

/// A policy pattern: its anchor, then the components of its rest (`None`: the anchor only).
pub(super) fn policy_pattern(anchor: &Path, rest: Option<&str>) -> Vec<Tok> {
    let mut out = literal(anchor);
    for c in rest.unwrap_or("").split('/').filter(|c| !c.is_empty()) {
        out.push(if c == "**" {
            Tok::AnyDirs
        } else if c.contains(META) || c.contains(['\\', '{', '}', ']']) {
            Tok::Glob(c.to_string())
        } else {
            Tok::Lit(c.to_string())
        });
    }
    out
}

/// Whether some path matches both `a` (a written glob: no `AnyDirs`) and `b` (a policy
/// pattern).
pub(super) fn meet(a: &[Tok], b: &[Tok]) -> bool {
    let mut memo = vec![None; (a.len() + 1) * (b.len() + 1)];
    reach(a, b, 0, 0, &mut memo)
}

fn reach(a: &[Tok], b: &[Tok], i: usize, j: usize, memo: &mut [Option<bool>]) -> bool {
    let at = i * (b.len() + 1) + j;
    if let Some(v) = memo[at] {
        return v;
    }
    let v = if i == a.len() {
        // What is left of the pattern must match nothing: only inner `**`s can.
        b[j..].iter().all(|t| *t == Tok::AnyDirs) && b.last() != Some(&Tok::AnyDirs) || j == b.len()
    } else if j == b.len() {
        false
    } else if b[j] == Tok::AnyDirs {
        // `**` matches no component (not at the end), or this one and maybe more.
        (j + 1 < b.len() && reach(a, b, i, j + 1, memo))
            || (component_meets(&a[i], &b[j])
                && (reach(a, b, i + 1, j, memo) || reach(a, b, i + 1, j + 1, memo)))
    } else {
        component_meets(&a[i], &b[j]) && reach(a, b, i + 1, j + 1, memo)
    };
    memo[at] = Some(v);
    v
}

/// Whether one name can match both components.
fn component_meets(a: &Tok, b: &Tok) -> bool {
    match (a, b) {
        (Tok::Lit(x), Tok::Lit(y)) => x == y,
        (Tok::Lit(x), Tok::Glob(g)) => globset_matches(g, x),
        (Tok::Bash(p), Tok::Lit(y)) => bash_matches(p, y),
        (Tok::Bash(p), Tok::Glob(g)) => shapes_meet(p, g),
        (Tok::Lit(x), Tok::AnyDirs) => !x.is_empty(),
        (Tok::Bash(_), Tok::AnyDirs) => true,
        // The written side has no `**` of globset's kind, and a policy pattern is never on
        // the written side; answer conservatively anyway.
        _ => true,
    }
}

fn globset_matches(pattern: &str, name: &str) -> bool {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(true)
}

/// bash's match of one component, with its dot rule (and `.`/`..` never matched:
/// globskipdots).
fn bash_matches(pattern: &str, name: &str) -> bool {
    if name == "." || name == ".." {
        return false;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    if pattern.contains(['(', '{']) {
        return true;
    }
    globset_matches(pattern, name)
}

/// Whether a bash pattern and a globset pattern (one component each) can match one name.
fn shapes_meet(bash: &str, glob: &str) -> bool {
    let (bp, bs, blen) = shape(bash);
    let (gp, gs, glen) = shape(glob);
    // bash never matches a leading dot it was not given.
    if !bash.starts_with('.') && gp.as_deref().is_some_and(|p| p.starts_with('.')) {
        return false;
    }
    let (Some(bp), Some(gp), Some(bs), Some(gs)) = (bp, gp, bs, gs) else {
        return true;
    };
    let prefixes = bp.starts_with(&gp) || gp.starts_with(&bp);
    let suffixes = bs.ends_with(&gs) || gs.ends_with(&bs);
    let ((lo1, hi1), (lo2, hi2)) = (blen, glen);
    let lengths = lo1 <= hi2.unwrap_or(usize::MAX) && lo2 <= hi1.unwrap_or(usize::MAX);
    prefixes && suffixes && lengths
}

/// The literal text before the first and after the last metacharacter (`None`: the pattern
/// has syntax this reading does not follow), and the fewest and most characters it matches.
fn shape(p: &str) -> (Option<String>, Option<String>, (usize, Option<usize>)) {
    if p.contains(['\\', '(', ')', '{', '}', '|']) {
        return (None, None, (0, None));
    }
    let chars: Vec<char> = p.chars().collect();
    let mut lo = 0;
    let mut hi = Some(0usize);
    let mut first_meta = None;
    let mut last_meta_end = 0;
    let mut k = 0;
    while k < chars.len() {
        match chars[k] {
            '*' => {
                hi = None;
                first_meta.get_or_insert(k);
                last_meta_end = k + 1;
            }
            '?' => {
                lo += 1;
                hi = hi.map(|h| h + 1);
                first_meta.get_or_insert(k);
                last_meta_end = k + 1;
            }
            '[' => {
                // A class: up to its `]` (a `]` right after `[` or `[!` is a member).
                let mut e = k + 1;
                if matches!(chars.get(e), Some('!' | '^')) {
                    e += 1;
                }
                if chars.get(e) == Some(&']') {
                    e += 1;
                }
                while e < chars.len() && chars[e] != ']' {
                    e += 1;
                }
                if e >= chars.len() {
                    // An unclosed `[` is a literal in bash, an error in globset: unknown.
                    return (None, None, (0, None));
                }
                lo += 1;
                hi = hi.map(|h| h + 1);
                first_meta.get_or_insert(k);
                last_meta_end = e + 1;
                k = e;
            }
            _ => {
                lo += 1;
                hi = hi.map(|h| h + 1);
            }
        }
        k += 1;
    }
    let prefix: String = chars[..first_meta.unwrap_or(chars.len())].iter().collect();
    let suffix: String = if first_meta.is_some() {
        chars[last_meta_end..].iter().collect()
    } else {
        prefix.clone()
    };
    (Some(prefix), Some(suffix), (lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn written(base: &str, comps: &[&str]) -> Vec<Tok> {
        bash_glob(
            &PathBuf::from(base),
            &comps.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        )
    }

    fn pat(rest: &str) -> Vec<Tok> {
        policy_pattern(Path::new("/w"), Some(rest))
    }

    #[test]
    fn globset_reads_a_trailing_double_star_as_one_component_or_more() {
        // The premise of `reach` for a trailing `**` (and of an inner one matching none).
        let g = |p: &str| {
            GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .unwrap()
                .compile_matcher()
        };
        assert!(!g("**/objects/**").is_match("objects"));
        assert!(g("**/objects/**").is_match("objects/x"));
        assert!(g("**/objects/**").is_match("a/objects/x/y"));
        assert!(g("**/.git").is_match(".git"));
        assert!(g("a/**/b").is_match("a/b"));
    }

    #[test]
    fn dot_names_literal_ends_and_lengths_keep_globs_apart() {
        let cases: &[(&str, &[&str], &str, bool)] = &[
            ("/w/src", &["*.pyc"], "**/.git", false),
            ("/w/src", &["*.pyc"], ".git/**", false),
            ("/w", &["*", "*.pyc"], "**/.vscode/tasks.json", false),
            ("/w", &["*", "*.pyc"], "**/objects", false),
            ("/w", &["*", "*.pyc"], "**/shellgate*.toml", false),
            (
                "/w",
                &["*", "*.pyc"],
                "**/objects/[0-9a-f][0-9a-f]/**",
                false,
            ),
            ("/w", &["*", "*.pyc"], "**/objects/info/**", false),
            ("/w", &["*", "*"], "**/objects", true),
            ("/w", &["*", "objects"], "**/objects", true),
            ("/w", &["*", "*"], "**/objects/[0-9a-f][0-9a-f]/**", false),
            (
                "/w",
                &["*", "*", "*"],
                "**/objects/[0-9a-f][0-9a-f]/**",
                true,
            ),
            ("/w", &["*"], "**/HEAD", true),
            ("/w", &["H*"], "**/HEAD", true),
            ("/w", &["*.txt"], "**/HEAD", false),
            ("/w", &[".*"], "**/.claude", true),
            ("/w", &[".c*"], "**/.claude/**", false),
            ("/w/.claude", &["*"], "**/.claude/**", true),
            ("/w", &["*.toml"], "**/shellgate*.toml", true),
            ("/w", &["*.tom"], "**/shellgate*.toml", false),
            ("/w", &["?"], "**/HEAD", false),
            ("/w", &["????"], "**/HEAD", true),
            ("/w", &["a\\*"], "**/HEAD", false),
            ("/w", &["a\\*"], "**/a[*]", true),
            ("/other", &["*"], "**/HEAD", false),
            ("/w", &["*", ".", ".git"], "*/.git", true),
        ];
        for (base, comps, p, want) in cases {
            assert_eq!(
                meet(&written(base, comps), &pat(p)),
                *want,
                "{base}/{comps:?} vs {p}"
            );
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(
            shape("*.pyc"),
            (Some(String::new()), Some(".pyc".into()), (4, None))
        );
        assert_eq!(
            shape("[0-9a-f][0-9a-f]"),
            (Some(String::new()), Some(String::new()), (2, Some(2)))
        );
        assert_eq!(
            shape("HEAD"),
            (Some("HEAD".into()), Some("HEAD".into()), (4, Some(4)))
        );
        assert_eq!(shape("a{b,c}").0, None);
    }
}
