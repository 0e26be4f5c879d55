//! Issue 39's backup rows: `Queue::backup` of a store of `small` pending
//! jobs and of one of `large` (1,000,000 in the full run), same payloads,
//! same run. The SST files are hard-linked (the bench's temp dir is one
//! filesystem), so the time and the bytes actually written grow with the
//! memtable flushed and the WAL copied, not with the store: the large
//! store's time beside the small one's shows it. CPU of the call beside
//! its wall time.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use telha_jobs::{Config, NewJob, Queue};

use super::queue_unique::cpu;

/// Bytes of the backup's files that are hard links (shared with the
/// store) and that were written anew.
fn linked_and_new(dir: &Path) -> (u64, u64) {
    let (mut linked, mut new) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.nlink() > 1 {
            linked += m.len();
        } else {
            new += m.len();
        }
    }
    (linked, new)
}

/// One store of `n` jobs, then one backup of it: (wall ms, CPU ms, info,
/// linked bytes, new bytes).
fn one(n: usize) -> (f64, f64, telha_jobs::BackupInfo, u64, u64, f64) {
    let root = tempfile::tempdir().unwrap();
    let q = Queue::open(
        root.path().join("store"),
        Config {
            reaper_interval: std::time::Duration::ZERO,
            ..Config::default()
        },
    )
    .unwrap();
    let t0 = Instant::now();
    for start in (0..n).step_by(1000) {
        let jobs = (start..(start + 1000).min(n))
            .map(|i| NewJob::new("work", format!("{{\"doc\": {i:>80}}}").into_bytes()))
            .collect();
        q.enqueue_many(jobs).unwrap();
    }
    let fill = t0.elapsed().as_secs_f64();
    let (c0, t0) = (cpu(), Instant::now());
    let info = q.backup(root.path().join("backup")).unwrap();
    let wall = t0.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = (cpu() - c0).as_secs_f64() * 1e3;
    let (linked, new) = linked_and_new(&info.path);
    q.close();
    (wall, cpu_ms, info, linked, new, n as f64 / fill)
}

pub fn rows(t: &mut super::Table, small: usize, large: usize) {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut walls = Vec::new();
    for n in [small, large] {
        let (wall, cpu_ms, info, linked, new, fill_rate) = one(n);
        t.row(
            &format!("backup of a {n}-job store (filled at {fill_rate:.0} jobs/s)"),
            format!("{wall:.1} ms"),
            format!(
                "{cpu_ms:.1} ms CPU; {} files, {:.1} MiB ({:.1} linked, {:.2} written)",
                info.files,
                mib(info.bytes),
                mib(linked),
                mib(new)
            ),
        );
        walls.push(wall);
    }
    t.row(
        &format!("backup time, {large} jobs ÷ {small} jobs"),
        format!("{:.2}×", walls[1] / walls[0]),
        format!("{}× the jobs", large / small),
    );
}
