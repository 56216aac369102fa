//! [`ProgramMap`]: a policy's `[programs.*]` rules by name, each read from the policy's binary
//! form only when a command first names it.
//!
//! A hook checks one command, which names a few programs out of the policy's dozens; reading
//! (and compiling the regexes of, and indexing) every rule of `developer` cost most of a
//! cached load. A map built by the loader holds its rules as they are; a map read from the
//! binary form holds each rule's bytes and its verdict (for the "allowed: ..." list of a
//! refusal, which needs no more), and decodes a rule at its first lookup.
//!
//! A rule's bytes were written by this build from a rule that validated, and the whole form
//! passed its checksum, so decoding cannot fail short of a bug; if it ever did, the lookup
//! panics, which the evaluator turns into a denial (`internal-error`) like any panic.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ProgramRule, Verdict};

/// One rule: decoded, or its bytes until first use.
#[derive(Debug, Clone)]
enum Slot {
    Ready(Box<ProgramRule>),
    Encoded {
        verdict: Verdict,
        bytes: Vec<u8>,
        rule: OnceLock<Box<ProgramRule>>,
    },
}

impl Slot {
    fn rule(&self) -> &ProgramRule {
        match self {
            Slot::Ready(r) => r,
            Slot::Encoded { bytes, rule, .. } => rule.get_or_init(|| {
                let r: ProgramRule = super::compiled::read_with_cache(bytes)
                    .unwrap_or_else(|e| panic!("a cached program rule does not decode: {e}"));
                Box::new(r)
            }),
        }
    }

    fn verdict(&self) -> Verdict {
        match self {
            Slot::Ready(r) => r.verdict,
            Slot::Encoded { verdict, .. } => *verdict,
        }
    }

    fn into_rule(self) -> ProgramRule {
        match self {
            Slot::Ready(r) => *r,
            s @ Slot::Encoded { .. } => s.rule().clone(),
        }
    }
}

/// The program rules of a policy by name, with the part of `BTreeMap`'s interface the crate
/// uses (in name order, like the map it replaces).
#[derive(Debug, Clone, Default)]
pub struct ProgramMap(BTreeMap<String, Slot>);

impl ProgramMap {
    /// The rule for `name`.
    pub fn get(&self, name: &str) -> Option<&ProgramRule> {
        self.0.get(name).map(Slot::rule)
    }

    /// Whether there is a rule for `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Adds or replaces the rule for `name`, returning the one it replaces.
    pub(in crate::policy) fn insert(
        &mut self,
        name: String,
        rule: ProgramRule,
    ) -> Option<ProgramRule> {
        self.0
            .insert(name, Slot::Ready(Box::new(rule)))
            .map(Slot::into_rule)
    }

    /// Removes the rule for `name`.
    pub(in crate::policy) fn remove(&mut self, name: &str) -> Option<ProgramRule> {
        self.0.remove(name).map(Slot::into_rule)
    }

    /// The names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// The rules, in name order (each decoded).
    pub fn values(&self) -> impl Iterator<Item = &ProgramRule> {
        self.0.values().map(Slot::rule)
    }

    /// Names and rules, in name order (each decoded).
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ProgramRule)> {
        self.0.iter().map(|(k, s)| (k, s.rule()))
    }

    /// Names and each rule's verdict, in name order, without decoding any rule.
    pub fn verdicts(&self) -> impl Iterator<Item = (&String, Verdict)> {
        self.0.iter().map(|(k, s)| (k, s.verdict()))
    }

    /// The rules, mutably (each decoded, and from then on held as it is).
    pub(in crate::policy) fn values_mut(&mut self) -> impl Iterator<Item = &mut ProgramRule> {
        self.0.values_mut().map(|slot| {
            if let Slot::Encoded { .. } = slot {
                let rule = slot.rule().clone();
                *slot = Slot::Ready(Box::new(rule));
            }
            match slot {
                Slot::Ready(r) => r.as_mut(),
                Slot::Encoded { .. } => unreachable!("the slot was made ready above"),
            }
        })
    }

    /// How many rules.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntoIterator for ProgramMap {
    type Item = (String, ProgramRule);
    type IntoIter = Box<dyn Iterator<Item = (String, ProgramRule)>>;

    /// Every rule, decoded, in name order.
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.0.into_iter().map(|(k, s)| (k, s.into_rule())))
    }
}

impl<'a> IntoIterator for &'a ProgramMap {
    type Item = (&'a String, &'a ProgramRule);
    type IntoIter = Box<dyn Iterator<Item = (&'a String, &'a ProgramRule)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl FromIterator<(String, ProgramRule)> for ProgramMap {
    fn from_iter<I: IntoIterator<Item = (String, ProgramRule)>>(iter: I) -> Self {
        ProgramMap(
            iter.into_iter()
                .map(|(k, r)| (k, Slot::Ready(Box::new(r))))
                .collect(),
        )
    }
}

/// The binary form: each rule as `(name, verdict, bytes)`, so that reading the map decodes
/// none of them.
impl Serialize for ProgramMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut out: Vec<(&str, Verdict, serde_bytes::ByteBuf)> = Vec::with_capacity(self.0.len());
        for (name, slot) in &self.0 {
            let bytes = match slot {
                Slot::Encoded { bytes, .. } => bytes.clone(),
                Slot::Ready(r) => postcard::to_allocvec(r.as_ref()).map_err(S::Error::custom)?,
            };
            out.push((name, slot.verdict(), serde_bytes::ByteBuf::from(bytes)));
        }
        out.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ProgramMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProgramMap, D::Error> {
        let items = Vec::<(String, Verdict, serde_bytes::ByteBuf)>::deserialize(d)?;
        Ok(ProgramMap(
            items
                .into_iter()
                .map(|(name, verdict, bytes)| {
                    (
                        name,
                        Slot::Encoded {
                            verdict,
                            bytes: bytes.into_vec(),
                            rule: OnceLock::new(),
                        },
                    )
                })
                .collect(),
        ))
    }
}
