//! One run of a program under `strace -f`, inside the jail, and what its log says it did.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{OracleError, Scratch};
use crate::sandbox::plan::JailPlan;
use crate::sandbox::SandboxSpec;

/// What a run did that an option table may have to say (the program's own reads inside the
/// workspace and of the system are not effects).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum Effect {
    /// Executed another program (the path).
    Runs(String),
    /// A file call on a decoy outside the workspace (the call and path): a read outside.
    TouchesDecoy(String, String),
    /// A write (create, truncate, rename, remove, chmod, ...) of a path: the call and path.
    Writes(String, String),
    /// A network connection or socket outside the process (the call and address).
    Network(String),
    /// The decoy program ran.
    DecoyProgramRan,
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Effect::Runs(p) => write!(f, "runs {p}"),
            Effect::TouchesDecoy(c, p) => write!(f, "{c} of decoy {p}"),
            Effect::Writes(c, p) => write!(f, "{c} writes {p}"),
            Effect::Network(what) => write!(f, "network: {what}"),
            Effect::DecoyProgramRan => f.write_str("the decoy program ran"),
        }
    }
}

/// The outcome of one run.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// What it did, sorted, without repeats.
    pub effects: Vec<Effect>,
    /// Its exit status (`None`: killed by a signal, or by the time limit).
    pub status: Option<i32>,
    /// Whether the time limit ended it.
    pub timed_out: bool,
}

/// Runs programs in the jail under strace. The jail is bubblewrap's, built by
/// [`JailPlan`] from an empty spec (system directories read-only, `/etc` with its secrets
/// masked, private `/tmp`, `/proc` and `/dev`, no network, no capabilities, its own user, PID,
/// IPC and UTS namespaces), plus the scratch tree writable and the directories of `PATH`
/// read-only: so an option that writes, deletes or connects reaches nothing of the host.
#[derive(Debug)]
pub struct Tracer {
    bwrap: PathBuf,
    jail: Vec<String>,
    path: String,
    /// Seconds a run may last.
    pub limit: Duration,
}

impl Tracer {
    /// Find bubblewrap and strace and check that a jailed, traced `true` runs: anything
    /// missing is an error (the oracle never runs an option outside the jail).
    pub fn new(s: &Scratch) -> Result<Tracer, OracleError> {
        let Some(bwrap) = crate::sandbox::find_bwrap() else {
            return Err(OracleError::Jail(
                "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
                    .into(),
            ));
        };
        if super::which("strace").is_none() {
            return Err(OracleError::NoStrace);
        }
        let spec = SandboxSpec {
            jail: true,
            ..SandboxSpec::default()
        };
        let plan = JailPlan::build(&spec, None, None, false)
            .map_err(|e| OracleError::Jail(e.to_string()))?;
        let mut jail = plan.bwrap_args();
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        for dir in std::env::split_paths(&path) {
            if dir.is_absolute() && dir.is_dir() && !dir.starts_with("/usr") {
                let d = dir.display().to_string();
                jail.extend(["--ro-bind-try".into(), d.clone(), d]);
            }
        }
        for key in ["RUSTUP_HOME"] {
            if let Some(v) = std::env::var_os(key) {
                let d = PathBuf::from(v).display().to_string();
                jail.extend(["--ro-bind-try".into(), d.clone(), d]);
            }
        }
        let root = s.root.display().to_string();
        jail.extend(["--bind".into(), root.clone(), root]);
        let t = Tracer {
            bwrap,
            jail,
            path,
            limit: Duration::from_secs(20),
        };
        let probe = t
            .command(
                &["true".to_string()],
                s,
                Some(&s.root.join("trace/probe.log")),
            )
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| OracleError::Jail(format!("{}: {e}", t.bwrap.display())))?;
        if !probe.status.success() {
            return Err(OracleError::Jail(format!(
                "a jailed `strace true` failed ({}): {}",
                probe.status,
                String::from_utf8_lossy(&probe.stderr).trim()
            )));
        }
        Ok(t)
    }

    /// `bwrap JAIL -- [strace ... -o LOG --] ARGV`, in the workspace, with the oracle's
    /// environment (`$HOME` the scratch home, every editor and pager the decoy program).
    fn command(&self, argv: &[String], s: &Scratch, log: Option<&std::path::Path>) -> Command {
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(&self.jail).arg("--chdir").arg(&s.ws).arg("--");
        if let Some(log) = log {
            cmd.args(["strace", "-f", "-qq", "-y", "-s", "4096"])
                .args(["-e", "trace=%file,%network,fchdir", "-o"])
                .arg(log)
                .arg("--");
        }
        cmd.args(argv)
            .current_dir(&s.ws)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &s.home)
            .env("LANG", "C")
            .env("TERM", "dumb")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("CARGO_NET_OFFLINE", "true")
            .env("CARGO_TARGET_DIR", s.ws.join("target"))
            .env("npm_config_offline", "true")
            .env("npm_config_update_notifier", "false")
            .env("EDITOR", s.prog())
            .env("VISUAL", s.prog())
            .env("GIT_EDITOR", s.prog())
            .env("PAGER", s.prog())
            .env("GIT_PAGER", s.prog())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for key in ["CARGO_HOME", "RUSTUP_HOME"] {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
        cmd
    }

    /// Run `argv` in the jail, untraced, and return its exit status and standard output (at
    /// most 1 MiB; `MANWIDTH` and `COLUMNS` 200, so a man page's option lines stay whole).
    pub fn output(&self, argv: &[String], s: &Scratch) -> Result<(Option<i32>, String), String> {
        s.reset();
        let mut child = self
            .command(argv, s, None)
            .env("MANWIDTH", "200")
            .env("COLUMNS", "200")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("bwrap: {e}"))?;
        let stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(out) = stdout {
                let _ = out.take(1 << 20).read_to_end(&mut buf);
            }
            buf
        });
        let status = self.wait(&mut child)?;
        let buf = reader.join().unwrap_or_default();
        Ok((status, String::from_utf8_lossy(&buf).into_owned()))
    }

    /// Wait for `child` within the time limit (then kill it): its exit status, `None` when
    /// a signal or the limit ended it.
    fn wait(&self, child: &mut std::process::Child) -> Result<Option<i32>, String> {
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(st.code());
            }
            if start.elapsed() > self.limit {
                // bwrap's child dies with it (--die-with-parent inside the jail's init).
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Run `argv` (the fixtures reset first, `a.txt` on stdin) and read what it did.
    pub fn run(&self, argv: &[String], s: &Scratch) -> Result<Run, String> {
        s.reset();
        let log = s.root.join("trace/strace.log");
        let _ = fs::remove_file(&log);
        let stdin = fs::File::open(s.ws.join("a.txt")).map_err(|e| e.to_string())?;
        let mut child = self
            .command(argv, s, Some(&log))
            .stdin(stdin)
            .spawn()
            .map_err(|e| format!("bwrap: {e}"))?;
        let start = Instant::now();
        let mut run = Run {
            status: self.wait(&mut child)?,
            ..Run::default()
        };
        run.timed_out = run.status.is_none() && start.elapsed() > self.limit;
        let mut text = String::new();
        fs::File::open(&log)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(|e| format!("strace log: {e}"))?;
        let program = argv.first().map(String::as_str).unwrap_or("");
        run.effects = effects(program, &text, s);
        if s.decoy_ran() {
            run.effects.push(Effect::DecoyProgramRan);
        }
        Ok(run)
    }
}

/// Read an strace log: every execve of another program, write, network connection and touch
/// of a decoy. Writes of the terminal and `/proc` are left out.
pub fn effects(program: &str, log: &str, s: &Scratch) -> Vec<Effect> {
    let ws = s.ws.display().to_string();
    let decoys = [
        s.outside.display().to_string(),
        s.home.join(".ssh").display().to_string(),
    ];
    let base = program.rsplit('/').next().unwrap_or(program);
    let mut pending: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for raw in log.lines() {
        let Some((pid, rest)) = raw.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        // `-f` splits calls that block: stitch `<unfinished ...>` and `<... resumed>`.
        let line = if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if rest.starts_with("<... ") {
            let tail = rest.split_once("resumed>").map_or("", |(_, t)| t);
            format!("{}{}", pending.remove(pid).unwrap_or_default(), tail)
        } else {
            rest.to_string()
        };
        let Some((call, args)) = line.split_once('(') else {
            continue;
        };
        let ret = line.rsplit_once(" = ").map_or("", |(_, r)| r);
        let ok = !ret.starts_with('-');
        if matches!(call, "connect" | "sendto" | "sendmsg" | "bind") {
            if args.contains("AF_INET") || args.contains("AF_INET6") || args.contains("AF_NETLINK")
            {
                out.push(Effect::Network(format!("{call}({}", args.trim_end())));
            }
            continue;
        }
        if call == "socket" {
            if args.starts_with("AF_INET") || args.starts_with("AF_INET6") {
                out.push(Effect::Network(format!("socket({args}")));
            }
            continue;
        }
        let strings = quoted(args);
        let dirfd = args
            .split_once('<')
            .filter(|_| {
                args.starts_with("AT_FDCWD<") || args.starts_with(|c: char| c.is_ascii_digit())
            })
            .and_then(|(_, r)| r.split_once('>'))
            .map(|(d, _)| d.to_string());
        let abs = |p: &str| -> String {
            if p.starts_with('/') {
                p.to_string()
            } else {
                format!("{}/{p}", dirfd.as_deref().unwrap_or(&ws))
            }
        };
        let paths: Vec<String> = strings.iter().map(|p| normalize(&abs(p))).collect();
        for p in &paths {
            if decoys.iter().any(|d| p.starts_with(d.as_str())) {
                out.push(Effect::TouchesDecoy(call.to_string(), p.clone()));
            }
        }
        if call == "execve" || call == "execveat" {
            if let Some(exe) = paths.first() {
                let exe_base = exe.rsplit('/').next().unwrap_or(exe);
                // The program itself (strace's exec of it, or it running itself again).
                if ok && exe_base != base {
                    out.push(Effect::Runs(exe.clone()));
                }
            }
            continue;
        }
        let writes = match call {
            "open" | "openat" | "openat2" => {
                args.contains("O_WRONLY")
                    || args.contains("O_RDWR")
                    || args.contains("O_CREAT")
                    || args.contains("O_TRUNC")
            }
            "creat" | "mkdir" | "mkdirat" | "rmdir" | "unlink" | "unlinkat" | "rename"
            | "renameat" | "renameat2" | "link" | "linkat" | "symlink" | "symlinkat" | "chmod"
            | "fchmodat" | "chown" | "lchown" | "fchownat" | "truncate" | "utimensat" | "utime"
            | "utimes" | "mknod" | "mknodat" => true,
            _ => false,
        };
        if writes {
            for p in &paths {
                if !terminal_or_proc(p) {
                    out.push(Effect::Writes(call.to_string(), p.clone()));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The terminal, the standard streams and `/proc`: writes there are output, not effects.
fn terminal_or_proc(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/tty" | "/dev/stdout" | "/dev/stderr" | "/dev/zero" | "/dev/full"
    ) || path.starts_with("/dev/pts/")
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/")
}

/// The double-quoted strings of an strace argument list (escapes left as written).
fn quoted(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        s.push('\\');
                        s.push(n);
                    }
                }
                '"' => break,
                _ => s.push(c),
            }
        }
        out.push(s);
        // Only the path arguments come first; argv arrays of execve follow in brackets.
        if args.contains('[') {
            break;
        }
    }
    out
}

/// `path` with `.`, `..` and repeated slashes resolved lexically.
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}
