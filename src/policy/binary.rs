//! The binary form of a compiled [`Policy`]: what a policy cache holds, so that a process that
//! checks one command (a hook, `check`) reads a validated policy instead of parsing,
//! validating and compiling TOML every time.
//!
//! The form is postcard (serde) behind a header: a magic string, the build identity (a hash
//! of every source file of this build, so a form written by another build, whose types may
//! differ, is never read), the payload's length and its FNV-1a checksum. Anything that does
//! not match is [`BinaryError`], and the caller loads the policy from its text instead: a
//! stale or damaged form is rebuilt, never trusted.
//!
//! Regexes and globs are kept as their patterns and compiled again when read; each rule's
//! index is worked out again at its first use. A policy with a `[redact]` table has no binary
//! form (the redaction config is not part of it), so it is always loaded from text.

use super::Policy;

/// The first bytes of every binary form (the last byte is the format's version).
const MAGIC: &[u8; 8] = b"SGPOLIC\x01";

/// This build's identity (see `build.rs`).
pub const BUILD_ID: &str = env!("SHELLGATE_SOURCE_ID");

/// Why a binary form was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BinaryError {
    /// Not a binary policy, or one of another format version.
    #[error("not a binary policy of this format")]
    Magic,
    /// Written by another build of shellgate.
    #[error("written by another build of shellgate")]
    Build,
    /// Cut short, or changed since it was written.
    #[error("damaged: its length or checksum does not match")]
    Damaged,
    /// The payload does not decode as a policy of this build.
    #[error("does not decode: {0}")]
    Decode(String),
}

/// FNV-1a (64 bit), the checksum of the payload: it detects damage, not tampering (a cache
/// is trusted as much as the directory it is kept in; see the README).
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The binary form of `policy`, or `None` when it has none (a `[redact]` table).
pub fn to_bytes(policy: &Policy) -> Option<Vec<u8>> {
    if policy.redact.is_some() {
        return None;
    }
    let payload = postcard::to_allocvec(policy).ok()?;
    let mut out = Vec::with_capacity(payload.len() + 48);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&u64::from_str_radix(BUILD_ID, 16).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Some(out)
}

/// The policy `bytes` hold, if they are a whole binary form written by this build.
pub fn from_bytes(bytes: &[u8]) -> Result<Policy, BinaryError> {
    let word = |at: usize| -> Option<u64> {
        let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(b))
    };
    if bytes.get(..8) != Some(MAGIC.as_slice()) {
        return Err(BinaryError::Magic);
    }
    if word(8) != Some(u64::from_str_radix(BUILD_ID, 16).unwrap_or(0)) {
        return Err(BinaryError::Build);
    }
    let (Some(len), Some(sum)) = (word(16), word(24)) else {
        return Err(BinaryError::Damaged);
    };
    let payload = &bytes[32.min(bytes.len())..];
    if payload.len() as u64 != len || fnv(payload) != sum {
        return Err(BinaryError::Damaged);
    }
    super::compiled::read_with_cache::<Policy>(payload)
        .map_err(|e| BinaryError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary form decides as the TOML it came from: every shipped policy, read back,
    /// gives every example (and a sample of commands) the same decision, reasons and all.
    #[test]
    fn a_policy_read_back_decides_as_the_original() {
        use crate::evaluate::{evaluate, Context};
        for (name, _) in super::super::SHIPPED {
            let original = crate::Policy::shipped(name).unwrap();
            let bytes = to_bytes(&original).expect("shipped policies have a binary form");
            let back = from_bytes(&bytes).unwrap();
            let ctx = Context::example();
            let mut commands: Vec<String> = original
                .examples
                .iter()
                .map(|e| e.command.clone())
                .collect();
            commands.extend(
                [
                    "ls -la",
                    "cat ~/.ssh/id_rsa",
                    "find . -name '*.rs' -newer Cargo.toml",
                    "git push --force",
                    "sed -i.bak s/a/b/ src/x.rs",
                    "FOO=1 ls",
                    "PATH=/tmp ls",
                    "echo hi > /dev/null",
                    "cat .git/config",
                    "python3 -m pytest -q",
                ]
                .map(String::from),
            );
            for c in &commands {
                assert_eq!(
                    evaluate(&original, &ctx, c),
                    evaluate(&back, &ctx, c),
                    "{name}: {c}"
                );
            }
            // And it is a fixed point: written again, the same bytes.
            assert_eq!(to_bytes(&back).unwrap(), bytes, "{name}");
        }
    }

    #[test]
    fn damaged_or_foreign_forms_are_refused() {
        let p = crate::Policy::shipped("read-only").unwrap();
        let bytes = to_bytes(&p).unwrap();
        assert!(matches!(from_bytes(b"hello"), Err(BinaryError::Magic)));
        let mut other_build = bytes.clone();
        other_build[8] ^= 1;
        assert!(matches!(from_bytes(&other_build), Err(BinaryError::Build)));
        assert!(matches!(
            from_bytes(&bytes[..bytes.len() - 1]),
            Err(BinaryError::Damaged)
        ));
        // Every single flipped bit in the payload is caught by the checksum.
        for i in (32..bytes.len()).step_by(97) {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x10;
            assert!(
                matches!(from_bytes(&flipped), Err(BinaryError::Damaged)),
                "byte {i}"
            );
        }
        assert!(from_bytes(&bytes).is_ok());
    }
}
