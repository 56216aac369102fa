//! Every integration test of shellgate, in one test binary: the library is linked once, not
//! once per file (ripgrep's `tests/tests.rs` does the same; `autotests = false` in
//! `Cargo.toml`). Each file of `tests/` is a module named after it, so
//! `cargo test --test integration differential::` runs one file's tests.
//!
//! The brush-parser comparison is a separate, opt-in target (`cargo test --features
//! oracle-brush --test brush_compare`) so that `cargo test` does not compile brush-parser;
//! CI runs both. The long campaigns are the same tests with a larger case count from the
//! environment (`ARGV_CASES`, `SHELLGATE_ORACLE_FULL`, ...; see BENCHMARKS.md).

// Shared helpers: the recording-stub sandbox, IR argv patterns, the hand-written corpus.
mod common;

// The shell front-end: the commands the IR says would run, against real bash.
mod shell_parse;
// Decisions under the shipped policies, in both directions, with hostile inputs.
mod evaluate;
// The repository git really uses: nested and bare-shaped repositories, program-running config.
mod git_repository;
// Effects named by meaning: force pushes, symlinks made by patches and cp, device nodes.
mod effects;
// The glob rule against real bash, with files named like options.
mod glob_rule;
// Every context where bash evaluates a value as code: proven with bash, refused by shellgate.
mod code_contexts;
// The environment is a secret store: reads of variables the command did not set, and dumps.
mod env_reads;
// The bypass corpus (always refused) and the ordinary corpus (allowed), `tests/corpus/`.
mod corpus;
// Properties over generated commands (appending a denied command never allows, ...).
mod properties;
// Option allowlists, hidden inputs and protected files, against the real programs (strace).
mod option_oracle;
// `policy-check draft`: help texts read, options typed by the oracle, the held-out check.
mod draft;
// Allowed commands run by real bash: what ran is what the IR said, and argv fidelity.
mod differential;
// Where `cd` takes later commands, against real bash.
mod cwd_differential;
// The awk reader against the real awk.
mod awk_differential;
// Loading policies: every problem with file:line:col and a stable code.
mod policy_load;
// `policy.schema.json` is generated from the policy types and kept in sync.
mod schema;
// Redaction: the rule pack's examples, user rules, streaming, coverage.
mod redact;
// Truncation: budgets, cuts, markers, binary output, streaming.
mod truncate;
// The reference executor: a real bash session, no policy involved.
mod session;
// The Guard: what reaches the executor, what the model is told, what the audit log keeps.
mod middleware;
// The kernel sandbox and process containment, attacked from inside.
mod sandbox;
// The jail conformance suite: escape probes inside the real sandbox, each with its control.
mod jail;
// `policy-check serve` and `run` as subprocesses, the way an application drives them.
mod serve;

#[cfg(feature = "mcp")]
mod mcp;
// The `policy-check` command-line contract: outputs and exit codes.
mod cli;
// Pinned command lines (`tests/cmd/*.toml`, trycmd).
mod cmd;
// The ways in from outside: agent hooks, `lint`, `check --script`, SARIF.
mod integrations;
// Every hook of `.pre-commit-hooks.yaml` runs as pre-commit runs it.
mod precommit;
// Every decision over the corpora and generated commands, against a committed snapshot.
mod decision_snapshot;
// Snapshots and undo: destructive calls through serve, undone exactly.
mod undo;
// Every decision is a trace: each part names its rule; every reason code carries a rule.
mod trace;
// Option tables: one entry per option, read as the old lists (issue 31).
mod option_tables;
// `policy-check migrate`: the shipped policies compile the same after it (issue 31).
mod migrate;
// The program library: `include = ["programs:NAME"]` (issue 31).
mod library;
