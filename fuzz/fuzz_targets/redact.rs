//! Redaction: idempotent, and chunked streaming yields exactly the whole-buffer result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shellgate::redact::{redact, Redactor, RuleSet};

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else { return };
    let whole = redact(input);
    assert_eq!(redact(&whole), whole, "not idempotent");
    let chunk = usize::from(seed % 17) + 1;
    let mut r = Redactor::new(RuleSet::builtin());
    let mut out = Vec::new();
    for c in input.chunks(chunk) {
        r.feed(c, &mut out);
    }
    r.finish(&mut out);
    assert_eq!(out, whole, "chunked ({chunk}) differs from whole");
});
