//! The value gate: a rule's filters run on the values a line could give the rule, before its
//! regex runs.
//!
//! Most rules whose secret is a plain value (the generic assignment rule above all) end in
//! the secret group, a greedy run of one byte class (`(?P<secret>[^\s"',;]{8,})`), after a
//! prefix that always consumes something (a key name, an operator, a quote). Then every secret
//! the regex can capture starts right after a byte the prefix can end with, and ends where the
//! run of the class ends (nothing after the group can make the run stop earlier). So the
//! values a line can give the rule are few and found by one scan of the line; when the rule's
//! filters (entropy for the charset, stopwords, allow patterns) reject all of them, the regex
//! could find nothing it would keep, and it does not run. On look-alike-dense text (digests,
//! placeholders, `token_type: Bearer`) this takes the capture engine off most keyword lines;
//! the result is the same, byte for byte, because the gate only skips a regex whose every
//! match the filters would have rejected.

use regex::bytes::{Regex, RegexBuilder};
use regex_automata::{hybrid, nfa::thompson, Anchored, Input, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};

/// Most candidate bytes the gate measures on one line, and most candidate starts it reads the
/// prefix back from, before it gives up and lets the regex run (whose own work is bounded):
/// a hostile line of many short runs costs no more than the regex would.
const BUDGET: usize = 8 * 1024;
const MAX_CANDIDATES: usize = 64;

/// What the gate knows of a rule's regex.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Every byte a secret can hold.
    class: [bool; 256],
    /// Bytes the part of the pattern before the secret can end with.
    after: [bool; 256],
    /// Fewest bytes of the secret.
    min: usize,
    /// Where a secret starting at a candidate ends: the secret group alone, anchored, run on
    /// the rest of the line; `None` when the group is a greedy, unbounded run of one class
    /// (then the secret is the whole run, found by the scan).
    extent: Option<Regex>,
    /// The part of the pattern before the secret, reversed: a candidate start is one where it
    /// matches, read backwards from there (so `src/token.rs#L12` is no value of a key
    /// `token`, and the `-` of `repo-12` is no `<-`).
    prefix: hybrid::dfa::DFA,
}

/// The per-search state of a gate (the reverse DFA's cache), kept by each redactor.
pub(crate) type GateCache = hybrid::dfa::Cache;

impl Gate {
    /// The gate of `pattern` (bytes, Unicode off, as the engine compiles it) whose secret is
    /// capture group `group`, or `None` when the pattern does not have the shape the gate
    /// needs (then the regex always runs): the secret group last, with no look-around in it,
    /// after a part that cannot be empty.
    pub(crate) fn of(pattern: &str, group: usize) -> Option<Gate> {
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern)
            .ok()?;
        let HirKind::Concat(parts) = hir.kind() else {
            return None;
        };
        let (last, prefix) = parts.split_last()?;
        let HirKind::Capture(cap) = last.kind() else {
            return None;
        };
        if cap.index as usize != group || !cap.sub.properties().look_set().is_empty() {
            return None;
        }
        let (after, nullable) = last_bytes_of_concat(prefix);
        if nullable {
            return None;
        }
        let min = cap.sub.properties().minimum_len()?.max(1);
        let single = match cap.sub.kind() {
            HirKind::Repetition(rep) if rep.max.is_none() && rep.greedy => byte_set(&rep.sub),
            _ => None,
        };
        let (class, extent) = match single {
            Some(class) => (class, None),
            None => {
                // The group's first priority match from a candidate start is the secret the
                // whole pattern captures there: nothing follows the group.
                let extent = RegexBuilder::new(&format!("^(?:{})", cap.sub))
                    .unicode(false)
                    .size_limit(1 << 20)
                    .build()
                    .ok()?;
                (all_bytes(&cap.sub)?, Some(extent))
            }
        };
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .reverse(true)
                    .utf8(false)
                    .which_captures(thompson::WhichCaptures::None),
            )
            .build_from_hir(&Hir::concat(prefix.to_vec()))
            .ok()?;
        let prefix = hybrid::dfa::DFA::builder()
            .configure(
                hybrid::dfa::DFA::config()
                    .match_kind(MatchKind::All)
                    .cache_capacity(1 << 20),
            )
            .build_from_nfa(nfa)
            .ok()?;
        Some(Gate {
            class,
            after,
            min,
            extent,
            prefix,
        })
    }

    /// A cache for [`Gate::may_accept`].
    pub(crate) fn cache(&self) -> GateCache {
        self.prefix.create_cache()
    }

    /// Whether some value of `line` the rule's regex could capture passes `accepts`; `false`
    /// means no match of the regex on this line would be kept.
    pub(crate) fn may_accept(
        &self,
        line: &[u8],
        cache: &mut GateCache,
        accepts: impl Fn(&[u8]) -> bool,
    ) -> bool {
        let mut budget = BUDGET;
        let mut candidates = 0;
        let mut run_end = line.len();
        for s in (1..line.len()).rev() {
            let (Some(&b), Some(&before)) = (line.get(s), line.get(s - 1)) else {
                continue;
            };
            if !self.class[usize::from(b)] {
                run_end = s;
                continue;
            }
            if !self.after[usize::from(before)] || run_end - s < self.min {
                continue;
            }
            let Some(left) = budget.checked_sub(run_end - s) else {
                return true;
            };
            budget = left;
            candidates += 1;
            if candidates > MAX_CANDIDATES {
                return true;
            }
            // Whether it matches at all: the first match state read back ends the search.
            let before = Input::new(line)
                .range(..s)
                .anchored(Anchored::Yes)
                .earliest(true);
            match self.prefix.try_search_rev(cache, &before) {
                Ok(None) => continue,
                Ok(Some(_)) => {}
                // The lazy DFA gave up (its cache thrashed): let the regex decide.
                Err(_) => return true,
            }
            let end = match &self.extent {
                None => run_end,
                Some(re) => match line.get(s..run_end).and_then(|v| re.find(v)) {
                    Some(m) => s + m.end(),
                    None => continue,
                },
            };
            if line.get(s..end).is_some_and(&accepts) {
                return true;
            }
        }
        false
    }
}

/// The bytes one position of `hir` matches, when it is a single byte class or literal byte.
fn byte_set(hir: &Hir) -> Option<[bool; 256]> {
    let mut set = [false; 256];
    match hir.kind() {
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.iter() {
                for b in r.start()..=r.end() {
                    set[usize::from(b)] = true;
                }
            }
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.iter() {
                let (s, e) = (u32::from(r.start()), u32::from(r.end()));
                if e > 0x7f {
                    return None;
                }
                for b in s..=e {
                    set[b as usize] = true;
                }
            }
        }
        HirKind::Literal(l) if l.0.len() == 1 => set[usize::from(l.0[0])] = true,
        _ => return None,
    }
    Some(set)
}

/// Every byte a match of `hir` can hold (`None` for a Unicode class past ASCII).
fn all_bytes(hir: &Hir) -> Option<[bool; 256]> {
    let mut set = [false; 256];
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => {
            for &b in l.0.iter() {
                set[usize::from(b)] = true;
            }
        }
        HirKind::Class(_) => set = byte_set(hir)?,
        HirKind::Repetition(r) => set = all_bytes(&r.sub)?,
        HirKind::Capture(c) => set = all_bytes(&c.sub)?,
        HirKind::Concat(xs) | HirKind::Alternation(xs) => {
            for x in xs {
                union(&mut set, &all_bytes(x)?);
            }
        }
    }
    Some(set)
}

/// The bytes a match of `hir` can end with, and whether it can be empty.
fn last_bytes(hir: &Hir) -> ([bool; 256], bool) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => ([false; 256], true),
        HirKind::Literal(l) => match l.0.last() {
            Some(&b) => {
                let mut set = [false; 256];
                set[usize::from(b)] = true;
                (set, false)
            }
            None => ([false; 256], true),
        },
        HirKind::Class(Class::Bytes(_)) => match byte_set(hir) {
            Some(set) => (set, false),
            None => ([true; 256], false),
        },
        // Unicode classes are only written with `(?u)`: any byte may end their match.
        HirKind::Class(Class::Unicode(_)) => match byte_set(hir) {
            Some(set) => (set, false),
            None => ([true; 256], false),
        },
        HirKind::Repetition(r) => {
            let (set, nullable) = last_bytes(&r.sub);
            (set, nullable || r.min == 0)
        }
        HirKind::Capture(c) => last_bytes(&c.sub),
        HirKind::Concat(xs) => last_bytes_of_concat(xs),
        HirKind::Alternation(xs) => {
            let mut set = [false; 256];
            let mut nullable = false;
            for x in xs {
                let (s, n) = last_bytes(x);
                union(&mut set, &s);
                nullable |= n;
            }
            (set, nullable)
        }
    }
}

fn last_bytes_of_concat(xs: &[Hir]) -> ([bool; 256], bool) {
    let mut set = [false; 256];
    for x in xs.iter().rev() {
        let (s, nullable) = last_bytes(x);
        union(&mut set, &s);
        if !nullable {
            return (set, false);
        }
    }
    (set, true)
}

fn union(a: &mut [bool; 256], b: &[bool; 256]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x |= *y;
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;

    #[test]
    fn shapes_with_and_without_a_gate() {
        let g = Gate::of(r#"(?:key|token)\s*[:=]\s*["']?([^\s"']{8,})"#, 1).expect("gate");
        assert_eq!(g.min, 8);
        assert!(g.after[usize::from(b'=')] && g.after[usize::from(b':')]);
        assert!(g.after[usize::from(b' ')] && g.after[usize::from(b'"')]);
        assert!(!g.after[usize::from(b'x')]);
        // Something after the group, a look-around in it, a prefix that can be empty, or
        // another group than the secret's: no gate.
        assert!(Gate::of(r"key=([a-z]{8,})\b", 1).is_none());
        assert!(Gate::of(r"key=(\b[a-z]{8,})", 1).is_none());
        assert!(Gate::of(r"(?:key=)?([a-z]{8,})", 1).is_none());
        assert!(Gate::of(r"(key)=([a-z]{8,})", 1).is_none());
    }

    #[test]
    fn candidates_are_the_values_after_an_operator() {
        let g = Gate::of(r#"(?:key|token)\s*[:=]\s*["']?([^\s"']{8,})"#, 1).expect("gate");
        let seen = std::cell::RefCell::new(Vec::new());
        let any = g.may_accept(
            b"token: ab=cdefghij xyz \"0123456789\"",
            &mut g.cache(),
            |v| {
                seen.borrow_mut()
                    .push(String::from_utf8_lossy(v).into_owned());
                false
            },
        );
        assert!(!any);
        let mut seen = seen.into_inner();
        seen.sort();
        // Only where the part before the secret ends: after `token: `, not after the `=`
        // inside the value nor at the other runs' starts.
        assert_eq!(seen, ["ab=cdefghij"]);
        assert!(!g.may_accept(b"tokenizer: ab=cdefghij", &mut g.cache(), |_| true));
        assert!(!g.may_accept(b"x: \"0123456789\" y=abcdefghij", &mut g.cache(), |_| true));
        assert!(g.may_accept(b"token: ab=cdefghij", &mut g.cache(), |v| v
            == b"ab=cdefghij"));
        assert!(!g.may_accept(b"token: ab=cdefghij", &mut g.cache(), |v| v == b"cdefghij"));
    }

    #[test]
    fn a_group_of_another_shape_ends_where_the_regex_ends_it() {
        // A bounded run, a lazy one, and the dash rule of the assignment rules: the secret
        // is the group's own match from the candidate start.
        for (pattern, line, want) in [
            (r"key=([a-z]{3,5})", "key=abcdefg", "abcde"),
            (r"key=([a-z]{3,}?)", "key=abcdefg", "abc"),
            (
                r"key=((?:[^\s-]|-{1,2}[^\s-]){3,})",
                "key=ab-cd--e--- x",
                "ab-cd--e",
            ),
        ] {
            let g = Gate::of(pattern, 1).expect("gate");
            let seen = std::cell::RefCell::new(Vec::new());
            g.may_accept(line.as_bytes(), &mut g.cache(), |v| {
                seen.borrow_mut()
                    .push(String::from_utf8_lossy(v).into_owned());
                false
            });
            assert_eq!(seen.into_inner(), [want], "{pattern}");
            let re = regex::Regex::new(pattern).expect("compiles");
            assert_eq!(&re.captures(line).expect("matches")[1], want);
        }
    }

    #[test]
    fn a_hostile_line_costs_a_bounded_scan() {
        let g = Gate::of(r"(?:key|token)[:=-]([^\s]{8,})", 1).expect("gate");
        let line = "token-".repeat(20_000);
        let calls = std::cell::Cell::new(0usize);
        assert!(g.may_accept(line.as_bytes(), &mut g.cache(), |_| {
            calls.set(calls.get() + 1);
            false
        }));
        assert!(calls.get() < 100);
    }
}
