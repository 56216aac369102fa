//! The compiled, immutable form of a policy that evaluation reads.

use std::collections::{BTreeMap, BTreeSet};

use globset::GlobMatcher;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{RuleRef, Verdict};
use crate::shell;

/// A verdict with the rule that set it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Setting {
    /// The verdict.
    pub verdict: Verdict,
    /// Where it was set.
    pub rule: RuleRef,
}

impl Setting {
    pub(crate) fn builtin(verdict: Verdict, name: &str) -> Setting {
        Setting {
            verdict,
            rule: RuleRef::builtin(name),
        }
    }
}

/// Limits on the input and its structure: the parser's, and the evaluator's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// What the parser accepts: `[limits] max_bytes` (largest command, in bytes) and
    /// `max_depth` (deepest syntax nesting), and its node budget. The evaluator parses
    /// every command and payload under exactly these.
    pub parse: shell::Limits,
    /// Most simple commands in one input, counting nested ones.
    pub max_commands: usize,
    /// Deepest nesting of re-parsed payloads (`bash -c "bash -c '...'"`, `eval`).
    pub max_nesting: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            parse: shell::Limits::default(),
            max_commands: 1000,
            max_nesting: 4,
        }
    }
}

/// Shell-level switches.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShellRules {
    /// `$(...)`, backticks, `<(...)`: `None` means "allowed when every inner command is";
    /// `Some(verdict)` applies that verdict to every substitution (and still checks inside).
    pub substitutions: Option<Setting>,
    /// Defining a function.
    pub functions: Setting,
    /// Running something in the background with `&`.
    pub background: Setting,
    /// Arithmetic that reads variables (bash evaluates their values, which can run code).
    pub arithmetic_variables: Setting,
    /// `${!x}` indirection and `${x@P}` prompt expansion.
    pub indirect_expansion: Setting,
    /// A path argument whose value cannot be known statically.
    pub unresolved_paths: Setting,
    /// A dynamic argument where an option or a path could appear.
    pub dynamic_arguments: Setting,
    /// `paranoid = true`: where it is set. Every command is read a second time by
    /// tree-sitter-bash, and one the two readers read differently is refused.
    pub paranoid: Option<RuleRef>,
}

/// A compiled glob, or the text itself when it has no glob syntax: most variable names and
/// some paths in policies are literal, and a literal needs no automaton.
#[derive(Debug, Clone)]
pub enum Glob {
    /// No `*?[]{}\\` in it: it matches exactly its own text.
    Exact(String),
    /// Anything else, compiled by globset.
    Matcher(LazyGlob),
}

/// A globset matcher with the pattern and `literal_separator` it is built from (globset does
/// not say which options a matcher was built with). Loading compiles it at once; read from a
/// policy's binary form it is compiled at its first match, so a hook pays only for the
/// patterns its command reaches.
#[derive(Debug, Clone)]
pub struct LazyGlob {
    text: String,
    literal_separator: bool,
    matcher: std::sync::OnceLock<GlobMatcher>,
}

impl LazyGlob {
    /// A glob compiled already (by the loader).
    pub(crate) fn ready(text: &str, literal_separator: bool, matcher: GlobMatcher) -> LazyGlob {
        LazyGlob {
            text: text.to_string(),
            literal_separator,
            matcher: std::sync::OnceLock::from(matcher),
        }
    }

    fn matcher(&self) -> &GlobMatcher {
        self.matcher.get_or_init(|| {
            // This build compiled the same pattern with the same option when the policy was
            // loaded (a pattern that fails is a load error, and never reaches a binary form),
            // so it compiles again; a panic here would be turned into a denial like any.
            read_cache::glob(&self.text, self.literal_separator).unwrap_or_else(|e| {
                panic!("a validated glob `{}` no longer compiles: {e}", self.text)
            })
        })
    }
}

impl Glob {
    /// The characters that make a pattern a glob (globset's syntax); a pattern without them
    /// cannot fail to compile and matches only itself.
    pub(crate) const SYNTAX: &'static [char] = &['*', '?', '[', ']', '{', '}', '\\'];

    /// Whether `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        match self {
            Glob::Exact(t) => t == text,
            Glob::Matcher(g) => g.matcher().is_match(text),
        }
    }
}

/// Where a path pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PathAnchor {
    /// `{workspace}`: each workspace root of the evaluation context.
    Workspace,
    /// `{home}` or `~`: the home directory of the context.
    Home,
    /// `/`: an absolute path.
    Root,
    /// `{output_dir}`: the fresh per-call `$OUTPUT_DIR` of a code execution call; matches
    /// nothing when the evaluation context has none.
    OutputDir,
}

/// One path pattern of `[paths]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathPattern {
    /// As written.
    pub text: String,
    /// The anchor.
    pub anchor: PathAnchor,
    /// The pattern for the part below the anchor; `None` matches only the anchor itself.
    pub rest: Option<Glob>,
    /// The rule it comes from.
    pub rule: RuleRef,
}

/// `[paths]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PathRules {
    /// Where reads are allowed.
    pub read: Vec<PathPattern>,
    /// Where writes are allowed.
    pub write: Vec<PathPattern>,
    /// Where reads are denied even if `read` allows them.
    pub deny_read: Vec<PathPattern>,
    /// Where writes are denied even if `write` allows them.
    pub deny_write: Vec<PathPattern>,
    /// Message for path refusals (both kinds, unless the one of its kind is set).
    pub message: Option<String>,
    /// Message for refused reads.
    pub read_message: Option<String>,
    /// Message for refused writes.
    pub write_message: Option<String>,
    /// Files whose writing changes what later tools run (agents' settings, tool configs,
    /// repositories): writes are denied unless `unprotected` names them too.
    pub protected: Vec<PathPattern>,
    /// Protected files a policy opts back in for writing.
    pub unprotected: Vec<PathPattern>,
    /// Why protected files are protected (shown with their refusals).
    pub protected_message: Option<String>,
}

/// `[redirects]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RedirectRules {
    /// `2>&1`, `>&-`, `<&3`.
    pub fd_duplication: Setting,
    /// `<<EOF` and `<<<`.
    pub here_documents: Setting,
    /// File reads by `<` (in addition to the path rules).
    pub read: Setting,
    /// File writes by `>`, `>>`, `&>` (in addition to the path rules).
    pub write: Setting,
}

/// A variable-name glob of `[env]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NamePattern {
    /// As written.
    pub text: String,
    /// Compiled.
    pub glob: Glob,
    /// Where.
    pub rule: RuleRef,
}

/// `[env]`: assignments to variables, wherever they happen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvRules {
    /// Names that may be assigned.
    pub allow: Vec<NamePattern>,
    /// Names that need approval.
    pub ask: Vec<NamePattern>,
    /// Names that must not be assigned (checked first).
    pub deny: Vec<NamePattern>,
    /// For names no pattern matches.
    pub default: Setting,
    /// Message for refusals.
    pub message: Option<String>,
    /// Reads of the environment (boxed: the policy is moved through the loader's frames,
    /// which must fit a small stack).
    pub read: Box<EnvReads>,
}

/// `[env] read*`: which variables may be expanded when the command did not assign them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvReads {
    /// Names that may be expanded (`[env] read`).
    pub allow: Vec<NamePattern>,
    /// Names whose expansion is refused (`[env] read_deny`, checked first, in any case).
    pub deny: Vec<NamePattern>,
    /// For reads no pattern matches (`[env] read_default`).
    pub default: Setting,
    /// Message for refused reads (`[env] read_message`).
    pub message: Option<String>,
}

/// `[wrappers]`: programs that run another program, unwrapped and checked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WrapperRules {
    /// Wrappers that are unwrapped, with the rule that allows each.
    pub allow: BTreeMap<String, RuleRef>,
    /// Wrappers that are unwrapped and then need approval.
    pub ask: BTreeMap<String, RuleRef>,
    /// Message for refusals.
    pub message: Option<String>,
}

/// The type of an argument, which decides how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArgKind {
    /// A file that is read: checked against `[paths] read`.
    PathRead,
    /// A file that is written or deleted: checked against `[paths] write`.
    PathWrite,
    /// Plain text: not a path, never checked.
    Text,
    /// A pattern (regex or glob): text, never a path.
    Pattern,
    /// A variable name that is assigned (`printf -v NAME`, `read NAME`).
    Variable,
    /// `NAME[=VALUE]` as given to `export`, `declare`, `local`, `readonly`.
    Assignment,
    /// A sed script: refused if it can run commands or read or write files.
    SedScript,
    /// An awk program: refused if it can run commands or write files.
    AwkProgram,
    /// A file (or `-`, stdin) holding a list of paths the program then reads (`file -f`,
    /// `--files-from`, `sha256sum -c`, `--files0-from`): the paths in it cannot be checked,
    /// so it is refused.
    PathList,
    /// A directory code is loaded from (`jq -L`), or a file of code (`jq -f`): refused.
    ModulePath,
    /// A program the option runs (`rg --pre`, `--hostname-bin`, `--compress-program`):
    /// always refused.
    Program,
    /// A backup suffix (`sed -i SUFFIX`): with a `/` it is a written path (`*` is the file's
    /// name), checked against `[paths] write`.
    BackupSuffix,
    /// A git pathspec or revision: text, but a path outside the work tree makes `git diff` a
    /// `--no-index` read of that path, so absolute, `~` and `..` forms are checked as reads.
    Pathspec,
    /// A jq program: refused if it loads modules (`import`, `include`, `modulemeta`).
    JqProgram,
    /// A `dd` operand `KEY=VALUE`: `if=` is a path read, `of=` a path write, the other keys
    /// dd has take numbers or flags; an unknown key is refused.
    DdOperand,
}

impl ArgKind {
    /// Every kind, for [`ArgKind::parse`] (a kind missing here cannot be written in a policy,
    /// which its first use shows).
    const ALL: [ArgKind; 15] = [
        ArgKind::PathRead,
        ArgKind::PathWrite,
        ArgKind::Text,
        ArgKind::Pattern,
        ArgKind::Variable,
        ArgKind::Assignment,
        ArgKind::SedScript,
        ArgKind::AwkProgram,
        ArgKind::PathList,
        ArgKind::ModulePath,
        ArgKind::Program,
        ArgKind::BackupSuffix,
        ArgKind::Pathspec,
        ArgKind::JqProgram,
        ArgKind::DdOperand,
    ];

    /// Parse the policy spelling (`path` is an old name of `path-read`).
    pub fn parse(s: &str) -> Option<ArgKind> {
        if s == "path" {
            return Some(ArgKind::PathRead);
        }
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The policy spelling of the kind (`path-read`).
    pub fn name(self) -> &'static str {
        match self {
            ArgKind::PathRead => "path-read",
            ArgKind::PathWrite => "path-write",
            ArgKind::Text => "text",
            ArgKind::Pattern => "pattern",
            ArgKind::Variable => "variable",
            ArgKind::Assignment => "assignment",
            ArgKind::SedScript => "sed-script",
            ArgKind::AwkProgram => "awk-program",
            ArgKind::PathList => "path-list",
            ArgKind::ModulePath => "module-path",
            ArgKind::Program => "program",
            ArgKind::BackupSuffix => "backup-suffix",
            ArgKind::Pathspec => "pathspec",
            ArgKind::JqProgram => "jq-program",
            ArgKind::DdOperand => "dd-operand",
        }
    }

    /// Whether a dynamic value of this kind is harmless (it is never interpreted).
    pub fn is_inert(self) -> bool {
        matches!(self, ArgKind::Text | ArgKind::Pattern)
    }
}

/// The positional operands of a program: fixed kinds before and after an optional repeated
/// kind (`["path-read...", "path-write"]` is `cp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperandSpec {
    /// Kinds of the first operands.
    pub head: Vec<ArgKind>,
    /// Kind of any number of middle operands; `None` means no more operands are allowed.
    pub repeat: Option<ArgKind>,
    /// Kinds of the last operands.
    pub tail: Vec<ArgKind>,
}

impl Default for OperandSpec {
    fn default() -> Self {
        OperandSpec {
            head: Vec::new(),
            repeat: Some(ArgKind::PathRead),
            tail: Vec::new(),
        }
    }
}

impl OperandSpec {
    /// The kind of operand `index` out of `count`, or `None` when there are too many.
    pub fn kind_of(&self, index: usize, count: usize) -> Option<ArgKind> {
        if index < self.head.len() {
            return Some(self.head[index]);
        }
        let tail_start = count.saturating_sub(self.tail.len()).max(self.head.len());
        if index >= tail_start {
            return self.tail.get(index - tail_start).copied();
        }
        self.repeat
    }
}

/// An argument pattern of a program rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArgRule {
    /// Matched against each argument's static value (options and operands alike).
    #[serde(with = "regex_text")]
    pub pattern: Regex,
    /// What a match means.
    pub verdict: Verdict,
    /// Why.
    pub message: Option<String>,
    /// Where.
    pub rule: RuleRef,
    /// Given any of these options, the rule does not apply (`git config --get KEY`).
    #[serde(default)]
    pub unless_options: BTreeSet<String>,
    /// It applies only to a command with at least this many operands (0: always).
    #[serde(default)]
    pub min_operands: usize,
}

impl ArgRule {
    /// Whether the rule applies only to some commands (it is decided once they are read).
    pub fn is_conditional(&self) -> bool {
        !self.unless_options.is_empty() || self.min_operands > 0
    }
}

/// The rule for one program (or one subcommand of a program), compiled and immutable: its
/// lists and switches are read through [`ProgramSpec`] (`rule.deny_options`), and what the
/// evaluator reads of them is worked out from them at its first use, so it cannot go stale.
/// Only the loader (`src/policy/load`) makes or changes rules (`ProgramRule::new`, `edit`),
/// and a change forgets what was worked out.
#[derive(Debug, Clone)]
pub struct ProgramRule {
    spec: ProgramSpec,
    index: std::sync::OnceLock<super::index::RuleIndex>,
}

impl ProgramRule {
    /// The rule `spec` says.
    pub(in crate::policy) fn new(spec: ProgramSpec) -> ProgramRule {
        ProgramRule {
            spec,
            index: std::sync::OnceLock::new(),
        }
    }

    /// What the rule says, to make a changed rule of (`ProgramRule::new`).
    pub(in crate::policy) fn into_spec(self) -> ProgramSpec {
        self.spec
    }

    /// Change what the rule says with `f` (its index is worked out again at its next use).
    pub(in crate::policy) fn edit(&mut self, f: impl FnOnce(&mut ProgramSpec)) {
        f(&mut self.spec);
        self.index = std::sync::OnceLock::new();
    }

    /// What the evaluator reads of the lists, worked out at the first call: a rule the
    /// commands checked never name costs nothing to index.
    pub(crate) fn index(&self) -> &super::index::RuleIndex {
        self.index
            .get_or_init(|| super::index::RuleIndex::of(&self.spec))
    }
}

impl std::ops::Deref for ProgramRule {
    type Target = ProgramSpec;

    fn deref(&self) -> &ProgramSpec {
        &self.spec
    }
}

// The binary form holds the spec; the index is worked out again after a rule is read.
impl Serialize for ProgramRule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.spec.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ProgramRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProgramRule, D::Error> {
        ProgramSpec::deserialize(d).map(ProgramRule::new)
    }
}

/// What a [`ProgramRule`] says: read it through the rule (`rule.allow_options`). A spec is
/// made by the loader and becomes a rule with `ProgramRule::new`; a rule has no mutable
/// access to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProgramSpec {
    /// The program name (`git`, or `git push` for a subcommand).
    pub name: String,
    /// The verdict when nothing more specific applies.
    pub verdict: Verdict,
    /// Message for refusals from this rule.
    pub message: Option<String>,
    /// Where the rule is written.
    pub rule: RuleRef,
    /// Options are single-dash words (`find -name`) rather than clusters (`ls -la`).
    pub single_dash_long: bool,
    /// Options are read only before the first operand (`printf FORMAT ARGS`).
    pub options_before_operands: bool,
    /// No option reachable from a file name is harmful (see the raw key).
    pub harmless_options: bool,
    /// Options that take a value (`-o FILE`, `-oFILE`, `--output FILE`, `--output=FILE`).
    pub options_with_value: BTreeSet<String>,
    /// Options whose value is optional and only ever glued (`sed -i.bak`, `--in-place=.bak`).
    pub options_with_optional_value: BTreeSet<String>,
    /// Kinds of option values; values of other options are text.
    pub option_kinds: BTreeMap<String, ArgKind>,
    /// If set, any option not listed is refused.
    pub allow_options: Option<BTreeSet<String>>,
    /// Refused options (long ones also by any unambiguous abbreviation).
    pub deny_options: BTreeSet<String>,
    /// Options that need approval.
    pub ask_options: BTreeSet<String>,
    /// Message for option refusals.
    pub options_message: Option<String>,
    /// Messages of single options (an `options` entry's `message`), by spelling: shown
    /// instead of `options_message` when that option is refused or asked for.
    pub option_messages: BTreeMap<String, String>,
    /// The options were written as an `options` table (not the old lists): how a decision's
    /// trace names the key that applied (`options` rather than `allow_options`).
    #[serde(default)]
    pub option_table: bool,
    /// Options that turn path-read operands into path-write ones (`sed -i`).
    pub write_options: BTreeSet<String>,
    /// Options after which (and their value) every argument is an operand (`python3 -m mod ...`).
    pub terminal_options: BTreeSet<String>,
    /// Options whose value names another program rule that checks the remaining arguments
    /// (`python3 -m pytest ...` is checked by `[programs.pytest]`).
    pub delegate_options: BTreeSet<String>,
    /// Options without a value that the policy knows (so they are not "unknown" before a
    /// subcommand).
    pub flags: BTreeSet<String>,
    /// At least one of these options must be present (`python3 -m`).
    pub required_options: BTreeSet<String>,
    /// Allowed values of an option, by regex (`-m` = `^pytest$`).
    #[serde(with = "regex_map")]
    pub option_values: BTreeMap<String, Regex>,
    /// Kinds of the operands.
    pub operands: OperandSpec,
    /// Options that supply the leading `pattern`/script operand (`grep -e`, `sed -e`).
    pub pattern_options: BTreeSet<String>,
    /// Fewest operands.
    pub min_operands: usize,
    /// The path read when no operand is given (`.` for `ls`), if any.
    pub implicit_operand: Option<String>,
    /// Options that make the implicit operand apply; empty: it always applies.
    pub implicit_operand_options: BTreeSet<String>,
    /// The verdict for operands beyond what `operands` describes (default deny).
    pub extra_operands: Verdict,
    /// Argument patterns.
    pub args: Vec<ArgRule>,
    /// Subcommands by name; when non-empty the first operand selects one (read from the
    /// binary form, each is decoded when a command first names it).
    pub subcommands: super::program_map::ProgramMap,
    /// The verdict for a subcommand not listed.
    pub unknown_subcommand: Verdict,
    /// Options that take two values (`jq --arg NAME VALUE`): the first is text, the second
    /// has the option's kind.
    pub options_with_two_values: BTreeSet<String>,
    /// The rule for the arguments after `--`, which the program passes to another one
    /// (`cargo fmt -- FILES` to rustfmt, `cargo test -- ARGS` to the test harness).
    pub after_double_dash: Option<Box<ProgramRule>>,
    /// Why the program needs no option allowlist, if the policy says so.
    pub no_option_allowlist: Option<String>,
    /// `allow_options` and `deny_options` name every option of the program (a glob that
    /// expands to an option-like file name can only be an allowed option, or an error).
    pub options_complete: bool,
    /// Its behaviour is defined by workspace files (`cargo build`, `npm test`, `pytest`): it
    /// runs only under the kernel sandbox.
    pub runs_workspace_code: bool,
    /// It only writes into its `path-write` paths (`tee`): a device may be one.
    pub opens_for_writing: bool,
    /// What this rule, written with `replace = true`, drops of the included rule it replaces
    /// (its denials that this one neither refuses nor checks): `lint-replaced-rule`.
    pub replaced: Vec<String>,
    /// git: repositories besides the workspace's own that it may use.
    pub repositories: Vec<PathPattern>,
    /// Options of a `single_dash_long` program whose value may be glued (`-Iinclude`).
    pub glued_options: BTreeSet<String>,
    /// A first argument without a leading `-` is old-style options (GNU tar): refused.
    pub old_style_options: bool,
    /// Options that make the values of `path-read` options written too (`tar -c`).
    pub value_write_options: BTreeSet<String>,
    /// The target may be a directory the other operands are written into (`cp`, `mv`).
    pub target_directory: bool,
}

/// A command in a policy's `[examples]` with the verdict it must get.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Example {
    /// The command.
    pub command: String,
    /// The verdict it must get.
    pub expect: Verdict,
    /// Where it is written.
    pub rule: RuleRef,
}

/// A compiled policy. Cheap to share (`Send + Sync`); evaluation never mutates it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Policy {
    /// `[policy] name`.
    pub name: String,
    /// `[policy] description`.
    pub description: String,
    /// The verdict for anything no rule names.
    pub default: Setting,
    /// Message for default refusals.
    pub default_message: Option<String>,
    /// `[limits]`.
    pub limits: Limits,
    /// `[shell]`.
    pub shell: ShellRules,
    /// `[paths]`.
    pub paths: PathRules,
    /// `[redirects]`.
    pub redirects: RedirectRules,
    /// `[env]`.
    pub env: EnvRules,
    /// `[wrappers]`.
    pub wrappers: WrapperRules,
    /// `[programs.*]` (a map read from the binary form decodes each rule at first use).
    pub programs: super::program_map::ProgramMap,
    /// `[examples]` of the top-level file.
    pub examples: Vec<Example>,
    /// The `[redact]` settings of the policy and its includes, merged (validated at load).
    /// Not part of the binary form: a policy with `[redact]` is never cached (see
    /// [`super::binary`]), so nothing is lost by skipping it.
    #[serde(skip)]
    pub redact: Option<crate::redact::RedactConfig>,
    /// `[sandbox]`.
    pub sandbox: super::sandbox::SandboxPolicy,
    /// `[snapshots]` (boxed: loading runs on small stacks too).
    pub snapshots: Box<super::snapshots::SnapshotSettings>,
    /// The files this policy was loaded from, includes first.
    pub sources: Vec<String>,
}

/// The patterns compiled from binary forms on this thread, by text: a policy repeats them
/// (developer.toml writes one option-value regex 32 times), and each distinct one is compiled
/// once, as loading does; the clones share the automaton. It holds what the policies read
/// on the thread use, no more (a pattern is the same automaton whichever policy holds it).
pub(super) mod read_cache {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use globset::GlobMatcher;
    use regex::Regex;

    thread_local! {
        static REGEXES: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
        static GLOBS: RefCell<HashMap<(String, bool), GlobMatcher>> = RefCell::new(HashMap::new());
    }

    /// `Regex::new(text)`, once per distinct text while a form is read.
    pub(crate) fn regex(text: &str) -> Result<Regex, regex::Error> {
        if let Some(re) = REGEXES.with(|m| m.borrow().get(text).cloned()) {
            return Ok(re);
        }
        let re = Regex::new(text)?;
        REGEXES.with(|m| m.borrow_mut().insert(text.to_string(), re.clone()));
        Ok(re)
    }

    /// The glob matcher of `text` with `literal_separator`, once per distinct pair.
    pub(crate) fn glob(text: &str, sep: bool) -> Result<GlobMatcher, globset::Error> {
        let key = (text.to_string(), sep);
        if let Some(g) = GLOBS.with(|m| m.borrow().get(&key).cloned()) {
            return Ok(g);
        }
        let g = globset::GlobBuilder::new(text)
            .literal_separator(sep)
            .build()?
            .compile_matcher();
        GLOBS.with(|m| m.borrow_mut().insert(key, g.clone()));
        Ok(g)
    }
}

/// Decodes a value of a policy's binary form (a whole policy, or one program rule read
/// later), sharing compiled patterns with what was read before on this thread.
pub(super) fn read_with_cache<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
) -> Result<T, postcard::Error> {
    postcard::from_bytes(bytes)
}

/// A regex in the binary form of a policy: its pattern, compiled again when read. Loading
/// compiles every pattern with `Regex::new`, so the pattern is all there is to it.
mod regex_text {
    use regex::Regex;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(re: &Regex, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(re.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Regex, D::Error> {
        let text = String::deserialize(d)?;
        super::read_cache::regex(&text).map_err(D::Error::custom)
    }
}

/// [`regex_text`] for a map of regexes.
mod regex_map {
    use std::collections::BTreeMap;

    use regex::Regex;
    use serde::{de::Error, Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        map: &BTreeMap<String, Regex>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let texts: BTreeMap<&str, &str> =
            map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        texts.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Regex>, D::Error> {
        let texts = BTreeMap::<String, String>::deserialize(d)?;
        texts
            .into_iter()
            .map(|(k, v)| {
                super::read_cache::regex(&v)
                    .map(|re| (k, re))
                    .map_err(D::Error::custom)
            })
            .collect()
    }
}

/// A glob in the binary form of a policy: `(pattern, literal_separator)` for a matcher, or
/// the exact text; a matcher is compiled again when read, with the option it was built with.
impl Serialize for Glob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Glob::Exact(t) => (t.as_str(), None::<bool>).serialize(s),
            Glob::Matcher(g) => (g.text.as_str(), Some(g.literal_separator)).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Glob, D::Error> {
        let (text, sep) = <(String, Option<bool>)>::deserialize(d)?;
        Ok(match sep {
            None => Glob::Exact(text),
            Some(literal_separator) => Glob::Matcher(LazyGlob {
                text,
                literal_separator,
                matcher: std::sync::OnceLock::new(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;
    use globset::GlobBuilder;

    /// A pattern without glob syntax is matched as its text: the same answer globset gives,
    /// for names and paths, with and without `literal_separator`.
    #[test]
    fn an_exact_glob_answers_as_globset_does() {
        let literals = [
            "PATH",
            "LC_ALL",
            "a-b!c",
            "dev/null",
            ".git",
            ".cargo/config.toml",
            "x y",
            "é",
            "!x",
            "a.b",
            "",
            "-",
        ];
        let candidates = [
            "PATH",
            "path",
            "PATH ",
            "PATHX",
            "XPATH",
            "LC_ALL",
            "a-b!c",
            "dev/null",
            "dev//null",
            "./dev/null",
            "dev/null/",
            ".git",
            "a/.git",
            ".gitx",
            ".cargo/config.toml",
            "x y",
            "é",
            "e",
            "!x",
            "x",
            "a.b",
            "aXb",
            "",
            "-",
            "/dev/null",
        ];
        for lit in literals {
            assert!(!lit.contains(Glob::SYNTAX));
            let exact = Glob::Exact(lit.to_string());
            for sep in [false, true] {
                let g = GlobBuilder::new(lit)
                    .literal_separator(sep)
                    .build()
                    .expect("a literal compiles")
                    .compile_matcher();
                for c in candidates.iter().chain(&literals) {
                    assert_eq!(exact.is_match(c), g.is_match(c), "{lit:?} on {c:?}");
                }
            }
        }
    }
}
