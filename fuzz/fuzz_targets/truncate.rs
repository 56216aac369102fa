//! Truncation: output is UTF-8 (by type), within the byte budget, equal when streamed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shellgate::truncate::{truncate, TruncateConfig, Truncator};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let config = TruncateConfig {
        max_bytes: 200 + usize::from(data[0]) * 8,
        max_lines: 4 + usize::from(data[1]) / 4,
    };
    let input = &data[3..];
    let whole = truncate(input, &config);
    assert!(whole.len() <= config.max_bytes, "{} > {}", whole.len(), config.max_bytes);
    let mut t = Truncator::new(&config);
    for c in input.chunks(usize::from(data[2] % 31) + 1) {
        t.feed(c);
    }
    assert_eq!(t.finish(), whole, "streamed differs from whole");
});
