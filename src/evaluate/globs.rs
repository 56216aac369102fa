//! Which unquoted globs are harmless arguments of a program.
//!
//! A glob becomes the names of existing files, and a file can be named like an option
//! (`-delete`, `-ox.txt`, `--`). The rule here decides on the *pattern*, never on the files
//! of the moment: a glob is harmless where no word it can become is an option the policy
//! refuses, and (when literal words follow it) no word it can become takes the next word or
//! ends the options.
//!
//! The words a glob can become, under bash's defaults (`dotglob`, `nocaseglob`, `nullglob`,
//! `failglob`, `extglob` and `globstar` off; `globskipdots` on, bash ≥ 5.2): one or more
//! names of existing files, none containing `/`, never `.` or `..`; or, when nothing matches,
//! the word itself after quote removal. Both are checked. The reference session pins these
//! options when it starts (`middleware/session`); the hook mode assumes them (docs/hooks.md).
//!
//! The check intersects two regular languages: the pattern's (a small automaton over its
//! tokens) and the language of harmful option words of the program, built from its whole
//! option table: every abbreviation of a long option, `--opt=VALUE`, clusters of short
//! options (`-rfo`), glued values (`-oNAME`). Character sets stay symbolic (`?`, `[!x]` are
//! "any character but"), so the intersection is exact for the tokens it understands and
//! over-approximates the rest (character classes are any character); a pattern it cannot
//! read at all is not harmless. When the check finds a word, it is named in the refusal.

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::{ArgKind, OperandSpec, OptionFacts, ProgramRule};
use crate::shell::{Fields, Known, Word, WordPart};

/// A word bash globs and does not split: one or more file names, or itself.
pub(super) fn is_pure_glob(w: &Word, known: &Known) -> bool {
    matches!(w.fields(known), Fields::Many { split: false, .. })
}

impl Eval<'_> {
    /// A glob in an argument position where options are read: `true` when it is judged here
    /// (harmless, or refused with the file name that would do harm), `false` to leave it to
    /// the general refusal.
    pub(super) fn glob_judged(&mut self, rule: &ProgramRule, w: &Word, rest: &[Word]) -> bool {
        let known = self.known();
        let literal_after = rest.iter().any(|r| !is_pure_glob(r, &known));
        let carved = !self.policy.paths.deny_read.is_empty();
        let (text, what) = match argument(rule, w, literal_after, carved) {
            Ok(()) => return true,
            Err(Risk::Unread) => return false,
            Err(Risk::Option(x)) => (x, "an option it refuses or cannot check"),
            Err(Risk::Shift(x)) => (
                x,
                "an option that takes the next word, or the end of options, which changes what the words after the glob are",
            ),
        };
        let msg = format!(
            "the glob could expand to a file named `{text}`, which `{}` would read as {what}; write `./` before it (`./{}`), or put `--` before the operands",
            rule.name,
            w.glob_pattern().unwrap_or_default(),
        );
        let policy = self.policy;
        self.setting(
            ReasonCode::DynamicArgument,
            &policy.shell.dynamic_arguments,
            msg,
            w.span,
        );
        true
    }

    /// A word only known when it runs, for a program with argument patterns (`git push`'s
    /// `^\+`, `npm install`'s `^\./`, `strings`' `^@`): the patterns only ever see written
    /// words, and a glob or an expansion could become one they refuse (`git push origin +*`
    /// with a file named `+main` force-pushes).
    pub(super) fn patterns_unchecked(&mut self, rule: &ProgramRule, w: &Word) {
        // Every word it can become starts with its leading literal (`./` of `./*`); after a
        // split, the later words start with anything.
        let prefix = match w.fields(&self.known()) {
            Fields::Many { split: true, .. } => String::new(),
            Fields::One { lead } | Fields::Many { lead, .. } => match lead {
                crate::shell::Lead::Text(t) => t,
                crate::shell::Lead::Absolute => "/".to_string(),
            },
            Fields::Static(s) => s,
        };
        let Some(strictest) = rule
            .args
            .iter()
            .filter(|a| may_match_after(a.pattern.as_str(), &prefix))
            .max_by_key(|a| a.verdict)
        else {
            return;
        };
        let what = strictest
            .message
            .clone()
            .unwrap_or_else(|| format!("`{}`", strictest.pattern.as_str()));
        let msg = format!(
            "this argument of `{}` is only known when it runs, and the policy checks its arguments against patterns ({what}); write the argument out",
            rule.name
        );
        self.reason(
            ReasonCode::DynamicArgument,
            strictest.verdict,
            Some(&strictest.rule),
            msg,
            w.span,
        );
    }

    /// An option's value that is a glob (`find -name *.jpg`): `true` when it is judged here.
    pub(super) fn value_glob_judged(
        &mut self,
        rule: &ProgramRule,
        written: &str,
        w: &Word,
    ) -> bool {
        if !is_pure_glob(w, &self.known()) {
            return false;
        }
        let x = match option_value(rule, w, !self.policy.paths.deny_read.is_empty()) {
            Ok(()) => return true,
            Err(Risk::Option(x)) => x,
            Err(_) => return false,
        };
        let pattern = w.glob_pattern().unwrap_or_default();
        let msg = format!(
            "bash expands the glob of `{written}` to file names, and one could be `{x}`, which `{}` would read as more of its arguments; quote the pattern (`{written} '{pattern}'`) to give it to `{}`",
            rule.name, rule.name,
        );
        let policy = self.policy;
        self.setting(
            ReasonCode::WordSplit,
            &policy.shell.dynamic_arguments,
            msg,
            w.span,
        );
        true
    }
}

/// A set of characters: some, or all but some. `/` is never in a file name, so it is in no
/// set that a pattern token matches.
#[derive(Clone, Debug)]
enum Set {
    Only(Vec<char>),
    AnyBut(Vec<char>),
}

impl Set {
    fn any() -> Set {
        Set::AnyBut(Vec::new())
    }

    fn one(c: char) -> Set {
        Set::Only(vec![c])
    }

    fn contains(&self, c: char) -> bool {
        match self {
            Set::Only(v) => v.contains(&c),
            Set::AnyBut(v) => !v.contains(&c),
        }
    }

    /// A character in both sets that a file name can hold (never `/` or NUL).
    fn meet(&self, other: &Set) -> Option<char> {
        let ok = |c: char| c != '/' && c != '\0';
        match (self, other) {
            (Set::Only(a), b) | (b, Set::Only(a)) => {
                a.iter().copied().find(|&c| ok(c) && b.contains(c))
            }
            (Set::AnyBut(a), Set::AnyBut(b)) => ('!'..='~')
                .chain(['\u{e9}'])
                .find(|&c| ok(c) && !a.contains(&c) && !b.contains(&c)),
        }
    }
}

/// One token of a pattern.
#[derive(Clone, Debug)]
enum Tok {
    /// One character of a set (a literal, `?`, a bracket expression).
    Set(Set),
    /// `*`: any run of characters.
    Star,
}

/// A glob word read: its tokens, and the word it stays when nothing matches.
#[derive(Debug)]
pub(super) struct Pattern {
    toks: Vec<Tok>,
    unmatched: String,
}

impl Pattern {
    /// Read a word that bash globs; `None` when some part is not a static text or a pattern
    /// this file understands (an expansion, an extended glob, a bracket it cannot bound).
    pub(super) fn of(w: &Word) -> Option<Pattern> {
        let mut toks = Vec::new();
        let mut unmatched = String::new();
        // After a bracket with quotes inside (`[\>\<]`), where it ends is not known here:
        // every later character is taken as `*` (more words, never fewer).
        let mut rest_any = false;
        let mut any_glob = false;
        for part in &w.parts {
            match part {
                WordPart::Glob(g) => {
                    any_glob = true;
                    unmatched.push_str(g);
                    if rest_any {
                        continue;
                    }
                    match g.as_str() {
                        "*" => toks.push(Tok::Star),
                        "?" => toks.push(Tok::Set(Set::any())),
                        "[" => {
                            toks.push(Tok::Star);
                            rest_any = true;
                        }
                        g if g.len() >= 3 && g.starts_with('[') && g.ends_with(']') => {
                            match bracket(&g[1..g.len() - 1]) {
                                Some(set) => toks.push(Tok::Set(set)),
                                // A class (`[[:alpha:]]`): where bash ends the bracket
                                // is past the first `]`; anything from here on.
                                None => {
                                    toks.push(Tok::Star);
                                    rest_any = true;
                                }
                            }
                        }
                        _ => return None,
                    }
                }
                other => {
                    let text = Word {
                        span: w.span,
                        parts: vec![other.clone()],
                    }
                    .static_value()?;
                    unmatched.push_str(&text);
                    if !rest_any {
                        toks.extend(text.chars().map(|c| Tok::Set(Set::one(c))));
                    }
                }
            }
        }
        any_glob.then_some(Pattern { toks, unmatched })
    }

    /// Whether some word this glob can become starts with `c`.
    fn may_start_with(&self, c: char) -> bool {
        self.unmatched.starts_with(c)
            || match self.toks.first() {
                None => false,
                Some(Tok::Star) => true,
                Some(Tok::Set(s)) => s.contains(c),
            }
    }

    /// A word this glob can become that `lang` holds, if there is one.
    fn witness(&self, lang: &Nfa) -> Option<String> {
        if lang.accepts(&self.unmatched) {
            return Some(self.unmatched.clone());
        }
        lang.meet(&self.toks)
    }
}

/// The set of a bracket expression's inside (`a-z`, `!.`), or `None` for a class, an
/// equivalence class or a collating symbol (`[:alpha:]`, whose `]` bash does not take as the
/// end of the bracket) and for ranges too wide to list.
fn bracket(inner: &str) -> Option<Set> {
    let chars: Vec<char> = inner.chars().collect();
    let (negated, mut i) = match chars.first() {
        Some('!' | '^') => (true, 1),
        _ => (false, 0),
    };
    let mut set = Vec::new();
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '=' | '.')) {
            return None;
        }
        if !first && c == '-' && i + 1 < chars.len() {
            let lo = *set.last()?;
            let hi = chars[i + 1];
            if (hi as u32).saturating_sub(lo as u32) > 512 {
                return None;
            }
            set.extend((lo..=hi).skip(1));
            i += 2;
            continue;
        }
        set.push(c);
        first = false;
        i += 1;
    }
    Some(if negated {
        Set::AnyBut(set)
    } else {
        Set::Only(set)
    })
}

/// A nondeterministic automaton over character sets, without empty moves.
#[derive(Debug)]
pub(super) struct Nfa {
    edges: Vec<Vec<(Set, usize)>>,
    accept: Vec<bool>,
}

/// The start state and the state that accepts any rest of a word.
const START: usize = 0;
const ANY: usize = 1;

impl Nfa {
    fn new() -> Nfa {
        let mut n = Nfa {
            edges: vec![Vec::new(), Vec::new()],
            accept: vec![false, true],
        };
        n.edge(ANY, Set::any(), ANY);
        n
    }

    fn state(&mut self) -> usize {
        self.edges.push(Vec::new());
        self.accept.push(false);
        self.edges.len() - 1
    }

    fn edge(&mut self, from: usize, set: Set, to: usize) {
        self.edges[from].push((set, to));
    }

    /// Add the word `w`, then (with `rest`) any text after it, the empty text included.
    fn word(&mut self, w: &str, rest: bool) {
        let mut at = START;
        for c in w.chars() {
            let next = self.edges[at].iter().find_map(|(s, to)| match s {
                Set::Only(v) if v.len() == 1 && v[0] == c && *to != ANY => Some(*to),
                _ => None,
            });
            at = match next {
                Some(n) => n,
                None => {
                    let n = self.state();
                    self.edge(at, Set::one(c), n);
                    n
                }
            };
        }
        self.accept[at] = true;
        if rest {
            self.edge(at, Set::any(), ANY);
        }
    }

    fn accepts(&self, s: &str) -> bool {
        let mut now = vec![START];
        for c in s.chars() {
            let mut next: Vec<usize> = Vec::new();
            for &q in &now {
                for (set, to) in &self.edges[q] {
                    if set.contains(c) && !next.contains(to) {
                        next.push(*to);
                    }
                }
            }
            if next.is_empty() {
                return false;
            }
            now = next;
        }
        now.iter().any(|&q| self.accept[q])
    }

    /// A non-empty word the pattern matches and this automaton accepts (breadth first, so
    /// the shortest), if one exists.
    fn meet(&self, toks: &[Tok]) -> Option<String> {
        use std::collections::{HashMap, VecDeque};
        type Node = (usize, usize);
        let mut parent: HashMap<Node, Option<(Node, Option<char>)>> = HashMap::new();
        let mut queue = VecDeque::new();
        parent.insert((0, START), None);
        queue.push_back((0, START));
        let file_char = Set::AnyBut(vec!['/']);
        while let Some(node @ (t, q)) = queue.pop_front() {
            if t == toks.len() && self.accept[q] && q != START {
                let mut out = Vec::new();
                let mut at = node;
                while let Some(Some((prev, c))) = parent.get(&at) {
                    out.extend(*c);
                    at = *prev;
                }
                out.reverse();
                return Some(out.into_iter().collect());
            }
            let mut push = |n: Node, c: Option<char>, queue: &mut VecDeque<Node>| {
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(n) {
                    e.insert(Some((node, c)));
                    queue.push_back(n);
                }
            };
            match toks.get(t) {
                None => {}
                Some(Tok::Star) => {
                    push((t + 1, q), None, &mut queue);
                    for (set, to) in &self.edges[q] {
                        if let Some(c) = set.meet(&file_char) {
                            push((t, *to), Some(c), &mut queue);
                        }
                    }
                }
                Some(Tok::Set(s)) => {
                    for (set, to) in &self.edges[q] {
                        if let Some(c) = set.meet(s) {
                            push((t + 1, *to), Some(c), &mut queue);
                        }
                    }
                }
            }
        }
        None
    }
}

/// The option words of a program that matter for a glob: those the policy refuses (or whose
/// effect it cannot check when a file name supplies them), those that take the next word
/// or end the options, and every option word at all.
pub(super) struct OptionWords {
    harm: Nfa,
    shift: Nfa,
    all: Nfa,
}

/// Every option the rule names, in any of its lists.
fn names(rule: &ProgramRule) -> std::collections::BTreeSet<&str> {
    let lists = [
        &rule.options_with_value,
        &rule.options_with_optional_value,
        &rule.deny_options,
        &rule.ask_options,
        &rule.write_options,
        &rule.terminal_options,
        &rule.delegate_options,
        &rule.flags,
        &rule.pattern_options,
        &rule.options_with_two_values,
        &rule.required_options,
    ];
    let mut out: std::collections::BTreeSet<&str> = lists
        .iter()
        .flat_map(|l| l.iter())
        .map(String::as_str)
        .collect();
    out.extend(rule.allow_options.iter().flatten().map(String::as_str));
    out.extend(rule.option_kinds.keys().map(String::as_str));
    out.extend(rule.option_values.keys().map(String::as_str));
    out
}

impl OptionWords {
    /// `reads_carved`: the policy refuses some reads inside its read roots (`deny_read`), so
    /// a file name given as a path-read value (`grep -f.env`) may be one of them.
    pub(super) fn of(rule: &ProgramRule, reads_carved: bool) -> OptionWords {
        let ix = rule.index();
        let mut harm = Nfa::new();
        let mut shift = Nfa::new();
        let mut all = Nfa::new();
        // An option whose value a file name would supply unchecked, or that the policy refuses.
        let bad = |o: &str| {
            let f = ix.facts(o);
            let kind = ix.kind(o);
            let kind_bad = match kind {
                // A suffix is only a written path with a `/`, which no file name has.
                ArgKind::Text | ArgKind::Pattern | ArgKind::BackupSuffix => false,
                ArgKind::PathRead => !rule.harmless_options || reads_carved,
                _ => true,
            };
            f.any(
                OptionFacts::DENY
                    | OptionFacts::ASK
                    | OptionFacts::WRITE
                    | OptionFacts::DELEGATE
                    | OptionFacts::VALUE_PATTERN,
            ) || (rule.allow_options.is_some() && !f.any(OptionFacts::ALLOW))
                || kind_bad
        };
        let takes_next = |o: &str| {
            ix.facts(o)
                .any(OptionFacts::WITH_VALUE | OptionFacts::TERMINAL)
        };
        let valued = |o: &str| {
            ix.facts(o)
                .any(OptionFacts::WITH_VALUE | OptionFacts::OPTIONAL_VALUE)
        };
        // Where the lists do not name every option, a word starting with `-` may be one the
        // policy never saw: refused if an allowlist is set, and it may always take a value.
        let unknown_bad = !rule.options_complete && rule.allow_options.is_some();
        let unknown_shifts = !rule.options_complete;
        shift.word("--", false);
        all.word("--", false);
        if ix.plus_options {
            harm.word("+", true);
            shift.word("+", true);
            all.word("+", true);
        }
        if unknown_bad {
            harm.word("-", true);
        }
        if unknown_shifts {
            shift.word("-", true);
            all.word("-", true);
        }
        let names = names(rule);
        if rule.single_dash_long {
            // find reads `-H -L -P -D -O` only before its paths: in the expression they are
            // unknown predicates (an error), so they are no words of its expression.
            let find = rule.name == "find";
            for o in &names {
                let glued =
                    (o.chars().count() == 2 && valued(o)) || rule.glued_options.contains(*o);
                if bad(o) {
                    harm.word(o, glued);
                }
                if takes_next(o) {
                    shift.word(o, false);
                }
                if !(find && ["-H", "-L", "-P", "-D", "-O"].contains(o)) {
                    all.word(o, glued);
                }
                // The evaluator also reads `--NAME=VALUE` as the option `--NAME` (found by the
                // argv campaign: `find . *.txt` with a file `--files0-from=a.txt`): such a
                // word is never harmless where the program's options are refused.
                if o.len() > 2 && !o.starts_with("--") && valued(o) && bad(o) {
                    harm.word(&format!("-{o}="), true);
                }
            }
            // find's operators are words of the expression too.
            if rule.name == "find" {
                for op in ["(", ")", "!", ","] {
                    all.word(op, false);
                }
            }
            return OptionWords { harm, shift, all };
        }
        // Long options: each abbreviation getopt_long accepts (any prefix of three or more
        // bytes: an ambiguous one is an error, taken as the option here), alone or with
        // `=VALUE`.
        let mut short: [Vec<char>; 5] = Default::default();
        const F_GOOD: usize = 0;
        const F_BAD: usize = 1;
        const V_GOOD: usize = 2;
        const V_BAD: usize = 3;
        const V_NEXT: usize = 4;
        for o in &names {
            if let Some(long) = o.strip_prefix("--") {
                if long.is_empty() {
                    continue;
                }
                for n in (3..=o.len()).filter(|&n| o.is_char_boundary(n)) {
                    let p = &o[..n];
                    // `--flag=x` of an option without a value is an error.
                    if bad(o) {
                        harm.word(p, false);
                        if valued(o) {
                            harm.word(&format!("{p}="), true);
                        }
                    }
                    if takes_next(o) {
                        shift.word(p, false);
                    }
                    all.word(p, false);
                    all.word(&format!("{p}="), true);
                }
                continue;
            }
            let mut cs = o.chars();
            let (Some(sign), Some(c), None) = (cs.next(), cs.next(), cs.next()) else {
                // An option word of another shape (`-name` in a getopt program): exact.
                if bad(o) {
                    harm.word(o, true);
                }
                shift.word(o, true);
                all.word(o, true);
                continue;
            };
            if sign != '-' {
                continue;
            }
            let v = valued(o);
            short[match (v, bad(o)) {
                (false, false) => F_GOOD,
                (false, true) => F_BAD,
                (true, false) => V_GOOD,
                (true, true) => V_BAD,
            }]
            .push(c);
            if takes_next(o) {
                short[V_NEXT].push(c);
            }
        }
        // Clusters: `-` flags* then a refused flag (and more flags), or a refused option
        // with a value, glued or not.
        let flags_all: Vec<char> = short[F_GOOD].iter().chain(&short[F_BAD]).copied().collect();
        let values_all: Vec<char> = short[V_GOOD].iter().chain(&short[V_BAD]).copied().collect();
        let known: Vec<char> = flags_all.iter().chain(&values_all).copied().collect();
        {
            let q1 = harm.state();
            let q2 = harm.state();
            harm.edge(START, Set::one('-'), q1);
            harm.edge(q1, Set::Only(short[F_GOOD].clone()), q1);
            harm.edge(q1, Set::Only(short[F_BAD].clone()), q2);
            harm.edge(q2, Set::Only(flags_all.clone()), q2);
            harm.edge(q1, Set::Only(short[V_BAD].clone()), ANY);
            harm.edge(q2, Set::Only(values_all.clone()), ANY);
            harm.accept[q2] = true;
            if unknown_bad {
                let mut not_known = known.clone();
                not_known.push('-');
                harm.edge(q1, Set::AnyBut(not_known.clone()), ANY);
                harm.edge(q2, Set::AnyBut(not_known), ANY);
            }
        }
        {
            let p1 = shift.state();
            let p2 = shift.state();
            shift.edge(START, Set::one('-'), p1);
            shift.edge(p1, Set::Only(flags_all.clone()), p1);
            shift.edge(p1, Set::Only(short[V_NEXT].clone()), p2);
            shift.accept[p2] = true;
        }
        {
            let a1 = all.state();
            all.edge(START, Set::one('-'), a1);
            all.edge(a1, Set::Only(known), ANY);
        }
        OptionWords { harm, shift, all }
    }
}

/// Why a glob is not a harmless argument: a word it can become, and what that word is.
#[derive(Debug)]
pub(super) enum Risk {
    /// The pattern is not one this file reads.
    Unread,
    /// A match would be this option, which the policy refuses or cannot check.
    Option(String),
    /// A match would be this option or `--`, changing what the words after the glob are.
    Shift(String),
}

/// Whether some text starting with `prefix` holds a match of `pattern` (how argument patterns
/// are matched: anywhere in the word, `^` at its start). Decided on the regex's lazy DFA: run
/// the prefix, then search every state reachable on any byte for a match. Anything the DFA
/// cannot build or explore within its budget counts as a match.
fn may_match_after(pattern: &str, prefix: &str) -> bool {
    use regex_automata::hybrid::dfa::DFA;
    use regex_automata::{Anchored, Input};
    const STATES: usize = 4096;
    let Ok(dfa) = DFA::builder()
        .configure(DFA::config().cache_capacity(8 << 20))
        .build(pattern)
    else {
        return true;
    };
    let mut cache = dfa.create_cache();
    let input = Input::new(prefix).anchored(Anchored::No);
    let Ok(mut s) = dfa.start_state_forward(&mut cache, &input) else {
        return true;
    };
    let clears = cache.clear_count();
    for &b in prefix.as_bytes() {
        match dfa.next_state(&mut cache, s, b) {
            Ok(n) if n.is_match() => return true,
            Ok(n) if n.is_dead() => return false,
            Ok(n) => s = n,
            Err(_) => return true,
        }
    }
    let mut seen = std::collections::HashSet::from([s]);
    let mut todo = vec![s];
    while let Some(s) = todo.pop() {
        if cache.clear_count() != clears || seen.len() > STATES {
            return true;
        }
        match dfa.next_eoi_state(&mut cache, s) {
            Ok(n) if n.is_match() => return true,
            Ok(_) => {}
            Err(_) => return true,
        }
        for b in 0..=255u8 {
            match dfa.next_state(&mut cache, s, b) {
                Ok(n) if n.is_match() => return true,
                Ok(n) if n.is_dead() || n.is_quit() => {}
                Ok(n) => {
                    if seen.insert(n) {
                        todo.push(n);
                    }
                }
                Err(_) => return true,
            }
        }
    }
    cache.clear_count() != clears
}

/// A glob in an argument position of `rule`: harmless, or why not. `literal_after`: some
/// word that is not itself a harmless glob comes after it.
pub(super) fn argument(
    rule: &ProgramRule,
    w: &Word,
    literal_after: bool,
    reads_carved: bool,
) -> Result<(), Risk> {
    if !rule.args.is_empty() || (literal_after && rule.options_before_operands) {
        return Err(Risk::Unread);
    }
    let p = Pattern::of(w).ok_or(Risk::Unread)?;
    let may_be_option =
        p.may_start_with('-') || (rule.index().plus_options && p.may_start_with('+'));
    if !may_be_option {
        return Ok(());
    }
    let words = OptionWords::of(rule, reads_carved);
    if let Some(x) = p.witness(&words.harm) {
        return Err(Risk::Option(x));
    }
    if literal_after {
        if let Some(x) = p.witness(&words.shift) {
            return Err(Risk::Shift(x));
        }
    }
    Ok(())
}

/// A glob as the value of an option of a program whose options are words (`find -name
/// *.jpg`): its first match is the value, and every further match is read as another word
/// of the expression. Harmless when no match can be any option word of the program.
pub(super) fn option_value(rule: &ProgramRule, w: &Word, reads_carved: bool) -> Result<(), Risk> {
    if !rule.single_dash_long || !rule.options_complete || !rule.args.is_empty() {
        return Err(Risk::Unread);
    }
    let p = Pattern::of(w).ok_or(Risk::Unread)?;
    let words = OptionWords::of(rule, reads_carved);
    match p.witness(&words.all) {
        Some(x) => Err(Risk::Option(x)),
        None => Ok(()),
    }
}

/// Whether a glob at operand `idx` (of `count`) that is not among the repeated middle
/// operands still has every extra match land where any file name is read the same way: it
/// is the last fixed leading operand, nothing is fixed at the end, and the repeated kind
/// after it is a path or text (`grep PATTERN FILE...` with a glob pattern: the extra matches
/// are more files, and the words after the glob were files already).
pub(super) fn lands_in_repeat(spec: &OperandSpec, idx: usize) -> Option<ArgKind> {
    let repeat = spec.repeat?;
    let fits = spec.tail.is_empty()
        && idx + 1 == spec.head.len()
        && matches!(
            repeat,
            ArgKind::PathRead | ArgKind::PathWrite | ArgKind::Text | ArgKind::Pattern
        );
    fits.then_some(repeat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse;

    fn pattern(cmd: &str) -> Pattern {
        let script = parse(cmd).expect("parses");
        let c = script.all_simple_commands()[0].clone();
        Pattern::of(&c.words[1]).expect("a glob")
    }

    fn lang(words: &[(&str, bool)]) -> Nfa {
        let mut n = Nfa::new();
        for (w, rest) in words {
            n.word(w, *rest);
        }
        n
    }

    #[test]
    fn argument_patterns_are_judged_from_the_known_beginning() {
        assert!(may_match_after("^@", ""));
        assert!(!may_match_after("^@", "a"));
        assert!(may_match_after("^@", "@"));
        assert!(may_match_after("^\\+", ""));
        assert!(!may_match_after("^\\+", "./"));
        // Unanchored: `./x.tgz` ends in `.tgz` whatever came first.
        assert!(may_match_after("\\.(tgz|tar\\.gz)$", "./"));
        assert!(may_match_after("(?i)^(core|alias)", "CO"));
        assert!(!may_match_after("(?i)^(core|alias)", "user."));
    }

    #[test]
    fn a_literal_tail_rules_out_exact_words() {
        let l = lang(&[("-delete", false), ("-fprint", false)]);
        assert_eq!(pattern("x *.jpg").witness(&l), None);
        assert_eq!(pattern("x *").witness(&l).as_deref(), Some("-delete"));
        assert_eq!(pattern("x -f*").witness(&l).as_deref(), Some("-fprint"));
        assert_eq!(pattern("x *t").witness(&l).as_deref(), Some("-fprint"));
    }

    #[test]
    fn glued_values_take_any_tail() {
        let l = lang(&[("-o", true)]);
        assert_eq!(pattern("x *.txt").witness(&l).as_deref(), Some("-o.txt"));
        assert_eq!(pattern("x [!-]*").witness(&l), None);
        assert_eq!(pattern("x ?o*").witness(&l).as_deref(), Some("-o"));
    }

    #[test]
    fn brackets_are_sets() {
        let l = lang(&[("-x", false)]);
        assert!(pattern("x [-]x").witness(&l).is_some());
        assert!(pattern("x [a-c]x").witness(&l).is_none());
        assert!(pattern("x [!a]x").witness(&l).is_some());
        // A class is anything from there on (bash's bracket ends past the first `]`).
        let l = lang(&[("-delete", false)]);
        assert!(pattern("x [[:punct:]]delete").witness(&l).is_some());
        assert!(pattern("x [![:alpha:]]delete").witness(&l).is_some());
        assert!(pattern("x a[[:punct:]]delete").witness(&l).is_none());
    }

    #[test]
    fn the_unmatched_word_is_a_word_too() {
        // `-[o]x` matches no file named `-[o]x`, but with no match it stays `-[o]x`.
        let l = lang(&[("-[", true)]);
        assert_eq!(pattern("x -[o]x").witness(&l).as_deref(), Some("-[o]x"));
    }

    #[test]
    fn a_bracket_with_quotes_inside_is_anything_after_it() {
        let p = pattern(r"x ^[\>\<]");
        assert!(!p.may_start_with('-'));
        assert!(pattern(r"x [\-]x").may_start_with('-'));
    }
}
