//! Field splitting and pathname expansion: how many words of the argv one shell word becomes,
//! and what they can begin with.
//!
//! bash expands a command's words in this order: brace expansion, tilde expansion, parameter,
//! command and arithmetic expansion, then **field splitting** of the results of *unquoted*
//! parameter, command and arithmetic expansions on `$IFS`, then **pathname expansion** of every
//! unquoted `*`, `?` and `[...]` (in the text as written and in the results of unquoted
//! expansions), then quote removal (bash manual, "Shell Expansions"). So one word as written
//! can become zero, one or many words of the argv, and only the first of them begins with the
//! word's leading literal text:
//!
//! | as written | fields | can begin with |
//! |---|---|---|
//! | `-n`, `'a b'`, `"x"` | exactly one, known | itself |
//! | `"$x"`, `"a$(cmd)"`, `~/x`, `<(cmd)` | exactly one, unknown | its leading literal (`a`; `/` for `~` and `<(..)`) |
//! | `$x`, `a$x`, `$(cmd)`, `$((n))`, `"$@"`, `"${a[@]}"` | any number | the first: its leading literal; later ones: anything |
//! | `*.txt`, `src/*` | any number of file names | every one: its leading literal (`src/`; nothing for `*.txt`) |
//!
//! `4k$IFS--compress-program=sh` is three fields, `4k`, `` (dropped) and
//! `--compress-program=sh`: checking it as one value of `sort -S` is the bug this module exists
//! to prevent. The contexts where bash does *not* split or glob (assignment values, `[[ ]]`
//! operands, `case` subjects, here-strings) never ask for fields.
//!
//! Unquoted arithmetic (`$((n))`) yields an integer, which the default `$IFS` cannot split but
//! which may begin with `-`; it is classed with the other unquoted expansions (any number of
//! fields) because `$IFS` is a variable of the session. The values a caller knows (`$PWD` and
//! `$(pwd)` are the session's working directory; `$HOME` its home) are described by [`Known`].

use super::ir::{Param, Span, Word, WordPart};
use super::Command;

/// What the caller knows about the values of some expansions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Known {
    /// `$PWD`, `${PWD}`, `$(pwd)` and `` `pwd` `` are the session's working directory (an
    /// absolute path); `true` when that value itself holds `$IFS` whitespace or glob
    /// characters, so that unquoted it would split or glob.
    pub pwd_splits: bool,
    /// `$HOME` / `${HOME}` is the context's home directory; `true` when it holds `$IFS`
    /// whitespace or glob characters.
    pub home_splits: bool,
    /// `$OUTPUT_DIR` / `${OUTPUT_DIR}` is a code execution call's output directory when
    /// `Some`; `Some(true)` when it holds `$IFS` whitespace or glob characters.
    pub output_dir_splits: Option<bool>,
}

impl Known {
    /// Whether a known value would be split or globbed where bash splits and globs.
    pub fn value_splits(value: &str) -> bool {
        value
            .chars()
            .any(|c| matches!(c, ' ' | '\t' | '\n' | '*' | '?' | '[' | ']'))
    }
}

/// How a word's first field begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lead {
    /// With this literal text (possibly empty: then it begins with whatever an expansion gives).
    Text(String),
    /// With `/`: a known absolute path (`$PWD`, `~`, `$HOME`, `<(...)`), then maybe more.
    Absolute,
}

impl Lead {
    /// Whether a field beginning this way could be read as an option (`-x`, or `+x` where the
    /// program takes `+` options).
    pub fn may_be_option(&self, plus: bool) -> bool {
        match self {
            Lead::Absolute => false,
            Lead::Text(t) => match t.chars().next() {
                None => true,
                Some('-') => true,
                Some('+') => plus,
                Some(_) => false,
            },
        }
    }
}

/// What bash's field splitting and pathname expansion make of one word of a command's
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fields {
    /// Exactly one word, with this text.
    Static(String),
    /// Exactly one word whose text is known only at run time.
    One {
        /// How it begins.
        lead: Lead,
    },
    /// Zero, one or more words.
    Many {
        /// How the first one begins (for pathname expansion alone: how every one begins).
        lead: Lead,
        /// Whether field splitting (or a quoted `"$@"`) makes them: then the words after the
        /// first are run-time text and can begin with anything. Without it they are file
        /// names matched by the word's pattern, each beginning like the first.
        split: bool,
        /// The part that makes the count unknown.
        span: Span,
    },
}

impl Fields {
    /// Whether any word this can become could be read as an option.
    pub fn may_be_option(&self, plus: bool) -> bool {
        match self {
            Fields::Static(s) => s.starts_with('-') || (plus && s.starts_with('+')),
            Fields::One { lead } => lead.may_be_option(plus),
            Fields::Many { lead, split, .. } => *split || lead.may_be_option(plus),
        }
    }

    /// Whether the number of words is not exactly one.
    pub fn is_many(&self) -> bool {
        matches!(self, Fields::Many { .. })
    }
}

/// One piece of a word, flattened out of double quotes.
enum Piece<'a> {
    /// Literal text (quoted or not).
    Text(&'a str),
    /// A known absolute path that is not split (`~`, a quoted `$PWD`, `<(...)`).
    Path,
    /// A run-time value that is one field (inside double quotes, or tilde-like).
    Opaque,
    /// A run-time value that is split (and globbed), or a quoted `"$@"`.
    Splits(Span),
    /// A pathname-expansion pattern piece.
    Glob(Span),
}

impl Word {
    /// The words of the argv this word becomes where bash splits and globs (a command's
    /// arguments, a `for` list), given what the caller knows of some values.
    pub fn fields(&self, known: &Known) -> Fields {
        if let Some(s) = self.static_value() {
            return Fields::Static(s);
        }
        let mut pieces = Vec::new();
        for part in &self.parts {
            pieces_of(part, false, known, self.span, &mut pieces);
        }
        let mut lead = String::new();
        let mut lead_done = false;
        let mut absolute = false;
        let mut many: Option<(bool, Span)> = None;
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) if !lead_done => lead.push_str(t),
                Piece::Text(_) => {}
                Piece::Path => {
                    if i == 0 {
                        absolute = true;
                    }
                    lead_done = true;
                }
                Piece::Opaque => lead_done = true,
                Piece::Splits(span) => {
                    lead_done = true;
                    many = Some((true, *span));
                }
                Piece::Glob(span) => {
                    lead_done = true;
                    if many.is_none() {
                        many = Some((false, *span));
                    }
                }
            }
        }
        let lead = if absolute {
            Lead::Absolute
        } else {
            Lead::Text(lead)
        };
        match many {
            Some((split, span)) => Fields::Many { lead, split, span },
            None => Fields::One { lead },
        }
    }
}

fn pieces_of<'a>(
    part: &'a WordPart,
    quoted: bool,
    known: &Known,
    span: Span,
    out: &mut Vec<Piece<'a>>,
) {
    match part {
        WordPart::Literal(s) | WordPart::SingleQuoted(s) | WordPart::AnsiC(s) => {
            out.push(Piece::Text(s))
        }
        WordPart::DoubleQuoted(parts) => {
            if parts.is_empty() {
                out.push(Piece::Text(""));
            }
            for p in parts {
                pieces_of(p, true, known, span, out);
            }
        }
        WordPart::Param(p) => {
            let all_elements = p.name == "@"
                || p.subscript
                    .as_ref()
                    .and_then(Word::static_value)
                    .is_some_and(|s| s == "@");
            if quoted && all_elements {
                // "$@" and "${a[@]}" are one word per element even inside quotes.
                out.push(Piece::Splits(p.span));
            } else if is_plain(p, "PWD") {
                out.push(path_piece(quoted, known.pwd_splits, p.span));
            } else if is_plain(p, "HOME") {
                out.push(path_piece(quoted, known.home_splits, p.span));
            } else if let Some(splits) = known
                .output_dir_splits
                .filter(|_| is_plain(p, "OUTPUT_DIR"))
            {
                out.push(path_piece(quoted, splits, p.span));
            } else if quoted {
                out.push(Piece::Opaque);
            } else {
                out.push(Piece::Splits(p.span));
            }
        }
        WordPart::CommandSubst(script) => {
            if is_pwd(script) {
                out.push(path_piece(quoted, known.pwd_splits, script.span));
            } else if quoted {
                out.push(Piece::Opaque);
            } else {
                out.push(Piece::Splits(script.span));
            }
        }
        WordPart::Arithmetic(a) => {
            if quoted {
                out.push(Piece::Opaque);
            } else {
                out.push(Piece::Splits(a.span));
            }
        }
        // `/dev/fd/63`: one absolute path.
        WordPart::ProcessSubst { .. } => out.push(Piece::Path),
        // The results of tilde expansion are not split.
        WordPart::Tilde(user) if user.is_empty() => out.push(Piece::Path),
        WordPart::Tilde(_) => out.push(Piece::Opaque),
        WordPart::Glob(_) => out.push(Piece::Glob(span)),
        // Brace expansion the caller did not expand: any number of words.
        WordPart::Brace(_) => out.push(Piece::Splits(span)),
    }
}

fn path_piece<'a>(quoted: bool, splits: bool, span: Span) -> Piece<'a> {
    if !quoted && splits {
        Piece::Splits(span)
    } else {
        Piece::Path
    }
}

/// `$NAME` or `${NAME}` with no operator, subscript or indirection.
pub(crate) fn is_plain(p: &Param, name: &str) -> bool {
    p.name == name
        && p.operator.is_none()
        && !p.indirect
        && p.subscript.is_none()
        && p.words.is_empty()
}

/// `$(pwd)` or `` `pwd` `` (also `pwd -P` / `pwd -L`): one simple command `pwd` with
/// nothing else. `-P` prints the directory with symlinks resolved: the same directory, so a
/// path under it names the file the logical path names.
pub(crate) fn is_pwd(script: &super::Script) -> bool {
    match script.commands.as_slice() {
        [Command::Simple(c)] => {
            c.assignments.is_empty()
                && c.redirects.is_empty()
                && c.keywords.is_empty()
                && !c.background
                && c.words.first().and_then(|w| w.static_value()).as_deref() == Some("pwd")
                && c.words.iter().skip(1).all(|w| {
                    w.parts.len() == 1 && matches!(w.static_value().as_deref(), Some("-P" | "-L"))
                })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse;

    fn arg(cmd: &str, i: usize) -> Fields {
        let script = parse(cmd).expect("parses");
        let c = script.all_simple_commands()[0].clone();
        c.words[i].fields(&Known::default())
    }

    #[test]
    fn ifs_inside_a_value_makes_many_fields_that_can_be_options() {
        let f = arg("sort -S 4k$IFS--compress-program=sh", 2);
        assert!(f.is_many());
        assert!(f.may_be_option(false));
        assert!(
            matches!(f, Fields::Many { split: true, lead: Lead::Text(ref t), .. } if t == "4k")
        );
    }

    #[test]
    fn quoted_expansions_are_one_field() {
        let f = arg("printf %s \"$x\"", 2);
        assert_eq!(
            f,
            Fields::One {
                lead: Lead::Text(String::new())
            }
        );
        assert!(f.may_be_option(false));
        let f = arg("cat \"a$x\"", 1);
        assert!(!f.may_be_option(false));
    }

    #[test]
    fn quoted_at_is_many() {
        assert!(arg("cat \"$@\"", 1).is_many());
        assert!(arg("cat \"${a[@]}\"", 1).is_many());
        assert!(!arg("cat \"$*\"", 1).is_many());
    }

    #[test]
    fn globs_keep_their_leading_literal() {
        let f = arg("cat src/*.rs", 1);
        assert!(f.is_many());
        assert!(!f.may_be_option(false));
        let f = arg("cat *.rs", 1);
        assert!(f.may_be_option(false));
    }

    #[test]
    fn pwd_and_home_are_absolute_unless_they_split() {
        assert!(!arg("cat $PWD/x", 1).may_be_option(false));
        assert!(!arg("cat \"$(pwd)\"/x", 1).is_many());
        assert!(!arg("cat ~/x", 1).may_be_option(false));
        let script = parse("cat $PWD/x").expect("parses");
        let c = script.all_simple_commands()[0].clone();
        let split = Known {
            pwd_splits: true,
            home_splits: false,
            output_dir_splits: None,
        };
        assert!(c.words[1].fields(&split).is_many());
    }

    #[test]
    fn arithmetic_unquoted_is_many_and_may_be_negative() {
        let f = arg("head -n $((1-2))", 2);
        assert!(f.is_many());
        assert!(f.may_be_option(false));
    }
}
