//! CPU time (not wall time: the machine may be loaded) of one snapshot of an unchanged
//! 10,000-file workspace, beside a bare walk that lstats every path (the floor any scan
//! pays). `cargo run --release --example snapshot_cost [FILES]`.

use std::path::Path;
use std::time::Duration;

use nix::sys::resource::{getrusage, UsageWho};
use shellgate::policy::snapshots::SnapshotSettings;
use shellgate::snapshot::Snapshots;

fn cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let t = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    t(u.user_time()) + t(u.system_time())
}

fn walk(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        n += 1;
        if m.is_dir() {
            n += walk(&p);
        }
    }
    n
}

fn main() {
    let files: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    for i in 0..files {
        let dir = ws.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{i:05}.txt")),
            format!("{i:08}\n").repeat(114),
        )
        .unwrap();
    }
    let settings = SnapshotSettings {
        dir: Some(tmp.path().join("state")),
        ..SnapshotSettings::default()
    };
    let mut s = Snapshots::open(&ws, &settings).unwrap();
    let t = cpu();
    s.before("first", "x", None).unwrap();
    println!("first snapshot (copies every file): {:?} CPU", cpu() - t);
    std::thread::sleep(Duration::from_millis(2100));
    // Out of the racy window now: one call to refresh the cache's scan time.
    s.before("warm", "x", None).unwrap();
    let rounds = 10;
    let t = cpu();
    for _ in 0..rounds {
        walk(&ws);
    }
    println!("bare lstat walk: {:?} CPU per walk", (cpu() - t) / rounds);
    let t = cpu();
    for _ in 0..rounds {
        s.before("t", "x", None).unwrap();
    }
    println!(
        "snapshot, nothing changed: {:?} CPU per call",
        (cpu() - t) / rounds
    );
    let t = cpu();
    for _ in 0..rounds {
        let mut fresh = Snapshots::open(&ws, &settings).unwrap();
        fresh.before("t", "x", None).unwrap();
    }
    println!(
        "snapshot from a fresh handle (the hook): {:?} CPU per call",
        (cpu() - t) / rounds
    );
}
