//! Operands and option values: each checked by its kind (paths, patterns, programs, ...),
//! words known only at run time, the glob rule's shifts, and `cp`/`mv` into a directory.

use super::*;

/// Whether a file name a glob matches could take the next word as an option's value, or be
/// `--`: the only matches that change what the words after it are, when no option of the
/// program can do harm by itself. That is `--`; a value-taking long option or any prefix of it
/// that GNU getopt_long accepts as an abbreviation (`--delim`); a value-taking option of a
/// program whose options are words (`find -name`); and a cluster of short options that ends
/// in a value-taking one (`-sd` is `-s -d VALUE`).
pub(super) fn glob_may_shift(rule: &ProgramRule, w: &Word) -> bool {
    let Some(pattern) = w.glob_pattern() else {
        return true;
    };
    let Ok(glob) = globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    else {
        return true;
    };
    let m = glob.compile_matcher();
    if m.is_match("--") {
        return true;
    }
    let mut short_letters = Vec::new();
    for o in &rule.options_with_value {
        if o.starts_with("--") {
            let abbreviations = (3..=o.len()).filter(|&n| o.is_char_boundary(n));
            if abbreviations.into_iter().any(|n| m.is_match(&o[..n])) {
                return true;
            }
        } else if rule.single_dash_long || o.chars().count() != 2 {
            if m.is_match(o) {
                return true;
            }
        } else if let Some(c) = o.chars().nth(1) {
            short_letters.push(c);
        }
    }
    let ends_in_value_option = match last_char(&pattern) {
        LastChar::Any => !short_letters.is_empty(),
        LastChar::Is(c) => short_letters.contains(&c),
    };
    // Every match ends with the pattern's literal tail (`.md` of `*.md`). Where the rule names
    // every option the program has, a cluster can only take the next word if each character
    // before its last is an option without a value: `-x.md` is no cluster of grep's (`.` is
    // no option letter, and getopt stops there with an error).
    if ends_in_value_option && rule.options_complete {
        let tail = literal_tail(&pattern);
        let chars: Vec<char> = tail.chars().collect();
        if chars.len() >= 2 {
            let flag = |c: char| {
                let o = format!("-{c}");
                !rule.options_with_value.contains(&o)
                    && (rule.allow_options.as_ref().is_some_and(|a| a.contains(&o))
                        || rule.deny_options.contains(&o)
                        || rule.flags.contains(&o))
            };
            if !chars[..chars.len() - 1].iter().all(|&c| flag(c)) {
                return false;
            }
        }
    }
    ends_in_value_option
}

/// The literal characters at the end of a glob pattern, after its last metacharacter
/// (escapes removed).
pub(super) fn literal_tail(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = chars.len();
    while i > 0 {
        let c = chars[i - 1];
        let escaped = i >= 2 && chars[i - 2] == '\\';
        if escaped {
            out.push(c);
            i -= 2;
        } else if matches!(c, '*' | '?' | ']' | '[' | '\\') {
            break;
        } else {
            out.push(c);
            i -= 1;
        }
    }
    out.reverse();
    out.into_iter().collect()
}

/// What the last character of a glob's matches can be.
pub(super) enum LastChar {
    Any,
    Is(char),
}

pub(super) fn last_char(pattern: &str) -> LastChar {
    let chars: Vec<char> = pattern.chars().collect();
    let Some(&last) = chars.last() else {
        return LastChar::Any;
    };
    let escaped = chars.len() >= 2 && chars[chars.len() - 2] == '\\' && {
        // An odd run of backslashes before it escapes it.
        let run = chars[..chars.len() - 1]
            .iter()
            .rev()
            .take_while(|&&c| c == '\\')
            .count();
        run % 2 == 1
    };
    if escaped || !matches!(last, '*' | '?' | ']') {
        LastChar::Is(last)
    } else {
        LastChar::Any
    }
}

/// The parts of the last name of a path word (`src/a.txt` → `a.txt`, `src/*.rs` → `*.rs`);
/// `None` for a name not known before it runs (`.`, `..`, `/`, an expansion after the last
/// `/`): any name.
pub(super) fn last_name(w: &Word) -> Option<Vec<WordPart>> {
    let any = || None;
    if let Some(text) = w.static_value() {
        let name = text.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        return match name {
            "" | "." | ".." => any(),
            n => Some(vec![WordPart::SingleQuoted(n.to_string())]),
        };
    }
    let text_of = |p: &WordPart| match p {
        WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => Some(s.clone()),
        _ => None,
    };
    let start = w
        .parts
        .iter()
        .rposition(|p| text_of(p).is_some_and(|t| t.contains('/')));
    let mut out = Vec::new();
    let tail = match start {
        Some(i) => {
            let t = text_of(&w.parts[i]).unwrap_or_default();
            let after = t.rsplit('/').next().unwrap_or("").to_string();
            if !after.is_empty() {
                out.push(match &w.parts[i] {
                    WordPart::Literal(_) => WordPart::Literal(after),
                    _ => WordPart::SingleQuoted(after),
                });
            }
            &w.parts[i + 1..]
        }
        None => &w.parts[..],
    };
    for part in tail {
        match part {
            WordPart::Literal(_)
            | WordPart::SingleQuoted(_)
            | WordPart::AnsiC(_)
            | WordPart::Glob(_) => out.push(part.clone()),
            _ => return any(),
        }
    }
    if out.is_empty() {
        return any();
    }
    Some(out)
}

/// The variable a declaration-builtin argument assigns when its name and `=` are literal
/// text (`foo=$(pwd)`, `foo+="$x"`).
pub(super) fn assigned_name(w: &Word) -> Option<String> {
    let prefix = match w.parts.first() {
        Some(WordPart::Literal(s)) => s,
        _ => return None,
    };
    let (name, _) = prefix.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    crate::evaluate::is_identifier(name).then(|| name.to_string())
}

impl Eval<'_> {
    /// `cp`, `mv`: the target may be a directory, into which every other operand is written
    /// under its last name (`cp tasks.json .vscode/` writes `.vscode/tasks.json`, `mv HEAD
    /// sub/` writes `sub/HEAD`): each such path is checked as a write. A name that is not
    /// known (`.`, an expansion) is any name. With `-T` the target is the file itself.
    pub(super) fn written_into_directory(&mut self, p: &Parsed) {
        if p.no_target {
            return;
        }
        let (target, sources): (Word, &[&Word]) = match &p.target {
            Some(Value::Word(w)) => ((*w).clone(), &p.operands[..]),
            Some(Value::Glued(s, span)) => (
                Word {
                    span: *span,
                    parts: vec![WordPart::SingleQuoted(s.clone())],
                },
                &p.operands[..],
            ),
            None => match p.operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => ((*last).clone(), rest),
                _ => return,
            },
        };
        for src in sources {
            // Any name: bash's `*`, and the names with a leading dot (not `.` or `..`).
            let names = last_name(src).map(|n| vec![n]).unwrap_or_else(|| {
                ["*", ".[!.]*", "..?*"]
                    .iter()
                    .map(|g| vec![WordPart::Glob(g.to_string())])
                    .collect()
            });
            for name in names {
                let mut parts = target.parts.clone();
                parts.push(WordPart::Literal("/".into()));
                parts.extend(name);
                let w = Word {
                    span: src.span,
                    parts,
                };
                self.path(&w, true);
            }
        }
    }

    /// Check one value of a given kind; for path kinds, returns what [`Eval::path`] returns.
    pub(super) fn value(
        &mut self,
        rule: &ProgramRule,
        kind: ArgKind,
        value: Value,
    ) -> Option<Vec<Option<PathBuf>>> {
        if kind.is_inert() {
            // Text and patterns are never checked.
            return None;
        }
        if let (ArgKind::PathRead | ArgKind::PathWrite, Value::Word(w)) = (kind, &value) {
            // The word itself is the path (no need of its text here).
            let resolved = self.path(w, kind == ArgKind::PathWrite);
            if kind == ArgKind::PathWrite {
                self.device_operand(rule, resolved.as_deref(), w.span);
            }
            return resolved;
        }
        let (text, span, word) = match value {
            Value::Word(w) => (w.static_value(), w.span, Some(w)),
            Value::Glued(s, sp) => (Some(s), sp, None),
        };
        match kind {
            ArgKind::Text | ArgKind::Pattern => None,
            ArgKind::PathRead | ArgKind::PathWrite => {
                let write = kind == ArgKind::PathWrite;
                let resolved = match word {
                    Some(w) => self.path(w, write),
                    None => {
                        let w = Word {
                            span,
                            parts: vec![WordPart::Literal(text.unwrap_or_default())],
                        };
                        self.path(&w, write)
                    }
                };
                if write {
                    self.device_operand(rule, resolved.as_deref(), span);
                }
                resolved
            }
            ArgKind::Variable => {
                match text {
                    Some(name) if crate::evaluate::is_identifier(&name) => {
                        self.env_name(&name, span)
                    }
                    _ => self.reason(
                        ReasonCode::VariableName,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "`{}` assigns a variable whose name is not a plain static name",
                            rule.name
                        ),
                        span,
                    ),
                }
                None
            }
            ArgKind::Assignment => {
                match text {
                    Some(t) => {
                        let name = t
                            .split('=')
                            .next()
                            .unwrap_or_default()
                            .trim_end_matches('+');
                        if crate::evaluate::is_identifier(name) {
                            self.env_name(name, span);
                        } else {
                            self.reason(
                                ReasonCode::VariableName,
                                Verdict::Deny,
                                Some(&rule.rule),
                                format!("`{}` of `{name}` (not a plain variable name) cannot be checked", rule.name),
                                span,
                            );
                        }
                    }
                    // `export foo=$(pwd)`: the name is written out, only the value is known at
                    // run time (and a declaration builtin does not split an assignment word).
                    None if word.is_some_and(|w| assigned_name(w).is_some()) => {
                        if let Some(name) = word.and_then(assigned_name) {
                            self.env_name(&name, span);
                        }
                    }
                    None => self.reason(
                        ReasonCode::VariableName,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!(
                            "`{}` with an assignment that is not known before it runs",
                            rule.name
                        ),
                        span,
                    ),
                }
                None
            }
            ArgKind::PathList
            | ArgKind::ModulePath
            | ArgKind::Program
            | ArgKind::BackupSuffix
            | ArgKind::Pathspec
            | ArgKind::JqProgram => self.hidden_input(rule, kind, text, span, word),
            ArgKind::DdOperand => self.dd_operand(rule, text, span, word),
            ArgKind::SedScript | ArgKind::AwkProgram => {
                let check = if kind == ArgKind::SedScript {
                    crate::evaluate::check_sed
                } else {
                    crate::evaluate::check_awk
                };
                let code = if kind == ArgKind::SedScript {
                    ReasonCode::SedScript
                } else {
                    ReasonCode::AwkProgram
                };
                match text {
                    Some(t) => {
                        if let Err(why) = check(&t) {
                            self.reason(
                                code,
                                Verdict::Deny,
                                Some(&rule.rule),
                                format!("{why}; `{}` may only read", rule.name),
                                span,
                            );
                        }
                    }
                    None => self.reason(
                        code,
                        Verdict::Deny,
                        Some(&rule.rule),
                        format!("the `{}` program is not known before it runs", rule.name),
                        span,
                    ),
                }
                None
            }
        }
    }

    /// An argument without a static value, where options are still read: it could expand to
    /// an option the rule refuses, or to several words that the rule never saw.
    pub(super) fn dynamic_arg(
        &mut self,
        rule: &ProgramRule,
        w: &Word,
        fields: &Fields,
        restricted: bool,
        plus: bool,
        rest: &[Word],
    ) {
        if !restricted || !fields.may_be_option(plus) {
            // Every word it becomes is an operand: the operand checks see it.
            return;
        }
        // File names matched by a glob are whole names without `/`: where every option is
        // allowed, or no option of the program can do harm with such a value, only a match
        // that is `--` or exactly a value-taking option changes anything.
        // Only a match that is `--` or exactly a value-taking option shifts the later words.
        if let Fields::Many { split: false, .. } = fields {
            // A program with refused options is never harmless: a match could be one.
            if rule.index().harmless_globs && !glob_may_shift(rule, w) {
                return;
            }
            if self.glob_judged(rule, w, rest) {
                return;
            }
        }
        let policy = self.policy;
        let s = &policy.shell.dynamic_arguments;
        match fields {
            Fields::Many { split: true, .. } => {
                let msg = format!(
                    "bash splits this word into words that are only known when it runs, and any of them could be an option of `{}`; quote the expansion (\"$x\") or put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::WordSplit, s, msg, w.span);
            }
            Fields::Many { .. } => {
                let msg = format!(
                    "the glob could expand to file names that look like options of `{}` (a file can be named `--pre=sh`); write `./` before it, or put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::DynamicArgument, s, msg, w.span);
            }
            _ => {
                let msg = format!(
                    "an argument of `{}` is not known before it runs and could be an option; put `--` before operands",
                    rule.name
                );
                self.setting(ReasonCode::DynamicArgument, s, msg, w.span);
            }
        }
    }
}
