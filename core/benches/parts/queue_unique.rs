//! Issue 44's rows: a keyed enqueue with a unique window (`unique_for`)
//! and with `debounce` beside a plain keyed enqueue, one job per call, same store settings,
//! same run (target ≤ 1.3× the plain one's time per job), with the
//! process's CPU time per job beside each rate.

use std::time::{Duration, Instant};

use telha_jobs::{Config, EnqueueOptions, Queue};

/// The process's user + system CPU time (from /proc/self/stat, clock ticks
/// of 10 ms; zero where it cannot be read).
pub fn cpu() -> Duration {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th fields of the line (12th and 13th after it).
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    Duration::from_millis(f.iter().sum::<u64>() * 10)
}

/// What a keyed enqueue carries beside its key.
#[derive(Clone, Copy)]
enum Mode {
    Plain,
    Window,
    Debounce,
}

/// `n` keyed single enqueues (distinct keys) in `mode`; with `repeat`, each
/// key was enqueued once before (a window hit, a debounce update);
/// (jobs/s, CPU µs/job).
fn keyed(n: usize, mode: Mode, repeat: bool) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(
        dir.path(),
        Config {
            reaper_interval: Duration::ZERO,
            ..Config::default()
        },
    )
    .unwrap();
    let opts = |i: usize| {
        let o = EnqueueOptions::default().idempotency_key(format!("user-{i}"));
        match mode {
            Mode::Plain => o,
            Mode::Window => o.unique_for(Duration::from_secs(3600)),
            Mode::Debounce => o.debounce(Duration::from_secs(3600)),
        }
    };
    if repeat {
        for i in 0..n {
            q.enqueue("embed", b"payload", opts(i)).unwrap();
        }
    }
    let (c0, t0) = (cpu(), Instant::now());
    for i in 0..n {
        let e = q.enqueue("embed", b"payload", opts(i)).unwrap();
        assert_eq!(e.created, !repeat);
    }
    let (el, c) = (t0.elapsed(), cpu() - c0);
    q.close();
    (
        n as f64 / el.as_secs_f64(),
        c.as_secs_f64() * 1e6 / n as f64,
    )
}

/// The rows: plain keyed, `unique_for` keyed (each call opens a window),
/// and repeats inside open windows (each answers the existing job).
pub fn rows(t: &mut super::Table, n: usize) {
    // The median of three rounds each, interleaved, for a loaded machine.
    let mut plain = Vec::new();
    let mut uniq = Vec::new();
    let mut hits = Vec::new();
    let mut plain_hits = Vec::new();
    let mut deb = Vec::new();
    let mut deb_hits = Vec::new();
    for _ in 0..3 {
        plain.push(keyed(n, Mode::Plain, false));
        uniq.push(keyed(n, Mode::Window, false));
        deb.push(keyed(n, Mode::Debounce, false));
        plain_hits.push(keyed(n, Mode::Plain, true));
        hits.push(keyed(n, Mode::Window, true));
        deb_hits.push(keyed(n, Mode::Debounce, true));
    }
    let med = |v: &mut Vec<(f64, f64)>| {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v[v.len() / 2]
    };
    let (p, u) = (med(&mut plain), med(&mut uniq));
    let (ph, h) = (med(&mut plain_hits), med(&mut hits));
    let (d, dh) = (med(&mut deb), med(&mut deb_hits));
    t.row(
        "keyed enqueue, 1 thread (new key each call)",
        format!("{:.0} jobs/s", p.0),
        format!("{:.1} µs CPU/job", p.1),
    );
    t.row(
        "keyed enqueue with unique_for 1h (new key each call)",
        format!("{:.0} jobs/s", u.0),
        format!("{:.2}× plain time/job, {:.1} µs CPU/job", p.0 / u.0, u.1),
    );
    t.row(
        "keyed enqueue repeat (answers the existing job)",
        format!("{:.0} calls/s", ph.0),
        format!("{:.1} µs CPU/call", ph.1),
    );
    t.row(
        "unique_for repeat inside the window",
        format!("{:.0} calls/s", h.0),
        format!(
            "{:.2}× plain repeat time, {:.1} µs CPU/call",
            ph.0 / h.0,
            h.1
        ),
    );
    t.row(
        "keyed enqueue with debounce 1h (new key each call)",
        format!("{:.0} jobs/s", d.0),
        format!("{:.2}× plain time/job, {:.1} µs CPU/job", p.0 / d.0, d.1),
    );
    t.row(
        "debounce repeat (updates the pending job)",
        format!("{:.0} calls/s", dh.0),
        format!(
            "{:.2}× plain repeat, {:.2}× plain enqueue time, {:.1} µs CPU/call",
            ph.0 / dh.0,
            p.0 / dh.0,
            dh.1
        ),
    );
}
