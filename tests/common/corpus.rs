//! A hand-written corpus of commands that only use the programs of the differential test
//! policy (`tests/data/differential-policy.toml`), covering the constructs whose reading
//! decides what runs. Shared by `differential` (against bash) and `brush_compare`.

/// How what bash executes relates to what the IR lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Straight-line: with every stub exiting 0, each command the IR lists runs exactly once
    /// (`&&`, `;`, `|`, substitutions, groups all run everything).
    Straight,
    /// Branches or loops: `||` skips its right side when the stubs succeed, `if`/`case` run
    /// one branch, a `for` body runs once per word. Every execution must still be a command
    /// the IR lists, but not every listed command runs, and some run more than once.
    Branching,
}

use Flow::*;

/// The corpus: (command, flow).
pub const CORPUS: &[(&str, Flow)] = &[
    // Plain words and quoting.
    ("ls -la", Straight),
    ("a", Straight),
    ("a b c", Straight),
    ("echo 'single quoted' \"double quoted\"", Straight),
    ("\"e\"ch'o' a\\ b \"c d\"", Straight),
    ("echo 'it''s' \"a\"'b'c", Straight),
    ("echo \"a\\$b \\`c\\` \\\\ \\\"d\\\"\"", Straight),
    ("echo \\$HOME \\\"q\\\" \\'", Straight),
    ("echo a\\\\b a\\ b \\a\\b\\c", Straight),
    ("echo a=b c==d -- '--x' \"\"", Straight),
    ("echo '' \"\" ''\"\"", Straight),
    ("echo \"a\\qb\" 'a\\qb' a\\qb", Straight),
    ("echo \"'\" '\"' \"\\\"\"", Straight),
    ("echo \"tab\there\" 'new\nline'", Straight),
    ("echo é ü \"日本\"", Straight),
    ("echo '#' a#b \\#c", Straight),
    ("echo a # comment b", Straight),
    ("echo {a} {} '{a,b}' \\{a,b\\}", Straight),
    ("echo $ a$ \"$\"", Straight),
    ("echo x~ 'y~' a=~", Straight),
    // ANSI-C strings.
    ("echo $'\\x41\\x62' $'\\101\\102' $'\\u00e9'", Straight),
    ("echo $'tab\\there' $'nl\\nx' $'\\'q\\''", Straight),
    ("echo $'\\\\' \"x\"", Straight),
    ("echo $'\\e[0m' $'\\a\\b\\v\\f\\r'", Straight),
    ("echo $'a b'c $'\\x7a'z", Straight),
    ("$'\\x61' $'\\x62'", Straight),
    ("echo $'\\'' \"'\"", Straight),
    ("echo $\"locale\"", Straight),
    // Pipelines and lists.
    ("cat data.txt|grep x", Straight),
    ("a | b | cat", Straight),
    ("a |& b", Straight),
    ("a;b", Straight),
    ("a ; b ; c", Straight),
    ("a\nb\n\nc", Straight),
    ("a && b && c", Straight),
    ("a || b", Branching),
    ("a && b || c", Branching),
    ("a | b && c | grep x; ls", Straight),
    // Subshells and groups.
    ("(a; b)", Straight),
    ("( (a) )", Straight),
    ("{ a; b; }", Straight),
    ("{ a; { b; }; } | cat", Straight),
    ("(a | b) && { c; }", Straight),
    // Substitutions.
    ("echo $(a)", Straight),
    ("echo \"$(a x)\"", Straight),
    ("echo `a y`", Straight),
    ("echo \"`a -u`\"", Straight),
    ("echo $(a $(b c))", Straight),
    ("echo \"$(echo \"$(a)\")\"", Straight),
    ("echo x$(a)y \"x$(b)y\"", Straight),
    ("cat <(a) <(b c)", Straight),
    ("echo \"${x:-$(a)}\"", Straight),
    ("echo $(a; b | c)", Straight),
    ("echo $( (a) )", Straight),
    ("echo `a 'q)'`", Straight),
    // Redirections.
    ("a >/dev/null", Straight),
    ("a 2>/dev/null", Straight),
    ("a > /dev/null 2>&1", Straight),
    ("a &>/dev/null", Straight),
    ("cat < data.txt", Straight),
    ("a >/dev/null b", Straight),
    ("a 2>&1 | grep x", Straight),
    ("cat 0<data.txt a.txt", Straight),
    // Here-documents and here-strings.
    ("cat <<EOF\nhello $(a)\nEOF", Straight),
    ("cat <<'EOF'\n$(a)\nEOF", Straight),
    ("cat <<\"EOF\"\n`a`\nEOF", Straight),
    ("cat <<-EOF\n\t$(a)\n\tEOF\n", Straight),
    ("cat <<A <<B\na\nA\nb $(b)\nB\n", Straight),
    ("cat <<EOF | grep x\n$(a)\nEOF\n", Straight),
    ("cat <<EOF\n\\$(a) \"q\" 'r'\nEOF", Straight),
    ("cat <<< word", Straight),
    ("cat <<< \"$(a)\"", Straight),
    ("grep x <<< 'a b'", Straight),
    // Assignments.
    ("x=1 a", Straight),
    ("x=$(a) b", Straight),
    ("x=1; echo \"$x\"", Straight),
    ("x='a b'; echo $x", Straight),
    ("y=$(a); b", Straight),
    // Loops and conditionals (the stubs exit 0).
    ("for x in a b c; do echo \"$x\"; done", Branching),
    ("for x in 1 2; do a; b; done", Branching),
    ("if a; then b; fi", Branching),
    ("if a; then b; else c; fi", Branching),
    ("if a; then b; elif c; then grep x; fi", Branching),
    ("case x in x) a;; y) b;; esac", Branching),
    ("case $(a) in *) b;; esac", Branching),
    ("while ! a; do b; done", Branching),
    ("until a; do b; done", Branching),
    // Brace expansion.
    ("echo {a,b}", Straight),
    ("echo x{a,b}y", Straight),
    ("echo {1..3} {a..c}", Straight),
    ("echo {a,b{c,d}}", Straight),
    ("a {x,y}z", Straight),
    // Keywords.
    ("time a", Straight),
    ("time -p a -l", Straight),
    ("! a", Straight),
    ("! a | b", Straight),
    ("time a | b", Straight),
    ("time (a)", Straight),
    // Builtins that the policy allows, through their stubs.
    ("printf '%s\\n' a b", Straight),
    ("true && echo ok", Straight),
    ("test -f data.txt && [ -d . ]", Straight),
    ("wc -l a.txt; sort b.txt | head -n 1", Straight),
    // Constructs the own parser reads (issue 12), each against bash here (functions, `select`
    // and `for (( ))` are in tests/corpus/parse-gaps.tsv, which is run by bash whatever the
    // policy says).
    ("[[ -n x ]] && a", Straight),
    ("[[ $(a) == x* || -z y ]]; b", Straight),
    ("[[ x =~ ^(a|b c)$ ]]; a", Straight),
    ("(( 1 + 1 )) && a", Straight),
    // A substitution in arithmetic is code from data unless its output is proven a number
    // (docs/parser.md): `$(echo 2)` is, `$(a)` is not (and is refused).
    ("echo $(( $(echo 2) + 1 )) $(a)", Straight),
    ("echo >(cat) a", Branching),
    ("echo $\"x\" $'y'", Straight),
    ("cat <<A; cat <<B\na\nA\nb\nB", Straight),
    ("a <<'EOF' | b\n$(no) `no`\nEOF", Straight),
    ("for f in a b; { echo $f; }", Branching),
    ("{ a; } 2>/dev/null | b", Straight),
];
