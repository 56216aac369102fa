//! The linter: warnings (`lint-*` codes) about rules of a loaded policy that load fine but do
//! not mean what they seem to.
//!
//! `policy-check lint` reports these after the loader's own errors (`policy-*` codes,
//! including `policy-example-failed`; see `lint_name_or_file` in `src/load.rs`, the layer that
//! runs the examples). Both are [`Diagnostic`]s, and every code with its meaning is listed
//! once, in `src/codes.rs` (and the README table checked against it).
//!
//! Only rules written in the linted file are warned about; rules from included policies are
//! the business of those files.

use std::collections::BTreeSet;

use super::{ArgKind, Diagnostic, Location, Policy, ProgramRule, Severity, Verdict};
use crate::codes::DiagnosticCode;

/// A program whose flags (or nature) can run other programs or write files.
struct Danger {
    program: &'static str,
    /// Options that run programs, write or delete files, or read arbitrary configuration.
    flags: &'static [&'static str],
    /// What those flags do.
    why: &'static str,
    /// The program runs arbitrary code (or is interactive) whatever its flags: a bare allow
    /// of it allows everything.
    inherent: Option<&'static str>,
    /// Its operands (some of them) are files it writes.
    writes_operands: bool,
}

/// One row of [`DANGERS`]: `program`, its dangerous `flags` and what they do (`why`), what
/// the program does inherently when that alone is dangerous, and whether it writes operands.
const fn dangerous(
    program: &'static str,
    flags: &'static [&'static str],
    why: &'static str,
    inherent: Option<&'static str>,
    writes_operands: bool,
) -> Danger {
    Danger {
        program,
        flags,
        why,
        inherent,
        writes_operands,
    }
}

const INTERPRETER: &str = "runs arbitrary code from its arguments, files or stdin";
const PAGER: &str = "is interactive: `!cmd` runs a shell command and `v` opens an editor";
const EDITOR: &str = "edits files and can run shell commands";

/// Programs with options that turn a reader into a writer or an executor.
const DANGERS: &[Danger] = &[
    dangerous(
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
        "run programs, delete or write files",
        None,
        false,
    ),
    dangerous(
        "sed",
        &["-i", "--in-place", "-f", "--file"],
        "edit files in place or read a script file",
        None,
        false,
    ),
    dangerous(
        "awk",
        &["-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"],
        "load programs or extensions from files",
        None,
        false,
    ),
    dangerous(
        "git",
        &["-c", "--config-env", "--exec-path", "-C", "--git-dir", "--work-tree"],
        "set configuration (core.pager, core.sshCommand, aliases) that runs programs, or act on another repository",
        None,
        false,
    ),
    dangerous(
        "tar",
        &[
            "--checkpoint-action", "--to-command", "--use-compress-program", "-I", "--info-script",
            "--new-volume-script", "-F", "--rsh-command", "-x", "--extract", "-c", "--create",
        ],
        "run programs or write files",
        None,
        false,
    ),
    dangerous(
        "rg",
        &["--pre", "--pre-glob", "-z", "--search-zip"],
        "run preprocessor programs",
        None,
        false,
    ),
    dangerous(
        "sort",
        &["-o", "--output", "--compress-program", "-T", "--temporary-directory"],
        "write files or run a compressor",
        None,
        false,
    ),
    dangerous("less", &["-o", "--log-file", "-O", "--LOG-FILE"], "write files", Some(PAGER), false),
    dangerous("more", &[], "", Some(PAGER), false),
    dangerous("man", &["-P", "--pager", "-H", "--html", "-l", "--local-file"], "run a pager or browser of its choice", Some(PAGER), false),
    dangerous("ssh", &["-o", "-F", "-L", "-R", "-D", "-w"], "run local commands (ProxyCommand, LocalCommand) or open tunnels", Some("runs commands on other hosts"), false),
    dangerous("scp", &["-S", "-o", "-F"], "run a program of its choice", Some("copies files to and from other hosts"), true),
    dangerous("rsync", &["-e", "--rsh", "--rsync-path", "--delete", "--remove-source-files"], "run programs or delete files", None, true),
    dangerous("vim", &[], "", Some(EDITOR), false),
    dangerous("vi", &[], "", Some(EDITOR), false),
    dangerous("nvim", &[], "", Some(EDITOR), false),
    dangerous("nano", &[], "", Some(EDITOR), false),
    dangerous("emacs", &[], "", Some(EDITOR), false),
    dangerous("python", &["-c", "-m"], "run inline code or any module", Some(INTERPRETER), false),
    dangerous("python3", &["-c", "-m"], "run inline code or any module", Some(INTERPRETER), false),
    dangerous("node", &["-e", "--eval", "-p", "--print", "-r", "--require", "--import"], "run inline code", Some(INTERPRETER), false),
    dangerous("perl", &["-e", "-E", "-i", "-M", "-n", "-p"], "run inline code or edit files in place", Some(INTERPRETER), false),
    dangerous("ruby", &["-e", "-i", "-r"], "run inline code or edit files in place", Some(INTERPRETER), false),
    dangerous("php", &["-r", "-B", "-R", "-E", "-F", "-S"], "run inline code or serve files", Some(INTERPRETER), false),
    dangerous("make", &["-f", "--file", "--makefile", "-C", "--directory", "--eval", "-E"], "run recipes from any makefile", Some("runs the recipes of the project's makefiles"), false),
    dangerous("docker", &["--privileged", "-v", "--volume", "--mount", "--pid", "--network"], "give containers the host", Some("runs containers and commands in them"), false),
    dangerous("kubectl", &[], "", Some("runs commands in cluster workloads (`exec`, `run`) and changes cluster state"), false),
    dangerous(
        "curl",
        &[
            "-o", "--output", "-O", "--remote-name", "--remote-name-all", "-K", "--config", "-T",
            "--upload-file", "-d", "--data", "--data-binary", "--data-urlencode", "-F", "--form",
            "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii",
            "--libcurl", "--output-dir", "--create-dirs",
        ],
        "write files, read a config, or upload local files",
        None,
        false,
    ),
    dangerous(
        "wget",
        &[
            "-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P",
            "--directory-prefix", "-i", "--input-file", "--post-file", "--body-file", "-e",
            "--execute", "--use-askpass",
        ],
        "write files, read command files, upload local files or run programs",
        Some("downloads into the working directory by default"),
        false,
    ),
    dangerous("zip", &["-T", "--test", "-TT", "--unzip-command", "-m", "--move"], "run a program or delete the zipped files", None, true),
    dangerous("unzip", &["-d", "-o"], "extract into any directory or overwrite files", Some("writes every file in the archive"), false),
    dangerous("tee", &[], "", None, true),
    dangerous("dd", &[], "", Some("reads and writes any file through `if=` and `of=`"), true),
    dangerous("cp", &["-t", "--target-directory"], "write into any directory", None, true),
    dangerous("mv", &["-t", "--target-directory"], "write into any directory", None, true),
    dangerous("ln", &["-t", "--target-directory", "-f", "--force"], "replace files with links", None, true),
    dangerous("install", &["-t", "--target-directory"], "write into any directory", None, true),
    dangerous("chmod", &["--reference"], "copy modes", None, true),
    dangerous("chown", &["--reference"], "copy owners", None, true),
    dangerous("split", &["--filter"], "run a program", None, true),
    dangerous("patch", &["-o", "--output", "-d", "--directory", "-r", "--reject-file"], "write any file", Some("writes the files a patch names"), false),
    dangerous("diff", &["--to-file", "--from-file"], "compare against arbitrary files", None, false),
    dangerous("xxd", &["-r"], "write binary files", None, false),
    dangerous("crontab", &[], "", Some("schedules commands"), false),
    dangerous("at", &[], "", Some("schedules commands"), false),
    dangerous("npm", &["--script-shell"], "run a shell of its choice", Some("runs the package scripts of the project"), false),
    dangerous("npx", &[], "", Some("downloads and runs packages"), false),
    dangerous("cargo", &["--config", "-Z"], "override configuration", Some("builds and runs the project's code (build scripts, tests)"), false),
    dangerous("pip", &[], "", Some("installs packages, running their build code"), false),
    dangerous("pip3", &[], "", Some("installs packages, running their build code"), false),
];

fn danger(program: &str) -> Option<&'static Danger> {
    DANGERS.iter().find(|d| d.program == program)
}

/// The names of the programs the linter knows dangerous flags for.
pub fn known_dangerous_programs() -> impl Iterator<Item = &'static str> {
    DANGERS.iter().map(|d| d.program)
}

/// Warnings about a loaded policy, for the rules written in `origin` (the file name the
/// policy was loaded under).
pub fn lint_policy(policy: &Policy, origin: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for rule in policy.programs.values() {
        if rule.rule.location.file == origin {
            lint_program(rule, true, &mut out);
        }
    }
    lint_paths(policy, origin, &mut out);
    lint_env(policy, origin, &mut out);
    out.sort_by(|a, b| {
        (a.location.line, a.location.col, a.code).cmp(&(b.location.line, b.location.col, b.code))
    });
    out
}

fn warn(out: &mut Vec<Diagnostic>, code: DiagnosticCode, message: String, location: &Location) {
    out.push(Diagnostic::new(
        Severity::Warning,
        code,
        message,
        location.clone(),
    ));
}

/// Whether `rule` refuses (or asks for) `flag`, one way or another.
pub(crate) fn covers(rule: &ProgramRule, flag: &str) -> bool {
    if rule.deny_options.contains(flag) || rule.ask_options.contains(flag) {
        return true;
    }
    if let Some(allowed) = &rule.allow_options {
        if !allowed.contains(flag) {
            return true;
        }
    }
    if rule.write_options.contains(flag)
        || rule.value_write_options.contains(flag)
        || matches!(
            rule.option_kinds.get(flag),
            Some(ArgKind::PathWrite | ArgKind::PathRead)
        )
    {
        // Its value (or the operands it turns into writes) is checked against the paths.
        return true;
    }
    if rule.delegate_options.contains(flag) {
        // Its value names another program rule, which checks the rest.
        return true;
    }
    if rule.option_values.contains_key(flag) {
        // Its values are restricted by a pattern.
        return true;
    }
    if rule
        .args
        .iter()
        .any(|a| a.verdict != Verdict::Allow && a.pattern.is_match(flag))
    {
        return true;
    }
    // A program with subcommands: covered when every subcommand covers it.
    !rule.subcommands.is_empty() && rule.subcommands.values().all(|sub| covers(sub, flag))
}

fn is_bare(rule: &ProgramRule) -> bool {
    rule.deny_options.is_empty()
        && rule.ask_options.is_empty()
        && rule.allow_options.is_none()
        && rule.required_options.is_empty()
        && rule.subcommands.is_empty()
        && rule.args.is_empty()
}

fn operand_kinds(rule: &ProgramRule) -> impl Iterator<Item = ArgKind> + '_ {
    let ops = &rule.operands;
    ops.head
        .iter()
        .copied()
        .chain(ops.repeat)
        .chain(ops.tail.iter().copied())
}

fn lint_program(rule: &ProgramRule, top: bool, out: &mut Vec<Diagnostic>) {
    let loc = &rule.rule.location;
    let name = &rule.name;
    if !rule.replaced.is_empty() {
        warn(
            out,
            DiagnosticCode::LintReplacedRule,
            format!(
                "`{name}` has `replace = true`: the included policy's rule for it is dropped, \
                 and with it {} (which this rule neither refuses nor checks)",
                rule.replaced.join(", ")
            ),
            loc,
        );
    }
    if rule.verdict == Verdict::Deny {
        let mut what = Vec::new();
        if rule.allow_options.is_some()
            || !rule.deny_options.is_empty()
            || !rule.ask_options.is_empty()
        {
            what.push("option");
        }
        if !rule.args.is_empty() {
            what.push("argument");
        }
        if !rule.subcommands.is_empty() {
            what.push("subcommand");
        }
        if !what.is_empty() {
            warn(
                out,
                DiagnosticCode::LintUnreachableRule,
                format!(
                    "`{name}` is denied, so its {} rules never apply",
                    what.join(", ")
                ),
                loc,
            );
        }
        return;
    }
    // A long option that is asked for, but is also a prefix of a denied long option: the
    // evaluator refuses it as an abbreviation of the denied one. (An option in allow_options
    // is taken as the full name of a real option, `jq --arg` beside `--args`, and allowed.)
    let listed: BTreeSet<&String> = rule.ask_options.iter().collect();
    for o in listed {
        if !o.starts_with("--") || o.len() < 4 || rule.deny_options.contains(o) {
            continue;
        }
        if let Some(d) = rule
            .deny_options
            .iter()
            .find(|d| d.starts_with("--") && d.len() > o.len() && d.starts_with(o.as_str()))
        {
            warn(
                out,
                DiagnosticCode::LintShadowedOption,
                format!(
                    "`{name}`: `{o}` is asked for, but it is also an abbreviation of the denied `{d}`, so it is always refused"
                ),
                loc,
            );
        }
    }
    // Required options that can never be given.
    if !rule.required_options.is_empty() {
        let usable: Vec<&String> = rule
            .required_options
            .iter()
            .filter(|o| {
                !rule.deny_options.contains(*o)
                    && rule.allow_options.as_ref().is_none_or(|a| a.contains(*o))
            })
            .collect();
        if usable.is_empty() {
            warn(
                out,
                DiagnosticCode::LintUnsatisfiable,
                format!(
                    "`{name}` requires one of {} but every one is denied or not in allow_options: no command can be allowed",
                    quote_list(&rule.required_options.iter().map(String::as_str).collect::<Vec<_>>())
                ),
                loc,
            );
        }
    }
    let both: Vec<&str> = rule
        .options_with_value
        .intersection(&rule.options_with_optional_value)
        .map(String::as_str)
        .collect();
    if !both.is_empty() {
        warn(
            out,
            DiagnosticCode::LintContradiction,
            format!(
                "`{name}`: {} listed in both options_with_value and options_with_optional_value",
                quote_list(&both)
            ),
            loc,
        );
    }
    let program = name.split(' ').next().unwrap_or(name);
    if top {
        if let Some(dg) = danger(program) {
            let missing: Vec<&str> = dg
                .flags
                .iter()
                .copied()
                .filter(|f| !covers(rule, f))
                .collect();
            // A program with subcommands is judged per subcommand, except for its global
            // flags (git -c), which are checked on the top rule.
            if !missing.is_empty() && rule.verdict == Verdict::Allow {
                warn(
                    out,
                    DiagnosticCode::LintDangerousOption,
                    format!(
                        "`{name}` is allowed but {} ({}) {} not denied: add {} to deny_options, or list the safe options in allow_options",
                        quote_list(&missing),
                        dg.why,
                        if missing.len() == 1 { "is" } else { "are" },
                        if missing.len() == 1 { "it" } else { "them" },
                    ),
                    loc,
                );
            }
            if let Some(why) = dg.inherent {
                if is_bare(rule) && rule.verdict == Verdict::Allow {
                    warn(
                        out,
                        DiagnosticCode::LintDangerousProgram,
                        format!(
                            "`{name}` {why}: a bare allow lets it do anything; restrict it with allow_options, required_options, args or subcommands, or use verdict = \"ask\""
                        ),
                        loc,
                    );
                }
            }
            // A `dd-operand` types its `of=` as a write.
            let writes_typed =
                operand_kinds(rule).any(|k| matches!(k, ArgKind::PathWrite | ArgKind::DdOperand));
            if dg.writes_operands && !writes_typed && rule.subcommands.is_empty() {
                warn(
                    out,
                    DiagnosticCode::LintUntypedWrite,
                    format!(
                        "`{name}` writes files named by its operands, but no operand is typed \"path-write\": its writes are checked as reads"
                    ),
                    loc,
                );
            }
        }
        let script_kind = match program {
            "sed" | "gsed" => Some((
                "sed-script",
                ArgKind::SedScript,
                "`sed 1e`, `s///e` and `w file`",
            )),
            "awk" | "gawk" | "mawk" | "nawk" => Some((
                "awk-program",
                ArgKind::AwkProgram,
                "`system()`, `print > file` and `| getline`",
            )),
            _ => None,
        };
        if let Some((kind_name, kind, examples)) = script_kind {
            let typed = operand_kinds(rule).any(|k| k == kind)
                || rule.option_kinds.values().any(|k| *k == kind);
            if !typed && rule.verdict == Verdict::Allow {
                warn(
                    out,
                    DiagnosticCode::LintUntypedScript,
                    format!(
                        "`{name}` operands are not typed \"{kind_name}\", so {examples} in its program are not checked"
                    ),
                    loc,
                );
            }
        }
    }
    // Options nobody listed pass unless the rule has an allowlist (a program with
    // subcommands is judged by them; its own options are the ones before the subcommand).
    if rule.allow_options.is_none() && rule.no_option_allowlist.is_none() {
        warn(
            out,
            DiagnosticCode::LintNoOptionAllowlist,
            format!(
                "`{name}` has no allow_options: every option the rule does not deny is allowed; list the options it may take"
            ),
            loc,
        );
    }
    for sub in rule.subcommands.values() {
        lint_program(sub, false, out);
    }
    if let Some(dd) = &rule.after_double_dash {
        lint_program(dd, false, out);
    }
}

fn lint_paths(policy: &Policy, origin: &str, out: &mut Vec<Diagnostic>) {
    let p = &policy.paths;
    for (allow, deny, allow_name, deny_name) in [
        (&p.read, &p.deny_read, "read", "deny_read"),
        (&p.write, &p.deny_write, "write", "deny_write"),
    ] {
        let denied: BTreeSet<&str> = deny.iter().map(|d| d.text.as_str()).collect();
        for a in allow {
            if a.rule.location.file == origin && denied.contains(a.text.as_str()) {
                warn(
                    out,
                    DiagnosticCode::LintShadowedPath,
                    format!(
                        "`{}` is in paths.{allow_name} and also in paths.{deny_name}, which wins: the {allow_name} entry has no effect",
                        a.text
                    ),
                    &a.rule.location,
                );
            }
        }
    }
}

fn lint_env(policy: &Policy, origin: &str, out: &mut Vec<Diagnostic>) {
    let e = &policy.env;
    for a in e.allow.iter().chain(&e.ask) {
        if a.rule.location.file != origin || a.text.contains(['*', '?', '[', '{']) {
            continue;
        }
        if let Some(d) = e.deny.iter().find(|d| d.glob.is_match(&a.text)) {
            warn(
                out,
                DiagnosticCode::LintShadowedEnv,
                format!(
                    "`{}` in {} is always denied by env.deny pattern `{}` ({})",
                    a.text, a.rule.name, d.text, d.rule.location
                ),
                &a.rule.location,
            );
        }
    }
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint_src(src: &str) -> Vec<Diagnostic> {
        let policy = Policy::from_toml(src, "t.toml").expect("loads");
        lint_policy(&policy, "t.toml")
    }

    /// The codes, without `lint-no-option-allowlist` (tested on its own).
    fn codes(f: &[Diagnostic]) -> Vec<&'static str> {
        f.iter()
            .map(|f| f.code)
            .filter(|c| *c != "lint-no-option-allowlist")
            .collect()
    }

    #[test]
    fn program_without_option_allowlist_warns() {
        let f = lint_src(
            "[programs.cat]\noperands = \"path-read\"\n[programs.ls]\nallow_options = [\"-l\"]\n\
             [programs.git.subcommands.status]\nallow_options = []\n[programs.git.subcommands.log]\n\
             [programs.source]\nverdict = \"deny\"\n",
        );
        let mut names: Vec<String> = f
            .iter()
            .filter(|f| f.code == "lint-no-option-allowlist")
            .map(|f| f.message.split('`').nth(1).unwrap_or("").to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["cat", "git", "git log"], "{f:?}");
    }

    #[test]
    fn bare_find_warns_with_missing_flags() {
        let f = lint_src("[programs.find]\nsingle_dash_long = true\n");
        assert_eq!(codes(&f), ["lint-dangerous-option"]);
        let f: Vec<&Diagnostic> = f
            .iter()
            .filter(|f| f.code == "lint-dangerous-option")
            .collect();
        assert!(f[0].message.contains("`-exec`"), "{}", f[0].message);
        assert!(f[0].message.contains("`-delete`"), "{}", f[0].message);
        assert_eq!((f[0].location.line, f[0].location.col), (1, 11));
    }

    #[test]
    fn find_with_denied_flags_is_clean() {
        let f = lint_src(
            "[programs.find]\nsingle_dash_long = true\ndeny_options = [\"-exec\", \"-execdir\", \"-ok\", \"-okdir\", \"-delete\", \"-fprint\", \"-fprint0\", \"-fprintf\", \"-fls\"]\n",
        );
        assert!(codes(&f).is_empty(), "{f:?}");
    }

    #[test]
    fn allow_options_covers_everything_not_listed() {
        let f = lint_src("[programs.sort]\nallow_options = [\"-n\", \"-r\"]\n");
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn bare_interpreter_is_dangerous() {
        let f = lint_src("[programs.python3]\noperands = \"text\"\n");
        assert!(codes(&f).contains(&"lint-dangerous-program"), "{f:?}");
    }

    #[test]
    fn untyped_writer_and_script() {
        let f = lint_src("[programs.tee]\n[programs.sed]\ndeny_options = [\"-i\", \"--in-place\", \"-s\", \"-u\", \"-f\", \"--file\"]\n");
        let c = codes(&f);
        assert!(c.contains(&"lint-untyped-write"), "{f:?}");
        assert!(c.contains(&"lint-untyped-script"), "{f:?}");
    }

    #[test]
    fn shadowed_unsatisfiable_and_unreachable() {
        let f = lint_src(
            "[programs.foo]\nallow_options = [\"-a\"]\nask_options = [\"--out\"]\ndeny_options = [\"-b\", \"--output\"]\nrequired_options = [\"-c\"]\n\
             [programs.bar]\nverdict = \"deny\"\ndeny_options = [\"-x\"]\n",
        );
        let c = codes(&f);
        assert!(c.contains(&"lint-shadowed-option"), "{f:?}");
        assert!(c.contains(&"lint-unsatisfiable"), "{f:?}");
        assert!(c.contains(&"lint-unreachable-rule"), "{f:?}");
    }

    #[test]
    fn shadowed_path_and_env() {
        let f = lint_src(
            "[paths]\nread = [\"{workspace}/**\"]\ndeny_read = [\"{workspace}/**\"]\n\
             [env]\nallow = [\"LD_PRELOAD\"]\ndeny = [\"LD_*\"]\n",
        );
        let c = codes(&f);
        assert!(c.contains(&"lint-shadowed-path"), "{f:?}");
        assert!(c.contains(&"lint-shadowed-env"), "{f:?}");
    }

    #[test]
    fn included_rules_are_not_linted() {
        let policy =
            Policy::from_toml("[policy]\ninclude = [\"read-only\"]\n", "t.toml").expect("loads");
        assert!(lint_policy(&policy, "t.toml").is_empty());
    }

    #[test]
    fn every_dangerous_program_is_listed_once() {
        let mut seen = BTreeSet::new();
        for p in known_dangerous_programs() {
            assert!(seen.insert(p), "{p} twice");
        }
    }
}
