//! What the oracle knows of particular programs: where their options go (the operands that
//! make a run do its work on the fixtures), and the helpers and caches they use by design.

use super::Scratch;

/// Where the options go: `program PRE... OPTION [VALUE] POST...`, and the file on stdin.
/// `None`: not known (the oracle then probes for operands that run cleanly).
pub(super) fn template(program: &str) -> Option<(Vec<&'static str>, Vec<&'static str>)> {
    let (pre, post): (&[&str], &[&str]) = match program {
        "ls" | "cat" | "wc" | "head" | "tail" | "sort" | "uniq" | "tac" | "nl" | "od"
        | "hexdump" | "xxd" | "file" | "stat" | "du" | "realpath" | "sha256sum" | "md5sum" => {
            (&[], &["a.txt"])
        }
        "strings" | "base64" => (&[], &["a.txt"]),
        "cmp" => (&[], &["a.txt", "b.txt"]),
        "unzip" => (&["-l"], &["a.zip"]),
        "tar" => (&["-t", "-f", "a.tar"], &[]),
        "dd" => (&[], &["if=a.txt", "of=/dev/null"]),
        "shred" | "truncate" => (&[], &["rm1.txt"]),
        "cut" => (&[], &["-f1", "a.txt"]),
        "grep" | "rg" => (&[], &["alpha", "a.txt"]),
        "find" => (&["."], &[]),
        "tr" => (&[], &["a", "b"]),
        "diff" => (&[], &["a.txt", "b.txt"]),
        "basename" | "dirname" => (&[], &["sub/c.txt"]),
        "date" | "pwd" => (&[], &[]),
        "sleep" => (&[], &["0"]),
        "which" => (&[], &["ls"]),
        "tee" => (&[], &["out.txt"]),
        "mkdir" => (&[], &["newdir"]),
        "touch" => (&[], &["new.txt"]),
        "cp" => (&[], &["a.txt", "copy.txt"]),
        "mv" => (&[], &["mv1.txt", "mv2.txt"]),
        "rm" => (&[], &["rm1.txt"]),
        "rmdir" => (&[], &["emptydir"]),
        "chmod" => (&[], &["644", "a.txt"]),
        "sed" => (&[], &["p", "a.txt"]),
        "awk" => (&[], &["{print}", "a.txt"]),
        "jq" => (&[], &[".", "data.json"]),
        _ => return None,
    };
    Some((pre.to_vec(), post.to_vec()))
}

/// Subcommands: `(program, subcommand)` → the words after the option.
pub(super) fn sub_template(program: &str, sub: &str) -> Option<Vec<&'static str>> {
    let post: &[&str] = match (program, sub) {
        ("git", "add" | "restore" | "blame" | "checkout") => &["a.txt"],
        ("git", "commit") => &["-m", "x", "--allow-empty"],
        ("git", "grep") => &["alpha"],
        ("git", "describe") => &["--always"],
        ("git", "cat-file") => &["-p", "HEAD"],
        ("git", "merge" | "cherry-pick" | "shortlog") => &["HEAD"],
        ("git", "apply") => &["fix.patch"],
        ("git", "switch") => &["main"],
        ("git", "stash") => &["list"],
        ("git", "tag") => &["-l"],
        ("git", "fetch" | "pull" | "push") => &["origin", "main"],
        ("git", "rev-parse") => &["HEAD"],
        ("git", "clean") => &["-n"],
        ("git", "init") => &["newrepo"],
        ("git", "config") => &["user.name"],
        ("git", "symbolic-ref") => &["HEAD"],
        ("git", "rm") => &["--cached", "--dry-run", "a.txt"],
        ("git", "mv") => &["--dry-run", "a.txt", "a2.txt"],
        ("git", _) => &[],
        ("cargo", "add") => &["serde"],
        ("cargo", _) => &[],
        ("npm", _) => &[],
        ("openssl", "x509") => &["-noout", "-in", "cert.pem"],
        ("openssl", "version") => &[],
        _ => return None,
    };
    Some(post.to_vec())
}

/// The operand lists tried, in order, for a program the oracle has no template for: the
/// first one the policy allows and the program runs with (exit 0) is used.
pub(super) const PROBES: &[&[&str]] = &[
    &["a.txt"],
    &["a.txt", "b.txt"],
    &[],
    &["alpha", "a.txt"],
    &["."],
];

/// Programs besides the one run that a program may execute (its documented helpers).
pub(super) fn helper_allowed(program: &str, exe: &str, s: &Scratch) -> bool {
    let base = exe.rsplit('/').next().unwrap_or(exe);
    if base == program {
        return true;
    }
    match program {
        // git runs its own commands, some through sh (local transports).
        "git" => base.starts_with("git") || base == "sh" || exe.starts_with("/usr/lib/git-core/"),
        "which" => base == "sh" || base == "dash",
        // cargo runs the toolchain, the linker, and what it built (the project's own code).
        "cargo" => {
            exe.starts_with(&format!("{}/", s.ws.display()))
                || exe.contains("/.cargo/")
                || exe.contains("/.rustup/")
                || exe.contains("/target/")
                || matches!(
                    base,
                    "rustc" | "rustdoc" | "rustfmt" | "clippy-driver" | "cc" | "ld" | "collect2"
                )
                || base.starts_with("x86_64-linux-gnu-")
                || exe.starts_with("/usr/lib/gcc")
                || exe.starts_with("/usr/libexec/gcc")
        }
        // npm runs node, and the workspace's own scripts through sh.
        "npm" => matches!(base, "node" | "sh" | "true"),
        // tar filters archives through the compressors it names itself (-z, -j, -J, -a, ...).
        "tar" => matches!(
            base,
            "gzip" | "bzip2" | "xz" | "lzip" | "lzma" | "lzop" | "zstd" | "compress" | "gunzip"
        ),
        _ => false,
    }
}

/// A write inside the workspace that a program makes by design even where the policy cannot
/// write: `file -p` (`--preserve-date`) puts back the access time its own read changed.
pub(super) fn restore_allowed(program: &str, call: &str) -> bool {
    program == "file" && call == "utimensat"
}

/// Paths outside the workspace a program may write by design (its caches).
pub(super) fn write_allowed(program: &str, path: &str, s: &Scratch) -> bool {
    match program {
        // The toolchain's caches, and the C compiler's temporary files when it links.
        "cargo" => {
            path.contains("/.cargo/") || path.contains("/.rustup/") || path.starts_with("/tmp/cc")
        }
        "npm" => path.starts_with(&s.home.join(".npm").display().to_string()),
        _ => false,
    }
}
