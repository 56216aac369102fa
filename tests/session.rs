//! The reference executor, end to end through a real bash process (no policy involved).
//! Every timeout here is at most 2 seconds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shellgate::middleware::{
    BashSession, ExecError, Executor, Output, ResourceLimits, SessionConfig, StreamRedaction,
};

fn session(dir: &Path) -> BashSession {
    BashSession::new(SessionConfig::new(dir).timeout(Duration::from_secs(2))).expect("bash starts")
}

#[track_caller]
fn ok(s: &mut BashSession, cmd: &str) -> Output {
    match s.run(cmd) {
        Ok(out) => out,
        Err(e) => panic!("{cmd:?} failed: {e}"),
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.output).into_owned()
}

/// Whether a process is still alive (a zombie waiting for its reaper is dead).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            !matches!(state, Some(Some('Z' | 'X')))
        }
    }
}

#[track_caller]
fn assert_dies(pid: u32) {
    let until = Instant::now() + Duration::from_secs(2);
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "process {pid} survived");
}

#[test]
fn state_persists_across_calls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let mut s = session(dir.path());
    assert_eq!(s.working_dir(), dir.path());
    ok(&mut s, "cd src");
    assert_eq!(s.working_dir(), dir.path().join("src"));
    assert_eq!(s.cwd(), Some(dir.path().join("src")));
    ok(&mut s, "x=42; declare -a arr=(a b c)");
    ok(&mut s, "echo data > f.txt");
    let out = ok(&mut s, "echo \"$x ${arr[2]}\"; pwd; cat f.txt");
    assert_eq!(
        text(&out),
        format!("42 c\n{}\ndata\n", dir.path().join("src").display())
    );
    assert_eq!(out.status, Some(0));
    assert!(dir.path().join("src/f.txt").exists());
}

#[test]
fn stderr_is_interleaved_with_stdout_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let out = ok(
        &mut s,
        "echo out1; echo err1 >&2; echo out2; ls /nonexistent-shellgate",
    );
    let t = text(&out);
    assert!(t.starts_with("out1\nerr1\nout2\nls: "), "{t}");
    assert!(t.contains("No such file or directory"), "{t}");
    assert_eq!(out.status, Some(2));
}

#[test]
fn exit_status_and_output_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let out = ok(&mut s, "false");
    assert_eq!((out.output.as_slice(), out.status), (&b""[..], Some(1)));
    let out = ok(&mut s, "printf abc");
    assert_eq!((text(&out).as_str(), out.status), ("abc", Some(0)));
    let out = ok(&mut s, "nonexistent-program-shellgate");
    assert_eq!(out.status, Some(127));
    assert!(text(&out).contains("command not found"), "{}", text(&out));
}

#[test]
fn awkward_commands_do_not_desync_the_sentinel() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let cases: &[(&str, &str)] = &[
        (
            r#"echo 'single "double" $HOME \n'"#,
            "single \"double\" $HOME \\n\n",
        ),
        (r#"echo "a\\b \$x `echo tick`""#, "a\\b $x tick\n"),
        ("echo one\necho two\n\n", "one\ntwo\n"),
        ("cat <<EOF\nbody $((1+2))\nEOF", "body 3\n"),
        ("cat <<'SG_EOF_x'\nliteral $x\nSG_EOF_x", "literal $x\n"),
        (
            "cat <<-\tEOF\n\tindented\n\tEOF\necho after",
            "indented\nafter\n",
        ),
        ("echo trailing \\", "trailing\n"),
        (
            "echo 'it''s'; echo \"$(printf '%s' \"nested 'q'\")\"",
            "its\nnested 'q'\n",
        ),
        (
            "printf '%s\\n' 'SG_END_ fake 0 / SG_END_'",
            "SG_END_ fake 0 / SG_END_\n",
        ),
    ];
    for (cmd, want) in cases {
        let out = ok(&mut s, cmd);
        assert_eq!(text(&out), *want, "command {cmd:?}");
        assert_eq!(out.status, Some(0), "command {cmd:?}");
    }
    // Unbalanced input is a syntax error of that call only; the session carries on.
    for bad in [
        "echo 'unterminated",
        "echo \"unterminated",
        "echo $(",
        "if true; then",
        "cat <<EOF\nno end",
    ] {
        let out = ok(&mut s, bad);
        if !bad.starts_with("cat") {
            assert_eq!(out.status, Some(2), "{bad:?}: {}", text(&out));
        }
        let next = ok(&mut s, "echo still here");
        assert_eq!(text(&next), "still here\n", "after {bad:?}");
    }
}

#[test]
fn stdin_is_at_eof_so_readers_do_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let started = Instant::now();
    let out = ok(&mut s, "cat; read x; echo \"got:$x\"");
    assert_eq!(text(&out), "got:\n");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn a_timeout_kills_the_process_group_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let mut s =
        BashSession::new(SessionConfig::new(dir.path()).timeout(Duration::from_secs(1))).unwrap();
    let old_pid = s.pid().unwrap();
    let out = ok(&mut s, "cd sub; marker=1; sleep 1000 & echo $!");
    let bg: u32 = text(&out).trim().parse().unwrap();
    assert!(alive(bg));
    let started = Instant::now();
    let err = s.run("echo before; sleep 30").unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(1900),
        "took {:?}",
        started.elapsed()
    );
    match &err {
        ExecError::Timeout {
            after,
            output,
            restarted,
            ..
        } => {
            assert_eq!(*after, Duration::from_secs(1));
            assert_eq!(output, b"before\n");
            assert!(*restarted);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("Error: command timed out after 1 second"),
        "{err}"
    );
    assert_dies(bg);
    assert_dies(old_pid);
    // A fresh session: back in the start directory, state gone, working.
    assert_ne!(s.pid(), Some(old_pid));
    assert_eq!(s.working_dir(), dir.path());
    let out = ok(&mut s, "echo \"${marker:-unset}\"; pwd");
    assert_eq!(text(&out), format!("unset\n{}\n", dir.path().display()));
}

/// This process's peak resident memory (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn endless_output_is_bounded_while_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    let max = 64 * 1024;
    let mut s = BashSession::new(
        SessionConfig::new(dir.path())
            .timeout(Duration::from_secs(1))
            .max_output(max)
            // Off: unredacted, `yes` is fast enough (100+ MB/s even in a debug build) that
            // keeping it all would show in the peak memory.
            .redaction(StreamRedaction::Off),
    )
    .unwrap();
    let before = peak_rss_kib();
    let err = s.run("yes").unwrap_err();
    // `yes` writes hundreds of megabytes a second; what is kept stays small.
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 64 * 1024, "peak memory grew by {grown} KiB");
    let ExecError::Timeout { output, .. } = &err else {
        panic!("expected a timeout, got {err:?}")
    };
    assert!(output.len() <= max + 256, "kept {} bytes", output.len());
    let t = String::from_utf8_lossy(output);
    assert!(t.starts_with("y\ny\n"));
    assert!(
        t.contains("the output was cut while it streamed"),
        "no marker"
    );
    assert!(t.ends_with("y\n"));

    // Finite but large: the count of discarded bytes is exact and the session stays in sync.
    let out = ok(
        &mut s,
        "head -c 1000000 /dev/zero | tr '\\0' a; echo; echo END",
    );
    assert!(
        out.output.len() <= max + 256,
        "kept {} bytes",
        out.output.len()
    );
    let kept_payload: u64 = text(&out)
        .lines()
        .filter(|l| !l.contains("cut while it streamed"))
        .map(|l| l.matches('a').count() as u64)
        .sum();
    assert_eq!(kept_payload + out.dropped, 1_000_000);
    assert!(text(&out).ends_with("\nEND\n"));
    let out = ok(&mut s, "echo in sync");
    assert_eq!(text(&out), "in sync\n");
}

#[test]
fn restart_resets_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    ok(&mut s, "cd /; x=1; sleep 1000 & echo $! > /dev/null");
    let old = s.pid().unwrap();
    s.restart().unwrap();
    assert_dies(old);
    assert_eq!(s.working_dir(), dir.path());
    let out = ok(&mut s, "echo \"${x:-unset}\"; pwd");
    assert_eq!(text(&out), format!("unset\n{}\n", dir.path().display()));
}

#[test]
fn the_shell_exiting_is_reported_and_a_new_session_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let err = s.run("echo bye; exit 3").unwrap_err();
    match &err {
        ExecError::SessionExited { status, output, .. } => {
            assert_eq!(*status, Some(3));
            assert_eq!(output, b"bye\n");
        }
        other => panic!("expected SessionExited, got {other:?}"),
    }
    assert_eq!(text(&ok(&mut s, "echo back")), "back\n");
    // `set -e` in the session: the next failure ends the shell, never the sentinel.
    ok(&mut s, "set -e");
    assert!(matches!(
        s.run("false"),
        Err(ExecError::SessionExited {
            status: Some(1),
            ..
        })
    ));
    assert_eq!(text(&ok(&mut s, "echo back again")), "back again\n");
}

#[test]
fn the_environment_is_controlled() {
    // Set in the test process (which the session must not inherit) without `unsafe`: run
    // this check in a child `env` with a secret variable.
    let dir = tempfile::tempdir().unwrap();
    let mut s = BashSession::new(
        SessionConfig::new(dir.path())
            .timeout(Duration::from_secs(2))
            .env("SHELLGATE_EXTRA", "yes")
            .bash(PathBuf::from("/usr/bin/env")),
    );
    // `bash` replaced by `env` cannot start a session: a clear error, not a hang.
    assert!(matches!(s, Err(ExecError::Start(_))), "{s:?}");
    s = BashSession::new(
        SessionConfig::new(dir.path())
            .timeout(Duration::from_secs(2))
            .env("SHELLGATE_EXTRA", "yes"),
    );
    let mut s = s.unwrap();
    let out = ok(&mut s, "env | cut -d= -f1 | sort | tr '\\n' ' '");
    let names: Vec<String> = text(&out).split_whitespace().map(str::to_string).collect();
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TERM",
        "USER",
        "PWD",
        "SHLVL",
        "OLDPWD",
        "_",
        "SHELLGATE_EXTRA",
        // git pinned to explicit bare repositories (issue 22)
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "GIT_CEILING_DIRECTORIES",
    ];
    for n in &names {
        assert!(
            allowed.contains(&n.as_str()),
            "unexpected variable {n} in {names:?}"
        );
    }
    assert!(names.contains(&"SHELLGATE_EXTRA".to_string()));
    assert!(names.contains(&"PATH".to_string()));
    // git never uses a bare repository it was not pointed at.
    let out = ok(&mut s, "git config --get safe.bareRepository || echo none");
    if !text(&out).contains("git: command not found") {
        assert_eq!(text(&out).trim(), "explicit");
    }
}

#[test]
fn parent_secrets_are_not_inherited() {
    // Re-run this test binary's own check in a child process that has a secret in its
    // environment; the child asserts the session cannot see it.
    if std::env::var_os("SHELLGATE_TEST_CHILD").is_some() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path());
        let out = ok(&mut s, "echo \"${AWS_SECRET_ACCESS_KEY:-absent}\"");
        assert_eq!(text(&out), "absent\n");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "session::parent_secrets_are_not_inherited",
            "--test-threads=1",
        ])
        .env("SHELLGATE_TEST_CHILD", "1")
        .env(
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    // The filter must name this test: one that matches nothing passes vacuously.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test: {stdout}"
    );
}

#[test]
fn resource_limits_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ResourceLimits {
        cpu_seconds: Some(5),
        memory_bytes: Some(1 << 30),
        file_size_bytes: Some(4096),
        processes: Some(4096),
    };
    let mut s = BashSession::new(
        SessionConfig::new(dir.path())
            .timeout(Duration::from_secs(2))
            .limits(limits),
    )
    .unwrap();
    let out = ok(
        &mut s,
        "ulimit -t; ulimit -v; ulimit -f; ulimit -u; ulimit -H -t",
    );
    assert_eq!(text(&out), "5\n1048576\n4\n4096\n5\n");
    // Writing past the file size limit fails and leaves at most the limit on disk.
    let out = ok(&mut s, "head -c 100000 /dev/zero > big");
    assert_ne!(out.status, Some(0));
    assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 4096);
    // The hard limit cannot be raised from inside.
    let out = ok(&mut s, "ulimit -t 100");
    assert_ne!(out.status, Some(0));
}

#[test]
fn dropping_the_session_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let out = ok(&mut s, "sleep 1000 & echo $!");
    let bg: u32 = text(&out).trim().parse().unwrap();
    let shell = s.pid().unwrap();
    assert!(alive(bg));
    drop(s);
    assert_dies(bg);
    assert_dies(shell);
}

#[test]
fn background_output_does_not_desync() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let out = ok(&mut s, "(sleep 0.2; echo late) & echo now");
    assert_eq!(text(&out), "now\n");
    std::thread::sleep(Duration::from_millis(400));
    let out = ok(&mut s, "echo next; false");
    assert_eq!(out.status, Some(1));
    // What the job printed between the calls is discarded, not shown as this call's output.
    assert_eq!(text(&out), "next\n");
}

#[test]
fn a_nul_byte_is_refused_before_the_shell_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    assert!(matches!(
        s.run("echo a\0b"),
        Err(ExecError::InvalidCommand(_))
    ));
    assert_eq!(text(&ok(&mut s, "echo fine")), "fine\n");
}

#[test]
fn a_symlinked_start_directory_keeps_its_logical_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    let s = session(&dir.path().join("link"));
    assert_eq!(s.working_dir(), dir.path().join("link"));
}

#[test]
fn session_state_cannot_subvert_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let mut s =
        BashSession::new(SessionConfig::new(dir.path()).timeout(Duration::from_secs(1))).unwrap();
    // Aliases for the wrapper's own words, shell options, traps: the sentinel still arrives
    // and the status is the command's.
    for setup in [
        "shopt -s expand_aliases; alias builtin=echo eval=echo printf=echo read=echo unset=echo",
        "set -u",
        "set -o pipefail -o noclobber",
        "IFS=x",
        "readonly __shellgate_cmd=stale SG_CMD_=stale",
        "exec 0<&-",
    ] {
        ok(&mut s, setup);
        let out = ok(&mut s, "echo fine; false");
        assert_eq!(
            (text(&out).as_str(), out.status),
            ("fine\n", Some(1)),
            "after {setup:?}"
        );
    }
    // Tracing adds its own lines but keeps the session in sync.
    ok(&mut s, "set -x");
    let out = ok(&mut s, "echo traced");
    assert!(text(&out).contains("traced\n"), "{}", text(&out));
    assert_eq!(out.status, Some(0));
    ok(&mut s, "set +x; trap 'echo in-trap' DEBUG");
    let out = ok(&mut s, "echo after-trap");
    assert!(text(&out).contains("after-trap\n"), "{}", text(&out));
    assert_eq!(out.status, Some(0));
    // Sending stdout away loses the sentinel: the call times out and the session restarts.
    assert!(matches!(
        s.run("exec >/dev/null"),
        Err(ExecError::Timeout {
            restarted: true,
            ..
        })
    ));
    assert_eq!(text(&ok(&mut s, "echo restored")), "restored\n");
}

/// A fake PEM private key with `lines` body lines of base64.
fn fake_key(lines: usize) -> (String, Vec<String>) {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let body: Vec<String> = (0..lines)
        .map(|_| {
            (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    B64[(x % 64) as usize] as char
                })
                .collect()
        })
        .collect();
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n",
        body.join("\n")
    );
    (pem, body)
}

#[test]
fn a_secret_cut_by_the_output_cap_is_redacted_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (pem, body) = fake_key(150); // ~10 KB, longer than the tail kept
    std::fs::write(dir.path().join("key.pem"), pem).unwrap();
    let cmd = "for i in $(seq 40); do echo filler line $i; done; cat key.pem; echo done";
    let config = SessionConfig::new(dir.path())
        .timeout(Duration::from_secs(2))
        .max_output(3 * 1024);

    // Without stream redaction, the kept tail holds key lines whose BEGIN line was discarded.
    let mut raw = BashSession::new(config.clone().redaction(StreamRedaction::Off)).unwrap();
    let out = ok(&mut raw, cmd);
    assert!(
        body.iter().any(|l| text(&out).contains(l.as_str())),
        "the test does not cut the key"
    );

    // With it (the default), the whole block is gone before the cap cuts anything.
    let mut s = BashSession::new(config).unwrap();
    let out = ok(&mut s, cmd);
    let t = text(&out);
    assert!(t.contains("[REDACTED:"), "{t}");
    assert!(t.ends_with("done\n"), "{t}");
    for line in &body {
        assert!(!t.contains(line.as_str()), "key material leaked: {line}");
    }
}

#[test]
fn the_launcher_confines_and_contains_the_shell() {
    use shellgate::middleware::sandbox::SandboxSpec;
    use shellgate::middleware::Launcher;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let spec = SandboxSpec {
        landlock: true,
        read: vec![ws.clone()],
        write: vec![ws.clone()],
        ..SandboxSpec::default()
    };
    let config = SessionConfig::new(&ws)
        .launcher(Launcher {
            program: env!("CARGO_BIN_EXE_policy-check").into(),
            spec,
        })
        .keep_background(false);
    let mut s = BashSession::new(config).unwrap();
    // The shell is the init of its own PID namespace, below the launcher.
    let out = ok(&mut s, "echo $$; setsid sleep 600 & sleep 0.2");
    assert_eq!(text(&out), "1\n");
    let shell = s.shell_pid().unwrap();
    assert_ne!(Some(shell), s.pid());
    // The call is over: what it started, even in another session, is gone.
    assert!(
        shellgate::middleware::contain::descendants(nix::unistd::Pid::from_raw(shell as i32))
            .is_empty()
    );
    let out = ok(
        &mut s,
        &format!(
            "echo in > f && cat f; echo out > {}/escape; cat /etc/shadow; echo $TMPDIR",
            dir.path().display()
        ),
    );
    let t = text(&out);
    assert!(t.starts_with("in\n"), "{t}");
    assert!(t.contains("Permission denied"), "{t}");
    assert!(!dir.path().join("escape").exists());
    let tmp = PathBuf::from(t.lines().last().unwrap());
    assert!(tmp.is_dir(), "{t}");
    drop(s);
    assert!(!tmp.exists(), "the private TMPDIR outlived the session");
}

// ---------------------------------------------------------------------------------------
// Code execution calls: stderr apart, `$OUTPUT_DIR` set for the call.

#[track_caller]
fn code(s: &mut BashSession, cmd: &str, dir: &Path) -> shellgate::middleware::CodeOutput {
    match s.run_code(cmd, dir) {
        Ok(out) => out,
        Err(e) => panic!("{cmd:?} failed: {e}"),
    }
}

fn both(out: &shellgate::middleware::CodeOutput) -> (String, String, Option<i32>) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status,
    )
}

#[test]
fn code_calls_capture_stderr_apart_with_their_own_output_dir() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out one"); // a space, to be quoted right
    std::fs::create_dir(&out_dir).unwrap();
    let mut s = session(dir.path());
    let out = code(&mut s, "echo o; echo e >&2; printf partial >&2; echo \"$OUTPUT_DIR\"; exit_code=7; (exit $exit_code)", &out_dir);
    assert_eq!(
        both(&out),
        (
            format!("o\n{}\n", out_dir.display()),
            "e\npartial".to_string(),
            Some(7)
        )
    );
    // The bash tool still interleaves, and the variable is the last call's until the next.
    let out = ok(&mut s, "echo a; echo b >&2");
    assert_eq!(text(&out), "a\nb\n");
    // A here-document, a quote or the sentinel's look-alike in the command cannot fake the
    // end lines of either stream.
    let out = code(
        &mut s,
        "echo 'SG_END_x 0 / SG_END_x' >&2; cat <<'EOF'\nbody\nEOF",
        &out_dir,
    );
    assert_eq!(
        both(&out),
        (
            "body\n".to_string(),
            "SG_END_x 0 / SG_END_x\n".to_string(),
            Some(0)
        )
    );
}

#[test]
fn background_stderr_between_code_calls_is_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let out = code(
        &mut s,
        "(echo bg-early >&2; sleep 0.3; echo bg-late >&2) & echo started",
        dir.path(),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    std::thread::sleep(Duration::from_millis(600));
    let out = code(&mut s, "echo next >&2", dir.path());
    assert_eq!(both(&out), (String::new(), "next\n".to_string(), Some(0)));
}

#[test]
fn a_readonly_output_dir_stops_the_call_and_a_closed_stderr_pipe_restarts_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    ok(&mut s, "readonly OUTPUT_DIR=/etc");
    let out = code(&mut s, "echo ran > \"$OUTPUT_DIR/x\"", dir.path());
    assert_eq!(out.status, Some(125));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("OUTPUT_DIR cannot be set"),
        "{out:?}"
    );
    assert!(!Path::new("/etc/x").exists());
    let s_pid = s.pid();
    ok(&mut s, "exec 62>&-");
    let out = code(&mut s, "echo still", dir.path());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the rest of stderr was lost"),
        "{out:?}"
    );
    assert_ne!(s.pid(), s_pid, "the session was restarted");
    let out = code(&mut s, "echo fine; echo err >&2", dir.path());
    assert_eq!(
        both(&out),
        ("fine\n".to_string(), "err\n".to_string(), Some(0))
    );
}

#[test]
fn a_code_call_that_times_out_restarts_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let before = s.pid();
    match s.run_code("echo begun; sleep 10", dir.path()) {
        Err(ExecError::Timeout {
            output, restarted, ..
        }) => {
            assert!(restarted);
            assert_eq!(String::from_utf8_lossy(&output), "begun\n");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_ne!(s.pid(), before);
    assert_eq!(both(&code(&mut s, "echo ok", dir.path())).0, "ok\n");
}

/// The wrapper functions a call line names (defined once per session) cannot be redefined,
/// unset or shadowed by an alias; and a payload variable made read-only ends the shell rather
/// than let the next command's text run as script: the next call is refused as a session
/// exit and the one after runs in a new session.
#[test]
fn the_wrapper_functions_cannot_be_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut s =
        BashSession::new(SessionConfig::new(dir.path()).timeout(Duration::from_secs(2))).unwrap();
    let _ = s.run(
        r#"for f in $(compgen -A function _sg); do eval "$f() { echo HIJACKED; }"; unset -f "$f"; done; shopt -s expand_aliases; for f in $(compgen -A function _sg); do alias "$f=echo HIJACKED"; done"#,
    );
    let out = ok(&mut s, "echo fine; false");
    assert_eq!((text(&out).as_str(), out.status), ("fine\n", Some(1)));
    let _ = s.run(r#"for v in $(compgen -v _sgc); do readonly "$v"; done"#);
    match s.run("echo SHOULD-NOT-RUN") {
        Err(ExecError::SessionExited { output, .. }) => {
            let output = String::from_utf8_lossy(&output);
            assert!(!output.contains("SHOULD-NOT-RUN"), "{output}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(text(&ok(&mut s, "echo restored")), "restored\n");
}
