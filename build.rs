//! Build identity for the binary form of compiled policies: a hash of every source file, so
//! a cached policy written by one build is never read by another whose types may differ.

use std::hash::Hasher;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=policies");
    let mut files = Vec::new();
    collect(Path::new("src"), &mut files);
    collect(Path::new("policies"), &mut files);
    files.sort();
    // FNV-1a over each path and its bytes (std's hashers are not stable across releases).
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for f in &files {
        h.write(f.to_string_lossy().as_bytes());
        h.write(&std::fs::read(f).unwrap_or_default());
    }
    h.write(env_or(&["CARGO_PKG_VERSION", "PROFILE", "TARGET"]).as_bytes());
    // Features change what a policy may hold (`[shell] paranoid` loads only with its reader).
    let mut features: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("CARGO_FEATURE_"))
        .collect();
    features.sort();
    h.write(features.join(",").as_bytes());
    println!("cargo:rustc-env=SHELLGATE_SOURCE_ID={:016x}", h.finish());
}

fn env_or(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| std::env::var(n).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("/")
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
