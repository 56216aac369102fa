//! What a snapshot adds to a call (issue 27): one bash call through the reference Guard
//! (`: > out.txt`, a write, so it is snapshotted) with and without snapshots, in the same run;
//! then the snapshot alone as the workspace grows (1,000 / 10,000 / 30,000 files, nothing
//! changed since the previous call) and as the change grows (1 / 100 / 1,000 files rewritten
//! in a 10,000-file workspace), and what the PreToolUse hook adds (a fresh handle each call).
//! Read the results as ratios to `call/plain`.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use shellgate::middleware::{Guard, ToolUse};
use shellgate::policy::snapshots::SnapshotSettings;
use shellgate::snapshot::Snapshots;
use shellgate::Policy;

/// `files` files of 1 KiB in directories of 100, plus a small git-like tree.
fn workspace(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let body = format!("{i:08}\n").repeat(114);
        std::fs::write(dir.join(format!("f{i:05}.txt")), body).unwrap();
    }
}

fn settings(state: &Path) -> SnapshotSettings {
    SnapshotSettings {
        dir: Some(state.to_path_buf()),
        max_count: 30,
        ..SnapshotSettings::default()
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let policy = Policy::from_name_or_file("developer").unwrap();

    // One call through the Guard, with and without snapshots, on 10,000 files.
    let ws = tmp.path().join("ws10k");
    std::fs::create_dir_all(&ws).unwrap();
    workspace(&ws, 10_000);
    let mut g = c.benchmark_group("call");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    let mut plain = Guard::reference(policy.clone(), &ws, Duration::from_secs(30)).unwrap();
    g.bench_function("plain", |b| {
        b.iter(|| plain.handle(&ToolUse::bash("t", ": > out.txt")))
    });
    drop(plain);
    let snaps = Snapshots::open(&ws, &settings(&tmp.path().join("state-call"))).unwrap();
    let mut guarded = Guard::reference(policy.clone(), &ws, Duration::from_secs(30))
        .unwrap()
        .with_snapshots(snaps);
    g.bench_function("with-snapshot", |b| {
        b.iter(|| guarded.handle(&ToolUse::bash("t", ": > out.txt")))
    });
    drop(guarded);
    g.finish();

    // What the PreToolUse hook adds: a fresh process opens the store and reads the newest
    // manifest from disk (no cache in memory) before it snapshots; one file changed.
    let mut g = c.benchmark_group("hook-snapshot");
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    let hook_state = tmp.path().join("state-hook");
    Snapshots::open(&ws, &settings(&hook_state))
        .unwrap()
        .before("first", "bench", None)
        .unwrap();
    let mut n = 0u64;
    g.bench_function("10000", |b| {
        b.iter(|| {
            n += 1;
            std::fs::write(ws.join("out.txt"), n.to_string()).unwrap();
            let mut s = Snapshots::open(&ws, &settings(&hook_state)).unwrap();
            s.before("t", "hook:Bash", Some(": > out.txt")).unwrap()
        })
    });
    g.finish();

    // The snapshot alone, nothing changed since the previous one, as the workspace grows.
    let mut g = c.benchmark_group("snapshot-unchanged");
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    for files in [1_000usize, 10_000, 30_000] {
        let ws = tmp.path().join(format!("grow{files}"));
        std::fs::create_dir_all(&ws).unwrap();
        workspace(&ws, files);
        let mut s =
            Snapshots::open(&ws, &settings(&tmp.path().join(format!("st{files}")))).unwrap();
        s.before("first", "bench", None).unwrap();
        // Out of the racy window, so the stat cache answers.
        std::thread::sleep(Duration::from_millis(2100));
        g.bench_with_input(BenchmarkId::from_parameter(files), &files, |b, _| {
            b.iter(|| s.before("t", "bench", None).unwrap())
        });
    }
    g.finish();

    // The snapshot after a call that rewrote `changed` files of 10,000.
    let mut g = c.benchmark_group("snapshot-changed-of-10k");
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    let mut s = Snapshots::open(&ws, &settings(&tmp.path().join("state-changed"))).unwrap();
    s.before("first", "bench", None).unwrap();
    let mut round = 0u64;
    for changed in [1usize, 100, 1_000] {
        g.bench_with_input(BenchmarkId::from_parameter(changed), &changed, |b, &n| {
            // The rewrite is the call's work (not timed); the snapshot after it is.
            b.iter_batched(
                || {
                    round += 1;
                    for i in 0..n {
                        let p = ws.join(format!("d{:03}/f{:05}.txt", i / 100, i));
                        std::fs::write(p, format!("{round} {i}\n").repeat(100)).unwrap();
                    }
                },
                |()| s.before("t", "bench", None).unwrap(),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
