//! The crate's layers, lowest first, and a test that no module reaches up: each module may
//! use the ones in lower layers (and its own), never one above it.
//!
//! ```text
//! 0  codes                     the stable reason and diagnostic codes
//! 1  shell  redact  truncate   text → IR (with wrapper knowledge); output cleaning
//! 2  policy                    TOML → validated, compiled Policy (never runs the evaluator)
//! 3  evaluate                  IR + Policy + Context → Decision
//! 4  load  policy_cache        the public loaders: validate, then run the policy's examples;
//!                              the cache of compiled policies
//! 5  report                    human, JSON and SARIF renderings of decisions
//! 5  sandbox                   policy → jail plan, bubblewrap, cgroups, Landlock, seccomp,
//!                              containment (the launcher's stages)
//! 5  snapshot                  per-call workspace snapshots, history, undo
//! 6  middleware                Guard, executors, sessions (calling `sandbox`)
//! 6  oracle                    the option-effect oracle and drafts (running programs in
//!                              the `sandbox` jail under strace)
//! ```
//!
//! The binary and the Python crate sit on top and may use anything public. To see the arrows
//! yourself: `grep -rn "crate::" src/<folder>`; to check them: `cargo test --lib layers`.

#![cfg(test)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each top-level module and its layer.
const LAYERS: &[(&str, usize)] = &[
    ("codes", 0),
    ("shell", 1),
    ("redact", 1),
    ("truncate", 1),
    ("policy", 2),
    ("evaluate", 3),
    ("load", 4),
    ("policy_cache", 4),
    ("report", 5),
    ("sandbox", 5),
    ("snapshot", 5),
    ("middleware", 6),
    ("oracle", 6),
];

/// Functions defined in `load` as inherent methods of `Policy`: calling them is using the
/// load layer even though no `use crate::load` says so.
const LOAD_ENTRY_POINTS: &[&str] = &[
    "Policy::from_file",
    "Policy::from_toml",
    "Policy::shipped",
    "Policy::from_name_or_file",
    "lint_name_or_file",
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text of a file without its `#[cfg(test)] mod tests` (tests may reach anywhere).
fn non_test_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        // Comments (docs included) name other layers freely.
        let code = line.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every top-level module named after `crate::` in `code`, including the members of a
/// grouped `use crate::{a, b::c}`.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Only the first segment of each top-level member of the group.
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(first_segment(&group[start..j]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(first_segment(&group[start..j]));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(first_segment(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

fn first_segment(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level module a file of `src` belongs to (`None` for `lib.rs` and the binaries).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    // `lib.rs` is the root, the binaries are above everything, and this file is a test.
    if first == "bin" || first == "lib.rs" || first == "layers.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_string())
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let Some(module) = module_of(rel) else {
            continue;
        };
        let own = layer(&module).unwrap_or_else(|| {
            panic!(
                "src/{} is in no layer: add `{module}` to LAYERS",
                rel.display()
            )
        });
        let code = non_test_code(&std::fs::read_to_string(file).expect("readable"));
        for used in crate_modules(&code) {
            if let Some(l) = layer(&used) {
                if l > own {
                    upward.push(format!(
                        "src/{} ({module}, layer {own}) uses crate::{used} (layer {l})",
                        rel.display()
                    ));
                }
            }
        }
        if own < layer("load").expect("load is a layer") {
            for entry in LOAD_ENTRY_POINTS {
                if code.contains(entry) {
                    upward.push(format!(
                        "src/{} ({module}) calls {entry}, which is in load",
                        rel.display()
                    ));
                }
            }
        }
        checked += 1;
    }
    assert!(
        checked > 40,
        "only {checked} files checked: is the walk right?"
    );
    assert!(
        upward.is_empty(),
        "arrows that run back up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_scanner_sees_grouped_and_plain_paths() {
    let code = "use crate::{policy::{A, B}, shell};\nlet x = crate::evaluate::evaluate(p);\n// crate::middleware\n";
    let found = crate_modules(&non_test_code(code));
    let want: BTreeSet<String> = ["policy", "shell", "evaluate"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, want);
    let with_tests =
        "use crate::shell;\n#[cfg(test)]\nmod tests {\n    use crate::middleware;\n}\n";
    let found = crate_modules(&non_test_code(with_tests));
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["shell"]);
}
