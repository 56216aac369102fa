//! shellgate's own intermediate representation of a bash command.
//!
//! These types are independent of the parser: the evaluator only ever sees them, never a
//! tree-sitter node, so the parser can be replaced and its quirks stay behind the lowering.
//!
//! Every node carries a [`Span`]: byte offsets into the *top-level* command text given to
//! [`crate::shell::parse`], even for nodes inside nested scripts (substitutions, here-doc bodies).
//! Payloads re-parsed from a string (`bash -c '...'`, `eval ...`) are parsed on their own and
//! carry spans into that payload string; the evaluator maps them back to the wrapper's word.

use std::fmt;

/// A half-open byte range `start..end` into the command text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// Shift both ends by `offset` (used to map a nested payload back into its parent).
    pub fn offset(self, offset: usize) -> Span {
        Span::new(self.start + offset, self.end + offset)
    }

    /// The range, for slicing.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A sequence of commands: the whole input, a function body, a substitution, a here-doc body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// The commands in source order.
    pub commands: Vec<Command>,
    /// The text this script covers.
    pub span: Span,
}

/// One command of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// A simple command (possibly only assignments and/or redirections, with no program).
    Simple(SimpleCommand),
    /// A compound command: subshell, group, loop, conditional, `[[ ]]`, `(( ))`.
    Compound(Compound),
    /// A function definition. Its body is *not* run by the definition, but it is still
    /// checked, and defining a function is itself a session-state change.
    Function(FunctionDef),
}

impl Command {
    /// The span of the whole command.
    pub fn span(&self) -> Span {
        match self {
            Command::Simple(c) => c.span,
            Command::Compound(c) => c.span,
            Command::Function(f) => f.span,
        }
    }

    /// How this command is joined to the one before it in its script.
    pub fn join(&self) -> Join {
        match self {
            Command::Simple(c) => c.join,
            Command::Compound(c) => c.join,
            Command::Function(f) => f.join,
        }
    }

    pub(crate) fn set_join(&mut self, join: Join) {
        match self {
            Command::Simple(c) => c.join = join,
            Command::Compound(c) => c.join = join,
            Command::Function(f) => f.join = join,
        }
    }
}

/// How a command is joined to the command before it in its script's list of commands.
///
/// bash's `&&` and `||` have equal precedence and group to the left, so a script's commands
/// with their joins are its and-or lists as written: in `a && b || c`, `b` runs when `a`
/// succeeded, and `c` when `a && b` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Join {
    /// The first command, or one after `;`, `&` or a newline: it runs whatever came before.
    #[default]
    Seq,
    /// After `&&`: runs when the list before it succeeded.
    And,
    /// After `||`: runs when the list before it failed.
    Or,
    /// After `|` or `|&`: the next stage of the same pipeline.
    Pipe,
}

/// How a simple command is prefixed by a shell keyword, which tree-sitter-bash may read as
/// an ordinary program name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyword {
    /// `time [-p] cmd`: runs `cmd` and reports timing.
    Time,
    /// `! cmd`: runs `cmd` and negates its status.
    Bang,
    /// `coproc [NAME] cmd`: runs `cmd` asynchronously with pipes (and assigns `NAME`).
    Coproc,
}

/// `[assignments] [program [args]] [redirections]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Whole command, including assignments and redirections.
    pub span: Span,
    /// `NAME=value` prefixes (they apply to the program's environment, or to the shell
    /// when there is no program).
    pub assignments: Vec<Assignment>,
    /// Program name followed by its arguments. Empty for a bare assignment or redirection.
    pub words: Vec<Word>,
    /// Redirections, in source order.
    pub redirects: Vec<Redirect>,
    /// Keywords that prefixed this command (`time`, `!`, `coproc`), outermost first.
    pub keywords: Vec<Keyword>,
    /// Whether the command runs in the background (`cmd &`).
    pub background: bool,
    /// Whether the command is a stage of a pipeline after the first (reads a pipe on stdin).
    pub piped_input: bool,
    /// How it is joined to the command before it.
    pub join: Join,
}

impl SimpleCommand {
    /// The program word, if any.
    pub fn program(&self) -> Option<&Word> {
        self.words.first()
    }

    /// The argument words after the program.
    pub fn args(&self) -> &[Word] {
        self.words.get(1..).unwrap_or(&[])
    }
}

/// What kind of compound command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompoundKind {
    /// `( ... )`
    Subshell,
    /// `{ ...; }`
    Group,
    /// `if`/`elif`/`else`
    If,
    /// `for NAME in WORDS; do ...; done` (the loop variable is an assignment).
    For,
    /// `for (( ; ; ))`
    ArithFor,
    /// `select NAME in WORDS; do ...; done`
    Select,
    /// `while ...; do ...; done`
    While,
    /// `until ...; do ...; done`
    Until,
    /// `case WORD in PATTERN) ... ;; esac`
    Case,
    /// `[[ ... ]]`
    Test,
    /// `(( ... ))`
    Arithmetic,
}

/// A compound command. Everything it runs is in `body`; everything it expands is in `words`,
/// `arithmetic` and `assignments`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compound {
    /// What it is.
    pub kind: CompoundKind,
    /// Whole command.
    pub span: Span,
    /// The commands it contains (conditions and bodies alike), in source order.
    pub body: Script,
    /// Words it expands: a `for`/`select` list, a `case` subject and patterns, `[[ ]]` operands.
    pub words: Vec<Word>,
    /// Arithmetic it evaluates: `(( ))`, `for (( ))`, and `[[ ]]` operands of `-eq` etc.
    pub arithmetic: Vec<Arithmetic>,
    /// Variables it assigns: the `for`/`select` loop variable.
    pub assignments: Vec<Assignment>,
    /// Operands bash resolves as variable names when it runs (`[[ -v NAME ]]`, `[[ -R NAME ]]`):
    /// a subscript in the name is evaluated as arithmetic. Also in `words`.
    pub names: Vec<Word>,
    /// Redirections applied to the whole compound command.
    pub redirects: Vec<Redirect>,
    /// Whether it runs in the background.
    pub background: bool,
    /// Keywords that prefixed it (`time`, `!`, `coproc`).
    pub keywords: Vec<Keyword>,
    /// How it is joined to the command before it.
    pub join: Join,
}

/// `name() { ... }` or `function name { ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDef {
    /// The function name, as written (static, or the parse is refused).
    pub name: String,
    /// Span of the name.
    pub name_span: Span,
    /// Whole definition.
    pub span: Span,
    /// The body (checked like any other code).
    pub body: Script,
    /// Redirections attached to the definition (applied each time it runs).
    pub redirects: Vec<Redirect>,
    /// How it is joined to the command before it.
    pub join: Join,
}

/// `NAME=value`, `NAME+=value`, `NAME[sub]=value`, `NAME=(a b c)`, or a loop variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable name (without subscript).
    pub name: String,
    /// Span of the name.
    pub name_span: Span,
    /// Whole assignment.
    pub span: Span,
    /// The subscript of an array element assignment (`a[i]=x`): evaluated as arithmetic for
    /// indexed arrays, so it can run substitutions.
    pub subscript: Option<Word>,
    /// The value; `None` for a loop variable or a bare name.
    pub value: Option<Word>,
    /// Elements of an array value `NAME=(a b c)`.
    pub array: Vec<Word>,
    /// `+=`
    pub append: bool,
}

/// The operator of a redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`
    Write,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `<>`
    ReadWrite,
    /// `&>` (and `>&WORD` where WORD is not a number or `-`)
    WriteAll,
    /// `&>>`
    AppendAll,
    /// `>&N`, `N>&M`, `>&-`
    DupOut,
    /// `<&N`, `<&-`
    DupIn,
    /// `<<<`
    HereString,
    /// `<<` and `<<-`
    HereDoc,
}

impl RedirectOp {
    /// Whether the target is a file that is opened for writing.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirectOp::Write
                | RedirectOp::Append
                | RedirectOp::Clobber
                | RedirectOp::ReadWrite
                | RedirectOp::WriteAll
                | RedirectOp::AppendAll
        )
    }

    /// Whether the target is a file that is opened for reading.
    pub fn reads(self) -> bool {
        matches!(self, RedirectOp::Read | RedirectOp::ReadWrite)
    }
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// Whole redirection.
    pub span: Span,
    /// The explicit file descriptor (`2>`), if any.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirectOp,
    /// The target word: a file, an fd number or `-` for duplications, the string of a
    /// here-string, the delimiter of a here-doc.
    pub target: Word,
    /// The body of a here-doc.
    pub heredoc: Option<HereDoc>,
}

/// The body of a here-document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HereDoc {
    /// Whether the delimiter was quoted (then the body is literal text and nothing expands).
    pub quoted: bool,
    /// The body. When the delimiter is unquoted it contains the expansions bash performs.
    pub body: Word,
}

/// A shell word: one argument after quote removal, made of parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The word as written.
    pub span: Span,
    /// Its parts, in order.
    pub parts: Vec<WordPart>,
}

/// Why a word has no static value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dynamic {
    /// `$x`, `${x}`, `${x:-...}`, `$@`, ...
    Parameter,
    /// `$(...)` or backticks.
    CommandSubstitution,
    /// `<(...)` or `>(...)`.
    ProcessSubstitution,
    /// `$((...))`.
    Arithmetic,
    /// An unquoted `*`, `?` or `[...]`, or an extended glob.
    Glob,
    /// `{a,b}` or `{1..3}`.
    Brace,
    /// A leading `~` or `~user`.
    Tilde,
}

impl fmt::Display for Dynamic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dynamic::Parameter => "a parameter expansion",
            Dynamic::CommandSubstitution => "a command substitution",
            Dynamic::ProcessSubstitution => "a process substitution",
            Dynamic::Arithmetic => "an arithmetic expansion",
            Dynamic::Glob => "a glob",
            Dynamic::Brace => "a brace expansion",
            Dynamic::Tilde => "a tilde expansion",
        })
    }
}

/// One part of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordPart {
    /// Unquoted literal text, backslash escapes already removed.
    Literal(String),
    /// `'...'`: the text between the quotes.
    SingleQuoted(String),
    /// `$'...'`: the decoded text.
    AnsiC(String),
    /// `"..."`: its parts (literals and expansions; no globs, braces or tildes inside).
    DoubleQuoted(Vec<WordPart>),
    /// A parameter expansion.
    Param(Param),
    /// `$(...)` or `` `...` ``.
    CommandSubst(Script),
    /// `<(...)` (`output == false`) or `>(...)` (`output == true`).
    ProcessSubst {
        /// Whether it is `>(...)`.
        output: bool,
        /// The commands it runs.
        script: Script,
    },
    /// `$((...))`.
    Arithmetic(Arithmetic),
    /// An unquoted glob pattern piece (`*`, `?`, `[...]`, `+(...)`): the pattern text.
    Glob(String),
    /// An unquoted brace expansion `{a,b}` / `{1..3}`: the text as written.
    Brace(String),
    /// A leading tilde prefix: `~` (empty user) or `~user`: the user.
    Tilde(String),
}

/// A parameter expansion: `$x`, `${x}`, `${x:-word}`, `${a[i]}`, `${!x}`, `${x@P}`, `$1`, `$@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The parameter name or special parameter (`HOME`, `1`, `@`, `?`, ...).
    pub name: String,
    /// Span of the whole expansion.
    pub span: Span,
    /// `${!x}` / `${!x[@]}` indirection (the *value* of `x` names what is expanded, which can
    /// evaluate an attacker-chosen subscript). Not set for `${!prefix*}` name listing.
    pub indirect: bool,
    /// The operator, as written, if any: `:-`, `-`, `:=`, `=`, `:?`, `?`, `:+`, `+`, `#`, `##`,
    /// `%`, `%%`, `/`, `//`, `/#`, `/%`, `^`, `^^`, `,`, `,,`, `:` (substring), `@P`, `@Q`, ...
    pub operator: Option<String>,
    /// Subscript of `${a[...]}` (arithmetic for indexed arrays).
    pub subscript: Option<Word>,
    /// Words inside the expansion (defaults, patterns, replacements, substring offsets):
    /// expanded by bash, so substitutions in them run.
    pub words: Vec<Word>,
    /// Arithmetic it evaluates: substring offset and length, the subscript.
    pub arithmetic: Vec<Arithmetic>,
}

impl Param {
    /// Whether this expansion assigns the variable (`${x:=v}`, `${x=v}`).
    pub fn assigns(&self) -> bool {
        matches!(self.operator.as_deref(), Some(":=") | Some("="))
    }
}

/// An arithmetic expression: `$((...))`, `((...))`, `for ((...))`, a subscript, a `[[ -eq ]]`
/// operand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arithmetic {
    /// The expression.
    pub span: Span,
    /// Variables it reads by bare name or `$name` (bash evaluates their *values* as
    /// arithmetic, recursively, and a value such as `a[$(cmd)]` runs `cmd`).
    pub variables: Vec<String>,
    /// Variables it assigns (`x=1`, `x+=1`, `x++`, `--x`).
    pub assigns: Vec<String>,
    /// Substitutions and expansions inside it (`$(...)`, `${...}`), as words.
    pub words: Vec<Word>,
}

impl Word {
    /// The word's value after quote removal, if it has one without any expansion.
    pub fn static_value(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            if !push_static(part, &mut out) {
                return None;
            }
        }
        Some(out)
    }

    /// Why this word has no static value (empty when it has one).
    pub fn dynamic_reasons(&self) -> Vec<Dynamic> {
        let mut out = Vec::new();
        for part in &self.parts {
            collect_dynamic(part, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// The word as a pattern when the only non-static parts are globs: literal text with glob
    /// metacharacters of literal parts backslash-escaped, and glob parts kept as written.
    /// `None` when anything else is dynamic.
    pub fn glob_pattern(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                WordPart::Glob(g) => out.push_str(g),
                other => {
                    let mut s = String::new();
                    if !push_static(other, &mut s) {
                        return None;
                    }
                    for c in s.chars() {
                        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '{' | '}') {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                }
            }
        }
        Some(out)
    }

    /// The literal text before the first dynamic part (for a tilde, the part after `~`
    /// is still returned by the caller's own handling).
    pub fn static_prefix(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if !push_static(part, &mut out) {
                break;
            }
        }
        out
    }

    /// Every script nested in this word (substitutions, process substitutions, including
    /// those inside parameter expansions and arithmetic), outermost first.
    pub fn nested_scripts(&self) -> Vec<&Script> {
        // An explicit stack (parts still to visit, next on top): the walk is as deep as the
        // word's nesting and must not use the caller's stack for it.
        let mut out = Vec::new();
        let mut todo: Vec<&WordPart> = self.parts.iter().rev().collect();
        while let Some(part) = todo.pop() {
            match part {
                WordPart::DoubleQuoted(parts) => todo.extend(parts.iter().rev()),
                WordPart::CommandSubst(s) | WordPart::ProcessSubst { script: s, .. } => out.push(s),
                WordPart::Param(p) => {
                    let words = p.words.iter().chain(p.subscript.iter());
                    let arith = p.arithmetic.iter().flat_map(|a| a.words.iter());
                    let inner: Vec<&Word> = words.chain(arith).collect();
                    todo.extend(inner.iter().rev().flat_map(|w| w.parts.iter().rev()));
                }
                WordPart::Arithmetic(a) => {
                    todo.extend(a.words.iter().rev().flat_map(|w| w.parts.iter().rev()))
                }
                _ => {}
            }
        }
        out
    }
}

fn push_static(part: &WordPart, out: &mut String) -> bool {
    match part {
        WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
            out.push_str(s);
            true
        }
        WordPart::DoubleQuoted(parts) => parts.iter().all(|p| push_static(p, out)),
        _ => false,
    }
}

fn collect_dynamic(part: &WordPart, out: &mut Vec<Dynamic>) {
    match part {
        WordPart::Literal(_) | WordPart::SingleQuoted(_) | WordPart::AnsiC(_) => {}
        WordPart::DoubleQuoted(parts) => parts.iter().for_each(|p| collect_dynamic(p, out)),
        WordPart::Param(_) => out.push(Dynamic::Parameter),
        WordPart::CommandSubst(_) => out.push(Dynamic::CommandSubstitution),
        WordPart::ProcessSubst { .. } => out.push(Dynamic::ProcessSubstitution),
        WordPart::Arithmetic(_) => out.push(Dynamic::Arithmetic),
        WordPart::Glob(_) => out.push(Dynamic::Glob),
        WordPart::Brace(_) => out.push(Dynamic::Brace),
        WordPart::Tilde(_) => out.push(Dynamic::Tilde),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> WordPart {
        WordPart::Literal(s.to_string())
    }

    #[test]
    fn static_value_concatenates_quoted_parts() {
        let w = Word {
            span: Span::new(0, 6),
            parts: vec![
                lit("r"),
                WordPart::SingleQuoted("m".into()),
                WordPart::DoubleQuoted(vec![lit(" x")]),
            ],
        };
        assert_eq!(w.static_value().as_deref(), Some("rm x"));
        assert!(w.dynamic_reasons().is_empty());
    }

    #[test]
    fn glob_makes_word_dynamic_but_patterned() {
        let w = Word {
            span: Span::new(0, 5),
            parts: vec![lit("a[b"), WordPart::Glob("*".into()), lit(".rs")],
        };
        assert_eq!(w.static_value(), None);
        assert_eq!(w.dynamic_reasons(), vec![Dynamic::Glob]);
        assert_eq!(w.glob_pattern().as_deref(), Some("a\\[b*.rs"));
        assert_eq!(w.static_prefix(), "a[b");
    }
}
