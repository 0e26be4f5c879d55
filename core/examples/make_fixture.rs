//! Writes a small store with jobs in every state, for the format fixtures
//! under `core/tests/fixtures/` (see the README there).
//!
//! `cargo run --release -p telha-jobs --example make_fixture -- DIR`
//!
//! The committed `store-format-1` fixture was made by this program at the
//! last commit whose code wrote format 1 (no store marker). Each later format
//! adds its own fixture directory, made by the program as it is then; the
//! old ones are never regenerated, so every version proves it still opens
//! what earlier versions wrote.

use std::time::Duration;

use telha_jobs::{Config, EnqueueOptions, LeaseOptions, Queue, Scope};

fn main() -> telha_jobs::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: make_fixture DIR (an empty or missing directory)");
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        completed_retention: None,
        max_attempts: 3,
        ..Config::default()
    };
    let q = Queue::open(&dir, cfg)?;
    let tenant: Scope = "0190a000-0000-7000-8000-000000000001".parse()?;
    let o = EnqueueOptions::default;

    // Completed, with a result.
    q.enqueue(
        "embed",
        b"\x01\xa4done",
        o().idempotency_key("fixture-done"),
    )?;
    let j = q
        .lease_next("fixture-worker", &LeaseOptions::default())?
        .expect("a job");
    q.complete(&j.token(), Some(b"\x01\xa2ok"))?;

    // Dead: failed as not retryable.
    q.enqueue("ingest:pdf", b"raw bytes", o().scope(tenant).priority(3))?;
    let j = q
        .lease_next("fixture-worker", &LeaseOptions::default().scope(tenant))?
        .expect("a job");
    q.fail(&j.token(), "poison document", false)?;

    // Failed (retryable; its retry-at long past when the fixture is opened).
    q.enqueue("cascade", b"", o().max_attempts(9))?;
    let j = q
        .lease_next("fixture-worker", &LeaseOptions::default())?
        .expect("a job");
    q.fail(&j.token(), "transient", true)?;

    // Leased when the store was closed (its lease long expired by now).
    q.enqueue("embed", b"held", o().priority(0))?;
    let j = q
        .lease_next("fixture-worker", &LeaseOptions::default())?
        .expect("a job");
    assert_eq!(j.payload, b"held");

    // Pending: ready, delayed far into the future, and in another scope.
    q.enqueue(
        "embed",
        b"\x01\x81\xa1k\xa1v",
        o().idempotency_key("fixture-ready"),
    )?;
    q.enqueue("embed", b"later", o().run_at(4_102_444_800_000))?; // 2100-01-01
    q.enqueue("ingest:html", b"<p>", o().scope(tenant))?;

    let stats = q.stats()?;
    println!("{dir}: {:?}", stats.total);
    q.close();
    Ok(())
}
