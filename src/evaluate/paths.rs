//! Path arguments: resolved lexically against the session's working directory and checked
//! against the policy's `[paths]` rules.
//!
//! Resolution is symlink-free and purely lexical (`..`, `.`, `//`, `~`, `$HOME`); a path that
//! cannot be resolved statically is never proven safe.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::{Context, Decision, Eval, Reason};
use crate::codes::ReasonCode;
use crate::policy::{PathAnchor, PathPattern, PathRules, Policy, Verdict};
use crate::shell::{is_plain, is_pwd, Known, Span, Word, WordPart};

/// A path argument after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// One absolute, normalised path.
    Exact(PathBuf),
    /// A glob: the absolute directory before the first glob component and the components
    /// from there on (each a pattern of one path component).
    Glob {
        /// The directory every match is below.
        base: PathBuf,
        /// The remaining components, each a one-component glob.
        components: Vec<String>,
    },
    /// A process substitution (`<(...)`, `>(...)`): a pipe such as `/dev/fd/63`, not a file.
    Pipe,
    /// Not resolvable statically, and why.
    Unknown(String),
}

/// Resolve `word` as a path relative to `cwd`.
pub fn resolve(word: &Word, ctx: &Context, cwd: &Path) -> Resolved {
    if let [WordPart::ProcessSubst { .. }] = word.parts.as_slice() {
        return Resolved::Pipe;
    }
    // Quotes only stop splitting and globbing (the caller has seen to those): inside them,
    // literal text is literal and expansions are what they are.
    let unquoted_known = match word.parts.first() {
        Some(WordPart::Param(p)) if is_plain(p, "HOME") => Some(ctx.home.as_path()),
        Some(WordPart::Param(p)) if is_plain(p, "PWD") => Some(cwd),
        Some(WordPart::Param(p)) if is_plain(p, "OUTPUT_DIR") => ctx.output_dir.as_deref(),
        Some(WordPart::CommandSubst(s)) if is_pwd(s) => Some(cwd),
        _ => None,
    };
    if unquoted_known.is_some_and(|v| Known::value_splits(&v.to_string_lossy())) {
        return Resolved::Unknown(
            "it is an unquoted expansion whose value bash splits into several words".into(),
        );
    }
    let flat: Cow<[WordPart]> = if word
        .parts
        .iter()
        .any(|p| matches!(p, WordPart::DoubleQuoted(_)))
    {
        Cow::Owned(flatten_quotes(&word.parts))
    } else {
        Cow::Borrowed(&word.parts)
    };
    // A leading `~`, `$HOME` / `${HOME}` is the context's home directory; a leading `$PWD`,
    // `${PWD}`, `$(pwd)` or `` `pwd` `` is the directory the command runs in.
    let (start, parts): (Option<PathBuf>, &[WordPart]) = match flat.first() {
        Some(WordPart::Tilde(user)) if user.is_empty() => (Some(ctx.home.clone()), &flat[1..]),
        Some(WordPart::Tilde(user)) => {
            return Resolved::Unknown(format!("`~{user}` is another user's home directory"))
        }
        Some(WordPart::Param(p)) if is_plain(p, "HOME") => (Some(ctx.home.clone()), &flat[1..]),
        Some(WordPart::Param(p)) if is_plain(p, "PWD") => (Some(cwd.to_path_buf()), &flat[1..]),
        // A code execution call's `$OUTPUT_DIR`, set afresh before each call.
        Some(WordPart::Param(p)) if is_plain(p, "OUTPUT_DIR") && ctx.output_dir.is_some() => {
            (ctx.output_dir.clone(), &flat[1..])
        }
        Some(WordPart::CommandSubst(s)) if is_pwd(s) => (Some(cwd.to_path_buf()), &flat[1..]),
        _ => (None, &flat[..]),
    };
    let text = match static_of(parts) {
        Some(t) => t,
        None => {
            let rest = Word {
                span: word.span,
                parts: parts.to_vec(),
            };
            return resolve_dynamic(start, &rest, cwd);
        }
    };
    if text.is_empty() && start.is_none() {
        return Resolved::Unknown("it is empty".into());
    }
    let joined = match start {
        // `$PWD-n` is the directory's name with `-n` appended (a sibling), not an entry in it.
        Some(base) if !text.is_empty() && !text.starts_with('/') => {
            PathBuf::from(format!("{}{text}", base.display()))
        }
        Some(base) => base.join(text.trim_start_matches('/')),
        None => cwd.join(&*text),
    };
    Resolved::Exact(normalize(&joined))
}

/// The value of `parts` after quote removal, if they have one without any expansion (what
/// [`Word::static_value`] gives for a word of these parts): borrowed for one literal part.
fn static_of(parts: &[WordPart]) -> Option<Cow<'_, str>> {
    fn push(part: &WordPart, out: &mut String) -> bool {
        match part {
            WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
                out.push_str(s);
                true
            }
            WordPart::DoubleQuoted(parts) => parts.iter().all(|p| push(p, out)),
            _ => false,
        }
    }
    if let [WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s)] = parts {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::new();
    parts
        .iter()
        .all(|p| push(p, &mut out))
        .then_some(Cow::Owned(out))
}

/// [`resolve`] of the part of a word after its known start, when it has no static value.
fn resolve_dynamic(start: Option<PathBuf>, rest: &Word, cwd: &Path) -> Resolved {
    match rest.glob_pattern() {
        // `$PWD*` matches siblings of the directory, not its entries.
        Some(_) if start.is_some() && !rest.static_prefix().starts_with('/') => {
            Resolved::Unknown("an expansion glued to a glob".into())
        }
        Some(_) => resolve_glob(start, rest, cwd),
        None => {
            let why = rest
                .dynamic_reasons()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            Resolved::Unknown(format!("its value depends on {why}"))
        }
    }
}

/// The parts of a word with double quotes taken away (their contents kept in place).
fn flatten_quotes(parts: &[WordPart]) -> Vec<WordPart> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            WordPart::DoubleQuoted(inner) => out.extend(flatten_quotes(inner)),
            other => out.push(other.clone()),
        }
    }
    out
}

fn resolve_glob(start: Option<PathBuf>, rest: &Word, cwd: &Path) -> Resolved {
    // Split the word into path components, each either literal or a glob pattern.
    let mut comps: Vec<(String, bool)> = vec![(String::new(), false)];
    for part in &rest.parts {
        match part {
            WordPart::Glob(g) => {
                if g.contains('/') {
                    return Resolved::Unknown("a glob that spans directories".into());
                }
                if let Some(last) = comps.last_mut() {
                    last.0.push_str(g);
                    last.1 = true;
                }
            }
            other => {
                let mut s = String::new();
                let w = Word {
                    span: rest.span,
                    parts: vec![other.clone()],
                };
                if let Some(v) = w.static_value() {
                    s.push_str(&v);
                }
                for (i, piece) in s.split('/').enumerate() {
                    if i > 0 {
                        comps.push((String::new(), false));
                    }
                    if let Some(last) = comps.last_mut() {
                        for c in piece.chars() {
                            if matches!(c, '*' | '?' | '[' | ']' | '\\' | '{' | '}') {
                                last.0.push('\\');
                            }
                            last.0.push(c);
                        }
                    }
                }
            }
        }
    }
    let absolute =
        start.is_none() && comps.first().is_some_and(|c| c.0.is_empty()) && comps.len() > 1;
    let mut base = match start {
        Some(h) => h,
        None if absolute => PathBuf::from("/"),
        None => cwd.to_path_buf(),
    };
    let mut globbed = Vec::new();
    for (text, is_glob) in comps {
        if !globbed.is_empty() || is_glob {
            if text == ".." || text == "\\.\\." {
                return Resolved::Unknown("a glob followed by `..`".into());
            }
            // Older bash (and any with `globskipdots` off) lets `.?` or `.[.]` match `..`.
            if is_glob && component_matches(&text, component_glob(&text).as_ref(), "..") {
                return Resolved::Unknown("a glob that can match `..`".into());
            }
            if !text.is_empty() {
                globbed.push(text);
            }
            continue;
        }
        let unescaped = text.replace('\\', "");
        match unescaped.as_str() {
            "" | "." => {}
            ".." => {
                base.pop();
            }
            c => base.push(c),
        }
    }
    Resolved::Glob {
        base: normalize(&base),
        components: globbed,
    }
}

/// Lexically normalise an absolute path: drop `.`, resolve `..`, collapse `//`.
///
/// A relative path is read as if it began with `/`.
pub fn normalize(path: &Path) -> PathBuf {
    // The components of a Unix path are its `/`-separated names, without the empty ones and
    // `.` (what `Path::components` yields): worked on as bytes, in one buffer.
    let bytes = path.as_os_str().as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 1);
    out.push(b'/');
    for name in bytes.split(|&b| b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                let parent = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(parent.max(1));
            }
            name => {
                if out.len() > 1 {
                    out.push(b'/');
                }
                out.extend_from_slice(name);
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

fn anchors(anchor: PathAnchor, ctx: &Context) -> impl Iterator<Item = &Path> {
    let (many, one): (&[PathBuf], Option<&Path>) = match anchor {
        PathAnchor::Workspace => (&ctx.workspace, None),
        PathAnchor::Home => (&[], Some(ctx.home.as_path())),
        PathAnchor::Root => (&[], Some(Path::new("/"))),
        PathAnchor::OutputDir => (&[], ctx.output_dir.as_deref()),
    };
    many.iter().map(PathBuf::as_path).chain(one)
}

/// Whether `pattern` matches the absolute normalised `path`.
pub(super) fn matches(pattern: &PathPattern, path: &Path, ctx: &Context) -> bool {
    anchors(pattern.anchor, ctx).any(|anchor| {
        let Ok(rel) = path.strip_prefix(anchor) else {
            return false;
        };
        let rel = rel.to_string_lossy();
        match &pattern.rest {
            None => rel.is_empty(),
            Some(glob) => !rel.is_empty() && glob.is_match(rel.as_ref()),
        }
    })
}

/// The literal directories a pattern starts from (its anchors plus the literal components of
/// its rest before any glob metacharacter).
fn literal_prefixes(pattern: &PathPattern, ctx: &Context) -> Vec<PathBuf> {
    let rest = match pattern.anchor {
        PathAnchor::Root => pattern.text.trim_start_matches('/'),
        _ => pattern
            .text
            .trim_start_matches("{workspace}")
            .trim_start_matches("{output_dir}")
            .trim_start_matches("{home}")
            .trim_start_matches('~')
            .trim_start_matches('/'),
    };
    let literal: Vec<&str> = rest
        .split('/')
        .take_while(|c| !c.is_empty() && !c.contains(['*', '?', '[', '{', '\\']))
        .collect();
    anchors(pattern.anchor, ctx)
        .map(|a| {
            let mut p = a.to_path_buf();
            for c in &literal {
                p.push(c);
            }
            p
        })
        .collect()
}

/// Whether reading (`write == false`) or writing the resolved path is allowed. `Err` holds
/// the message and the rule responsible.
/// Whether `resolved` may be read (or written): `Ok` with the allowing pattern (none for a
/// pipe), or the refusal's message and the pattern that refuses, if one does.
pub(super) fn check<'p>(
    rules: &'p PathRules,
    resolved: &Resolved,
    write: bool,
    ctx: &Context,
) -> Result<Option<&'p PathPattern>, (String, Option<&'p PathPattern>)> {
    let (allow, deny) = if write {
        (&rules.write, &rules.deny_write)
    } else {
        (&rules.read, &rules.deny_read)
    };
    let what = if write { "writing" } else { "reading" };
    match resolved {
        Resolved::Unknown(why) => Err((format!("the path cannot be resolved: {why}"), None)),
        Resolved::Pipe => Ok(None),
        Resolved::Exact(path) => {
            if let Some(d) = deny.iter().find(|d| matches(d, path, ctx)) {
                return Err((
                    format!("{what} `{}` is denied by `{}`", path.display(), d.text),
                    Some(d),
                ));
            }
            let Some(allowing) = allow.iter().find(|a| matches(a, path, ctx)) else {
                return Err((
                    format!("{what} `{}` is outside the allowed paths", path.display()),
                    None,
                ));
            };
            if write {
                if let Some(p) = protected_hit(rules, path, ctx) {
                    return Err((
                        format!("{what} `{}` is protected by `{}`", path.display(), p.text),
                        Some(p),
                    ));
                }
                // Replacing or removing a directory that holds a protected path would bypass it.
                for d in deny {
                    if literal_prefixes(d, ctx)
                        .iter()
                        .any(|p| p.starts_with(path) && p != path)
                    {
                        return Err((
                            format!(
                                "{what} `{}` would replace what `{}` protects",
                                path.display(),
                                d.text
                            ),
                            Some(d),
                        ));
                    }
                }
            }
            Ok(Some(allowing))
        }
        Resolved::Glob { base, components } => {
            let Some(first) = components.first() else {
                return check(rules, &Resolved::Exact(base.clone()), write, ctx);
            };
            // Every path the glob can match is a descendant of `base`: prove a generic one.
            let probe = base.join("shellgate-glob-probe");
            let Some(allowing) = allow.iter().find(|a| matches(a, &probe, ctx)) else {
                return Err((
                    format!(
                        "{what} `{}/{}` may reach outside the allowed paths",
                        base.display(),
                        components.join("/")
                    ),
                    None,
                ));
            };
            let first_glob = component_glob(first);
            let written = super::glob_meet::bash_glob(base, components);
            if write {
                let hit = protected_hit(rules, &probe, ctx).or_else(|| {
                    rules
                        .protected
                        .iter()
                        .find(|p| pattern_meets(p, &written, ctx))
                });
                if let Some(p) = hit {
                    return Err((
                        format!(
                            "{what} `{}/{}` may touch a file `{}` protects",
                            base.display(),
                            components.join("/"),
                            p.text
                        ),
                        Some(p),
                    ));
                }
            }
            for d in deny {
                for p in literal_prefixes(d, ctx) {
                    // A protected path inside the glob's reach, or the glob inside protection.
                    // (Below it: whether some match is a path the pattern names, decided by
                    // both patterns, after the loop.)
                    let reach = match p.strip_prefix(base) {
                        Ok(rel) => rel.components().next().is_some_and(|c| {
                            let name = c.as_os_str().to_string_lossy();
                            component_matches(first, first_glob.as_ref(), &name)
                        }),
                        Err(_) => false,
                    };
                    if reach {
                        return Err((
                            format!(
                                "{what} `{}/{}` may touch what `{}` protects",
                                base.display(),
                                components.join("/"),
                                d.text
                            ),
                            Some(d),
                        ));
                    }
                }
                if pattern_meets(d, &written, ctx) {
                    return Err((
                        format!(
                            "{what} `{}/{}` may match a path `{}` names",
                            base.display(),
                            components.join("/"),
                            d.text
                        ),
                        Some(d),
                    ));
                }
            }
            Ok(Some(allowing))
        }
    }
}

/// The protected pattern a written path falls under, unless the policy opted it back in.
fn protected_hit<'p>(rules: &'p PathRules, path: &Path, ctx: &Context) -> Option<&'p PathPattern> {
    let p = rules.protected.iter().find(|p| matches(p, path, ctx))?;
    (!rules.unprotected.iter().any(|u| matches(u, path, ctx))).then_some(p)
}

/// Whether a path the written glob can match may be one `pattern` names.
fn pattern_meets(pattern: &PathPattern, written: &[super::glob_meet::Tok], ctx: &Context) -> bool {
    let rest = pattern.rest.as_ref().map(|_| pattern_rest(pattern));
    anchors(pattern.anchor, ctx)
        .any(|a| super::glob_meet::meet(written, &super::glob_meet::policy_pattern(a, rest)))
}

/// The part of a pattern's text after its anchor.
fn pattern_rest(pattern: &PathPattern) -> &str {
    match pattern.anchor {
        PathAnchor::Root => pattern.text.trim_start_matches('/'),
        _ => pattern
            .text
            .trim_start_matches("{workspace}")
            .trim_start_matches("{output_dir}")
            .trim_start_matches("{home}")
            .trim_start_matches('~')
            .trim_start_matches('/'),
    }
}

fn component_glob(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether one glob component can match `name` as bash would (a leading dot must be explicit).
fn component_matches(pattern: &str, glob: Option<&GlobMatcher>, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    // An unparsable pattern could match anything.
    glob.is_none_or(|g| g.is_match(name))
}

/// What a file tool does with a path: `view` reads; `create`, `str_replace` and `insert`
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAccess {
    /// Reading a file or listing a directory.
    Read,
    /// Creating or changing a file.
    Write,
}

/// Decide a file tool's access to `path` (relative paths are relative to `ctx.cwd`) with the
/// same `[paths]` rules, reason codes, rules and messages as a shell command reading or
/// writing that path (`path-read-outside`, `path-write-denied`, `path-write-protected`, ...).
///
/// The path is taken literally (no `~`, no variables) and normalised lexically, as the shell
/// checks do. A file tool then opens the file itself, so unlike a command's path the real
/// path is checked too: the longest existing prefix with its symlinks resolved, followed by
/// the rest. Both must be allowed; a symlink that leaves the allowed paths is refused with
/// the reason for its target. Never panics: a failure inside the check is a denial
/// (`internal-error`), as [`evaluate`](super::evaluate) makes it.
///
/// ```
/// use shellgate::evaluate::{check_file_access, FileAccess};
/// use shellgate::{Context, Policy};
///
/// let policy = Policy::from_toml("[paths]\nread = [\"{workspace}/**\"]\n", "p.toml")?;
/// let ctx = Context::new("/srv/project");
/// assert!(check_file_access(&policy, &ctx, "src/main.rs", FileAccess::Read).is_allowed());
/// let refused = check_file_access(&policy, &ctx, "/etc/passwd", FileAccess::Read);
/// assert_eq!(refused.reasons[0].code, "path-read-outside");
/// # Ok::<(), shellgate::PolicyError>(())
/// ```
pub fn check_file_access(
    policy: &Policy,
    ctx: &Context,
    path: &str,
    access: FileAccess,
) -> Decision {
    super::fail_closed(path.len(), || file_access(policy, ctx, path, access))
}

fn file_access(policy: &Policy, ctx: &Context, path: &str, access: FileAccess) -> Decision {
    let write = access == FileAccess::Write;
    let word = |text: &str| Word {
        span: Span::new(0, path.len()),
        parts: vec![WordPart::Literal(text.to_string())],
    };
    let mut ev = Eval::new(policy, ctx, path);
    let checked = ev.path(&word(path), write);
    if checked.is_some() && !path.is_empty() {
        let lexical = normalize(&ctx.cwd.join(path));
        let real = real_path(&lexical);
        if real != lexical {
            match real.to_str() {
                Some(text) => {
                    ev.path(&word(text), write);
                }
                None => ev.reason(
                    ReasonCode::PathUnresolved,
                    Verdict::Deny,
                    None,
                    format!(
                        "the path cannot be resolved: `{}` leads through a symlink to a name \
                         that is not UTF-8",
                        lexical.display()
                    ),
                    Span::new(0, path.len()),
                ),
            }
        }
    }
    ev.finish()
}

/// The refusal of a file tool's access that the caller could not read (a patch it cannot
/// parse, a glob that may climb anywhere): `path-unresolved`, deny, with `message`.
pub fn unresolved_access(message: String, span: Span) -> Reason {
    Reason {
        code: ReasonCode::PathUnresolved.as_str(),
        verdict: Verdict::Deny,
        rule: Some(super::trace::builtin_rule(ReasonCode::PathUnresolved)),
        message,
        span,
    }
}

/// The path a file tool opens for `path` (absolute, normalised): every symlink resolved, dangling ones included (a
/// write through a dangling symlink creates its target): existing components are followed
/// as the kernel would, the first missing one and those after it are kept as they are.
/// After 40 symlinks the rest is kept unresolved under `/proc/self/loop` (never allowed).
pub fn real_path(path: &Path) -> PathBuf {
    let mut todo: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut cur = PathBuf::from("/");
    let mut hops = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            cur.pop(); // `cur` holds no symlink: its parent is what `..` is
            continue;
        }
        let candidate = cur.join(&c);
        match std::fs::symlink_metadata(&candidate) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                let Some(target) = std::fs::read_link(&candidate).ok().filter(|_| hops <= 40)
                else {
                    return PathBuf::from("/proc/self/loop");
                };
                // The target's components come next, resolved from `cur` (or from `/`).
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                for t in target.components().rev() {
                    match t {
                        Component::Normal(n) => todo.push(n.to_os_string()),
                        Component::ParentDir => todo.push("..".into()),
                        _ => {}
                    }
                }
            }
            Ok(_) => cur = candidate,
            Err(_) => {
                cur.push(&c);
                while let Some(rest) = todo.pop() {
                    if rest == ".." {
                        cur.pop();
                    } else {
                        cur.push(rest);
                    }
                }
                return cur;
            }
        }
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_path_follows_relative_dangling_and_looping_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws/sub")).unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        };
        link("../../out", "ws/sub/up");
        link("../out/new", "ws/dangling");
        link("loop2", "ws/loop1");
        link("loop1", "ws/loop2");
        assert_eq!(real_path(&root.join("ws/sub/up/f")), root.join("out/f"));
        assert_eq!(real_path(&root.join("ws/dangling")), root.join("out/new"));
        assert_eq!(
            real_path(&root.join("ws/missing/../sub")),
            root.join("ws/sub")
        );
        assert_eq!(
            real_path(&root.join("ws/loop1")),
            PathBuf::from("/proc/self/loop")
        );
        let policy = Policy::from_toml(
            "[paths]\nread = [\"{workspace}/**\"]\nwrite = [\"{workspace}/**\"]\n",
            "p.toml",
        )
        .unwrap();
        let ctx = Context::new(root.join("ws"));
        for (path, access) in [
            ("sub/up/f", FileAccess::Read),
            ("dangling", FileAccess::Write),
            ("loop1", FileAccess::Read),
        ] {
            let d = check_file_access(&policy, &ctx, path, access);
            assert_eq!(d.verdict, Verdict::Deny, "{path}: {d:?}");
        }
        assert!(check_file_access(&policy, &ctx, "sub/new.txt", FileAccess::Write).is_allowed());
    }

    /// What `normalize` was: a fold over `Path::components`.
    fn normalize_by_components(path: &Path) -> PathBuf {
        let mut out = PathBuf::from("/");
        for c in path.components() {
            match c {
                Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
            }
        }
        out
    }

    #[test]
    fn normalize_is_the_fold_over_components() {
        let names = [
            "", ".", "..", "a", "bc", ".x", "..y", "...", "\\", " ", "\u{e9}",
        ];
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for p in &paths {
                for n in names {
                    next.push(format!("{p}/{n}"));
                    next.push(format!("{p}{n}"));
                }
            }
            next.sort();
            next.dedup();
            paths = next;
        }
        paths.push("/w/\u{0}/../x//".into());
        for p in &paths {
            let p = Path::new(p);
            assert_eq!(normalize(p), normalize_by_components(p), "{p:?}");
        }
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/w/\xff/./\xfe/../z"));
        assert_eq!(normalize(odd), normalize_by_components(odd));
    }

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(
            normalize(Path::new("/w/a/../../etc/./passwd")),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("/w//x/")), PathBuf::from("/w/x"));
    }
}
