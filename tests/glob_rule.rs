//! The glob rule (`src/evaluate/globs.rs`) against real bash and the real programs: for each
//! case, a scratch directory holds files named like options, bash runs the command there
//! with its default globbing options, and the test asserts what happened. Every refused
//! case does harm in real bash (so the refusal is needed); every allowed case, run among the
//! most hostile names for it, changes nothing and reads nothing outside.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use shellgate::{Context, Policy, Verdict};

fn policy(name: &str) -> &'static Policy {
    static R: OnceLock<Policy> = OnceLock::new();
    static D: OnceLock<Policy> = OnceLock::new();
    let cell = if name == "read-only" { &R } else { &D };
    cell.get_or_init(|| Policy::shipped(name).expect("valid shipped policy"))
}

/// What running the command in real bash must show.
#[derive(Debug)]
enum Effect {
    /// Nothing in the directory changed and the secret was not printed.
    Nothing,
    /// This file is gone.
    Deleted(&'static str),
    /// This file was created.
    Created(&'static str),
    /// This file's contents changed.
    Changed(&'static str),
    /// The secret file outside the directory was read (its text or its path printed).
    ReadOutside,
}

struct Case {
    /// Files to create (name, contents; a name ending in `/` is a directory); `{secret}` in a
    /// contents is the secret's path.
    files: &'static [(&'static str, &'static str)],
    /// The command; `{secret}` stands for `/etc/hostname` in the policy check and for a
    /// secret file outside the directory when bash runs it.
    cmd: &'static str,
    policies: &'static [&'static str],
    allowed: bool,
    effect: Effect,
}

const BOTH: &[&str] = &["read-only", "developer"];
const DEV: &[&str] = &["developer"];

fn cases() -> Vec<Case> {
    use Effect::*;
    vec![
        // Refused: each does harm.
        Case {
            files: &[("!a", "x"), ("-delete", "")],
            cmd: "find . -name *",
            policies: BOTH,
            allowed: false,
            effect: Deleted("!a"),
        },
        Case {
            files: &[("!a", "x"), ("-fprint", ""), ("out", "precious")],
            cmd: "find . -name *",
            policies: BOTH,
            allowed: false,
            effect: Changed("out"),
        },
        Case {
            files: &[("-ox.txt", ""), ("a.txt", "a")],
            cmd: "sort *.txt",
            policies: BOTH,
            allowed: false,
            effect: Created("x.txt"),
        },
        Case {
            files: &[("--", ""), ("a", "a")],
            cmd: "tail * -n {secret}",
            policies: BOTH,
            allowed: false,
            effect: ReadOutside,
        },
        Case {
            files: &[("--f=.rs", ""), (".rs", "{secret}\0")],
            cmd: "wc -l *.rs",
            policies: BOTH,
            allowed: false,
            effect: ReadOutside,
        },
        Case {
            files: &[("-e1e touch pwned;.txt", ""), ("a.txt", "a")],
            cmd: "sed -i s/a/b/ *.txt",
            policies: DEV,
            allowed: false,
            effect: Created("pwned"),
        },
        // Allowed: harmless among files named like every option that could matter.
        Case {
            files: &[
                ("-delete.jpg", ""),
                ("-fprint.jpg", ""),
                ("a.jpg", ""),
                ("b.jpg", ""),
                ("victim", "v"),
            ],
            cmd: "find . -name *.jpg",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[
                ("-delete.jpg", ""),
                ("-o.jpg", ""),
                ("a.jpg", ""),
                ("v", "v"),
            ],
            cmd: "find . -name *.jpg -print",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("--", ""), ("-e", ""), ("-f", ""), ("-r", ""), ("a", "x")],
            cmd: "grep -R x *",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("--", ""), ("-R", ""), ("-w", ""), ("a", "")],
            cmd: "ls -1tr *",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[
                ("-c.java", "{secret}"),
                ("--check.java", ""),
                ("a.java", ""),
            ],
            cmd: "md5sum *.java",
            policies: DEV,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("^>", ""), ("^<", ""), ("f", "^>x")],
            cmd: r"grep ^[\>\<] f",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("-f-c.txt", ""), ("a.txt", "a")],
            cmd: "tail -f-c*.txt",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("-sd", ""), ("-s-d", ""), ("x", "a,b")],
            cmd: "cut -*-d",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("-d", ""), ("a-d", "x"), ("--", "")],
            cmd: "grep x *d",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        Case {
            files: &[("-delete", ""), (".x", "")],
            cmd: "find * -name .x",
            policies: BOTH,
            allowed: false,
            effect: Deleted(".x"),
        },
        Case {
            files: &[("--", ""), ("a", "x")],
            cmd: "grep -R MARKER * -n {secret}",
            policies: BOTH,
            allowed: false,
            effect: ReadOutside,
        },
        Case {
            files: &[
                ("-n.txt", ""),
                ("--.txt", ""),
                ("-c.txt", ""),
                ("a.txt", "a"),
            ],
            cmd: "head -n 3 *.txt",
            policies: BOTH,
            allowed: true,
            effect: Nothing,
        },
        // `cp *.txt backup/` stays refused: a file `-t.txt` is `-t .txt`, and the other
        // matches (and `backup/`) are copied into the directory `.txt`, a target the
        // command never names.
        Case {
            files: &[
                ("-t.txt", ""),
                ("a.txt", "a"),
                (".txt/", ""),
                ("backup/", ""),
            ],
            cmd: "cp *.txt backup/",
            policies: DEV,
            allowed: false,
            effect: Created(".txt/a.txt"),
        },
        // A target that is a directory receives each operand under its own name (issue 25):
        // the written path is `.vscode/tasks.json`, which the policy protects.
        Case {
            files: &[(".vscode/", ""), ("tasks.json", "{}")],
            cmd: "cp tasks.json .vscode/",
            policies: DEV,
            allowed: false,
            effect: Created(".vscode/tasks.json"),
        },
        Case {
            files: &[(".vscode/", ""), ("tasks.json", "{}")],
            cmd: "cp -t.vscode tasks.json",
            policies: DEV,
            allowed: false,
            effect: Created(".vscode/tasks.json"),
        },
        Case {
            files: &[("sub/", ""), ("HEAD", "ref: refs/heads/main\n")],
            cmd: "mv HEAD sub",
            policies: DEV,
            allowed: false,
            effect: Created("sub/HEAD"),
        },
        // With -T the target is the file itself, whatever exists.
        Case {
            files: &[("Makefile", "all:\n")],
            cmd: "cp -T Makefile Makefile.bak",
            policies: DEV,
            allowed: true,
            effect: Created("Makefile.bak"),
        },
    ]
}

/// Every file of `dir` and of its subdirectories (`sub/name`) with its contents.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir)
        .expect("scratch dir")
        .filter_map(Result::ok)
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            for (sub, text) in snapshot(&e.path()) {
                out.insert(format!("{name}/{sub}"), text);
            }
            out.insert(format!("{name}/"), Vec::new());
        } else {
            out.insert(name, std::fs::read(e.path()).unwrap_or_default());
        }
    }
    out
}

fn bash_is_recent() -> bool {
    Command::new("bash")
        .args([
            "-c",
            "((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 2)))",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn every_case_against_the_policy_and_real_bash() {
    if !bash_is_recent() {
        eprintln!("skipped: needs bash >= 5.2 (globskipdots)");
        return;
    }
    let mut failures = Vec::new();
    for case in cases() {
        for name in case.policies {
            let d = policy(name).evaluate(
                &Context::example(),
                &case.cmd.replace("{secret}", "/etc/hostname"),
            );
            if (d.verdict == Verdict::Allow) != case.allowed {
                failures.push(format!("{name}: {:?} -> {:?}", case.cmd, d.reasons));
            }
        }
        let outside = tempfile::tempdir().expect("tempdir");
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "SECRET-MARKER\n").expect("secret");
        let secret = secret.to_string_lossy().into_owned();
        let dir = tempfile::tempdir().expect("tempdir");
        for (f, text) in case.files {
            // A name ending in `/` is a directory.
            if f.ends_with('/') {
                std::fs::create_dir_all(dir.path().join(f)).expect("dir");
                continue;
            }
            std::fs::write(dir.path().join(f), text.replace("{secret}", &secret)).expect("file");
        }
        let before = snapshot(dir.path());
        let out = Command::new("timeout")
            .arg("10")
            .arg("bash")
            .args(["--noprofile", "--norc", "-c"])
            .arg(case.cmd.replace("{secret}", &secret))
            .current_dir(dir.path())
            .env("LC_ALL", "C")
            .output()
            .expect("bash runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = snapshot(dir.path());
        let read_outside = text.contains("SECRET-MARKER") || text.contains(&secret);
        let happened = match &case.effect {
            // 124: `timeout` stopped it (a `tail -f` that never returns).
            Effect::Nothing => before == after && !read_outside && out.status.code() != Some(124),
            Effect::Deleted(f) => before.contains_key(*f) && !after.contains_key(*f),
            Effect::Created(f) => !before.contains_key(*f) && after.contains_key(*f),
            Effect::Changed(f) => before.get(*f) != after.get(*f),
            Effect::ReadOutside => read_outside,
        };
        if !happened {
            failures.push(format!(
                "real bash: {:?} did not show {:?}; output: {text}",
                case.cmd, case.effect
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
