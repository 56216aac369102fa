//! The scratch tree a program runs in: a workspace with fixture files, and neighbours holding
//! decoys that no option of an allowed command may touch.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::OracleError;

/// A scratch tree: `ws/` is the workspace; `outside/` holds a decoy secret and a decoy
/// program (which, when run, leaves `outside/PWNED`); `home/` is `$HOME`, with a decoy key;
/// `trace/` holds strace's logs. Removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    _dir: tempfile::TempDir,
    /// The scratch root (the only host directory a jailed run can write).
    pub root: PathBuf,
    /// The workspace: the working directory of each run.
    pub ws: PathBuf,
    /// Beside the workspace: the decoy secret and the decoy program.
    pub outside: PathBuf,
    /// `$HOME` of each run, with a decoy SSH key.
    pub home: PathBuf,
}

fn io(what: &Path, e: std::io::Error) -> OracleError {
    OracleError::Scratch(format!("{}: {e}", what.display()))
}

impl Scratch {
    /// Make the tree (and, when git is installed, a repository with a remote in the
    /// workspace, for git's subcommands).
    pub fn new() -> Result<Scratch, OracleError> {
        let dir = tempfile::Builder::new()
            .prefix("shellgate-oracle-")
            .tempdir()
            .map_err(|e| OracleError::Scratch(e.to_string()))?;
        let root = dir.path().canonicalize().map_err(|e| io(dir.path(), e))?;
        let ws = root.join("ws");
        let outside = root.join("outside");
        let home = root.join("home");
        for d in [&ws, &outside, &home.join(".ssh"), &root.join("trace")] {
            fs::create_dir_all(d).map_err(|e| io(d, e))?;
        }
        let write = |p: PathBuf, text: &str| fs::write(&p, text).map_err(|e| io(&p, e));
        write(outside.join("secret.txt"), "DECOY-SECRET\n")?;
        write(home.join(".ssh/id_rsa"), "DECOY-KEY\n")?;
        let prog = outside.join("prog");
        write(
            prog.clone(),
            &format!("#!/bin/sh\necho ran > {}/PWNED\n", outside.display()),
        )?;
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&prog, fs::Permissions::from_mode(0o755))
                .map_err(|e| io(&prog, e))?;
        }
        write(
            home.join(".gitconfig"),
            "[user]\n\tname = Oracle\n\temail = oracle@example.com\n[init]\n\tdefaultBranch = main\n",
        )?;
        let s = Scratch {
            _dir: dir,
            root,
            ws,
            outside,
            home,
        };
        s.reset();
        // A certificate for `openssl x509` (when openssl is there).
        let _ = Command::new("openssl")
            .args([
                "req", "-x509", "-nodes", "-newkey", "rsa:2048", "-days", "1",
            ])
            .args([
                "-subj",
                "/CN=oracle",
                "-keyout",
                "key.pem",
                "-out",
                "cert.pem",
            ])
            .current_dir(&s.ws)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if super::installed("git") {
            s.git(&["init", "-q"]);
            s.git(&["add", "-A"]);
            s.git(&["commit", "-qm", "init"]);
            s.git(&["init", "-q", "--bare", "remote.git"]);
            s.git(&["remote", "add", "origin", "remote.git"]);
            s.git(&["push", "-q", "origin", "main"]);
        }
        Ok(s)
    }

    /// Put the fixture files back (a run may have moved or deleted them).
    pub fn reset(&self) {
        let w = |p: &str, c: &[u8]| {
            let path = self.ws.join(p);
            if let Some(d) = path.parent() {
                let _ = fs::create_dir_all(d);
            }
            let _ = fs::write(path, c);
        };
        w("a.txt", b"alpha\nbeta\ngamma\n");
        w("b.txt", b"alpha\ndelta\n");
        w("data.txt", b"3\n1\n2\n");
        w("data.csv", b"a,b,c\n1,2,3\n");
        w("data.json", b"{\"a\": 1, \"version\": \"1.0\"}\n");
        w("data.bin", b"\x00\x01\x02binary\xff");
        w("sub/c.txt", b"charlie\n");
        w("mv1.txt", b"move me\n");
        w("rm1.txt", b"remove me\n");
        w("fix.patch", b"");
        // An empty zip (its end-of-central-directory record) and an empty tar.
        w("a.zip", b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        w("a.tar", &[0u8; 10240]);
        w("Cargo.toml", b"[package]\nname = \"oracle\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n");
        w("src/main.rs", b"fn main() {\n    println!(\"hi\");\n}\n");
        w("package.json", b"{\"name\": \"oracle\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"true\", \"start\": \"true\", \"build\": \"true\"}}\n");
        // A list of paths naming the decoy (NUL- and newline-terminated): an option that
        // reads the files its value lists is seen touching it.
        let secret = self.secret();
        w("list.txt", format!("{secret}\0{secret}\n").as_bytes());
        let _ = fs::create_dir_all(self.ws.join("emptydir"));
        let _ = fs::remove_file(self.outside.join("PWNED"));
    }

    fn git(&self, args: &[&str]) {
        let _ = Command::new("git")
            .args(args)
            .current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// The decoy secret, outside the workspace.
    pub fn secret(&self) -> String {
        self.outside.join("secret.txt").display().to_string()
    }

    /// The decoy program, outside the workspace.
    pub fn prog(&self) -> String {
        self.outside.join("prog").display().to_string()
    }

    /// A path outside the workspace that does not exist (a value an option may write).
    pub fn outside_new(&self) -> String {
        self.outside.join("w.txt").display().to_string()
    }

    /// Whether the decoy program ran since the last [`reset`](Scratch::reset).
    pub fn decoy_ran(&self) -> bool {
        self.outside.join("PWNED").exists()
    }

    /// The context commands are decided in: the workspace, `$HOME` the scratch home.
    pub fn context(&self) -> crate::Context {
        let mut ctx = crate::Context::new(&self.ws);
        ctx.home = self.home.clone();
        ctx
    }
}
