//! The compiled rule set: keyword prefilter, per-rule regexes, and line-level redaction.

use std::collections::HashMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::bytes::{Regex, RegexBuilder};

use super::config::{RedactConfig, RedactError, RuleDef};
use super::gate::Gate;
use super::stream::Redactor;
use super::Stats;

/// The built-in rule pack, as TOML in the [`RedactConfig`] schema.
pub const BUILTIN_RULES: &str = include_str!("rules.toml");

/// Keywords per packed (Teddy) searcher. Teddy handles up to 64 patterns, but its 8 buckets
/// then verify many false candidates; on the benchmark logs 16-24 per group cost least.
const KEYWORDS_PER_GROUP: usize = 20;

/// Rejected candidates retried one byte further on, per rule and line (bounds the work a
/// hostile line can cause).
const MAX_RETRIES: usize = 64;

/// One group of keywords: a packed (Teddy) searcher where the CPU has one, else aho-corasick.
#[derive(Debug)]
enum Keywords {
    /// Leftmost-longest Teddy; each pattern's rule list also holds the rules of the keywords
    /// that are its prefixes (they match wherever it does).
    Packed(aho_corasick::packed::Searcher),
    /// Overlapping aho-corasick search, for CPUs without Teddy.
    Ac(AhoCorasick),
}

/// The three kinds of rules.
#[derive(Debug)]
pub(crate) enum Kind {
    /// The regex runs on each line that has a keyword.
    Line,
    /// Line rule plus multi-line block handling (private-key blocks).
    Block { begin: Regex, end: Regex },
    /// The regex runs on lines indented under a header line; with `when`, only in mappings
    /// whose deciding key line (`key`) matches `value` (see [`super::SectionIf`]).
    Section {
        header: Regex,
        when: Option<(Regex, Regex)>,
    },
}

/// One rule: its definition, and its regexes, compiled on first use (most runs need few of
/// them: a rule is compiled when one of its keywords first shows up).
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) id: String,
    pub(crate) marker: Vec<u8>,
    /// Whether it is a section rule, known without compiling it.
    pub(crate) is_section: bool,
    compiled: OnceLock<Compiled>,
    pub(crate) def: RuleDef,
}

/// What a rule's definition compiles to.
#[derive(Debug)]
pub(crate) struct Compiled {
    regex: Regex,
    group: usize,
    /// The secret group spans the whole match (see [`group_is_whole_match`]).
    whole: bool,
    entropy: Option<f64>,
    /// Case-insensitive stopword matcher.
    stopwords: Option<AhoCorasick>,
    /// The rule's own allow patterns, as one regex (the global ones are the set's).
    allow: Option<Regex>,
    /// The capture group `key` and the patterns that make a key name no secret's.
    key_allow: Option<(usize, Regex)>,
    /// Literals a line must contain for the regex to run (`requires`).
    requires: Vec<memchr::memmem::Finder<'static>>,
    /// The values a line can give the rule, checked before the regex runs (line rules whose
    /// secret is a greedy run of one class at the end of the pattern; see [`Gate`]).
    gate: Option<Gate>,
    pub(crate) kind: Kind,
}

/// A compiled, immutable rule pack. Build it once ([`RuleSet::builtin`] is built on first use and
/// shared) and use it from any number of threads and [`Redactor`]s.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) rules: Vec<Rule>,
    /// Keyword searchers; each pattern id maps to the rules that keyword selects.
    groups: Vec<(Keywords, Vec<Vec<u32>>)>,
    /// The global allow patterns, as one regex compiled once for all rules, on first use.
    global_allow: Vec<String>,
    global_allow_re: OnceLock<Option<Regex>>,
    marker_re: OnceLock<Regex>,
}

fn compile(id: &str, field: &'static str, pattern: &str) -> Result<Regex, RedactError> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| RedactError::BadRegex {
            id: id.to_string(),
            field,
            message: e.to_string(),
        })
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

impl Rule {
    /// Checks what is cheap to check (id, keywords, entropy); the regexes are compiled by
    /// [`Compiled::new`], now ([`Rule::eager`]) or on first use.
    fn lazy(def: &RuleDef) -> Result<Rule, RedactError> {
        let id = def.id.as_str();
        if !is_kebab(id) {
            return Err(RedactError::BadId { id: id.to_string() });
        }
        if def.keywords.is_empty() {
            return Err(RedactError::BadKeyword {
                id: id.to_string(),
                problem: "needs at least one keyword".to_string(),
            });
        }
        for k in &def.keywords {
            if k.len() < 3 || k.contains('\n') {
                return Err(RedactError::BadKeyword {
                    id: id.to_string(),
                    problem: format!("keyword {k:?} must be 3 bytes or more, without newline"),
                });
            }
        }
        for r in &def.requires {
            if r.is_empty() || r.contains('\n') {
                return Err(RedactError::BadKeyword {
                    id: id.to_string(),
                    problem: format!("required literal {r:?} must be non-empty, without newline"),
                });
            }
        }
        if let Some(e) = def.entropy {
            if !(0.0..=8.0).contains(&e) {
                return Err(RedactError::BadEntropy {
                    id: id.to_string(),
                    value: e,
                });
            }
        }
        Ok(Rule {
            id: id.to_string(),
            marker: format!("[REDACTED:{id}]").into_bytes(),
            is_section: def.block.is_none() && def.section.is_some(),
            compiled: OnceLock::new(),
            def: def.clone(),
        })
    }

    /// A rule compiled now, so that every problem of its definition is reported now.
    fn eager(def: &RuleDef) -> Result<Rule, RedactError> {
        let rule = Rule::lazy(def)?;
        let compiled = Compiled::new(def)?;
        // A fresh OnceLock: `set` cannot fail.
        let _ = rule.compiled.set(compiled);
        Ok(rule)
    }

    /// The compiled rule. Only rules of the built-in pack (checked by the test suite:
    /// `every_rule_example_and_negative`) are left to compile here; rules from users are
    /// compiled when their set is built, so that their errors are reported then.
    pub(crate) fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| {
            // ok: see above; only the built-in pack compiles lazily, and it compiles.
            Compiled::new(&self.def).expect("built-in rules compile")
        })
    }
}

impl Compiled {
    fn new(def: &RuleDef) -> Result<Compiled, RedactError> {
        let id = def.id.as_str();
        let regex = compile(id, "regex", &def.regex)?;
        let group = match regex.capture_names().position(|n| n == Some("secret")) {
            Some(i) => i,
            None if regex.captures_len() > 1 => 1,
            None => return Err(RedactError::NoCaptureGroup { id: id.to_string() }),
        };
        // Each allow pattern is checked alone (for the error message); they run combined.
        for a in &def.allow {
            compile(id, "allow", a)?;
        }
        let allow = if def.allow.is_empty() {
            None
        } else {
            let all: Vec<String> = def.allow.iter().map(|p| format!("(?:{p})")).collect();
            Some(compile(id, "allow", &all.join("|"))?)
        };
        let key_allow = if def.key_allow.is_empty() {
            None
        } else {
            for a in &def.key_allow {
                compile(id, "key_allow", a)?;
            }
            let Some(k) = regex.capture_names().position(|n| n == Some("key")) else {
                return Err(RedactError::BadRegex {
                    id: id.to_string(),
                    field: "key_allow",
                    message: "needs a capture group named `key` in `regex`".to_string(),
                });
            };
            let all: Vec<String> = def.key_allow.iter().map(|p| format!("(?:{p})")).collect();
            Some((k, compile(id, "key_allow", &all.join("|"))?))
        };
        let stopwords = if def.stopwords.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&def.stopwords)
                    .map_err(|e| RedactError::BadKeyword {
                        id: id.to_string(),
                        problem: format!("stopwords: {e}"),
                    })?,
            )
        };
        let kind = match (&def.block, &def.section) {
            (Some(b), _) => Kind::Block {
                begin: compile(id, "block.begin", &format!(r"(?:{})[ \t\r]*\n?\z", b.begin))?,
                end: compile(id, "block.end", &b.end)?,
            },
            (None, Some(s)) => Kind::Section {
                header: compile(id, "section", s)?,
                when: match &def.section_if {
                    Some(w) => Some((
                        compile(id, "section_if.key", &w.key)?,
                        compile(id, "section_if.value", &w.value)?,
                    )),
                    None => None,
                },
            },
            (None, None) => Kind::Line,
        };
        let whole = group == 1 && group_is_whole_match(&def.regex, regex.captures_len());
        let gate = match kind {
            Kind::Line if !whole => Gate::of(&def.regex, group),
            _ => None,
        };
        Ok(Compiled {
            whole,
            gate,
            regex,
            group,
            entropy: def.entropy,
            stopwords,
            allow,
            key_allow,
            requires: def
                .requires
                .iter()
                .map(|r| memchr::memmem::Finder::new(r.as_bytes()).into_owned())
                .collect(),
            kind,
        })
    }

    /// Whether a candidate secret passes the rule's filters and the set's `global` allow.
    fn accepts(&self, secret: &[u8], global: Option<&Regex>) -> bool {
        if let Some(min) = self.entropy {
            if shannon_entropy(secret) < threshold_for(secret, min) {
                return false;
            }
        }
        if let Some(sw) = self.stopwords.as_ref().filter(|sw| sw.is_match(secret)) {
            // The randomness must come from outside the stopwords.
            let mut rest = Vec::with_capacity(secret.len());
            let mut at = 0;
            for m in sw.find_iter(secret) {
                rest.extend_from_slice(&secret[at..m.start()]);
                at = m.end();
            }
            rest.extend_from_slice(&secret[at..]);
            if rest.len() < MIN_REST
                || shannon_entropy(&rest) < threshold_for(&rest, self.entropy.unwrap_or(3.0))
            {
                return false;
            }
        }
        !self.allow.as_ref().is_some_and(|a| a.is_match(secret))
            && !global.is_some_and(|a| a.is_match(secret))
    }
}

/// Fewest bytes a secret must keep once its stopwords are taken out.
const MIN_REST: usize = 8;

/// The entropy `secret` must reach under a rule threshold `min` (bits per byte), which is set
/// for secrets drawn from a rich alphabet (64 symbols, 6 bits). A secret made only of digits
/// (10 symbols), only of hex digits (16; `-` and `:` allowed: UUIDs, `user:password` pairs) or only of one case of
/// letters and digits (36) cannot reach that: it is held to `min * (bits / 6)^0.75`, where
/// `bits` is its alphabet's capacity: 2.25 for digits, 2.6 for hex, 3.1 for lowercase letters
/// and digits under a threshold of 3.5, each below what random strings of that alphabet
/// usually reach (2.9 at 16 digits, 3.7 and 4.3 at 32 characters) and above runs, counters
/// and repeated patterns (`1733097600000`: 1.9).
pub fn entropy_threshold(secret: &[u8], min: f64) -> f64 {
    let digits = secret.iter().all(u8::is_ascii_digit);
    let body = secret.iter().filter(|&&b| b != b'-' && b != b':');
    let hex = body
        .clone()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        || body
            .clone()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b));
    let one_case = secret
        .iter()
        .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        || secret
            .iter()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    let symbols: f64 = if digits {
        10.0
    } else if hex {
        16.0
    } else if one_case {
        36.0
    } else {
        return min;
    };
    min * (symbols.log2() / 6.0).powf(0.75)
}

/// [`entropy_threshold`] for a secret of `len` bytes: a short random string cannot reach the
/// entropy of its alphabet (at most log2(len) bits per byte), so from 12 bytes on the threshold
/// is at most 90% of that bound.
fn threshold_for(secret: &[u8], min: f64) -> f64 {
    let t = entropy_threshold(secret, min);
    if secret.len() >= 12 {
        t.min(0.9 * (secret.len() as f64).log2())
    } else {
        t
    }
}

/// Whether a value of a section whose mapping never said what it is (a Kubernetes `data:` with
/// no `kind:` in sight) is shaped like secret data: base64 of 8 bytes or more (what every
/// Secret's `data` holds; not a lowercase word), or a token-like run (letters, digits, `_+=-`)
/// of 16 bytes or more with the entropy of a secret. Plain settings (`debug`, URLs, paths,
/// numbers, lists) are not.
pub(crate) fn secret_shaped(value: &[u8]) -> bool {
    let body = value
        .strip_suffix(b"==")
        .or_else(|| value.strip_suffix(b"="))
        .unwrap_or(value);
    let base64 = value.len() >= 8
        && value.len().is_multiple_of(4)
        && body
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
        && !value.iter().all(u8::is_ascii_lowercase)
        && !value.iter().all(u8::is_ascii_digit);
    let token = value.len() >= 16
        && value
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'=' | b'-'))
        && shannon_entropy(value) >= threshold_for(value, 3.5);
    base64 || token
}

/// Shannon entropy of a byte string, in bits per byte (0 for the empty string).
pub fn shannon_entropy(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    // H = log2(n) - (1/n) * sum(c * log2(c)), with c * log2(c) from a table for small c. The
    // sum visits the distinct bytes of `data` (reading each count once, then clearing it), not
    // all 256 counters: candidate values are short and most are rejected here.
    let n = data.len() as f64;
    let mut sum = 0.0;
    if data.len() <= usize::from(u16::MAX) {
        let mut counts = [0u16; 256];
        for &b in data {
            counts[usize::from(b)] += 1;
        }
        for &b in data {
            let c = std::mem::take(&mut counts[usize::from(b)]);
            if c > 1 {
                sum += c_log2_c(u32::from(c));
            }
        }
    } else {
        let mut counts = [0u32; 256];
        for &b in data {
            counts[usize::from(b)] += 1;
        }
        sum = counts
            .iter()
            .filter(|&&c| c > 1)
            .map(|&c| c_log2_c(c))
            .sum();
    }
    (n.log2() - sum / n).max(0.0)
}

/// `c * log2(c)`, tabulated for the counts short secrets have.
fn c_log2_c(c: u32) -> f64 {
    static TABLE: OnceLock<[f64; 128]> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0.0; 128];
        for (i, v) in t.iter_mut().enumerate().skip(1) {
            let x = i as f64;
            *v = x * x.log2();
        }
        t
    });
    match table.get(c as usize) {
        Some(&v) => v,
        None => {
            let x = f64::from(c);
            x * x.log2()
        }
    }
}

/// The global allow patterns of the built-in pack.
fn builtin_allow() -> &'static [String] {
    static ALLOW: OnceLock<Vec<String>> = OnceLock::new();
    ALLOW.get_or_init(|| {
        RedactConfig::from_toml_str(BUILTIN_RULES)
            .map(|c| c.allow)
            .unwrap_or_default()
    })
}

impl RuleSet {
    /// The built-in pack, compiled once on first use.
    pub fn builtin() -> &'static RuleSet {
        static BUILTIN: OnceLock<RuleSet> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            // ok: the built-in pack is a constant checked by the test suite (tests/redact.rs
            // `builtin_pack_compiles` and every rule's examples); it cannot fail at run time.
            let config = RedactConfig::from_toml_str(BUILTIN_RULES).expect("built-in rules parse");
            RuleSet::build(config.rules, &config.allow, |_| true).expect("built-in rules compile")
        })
    }

    /// The rule definitions of the built-in pack.
    pub fn builtin_defs() -> Vec<RuleDef> {
        Self::builtin()
            .rules
            .iter()
            .map(|r| r.def.clone())
            .collect()
    }

    /// Builds a rule set from a user configuration: the built-in pack (unless `builtin = false`),
    /// with user rules replacing built-in rules of the same id or added ahead of them (so they
    /// win overlaps), rules in `disable` removed, and `allow` patterns applied to every rule.
    pub fn with_config(config: &RedactConfig) -> Result<RuleSet, RedactError> {
        let builtin = RedactConfig::from_toml_str(BUILTIN_RULES)?;
        let mut seen = std::collections::HashSet::new();
        for r in &config.rules {
            if !seen.insert(r.id.as_str()) {
                return Err(RedactError::DuplicateId { id: r.id.clone() });
            }
        }
        let mut defs: Vec<RuleDef> = Vec::new();
        let mut replaced = std::collections::HashSet::new();
        let base: Vec<RuleDef> = if config.builtin {
            builtin.rules
        } else {
            Vec::new()
        };
        for r in &config.rules {
            if !base.iter().any(|b| b.id == r.id) {
                defs.push(r.clone());
            }
        }
        for b in base {
            match config.rules.iter().find(|r| r.id == b.id) {
                Some(user) => {
                    replaced.insert(b.id.clone());
                    defs.push(user.clone());
                }
                None => defs.push(b),
            }
        }
        for id in &config.disable {
            let before = defs.len();
            defs.retain(|d| &d.id != id);
            if defs.len() == before {
                return Err(RedactError::UnknownRule { id: id.clone() });
            }
        }
        let mut allow: Vec<String> = if config.builtin {
            builtin.allow
        } else {
            Vec::new()
        };
        allow.extend(config.allow.iter().cloned());
        let builtin_defs = RuleSet::builtin_defs();
        // Built-in rules stay lazy (the test suite compiles them); user rules compile now.
        RuleSet::build(defs, &allow, |d| builtin_defs.contains(d))
    }

    /// Compiles rule definitions as given (no built-ins), with global allow patterns.
    pub fn from_parts(defs: Vec<RuleDef>, allow: &[String]) -> Result<RuleSet, RedactError> {
        RuleSet::build(defs, allow, |_| false)
    }

    /// Builds a set; rules for which `trusted` holds are compiled on first use, the others
    /// now (so their errors are reported now). Global allow patterns are checked one by one
    /// unless they are the built-in pack's, and compiled together once, on first use.
    fn build(
        defs: Vec<RuleDef>,
        allow: &[String],
        trusted: impl Fn(&RuleDef) -> bool,
    ) -> Result<RuleSet, RedactError> {
        let mut rules: Vec<Rule> = Vec::with_capacity(defs.len());
        let mut seen = std::collections::HashSet::new();
        for d in &defs {
            if !seen.insert(d.id.clone()) {
                return Err(RedactError::DuplicateId { id: d.id.clone() });
            }
            rules.push(if trusted(d) {
                Rule::lazy(d)?
            } else {
                Rule::eager(d)?
            });
        }
        let all_trusted = defs.iter().all(&trusted);
        for p in allow {
            if all_trusted && builtin_allow().contains(p) {
                continue;
            }
            RegexBuilder::new(p)
                .unicode(false)
                .build()
                .map_err(|e| RedactError::BadAllow {
                    pattern: p.clone(),
                    message: e.to_string(),
                })?;
        }
        // Deduplicate keywords; each keyword selects one or more rules.
        let mut keyword_rules: Vec<(String, Vec<u32>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            for k in &r.def.keywords {
                let slot = *index.entry(k.clone()).or_insert_with(|| {
                    keyword_rules.push((k.clone(), Vec::new()));
                    keyword_rules.len() - 1
                });
                let list = &mut keyword_rules[slot].1;
                // ok: `i` is bounded by the rule count, far below u32::MAX.
                let i = u32::try_from(i).unwrap_or(u32::MAX);
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
        // Longest keywords first. A group's fingerprint is as long as its shortest keyword, so
        // the 3-byte keywords get groups of their own: one of them in a group of longer ones
        // would cost that whole group Teddy's most selective (4-byte) fingerprint.
        keyword_rules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        let short = keyword_rules
            .iter()
            .position(|(k, _)| k.len() < 4)
            .unwrap_or(keyword_rules.len());
        let (long, short) = keyword_rules.split_at(short);
        let chunks = long
            .chunks(KEYWORDS_PER_GROUP)
            .chain(short.chunks(KEYWORDS_PER_GROUP));
        let mut groups = Vec::new();
        for chunk in chunks {
            let packed = aho_corasick::packed::Config::new()
                .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
                .builder()
                .extend(chunk.iter().map(|(k, _)| k.as_bytes()))
                .build();
            if let Some(searcher) = packed {
                // A leftmost-longest match at p also means every shorter keyword of the group
                // that is its prefix occurs at p: give each keyword those keywords' rules too.
                let lists = chunk
                    .iter()
                    .map(|(k, _)| {
                        let mut rules: Vec<u32> = chunk
                            .iter()
                            .filter(|(other, _)| k.starts_with(other.as_str()))
                            .flat_map(|(_, r)| r.iter().copied())
                            .collect();
                        rules.sort_unstable();
                        rules.dedup();
                        rules
                    })
                    .collect();
                groups.push((Keywords::Packed(searcher), lists));
                continue;
            }
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(AhoCorasickKind::DFA))
                .prefilter(true)
                .build(chunk.iter().map(|(k, _)| k.as_bytes()))
                .map_err(|e| RedactError::BadKeyword {
                    id: "*".to_string(),
                    problem: e.to_string(),
                })?;
            groups.push((
                Keywords::Ac(ac),
                chunk.iter().map(|(_, r)| r.clone()).collect(),
            ));
        }
        Ok(RuleSet {
            rules,
            groups,
            global_allow: allow.to_vec(),
            global_allow_re: OnceLock::new(),
            marker_re: OnceLock::new(),
        })
    }

    /// The global allow patterns as one regex (each was checked when the set was built).
    fn global_allow(&self) -> Option<&Regex> {
        self.global_allow_re
            .get_or_init(|| {
                if self.global_allow.is_empty() {
                    return None;
                }
                let all: Vec<String> = self
                    .global_allow
                    .iter()
                    .map(|p| format!("(?:{p})"))
                    .collect();
                // Every pattern compiled alone when the set was built, but their alternation
                // can still exceed the regex size limit (a policy with very many allow
                // patterns): then nothing is exempted, so more is redacted, never less, and
                // nothing panics on a policy's input.
                compile("*", "allow", &all.join("|")).ok()
            })
            .as_ref()
    }

    fn marker_re(&self) -> &Regex {
        self.marker_re.get_or_init(|| {
            // ok: a constant pattern.
            compile("*", "marker", r"\[REDACTED:[a-z0-9-]+\]").expect("marker pattern compiles")
        })
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the set has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Rule ids, in priority order (earlier wins when two matches overlap).
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    /// Redacts a whole buffer. Identical to feeding it to a [`Redactor`] in chunks of any size.
    pub fn redact(&self, input: &[u8]) -> (Vec<u8>, Stats) {
        let mut out = Vec::with_capacity(input.len() + input.len() / 16);
        let mut r = Redactor::new(self);
        r.feed(input, &mut out);
        r.finish(&mut out);
        let stats = r.stats();
        (out, stats)
    }

    /// Checks every rule's `examples` (each must be redacted by that rule) and `negatives` (the
    /// whole set must leave each untouched). Returns one message per failure.
    pub fn check_examples(&self) -> Vec<String> {
        let mut failures = Vec::new();
        for r in &self.rules {
            for ex in &r.def.examples {
                let (out, stats) = self.redact(ex.as_bytes());
                if stats.get(&r.id) == 0 || !contains(&out, &r.marker) {
                    failures.push(format!(
                        "rule `{}`: example not redacted by it: {ex:?} -> {:?}",
                        r.id,
                        String::from_utf8_lossy(&out)
                    ));
                }
                let (again, _) = self.redact(&out);
                if again != out {
                    failures.push(format!("rule `{}`: example not idempotent: {ex:?}", r.id));
                }
                if let Some(lit) = r.def.requires.iter().find(|l| !ex.contains(l.as_str())) {
                    failures.push(format!(
                        "rule `{}`: example lacks the required literal {lit:?}: {ex:?}",
                        r.id
                    ));
                }
                if !r.def.keywords.iter().any(|k| ex.contains(k.as_str())) {
                    failures.push(format!(
                        "rule `{}`: example has none of its keywords: {ex:?}",
                        r.id
                    ));
                }
            }
            for neg in &r.def.negatives {
                let (out, _) = self.redact(neg.as_bytes());
                if out != neg.as_bytes() {
                    failures.push(format!(
                        "rule `{}`: negative changed: {neg:?} -> {:?}",
                        r.id,
                        String::from_utf8_lossy(&out)
                    ));
                }
            }
        }
        failures
    }

    /// Collects keyword hits in `region` as (start, end, rule) triples, sorted by start.
    pub(crate) fn hits(&self, region: &[u8], out: &mut Vec<(usize, usize, u32)>) {
        out.clear();
        for (keywords, rules) in &self.groups {
            match keywords {
                Keywords::Packed(searcher) => {
                    // Restart one byte after each match's start: every occurrence of every
                    // keyword is seen (same-start shorter keywords via the prefix lists).
                    let mut pos = 0;
                    while pos < region.len() {
                        let span = aho_corasick::Span::from(pos..region.len());
                        let Some(m) = searcher.find_in(region, span) else {
                            break;
                        };
                        if let Some(list) = rules.get(m.pattern().as_usize()) {
                            out.extend(list.iter().map(|&r| (m.start(), m.end(), r)));
                        }
                        pos = m.start() + 1;
                    }
                }
                Keywords::Ac(ac) => {
                    for m in ac.find_overlapping_iter(region) {
                        if let Some(list) = rules.get(m.pattern().as_usize()) {
                            out.extend(list.iter().map(|&r| (m.start(), m.end(), r)));
                        }
                    }
                }
            }
        }
        if self.groups.len() > 1 {
            // The vector is one sorted run per group: the stable sort merges runs.
            out.sort_by_key(|h| h.0);
        }
    }

    /// Candidate rules for one line, with where their last keyword starts (slow path for
    /// rarely visited lines).
    pub(crate) fn candidates(&self, line: &[u8], out: &mut Vec<(u32, usize)>) {
        let mut hits = Vec::new();
        self.hits(line, &mut hits);
        out.clear();
        out.extend(hits.iter().map(|h| (h.2, h.0)));
        super::stream::dedup_candidates(out);
    }

    /// Redacts one line (or held unit) with the candidate rules `cands` (sorted rule indices,
    /// each with where its last keyword starts in the line) plus `extra` (a section rule, which
    /// needs no keyword), appending the result to `out`.
    ///
    /// A redaction can expose a match the first pass could not see (a marker ends a value that
    /// a longer, rejected candidate had covered), so a changed line is redacted again, with
    /// fresh candidates, until nothing changes (at most [`MAX_PASSES`] times): idempotence
    /// holds by construction rather than by reasoning about every rule's shape. Lines without
    /// a secret, the usual case, take one pass.
    pub(crate) fn redact_line(
        &self,
        line: &[u8],
        cands: &[(u32, usize)],
        extra: Option<(u32, bool)>,
        out: &mut Vec<u8>,
        counts: &mut [u64],
        scratch: &mut Scratch,
    ) {
        let start = out.len();
        if !self.redact_line_once(line, cands, extra, out, counts, scratch) {
            return;
        }
        let mut current = out.split_off(start);
        let mut next_cands = Vec::new();
        for _ in 1..MAX_PASSES {
            self.candidates(&current, &mut next_cands);
            let mut next = Vec::with_capacity(current.len());
            if !self.redact_line_once(&current, &next_cands, extra, &mut next, counts, scratch) {
                break;
            }
            current = next;
        }
        out.extend_from_slice(&current);
    }

    /// One pass of [`RuleSet::redact_line`]; returns whether anything was redacted.
    fn redact_line_once(
        &self,
        line: &[u8],
        cands: &[(u32, usize)],
        extra: Option<(u32, bool)>,
        out: &mut Vec<u8>,
        counts: &mut [u64],
        scratch: &mut Scratch,
    ) -> bool {
        let Scratch {
            locs,
            gates,
            found,
            markers,
        } = scratch;
        if locs.len() != self.rules.len() {
            locs.clear();
            locs.resize_with(self.rules.len(), || None);
            gates.clear();
            gates.resize_with(self.rules.len(), || None);
        }
        found.clear();
        markers.clear();
        let mut markers_done = false;
        // A section rule (given only inside its section) goes first: there it is the most
        // specific rule.
        let by_shape = extra.filter(|e| e.1).map(|e| e.0);
        let run = extra.map(|e| (e.0, usize::MAX)).into_iter().chain(
            cands
                .iter()
                .copied()
                .filter(|&(c, _)| !self.rules.get(c as usize).is_some_and(|r| r.is_section)),
        );
        let global = self.global_allow();
        for (ri, last_keyword) in run {
            let (Some(r), Some(slot)) = (self.rules.get(ri as usize), locs.get_mut(ri as usize))
            else {
                continue;
            };
            let rule = r.compiled();
            if !rule.requires.iter().all(|f| f.find(line).is_some()) {
                continue;
            }
            if let Some(gate) = &rule.gate {
                let cache = gates
                    .get_mut(ri as usize)
                    .map(|c| c.get_or_insert_with(|| gate.cache()));
                if let Some(cache) = cache {
                    if !gate.may_accept(line, cache, |v| rule.accepts(v, global)) {
                        continue;
                    }
                }
            }
            let locs = slot.get_or_insert_with(|| rule.regex.capture_locations());
            // A rejected candidate is retried one byte further on (a bounded number of times),
            // so it cannot hide a real secret inside its span; an accepted one resumes after
            // itself. Retrying keeps redaction idempotent: the second pass, where the first
            // pass's secrets are markers, finds nothing the first pass could have found.
            // A match holds one of the rule's keywords (the prefilter's premise, checked on
            // every example), so no match starts after the rule's last keyword in the line.
            let mut pos = 0;
            let mut retries = 0;
            while pos <= line.len() && pos <= last_keyword {
                let (whole, span) = if rule.whole {
                    match rule.regex.find_at(line, pos) {
                        Some(m) => (m, Some((m.start(), m.end()))),
                        None => break,
                    }
                } else {
                    match rule.regex.captures_read_at(locs, line, pos) {
                        Some(m) => (m, locs.get(rule.group)),
                        None => break,
                    }
                };
                let resume = whole.end().max(whole.start() + 1);
                let accepted = match span {
                    Some((s, e)) if s < e => {
                        if !markers_done {
                            if memchr::memmem::find(line, b"[REDACTED:").is_some() {
                                markers.extend(
                                    self.marker_re()
                                        .find_iter(line)
                                        .map(|m| (m.start(), m.end())),
                                );
                            }
                            markers_done = true;
                        }
                        // Touching a marker counts: a secret redacted earlier may have ended
                        // the value this match would extend (idempotence).
                        let key_ok = match &rule.key_allow {
                            Some((k, allow)) if !rule.whole => !locs
                                .get(*k)
                                .is_some_and(|(ks, ke)| allow.is_match(&line[ks..ke])),
                            _ => true,
                        };
                        let ok = key_ok
                            && !markers.iter().any(|&(ms, me)| s <= me && ms <= e)
                            && !found.iter().any(|&(fs, fe, _)| s < fe && fs < e)
                            && rule.accepts(&line[s..e], global)
                            && (by_shape != Some(ri) || secret_shaped(&line[s..e]));
                        if ok {
                            found.push((s, e, ri));
                        }
                        ok
                    }
                    _ => false,
                };
                pos = if accepted || retries >= MAX_RETRIES {
                    resume
                } else {
                    retries += 1;
                    whole.start() + 1
                };
            }
        }
        if found.is_empty() {
            out.extend_from_slice(line);
            return false;
        }
        found.sort_unstable();
        let mut at = 0;
        for &(s, e, ri) in found.iter() {
            out.extend_from_slice(&line[at..s]);
            if let Some(rule) = self.rules.get(ri as usize) {
                out.extend_from_slice(&rule.marker);
            }
            if let Some(c) = counts.get_mut(ri as usize) {
                *c += 1;
            }
            at = e;
        }
        out.extend_from_slice(&line[at..]);
        true
    }
}

/// Most redaction passes over one line (see [`RuleSet::redact_line`]).
const MAX_PASSES: usize = 4;

/// Reusable buffers for [`RuleSet::redact_line`] (one per [`Redactor`]).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    locs: Vec<Option<regex::bytes::CaptureLocations>>,
    gates: Vec<Option<super::gate::GateCache>>,
    found: Vec<(usize, usize, u32)>,
    markers: Vec<(usize, usize)>,
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(hay, needle).is_some()
}

/// Whether the secret group is the whole match: the pattern is `(...)`, optionally between
/// `\b`s, with that one capturing group. Then a plain `find` gives the secret's span, without
/// running a capture engine.
fn group_is_whole_match(pattern: &str, captures_len: usize) -> bool {
    if captures_len != 2 {
        return false;
    }
    let p = pattern.strip_prefix(r"\b").unwrap_or(pattern);
    let p = p.strip_suffix(r"\b").unwrap_or(p);
    let b = p.as_bytes();
    if b.first() != Some(&b'(') || b.last() != Some(&b')') || b.get(1) == Some(&b'?') {
        return false;
    }
    // The group opened at 0 must close at the very end.
    let mut depth = 0usize;
    let mut i = 0;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class => depth += 1,
            b')' if !in_class => {
                depth = depth.saturating_sub(1);
                if depth == 0 && i + 1 != b.len() {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::group_is_whole_match;

    #[test]
    fn entropy_matches_the_definition() {
        for s in [
            &b"aaaa"[..],
            b"abcd",
            b"hunter2",
            b"changeme",
            b"q7Rk2VbN9wLmZ4xT8yH3pJc6",
        ] {
            let n = s.len() as f64;
            let mut counts = std::collections::HashMap::new();
            for &b in s {
                *counts.entry(b).or_insert(0u32) += 1;
            }
            let h: f64 = counts
                .values()
                .map(|&c| {
                    let p = f64::from(c) / n;
                    -p * p.log2()
                })
                .sum();
            assert!((super::shannon_entropy(s) - h).abs() < 1e-9, "{s:?}");
        }
        assert_eq!(super::shannon_entropy(b""), 0.0);
    }

    #[test]
    fn whole_match_detection() {
        assert!(group_is_whole_match(r"\b(ghp_[A-Za-z0-9]{36})\b", 2));
        assert!(group_is_whole_match(r"(AGE-SECRET-KEY-1[QP]{58})", 2));
        assert!(group_is_whole_match(
            r"\b(sk_(?:live|test)_[0-9a-z]{24,})\b",
            2
        ));
        assert!(group_is_whole_match(r"\b(a[()]b\))", 2));
        assert!(!group_is_whole_match(r"(a)b", 2));
        assert!(!group_is_whole_match(r"(a)|(b)", 3));
        assert!(!group_is_whole_match(r"(?i)(a)", 2));
        assert!(!group_is_whole_match(r"x(a)", 2));
        assert!(!group_is_whole_match(r"(a)(?:b)", 2));
    }
}
