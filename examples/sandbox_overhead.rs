//! What the sandbox launcher costs: session start and per call, against a bash session
//! started directly. A timed loop (no criterion: each sample is a process start).
//!
//! ```text
//! cargo build --release --bin policy-check --example sandbox_overhead
//! target/release/examples/sandbox_overhead [STARTS] [CALLS]     # defaults 30 and 300
//! ```
//! The launcher is `target/<profile>/policy-check` next to this example (or `$POLICY_CHECK`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use shellgate::middleware::{BashSession, Executor, Launcher, SessionConfig};
use shellgate::sandbox::plan::JailPlan;
use shellgate::sandbox::SandboxSpec;

fn main() {
    let mut args = std::env::args().skip(1);
    let starts: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let calls: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let program = std::env::var_os("POLICY_CHECK")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().unwrap();
            exe.parent().unwrap().parent().unwrap().join("policy-check")
        });
    assert!(program.exists(), "{}: build it first", program.display());
    let ws = std::env::temp_dir().join(format!("shellgate-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&ws).unwrap();
    let tmp = ws.with_extension("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let policy = shellgate::Policy::from_name_or_file("developer").unwrap();
    let jail = SandboxSpec::from_policy(&policy, &shellgate::Context::new(&ws));
    // The launcher as it was before the jail (issue 23): Landlock and seccomp only.
    let spec = SandboxSpec {
        jail: false,
        ..jail.clone()
    };
    let no_landlock = SandboxSpec {
        landlock: false,
        ..spec.clone()
    };
    let configs: Vec<(&str, SessionConfig)> = vec![
        // The baseline: bash's here-documents (the wrapper uses one per call) go to
        // $TMPDIR, a private empty directory under the launcher; the same here.
        (
            "bash directly, private TMPDIR (baseline)",
            SessionConfig::new(&ws).env("TMPDIR", &tmp),
        ),
        ("bash directly, TMPDIR=/tmp", SessionConfig::new(&ws)),
        (
            "launcher, no Landlock",
            SessionConfig::new(&ws).launcher(Launcher {
                program: program.clone(),
                spec: no_landlock,
            }),
        ),
        (
            "launcher + Landlock",
            SessionConfig::new(&ws).launcher(Launcher {
                program: program.clone(),
                spec: spec.clone(),
            }),
        ),
        (
            "launcher + Landlock, kill at call end",
            SessionConfig::new(&ws)
                .launcher(Launcher {
                    program: program.clone(),
                    spec,
                })
                .keep_background(false),
        ),
        (
            "jail (bwrap, cgroup, Landlock, seccomp), kill",
            SessionConfig::new(&ws)
                .launcher(Launcher {
                    program: program.clone(),
                    spec: jail.clone(),
                })
                .keep_background(false),
        ),
    ];
    // bubblewrap alone, with the same plan, running `true`: the floor of the jail's start.
    if let Some(bwrap) = jail.bwrap.clone() {
        let plan = JailPlan::build(&jail, Some(&tmp), None, jail.overlay).unwrap();
        let run = || {
            let ok = std::process::Command::new(&bwrap)
                .args(plan.bwrap_args())
                .args(["--", "/bin/true"])
                .status()
                .unwrap()
                .success();
            assert!(ok);
        };
        for _ in 0..5 {
            run();
        }
        let t = Instant::now();
        for _ in 0..starts {
            run();
        }
        println!(
            "bare `bwrap PLAN -- true` (developer's plan): {:.2} ms per start",
            (t.elapsed() / starts).as_secs_f64() * 1e3
        );
    }
    // A bare bash session, no wrapper at all: `true; echo MARK` written, read back up to
    // MARK. The floor of a session's round trip (the per-call goal is 5x this).
    {
        use std::io::{BufRead, BufReader, Write};
        let start = || {
            let mut child = std::process::Command::new("bash")
                .args(["--noprofile", "--norc"])
                .current_dir(&ws)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let out = BufReader::new(child.stdout.take().unwrap());
            (child, stdin, out)
        };
        let call = |stdin: &mut std::process::ChildStdin, out: &mut BufReader<_>| {
            stdin.write_all(b"true; echo __bare_mark\n").unwrap();
            let mut line = String::new();
            while line != "__bare_mark\n" {
                line.clear();
                out.read_line(&mut line).unwrap();
            }
        };
        let t = Instant::now();
        for _ in 0..starts {
            let (mut child, mut stdin, mut out) = start();
            call(&mut stdin, &mut out);
            drop(stdin);
            child.wait().unwrap();
        }
        let st = t.elapsed() / starts;
        let (mut child, mut stdin, mut out) = start();
        for _ in 0..20 {
            call(&mut stdin, &mut out);
        }
        let t = Instant::now();
        for _ in 0..calls {
            call(&mut stdin, &mut out);
        }
        let per = t.elapsed() / calls;
        drop(stdin);
        child.wait().unwrap();
        println!(
            "bare bash session (no wrapper): {:.2} ms per start, {:.4} ms per call of `true`",
            st.as_secs_f64() * 1e3,
            per.as_secs_f64() * 1e3
        );
    }
    // Warm up (page cache, the binaries), so the first row is not penalised.
    for (_, config) in &configs {
        let mut s = BashSession::new(config.clone()).unwrap();
        for _ in 0..20 {
            s.run("true").unwrap();
        }
    }
    let mut base: Option<(Duration, Duration, Duration)> = None;
    let mut ends = Vec::new();
    println!(
        "{:<44} {:>12} {:>12} {:>14}",
        "session", "start", "call `true`", "call 200 opens"
    );
    for (name, config) in configs {
        let (mut up, mut down) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..starts {
            let t = Instant::now();
            let s = BashSession::new(config.clone()).unwrap();
            up += t.elapsed();
            let t = Instant::now();
            drop(s);
            down += t.elapsed();
        }
        let start = (up + down) / starts;
        ends.push((name, up / starts, down / starts));
        let mut s = BashSession::new(config.clone()).unwrap();
        let t = Instant::now();
        for _ in 0..calls {
            s.run("true").unwrap();
        }
        let call = t.elapsed() / calls;
        let opens = "for i in $(seq 200); do : < /etc/hostname; done";
        let t = Instant::now();
        for _ in 0..calls / 10 {
            s.run(opens).unwrap();
        }
        let heavy = t.elapsed() / (calls / 10).max(1);
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        let (bs, bc, bh) = *base.get_or_insert((start, call, heavy));
        println!(
            "{name:<44} {:>7.2} ms {:>4.1}x {:>6.3} ms {:>4.1}x {:>8.3} ms {:>4.1}x",
            start.as_secs_f64() * 1e3,
            ratio(start, bs),
            call.as_secs_f64() * 1e3,
            ratio(call, bc),
            heavy.as_secs_f64() * 1e3,
            ratio(heavy, bh),
        );
    }
    println!("\nstart = ready for the first call + end (the session dropped):");
    for (name, up, down) in ends {
        println!(
            "{name:<44} ready {:>7.2} ms, end {:>7.2} ms",
            up.as_secs_f64() * 1e3,
            down.as_secs_f64() * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&ws);
    let _ = std::fs::remove_dir_all(&tmp);
}
