//! A git repository's configuration, read as git reads it, for the keys that make git run a
//! program (or obey another place): the list is git-config(1) of git 2.47, each entry tested
//! with real git where a test can trigger it (`tests/git_repository.rs`).
//!
//! Only what the check needs is modelled: sections, subsections, keys, values with quotes,
//! escapes and continuation lines, comments, and `include.path` / `includeIf.*.path`
//! (every included file is read, whatever its condition: a condition that does not hold
//! today may hold after a `git switch`). A file this reader cannot read is a finding too.

use std::path::{Path, PathBuf};

/// How deep `include.path` may nest (git's own limit is 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// One key whose value makes git run a program, with the file it is set in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProgramKey {
    /// The key as git names it: `section.subsection.name` (section and name lower-cased).
    pub key: String,
    /// The file that sets it.
    pub file: PathBuf,
    /// Its value (empty for a bare key).
    pub value: String,
}

/// What may follow a key for it to run a program.
#[derive(Clone, Copy)]
enum When {
    /// Any value.
    Always,
    /// A value that is not a boolean (`core.fsmonitor = true` is git's own daemon;
    /// `pager.log = false` turns the pager off).
    NotBool,
    /// A value starting with `!` (a shell command: `alias.x = !sh`, `submodule.x.update`).
    Bang,
    /// A value starting with `ext::` (the `ext` transport runs its URL as a command).
    Ext,
    /// `protocol.allow` / `protocol.ext.allow` other than `never`/`user` default semantics:
    /// `always` lets `ext::` URLs run.
    AllowAlways,
}

/// `(section, subsection?, name, when)`: `Some("*")` is any subsection, `None` none. From
/// git-config(1) (git 2.47.3): every variable whose description says it runs, invokes or
/// evaluates a command or program, names a helper, or moves where git works.
const PROGRAM_KEYS: &[(&str, Option<&str>, &str, When)] = &[
    ("core", None, "fsmonitor", When::NotBool),
    ("core", None, "sshcommand", When::Always),
    ("core", None, "pager", When::Always),
    ("core", None, "editor", When::Always),
    ("core", None, "askpass", When::Always),
    ("core", None, "gitproxy", When::Always),
    ("core", None, "hookspath", When::Always),
    ("core", None, "alternaterefscommand", When::Always),
    ("core", None, "worktree", When::Always),
    ("sequence", None, "editor", When::Always),
    ("diff", None, "external", When::Always),
    ("diff", Some("*"), "command", When::Always),
    ("diff", Some("*"), "textconv", When::Always),
    ("difftool", Some("*"), "cmd", When::Always),
    ("difftool", Some("*"), "path", When::Always),
    ("mergetool", Some("*"), "cmd", When::Always),
    ("mergetool", Some("*"), "path", When::Always),
    ("merge", Some("*"), "driver", When::Always),
    ("filter", Some("*"), "clean", When::Always),
    ("filter", Some("*"), "smudge", When::Always),
    ("filter", Some("*"), "process", When::Always),
    ("alias", None, "*", When::Bang),
    ("alias", Some("*"), "command", When::Bang),
    ("credential", None, "helper", When::Always),
    ("credential", Some("*"), "helper", When::Always),
    ("gpg", None, "program", When::Always),
    ("gpg", Some("*"), "program", When::Always),
    ("gpg", Some("ssh"), "defaultkeycommand", When::Always),
    ("uploadpack", None, "packobjectshook", When::Always),
    ("protocol", None, "allow", When::AllowAlways),
    ("protocol", Some("ext"), "allow", When::AllowAlways),
    ("pager", None, "*", When::NotBool),
    ("interactive", None, "difffilter", When::Always),
    ("web", None, "browser", When::Always),
    ("browser", Some("*"), "cmd", When::Always),
    ("browser", Some("*"), "path", When::Always),
    ("man", None, "viewer", When::Always),
    ("man", Some("*"), "cmd", When::Always),
    ("man", Some("*"), "path", When::Always),
    ("instaweb", None, "browser", When::Always),
    ("guitool", Some("*"), "cmd", When::Always),
    ("sendemail", None, "smtpserver", When::Always),
    ("sendemail", None, "sendmailcmd", When::Always),
    ("sendemail", None, "tocmd", When::Always),
    ("sendemail", None, "cccmd", When::Always),
    ("sendemail", None, "headercmd", When::Always),
    ("sendemail", Some("*"), "smtpserver", When::Always),
    ("sendemail", Some("*"), "sendmailcmd", When::Always),
    ("sendemail", Some("*"), "tocmd", When::Always),
    ("sendemail", Some("*"), "cccmd", When::Always),
    ("sendemail", Some("*"), "headercmd", When::Always),
    ("imap", None, "tunnel", When::Always),
    ("remote", Some("*"), "uploadpack", When::Always),
    ("remote", Some("*"), "receivepack", When::Always),
    ("remote", Some("*"), "vcs", When::Always),
    ("remote", Some("*"), "url", When::Ext),
    ("remote", Some("*"), "pushurl", When::Ext),
    ("submodule", Some("*"), "update", When::Bang),
    ("receive", None, "procreceiverefs", When::Always),
];

/// The keys of git-config(1) this check refuses, as `section.<sub>.name` text (for the
/// README and for a test that keeps the two in step).
#[cfg(test)]
pub(crate) fn program_key_names() -> Vec<String> {
    PROGRAM_KEYS
        .iter()
        .map(|(s, sub, n, _)| match sub {
            None => format!("{s}.{n}"),
            Some("*") => format!("{s}.<name>.{n}"),
            Some(x) => format!("{s}.{x}.{n}"),
        })
        .collect()
}

fn is_bool(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

fn runs_program(section: &str, sub: Option<&str>, name: &str, value: Option<&str>) -> bool {
    let value_text = value.unwrap_or("");
    // `url.<base>.insteadOf`: a URL rewritten to `ext::...` runs a command.
    if section == "url"
        && matches!(name, "insteadof" | "pushinsteadof")
        && sub.is_some_and(|s| s.starts_with("ext::"))
    {
        return true;
    }
    PROGRAM_KEYS.iter().any(|(s, ksub, n, when)| {
        *s == section
            && match (ksub, sub) {
                (None, None) => true,
                (Some("*"), Some(_)) => true,
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => false,
            }
            && (*n == "*" || *n == name)
            && match when {
                When::Always => true,
                // A key with no `=` is boolean true.
                When::NotBool => value.is_some() && !is_bool(value_text),
                When::Bang => value_text.trim_start().starts_with('!'),
                When::Ext => value_text.trim_start().starts_with("ext::"),
                When::AllowAlways => value_text.trim().eq_ignore_ascii_case("always"),
            }
    })
}

/// Why a config file could not be read as git reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    pub file: PathBuf,
    pub why: String,
}

/// The program-running keys set in `file` and every file it includes (`home` for `~/`).
/// A missing `file` sets nothing (git ignores a missing include too).
pub(crate) fn scan(file: &Path, home: &Path) -> Result<Vec<ProgramKey>, Unreadable> {
    let mut found = Vec::new();
    scan_into(file, home, 0, &mut found)?;
    Ok(found)
}

fn scan_into(
    file: &Path,
    home: &Path,
    depth: usize,
    found: &mut Vec<ProgramKey>,
) -> Result<(), Unreadable> {
    let unreadable = |why: String| Unreadable {
        file: file.to_path_buf(),
        why,
    };
    if depth > MAX_INCLUDE_DEPTH {
        return Err(unreadable("includes nest too deep".into()));
    }
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let text = String::from_utf8_lossy(&bytes);
    let entries = parse(&text).map_err(unreadable)?;
    for (section, sub, name, value) in entries {
        if runs_program(&section, sub.as_deref(), &name, value.as_deref()) {
            let key = match &sub {
                Some(s) => format!("{section}.{s}.{name}"),
                None => format!("{section}.{name}"),
            };
            found.push(ProgramKey {
                key,
                file: file.to_path_buf(),
                value: value.clone().unwrap_or_default(),
            });
        }
        let include = (section == "include" && sub.is_none()
            || section == "includeif" && sub.is_some())
            && name == "path";
        if let (true, Some(v)) = (include, value) {
            let target = if let Some(rest) = v.strip_prefix("~/") {
                home.join(rest)
            } else {
                let p = PathBuf::from(&v);
                if p.is_absolute() {
                    p
                } else {
                    file.parent().unwrap_or(Path::new("/")).join(p)
                }
            };
            scan_into(&target, home, depth + 1, found)?;
        }
    }
    Ok(())
}

type Entry = (String, Option<String>, String, Option<String>);

/// The `(section, subsection, name, value)` entries of a config file's text. Section and
/// name are lower-cased (git compares them so); the subsection keeps its case.
fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    let mut chars = text.chars().peekable();
    let mut line_no = 1;
    loop {
        // Skip blank space and comments between entries.
        while let Some(&c) = chars.peek() {
            if c == '\n' {
                line_no += 1;
                chars.next();
            } else if c.is_whitespace() {
                chars.next();
            } else if c == '#' || c == ';' {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line_no += 1;
                        break;
                    }
                }
            } else {
                break;
            }
        }
        let Some(&c) = chars.peek() else { break };
        if c == '[' {
            chars.next();
            let mut head = String::new();
            let mut sub: Option<String> = None;
            loop {
                match chars.next() {
                    None | Some('\n') => {
                        return Err(format!("line {line_no}: unterminated section header"))
                    }
                    Some(']') => break,
                    Some('"') if sub.is_none() => {
                        let mut s = String::new();
                        loop {
                            match chars.next() {
                                None | Some('\n') => {
                                    return Err(format!("line {line_no}: unterminated subsection"))
                                }
                                Some('\\') => match chars.next() {
                                    Some(e) if e != '\n' => s.push(e),
                                    _ => return Err(format!("line {line_no}: bad escape")),
                                },
                                Some('"') => break,
                                Some(o) => s.push(o),
                            }
                        }
                        sub = Some(s);
                    }
                    Some(o) if sub.is_some() && !o.is_whitespace() => {
                        return Err(format!("line {line_no}: text after a subsection"))
                    }
                    Some(o) => head.push(o),
                }
            }
            let head = head.trim().to_string();
            let (name, sub) = match sub {
                Some(s) => (head, Some(s)),
                // The old `[section.subsection]` form.
                None => match head.split_once('.') {
                    Some((a, b)) => (a.to_string(), Some(b.to_string())),
                    None => (head, None),
                },
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                return Err(format!("line {line_no}: bad section name `{name}`"));
            }
            section = Some((name.to_ascii_lowercase(), sub));
            continue;
        }
        // A key: name, then optional `= value` to the end of the (continued) line.
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '-' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        if name.is_empty() {
            return Err(format!("line {line_no}: expected a key, found `{c}`"));
        }
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let value = match chars.peek() {
            Some('=') => {
                chars.next();
                Some(value(&mut chars, &mut line_no)?)
            }
            None | Some('\n') | Some('#') | Some(';') => None,
            Some(o) => {
                return Err(format!(
                    "line {line_no}: unexpected `{o}` after key `{name}`"
                ))
            }
        };
        let Some((sec, sub)) = &section else {
            return Err(format!("line {line_no}: key `{name}` outside any section"));
        };
        out.push((sec.clone(), sub.clone(), name.to_ascii_lowercase(), value));
    }
    Ok(out)
}

/// A value after `=`, up to the end of its line (continuations joined, quotes and escapes
/// removed, comments dropped, surrounding blanks trimmed).
fn value(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line_no: &mut usize,
) -> Result<String, String> {
    let mut v = String::new();
    let mut quoted = false;
    let mut trailing = 0; // unquoted blanks at the end, trimmed
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                if quoted {
                    return Err(format!("line {line_no}: unterminated quote"));
                }
                break;
            }
            '#' | ';' if !quoted => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        *line_no += 1;
                        break;
                    }
                }
                v.truncate(v.len() - trailing);
                return Ok(v.trim_start().to_string());
            }
            '"' => {
                chars.next();
                quoted = !quoted;
                trailing = 0;
            }
            '\\' => {
                chars.next();
                match chars.next() {
                    Some('\n') => *line_no += 1,
                    Some('n') => v.push('\n'),
                    Some('t') => v.push('\t'),
                    Some('b') => {
                        v.pop();
                    }
                    Some(e @ ('"' | '\\')) => v.push(e),
                    _ => return Err(format!("line {line_no}: bad escape in a value")),
                }
                trailing = 0;
            }
            c => {
                chars.next();
                if !quoted && (c == ' ' || c == '\t') {
                    trailing += c.len_utf8();
                } else {
                    trailing = 0;
                }
                v.push(c);
            }
        }
    }
    v.truncate(v.len() - trailing);
    Ok(v.trim_start().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        parse(text)
            .unwrap()
            .into_iter()
            .filter(|(s, sub, n, v)| runs_program(s, sub.as_deref(), n, v.as_deref()))
            .map(|(s, sub, n, _)| format!("{s}.{}{n}", sub.map(|x| x + ".").unwrap_or_default()))
            .collect()
    }

    #[test]
    fn program_keys_are_found_in_every_spelling() {
        let text = "[core]\n\tFSMonitor = \"touch /tmp/m\" ; c\n\tpager\n[diff \"x\"]\n\ttextconv = cat\n\
                    [alias]\n\tst = !sh -c id\n\tlg = log --oneline\n[pager]\n\tlog = false\n\tdiff = less\n\
                    [filter.lfs]\n\tclean = git-lfs clean\n[remote \"o\"]\n\turl = ext::sh -c id\n\
                    [url \"ext::sh -c id #\"]\n\tinsteadOf = https://x/\n[protocol \"ext\"]\n\tallow = always\n\
                    [core]\n\tfsmonitor = true\n\teditor = vi \\\n  -n\n";
        assert_eq!(
            keys(text),
            [
                "core.fsmonitor",
                "core.pager", // no value: git reads it as true, or refuses it
                "diff.x.textconv",
                "alias.st",
                "pager.diff",
                "filter.lfs.clean",
                "remote.o.url",
                "url.ext::sh -c id #.insteadof",
                "protocol.ext.allow",
                "core.editor",
            ]
        );
    }

    /// The README lists every key this check refuses.
    #[test]
    fn readme_lists_every_program_key() {
        let readme = include_str!("../../README.md").to_ascii_lowercase();
        for k in program_key_names() {
            let k = k.to_ascii_lowercase();
            assert!(
                readme.contains(&format!("`{k}`")),
                "README does not list `{k}`"
            );
        }
    }

    #[test]
    fn harmless_config_has_no_program_keys() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    [remote \"origin\"]\n\turl = https://github.com/x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                    [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(keys(text).is_empty());
    }

    #[test]
    fn malformed_config_is_an_error() {
        for bad in [
            "[core\n",
            "x = 1\n",
            "[core]\n\tpager = \"less\n",
            "[a \"b\" c]\n",
            "[core]\n\t=x\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
