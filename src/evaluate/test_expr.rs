//! `test` and `[`: which arguments are operands whatever their run-time value.
//!
//! The builtin decides what each argument is by how many there are (POSIX `test`, bash(1)
//! "test expr"), not by what they look like: with three arguments and a binary operator in the
//! middle, the first and last are strings even when they read `-v`. So in `[ "$x" = y ]` and
//! `[ -z "$x" ]` the run-time word is an operand, never the `-v` operator that evaluates an
//! array subscript (`[ -v 'a[$(cmd)]' ]` runs `cmd`). Anything with more arguments, `-a`/`-o`
//! or parentheses is parsed by precedence, where a run-time word could be an operator: those
//! are left to the ordinary checks (which refuse a run-time word that could be an option).

use crate::shell::{Fields, Known, Word};

/// Unary operators that only test (the ones that evaluate something, `-v` and `-R`, are not here).
const UNARY: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x",
    "-G", "-L", "-N", "-O", "-S", "-z", "-n", "-o",
];

/// Binary operators (integer comparisons take integers only: `test` does not evaluate them as
/// arithmetic, unlike `[[ ]]`).
const BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef",
];

/// For the arguments of `test` (or of `[` without its closing `]`), which indices hold words
/// that are operands by position. `None` when some run-time word could be an operator, or
/// could be more than one word.
pub(super) fn operand_positions(args: &[Word], known: &Known) -> Option<Vec<usize>> {
    let fields: Vec<Fields> = args.iter().map(|w| w.fields(known)).collect();
    if fields.iter().any(Fields::is_many) {
        return None;
    }
    let text = |i: usize| match &fields[i] {
        Fields::Static(s) => Some(s.as_str()),
        _ => None,
    };
    let dynamic: Vec<usize> = (0..args.len()).filter(|&i| text(i).is_none()).collect();
    let ok = |positions: &[usize]| dynamic.iter().all(|d| positions.contains(d));
    let found: Option<Vec<usize>> = match args.len() {
        1 => Some(vec![0]),
        2 => match text(0) {
            Some("!") => Some(vec![1]),
            Some(op) if UNARY.contains(&op) => Some(vec![1]),
            _ => None,
        },
        3 => match (text(0), text(1)) {
            (_, Some(op)) if BINARY.contains(&op) => Some(vec![0, 2]),
            (Some("!"), _) => match text(1) {
                Some(op) if UNARY.contains(&op) => Some(vec![2]),
                _ => None,
            },
            _ => None,
        },
        4 => match (text(0), text(2)) {
            (Some("!"), Some(op)) if BINARY.contains(&op) => Some(vec![1, 3]),
            _ => None,
        },
        _ => None,
    };
    found.filter(|p| ok(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse;

    fn positions(cmd: &str) -> Option<Vec<usize>> {
        let s = parse(cmd).expect("parses");
        let c = s.all_simple_commands()[0].clone();
        operand_positions(&c.words[1..], &Known::default())
    }

    #[test]
    fn run_time_words_are_operands_by_position() {
        assert_eq!(positions("test -z \"$x\""), Some(vec![1]));
        assert_eq!(positions("test \"$x\" = y"), Some(vec![0, 2]));
        assert_eq!(positions("test \"$x\""), Some(vec![0]));
        assert_eq!(positions("test ! \"$x\" = y"), Some(vec![1, 3]));
    }

    #[test]
    fn a_run_time_word_that_could_be_an_operator_is_not_proven() {
        // x=-v y='a[$(id)]': `test "$x" "$y"` evaluates the subscript.
        assert_eq!(positions("test \"$x\" \"$y\""), None);
        assert_eq!(positions("test -v \"$x\""), None);
        assert_eq!(positions("test \"$x\" \"$op\" y"), None);
        assert_eq!(
            positions("test -z $x"),
            None,
            "unquoted: any number of words"
        );
        assert_eq!(positions("test a = b -a \"$x\""), None);
    }
}
