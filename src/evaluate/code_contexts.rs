//! Every place bash evaluates the *value* of an expansion as code, checked as one property.
//!
//! Bash re-reads what an expansion produced in more places than `eval`: arithmetic (in every
//! form) parses the expanded text as an expression, a name in it is looked up and *its* value
//! evaluated in turn, and an array subscript in any of those is expanded again, so
//! `$(( $(cat f) ))` runs whatever `a[$(cmd)]` the file holds. Names resolved when the command
//! runs (`printf -v`, `read`, `unset`, `[[ -v ]]`, `declare`) evaluate their subscripts the
//! same way, and some strings are run later (`trap`, `mapfile -C`, `compgen -C`, prompts).
//! docs/parser.md has the table of contexts, each proven against bash by
//! `tests/code_contexts.rs`.
//!
//! The rule, one for all of them: only a value the evaluator can prove inert may flow there:
//! literal text made of numbers, operators and names proven to hold integers (a `for` loop
//! variable bound to literal integers, the variable an arithmetic `for` starts at a literal),
//! `$?`, `$#`, `$$`, `$!`, a length `${#x}`, or a nested `$((..))` (its result is a number).
//! Anything else there (a command substitution, a parameter of unknown value, a glob, a name
//! whose value is not proven) is `code-from-data`, with the verdict of
//! `[shell] arithmetic_variables`.

use super::walk::is_identifier;
use super::Eval;
use crate::codes::ReasonCode;
use crate::shell::{Arithmetic, Assignment, Compound, CompoundKind, Param, Span, Word, WordPart};

/// Special variables whose *assignment* evaluates the value as arithmetic (bash 5.2,
/// `tests/code_contexts.rs`).
const ARITHMETIC_ON_ASSIGN: &[&str] = &["RANDOM", "SRANDOM", "OPTIND", "HISTCMD"];

/// Prompt strings: bash decodes their escapes, then expands `$(..)` in the result.
const PROMPTS: &[&str] = &["PS0", "PS1", "PS2", "PS4"];

/// The evaluator's knowledge for this property while it walks.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The text the spans of the script being checked point into.
    source: String,
    /// Names proven to hold an integer where the walk is (arithmetic `for` variables).
    int_names: Vec<String>,
    /// Names this input gave the integer attribute (`declare -i n`): later assignments to
    /// them are arithmetic.
    int_attr: Vec<String>,
    /// Names this input made namerefs (`declare -n r`): later assignments name a variable.
    namerefs: Vec<String>,
}

impl State {
    pub(super) fn new(source: &str) -> State {
        State {
            source: source.to_string(),
            ..State::default()
        }
    }

    /// Spans now point into `text` (a re-parsed payload); returns what to restore.
    pub(super) fn enter_source(&mut self, text: &str) -> String {
        std::mem::replace(&mut self.source, text.to_string())
    }

    pub(super) fn leave_source(&mut self, saved: String) {
        self.source = saved;
    }

    fn text(&self, span: Span) -> Option<&str> {
        self.source.get(span.range())
    }
}

/// Options of `wc` that print one count, and nothing else when it reads stdin.
const WC_COUNTS: &[&str] = &[
    "-l",
    "-c",
    "-w",
    "-m",
    "-L",
    "--lines",
    "--bytes",
    "--words",
    "--chars",
    "--max-line-length",
];

/// `$(wc -l < f)`, `$(ls | wc -l)`: one pipeline (or one command) whose last stage is `wc`
/// with one counting option and no operand, so what the substitution captures is one
/// number. Its other stages write into the pipe, not into the substitution, and are checked
/// as commands in their own right.
fn counts_lines(script: &crate::shell::Script) -> bool {
    use crate::shell::{Command, Join, RedirectOp};
    let commands = &script.commands;
    if commands.is_empty() || commands.iter().skip(1).any(|c| c.join() != Join::Pipe) {
        return false;
    }
    let Some(Command::Simple(last)) = commands.last() else {
        return false;
    };
    let words: Option<Vec<String>> = last.words.iter().map(Word::static_value).collect();
    let Some(words) = words else { return false };
    let reads_only = last
        .redirects
        .iter()
        .all(|r| r.op == RedirectOp::Read && r.fd.is_none_or(|fd| fd == 0));
    matches!(words.as_slice(), [wc, opt] if wc == "wc" && WC_COUNTS.contains(&opt.as_str()))
        && reads_only
        && last.assignments.is_empty()
        && last.keywords.is_empty()
        && !last.background
}

/// `-12`, `0`, `42`: a literal integer.
fn is_int_literal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

impl Eval<'_> {
    fn code_from_data(&mut self, message: String, span: Span) {
        let s = self.policy.shell.arithmetic_variables.clone();
        self.setting(ReasonCode::CodeFromData, &s, message, span);
    }

    /// Whether `name` is proven to hold an integer here.
    fn proven_int(&self, name: &str) -> bool {
        if self.code.int_names.iter().any(|n| n == name) {
            return true;
        }
        self.bindings
            .iter()
            .rev()
            .find(|b| b.name == name)
            .is_some_and(|b| {
                b.values
                    .iter()
                    .all(|v| v.static_value().is_some_and(|t| is_int_literal(&t)))
            })
    }

    /// Literal text that bash evaluates as arithmetic: numbers, operators, and names proven
    /// to hold integers. `Err` names the first thing that is not proven inert.
    fn inert_text(&self, text: &str) -> Result<(), String> {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                // A number constant: `42`, `0x1f`, `16#ff`, `64#@_`.
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'#' | b'@' | b'_'))
                {
                    i += 1;
                }
            } else if c == b'_' || c.is_ascii_alphabetic() {
                let s = i;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let name = &text[s..i];
                if !self.proven_int(name) {
                    return Err(format!(
                        "the name `{name}`, whose value is not known to be a number"
                    ));
                }
            } else if c.is_ascii_whitespace() || b"+-*/%<>=!&|^~?:(),".contains(&c) {
                i += 1;
            } else if c == 0 {
                // An expansion in a text where expansions are marked (`x=( [$i]=v )`).
                return Err("an expansion".into());
            } else {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(format!("text holding `{ch}`"));
            }
        }
        Ok(())
    }

    fn inert_param(&self, p: &Param) -> Result<(), String> {
        // `${#x}`, `${#a[@]}`: a length is a number (a subscript is checked where it is).
        if p.operator.as_deref() == Some("#") && p.words.is_empty() && !p.indirect {
            return Ok(());
        }
        let plain =
            p.operator.is_none() && !p.indirect && p.subscript.is_none() && p.words.is_empty();
        if plain && (matches!(p.name.as_str(), "?" | "#" | "$" | "!") || self.proven_int(&p.name)) {
            return Ok(());
        }
        Err(format!("the value of `${}`", p.name))
    }

    /// `$(echo 2)`: one `echo` of literal words that are inert text (no option, so no
    /// escape is decoded; the text holds no backslash either way).
    fn echoes_inert(&self, script: &crate::shell::Script) -> bool {
        if counts_lines(script) {
            return true;
        }
        let [crate::shell::Command::Simple(c)] = script.commands.as_slice() else {
            return false;
        };
        if !c.assignments.is_empty() || !c.redirects.is_empty() || !c.keywords.is_empty() {
            return false;
        }
        let Some(texts) = c
            .words
            .iter()
            .map(Word::static_value)
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        match texts.split_first() {
            Some((program, args)) if program == "echo" => args
                .iter()
                .all(|a| !a.starts_with('-') && self.inert_text(a).is_ok()),
            _ => false,
        }
    }

    fn inert_parts(&self, parts: &[WordPart]) -> Result<(), String> {
        for part in parts {
            match part {
                WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
                    self.inert_text(s)?
                }
                WordPart::DoubleQuoted(inner) => self.inert_parts(inner)?,
                // Its result is a number; its own text is checked where it is.
                WordPart::Arithmetic(_) => {}
                WordPart::Param(p) => self.inert_param(p)?,
                WordPart::CommandSubst(script) if self.echoes_inert(script) => {}
                WordPart::CommandSubst(_) => {
                    return Err("the output of a command substitution".into())
                }
                WordPart::ProcessSubst { .. } => return Err("a process substitution".into()),
                WordPart::Glob(_) => return Err("a glob's matches".into()),
                WordPart::Brace(_) => return Err("a brace expansion".into()),
                WordPart::Tilde(_) => return Err("a tilde expansion".into()),
            }
        }
        Ok(())
    }

    /// A word whose value bash evaluates as an arithmetic expression.
    pub(super) fn arith_word(&mut self, w: &Word, what: &str) {
        if let Err(why) = self.inert_parts(&w.parts) {
            self.code_from_data(
                format!(
                    "{what} evaluates {why} as arithmetic, where a value like `a[$(cmd)]` runs cmd"
                ),
                w.span,
            );
        }
    }

    /// An arithmetic expression, in any form: `$((..))`, `$[..]`, `((..))`, `for ((..))`,
    /// the `[[ -eq ]]` operands, `${x:off:len}`.
    pub(super) fn arith_inert(&mut self, a: &Arithmetic) {
        if let Some(v) = a
            .variables
            .iter()
            .find(|v| is_identifier(v) && !self.proven_int(v))
        {
            let message = format!(
                "arithmetic reads `{v}`, whose value bash evaluates as an expression (a value like `a[$(cmd)]` runs cmd)"
            );
            self.code_from_data(message, a.span);
            return;
        }
        for w in &a.words {
            if let Err(why) = self.inert_parts(&w.parts) {
                let message = format!(
                    "arithmetic evaluates {why} as an expression (a value like `a[$(cmd)]` runs cmd)"
                );
                self.code_from_data(message, w.span);
                return;
            }
        }
    }

    /// An array subscript (`${a[..]}`, `a[..]=`, `unset 'a[..]'`): arithmetic for an indexed
    /// array, expanded and evaluated again.
    pub(super) fn subscript_inert(&mut self, sub: &Word) {
        if matches!(sub.static_value().as_deref(), Some("@" | "*")) {
            return;
        }
        self.arith_word(sub, "an array subscript");
    }

    /// The subscript of `x=( [sub]=v )` (its text, expansions as NUL).
    pub(super) fn array_subscript_text(&mut self, sub: &str, span: Span) {
        self.subscript_text_inert(sub, span);
    }

    /// The subscript text of `x=( [sub]=v )` or of a name in a string.
    fn subscript_text_inert(&mut self, sub: &str, span: Span) {
        if sub == "@" || sub == "*" {
            return;
        }
        if let Err(why) = self.inert_text(sub) {
            self.code_from_data(
                format!("an array subscript evaluates {why} as arithmetic, where `$(cmd)` runs"),
                span,
            );
        }
    }

    /// A word bash uses as a variable name when it runs (`printf -v`, `read`, `unset`,
    /// `[[ -v ]]`, `declare`): a plain name, or a name with a subscript proven inert.
    pub(super) fn name_inert(&mut self, w: &Word, what: &str) {
        match w.static_value() {
            Some(t) => self.name_text_inert(&t, w.span, what),
            None => self.code_from_data(
                format!("{what} a variable whose name is only known at run time (a name like `a[$(cmd)]` runs cmd)"),
                w.span,
            ),
        }
    }

    fn name_text_inert(&mut self, t: &str, span: Span, what: &str) {
        if is_identifier(t) {
            return;
        }
        if let Some((name, rest)) = t.split_once('[') {
            if let Some(sub) = rest.strip_suffix(']') {
                if is_identifier(name) {
                    self.subscript_text_inert(sub, span);
                    return;
                }
            }
        }
        self.code_from_data(
            format!("{what} `{t}`, which is not a plain variable name"),
            span,
        );
    }

    /// The checks of a compound command that belong to this property; returns the names it
    /// proves to hold integers inside it (to pop after its body).
    pub(super) fn compound_contexts(&mut self, c: &Compound) -> usize {
        for w in &c.names {
            self.name_inert(w, "`[[ -v ]]` resolves");
        }
        if c.kind != CompoundKind::ArithFor {
            return 0;
        }
        let Some(init) = c.arithmetic.first() else {
            return 0;
        };
        let Some(text) = self.code.text(init.span) else {
            return 0;
        };
        let init_text = text.split(';').next().unwrap_or("");
        let mut names = Vec::new();
        for piece in init_text.split(',') {
            let Some((name, value)) = piece.split_once('=') else {
                return 0;
            };
            let (name, value) = (name.trim(), value.trim());
            if !is_identifier(name) || !is_int_literal(value) {
                return 0;
            }
            names.push(name.to_string());
        }
        // The body must leave them alone (an assignment there could plant `a[$(cmd)]`).
        names.retain(|n| !super::bindings::may_assign(&c.body, n));
        let n = names.len();
        self.code.int_names.extend(names);
        n
    }

    pub(super) fn pop_int_names(&mut self, n: usize) {
        let keep = self.code.int_names.len().saturating_sub(n);
        self.code.int_names.truncate(keep);
    }

    /// An assignment whose value bash evaluates: to a variable with the integer attribute,
    /// to `RANDOM`/`OPTIND`/..., to a nameref, to a prompt string, to `PROMPT_COMMAND`.
    pub(super) fn assignment_contexts(&mut self, a: &Assignment) {
        let name = a.name.as_str();
        let values = a.value.iter().chain(&a.array);
        if ARITHMETIC_ON_ASSIGN.contains(&name) || self.code.int_attr.iter().any(|n| n == name) {
            for w in values {
                self.arith_word(w, &format!("assigning `{name}`"));
            }
        } else if self.code.namerefs.iter().any(|n| n == name) {
            for w in values {
                self.name_inert(
                    w,
                    &format!("assigning the nameref `{name}` makes it refer to"),
                );
            }
        } else if PROMPTS.contains(&name) {
            for w in values {
                let inert = w
                    .static_value()
                    .is_some_and(|t| !t.contains(['$', '`', '\\']));
                if !inert {
                    self.code_from_data(
                        format!("`{name}` is expanded again when the prompt is shown (`$(cmd)` in it runs, escapes included)"),
                        w.span,
                    );
                }
            }
        } else if name == "PROMPT_COMMAND" {
            for w in values {
                self.string_run_later(w, "`PROMPT_COMMAND` runs");
            }
        }
    }

    /// A string bash runs as a command later (`trap`, `mapfile -C`, `compgen -C`): a static
    /// one is checked as a command; anything else is refused.
    fn string_run_later(&mut self, w: &Word, what: &str) {
        match w.static_value() {
            Some(text) => self.payload(&text, w.span, None),
            None => self.code_from_data(
                format!("{what} a string only known at run time as a command"),
                w.span,
            ),
        }
    }

    /// Builtins that evaluate their arguments as arithmetic, names or commands, whatever the
    /// policy's rule for them says (`let`, `declare -i`, `printf -v`, `read`, `unset`,
    /// `test -v`, `trap`, ...).
    pub(super) fn builtin_contexts(&mut self, words: &[Word]) {
        let mut i = 0;
        while let Some(w) = words.get(i) {
            match w.static_value().as_deref() {
                Some("command" | "builtin") => i += 1,
                _ => break,
            }
        }
        let Some(name) = words.get(i).and_then(Word::static_value) else {
            return;
        };
        let args = &words[i + 1..];
        match name.as_str() {
            "let" => {
                for a in args {
                    self.arith_word(a, "`let`");
                }
            }
            "declare" | "typeset" | "local" | "readonly" | "export" => {
                self.declaration(&name, args)
            }
            "printf" => {
                let mut j = 0;
                while let Some(t) = args.get(j).and_then(Word::static_value) {
                    if t == "--" || !t.starts_with('-') {
                        break;
                    }
                    if t == "-v" {
                        if let Some(n) = args.get(j + 1) {
                            self.name_inert(n, "`printf -v` assigns");
                        }
                        j += 2;
                    } else if let Some(glued) = t.strip_prefix("-v") {
                        self.name_text_inert(glued, args[j].span, "`printf -v` assigns");
                        j += 1;
                    } else {
                        j += 1;
                    }
                }
            }
            "read" => self.option_names(args, "adinNptu", "a", "`read` assigns"),
            "mapfile" | "readarray" => {
                self.run_later_option(args, "dnOsuCc", 'C', "`mapfile -C` runs");
                self.option_names(args, "dnOsuCc", "", "`mapfile` assigns");
            }
            "wait" => self.option_names_only(args, "p", "`wait -p` assigns"),
            "unset" => {
                let functions = args.iter().any(|w| {
                    w.static_value()
                        .is_some_and(|t| t.starts_with('-') && t.contains('f'))
                });
                if !functions {
                    self.option_names(args, "", "", "`unset` resolves");
                }
            }
            "test" | "[" => {
                for pair in args.windows(2) {
                    if matches!(pair[0].static_value().as_deref(), Some("-v" | "-R")) {
                        self.name_inert(&pair[1], "`test -v` resolves");
                    }
                }
            }
            "trap" => {
                let operands: Vec<&Word> = args
                    .iter()
                    .skip_while(|w| {
                        w.static_value()
                            .is_some_and(|t| t.starts_with('-') && t.len() > 1 && t != "--")
                    })
                    .skip_while(|w| w.static_value().as_deref() == Some("--"))
                    .collect();
                if let Some(action) = operands.first() {
                    let reset = action.static_value().is_some_and(|t| {
                        t == "-" || (operands.len() == 1 && t.bytes().all(|b| b.is_ascii_digit()))
                    });
                    if !reset && (operands.len() > 1 || action.static_value().is_none()) {
                        self.string_run_later(action, "`trap` runs");
                    }
                }
            }
            "complete" | "compgen" => {
                self.run_later_option(args, "oAGWFCXPSA", 'C', "`complete -C` runs");
                // `-W WORDLIST`: each word is expanded again, so a `$(cmd)` in it runs.
                for pair in args.windows(2) {
                    if pair[0].static_value().as_deref() == Some("-W") {
                        let inert = pair[1]
                            .static_value()
                            .is_some_and(|t| !t.contains(['$', '`', '\\']));
                        if !inert {
                            self.code_from_data(
                                "`compgen -W` expands its word list again (a `$(cmd)` in it runs)"
                                    .into(),
                                pair[1].span,
                            );
                        }
                    }
                }
            }
            "bind"
                if args.iter().any(|w| {
                    w.static_value()
                        .is_none_or(|t| t.starts_with('-') && t.contains('x'))
                }) =>
            {
                self.code_from_data(
                    "`bind -x` runs a command when a key is pressed, outside any check".into(),
                    words[i].span,
                );
            }
            "fc" => {
                let lists = args.iter().any(|w| {
                    w.static_value()
                        .is_some_and(|t| t.starts_with('-') && t.contains('l'))
                });
                if !lists {
                    self.code_from_data(
                        "`fc` runs commands from the history (or an editor), which are data to this check".into(),
                        words[i].span,
                    );
                }
            }
            _ => {}
        }
    }

    /// The operands (and the values of the options in `name_opts`) of a builtin whose options
    /// in `valued` take a value, as names bash resolves.
    fn option_names(&mut self, args: &[Word], valued: &str, name_opts: &str, what: &str) {
        let mut j = 0;
        let mut options = true;
        while let Some(w) = args.get(j) {
            j += 1;
            let t = w.static_value();
            if options {
                match t.as_deref() {
                    Some("--") => {
                        options = false;
                        continue;
                    }
                    Some(t) if t.starts_with('-') && t.len() > 1 => {
                        let flags: Vec<char> = t[1..].chars().collect();
                        for (k, f) in flags.iter().enumerate() {
                            if valued.contains(*f) {
                                let glued: String = flags[k + 1..].iter().collect();
                                let is_name = name_opts.contains(*f);
                                if glued.is_empty() {
                                    if let Some(v) = args.get(j) {
                                        if is_name {
                                            self.name_inert(v, what);
                                        }
                                        j += 1;
                                    }
                                } else if is_name {
                                    self.name_text_inert(&glued, w.span, what);
                                }
                                break;
                            }
                        }
                        continue;
                    }
                    _ => options = false,
                }
            }
            self.name_inert(w, what);
        }
    }

    /// Only the values of the options in `name_opts` are names (`wait -p NAME`).
    fn option_names_only(&mut self, args: &[Word], name_opts: &str, what: &str) {
        for pair in args.windows(2) {
            if let Some(t) = pair[0].static_value() {
                if t.starts_with('-')
                    && t[1..].chars().last().is_some_and(|c| name_opts.contains(c))
                {
                    self.name_inert(&pair[1], what);
                }
            }
        }
    }

    /// The value of option `opt` (one of `valued`) is a command string run later.
    fn run_later_option(&mut self, args: &[Word], valued: &str, opt: char, what: &str) {
        let mut j = 0;
        while let Some(w) = args.get(j) {
            j += 1;
            let Some(t) = w.static_value() else { continue };
            if !t.starts_with('-') || t.len() < 2 || t == "--" {
                continue;
            }
            let flags: Vec<char> = t[1..].chars().collect();
            for (k, f) in flags.iter().enumerate() {
                if !valued.contains(*f) {
                    continue;
                }
                let glued: String = flags[k + 1..].iter().collect();
                if *f == opt {
                    if glued.is_empty() {
                        if let Some(v) = args.get(j) {
                            self.string_run_later(v, what);
                        }
                    } else {
                        self.payload(&glued, w.span, None);
                    }
                }
                if glued.is_empty() {
                    j += 1;
                }
                break;
            }
        }
    }

    /// `declare`/`typeset`/`local`/`readonly`/`export`: names (with subscripts), values of
    /// `-i` variables (arithmetic), of `-n` variables (names) and of `-a`/`-A` ones (a
    /// compound assignment whose subscripts are arithmetic).
    fn declaration(&mut self, builtin: &str, args: &[Word]) {
        let mut flags = String::new();
        let mut options = true;
        let what = format!("`{builtin}` assigns");
        for w in args {
            let t = w.static_value();
            if options {
                match t.as_deref() {
                    Some("--") => {
                        options = false;
                        continue;
                    }
                    Some(t) if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 => {
                        if let Some(f) = t.strip_prefix('-') {
                            flags.push_str(f);
                        }
                        continue;
                    }
                    _ => options = false,
                }
            }
            let (integer, nameref, array) = (
                flags.contains('i'),
                flags.contains('n'),
                flags.contains('a') || flags.contains('A'),
            );
            // The name: the literal text before `=` (or the whole static word).
            let prefix = match w.parts.first() {
                Some(WordPart::Literal(s)) => s.clone(),
                _ => String::new(),
            };
            let (name, value) = match (&t, prefix.split_once('=')) {
                (Some(t), _) => match t.split_once('=') {
                    Some((n, v)) => (n.trim_end_matches('+').to_string(), Some(v.to_string())),
                    None => (t.clone(), None),
                },
                (None, Some((n, _))) => (n.trim_end_matches('+').to_string(), None),
                (None, None) => {
                    self.name_inert(w, &what);
                    continue;
                }
            };
            self.name_text_inert(&name, w.span, &what);
            let base = name.split('[').next().unwrap_or_default().to_string();
            if integer {
                self.code.int_attr.push(base.clone());
            }
            if nameref {
                self.code.namerefs.push(base.clone());
            }
            let dynamic_value = t.is_none();
            match value {
                Some(v) if integer => {
                    if let Err(why) = self.inert_text(&v) {
                        self.code_from_data(
                            format!("`{builtin} -i` evaluates {why} as arithmetic"),
                            w.span,
                        );
                    }
                }
                Some(v) if nameref => self.name_text_inert(&v, w.span, &what),
                Some(v) if v.starts_with('(') => {
                    // `declare -a 'x=([$(cmd)]=1)'`: the subscripts are arithmetic.
                    for piece in v.split('[').skip(1) {
                        if let Some((sub, _)) = piece.split_once(']') {
                            self.subscript_text_inert(sub, w.span);
                        }
                    }
                }
                _ if dynamic_value && (integer || nameref || array) => self.code_from_data(
                    format!("`{builtin} -{flags}` evaluates a value only known at run time (as arithmetic, a name or an array with subscripts)"),
                    w.span,
                ),
                _ => {}
            }
        }
    }
}
