//! One cgroup per session: memory, processes and CPU bounded for everything the session
//! starts, and the end of each call kills every process the call started, however fast it
//! forks.
//!
//! cgroup v2 where the unified hierarchy delegates the `memory`, `pids` and `cpu`
//! controllers to this process's cgroup; else cgroup v1, one directory per hierarchy
//! (`memory`, `pids`, `cpu`, `freezer`), each below this process's own cgroup there. The end
//! of a call ([`SessionCgroup::kill_except`]) freezes the cgroup, kills every member that is
//! not one of the session's own processes (the launcher, bubblewrap, the shell), thaws it, and
//! repeats until none is left: a frozen process cannot fork, so a fork bomb cannot outrun it
//! (a walk of the process tree can be outrun; that was the leak of issue 23).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::SandboxError;
use crate::policy::sandbox::SandboxLimits;

/// Which cgroup hierarchy a session's cgroup lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy.
    V2,
    /// One directory per controller.
    V1,
}

/// A session's cgroup (see the [module docs](self)). Dropping it kills everything inside and
/// removes it.
#[derive(Debug)]
pub struct SessionCgroup {
    version: Version,
    /// v2: one directory; v1: memory, pids, cpu, freezer (in that order).
    dirs: Vec<PathBuf>,
}

/// `(hierarchy-id, controllers, path)` of each line of `/proc/self/cgroup`.
fn own_cgroups() -> Vec<(String, String, String)> {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            Some((
                it.next()?.to_string(),
                it.next()?.to_string(),
                it.next()?.to_string(),
            ))
        })
        .collect()
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), SandboxError> {
    std::fs::write(dir.join(file), value).map_err(|e| {
        SandboxError::Unavailable(format!(
            "cgroup: cannot write {value:?} to {}: {e}",
            dir.join(file).display()
        ))
    })
}

impl SessionCgroup {
    /// Make the cgroup `shellgate-NAME` with `limits`' memory, processes and CPU (or their
    /// defaults). `Unavailable` when no hierarchy delegates the controllers here.
    pub fn create(name: &str, limits: &SandboxLimits) -> Result<SessionCgroup, SandboxError> {
        let leaf = format!("shellgate-{name}");
        let own = own_cgroups();
        let v2_err = match Self::create_v2(&leaf, &own) {
            Ok(cg) => return cg.limit(limits),
            Err(e) => e,
        };
        match Self::create_v1(&leaf, &own) {
            Ok(cg) => cg.limit(limits),
            Err(e) => Err(SandboxError::Unavailable(format!(
                "no cgroup for the session's limits (v2: {v2_err}; v1: {e}); set \
                 `[sandbox.limits] cgroup = \"optional\"` to run with rlimits only"
            ))),
        }
    }

    fn create_v2(leaf: &str, own: &[(String, String, String)]) -> Result<SessionCgroup, String> {
        let rel = own
            .iter()
            .find(|(id, c, _)| id == "0" && c.is_empty())
            .map(|(_, _, p)| p.trim_start_matches('/').to_string())
            .ok_or("this process is in no v2 cgroup")?;
        let mount = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(PathBuf::from)
            .find(|m| m.join("cgroup.controllers").exists())
            .ok_or("no cgroup2 mount")?;
        let base = mount.join(rel);
        let available = std::fs::read_to_string(base.join("cgroup.controllers"))
            .map_err(|e| format!("{}: {e}", base.display()))?;
        for c in ["memory", "pids", "cpu"] {
            if !available.split_whitespace().any(|a| a == c) {
                return Err(format!(
                    "the {c} controller is not delegated to {}",
                    base.display()
                ));
            }
        }
        let enabled =
            std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
        if !["memory", "pids", "cpu"]
            .iter()
            .all(|c| enabled.split_whitespace().any(|a| a == *c))
        {
            std::fs::write(base.join("cgroup.subtree_control"), "+memory +pids +cpu")
                .map_err(|e| format!("cannot enable controllers in {}: {e}", base.display()))?;
        }
        let dir = base.join(leaf);
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(SessionCgroup {
            version: Version::V2,
            dirs: vec![dir],
        })
    }

    fn create_v1(leaf: &str, own: &[(String, String, String)]) -> Result<SessionCgroup, String> {
        let mut dirs = Vec::new();
        let made = |dirs: &[PathBuf]| {
            for d in dirs {
                let _ = std::fs::remove_dir(d);
            }
        };
        for c in ["memory", "pids", "cpu", "freezer"] {
            let Some((_, ctrls, path)) = own
                .iter()
                .find(|(_, ctrls, _)| ctrls.split(',').any(|x| x == c))
            else {
                made(&dirs);
                return Err(format!("no v1 {c} hierarchy"));
            };
            let mount = [
                PathBuf::from("/sys/fs/cgroup").join(ctrls),
                PathBuf::from("/sys/fs/cgroup").join(c),
            ]
            .into_iter()
            .find(|m| m.join("cgroup.procs").exists());
            let Some(mount) = mount else {
                made(&dirs);
                return Err(format!("the v1 {c} hierarchy is not mounted"));
            };
            let dir = mount.join(path.trim_start_matches('/')).join(leaf);
            if let Err(e) = std::fs::create_dir(&dir) {
                made(&dirs);
                return Err(format!("{}: {e}", dir.display()));
            }
            dirs.push(dir);
        }
        Ok(SessionCgroup {
            version: Version::V1,
            dirs,
        })
    }

    fn limit(self, l: &SandboxLimits) -> Result<SessionCgroup, SandboxError> {
        let memory = l.memory_or_default().to_string();
        let pids = l.processes_or_default().to_string();
        let period: u64 = 100_000;
        let quota = (l.cpu_percent_or_default() * period / 100).max(1000);
        match self.version {
            Version::V2 => {
                let d = &self.dirs[0];
                write(d, "memory.max", &memory)?;
                // Best effort: without swap accounting the file is absent.
                let _ = std::fs::write(d.join("memory.swap.max"), "0");
                write(d, "pids.max", &pids)?;
                write(d, "cpu.max", &format!("{quota} {period}"))?;
            }
            Version::V1 => {
                write(&self.dirs[0], "memory.limit_in_bytes", &memory)?;
                let _ = std::fs::write(self.dirs[0].join("memory.memsw.limit_in_bytes"), &memory);
                write(&self.dirs[1], "pids.max", &pids)?;
                write(&self.dirs[2], "cpu.cfs_period_us", &period.to_string())?;
                write(&self.dirs[2], "cpu.cfs_quota_us", &quota.to_string())?;
            }
        }
        Ok(self)
    }

    /// Which hierarchy.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Its directories (one for v2; memory, pids, cpu and freezer for v1).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Move the calling process into it.
    pub fn join_self(dirs: &[PathBuf]) -> Result<(), SandboxError> {
        let me = std::process::id().to_string();
        for d in dirs {
            std::fs::write(d.join("cgroup.procs"), &me).map_err(|e| {
                SandboxError::Setup(format!("cannot join the cgroup {}: {e}", d.display()))
            })?;
        }
        Ok(())
    }

    /// Pids of the processes inside.
    pub fn procs(&self) -> Vec<i32> {
        // v1: every hierarchy holds the same processes; the freezer's is the one frozen.
        let dir = self.dirs.last().unwrap_or(&self.dirs[0]);
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Bytes of memory in use now (for tests and the plan).
    pub fn memory_current(&self) -> Option<u64> {
        let (dir, file) = match self.version {
            Version::V2 => (&self.dirs[0], "memory.current"),
            Version::V1 => (&self.dirs[0], "memory.usage_in_bytes"),
        };
        std::fs::read_to_string(dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn freeze(&self, on: bool) {
        let (dir, file, value, want) = match self.version {
            Version::V2 => (
                &self.dirs[0],
                "cgroup.freeze",
                if on { "1" } else { "0" },
                "",
            ),
            Version::V1 => (
                &self.dirs[3],
                "freezer.state",
                if on { "FROZEN" } else { "THAWED" },
                if on { "FROZEN" } else { "THAWED" },
            ),
        };
        let _ = std::fs::write(dir.join(file), value);
        // Wait (briefly) until the freeze has reached every member.
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            let done = match self.version {
                Version::V2 => std::fs::read_to_string(dir.join("cgroup.events"))
                    .map(|s| {
                        s.lines()
                            .any(|l| l == if on { "frozen 1" } else { "frozen 0" })
                    })
                    .unwrap_or(true),
                Version::V1 => std::fs::read_to_string(dir.join(file))
                    .map(|s| s.trim() == want)
                    .unwrap_or(true),
            };
            if done {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Kill every process inside except `keep`, until none is left or `within` has passed;
    /// whether none is left.
    ///
    /// When the cgroup holds only `keep` already, nothing is frozen: at the end of a call the
    /// kept processes are idle (the shell has printed its sentinel and waits for input), and
    /// any other process, even one in the middle of a fork, is itself listed, so an empty
    /// list of victims cannot hide one. That spares most calls the freeze and thaw.
    pub fn kill_except(&self, keep: &[Pid], within: Duration) -> bool {
        let kept = |p: &i32| keep.iter().any(|k| k.as_raw() == *p);
        if self.procs().iter().all(kept) {
            return true;
        }
        let until = Instant::now() + within;
        loop {
            self.freeze(true);
            let victims: Vec<i32> = self.procs().into_iter().filter(|p| !kept(p)).collect();
            for p in &victims {
                let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
            }
            self.freeze(false);
            if victims.is_empty() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Kill everything inside (v2: `cgroup.kill`).
    pub fn kill_all(&self) {
        if self.version == Version::V2 {
            let _ = std::fs::write(self.dirs[0].join("cgroup.kill"), "1");
        }
        self.kill_except(&[], Duration::from_secs(2));
    }
}

impl Drop for SessionCgroup {
    fn drop(&mut self) {
        self.kill_all();
        let until = Instant::now() + Duration::from_secs(2);
        for d in &self.dirs {
            while std::fs::remove_dir(d).is_err() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
