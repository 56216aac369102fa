//! Instruction counts (valgrind's callgrind) beside criterion's wall time: a count does not
//! move with the machine's load, where wall-clock figures on a shared machine vary 2×.
//!
//! Each case is counted in one run, against `bash -c true` counted in the same run (the
//! in-run baseline), and printed with its ratio to it:
//!
//! - whole processes: `policy-check check --policy developer 'ls -la'` with the policy cache
//!   off (TOML parsed, every rule compiled) and warm, and `hook claude-code` for one command
//!   (cached);
//! - in process: parse + evaluate of a few inputs under developer, as the counts of this
//!   binary evaluating the input 1 + N times less once, over N (the load is not in them).
//!
//! `cargo bench --bench instructions` (the bench profile: the figures BENCHMARKS.md gives);
//! `-- --slice` counts fewer cases (CI runs it on the debug build: `cargo test --bench
//! instructions -- --slice`); `-- --max-cached-ratio R` fails when a cached check counts more
//! than R × `bash -c true`, checked only in an optimised build (a debug build's counts are
//! many times a release build's: they are reported, not judged). Without valgrind on the
//! PATH it prints why and exits 0: it is a measurement, not a gate on the machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The inputs evaluated in process.
const INPUTS: &[(&str, &str)] = &[
    ("ls -la", "ls -la"),
    ("pipeline", "git log --oneline | grep fix | head -n 5"),
    (
        "script",
        "for f in src/*.rs; do wc -l \"$f\"; done; cargo test --lib 2>&1 | tail -n 3",
    ),
];

/// Evaluations of one input beyond the first (the difference of two counts over this).
const REPEAT: usize = 200;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--inner") {
        inner(&args[1..]);
        return;
    }
    let slice = args.iter().any(|a| a == "--slice");
    let max_ratio: Option<f64> = args
        .iter()
        .position(|a| a == "--max-cached-ratio")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("--max-cached-ratio takes a number"));
    if Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map_or(true, |s| !s.success())
    {
        println!("instructions: skipped: valgrind is not installed");
        return;
    }
    let optimised = !cfg!(debug_assertions);
    let check = PathBuf::from(env!("CARGO_BIN_EXE_policy-check"));
    let me = std::env::current_exe().expect("the bench's own path");
    let work = tempfile::tempdir().expect("a temporary directory");
    let cache = work.path().join("cache");
    let workspace = work.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("a workspace");
    let cached = [("SHELLGATE_CACHE_DIR", cache.to_str().expect("UTF-8"))];
    let off = [("SHELLGATE_CACHE", "off")];

    let bash = count(Path::new("bash"), &["-c", "true"], &[], None, &workspace);
    let mut rows: Vec<(String, u64)> = vec![("bash -c true (baseline)".into(), bash)];
    let ls = ["check", "--policy", "developer", "ls -la"];
    if !slice {
        let n = count(&check, &ls, &off, None, &workspace);
        rows.push(("check --policy developer 'ls -la', no cache".into(), n));
    }
    // Fill the cache (not counted), then count a check that reads it.
    run(&check, &ls, &cached, None, &workspace);
    let cached_check = count(&check, &ls, &cached, None, &workspace);
    rows.push((
        "check --policy developer 'ls -la', cached".into(),
        cached_check,
    ));
    let payload = serde_json::json!({
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "cwd": workspace,
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
    })
    .to_string();
    let hook = [
        "hook",
        "claude-code",
        "--policy",
        "developer",
        "--workspace",
        workspace.to_str().expect("UTF-8"),
    ];
    run(&check, &hook, &cached, Some(&payload), &workspace);
    let n = count(&check, &hook, &cached, Some(&payload), &workspace);
    rows.push(("hook claude-code, 'ls -la', cached".into(), n));

    let inputs = if slice { &INPUTS[..1] } else { INPUTS };
    for (name, input) in inputs {
        let once = count(&me, &["--inner", "1", input], &[], None, &workspace);
        let more = count(
            &me,
            &["--inner", &(1 + REPEAT).to_string(), input],
            &[],
            None,
            &workspace,
        );
        let per = more.saturating_sub(once) / REPEAT as u64;
        rows.push((format!("in process: parse + evaluate `{name}`"), per));
    }

    println!(
        "instructions (callgrind, {} build; ratio: to `bash -c true` in this run)",
        if optimised { "optimised" } else { "debug" }
    );
    println!("| case | instructions | ratio |\n|---|---|---|");
    for (name, n) in &rows {
        println!(
            "| {name} | {:.3} M | {:.2}× |",
            *n as f64 / 1e6,
            *n as f64 / bash as f64
        );
    }
    let ratio = cached_check as f64 / bash as f64;
    match max_ratio {
        Some(max) if optimised && ratio > max => {
            eprintln!(
                "instructions: a cached check counts {ratio:.2}× `bash -c true`, over the \
                 ceiling of {max}×"
            );
            std::process::exit(1);
        }
        Some(max) if optimised => println!("cached check {ratio:.2}× ≤ {max}×: ok"),
        Some(_) => println!("debug build: the cached-check ceiling is not checked"),
        None => {}
    }
}

/// `--inner N INPUT`: load developer, evaluate INPUT N times.
fn inner(args: &[String]) {
    let n: usize = args[0].parse().expect("a count");
    let input = &args[1];
    let policy = shellgate::Policy::shipped("developer").expect("developer loads");
    let ctx = shellgate::Context::new("/srv/project");
    let mut refused = 0;
    for _ in 0..n {
        let d = policy.evaluate(&ctx, std::hint::black_box(input));
        refused += usize::from(!d.is_allowed());
    }
    std::hint::black_box(refused);
}

fn command(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
    cwd: &Path,
) -> Command {
    let mut c = Command::new(program);
    c.args(args).envs(env.iter().copied()).current_dir(cwd);
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

fn finish(mut c: Command, stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    let mut child = c.spawn().expect("the command starts");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("a stdin pipe");
        pipe.write_all(text.as_bytes()).expect("stdin written");
    }
    child.wait_with_output().expect("the command ends")
}

/// Run a case once, uncounted (to fill the cache).
fn run(program: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>, cwd: &Path) {
    let out = finish(command(program, args, env, stdin, cwd), stdin);
    assert!(
        out.status.code().is_some(),
        "{} {args:?} was killed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The instructions callgrind counts for one run of a case (its own process, not children).
fn count(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
    cwd: &Path,
) -> u64 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("callgrind.out");
    let mut vg = vec![
        "--tool=callgrind".to_string(),
        format!("--callgrind-out-file={}", file.display()),
        program.display().to_string(),
    ];
    vg.extend(args.iter().map(|a| a.to_string()));
    let vg: Vec<&str> = vg.iter().map(String::as_str).collect();
    let out = finish(command(Path::new("valgrind"), &vg, env, stdin, cwd), stdin);
    assert!(
        out.status.code().is_some(),
        "valgrind {vg:?} was killed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "no callgrind output for {vg:?} ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no total in the callgrind output of {vg:?}"))
}
