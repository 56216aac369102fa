//! `policy-check draft PROGRAM`: an option table from the program itself. Its options come
//! from its `--help` (and its man page where there is one, [`super::help`]); each is then run
//! by the oracle in the jail, with values of every shape (a number, a path inside, the decoy
//! secret, a new path outside, the decoy program), and typed by what it did:
//!
//! | what the runs showed                              | the entry                          |
//! |---------------------------------------------------|------------------------------------|
//! | nothing beyond the workspace's reads              | allowed (a flag, or `value = "text"`) |
//! | it read the path its value names                  | `value = "path-read"`              |
//! | it wrote (created, truncated, ...) that path      | `value = "path-write"`             |
//! | it ran its value, or any program                  | `verdict = "deny"`, with why       |
//! | the option itself wrote, read outside, connected  | `verdict = "deny"`, with why       |
//! | no run succeeded, or one did not finish           | `verdict = "deny"`, with a `review` note |
//!
//! An option is never allowed on a guess: what the oracle could not settle is denied, for a
//! person to review.

use std::fmt::Write as _;

use super::help::{self, Arity, HelpOption};
use super::{known, Effect, Oracle, OracleError, Run};

/// Why a program cannot be drafted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DraftError {
    /// The oracle cannot run.
    #[error(transparent)]
    Oracle(#[from] OracleError),
    /// No such program on `PATH`.
    #[error("{0}: not installed (not found on PATH)")]
    NotInstalled(String),
    /// Its help lists no options.
    #[error("{0}: `{0} --help` (and its man page) list no options this reader understands")]
    NoOptions(String),
    /// The program has effects with no option at all.
    #[error("{0}: running it with no option already does what no table can allow: {1}")]
    Baseline(String, String),
    /// No operands made it run cleanly.
    #[error(
        "{0}: it exits with an error on every operand list the oracle tries (a file, two \
         files, none): its options cannot be observed"
    )]
    NoOperands(String),
}

/// How the oracle typed one option.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Typed {
    /// Allowed: a flag, or a value of this kind.
    Allow {
        /// The value's kind (`None`: a flag).
        value: Option<&'static str>,
    },
    /// Refused, with what it did.
    Deny {
        /// Why.
        message: String,
    },
    /// Refused until a person looks: the oracle could not settle its effect.
    Review {
        /// What was not settled.
        note: String,
    },
}

/// One entry of a draft.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    /// The option as the help lists it.
    pub option: HelpOption,
    /// What the oracle made of it.
    pub typed: Typed,
}

/// A drafted table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Draft {
    /// The program.
    pub program: String,
    /// The first line of `PROGRAM --version`, when it has one.
    pub version: Option<String>,
    /// Where the options were read (`PROGRAM --help`, `man PROGRAM`).
    pub sources: Vec<String>,
    /// The operands each option was tried with.
    pub operands: Vec<String>,
    /// Every option, in the help's order.
    pub entries: Vec<Entry>,
}

fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Draft a table for `program`.
pub fn draft(oracle: &Oracle, program: &str) -> Result<Draft, DraftError> {
    if program.contains('/') || !super::installed(program) {
        return Err(DraftError::NotInstalled(program.to_string()));
    }
    let s = oracle.scratch();
    let t = &oracle.tracer;
    let mut sources = Vec::new();
    let mut options = Vec::new();
    if let Ok((_, text)) = t.output(&words(&[program, "--help"]), s) {
        let found = help::parse(&text);
        if !found.is_empty() {
            sources.push(format!("`{program} --help`"));
        }
        options = found;
    }
    if super::installed("man") {
        if let Ok((Some(0), text)) = t.output(&words(&["man", program]), s) {
            let found = help::parse(&text);
            if !found.is_empty() {
                sources.push(format!("`man {program}`"));
            }
            for o in found {
                help::merge_into(&mut options, o);
            }
        }
    }
    if options.is_empty() {
        return Err(DraftError::NoOptions(program.to_string()));
    }
    let version = match t.output(&words(&[program, "--version"]), s) {
        Ok((Some(0), text)) => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(120).collect()),
        _ => None,
    };
    // The operands: the first list it runs cleanly with, and what it does with them alone.
    let mut chosen = None;
    for probe in known::PROBES {
        let mut argv = vec![program.to_string()];
        argv.extend(probe.iter().map(|w| w.to_string()));
        let Ok(run) = oracle.run(&argv) else { continue };
        if run.status == Some(0) {
            chosen = Some((words(probe), run));
            break;
        }
    }
    let Some((post, base)) = chosen else {
        return Err(DraftError::NoOperands(program.to_string()));
    };
    if !base.effects.is_empty() {
        let list: Vec<String> = base.effects.iter().map(|e| e.to_string()).collect();
        return Err(DraftError::Baseline(program.to_string(), list.join("; ")));
    }
    let mut entries: Vec<Entry> = options
        .into_iter()
        .map(|option| {
            let typed = type_option(oracle, program, &option, &post, &[]);
            Entry { option, typed }
        })
        .collect();
    // Options that never ran cleanly alone, tried again beside each harmless flag.
    let companions: Vec<String> = entries
        .iter()
        .filter(|e| e.option.arity == Arity::None && e.typed == Typed::Allow { value: None })
        .map(|e| e.option.primary().to_string())
        .filter(|n| !matches!(n.as_str(), "--help" | "--version" | "-h" | "-V"))
        .collect();
    for e in &mut entries {
        if matches!(&e.typed, Typed::Review { note } if note.contains(NO_SUCCESS) || note.contains(NOT_SHOWN))
        {
            e.typed = type_option(oracle, program, &e.option, &post, &companions);
        }
    }
    Ok(Draft {
        program: program.to_string(),
        version,
        sources,
        operands: post,
        entries,
    })
}

/// The review note of an option no run of which succeeded.
const NO_SUCCESS: &str = "no run with it succeeded";

/// The review note of an option whose value the help calls a file, untouched by every run.
const NOT_SHOWN: &str = "but no run read or wrote it";

/// The values a value-taking option is tried with.
fn values(oracle: &Oracle) -> Vec<String> {
    let s = oracle.scratch();
    vec![
        "2".into(),
        "1-3".into(),
        ",".into(),
        "a.txt".into(),
        "list.txt".into(),
        s.secret(),
        s.outside_new(),
        s.prog(),
    ]
}

/// What the runs of one option showed, sorted by who did it.
#[derive(Default)]
struct Seen {
    option_runs: Vec<String>,
    option_network: Vec<String>,
    option_writes: Vec<String>,
    option_reads: Vec<String>,
    value_runs: bool,
    value_writes: bool,
    value_reads: bool,
    value_lists: bool,
    succeeded: bool,
    timed_out: bool,
    statuses: Vec<String>,
}

impl Seen {
    fn add(&mut self, oracle: &Oracle, run: &Run, value: Option<&str>) {
        let s = oracle.scratch();
        let value_path = value.map(|v| {
            if v.starts_with('/') {
                super::normalize(v)
            } else {
                super::normalize(&format!("{}/{v}", s.ws.display()))
            }
        });
        let is_value = |p: &str| value_path.as_deref() == Some(p);
        let value_is_prog = value == Some(s.prog().as_str());
        let value_is_list = value == Some("list.txt");
        for e in &run.effects {
            match e {
                Effect::Runs(p) if value_is_prog => {
                    let _ = p;
                    self.value_runs = true;
                }
                Effect::DecoyProgramRan if value_is_prog => self.value_runs = true,
                Effect::Runs(p) => self.option_runs.push(p.clone()),
                Effect::DecoyProgramRan => self.option_runs.push(s.prog()),
                Effect::Network(what) => self.option_network.push(what.clone()),
                Effect::Writes(_, p) if is_value(p) => self.value_writes = true,
                Effect::Writes(_, p) => self.option_writes.push(p.clone()),
                Effect::TouchesDecoy(_, p) if is_value(p) => self.value_reads = true,
                Effect::TouchesDecoy(..) if value_is_list => self.value_lists = true,
                Effect::TouchesDecoy(_, p) => self.option_reads.push(p.clone()),
            }
        }
        self.succeeded |= run.status == Some(0);
        self.timed_out |= run.timed_out;
        let status = run
            .status
            .map_or("no exit status".to_string(), |c| format!("exit {c}"));
        if !self.statuses.contains(&status) {
            self.statuses.push(status);
        }
    }
}

fn first(list: &[String]) -> String {
    let mut v = list.to_vec();
    v.sort();
    v.dedup();
    v.into_iter().take(3).collect::<Vec<_>>().join(", ")
}

/// Type one option from its runs: with the operands, then without them, then (while no run
/// has succeeded) beside each of `companions` (flags already typed as harmless: `column -n`
/// needs `-t`).
fn type_option(
    oracle: &Oracle,
    program: &str,
    option: &HelpOption,
    post: &[String],
    companions: &[String],
) -> Typed {
    let name = option.primary().to_string();
    let long = name.starts_with("--");
    let mut tries: Vec<(Vec<String>, Option<String>)> = Vec::new();
    match option.arity {
        Arity::None => tries.push((vec![name.clone()], None)),
        Arity::Required => {
            for v in values(oracle) {
                tries.push((vec![name.clone(), v.clone()], Some(v)));
            }
        }
        Arity::Optional => {
            tries.push((vec![name.clone()], None));
            for v in values(oracle) {
                let glued = if long {
                    format!("{name}={v}")
                } else {
                    format!("{name}{v}")
                };
                tries.push((vec![glued], Some(v)));
            }
        }
    }
    let mut seen = Seen::default();
    let with: Vec<Option<&String>> = std::iter::once(None)
        .chain(
            companions
                .iter()
                .filter(|c| !option.names.contains(c))
                .map(Some),
        )
        .collect();
    'settle: for companion in with {
        // With the operands first; if no run succeeds, again without them (`shuf -i 1-3`,
        // `shuf -e a b` take no file).
        for operands in [post, &[][..]] {
            for (opt_words, value) in &tries {
                let mut argv = vec![program.to_string()];
                argv.extend(companion.cloned());
                argv.extend(opt_words.iter().cloned());
                argv.extend(operands.iter().cloned());
                match oracle.run(&argv) {
                    Ok(run) => seen.add(oracle, &run, value.as_deref()),
                    Err(e) => {
                        return Typed::Review {
                            note: format!(
                                "effect not settled by the oracle: a run failed to start: {e}"
                            ),
                        }
                    }
                }
            }
            // Settled: a run succeeded and, for a value the help calls a file, showed what
            // is done with it (`sort --random-source` reads only beside `-R`).
            let shown = seen.value_reads || seen.value_writes || seen.value_lists;
            if seen.timed_out || (seen.succeeded && (shown || !names_a_file(option))) {
                break 'settle;
            }
        }
    }
    if !seen.option_runs.is_empty() {
        return Typed::Deny {
            message: format!("runs another program ({})", first(&seen.option_runs)),
        };
    }
    if seen.value_runs {
        return Typed::Deny {
            message: "runs the program its value names".into(),
        };
    }
    if seen.value_lists {
        return Typed::Deny {
            message: "reads the files its value lists (paths no check can see)".into(),
        };
    }
    if !seen.option_network.is_empty() {
        return Typed::Deny {
            message: "uses the network".into(),
        };
    }
    if !seen.option_writes.is_empty() {
        return Typed::Deny {
            message: format!(
                "writes files its operands and value do not name ({})",
                first(&seen.option_writes)
            ),
        };
    }
    if !seen.option_reads.is_empty() {
        return Typed::Deny {
            message: format!(
                "reads files outside the workspace that no operand names ({})",
                first(&seen.option_reads)
            ),
        };
    }
    if seen.timed_out {
        return Typed::Review {
            note: format!(
                "effect not settled by the oracle: a run did not finish within {} s",
                oracle.tracer.limit.as_secs()
            ),
        };
    }
    if !seen.succeeded {
        return Typed::Review {
            note: format!(
                "effect not settled by the oracle: {NO_SUCCESS} ({} with every value, \
                 operand list and harmless flag tried)",
                seen.statuses.join(", ")
            ),
        };
    }
    let value = match option.arity {
        Arity::None => None,
        _ if seen.value_writes => Some("path-write"),
        _ if seen.value_reads => Some("path-read"),
        _ => Some("text"),
    };
    // What the runs did not show but the help says: the small fixtures do not make every
    // option act (`sort --compress-program` runs its program only on large inputs).
    if let Some(word) = runs_word(option) {
        return Typed::Review {
            note: format!(
                "effect not settled by the oracle: the help says `{word}`, so it may run a \
                 program, which no run showed"
            ),
        };
    }
    if value == Some("text") && names_a_file(option) {
        return Typed::Review {
            note: format!(
                "effect not settled by the oracle: the help calls its value {}, {NOT_SHOWN}",
                option.placeholder.as_deref().unwrap_or("a file")
            ),
        };
    }
    Typed::Allow { value }
}

/// A word of an option's help that says it may run a program.
fn runs_word(option: &HelpOption) -> Option<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(?i)\b(programs?|prog|commands?|cmd|exec\w*|shell|scripts?|interpreter|hooks?|editor|pager|plugins?)\b",
        )
        .expect("valid")
    });
    re.find(&option.help).map(|m| m.as_str().to_string())
}

/// Whether the help calls the option's value a file or directory.
fn names_a_file(option: &HelpOption) -> bool {
    let p = option
        .placeholder
        .as_deref()
        .unwrap_or("")
        .trim_matches(['<', '>'])
        .to_ascii_uppercase();
    matches!(
        p.as_str(),
        "FILE" | "FILES" | "F" | "DIR" | "DIRECTORY" | "PATH" | "FILENAME" | "SOCKET" | "DEVICE"
    )
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Draft {
    /// The table as a policy file fragment, with a header saying how it was made.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Drafted by `policy-check draft {}` (shellgate {}) from {}.",
            self.program,
            env!("CARGO_PKG_VERSION"),
            self.sources.join(" and ")
        );
        let _ = writeln!(
            out,
            "# Program version: {}",
            self.version.as_deref().unwrap_or("(no --version output)")
        );
        let _ = writeln!(
            out,
            "# Each option ran in the jail under the option-effect oracle (operands: {}; values: \
             a number, a path inside, a decoy outside, a new path outside, a decoy program).",
            if self.operands.is_empty() {
                "none".to_string()
            } else {
                self.operands.join(" ")
            }
        );
        out.push_str(
            "# REVIEW BEFORE USE: a draft is what the oracle observed, not a proof. Check the\n\
             # operands' kind, every `review` note (denied until you settle it), and run\n\
             # `policy-check oracle --policy FILE` on the policy that includes this table.\n",
        );
        let _ = writeln!(out, "[programs.{}]", toml_key(&self.program));
        out.push_str("operands = \"path-read\"\n");
        out.push_str("options_complete = true\n");
        out.push_str("options = [\n");
        for e in &self.entries {
            let names: Vec<String> = e.option.names.iter().map(|n| toml_str(n)).collect();
            let mut fields = vec![format!("names = [{}]", names.join(", "))];
            match &e.typed {
                Typed::Allow { value } => {
                    if let Some(v) = value {
                        fields.push(format!("value = {}", toml_str(v)));
                        if e.option.arity == Arity::Optional {
                            fields.push("optional_value = true".into());
                        }
                    }
                }
                Typed::Deny { message } => {
                    fields.push("verdict = \"deny\"".into());
                    fields.push(format!("message = {}", toml_str(message)));
                }
                Typed::Review { note } => {
                    fields.push("verdict = \"deny\"".into());
                    fields.push(format!("review = {}", toml_str(note)));
                }
            }
            let _ = writeln!(out, "  {{ {} }},", fields.join(", "));
        }
        out.push_str("]\n");
        out
    }
}

/// A table key: bare when it can be, else quoted.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        k.to_string()
    } else {
        toml_str(k)
    }
}
