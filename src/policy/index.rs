//! What the evaluator asks of a program rule on every argument, worked out once when the
//! policy is compiled: which of the rule's lists each option is in (one lookup instead of a
//! search of every list), the long options in order (so abbreviations are a range, not a
//! scan), and the facts that depend only on the rule.
//!
//! The index is derived from the rule's lists ([`ProgramSpec`]) and holds nothing else: a
//! [`ProgramRule`](super::ProgramRule) works it out at its first use and forgets it when the
//! loader (the only code that can) changes the rule, so it cannot go stale.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{ArgKind, ProgramSpec};

/// The lists of a rule an option is in, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OptionFacts(u32);

impl OptionFacts {
    pub(crate) const WITH_VALUE: u32 = 1 << 0;
    pub(crate) const OPTIONAL_VALUE: u32 = 1 << 1;
    pub(crate) const DENY: u32 = 1 << 2;
    pub(crate) const ASK: u32 = 1 << 3;
    pub(crate) const KIND: u32 = 1 << 4;
    pub(crate) const ALLOW: u32 = 1 << 5;
    pub(crate) const WRITE: u32 = 1 << 6;
    pub(crate) const TERMINAL: u32 = 1 << 7;
    pub(crate) const DELEGATE: u32 = 1 << 8;
    pub(crate) const FLAG: u32 = 1 << 9;
    pub(crate) const PATTERN: u32 = 1 << 10;
    pub(crate) const TWO_VALUES: u32 = 1 << 11;
    pub(crate) const VALUE_PATTERN: u32 = 1 << 12;
    pub(crate) const REQUIRED: u32 = 1 << 13;
    pub(crate) const IMPLICIT: u32 = 1 << 14;

    /// The lists that make an option one the rule knows (see `known_option`).
    const KNOWN: u32 = Self::WITH_VALUE
        | Self::OPTIONAL_VALUE
        | Self::DENY
        | Self::ASK
        | Self::KIND
        | Self::ALLOW
        | Self::WRITE
        | Self::TERMINAL
        | Self::DELEGATE
        | Self::FLAG;

    /// The lists a long option as written is resolved against (GNU abbreviations).
    const RESOLVABLE: u32 = Self::WITH_VALUE
        | Self::OPTIONAL_VALUE
        | Self::DENY
        | Self::ASK
        | Self::KIND
        | Self::ALLOW
        | Self::WRITE
        | Self::PATTERN;

    /// Whether the option is in any of the lists `bits`.
    pub(crate) fn any(self, bits: u32) -> bool {
        self.0 & bits != 0
    }

    /// Whether the rule names the option in a list that makes it known.
    pub(crate) fn known(self) -> bool {
        self.any(Self::KNOWN)
    }
}

/// FNV-1a: option names are a few bytes, and SipHash costs more than the lookup it serves.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// See the module documentation.
#[derive(Clone, Default, PartialEq)]
pub(crate) struct RuleIndex {
    /// Every option any list of the rule names, with the lists it is in and its value kind.
    options: HashMap<String, (OptionFacts, ArgKind), BuildHasherDefault<Fnv>>,
    /// The long options (`--x`) of the resolvable lists, sorted.
    long_resolvable: Vec<String>,
    /// The long options (`--x`) of `deny_options`, sorted.
    long_denied: Vec<String>,
    /// Words starting with `+` are options (`set +o`, or the rule names a `+` option).
    pub(crate) plus_options: bool,
    /// Some option of the program is refused, needs approval, or has a checked value.
    pub(crate) options_restricted: bool,
    /// Some operand has a kind that is checked (a path, a variable name, ...).
    pub(crate) checked_operands: bool,
    /// The rule restricts what the program's options and arguments may be: then an argument
    /// only known at run time could be something the rule refuses.
    ///
    /// A program whose every option is allowed is still restricted when it has options that
    /// take a value and operands of a checked kind: a run-time word could become `--` or an
    /// option that takes the next word, and then a word checked as an option's value is
    /// really an operand (`x=--; head $x -n /etc/passwd` reads `/etc/passwd`).
    pub(crate) restricted: bool,
    /// No option reachable from a glob's file name can do harm by itself (the program's
    /// options are harmless and none is refused, or none is restricted at all): only a match
    /// that shifts the words after it matters.
    pub(crate) harmless_globs: bool,
    /// A declaration builtin (`export`, `declare`, ...): an assignment word is one operand.
    pub(crate) declaration: bool,
}

impl std::fmt::Debug for RuleIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleIndex")
            .field("options", &self.options.len())
            .finish_non_exhaustive()
    }
}

impl RuleIndex {
    /// The index of `rule`'s lists (not of its subcommands).
    pub(crate) fn of(rule: &ProgramSpec) -> RuleIndex {
        let mut options: HashMap<String, (OptionFacts, ArgKind), BuildHasherDefault<Fnv>> =
            HashMap::default();
        let mut add = |names: &mut dyn Iterator<Item = &String>, bit: u32| {
            for n in names {
                options
                    .entry(n.clone())
                    .or_insert((OptionFacts(0), ArgKind::Text))
                    .0
                     .0 |= bit;
            }
        };
        add(&mut rule.options_with_value.iter(), OptionFacts::WITH_VALUE);
        add(
            &mut rule.options_with_optional_value.iter(),
            OptionFacts::OPTIONAL_VALUE,
        );
        add(&mut rule.deny_options.iter(), OptionFacts::DENY);
        add(&mut rule.ask_options.iter(), OptionFacts::ASK);
        add(&mut rule.option_kinds.keys(), OptionFacts::KIND);
        add(&mut rule.allow_options.iter().flatten(), OptionFacts::ALLOW);
        add(&mut rule.write_options.iter(), OptionFacts::WRITE);
        add(&mut rule.terminal_options.iter(), OptionFacts::TERMINAL);
        add(&mut rule.delegate_options.iter(), OptionFacts::DELEGATE);
        add(&mut rule.flags.iter(), OptionFacts::FLAG);
        add(&mut rule.pattern_options.iter(), OptionFacts::PATTERN);
        add(
            &mut rule.options_with_two_values.iter(),
            OptionFacts::TWO_VALUES,
        );
        add(&mut rule.option_values.keys(), OptionFacts::VALUE_PATTERN);
        add(&mut rule.required_options.iter(), OptionFacts::REQUIRED);
        add(
            &mut rule.implicit_operand_options.iter(),
            OptionFacts::IMPLICIT,
        );
        for (name, kind) in &rule.option_kinds {
            if let Some(entry) = options.get_mut(name) {
                entry.1 = *kind;
            }
        }
        let long = |bits: u32| {
            let mut v: Vec<String> = options
                .iter()
                .filter(|(n, (f, _))| n.starts_with("--") && f.any(bits))
                .map(|(n, _)| n.clone())
                .collect();
            v.sort();
            v
        };
        let long_resolvable = long(OptionFacts::RESOLVABLE);
        let long_denied = long(OptionFacts::DENY);
        let plus_options = matches!(
            rule.name.as_str(),
            "set" | "declare" | "typeset" | "local" | "export" | "readonly" | "shopt"
        ) || rule
            .options_with_value
            .iter()
            .chain(&rule.deny_options)
            .chain(&rule.ask_options)
            .chain(rule.allow_options.iter().flatten())
            .chain(&rule.flags)
            .any(|o| o.starts_with('+'));
        let spec = &rule.operands;
        let checked_operands = spec
            .head
            .iter()
            .chain(spec.repeat.iter())
            .chain(spec.tail.iter())
            .any(|k| !k.is_inert());
        // An allowlist that names every option the program has (`options_complete`)
        // restricts nothing a run-time word could add: it can only be one of the options the
        // user could have written (or a denied one, and then `deny_options` is not empty).
        let options_restricted = !rule.deny_options.is_empty()
            || !rule.ask_options.is_empty()
            || (rule.allow_options.is_some() && !rule.options_complete)
            || !rule.option_kinds.values().all(|k| k.is_inert())
            || !rule.subcommands.is_empty()
            || !rule.args.is_empty();
        // An unknown `--` or option with a value would change which later words are checked
        // operands (`x=--; head $x -n /etc/passwd` reads `/etc/passwd`).
        let shifts_roles = !rule.options_with_value.is_empty() && checked_operands;
        // A program with refused options is never harmless: a match could be one.
        let harmless_globs =
            (rule.harmless_options && rule.deny_options.is_empty() && rule.ask_options.is_empty())
                || !options_restricted;
        RuleIndex {
            options,
            long_resolvable,
            long_denied,
            plus_options,
            options_restricted,
            checked_operands,
            restricted: options_restricted || shifts_roles,
            harmless_globs,
            declaration: matches!(
                rule.name.as_str(),
                "export" | "declare" | "typeset" | "local" | "readonly"
            ),
        }
    }

    /// The lists `opt` is in (none for an option the rule does not name).
    pub(crate) fn facts(&self, opt: &str) -> OptionFacts {
        self.options.get(opt).map_or(OptionFacts(0), |e| e.0)
    }

    /// The kind of `opt`'s value (`option_kinds`, else text).
    pub(crate) fn kind(&self, opt: &str) -> ArgKind {
        match self.options.get(opt) {
            Some((f, kind)) if f.any(OptionFacts::KIND) => *kind,
            _ => ArgKind::Text,
        }
    }

    /// A long option as written resolved to the option it abbreviates, among the rule's
    /// resolvable lists: itself if a list names it, the one option it is a prefix of, or
    /// itself when it is a prefix of none or of several.
    pub(crate) fn resolve_long<'x>(&'x self, name: &'x str) -> &'x str {
        let start = self.long_resolvable.partition_point(|k| k.as_str() < name);
        let mut found = self.long_resolvable[start..]
            .iter()
            .take_while(|k| k.starts_with(name));
        match (found.next(), found.next()) {
            (Some(only), None) => only,
            _ => name,
        }
    }

    /// Whether a denied long option starts with `prefix`.
    pub(crate) fn denied_with_prefix(&self, prefix: &str) -> bool {
        let start = self.long_denied.partition_point(|k| k.as_str() < prefix);
        self.long_denied
            .get(start)
            .is_some_and(|k| k.starts_with(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ProgramRule;

    /// Every rule, its subcommands and its `after_double_dash` rule, depth first.
    fn each<'a>(rule: &'a ProgramRule, out: &mut Vec<&'a ProgramRule>) {
        out.push(rule);
        for sub in rule.subcommands.values() {
            each(sub, out);
        }
        if let Some(dd) = &rule.after_double_dash {
            each(dd, out);
        }
    }

    /// A rule's index is the one its lists make, however the rule was made: loaded from
    /// TOML (includes extended, options inherited by subcommands, `replace = true`),
    /// decoded from the binary form, or changed after its index was first read.
    #[test]
    fn every_rule_is_indexed_as_its_lists_say() {
        let merged = "[policy]\ninclude = [\"read-only\"]\n\
                      [programs.sort]\nallow_options = [\"-n\"]\n\
                      [programs.npm]\ninherit_options = true\noptions_with_value = [\"--prefix\"]\n\
                      allow_options = [\"--prefix\"]\ndeny_options = [\"--global\"]\n\
                      [programs.npm.subcommands.ci]\nallow_options = [\"--ignore-scripts\"]\n\
                      [programs.cat]\nreplace = true\nallow_options = [\"-n\"]\n";
        let mut policies = Vec::new();
        for (name, _) in crate::policy::SHIPPED {
            policies.push(crate::Policy::shipped(name).expect("ships"));
        }
        policies.push(crate::Policy::from_toml(merged, "merged.toml").expect("loads"));
        let decoded: Vec<_> = policies
            .iter()
            .map(|p| {
                let bytes = crate::policy::binary::to_bytes(p).expect("a binary form");
                crate::policy::binary::from_bytes(&bytes).expect("reads back")
            })
            .collect();
        let mut checked = 0;
        for policy in policies.iter().chain(&decoded) {
            let mut rules = Vec::new();
            for rule in policy
                .programs
                .values()
                .chain(policy.sandbox.programs.values())
            {
                each(rule, &mut rules);
            }
            for rule in rules {
                assert!(
                    *rule.index() == RuleIndex::of(rule),
                    "{}: the index of `{}` is not its lists'",
                    policy.name,
                    rule.name
                );
                checked += 1;
            }
        }
        assert!(checked > 200, "only {checked} rules");
        // A change after the index was worked out is seen: the index is worked out again.
        let mut rule = policies[0].programs.get("cat").expect("cat").clone();
        assert!(rule.index().facts("--zzz").0 & OptionFacts::DENY == 0);
        rule.edit(|spec| {
            spec.deny_options.insert("--zzz".to_string());
        });
        assert!(rule.index().facts("--zzz").0 & OptionFacts::DENY != 0);
        assert!(*rule.index() == RuleIndex::of(&rule));
        let npm = policies
            .last()
            .and_then(|p| p.programs.get("npm"))
            .expect("npm");
        let ci = npm.subcommands.get("ci").expect("npm ci");
        assert!(
            ci.index().facts("--global").0 & OptionFacts::DENY != 0,
            "the inherited denial is in the subcommand's index"
        );
    }
}
