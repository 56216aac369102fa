//! Policy loading: never panics; every diagnostic has a code and a location inside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shellgate::Policy;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    if let Err(e) = Policy::from_toml(src, "fuzz.toml") {
        let lines = src.lines().count().max(1) + 1;
        for d in e.diagnostics() {
            assert!(d.code.starts_with("policy-"), "{d}");
            assert!(d.location.line <= lines, "{d} beyond {lines} lines");
        }
    }
});
