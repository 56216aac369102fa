//! Synthetic inputs for the output benchmarks (shared with ad-hoc timing programs).

const SIZE: usize = 1 << 20;

/// A typical cargo/npm/pytest style log (about 1 MiB), with a handful of secrets.
pub fn build_log() -> Vec<u8> {
    build_log_of(SIZE)
}

/// [`build_log`] of about `size` bytes.
pub fn build_log_of(size: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < size {
        i += 1;
        match i % 16 {
            0 => s.push_str(&format!("   Compiling serde_derive v1.0.{i} (registry+https://github.com/rust-lang/crates.io-index)\n")),
            1 => s.push_str(&format!("test module_{i}::tests::parses_input_{i} ... ok\n")),
            2 => s.push_str(&format!("warning: unused variable: `value_{i}`\n  --> src/lib.rs:{i}:9\n   |\n")),
            3 => s.push_str(&format!("[2026-11-30T08:{:02}:{:02}Z INFO  app::server] GET /api/v1/items?page={i} 200 12ms\n", i % 60, i % 60)),
            4 => s.push_str(&format!("npm http fetch GET 200 https://registry.npmjs.org/pkg-{i}/-/pkg-{i}-1.0.0.tgz 31ms (cache hit)\n")),
            5 => s.push_str(&format!("tests/test_api.py::test_case_{i} PASSED                                   [ {}%]\n", i % 100)),
            6 => s.push_str("    Finished `dev` profile [unoptimized + debuginfo] target(s) in 12.34s\n"),
            7 => s.push_str(&format!("  = note: expected type `Result<Token, Error>`, found `Option<u{i}>`\n")),
            8 => s.push_str(&format!("drwxr-xr-x  8 dev dev 4096 Nov 30 08:12 dir_{i}\n")),
            9 => s.push_str(&format!("commit {:040x}\nAuthor: Dev <dev@corp.test>\n", i.wrapping_mul(0x9e3779b97f4a7c15))),
            10 => s.push_str(&format!("   Running unittests src/lib.rs (target/debug/deps/app-{:016x})\n", i)),
            11 => s.push_str("error[E0308]: mismatched types\n"),
            12 => s.push_str(&format!("  at Object.<anonymous> (/home/dev/app/src/handler_{i}.js:{i}:17)\n")),
            13 => s.push_str(&format!("Downloaded tokio v1.{i}.0\n")),
            14 => s.push_str(&format!("+ docker build -t app:{i} .\nStep {i}/20 : RUN cargo build --release\n")),
            _ => s.push_str(&format!("ok {i} - handles the empty case\n")),
        }
        if i.is_multiple_of(5000) {
            s.push_str("export GITHUB_TOKEN=ghp_q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iO\n");
        }
    }
    s.into_bytes()
}

/// Output dense with look-alikes and keywords (about 1 MiB): digests, SHAs, UUIDs, placeholders,
/// documentation keys, token-like words, URLs, base64.
pub fn lookalike_log() -> Vec<u8> {
    lookalike_log_of(SIZE)
}

/// [`lookalike_log`] of about `size` bytes (its counters grow with it: past 7 MB they have six
/// digits, as in `secretName: app-tls-104857`).
pub fn lookalike_log_of(size: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < size {
        i += 1;
        let h = i.wrapping_mul(0x9e3779b97f4a7c15);
        match i % 14 {
            0 => s.push_str(&format!("commit {h:016x}{h:016x}{:08x}\n", h >> 32)),
            1 => s.push_str(&format!("image: ghcr.io/acme/api@sha256:{h:016x}{h:016x}{h:016x}{h:016x}\n")),
            2 => s.push_str(&format!("request_id={:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}\n", h >> 32, h & 0xffff, h & 0xfff, (h >> 8) & 0xfff, h >> 16)),
            3 => s.push_str("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"),
            4 => s.push_str("token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"),
            5 => s.push_str("password=changeme  # see docs, secret: ${{ secrets.DEPLOY_KEY }}\n"),
            6 => s.push_str(&format!("  \"integrity\": \"sha512-{h:016x}{h:016x}{h:016x}{h:016x}==\",\n")),
            7 => s.push_str("Authorization: Bearer $TOKEN  api_key: <your-token> export API_KEY=$API_KEY\n"),
            8 => s.push_str(&format!("https://github.com/org/repo-{i}/blob/{h:016x}/src/token.rs#L{i}\n")),
            9 => s.push_str(&format!("max_tokens: {i}, token_type: Bearer, secretName: app-tls-{i}\n")),
            10 => s.push_str("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\n"),
            11 => s.push_str("arn:aws:iam::123456789012:role/deploy sk-proj-... key-value store, primary-key index\n"),
            12 => s.push_str("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq6W0c3kN7m8o4bWcQXcM2oYh8nq3h6Qm7Y0r4k2J1x dev@laptop\n"),
            _ => s.push_str(&format!("TOKENIZERS_PARALLELISM=false PWD=/home/dev/app_{i} OLDPWD=/home/dev\n")),
        }
    }
    s.into_bytes()
}
