//! The jail conformance suite (issue 23): escape probes run as workspace code inside the real
//! sandbox (`policy-check serve` with the shipped developer policy, `python3 probe.py`), each
//! with a control run of the same probe unconfined showing that the attempt works on this
//! machine, and checked by effect on the host (files' modes, owners, times and extended
//! attributes, the host name, messages at host sockets, protected files' contents, caches),
//! never by names. `tests/data/jail/probe.py` holds the probes; every probe is listed in
//! [`PROBES`], and the test fails if the control cannot show one escaping.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::common::serve::Serve;

/// Every probe of `probe.py`.
const PROBES: &[&str] = &[
    "unix_socket_in_workspace",
    "unix_socket_outside",
    "abstract_socket",
    "tcp_to_host",
    "host_interfaces",
    "tiocsti",
    "controlling_tty",
    "chmod_setuid",
    "create_setuid",
    "chown_workspace_file",
    "file_capability_xattr",
    "outside_file_metadata",
    "read_outside_secret",
    "sethostname",
    "clock_settime",
    "sysv_shm",
    "other_processes",
    "proc_root_of_outside_pid",
    "ptrace_outside_pid",
    "mount_tmpfs",
    "unshare_user",
    "setns_outside",
    "pivot_root",
    "keyring",
    "perf_event_open",
    "bpf_map",
    "userfaultfd",
    "io_uring",
    "module_loading",
    "open_by_handle_at",
    "mknod_device",
    "sys_visible",
    "run_visible",
    "protected_files",
    "protected_replace",
    "cache_write",
    "home_secret",
    "etc_shadow",
    "capabilities",
];

/// Probes whose control may fail to show the escape on some machines, and the control's
/// answer that excuses it: the test's process has no controlling terminal (so `/dev/tty`
/// cannot open outside either), and a kernel built without module support has no
/// `init_module` (ENOSYS) for anyone.
const NO_CONTROL: &[(&str, &str)] = &[
    ("controlling_tty", "No such device or address"),
    ("module_loading", "ENOSYS"),
];

/// The developer policy, with limits small enough to test.
const POLICY: &str = r#"
[policy]
name = "jail-test"
include = ["developer"]

[sandbox.limits]
memory = 268435456
tmp_size = 33554432
processes = 128
"#;

/// Listens at a UNIX socket (pathname or abstract) or TCP port; counts messages.
struct Listener {
    hits: Arc<AtomicUsize>,
}

impl Listener {
    fn unix(path: &str, abstract_ns: bool) -> Listener {
        use std::os::linux::net::SocketAddrExt;
        let l = if abstract_ns {
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(path).unwrap();
            std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
        } else {
            std::os::unix::net::UnixListener::bind(path).unwrap()
        };
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let mut line = String::new();
                let _ = BufReader::new(s).read_line(&mut line);
                if line.contains("PWNED") {
                    h.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Listener { hits }
    }

    fn tcp() -> (Listener, u16) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let mut line = String::new();
                let _ = BufReader::new(s).read_line(&mut line);
                if line.contains("PWNED") {
                    h.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        (Listener { hits }, port)
    }

    fn take(&self) -> usize {
        std::thread::sleep(Duration::from_millis(100));
        self.hits.swap(0, Ordering::SeqCst)
    }
}

/// One file's mode, owner, group, modification time, extended attributes and contents.
type FileState = (u32, u32, u32, i64, Vec<String>, Vec<u8>);

/// What the host looks like where the probes aim: compared before and after the jailed run.
#[derive(Debug, PartialEq, Eq)]
struct HostState {
    files: BTreeMap<String, FileState>,
    hostname: String,
    ws_entries: Vec<String>,
    cache_entries: Vec<String>,
}

fn xattrs(p: &Path) -> Vec<String> {
    let out = Command::new("getfattr")
        .args(["-d", "-m", "-", "--absolute-names"])
        .arg(p)
        .output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(str::to_string)
            .collect(),
        Err(_) => {
            // No getfattr: at least the one the probe writes.
            let o = Command::new("python3")
                .args([
                    "-c",
                    "import os,sys\ntry: print(os.getxattr(sys.argv[1],'security.capability'))\nexcept OSError: pass",
                ])
                .arg(p)
                .output()
                .unwrap();
            vec![String::from_utf8_lossy(&o.stdout).into_owned()]
        }
    }
}

fn listing(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn host_state(watched: &[PathBuf], ws: &Path, cache: &Path) -> HostState {
    let mut files = BTreeMap::new();
    for p in watched {
        let m = std::fs::symlink_metadata(p).unwrap();
        let content = if m.is_file() {
            std::fs::read(p).unwrap()
        } else {
            Vec::new()
        };
        files.insert(
            p.display().to_string(),
            (m.mode(), m.uid(), m.gid(), m.mtime(), xattrs(p), content),
        );
    }
    HostState {
        files,
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        ws_entries: listing(ws),
        cache_entries: listing(cache),
    }
}

/// `name -> (escaped, detail)` from the probe's output.
fn results(out: &str) -> BTreeMap<String, (bool, String)> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let name = it.next()?.to_string();
            let escaped = match it.next()? {
                "escaped" => true,
                "blocked" => false,
                _ => return None,
            };
            Some((name, (escaped, it.next().unwrap_or("").to_string())))
        })
        .collect()
}

struct Marker(Child);

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shm_segment(key: i32) -> Option<String> {
    let o = Command::new("ipcmk")
        .args(["-M", "4096", "-p", "0600"])
        .env("IPCMK_KEY", key.to_string())
        .output()
        .ok()?;
    // ipcmk cannot choose the key: find the new segment's key with ipcs instead.
    let id = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .last()?
        .to_string();
    Some(id)
}

fn shm_key(id: &str) -> Option<i32> {
    let o = Command::new("ipcs").args(["-m"]).output().ok()?;
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(1) == Some(&id) {
            return i32::from_str_radix(f[0].trim_start_matches("0x"), 16)
                .ok()
                .or_else(|| {
                    u32::from_str_radix(f[0].trim_start_matches("0x"), 16)
                        .ok()
                        .map(|k| k as i32)
                });
        }
    }
    None
}

#[test]
fn every_escape_fails_in_the_jail_and_works_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = root.join("ws");
    let outside = root.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("policy.toml"), POLICY).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jail/probe.py"),
        ws.join("probe.py"),
    )
    .unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    git(&["init", "-q", "."]);
    std::fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let victim = ws.join("victim");
    std::fs::write(&victim, "victim\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let outside_file = outside.join("secret");
    std::fs::write(&outside_file, "DECOY-OUTSIDE-4711\n").unwrap();
    std::fs::set_permissions(&outside_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let protected: Vec<PathBuf> = [
        ".git/hooks/pre-commit",
        ".git/config",
        ".claude/settings.json",
        ".vscode/tasks.json",
        ".cargo/config.toml",
        ".npmrc",
        "shellgate.toml",
    ]
    .iter()
    .map(|p| {
        let p = ws.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        if !p.exists() {
            std::fs::write(&p, "# original\n").unwrap();
        }
        p
    })
    .collect();
    let cache = home.join(".cache");
    std::fs::create_dir_all(&cache).unwrap();
    let home_secret = home.join(".ssh/shellgate-jail-decoy");
    std::fs::create_dir_all(home_secret.parent().unwrap()).unwrap();
    std::fs::write(&home_secret, "DECOY-SSH-4711\n").unwrap();
    struct RemoveOnDrop(PathBuf);
    impl Drop for RemoveOnDrop {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _cleanup = RemoveOnDrop(home_secret.clone());
    let _cleanup_cache = RemoveOnDrop(cache.join("shellgate-probe"));

    let tag = format!("{:x}", std::process::id());
    let ws_socket = ws.join("host.sock");
    let outside_socket = outside.join("agent.sock");
    let abstract_name = format!("shellgate-jail-{tag}");
    let l_ws = Listener::unix(ws_socket.to_str().unwrap(), false);
    let l_out = Listener::unix(outside_socket.to_str().unwrap(), false);
    let l_abs = Listener::unix(&abstract_name, true);
    let (l_tcp, port) = Listener::tcp();
    let marker = format!("shellgate-marker-{tag}");
    let marker_proc = Marker(
        Command::new("bash")
            .args(["-c", &format!("exec -a {marker} sleep 600")])
            .spawn()
            .unwrap(),
    );
    let shm_id = shm_segment(0).expect("ipcmk makes a SysV shared memory segment");
    let shm = shm_key(&shm_id).expect("the segment's key");
    struct RemoveShm(String);
    impl Drop for RemoveShm {
        fn drop(&mut self) {
            let _ = Command::new("ipcrm").args(["-m", &self.0]).status();
        }
    }
    let _shm = RemoveShm(shm_id);
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let scratch = root.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let config = |host: &str| {
        json!({
            "ws_socket": ws_socket, "outside_socket": outside_socket, "abstract": abstract_name,
            "tcp_port": port, "ws_victim": victim, "outside_file": outside_file,
            "hostname": host, "shm_key": shm, "marker": marker,
            "marker_pid": marker_proc.0.id(), "scratch": scratch,
            "protected": protected, "cache_dir": cache, "home_secret": home_secret,
        })
    };
    // The jail's config asks for a new host name; the control's keeps the current one (it
    // proves the permission without changing the machine).
    std::fs::write(ws.join("jail.json"), config("pwned-by-probe").to_string()).unwrap();
    std::fs::write(root.join("control.json"), config(&hostname).to_string()).unwrap();

    let mut watched = vec![victim.clone(), outside_file.clone(), ws.join(".git/hooks")];
    watched.extend(protected.iter().cloned());
    let before = host_state(&watched, &ws, &cache);

    // The jail.
    let mut s = Serve::start(root, &ws, &["--timeout", "60"]);
    let a = s.call_bash("python3 probe.py jail.json");
    let out = a["content"].as_str().unwrap_or_default().to_string();
    let jailed = results(&out);
    let hits = (l_ws.take(), l_out.take(), l_abs.take(), l_tcp.take());
    drop(s);
    // The session is gone (and with it the placeholders mounted over missing protected names,
    // which are empty mount points in the workspace while it runs).
    let until = std::time::Instant::now() + Duration::from_secs(3);
    let mut after = host_state(&watched, &ws, &cache);
    while after != before && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        after = host_state(&watched, &ws, &cache);
    }

    // The control: the same probes, unconfined, as this test's user.
    let control_out = Command::new("python3")
        .arg(ws.join("probe.py"))
        .arg(root.join("control.json"))
        .current_dir(&ws)
        .output()
        .unwrap();
    let control_text = String::from_utf8_lossy(&control_out.stdout).into_owned();
    let control = results(&control_text);
    let control_hits = (l_ws.take(), l_out.take(), l_abs.take(), l_tcp.take());

    let mut report = String::new();
    for p in PROBES {
        let j = jailed.get(*p);
        let c = control.get(*p);
        report.push_str(&format!("{p:28} jail: {j:?}  control: {c:?}\n"));
    }
    eprintln!("{report}");
    for p in PROBES {
        let (escaped, detail) = jailed
            .get(*p)
            .unwrap_or_else(|| panic!("probe {p} did not report in the jail:\n{out}"));
        assert!(!escaped, "{p} escaped the jail ({detail}):\n{report}");
        let (c_escaped, c_detail) = control
            .get(*p)
            .unwrap_or_else(|| panic!("probe {p} did not report in the control:\n{control_text}"));
        let excused = NO_CONTROL
            .iter()
            .any(|(n, why)| n == p && c_detail.contains(why));
        if !excused {
            assert!(
                *c_escaped,
                "{p}: the control could not show the escape ({c_detail}), so the jail's \
                 result proves nothing:\n{report}"
            );
        }
    }
    // By effect: nothing reached a host socket, nothing on the host changed.
    assert_eq!(
        hits,
        (0, 0, 0, 0),
        "messages reached host sockets from the jail"
    );
    assert_eq!(
        control_hits,
        (1, 1, 1, 1),
        "the control reaches every socket"
    );
    assert_eq!(before, after, "the jailed run changed the host");
    assert_eq!(after.hostname.trim(), hostname);
}

/// `git add` and `git commit` inside the jail, with `.git/hooks` and `.git/config` read-only
/// and everything git writes for them writable.
#[test]
fn git_commits_inside_the_jail_and_its_hooks_stay_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let o = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(o.status.success());
    let config_before = std::fs::read(ws.join(".git/config")).unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(
        ws.join("commit.sh"),
        "set -e\nexport GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e\n\
         git add a.txt\ngit commit -qm first\necho two >> a.txt\ngit commit -qam second\n\
         git checkout -q -b topic\ngit log --oneline | wc -l\n\
         (echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null || echo HOOK_REFUSED\n\
         git config core.hooksPath /tmp 2>/dev/null || echo CONFIG_REFUSED\n",
    )
    .unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "30"]);
    let a = s.call_bash("bash commit.sh");
    let out = a["content"].as_str().unwrap_or_default();
    assert!(out.starts_with("2\n"), "{a}");
    assert!(
        out.contains("HOOK_REFUSED") && out.contains("CONFIG_REFUSED"),
        "{a}"
    );
    drop(s);
    let log = Command::new("git")
        .args(["log", "--format=%s", "topic"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "second\nfirst\n");
    assert!(!ws.join(".git/hooks/post-commit").exists());
    assert_eq!(
        std::fs::read(ws.join(".git/config")).unwrap(),
        config_before
    );
}

/// The developer policy's sandboxed tools keep working in the jail: python3, make, cc, a
/// workspace binary, an offline cargo build of a tiny crate, node.
#[test]
fn developer_tools_work_in_the_jail() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("tiny/src")).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    std::fs::write(
        ws.join("tiny/Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("tiny/src/main.rs"),
        "fn main() { println!(\"hi from rust\"); }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("hello.c"),
        "#include <stdio.h>\nint main(void){puts(\"hi from c\");return 0;}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("Makefile"),
        "hello: hello.c\n\tcc -o hello hello.c\n",
    )
    .unwrap();
    std::fs::write(ws.join("p.py"), "import sys, tempfile\nwith tempfile.TemporaryFile() as f: f.write(b'x')\nprint('hi from python', sys.version_info[0])\n").unwrap();
    std::fs::write(ws.join("n.js"), "console.log('hi from node')\n").unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "120"]);
    for (cmd, want) in [
        ("python3 p.py", "hi from python 3"),
        ("make", "cc -o hello hello.c"),
        ("./hello", "hi from c"),
        (
            "cargo build --offline --manifest-path tiny/Cargo.toml",
            "Finished",
        ),
        ("./tiny/target/debug/tiny", "hi from rust"),
        ("node n.js", "hi from node"),
    ] {
        if cmd.starts_with("node") && Command::new("node").arg("--version").output().is_err() {
            continue;
        }
        let a = s.call_bash(cmd);
        let out = a["content"].as_str().unwrap_or_default();
        assert!(out.contains(want), "{cmd}: {a}");
    }
}

/// A fork bomb is bounded by the session cgroup's pids.max, and the end of the call kills it
/// all: the next call's output is only its own.
#[test]
fn a_fork_bomb_ends_with_its_call_and_the_next_call_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    std::fs::write(
        ws.join("bomb.sh"),
        "b() { echo fork; b | b & }; b; sleep 2\n",
    )
    .unwrap();
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "10"]);
    let _ = s.call_bash("bash bomb.sh");
    for _ in 0..3 {
        let a = s.call_bash("echo only-this; sleep 0.3; echo end");
        assert_eq!(a["content"], "only-this\nend\n", "{a}");
    }
}

/// Memory is bounded for the whole session (256 MiB here): a script touching 1 GiB is killed,
/// and the session answers the next call.
#[test]
fn memory_and_tmp_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    std::fs::write(
        ws.join("mem.py"),
        "b = bytearray(1 << 30)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('TOUCHED 1 GiB')\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("tmp.py"),
        "import os\ntry:\n    with open('/tmp/big', 'wb') as f:\n        for _ in range(64): f.write(b'x' * (1 << 20))\n    print('WROTE 64 MiB')\nexcept OSError as e:\n    print('TMP_FULL', e.errno)\n",
    )
    .unwrap();
    // Control: unconfined, the script touches its gigabyte.
    let c = Command::new("python3")
        .arg(ws.join("mem.py"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&c.stdout).contains("TOUCHED"));
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "60"]);
    let a = s.call_bash("python3 mem.py");
    assert!(
        !a["content"]
            .as_str()
            .unwrap_or_default()
            .contains("TOUCHED"),
        "{a}"
    );
    let a = s.call_bash("python3 tmp.py");
    assert!(
        a["content"]
            .as_str()
            .unwrap_or_default()
            .contains("TMP_FULL 28"),
        "{a}"
    );
    let a = s.call_bash("echo alive");
    assert_eq!(a["content"], "alive\n", "{a}");
}

/// Code replaces its `$OUTPUT_DIR` with a symlink to a decoy `~/.ssh`: nothing outside
/// moves, nothing of it is returned.
#[test]
fn a_swapped_output_dir_moves_nothing_outside() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let decoy = dir.path().join("decoy-ssh");
    std::fs::create_dir_all(&decoy).unwrap();
    std::fs::write(decoy.join("id_rsa"), "DECOY-KEY-4711\n").unwrap();
    let outputs = dir.path().join("outputs");
    // The swap itself needs a writable parent of $OUTPUT_DIR: the calls directory is one of
    // the jail's writable roots.
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    std::fs::write(
        ws.join("swap.sh"),
        format!(
            "rm -rf \"$OUTPUT_DIR\" && ln -s {} \"$OUTPUT_DIR\" && echo SWAPPED\n",
            decoy.display()
        ),
    )
    .unwrap();
    let mut s = Serve::start(
        dir.path(),
        &ws,
        &[
            "--tools",
            "code-execution",
            "--outputs",
            outputs.to_str().unwrap(),
        ],
    );
    s.send(
        &json!({"type": "server_tool_use", "id": "c1", "name": "bash_code_execution",
                   "input": {"command": "bash swap.sh"}}),
    );
    let r = s.read();
    // The capture refuses the replaced directory (an error result), or finds nothing.
    assert!(!r.to_string().contains("DECOY-KEY"), "{r}");
    assert!(!r.to_string().contains("id_rsa"), "{r}");
    assert_eq!(
        std::fs::read_to_string(decoy.join("id_rsa")).unwrap(),
        "DECOY-KEY-4711\n",
        "the decoy key was moved: {r}"
    );
    let mut found = String::new();
    for e in walk(&outputs) {
        if let Ok(mut f) = std::fs::File::open(&e) {
            let _ = f.read_to_string(&mut found);
        }
    }
    assert!(
        !found.contains("DECOY-KEY"),
        "a copy of the key is in the outputs"
    );
    // Control: the same swap, collected by a naive copy-out that follows names, takes the key
    // (what serve did before).
    let naive: Vec<_> = std::fs::read_dir(&decoy).unwrap().flatten().collect();
    assert_eq!(naive.len(), 1);
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(r) = std::fs::read_dir(d) {
        for e in r.flatten() {
            let p = e.path();
            if std::fs::symlink_metadata(&p)
                .map(|m| m.is_dir())
                .unwrap_or(false)
            {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Without bubblewrap, serve refuses to start a policy that needs the jail, naming the
/// reason and how to install it.
#[test]
fn without_bubblewrap_serve_refuses_with_an_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_policy-check"))
        .args(["run", "--policy"])
        .arg(dir.path().join("policy.toml"))
        .arg("--cwd")
        .arg(&ws)
        .args(["--", "echo hi"])
        .env("SHELLGATE_BWRAP", dir.path().join("no-bwrap"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sandbox-unavailable") && err.contains("apt-get install bubblewrap"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("hi"));
}

/// `policy-check sandbox --print-plan` shows the world the developer policy builds.
#[test]
fn the_plan_is_printable() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "").unwrap();
    std::fs::write(ws.join(".npmrc"), "").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_policy-check"))
        .args([
            "sandbox",
            "--policy",
            "developer",
            "--print-plan",
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    for want in [
        "--unshare-all",
        "--cap-drop",
        "--new-session",
        "--die-with-parent",
        "masked      /etc/shadow",
        "tmpfs       /tmp",
        &format!("writable    {}", ws.display()),
        &format!("protected   {}/.git/hooks", ws.display()),
        &format!("protected   {}/.git/config", ws.display()),
        &format!("protected   {}/.npmrc", ws.display()),
        "everything else is absent",
    ] {
        assert!(out.contains(want), "{want} not in:\n{out}");
    }
    assert!(!out.contains("/run"), "{out}");
}

/// Protected names inside `.git` that do not exist yet cannot be created in the jail either
/// (the read-only `hooks/`, or an empty read-only placeholder), and nothing of them is left
/// in the workspace once the session ends. Missing names in the work tree get no placeholder
/// (git would see them: see `sandbox::protect`), which the README states.
#[test]
fn missing_protected_files_cannot_be_created_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let g = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(g.status.success());
    let names = [".git/hooks/pre-push", ".git/hooks/post-checkout"];
    let script: String = names
        .iter()
        .map(|n| {
            format!(
                "mkdir -p \"$(dirname {n})\" 2>/dev/null; (echo PWNED > {n}) 2>/dev/null && echo CREATED {n}\n"
            )
        })
        .collect();
    std::fs::write(ws.join("create.sh"), &script).unwrap();
    let before = listing(&ws);
    // Control: unconfined, every one is created.
    let c = Command::new("bash")
        .arg("create.sh")
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&c.stdout)
            .matches("CREATED")
            .count(),
        names.len()
    );
    for n in names {
        std::fs::remove_file(ws.join(n)).unwrap();
    }
    assert_eq!(listing(&ws), before);
    let mut s = Serve::start(dir.path(), &ws, &["--timeout", "30"]);
    let a = s.call_bash("bash create.sh; echo done");
    assert_eq!(a["content"], "done\n", "{a}");
    drop(s);
    // The launcher removes the placeholders once the jail is gone.
    let until = std::time::Instant::now() + Duration::from_secs(3);
    while listing(&ws) != before && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(listing(&ws), before);
}

/// The audit log is opened without following a symlink: a session that can write where the
/// log lives cannot point it at another file.
#[test]
fn the_audit_log_does_not_follow_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("bashrc");
    std::fs::write(&target, "original\n").unwrap();
    let log = dir.path().join("audit.jsonl");
    std::os::unix::fs::symlink(&target, &log).unwrap();
    assert!(shellgate::middleware::AuditLog::open(&log).is_err());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
    // Control: a plain file opens.
    let plain = dir.path().join("plain.jsonl");
    assert!(shellgate::middleware::AuditLog::open(&plain).is_ok());
}
