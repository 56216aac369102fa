//! Every context where bash evaluates the value of an expansion as code (docs/parser.md,
//! "Where bash turns data into code"), each row proven twice: real bash runs the code hidden in
//! the data (the recording stub `id` is executed), and shellgate refuses the command under both
//! shipped policies with the reason that names the class. The rows bash does *not* evaluate are
//! proven too (no `id` runs), so the table's "not a context" entries are facts, not guesses.
//!
//! Each command reads its payload from files the setup plants in the workspace, the way a
//! hostile repository would: `v` holds `a[$(id)]` (an expression whose subscript runs `id`),
//! `c` holds `id` (a command), `w` holds `x=([$(id)]=1)` (a compound assignment).

use std::sync::OnceLock;
use std::time::Duration;

use crate::common::Sandbox;
use shellgate::{Context, Policy, Verdict};

const SETUP: &str = "printf '%s' 'a[$(id)]' > v; printf '%s' id > c; printf '%s' 'x=([$(id)]=1)' > w; printf '%s' '([$(id)]=1)' > y\n";

/// (row of the table, command, the code that must refuse it).
const CONTEXTS: &[(&str, &str, &str)] = &[
    // Arithmetic in every form.
    (
        "$((..)) of a substitution",
        ": $(( $(< v) ))",
        "code-from-data",
    ),
    (
        "$((..)) of a quoted literal echoed",
        ": $(( $(echo 'a[$(id)]') ))",
        "code-from-data",
    ),
    (
        "$((..)) of printf output, no `$(` in the payload",
        ": $(( $(printf 'a[%s(id)]' '$') ))",
        "code-from-data",
    ),
    (
        "$((..)) reading a variable",
        "x=$(< v); : $((x))",
        "code-from-data",
    ),
    (
        "$((..)) of $x",
        "x=$(< v); : $(( $x + 1 ))",
        "code-from-data",
    ),
    ("$[..]", ": $[ $(< v) ]", "code-from-data"),
    ("((..))", "(( $(< v) ))", "code-from-data"),
    (
        "for ((init;..))",
        "for (( i=$(< v); i<1; i++ )); do :; done",
        "code-from-data",
    ),
    (
        "for ((;cond;))",
        "for (( ; $(< v); )); do break; done",
        "code-from-data",
    ),
    (
        "for (( )) whose body plants the variable",
        "for (( i=0; i<2; i++ )); do [[ $i == 0 ]] && i=$(< v); done",
        "code-from-data",
    ),
    ("[[ -eq ]] left", "[[ $(< v) -eq 1 ]]", "code-from-data"),
    (
        "[[ -lt ]] right, quoted",
        "[[ 1 -lt \"$(< v)\" ]]",
        "code-from-data",
    ),
    (
        "[[ -ne ]] literal",
        "[[ 'a[$(id)]' -ne 1 ]]",
        "code-from-data",
    ),
    ("${s:off}", "s=abc; : ${s:$(< v)}", "code-from-data"),
    ("${s:off:len}", "s=abc; : ${s:0:$(< v)}", "code-from-data"),
    ("${@:off}", ": ${@:$(< v)}", "code-from-data"),
    ("${a[@]:off}", "a=(1 2); : ${a[@]:$(< v)}", "code-from-data"),
    (
        "${x:-$((..))} inside a default",
        "x=$(< v); : ${u:-$((x))}",
        "code-from-data",
    ),
    // Subscripts of indexed arrays.
    ("${a[sub]}", "a=(1); : ${a[$(< v)]}", "code-from-data"),
    (
        "${a['..']} single-quoted",
        "a=(1); : ${a['$(id)']}",
        "code-from-data",
    ),
    ("${a[name]}", "x=$(< v); a=(1); : ${a[x]}", "code-from-data"),
    ("${#a[sub]}", "a=(1); : ${#a[$(< v)]}", "code-from-data"),
    ("a[sub]=", "a[$(< v)]=1", "code-from-data"),
    ("a[sub]+=", "a=(1); a[$(< v)]+=1", "code-from-data"),
    ("x=([sub]=v)", "x=( [$(< v)]=1 )", "code-from-data"),
    ("x+=([sub]=v)", "x=(); x+=( [$(< v)]=1 )", "code-from-data"),
    // Builtins that evaluate arithmetic.
    ("let", "let \"x=$(< v)\"", "code-from-data"),
    ("declare -i", "declare -i x=$(< v)", "code-from-data"),
    ("typeset -i", "typeset -i x=$(< v)", "code-from-data"),
    (
        "local -i",
        "f() { local -i x=$(< v); }; f",
        "code-from-data",
    ),
    (
        "assigning an -i variable",
        "declare -i x; x=$(< v)",
        "code-from-data",
    ),
    ("RANDOM=", "RANDOM=$(< v)", "code-from-data"),
    ("SRANDOM=", "SRANDOM=$(< v)", "code-from-data"),
    ("OPTIND=", "OPTIND=$(< v)", "code-from-data"),
    ("HISTCMD=", "HISTCMD=$(< v)", "code-from-data"),
    // Names resolved at run time (a subscript in the name is evaluated).
    ("printf -v NAME", "printf -v \"$(< v)\" x", "code-from-data"),
    (
        "printf -v literal",
        "printf -v 'a[$(id)]' x",
        "code-from-data",
    ),
    ("read NAME", "read \"$(< v)\" <<< x", "code-from-data"),
    ("test -v", "test -v \"$(< v)\"", "code-from-data"),
    ("[ -v ]", "[ -v \"$(< v)\" ]", "code-from-data"),
    ("[[ -v ]]", "[[ -v $(< v) ]]", "code-from-data"),
    ("[[ -v ]] literal", "[[ -v 'a[$(id)]' ]]", "code-from-data"),
    ("declare NAME=", "declare \"$(< v)\"=1", "code-from-data"),
    (
        "local NAME=",
        "f() { local \"$(< v)\"=1; }; f",
        "code-from-data",
    ),
    ("unset NAME", "a=(1); unset \"$(< v)\"", "code-from-data"),
    (
        "unset -v NAME",
        "a=(1); unset -v \"$(< v)\"",
        "code-from-data",
    ),
    ("unset literal", "a=(1); unset 'a[$(id)]'", "code-from-data"),
    (
        "declare -n",
        "declare -n r=\"$(< v)\"; : $r",
        "code-from-data",
    ),
    (
        "assigning a nameref",
        "declare -n r; r=$(< v); : $r",
        "code-from-data",
    ),
    (
        "declare -a \"$w\"",
        "declare -a \"$(< w)\"",
        "code-from-data",
    ),
    (
        "declare -a x=\"$y\"",
        "declare -a x=\"$(< y)\"",
        "code-from-data",
    ),
    (
        "wait -p NAME",
        ": & wait -n -p \"$(< v)\"",
        "code-from-data",
    ),
    ("${!x}", "x=$(< v); : ${!x}", "indirect-expansion"),
    // Strings run later.
    ("trap", "trap \"$(< c)\" EXIT", "code-from-data"),
    (
        "trap DEBUG",
        "trap -- \"$(< c)\" DEBUG; :",
        "code-from-data",
    ),
    (
        "mapfile -C",
        "mapfile -C \"$(< c)\" -c 1 x <<< a",
        "code-from-data",
    ),
    ("compgen -C", "compgen -C \"$(< c)\" x", "code-from-data"),
    (
        "compgen -W expands its word list",
        "compgen -W \"$(< v)\" a",
        "code-from-data",
    ),
    (
        "compgen -W literal",
        "compgen -W '$(id)' x",
        "code-from-data",
    ),
    (
        "${x:=..} then arithmetic",
        ": ${x:=$(< v)}; : $((x))",
        "code-from-data",
    ),
    ("${*:off}", "set -- a b; : ${*:$(< v)}", "code-from-data"),
    ("${s: -off}", "x=abc; : ${x: -$(< v)}", "code-from-data"),
    (
        "${x[sub]} of a scalar",
        "x=1; : ${x[$(< v)]}",
        "code-from-data",
    ),
    (
        "PS4 with set -x",
        "PS4='$(id) '; set -x; :",
        "code-from-data",
    ),
    (
        "PS4 octal escape",
        "PS4='\\044(id) '; set -x; :",
        "code-from-data",
    ),
    ("${x@P}", "x='$(id)'; : ${x@P}", "indirect-expansion"),
];

/// Places that look like one of the above but where bash uses the value as data (proven: no
/// `id` runs), so shellgate need not refuse them for this reason.
const NOT_CONTEXTS: &[(&str, &str)] = &[
    (
        "test -eq compares integers without evaluating",
        "test \"$(< v)\" -eq 1",
    ),
    ("[ -eq ]", "[ \"$(< v)\" -eq 1 ]"),
    ("mapfile checks the array name", "mapfile \"$(< v)\" <<< x"),
    ("readarray", "readarray \"$(< v)\" <<< x"),
    ("read -a checks the name", "read -a \"$(< v)\" <<< x"),
    ("${#a[sub]} of an unset array", ": ${#a[$(< v)]}"),
    ("printf %d", "printf '%d' \"$(< v)\""),
    ("shift", "shift \"$(< v)\""),
    ("break N", "for i in 1; do break \"$(< v)\"; done"),
    ("return N", "f() { return \"$(< v)\"; }; f"),
    ("exit N", "exit \"$(< v)\""),
    ("read -t", "read -t \"$(< v)\" x <<< y"),
    ("getopts NAME", "getopts a \"$(< v)\" -a"),
    (
        "select reads PS3 without expansion",
        "PS3='$(id)'; select x in a; do break; done <<< 1",
    ),
    ("[[ -R ]]", "[[ -R $(< v) ]]"),
    (
        "associative keys are expanded once",
        "declare -A h; h[$(< v)]=1",
    ),
    ("declare x=\"$y\" without -a", "declare x=\"$(< y)\""),
    ("SECONDS=", "SECONDS=$(< v)"),
    ("COLUMNS=", "COLUMNS=$(< v)"),
    ("[[ == ]]", "x=1; [[ $x == $(< v) ]]"),
    (
        "complete -C runs only when completing",
        "complete -C \"$(< c)\" x",
    ),
    ("fc without history", "fc -l"),
    (
        "complete -W runs only when completing",
        "complete -W '$(id)' x",
    ),
    (
        "mapfile -O/-n/-s are numbers",
        "mapfile -O \"$(< v)\" -n \"$(< v)\" x <<< a",
    ),
    ("read -u", "read -u \"$(< v)\" x"),
    ("kill -s", "kill -s \"$(< v)\" $$"),
    ("umask", "umask \"$(< v)\""),
    ("[[ -o ]]", "[[ -o \"$(< v)\" ]]"),
    (
        "a short-circuited branch is not evaluated",
        ": $(( 1 ? 2 : $(< v) ))",
    ),
];

/// Ordinary commands in these contexts whose values are proven inert: allowed.
const INERT: &[&str] = &[
    "echo $((1+2))",
    "echo $[1+2]",
    "(( 1 + 1 ))",
    "for i in 1 2 3; do echo $((i*2)); done",
    "for i in 1 2; do echo ${a[i]} ${a[$i]}; done",
    "for ((i=0;i<3;i++)); do echo $i; done",
    "for ((i=0, j=5; i<j; i++, j--)); do echo $i $j; done",
    "for ((i=0;i<3;i++)); do a[i]=$i; done",
    "x=hello; echo ${x:1:2}",
    "a[0]=x",
    "x=( [0]=a [1]=b )",
    "echo ${a[0]} ${a[@]} ${#a[@]}",
    "echo $(( $? + 1 ))",
    "echo $(( ${#x} + 1 ))",
    "echo $(( $(echo 2) * 3 ))",
    "echo $(( $(wc -l < a.txt) + 1 ))",
    "echo $(( $(ls | wc -l) * 2 ))",
    "[[ -v HOME ]]",
    "[[ -v a[0] ]]",
    "[[ 3 -gt 2 ]]",
    "echo $(( 16#ff + 0x1f + 2#101 ))",
];

fn shipped() -> &'static [Policy; 2] {
    static P: OnceLock<[Policy; 2]> = OnceLock::new();
    P.get_or_init(|| {
        [
            Policy::shipped("read-only").expect("shipped"),
            Policy::shipped("developer").expect("shipped"),
        ]
    })
}

fn ran_id(sb: &Sandbox, cmd: &str) -> bool {
    let run = sb.run(&format!("{SETUP}{cmd}"), Duration::from_secs(10));
    assert!(!run.timed_out, "{cmd:?}: bash timed out");
    run.executed.iter().any(|argv| argv[0] == "id")
}

#[test]
fn every_context_runs_code_in_bash_and_is_refused() {
    let sb = Sandbox::new(&["id"]);
    let mut bad = Vec::new();
    for (row, cmd, code) in CONTEXTS {
        if !ran_id(&sb, cmd) {
            bad.push(format!("{row}: bash did not run the payload of {cmd:?}"));
        }
        for policy in shipped() {
            let d = policy.evaluate(&Context::example(), cmd);
            let codes: Vec<&str> = d.reasons.iter().map(|r| r.code).collect();
            if d.verdict == Verdict::Allow || !codes.contains(code) {
                bad.push(format!(
                    "{row}: {cmd:?} under {} -> {} {codes:?} (wanted {code})",
                    policy.name, d.verdict
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_places_bash_reads_as_data_do_not_run_the_payload() {
    let sb = Sandbox::new(&["id"]);
    let ran: Vec<String> = NOT_CONTEXTS
        .iter()
        .filter(|(_, cmd)| ran_id(&sb, cmd))
        .map(|(row, cmd)| format!("{row}: {cmd:?}"))
        .collect();
    assert!(ran.is_empty(), "bash ran the payload:\n{}", ran.join("\n"));
}

#[test]
fn proven_inert_values_are_allowed() {
    for policy in shipped() {
        let bad: Vec<String> = INERT
            .iter()
            .filter_map(|cmd| {
                let d = policy.evaluate(&Context::example(), cmd);
                (d.verdict != Verdict::Allow).then(|| format!("{cmd:?} -> {:?}", d.reasons))
            })
            .collect();
        assert!(bad.is_empty(), "under {}:\n{}", policy.name, bad.join("\n"));
    }
}

/// What a proven counter is not: `wc` with an operand prints the file's name, a list prints
/// every command's output, and a pipeline prints its last stage's.
#[test]
fn near_misses_of_a_proven_counter_are_refused() {
    for policy in shipped() {
        for cmd in [
            ": $(( $(wc -l a.txt) ))",
            ": $(( $(wc -l < a.txt; cat ver.txt) ))",
            ": $(( $(wc -l < a.txt | cat) ))",
            ": $(( $(wc -lc < a.txt) ))",
            ": $(( $(wc --files0-from=f) ))",
            ": $(( $(wc -l 2>&1 < a.txt) ))",
            ": $(( $(echo -e '\\x24(id)') ))",
            ": $(( $(echo a) ))",
        ] {
            let d = policy.evaluate(&Context::example(), cmd);
            let codes: Vec<&str> = d.reasons.iter().map(|r| r.code).collect();
            assert!(
                d.verdict != Verdict::Allow && codes.contains(&"code-from-data"),
                "{} {cmd:?} -> {} {codes:?}",
                policy.name,
                d.verdict
            );
        }
    }
}
