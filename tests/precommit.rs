//! Every hook of `.pre-commit-hooks.yaml` runs: its `entry` and `args` are run the way
//! pre-commit runs them (file names appended), with the built binary standing in for the
//! installed `policy-check`, on files its `files`/`types` select. Good files pass (exit 0),
//! bad ones fail.

use std::path::Path;
use std::process::Command;

use regex::Regex;

#[derive(Debug, Default)]
struct Hook {
    id: String,
    entry: String,
    args: Vec<String>,
    files: Option<String>,
    types: Vec<String>,
}

/// A hand reader for the flat subset of YAML the hooks file uses: a list of mappings with
/// scalar values (plain or single-quoted) and flow sequences.
fn read_hooks(text: &str) -> Vec<Hook> {
    let mut hooks: Vec<Hook> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let item = trimmed.strip_prefix("- ");
        if item.is_some() {
            hooks.push(Hook::default());
        }
        let kv = item.unwrap_or(trimmed);
        let Some((key, value)) = kv.split_once(':') else {
            panic!("unreadable line: {line}");
        };
        let value = value.trim();
        let hook = hooks.last_mut().expect("a key before the first `- `");
        let scalar = || value.trim_matches('\'').to_string();
        let list = || -> Vec<String> {
            let inner = value
                .strip_prefix('[')
                .and_then(|v| v.strip_suffix(']'))
                .unwrap_or_else(|| panic!("`{key}` is not a flow list: {value}"));
            inner
                .split(',')
                .map(|s| s.trim().trim_matches('\'').to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        match key.trim() {
            "id" => hook.id = scalar(),
            "entry" => hook.entry = scalar(),
            "args" => hook.args = list(),
            "files" => hook.files = Some(scalar()),
            "types" => hook.types = list(),
            "name" | "description" | "language" => {}
            other => panic!("unexpected key `{other}` in .pre-commit-hooks.yaml"),
        }
    }
    hooks
}

fn selects(hook: &Hook, file: &str) -> bool {
    if let Some(pattern) = &hook.files {
        if !Regex::new(pattern).expect("files regex").is_match(file) {
            return false;
        }
    }
    hook.types.iter().all(|t| match t.as_str() {
        "toml" => file.ends_with(".toml"),
        "shell" => file.ends_with(".sh"),
        "file" | "text" => true,
        other => panic!("type `{other}` not handled by this test"),
    })
}

fn run_hook(hook: &Hook, files: &[&str]) -> (i32, String) {
    let mut words = hook.entry.split_whitespace();
    assert_eq!(words.next(), Some("policy-check"), "{}: entry", hook.id);
    let out = Command::new(env!("CARGO_BIN_EXE_policy-check"))
        .args(words)
        .args(&hook.args)
        .args(files)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run hook");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

const GOOD: &[&str] = &[
    "policies/read-only.toml",
    "policies/developer.toml",
    "tests/data/scripts/ok.sh",
    "README.md",
];

/// For each hook, a file it selects and must fail on.
const BAD: &[(&str, &str)] = &[
    ("shellgate-lint", "tests/data/policies/dangerous.toml"),
    ("shellgate-test", "tests/data/policies/failing-example.toml"),
    ("shellgate-check-scripts", "tests/data/scripts/bad.sh"),
];

#[test]
fn every_hook_runs_on_the_files_it_selects() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml"),
    )
    .expect(".pre-commit-hooks.yaml");
    let hooks = read_hooks(&text);
    let ids: Vec<&str> = hooks.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "shellgate-lint",
            "shellgate-test",
            "shellgate-check-scripts"
        ]
    );
    for hook in &hooks {
        let good: Vec<&str> = GOOD.iter().copied().filter(|f| selects(hook, f)).collect();
        assert!(!good.is_empty(), "{}: selects none of {GOOD:?}", hook.id);
        assert!(
            !good.contains(&"README.md"),
            "{}: selects README.md",
            hook.id
        );
        let (code, out) = run_hook(hook, &good);
        assert_eq!(code, 0, "{} on {good:?}:\n{out}", hook.id);

        let bad = BAD
            .iter()
            .find(|(id, _)| *id == hook.id)
            .map(|(_, f)| *f)
            .expect("a bad sample");
        assert!(selects(hook, bad), "{}: does not select {bad}", hook.id);
        let (code, out) = run_hook(hook, &[bad]);
        assert_eq!(code, 1, "{} on {bad}:\n{out}", hook.id);
    }
}
