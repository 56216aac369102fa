//! Process containment: whatever a session starts ends with it.
//!
//! - Every live `BashSession` registers its process group here, so that
//!   a signal handler (or end of input) can kill every session at once:
//!   [`kill_all_sessions`].
//! - [`descendants`] lists a process's descendants from `/proc` (by parent pid, not by name),
//!   and [`kill_tree`] kills them until none is left. Under the sandbox launcher the shell is
//!   the init of its own PID namespace, so a process that left the process group (`setsid`,
//!   a double fork, `timeout`) is reparented to the shell and is still its descendant; and
//!   when the shell dies, the kernel kills the whole namespace.
//! - [`on_termination_signals`] turns SIGTERM, SIGINT and SIGHUP into a callback on a thread
//!   of its own (no `unsafe`, no async-signal-safety rules, no inherited signal mask).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// Live sessions: process group → the directories to remove when it is gone (its private
/// temporary directory, its pids cgroup).
static LIVE: Mutex<BTreeMap<i32, Vec<PathBuf>>> = Mutex::new(BTreeMap::new());

fn live() -> std::sync::MutexGuard<'static, BTreeMap<i32, Vec<PathBuf>>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn register(pgid: Pid, dirs: Vec<PathBuf>) {
    live().insert(pgid.as_raw(), dirs);
}

pub(crate) fn unregister(pgid: Pid) {
    live().remove(&pgid.as_raw());
}

/// SIGKILL to the process group of every live session of this process (their shells, the
/// launchers, and with them each session's PID namespace). Safe to call from any thread;
/// the sessions notice on their next read and report that the shell exited.
pub fn kill_all_sessions() {
    let groups: Vec<i32> = live().keys().copied().collect();
    for g in groups {
        // ESRCH: already gone.
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
}

/// Why a session was killed on purpose, by process group, until the session reads it
/// ([`take_stop_cause`]): its call then says so instead of "the session exited".
static STOPPED: Mutex<BTreeMap<i32, &'static str>> = Mutex::new(BTreeMap::new());

/// [`kill_all_sessions`], saying why: the call each session was running answers
/// `middleware::ExecError::Stopped` with `cause` (such as `end of input`).
pub fn stop_all_sessions(cause: &'static str) {
    {
        let groups: Vec<i32> = live().keys().copied().collect();
        let mut stopped = STOPPED.lock().unwrap_or_else(|p| p.into_inner());
        for g in groups {
            stopped.insert(g, cause);
        }
    }
    kill_all_sessions();
}

/// [`stop_all_sessions`] for one session only, the one of process group `pgid` (what
/// [`BashSession::pid`](crate::middleware::BashSession::pid) returns), saying why; other
/// sessions of this process go on (`policy-check mcp --http` serves one per client). A
/// group that is no longer live is left alone.
pub fn stop_session(pgid: u32, cause: &'static str) {
    let Ok(g) = i32::try_from(pgid) else {
        return;
    };
    // Under the lock of the live sessions, so that the group cannot end and its number be
    // reused in between.
    let live = live();
    if !live.contains_key(&g) {
        return;
    }
    STOPPED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(g, cause);
    let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
}

/// The cause given to [`stop_all_sessions`] for the session of process group `pgid`, once.
pub(crate) fn take_stop_cause(pgid: i32) -> Option<&'static str> {
    STOPPED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&pgid)
}

/// Kill every live session and remove its temporary directory and cgroup, for a process
/// about to exit without running destructors (a signal handler). A cgroup can only be
/// removed once its processes are gone: this waits up to a second for that.
pub fn end_all_sessions() {
    kill_all_sessions();
    let (cgroups, tmps): (Vec<PathBuf>, Vec<PathBuf>) = std::mem::take(&mut *live())
        .into_values()
        .flatten()
        .partition(|d| d.join("cgroup.procs").exists());
    // The cgroups first: each can be removed only once its processes (the jail) are gone,
    // and only then may the placeholders in the workspace be removed.
    let until = Instant::now() + Duration::from_secs(1);
    for d in cgroups {
        while std::fs::remove_dir(&d).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    for d in tmps {
        super::launch::remove_placeholders_of(&d);
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// Call `f` with each SIGTERM, SIGINT or SIGHUP that arrives, on a thread of its own
/// (`signal-hook`'s self-pipe: the handler only writes a byte, and no signal mask is
/// changed, so the processes a session starts inherit none).
pub fn on_termination_signals(f: impl Fn(Signal) + Send + 'static) -> Result<(), std::io::Error> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::Builder::new()
        .name("shellgate-signals".into())
        .spawn(move || {
            for n in signals.forever() {
                if let Ok(sig) = Signal::try_from(n) {
                    f(sig);
                }
            }
        })?;
    Ok(())
}

/// `(pid, ppid, zombie)` of every process, from `/proc`.
fn processes() -> Vec<(i32, i32, bool)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name is in parentheses and may contain anything: split after the last.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let mut fields = rest.split(' ');
        let state = fields.next().unwrap_or("");
        let Some(ppid) = fields.next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        out.push((pid, ppid, state == "Z" || state == "X"));
    }
    out
}

/// The live (not zombie) children of `parent`.
pub fn children(parent: Pid) -> Vec<Pid> {
    processes()
        .into_iter()
        .filter(|&(_, ppid, zombie)| ppid == parent.as_raw() && !zombie)
        .map(|(pid, _, _)| Pid::from_raw(pid))
        .collect()
}

/// The live (not zombie) descendants of `root`: from each process's
/// `/proc/PID/task/TID/children` where the kernel has them (a walk of the tree only), else
/// from a scan of every process.
pub fn descendants(root: Pid) -> Vec<Pid> {
    if let Some(found) = descendants_by_children_files(root) {
        return found;
    }
    let procs = processes();
    let mut found = Vec::new();
    let mut frontier = vec![root.as_raw()];
    let mut seen = BTreeSet::new();
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, zombie) in &procs {
            if ppid == p && seen.insert(pid) {
                frontier.push(pid);
                if !zombie {
                    found.push(Pid::from_raw(pid));
                }
            }
        }
    }
    found
}

fn descendants_by_children_files(root: Pid) -> Option<Vec<Pid>> {
    let probe = format!("/proc/{0}/task/{0}/children", root.as_raw());
    if !std::path::Path::new(&probe).exists() {
        return None;
    }
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    let mut frontier = vec![root.as_raw()];
    while let Some(p) = frontier.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue; // gone meanwhile
        };
        for t in tasks.flatten() {
            let path = t.path().join("children");
            let Ok(list) = std::fs::read_to_string(path) else {
                continue;
            };
            for c in list
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if seen.insert(c) {
                    frontier.push(c);
                    let zombie = std::fs::read_to_string(format!("/proc/{c}/stat"))
                        .ok()
                        .and_then(|s| {
                            s.rsplit_once(") ")
                                .map(|(_, r)| r.starts_with('Z') || r.starts_with('X'))
                        })
                        .unwrap_or(true);
                    if !zombie {
                        found.push(Pid::from_raw(c));
                    }
                }
            }
        }
    }
    Some(found)
}

/// SIGKILL every descendant of `root` (not `root` itself) until none is left or `within`
/// has passed; whether none is left. Children that a killed process leaves behind are
/// reparented to the nearest subreaper (under the launcher: the shell), found on the next
/// round.
pub fn kill_tree(root: Pid, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        let left = descendants(root);
        if left.is_empty() {
            return true;
        }
        for p in &left {
            let _ = kill(*p, Signal::SIGKILL);
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
