//! The kernel sandbox and process containment of `policy-check serve` / `run`, attacked the
//! way a hostile workspace script would. Processes are tracked by pid (the `/proc` parent
//! chain), never by name. CI runs as root, so every confinement asserted here is one that
//! file permissions do not give (a control run without the sandbox shows the attack works).

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::serve::Serve;

const POLICY: &str = r#"
[policy]
name = "sandbox-test"
default = "deny"

[paths]
read = ["{workspace}", "{workspace}/**"]
write = ["/dev/null", "{workspace}/**"]

[programs.echo]
operands = "text"

[programs.sleep]
operands = "text"

[wrappers]
allow = ["timeout"]

[sandbox]
mode = "enforce"
network = "off"
script_arguments = ["bash"]

[sandbox.limits]
file_size = 1048576
processes = 64

[sandbox.programs.bash]
operands = ["path-read", "text..."]
min_operands = 1
"#;

/// The session's own processes below serve in the jail: the launcher, bubblewrap, bubblewrap's
/// init (PID 1 of the jail) and the shell.
const SESSION_PROCS: usize = 4;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_policy-check"))
}

/// `tmp/ws` (the workspace), `tmp/outside` (a decoy secret, mode 0600), `tmp/policy.toml`.
fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    let decoy = dir.path().join("outside/secret");
    std::fs::write(&decoy, "DECOY-SECRET-4711\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&decoy, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    (dir, ws)
}

/// `(pid, ppid)` of every live (not zombie) process.
fn procs() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let f: Vec<&str> = rest.split(' ').collect();
        if f[0] == "Z" || f[0] == "X" {
            continue;
        }
        out.push((pid, f[1].parse().unwrap()));
    }
    out
}

fn descendants(root: i32) -> Vec<i32> {
    let all = procs();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid) in &all {
            if ppid == p && !found.contains(&pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

fn alive(pid: i32) -> bool {
    procs().iter().any(|&(p, _)| p == pid)
}

/// Every pid in `pids` is gone within `within`.
fn all_die(pids: &[i32], within: Duration) {
    let until = Instant::now() + within;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "still alive: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn content(v: &Value) -> String {
    v["content"].as_str().unwrap_or_default().to_string()
}

/// A script that leaves processes behind in every way that escapes a process group.
const SPAWN: &str = "\
setsid sleep 600 &
timeout 600 sleep 600 &
( ( sleep 600 & ) & )
setsid bash -c '( sleep 600 & ); sleep 600' &
sleep 0.3
echo spawned
";

/// Start serve keeping background jobs, run SPAWN; the pids of everything below serve.
fn spawned(extra: &[&str]) -> (tempfile::TempDir, Serve, Vec<i32>) {
    let (dir, ws) = setup();
    std::fs::write(ws.join("spawn.sh"), SPAWN).unwrap();
    let mut args = vec!["--keep-background", "--timeout", "5"];
    args.extend_from_slice(extra);
    let mut s = Serve::start(dir.path(), &ws, &args);
    let a = s.call_bash("bash spawn.sh");
    assert_eq!(content(&a), "spawned\n", "{a}");
    let below = descendants(s.pid());
    // launcher, shell, and at least the 6 sleepers and their helpers
    assert!(
        below.len() >= 8,
        "expected the sleepers below serve: {below:?}"
    );
    (dir, s, below)
}

/// The `--tmp` and `--cgroup` directories of the session's launcher (a pid in `below`).
fn session_dirs(below: &[i32]) -> Vec<PathBuf> {
    for p in below {
        let Ok(cmdline) = std::fs::read(format!("/proc/{p}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.get(1).map(String::as_str) == Some("sandbox") {
            let dirs: Vec<PathBuf> = args
                .windows(2)
                .filter(|w| w[0] == "--tmp" || w[0] == "--cgroup")
                .map(|w| PathBuf::from(&w[1]))
                .collect();
            assert!(dirs.iter().all(|d| d.exists()), "{dirs:?}");
            return dirs;
        }
    }
    panic!("no launcher among {below:?}");
}

fn all_removed(dirs: &[PathBuf]) {
    let until = Instant::now() + Duration::from_secs(3);
    while dirs.iter().any(|d| d.exists()) {
        assert!(Instant::now() < until, "left behind: {dirs:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn require_landlock() {
    if let Err(e) = shellgate::middleware::sandbox::landlock_available() {
        panic!("this kernel cannot enforce the sandbox ({e}); these tests need Landlock ABI 6");
    }
}

#[test]
fn a_hostile_script_cannot_leave_the_workspace() {
    require_landlock();
    let (dir, ws) = setup();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let uport = udp.local_addr().unwrap().port();
    let outside = dir.path().join("outside");
    let script = format!(
        "echo in > inside.txt && echo WRITE_IN_OK\n\
         echo x > {out}/escape.txt && echo WRITE_OUT_OK\n\
         cat {out}/secret\n\
         ln -s {out}/secret lnk && cat lnk\n\
         ln -s {out} dirlnk && cat dirlnk/secret\n\
         (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECT_OK\n\
         echo datagram > /dev/udp/127.0.0.1/{uport} && echo UDP_OK\n\
         head -c 3000000 /dev/zero > big.bin; echo size=$(stat -c %s big.bin)\n\
         cat /etc/shadow >/dev/null && echo SHADOW_OK\n\
         echo tmp > \"$TMPDIR/t\" && echo TMP_OK\n\
         echo done\n",
        out = outside.display()
    );
    std::fs::write(ws.join("attack.sh"), &script).unwrap();

    // Control: the same script without the sandbox does everything (root, no Landlock).
    let control = Command::new("bash")
        .arg("attack.sh")
        .current_dir(&ws)
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let control = String::from_utf8_lossy(&control.stdout).into_owned();
    assert!(control.contains("DECOY-SECRET-4711"), "{control}");
    assert!(control.contains("WRITE_OUT_OK"), "{control}");
    assert!(control.contains("UDP_OK"), "{control}");
    let mut buf = [0u8; 64];
    while udp.recv(&mut buf).is_ok() {}
    std::fs::remove_file(outside.join("escape.txt")).unwrap();
    std::fs::remove_file(ws.join("lnk")).unwrap();
    std::fs::remove_file(ws.join("dirlnk")).unwrap();
    while listener.accept().is_ok() {}

    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "10"]);
    let a = s.call_bash("bash attack.sh");
    let out = content(&a);
    assert!(out.contains("WRITE_IN_OK"), "{out}");
    assert!(out.contains("TMP_OK"), "{out}");
    assert!(out.contains("done"), "{out}");
    for bad in [
        "WRITE_OUT_OK",
        "DECOY-SECRET-4711",
        "CONNECT_OK",
        "UDP_OK",
        "SHADOW_OK",
    ] {
        assert!(!out.contains(bad), "{bad} in {out}");
    }
    assert!(out.contains("size=1048576"), "file size not bounded: {out}");
    assert!(!outside.join("escape.txt").exists());
    assert!(
        listener.accept().is_err(),
        "a connection reached the listener"
    );
    assert!(udp.recv(&mut buf).is_err(), "a datagram reached the socket");
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "in\n"
    );
}

#[test]
fn the_session_inherits_no_blocked_signals() {
    // serve's own signal handling must not leave SIGTERM blocked in what it starts, or
    // `timeout` (and `kill`) could not stop anything.
    for extra in [&["--no-sandbox"][..], &[][..]] {
        let (dir, ws) = setup();
        let mut s = Serve::start(dir.path(), &ws, extra);
        let started = Instant::now();
        let a = s.call_bash("timeout 0.3 sleep 5");
        assert!(content(&a).contains("exit status 124"), "{extra:?}: {a}");
        assert!(started.elapsed() < Duration::from_secs(3), "{extra:?}");
    }
}

#[test]
fn without_landlock_sandboxed_commands_are_refused_and_the_rest_runs() {
    // A kernel without Landlock, as far as serve can tell: fail closed for workspace code.
    let (dir, ws) = setup();
    std::fs::write(ws.join("hello.sh"), "echo hello from the script\n").unwrap();
    let mut s = Serve::start_with_env(dir.path(), &ws, &[], &[("SHELLGATE_NO_LANDLOCK", "1")]);
    let a = s.call_bash("bash hello.sh");
    assert_eq!(a["is_error"], true, "{a}");
    assert!(content(&a).contains("sandbox-unavailable"), "{a}");
    assert!(!content(&a).contains("hello from"), "{a}");
    let a = s.call_bash("echo still here");
    assert_eq!(content(&a), "still here\n", "{a}");
}

#[test]
fn workspace_code_needs_the_sandbox() {
    let (dir, ws) = setup();
    std::fs::write(ws.join("hello.sh"), "echo hello from the script\n").unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--no-sandbox"]);
    let a = s.call_bash("bash hello.sh");
    assert_eq!(a["is_error"], true, "{a}");
    assert!(content(&a).contains("sandbox-required"), "{a}");
    require_landlock();
    let mut s = Serve::start(dir.path(), &ws, &[]);
    let a = s.call_bash("bash hello.sh");
    assert_eq!(content(&a), "hello from the script\n", "{a}");
    // A script outside the workspace is not workspace code.
    let a = s.call_bash("bash ../outside/secret");
    assert_eq!(a["is_error"], true, "{a}");
    assert!(!content(&a).contains("sandbox-required"), "{a}");
}

#[test]
fn processes_that_left_the_group_die_with_the_call() {
    let (dir, ws) = setup();
    std::fs::write(ws.join("spawn.sh"), SPAWN).unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "5"]);
    let a = s.call_bash("bash spawn.sh");
    assert_eq!(content(&a), "spawned\n", "{a}");
    // Only the launcher, bubblewrap (and its init) and the shell are left below serve.
    let below = descendants(s.pid());
    assert_eq!(below.len(), SESSION_PROCS, "left behind: {below:?}");
    // And their output never reaches a later answer.
    let a = s.call_bash("echo next");
    assert_eq!(content(&a), "next\n", "{a}");
}

#[test]
fn sigterm_to_serve_kills_every_descendant() {
    let (_dir, mut s, below) = spawned(&["--processes", "100"]);
    let dirs = session_dirs(&below);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = s.exits_within(Duration::from_secs(3));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::into_raw(status) >> 8,
        128 + 15
    );
    all_die(&below, Duration::from_secs(3));
    all_removed(&dirs);
}

#[test]
fn sighup_and_sigint_to_serve_kill_every_descendant() {
    for sig in [
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let (_dir, mut s, below) = spawned(&[]);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.pid()), sig).unwrap();
        s.exits_within(Duration::from_secs(3));
        all_die(&below, Duration::from_secs(3));
    }
}

#[test]
fn sigkill_of_serve_kills_every_descendant() {
    // No handler can run: the launcher and the shell die with their parents
    // (PR_SET_PDEATHSIG), and with the shell its PID namespace.
    let (_dir, mut s, below) = spawned(&["--processes", "100"]);
    let dirs = session_dirs(&below);
    // A TMPDIR and the session cgroup (one directory in v2, memory, pids, cpu and freezer in v1).
    assert!(
        dirs.len() == 2 || dirs.len() == 5,
        "a TMPDIR and a cgroup: {dirs:?}"
    );
    s.child.kill().unwrap();
    s.exits_within(Duration::from_secs(3));
    all_die(&below, Duration::from_secs(3));
    // And the launcher cleaned up after itself.
    all_removed(&dirs);
}

#[test]
fn end_of_input_stops_a_running_command_at_once() {
    // `--at-eof stop`; the default, `finish`, is tests/serve.rs's `a_pipe_*`.
    let (_dir, mut s, below) = spawned(&["--at-eof", "stop"]);
    s.send_bash("sleep 30");
    s.send_bash("echo never");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    drop(s.stdin.take());
    let a = s.read();
    assert_eq!(a["is_error"], true, "{a}");
    assert!(content(&a).contains("stopped (end of input"), "{a}");
    // The line read but not yet run is answered, and not run.
    let b = s.read();
    assert_eq!(b["type"], "error", "{b}");
    assert!(b.to_string().contains("not run"), "{b}");
    let status = s.exits_within(Duration::from_secs(3));
    assert!(status.success());
    assert!(started.elapsed() < Duration::from_secs(3));
    all_die(&below, Duration::from_secs(3));
}

#[test]
fn restart_and_timeout_kill_every_descendant() {
    let (_dir, mut s, below) = spawned(&[]);
    let line = json!({"type": "tool_use", "id": "r", "name": "bash", "input": {"restart": true}});
    writeln!(s.stdin.as_mut().unwrap(), "{line}").unwrap();
    let a = s.read();
    assert!(content(&a).contains("restarted"), "{a}");
    all_die(&below, Duration::from_secs(3));

    let a = s.call_bash("bash spawn.sh");
    assert_eq!(content(&a), "spawned\n", "{a}");
    let below = descendants(s.pid());
    let a = s.call_bash("sleep 30");
    assert!(content(&a).contains("timed out"), "{a}");
    all_die(&below, Duration::from_secs(3));
}

#[test]
fn sigint_to_run_kills_every_descendant() {
    let (dir, ws) = setup();
    std::fs::write(ws.join("spawn.sh"), format!("{SPAWN}sleep 600\n")).unwrap();
    let mut child = Command::new(bin())
        .args(["run", "--timeout", "30", "--policy"])
        .arg(dir.path().join("policy.toml"))
        .arg("--cwd")
        .arg(&ws)
        .args(["--", "bash spawn.sh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let _ = &mut out;
    let until = Instant::now() + Duration::from_secs(5);
    let below = loop {
        let b = descendants(child.id() as i32);
        if b.len() >= 9 {
            break b;
        }
        assert!(Instant::now() < until, "the script did not start: {b:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    all_die(&below, Duration::from_secs(3));
}

#[test]
fn a_fork_bomb_is_bounded() {
    let (dir, ws) = setup();
    // Root ignores RLIMIT_NPROC: the bound is the session's pids cgroup (processes = 64).
    // The `sleep` started before the bomb, and `wait` (a builtin: it needs no fork), keep the
    // call running while the bomb runs.
    if !Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists()
        && !std::fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control")
            .is_ok_and(|s| s.contains("pids"))
    {
        panic!("no pids cgroup on this machine: the fork bomb would not be bounded");
    }
    std::fs::write(
        ws.join("bomb.sh"),
        "sleep 3 & s=$!; b() { b 2>/dev/null | b 2>/dev/null & }; b; wait $s\n",
    )
    .unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "3"]);
    let a = s.call_bash("echo ready");
    assert_eq!(content(&a), "ready\n", "{a}");
    let serve = s.pid();
    let cgroup = session_dirs(&descendants(serve))
        .into_iter()
        .find(|d| d.join("pids.max").exists())
        .expect("the session has a pids cgroup");
    assert_eq!(read(&cgroup.join("pids.max")), "64");
    s.send_bash("bash bomb.sh");
    let watcher = std::thread::spawn(move || {
        let (mut most, mut below, mut events) = (0u64, 0usize, String::new());
        let until = Instant::now() + Duration::from_secs(3);
        // Sampled while the session lives (the cgroup goes with it).
        while Instant::now() < until {
            most = most.max(read(&cgroup.join("pids.current")).parse().unwrap_or(0));
            below = below.max(descendants(serve).len());
            let e = read(&cgroup.join("pids.events"));
            if !e.is_empty() {
                events = e;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (most, below, events)
    });
    let a = s.read();
    let (most, below, events) = watcher.join().unwrap();
    // The kernel refused forks past the limit: the bomb ran into it, and stayed under it.
    assert!(most <= 64, "pids.current reached {most}");
    let refused: u64 = events
        .strip_prefix("max ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        refused > 0,
        "the bomb never hit the limit ({events:?}, {below} below serve): {a}"
    );
    let a = s.call_bash("echo alive");
    assert_eq!(content(&a), "alive\n", "{a}");
    all_die(
        &descendants(serve)
            .into_iter()
            .skip(SESSION_PROCS)
            .collect::<Vec<_>>(),
        Duration::from_secs(3),
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn developer_allows_workspace_code_only_under_the_sandbox() {
    use shellgate::evaluate::SandboxState;
    let policy = shellgate::Policy::from_name_or_file("developer").unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/workspace-code.txt"),
    )
    .unwrap();
    let cmds: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert!(cmds.len() >= 40);
    let mut ctx = shellgate::Context::example();
    let share = |ctx: &shellgate::Context| {
        cmds.iter()
            .filter(|c| shellgate::evaluate(&policy, ctx, c).is_allowed())
            .count() as f64
            / cmds.len() as f64
    };
    let before = share(&ctx);
    ctx.sandbox = SandboxState::Enforced;
    let after = share(&ctx);
    eprintln!(
        "developer allows {:.1}% without the sandbox, {:.1}% with it ({} commands)",
        before * 100.0,
        after * 100.0,
        cmds.len()
    );
    assert!(after >= 0.8, "{after}");
    assert!(before < 0.5, "{before}");
    // What the sandbox adds is refused without it, with the reason that says why.
    for (state, code) in [
        (SandboxState::Off, "sandbox-required"),
        (SandboxState::Unavailable, "sandbox-unavailable"),
    ] {
        ctx.sandbox = state;
        for c in [
            "python3 solution.py",
            "./a.out",
            "make -j4",
            "gcc -o main main.c",
        ] {
            let d = shellgate::evaluate(&policy, &ctx, c);
            assert!(!d.is_allowed(), "{c}");
            assert!(d.reasons.iter().any(|r| r.code == code), "{c}: {d:?}");
        }
    }
    // And it never lets code outside the workspace or inline code through.
    ctx.sandbox = SandboxState::Enforced;
    for c in [
        "python3 /tmp/x.py",
        "python3 -c 'import os'",
        "node -e 1",
        "bash -c 'rm -rf /'",
        "/usr/bin/python3 x.py",
        "../outside/bin",
        "gcc -o /tmp/x main.c",
        "make -f /etc/Makefile",
    ] {
        assert!(!shellgate::evaluate(&policy, &ctx, c).is_allowed(), "{c}");
    }
}

// ---------------------------------------------------------------------------------------
// The file tools and code execution under the kernel sandbox: what the policy's lexical
// check cannot see (a symlink the command itself makes, one swapped in after the check),
// the kernel stops.

#[test]
fn code_execution_symlink_escapes_are_stopped_by_the_kernel() {
    require_landlock();
    let (dir, ws) = setup();
    let policy = format!("{POLICY}\n[programs.cat]\noperands = \"path-read\"\n\n[programs.ls]\noperands = \"path-read\"\n");
    let policy = policy.replace(
        "write = [\"/dev/null\", \"{workspace}/**\"]",
        "write = [\"/dev/null\", \"{workspace}/**\", \"{output_dir}/**\"]\nread_message = \"inside\"",
    ).replace("read = [\"{workspace}\", \"{workspace}/**\"]", "read = [\"{workspace}\", \"{workspace}/**\", \"{output_dir}\", \"{output_dir}/**\"]");
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let secret = dir.path().join("outside/secret");
    std::os::unix::fs::symlink(&secret, ws.join("lnk")).unwrap();
    // Control: the same read, outside the sandbox, shows the secret.
    assert_eq!(
        std::fs::read_to_string(ws.join("lnk")).unwrap(),
        "DECOY-SECRET-4711\n"
    );
    let outputs = dir.path().join("outputs");
    let outputs = outputs.to_str().unwrap();
    let mut serve = Serve::start(
        dir.path(),
        &ws,
        &[
            "--tools",
            "code-execution,text-editor",
            "--outputs",
            outputs,
        ],
    );
    let ask = |serve: &mut Serve, block: Value| {
        writeln!(serve.stdin.as_mut().unwrap(), "{block}").unwrap();
        serve.read()
    };
    // The policy allows `cat lnk` (a workspace path); the kernel refuses the target.
    let r = ask(
        &mut serve,
        json!({"type": "server_tool_use", "id": "k1", "name": "bash_code_execution",
        "input": {"command": "cat lnk; ls \"$OUTPUT_DIR\" && echo LS_OK; echo x > \"$OUTPUT_DIR/o.txt\""}}),
    );
    let c = &r["content"];
    assert_eq!(c["type"], "bash_code_execution_result", "{r}");
    assert!(!r.to_string().contains("DECOY-SECRET"), "{r}");
    // The target is absent from the jail's view (and Landlock would refuse it).
    assert!(
        c["stderr"]
            .as_str()
            .unwrap()
            .contains("No such file or directory")
            || c["stderr"].as_str().unwrap().contains("Permission denied"),
        "{r}"
    );
    assert_eq!(c["stdout"], "LS_OK\n", "{r}");
    assert_eq!(c["content"].as_array().map(Vec::len), Some(1), "{r}");
    // The file tool refuses the symlink at the policy layer, naming the rule.
    let r = ask(
        &mut serve,
        json!({"type": "tool_use", "id": "k2", "name": "str_replace_based_edit_tool",
        "input": {"command": "view", "path": "lnk"}}),
    );
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("[path-read-outside]"),
        "{r}"
    );
    assert!(!r.to_string().contains("DECOY-SECRET"), "{r}");
}

#[test]
fn the_confined_file_tool_cannot_leave_the_policy_paths_even_past_the_policy_check() {
    use shellgate::middleware::files::{FileError, WriteMode};
    use shellgate::middleware::sandbox::SandboxSpec;
    use shellgate::middleware::{FileTool, LocalFiles};
    require_landlock();
    let (dir, ws) = setup();
    let policy = shellgate::Policy::from_toml(POLICY, "sandbox-test.toml").unwrap();
    let ctx = shellgate::Context::new(&ws);
    let spec = SandboxSpec::from_policy(&policy, &ctx);
    let mut files = LocalFiles::confined(&spec).expect("Landlock confines the file tool");
    assert!(files.is_confined());
    let secret = dir.path().join("outside/secret");
    // Called directly, as if a symlink had been swapped in after the guard's check.
    match files.read(&secret, 1024) {
        Err(FileError::PermissionDenied(p)) => assert_eq!(p, secret),
        other => panic!("the kernel let the read through: {other:?}"),
    }
    let planted = dir.path().join("outside/planted");
    assert!(matches!(
        files.write(&planted, b"x", WriteMode::CreateNew),
        Err(FileError::PermissionDenied(_))
    ));
    assert!(!planted.exists());
    // Inside the workspace it works, and this thread (the test's) is not confined.
    files
        .write(&ws.join("in.txt"), b"in\n", WriteMode::CreateNew)
        .unwrap();
    assert_eq!(files.read(&ws.join("in.txt"), 1024).unwrap(), b"in\n");
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "DECOY-SECRET-4711\n"
    );
}

#[test]
fn a_low_open_files_limit_moves_the_stderr_pipe_below_it_or_fails_the_start() {
    let (dir, ws) = setup();
    let outputs = dir.path().join("outputs");
    let outputs = outputs.to_str().unwrap();
    let mut serve = Serve::start(
        dir.path(),
        &ws,
        &[
            "--tools",
            "code-execution",
            "--outputs",
            outputs,
            "--open-files",
            "16",
        ],
    );
    writeln!(
        serve.stdin.as_mut().unwrap(),
        "{}",
        json!({"type": "server_tool_use", "id": "f1", "name": "bash_code_execution",
               "input": {"command": "echo o; echo e >&2"}})
    )
    .unwrap();
    let r = serve.read();
    assert_eq!(r["content"]["stdout"], "o\n", "{r}");
    assert_eq!(r["content"]["stderr"], "e\n", "{r}");
    let out = Command::new(bin())
        .args([
            "serve",
            "--tools",
            "code-execution",
            "--open-files",
            "3",
            "--policy",
        ])
        .arg(dir.path().join("policy.toml"))
        .arg("--cwd")
        .arg(&ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("open-files limit of 3"), "{stderr}");
}
