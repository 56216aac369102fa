//! Evaluation under each shipped policy: never panics (no `internal-error` reason), reasons
//! point inside the input, and an allowed command runs only programs the policy names.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shellgate::shell::{self, Command, Script, Word};
use shellgate::{Context, Policy, Verdict};

fn policies() -> &'static Vec<Policy> {
    static P: OnceLock<Vec<Policy>> = OnceLock::new();
    P.get_or_init(|| {
        ["read-only", "developer"]
            .iter()
            .map(|n| Policy::shipped(n).expect("valid shipped policy"))
            .collect()
    })
}

/// Every static program name in the script, at any depth.
fn programs(s: &Script, out: &mut Vec<String>) {
    for c in &s.commands {
        match c {
            Command::Simple(sc) => {
                if let Some(p) = sc.words.first().and_then(Word::static_value) {
                    out.push(p);
                }
                for w in &sc.words {
                    words(w, out);
                }
            }
            Command::Compound(cc) => {
                cc.words.iter().for_each(|w| words(w, out));
                programs(&cc.body, out);
            }
            Command::Function(f) => programs(&f.body, out),
        }
    }
}

fn words(w: &Word, out: &mut Vec<String>) {
    for s in w.nested_scripts() {
        programs(s, out);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let ctx = Context::example();
    for p in policies() {
        let d = p.evaluate(&ctx, src);
        for r in &d.reasons {
            assert_ne!(r.code, "internal-error", "{src:?}");
            assert!(r.span.start <= r.span.end && r.span.end <= src.len());
        }
        if d.verdict == Verdict::Allow {
            let script = shell::parse(src).expect("an allowed command parses");
            let mut names = Vec::new();
            programs(&script, &mut names);
            for n in names {
                assert!(
                    p.programs.contains_key(&n) || p.wrappers.allow.contains_key(&n),
                    "{} allowed {src:?}, which runs `{n}`",
                    p.name
                );
            }
        }
    }
});
