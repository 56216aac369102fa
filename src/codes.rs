//! Every stable code shellgate reports, one enum per family, each with its description.
//!
//! [`ReasonCode`] names why (part of) a command is not simply allowed (`Reason::code`);
//! [`DiagnosticCode`] names a problem in a policy file (`Diagnostic::code`): `policy-*` when
//! the policy does not load, `lint-*` for the linter's warnings. The strings are stable:
//! they are what JSON output, SARIF `ruleId`s, hooks and the Python package show. The README
//! tables and SARIF's `shortDescription`s are checked against these enums by a test
//! (`readme_tables_match_the_enums` below), so a new code is added here, once, and the test
//! prints the README rows to paste.
//!
//! This module depends on nothing else in the crate: every layer may use it.

use std::fmt;

/// Defines a code enum: each variant with its stable kebab-case string and a one-line
/// description, plus `ALL`, `as_str`, `description` and `from_code`.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $($variant:ident = $code:literal: $desc:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub(crate) enum $name {
            $(
                #[doc = $desc]
                $variant,
            )*
        }

        impl $name {
            /// Every code of this family, in the order of the README table.
            #[allow(dead_code)]
            pub(crate) const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The stable kebab-case code.
            pub(crate) const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// A one-line description (the README's "meaning" and SARIF's `shortDescription`).
            pub(crate) const fn description(self) -> &'static str {
                match self {
                    $($name::$variant => $desc,)*
                }
            }

            /// The code whose string is `code`.
            pub(crate) fn from_code(code: &str) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

code_enum! {
    /// Why (part of) a command is not simply allowed: the `code` of a `Reason`.
    ReasonCode {
        ParseTooLarge = "parse-too-large": "the command is longer than the policy's `max_bytes`",
        ParseControlCharacter = "parse-control-character": "a NUL or a control character other than tab and newline",
        ParseSplitWord = "parse-split-word": "a backslash-newline inside one word, which the parser misreads",
        ParseNestedBacktick = "parse-nested-backtick": "an escaped backtick inside a backtick substitution, which the parser misreads",
        ParseSyntax = "parse-syntax": "a syntax error",
        ParseMissing = "parse-missing": "missing syntax (an unterminated quote, a missing `fi`)",
        ParseUnsupported = "parse-unsupported": "a construct shellgate does not support",
        ParseTooDeep = "parse-too-deep": "the command nests deeper than the policy's `max_depth`",
        ParseTooManyNodes = "parse-too-many-nodes": "the command has more syntax nodes than the parser's limit",
        ParseDynamicName = "parse-dynamic-name": "a name that must be static (a function name, an assigned variable) is not",
        ParseDisagreement = "parse-disagreement": "`[shell] paranoid`: tree-sitter-bash reads the command differently from shellgate's parser, or cannot read it",
        ProgramNotAllowed = "program-not-allowed": "the program is not in the policy",
        ProgramDenied = "program-denied": "the program is denied",
        ProgramAsk = "program-ask": "the program needs approval",
        ProgramPath = "program-path": "a program run by path (`/bin/rm`, `./x`)",
        DynamicProgram = "dynamic-program": "the program name is only known at run time (`$CMD`, `$(..)`)",
        SessionState = "session-state": "a builtin that changes the session for later commands (`alias`, `set`, `trap`, `export`, ...)",
        FunctionDefinition = "function-definition": "defines a shell function",
        WrapperDenied = "wrapper-denied": "a program that runs another program (`bash -c`, `xargs`, `find -exec`) and is not an allowed wrapper",
        WrapperUnverifiable = "wrapper-unverifiable": "an allowed wrapper whose payload cannot be checked",
        WrapperAsk = "wrapper-ask": "a wrapper in `wrappers.ask`: needs approval (its payload is still checked)",
        SubcommandNotAllowed = "subcommand-not-allowed": "the subcommand is not allowed (e.g. `git submodule`)",
        OptionDenied = "option-denied": "the option is denied",
        OptionNotAllowed = "option-not-allowed": "the option is not in the program's `allow_options`",
        OptionAsk = "option-ask": "the option needs approval",
        OptionRequired = "option-required": "an option the rule requires is missing",
        OptionValueDenied = "option-value-denied": "the value of an option is denied",
        ArgumentDenied = "argument-denied": "an `args` pattern that denies matched",
        ArgumentAsk = "argument-ask": "an `args` pattern that asks matched",
        TooManyOperands = "too-many-operands": "more operands than the rule allows (an extra operand may be an output file)",
        MissingOperand = "missing-operand": "fewer operands than the rule needs",
        DynamicArgument = "dynamic-argument": "an argument only known at run time where it could become an option",
        WordSplit = "word-split": "a word bash splits or globs into words only known at run time, where one of them could be an option, an option's value could spill into more arguments, or the operands' positions matter",
        EmptyCommand = "empty-command": "the command is empty or blank: there is nothing to run",
        SandboxRequired = "sandbox-required": "a `[sandbox.programs]` rule (workspace code: `python3 x.py`, `./a.out`, `make`) allows it, but it is not run under the kernel sandbox",
        SandboxUnavailable = "sandbox-unavailable": "a `[sandbox.programs]` rule allows it, but the kernel cannot provide the sandbox (Landlock ABI 6)",
        PathReadOutside = "path-read-outside": "a path read outside the policy's read roots",
        PathWriteOutside = "path-write-outside": "a path written outside the policy's write roots",
        PathReadDenied = "path-read-denied": "a path read that a deny pattern names",
        PathWriteDenied = "path-write-denied": "a path written that a deny pattern names",
        PathUnresolved = "path-unresolved": "a path only known at run time",
        PathWriteProtected = "path-write-protected": "a file in `[paths] protected` (agents' settings, tool configs, git repository shapes), unless `unprotected` names it",
        PathList = "path-list": "a list of paths read from a file or stdin (`file -f -`)",
        ModulePath = "module-path": "code loaded from a path (`jq -L`)",
        OptionRunsProgram = "option-runs-program": "an option that runs a program",
        BackupSuffix = "backup-suffix": "a `sed -i` backup suffix that is a path",
        JqProgram = "jq-program": "a jq program not known before it runs, or one that loads code (`import`, `include`)",
        CdUnresolved = "cd-unresolved": "a `cd` whose target is not one exact path: the directory later relative paths resolve in would be unknown",
        CdInLoop = "cd-in-loop": "a `cd` that a loop repeats: the directory later relative paths resolve in would be unknown",
        RedirectRead = "redirect-read": "a redirection that reads a file",
        RedirectWrite = "redirect-write": "a redirection that writes a file",
        RedirectUnknown = "redirect-unknown": "a redirection shellgate cannot check (`<&` without a file descriptor number)",
        FdDuplication = "fd-duplication": "a file descriptor duplication (`>&`, `<&`)",
        HereDocument = "here-document": "a here-document or here-string",
        EnvDenied = "env-denied": "an assignment to a denied variable",
        EnvAsk = "env-ask": "an assignment to a variable that needs approval",
        EnvNotAllowed = "env-not-allowed": "an assignment to a variable the policy does not allow",
        VariableName = "variable-name": "`printf -v` / `read` / `declare` of a name that is not static and plain",
        SedScript = "sed-script": "a sed program that can run commands or write files",
        AwkProgram = "awk-program": "an awk program that can run commands or write files",
        IndirectExpansion = "indirect-expansion": "an indirect expansion (`${!x}`), whose target is chosen at run time",
        Substitution = "substitution": "a command or process substitution, when the policy sets a verdict for them",
        Background = "background": "a command run in the background (`&`, `coproc`), when the policy sets a verdict for it",
        CommandLimit = "command-limit": "more simple commands than the policy's `max_commands`: always deny",
        NestingLimit = "nesting-limit": "payloads nested deeper than the policy's `max_nesting`: always deny",
        InternalError = "internal-error": "shellgate failed while checking the command: always deny",
        GitRepositoryUntrusted = "git-repository-untrusted": "git would use a repository other than the workspace's own (an embedded bare or nested repository, found from the directory it runs in and `-C`) that `[programs.git] repositories` does not name",
        GitConfigRunsProgram = "git-config-runs-program": "the config of the repository git would use (or a file it includes) sets a key that runs a program (`core.fsmonitor`, `diff.*.textconv`, `filter.*`, ...), or cannot be read",
        DeviceOperand = "device-operand": "a device node or `/dev` entry given to a program that removes, renames, changes or replaces it (`rm /dev/null`); only redirections may open them",
        SymlinkOutside = "symlink-outside": "a symlink created in the workspace whose target lies outside the write roots (`ln -s /root/.ssh x`, a patch with `new file mode 120000`)",
        PatchUnchecked = "patch-unchecked": "a patch `git apply` reads from a pipe or the terminal, whose paths and symlinks cannot be checked",
        CodeFromData = "code-from-data": "bash evaluates a value not proven inert as code: arithmetic in every form, a subscript, a name resolved at run time, a string run later (docs/parser.md)",
        EnvRead = "env-read": "expands a variable the command did not set, which `[env] read` does not allow: the environment is a secret store",
    }
}

code_enum! {
    /// A problem in a policy file: `policy-*` when it does not load, `lint-*` for a rule that
    /// loads but does not mean what it seems to.
    DiagnosticCode {
        PolicySyntax = "policy-syntax": "the file is not valid TOML",
        PolicyType = "policy-type": "a value has the wrong type",
        PolicyUnknownKey = "policy-unknown-key": "a key the policy format does not have",
        PolicyInvalidVerdict = "policy-invalid-verdict": "a verdict that is not `allow`, `ask` or `deny`",
        PolicyInvalidKind = "policy-invalid-kind": "an argument kind that does not exist",
        PolicyInvalidOption = "policy-invalid-option": "an option that is not written as one (`-x`, `--name`)",
        PolicyInvalidRegex = "policy-invalid-regex": "a regular expression that does not compile",
        PolicyInvalidGlob = "policy-invalid-glob": "a glob that does not compile",
        PolicyInvalidPath = "policy-invalid-path": "a path pattern that does not start with `{workspace}`, `{home}`, `~` or `/`, or holds `.` or `..`",
        PolicyInvalidLimit = "policy-invalid-limit": "a limit out of range",
        PolicyInvalidProgram = "policy-invalid-program": "a program name that is not a plain name",
        PolicyContradiction = "policy-contradiction": "two rules that contradict each other (a program both allowed and denied)",
        PolicyWrapperAsProgram = "policy-wrapper-as-program": "a wrapper given a plain program rule, which would skip checking what it runs",
        PolicyUnknownWrapper = "policy-unknown-wrapper": "a `[wrappers]` entry shellgate does not know how to unwrap",
        PolicyInclude = "policy-include": "an included policy that cannot be found or read",
        PolicyIncludeCycle = "policy-include-cycle": "policies that include each other",
        PolicyRedact = "policy-redact": "a `[redact]` rule that does not compile",
        PolicySandbox = "policy-sandbox": "a `[sandbox]` setting that is invalid",
        PolicySnapshots = "policy-snapshots": "a `[snapshots]` setting that is invalid",
        PolicyParanoidUnavailable = "policy-paranoid-unavailable": "`[shell] paranoid = true` in a build without the second reader (the `paranoid` feature)",
        PolicyExampleFailed = "policy-example-failed": "an `[examples]` command the policy does not decide as written",
        PolicyUnreadable = "policy-unreadable": "the policy file cannot be read (the Python package's `PolicyError.diagnostics`)",
        LintDangerousOption = "lint-dangerous-option": "an allowed program has options that run programs or write files, and the rule neither denies nor restricts them",
        LintDangerousProgram = "lint-dangerous-program": "an allowed program runs arbitrary code or is interactive, and its rule is bare (no option, argument or subcommand rules)",
        LintUntypedWrite = "lint-untyped-write": "a program that writes its operands has no `path-write` operand kind, so its writes are checked as reads",
        LintUntypedScript = "lint-untyped-script": "`sed` / `awk` operands are not typed `sed-script` / `awk-program`, so `sed 1e` and `awk system()` are not seen",
        LintShadowedOption = "lint-shadowed-option": "an option in `allow_options` / `ask_options` that is a prefix of a denied long option, so the evaluator always refuses it as an abbreviation",
        LintUnreachableRule = "lint-unreachable-rule": "option, argument or subcommand rules of a program whose verdict is `deny` never apply",
        LintUnsatisfiable = "lint-unsatisfiable": "a rule no command can satisfy (a required option that is denied or not allowed)",
        LintContradiction = "lint-contradiction": "an option both takes a value and takes an optional glued value",
        LintShadowedPath = "lint-shadowed-path": "a `[paths]` read/write pattern that the matching deny list also names",
        LintShadowedEnv = "lint-shadowed-env": "an `[env]` allow/ask name that a deny pattern always wins over",
        LintNoOptionAllowlist = "lint-no-option-allowlist": "an allowed program (or subcommand) has no `allow_options`, so every option it does not deny passes",
        LintReplacedRule = "lint-replaced-rule": "a program rule with `replace = true` drops the denials of the included policy's rule for that program",
        PolicyMixedOptionKeys = "policy-mixed-option-keys": "a program rule with an `options` table also writes the old option lists (`allow_options`, `options_with_value`, ...): each option is written once, in `options`",
        LintOldOptionKeys = "lint-old-option-keys": "a program rule written with the old option lists (`allow_options`, `options_with_value`, ...), read for one more release: `policy-check migrate` rewrites them as an `options` table",
        LintNeedsReview = "lint-needs-review": "an `options` entry with a `review` note: a drafted entry nobody has settled yet",
    }
}

/// The description of any code of either family, if it is one.
pub(crate) fn describe(code: &str) -> Option<&'static str> {
    ReasonCode::from_code(code)
        .map(ReasonCode::description)
        .or_else(|| DiagnosticCode::from_code(code).map(DiagnosticCode::description))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The README table under `heading`, as `(code, meaning)` rows.
    fn readme_table(readme: &str, heading: &str) -> Vec<(String, String)> {
        let start = readme
            .find(heading)
            .unwrap_or_else(|| panic!("README has no {heading:?}"));
        readme[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // header and separator
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').splitn(2, " | ").collect();
                let code = cells[0].trim().trim_matches('`').to_string();
                let meaning = cells.get(1).map_or("", |m| m.trim()).to_string();
                (code, meaning)
            })
            .collect()
    }

    fn expected<T: Copy>(
        all: &[T],
        as_str: fn(T) -> &'static str,
        desc: fn(T) -> &'static str,
    ) -> Vec<(String, String)> {
        all.iter()
            .map(|&c| (as_str(c).to_string(), desc(c).to_string()))
            .collect()
    }

    fn render(rows: &[(String, String)]) -> String {
        rows.iter()
            .map(|(c, m)| format!("| `{c}` | {m} |\n"))
            .collect()
    }

    #[test]
    fn codes_are_unique_and_kebab_case() {
        let mut seen = BTreeSet::new();
        let all = ReasonCode::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(DiagnosticCode::ALL.iter().map(|c| c.as_str()));
        for code in all {
            assert!(seen.insert(code), "{code} is defined twice");
            assert!(
                code.split('-')
                    .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())),
                "{code} is not kebab-case"
            );
            let desc = describe(code).expect("described");
            assert!(!desc.is_empty() && !desc.contains('|'), "{code}: {desc:?}");
        }
        for c in ReasonCode::ALL {
            assert_eq!(ReasonCode::from_code(c.as_str()), Some(*c));
            assert!(
                !c.as_str().starts_with("policy-") && !c.as_str().starts_with("lint-"),
                "{c} is in the wrong family"
            );
        }
        for c in DiagnosticCode::ALL {
            assert_eq!(DiagnosticCode::from_code(c.as_str()), Some(*c));
            assert!(
                c.as_str().starts_with("policy-") || c.as_str().starts_with("lint-"),
                "{c} is in the wrong family"
            );
        }
    }

    #[test]
    fn readme_tables_match_the_enums() {
        let readme = include_str!("../README.md");
        for (heading, want) in [
            (
                "## Reason codes",
                expected(ReasonCode::ALL, ReasonCode::as_str, ReasonCode::description),
            ),
            (
                "## Policy diagnostic codes",
                expected(
                    DiagnosticCode::ALL,
                    DiagnosticCode::as_str,
                    DiagnosticCode::description,
                ),
            ),
        ] {
            let got = readme_table(readme, heading);
            assert!(
                got == want,
                "the README table under {heading:?} disagrees with src/codes.rs; its rows \
                 should be:\n{}",
                render(&want)
            );
        }
    }

    #[test]
    fn sarif_describes_every_code_as_the_enum_does() {
        for c in ReasonCode::ALL {
            assert_eq!(crate::report::sarif::describe(c.as_str()), c.description());
        }
        for c in DiagnosticCode::ALL {
            assert_eq!(crate::report::sarif::describe(c.as_str()), c.description());
        }
        // A code of neither family is shown as itself, never described as something else.
        assert_eq!(
            crate::report::sarif::describe("policy-default"),
            "policy-default"
        );
    }
}
