//! A fixed number of lifecycles and nothing else, for counting the
//! instructions a lifecycle costs under callgrind (repeatable on a loaded
//! machine, where wall clock is not):
//!
//! `valgrind --tool=callgrind target/release/examples/lifecycle_calls MODE N`
//!
//! - `lifecycle`: N × (enqueue → `lease_next` → complete), one at a time,
//!   the 60-byte payload of `bench_ref`;
//! - `lifecycle-traced`: the same, each job with a W3C `traceparent` in
//!   its metadata (issue 45); `enqueue` / `enqueue-traced`: N enqueues
//!   alone, without and with it;
//! - `tagged`: `lifecycle` with 4 tags per job (`tag-T-(i % 100)`, the
//!   `--tags` bench row's jobs), to set beside `lifecycle`;
//! - `pairs`: N enqueued by `enqueue_many(1000)`, then N × (`lease_next` +
//!   complete);
//! - `batch`: N jobs, 100 at a time, through `enqueue_many` →
//!   `lease_many` → `complete_many` (`bench_ref`'s batch lifecycle);
//! - `raw`: N × the three raw WriteBatches `bench_ref` measures the
//!   lifecycle against (put pending; delete it + put leased; delete that +
//!   put completed), one job per batch;
//! - `raw-pairs`: N raw puts, then N × the last two of those batches.
//!
//! Only the measured loop counts with
//! `--collect-atstart=no --toggle-collect='*measured*'` (not the open,
//! the fill or the close): divide by N.

use std::time::Duration;

use rocksdb::{Options, WriteBatch, DB};
use telha_jobs::trace_context::TRACEPARENT;
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, NewJob, Queue};

const PAYLOAD: &[u8] = b"{\"doc\":\"s3://bucket/key/0001.pdf\",\"tenant\":42,\"pages\":12}";
const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn queue(dir: &std::path::Path) -> Queue {
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    Queue::open(dir, cfg).expect("open")
}

fn raw_key(state: u8, i: usize) -> [u8; 42] {
    let mut k = [0u8; 42];
    k[0] = state;
    k[1..9].copy_from_slice(&(i as u64).to_be_bytes());
    k
}

/// The loop under measurement (a callgrind toggle names it). Prints its
/// wall-clock rate too (jobs/s), for runs outside callgrind.
#[inline(never)]
fn measured(n: usize, mut each: impl FnMut(usize)) {
    let t = std::time::Instant::now();
    for i in 0..n {
        each(i);
    }
    println!("{:.0}", n as f64 / t.elapsed().as_secs_f64());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("lifecycle");
    let n: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("dir");
    match mode {
        "lifecycle" | "lifecycle-traced" | "enqueue" | "enqueue-traced" => {
            let q = queue(dir.path());
            let opts = LeaseOptions::default();
            let enqueue = || {
                let o = if mode.ends_with("-traced") {
                    EnqueueOptions::default().meta(TRACEPARENT, TP)
                } else {
                    EnqueueOptions::default()
                };
                q.enqueue("bench", PAYLOAD, o).expect("enqueue");
            };
            if mode.starts_with("enqueue") {
                measured(n, |_| enqueue());
            } else {
                measured(n, |_| {
                    enqueue();
                    let j = q.lease_next("w", &opts).expect("lease").expect("a job");
                    q.complete(&j.token(), None).expect("complete");
                });
            }
            q.close();
        }
        "tagged" => {
            let q = queue(dir.path());
            let opts = LeaseOptions::default();
            measured(n, |i| {
                let o = (0..4).fold(EnqueueOptions::default(), |o, t| {
                    o.tag(format!("tag-{t}-{}", i % 100))
                });
                q.enqueue("bench", PAYLOAD, o).expect("enqueue");
                let j = q.lease_next("w", &opts).expect("lease").expect("a job");
                q.complete(&j.token(), None).expect("complete");
            });
            q.close();
        }
        "pairs" => {
            let q = queue(dir.path());
            let mut left = n;
            while left > 0 {
                let b = left.min(1000);
                let jobs = (0..b).map(|_| NewJob::new("bench", PAYLOAD)).collect();
                q.enqueue_many(jobs).expect("enqueue_many");
                left -= b;
            }
            let opts = LeaseOptions::default();
            measured(n, |_| {
                let j = q.lease_next("w", &opts).expect("lease").expect("a job");
                q.complete(&j.token(), None).expect("complete");
            });
            q.close();
        }
        "batch" => {
            let q = queue(dir.path());
            let opts = LeaseOptions::default();
            measured(n / 100, |_| {
                let jobs = (0..100).map(|_| NewJob::new("bench", PAYLOAD)).collect();
                q.enqueue_many(jobs).expect("enqueue_many");
                let leased = q.lease_many("w", 100, &opts).expect("lease_many");
                let items = leased
                    .iter()
                    .map(|j| telha_jobs::Completion::new(j.token(), None))
                    .collect();
                for a in q.complete_many(items).expect("complete_many") {
                    a.expect("complete");
                }
            });
            q.close();
        }
        "raw" | "raw-pairs" => {
            let mut o = Options::default();
            o.create_if_missing(true);
            let db = DB::open(&o, dir.path()).expect("raw rocksdb");
            let put = |i: usize| {
                let mut b = WriteBatch::default();
                b.put(raw_key(1, i), PAYLOAD);
                db.write(b).expect("raw put");
            };
            let pair = |i: usize| {
                let mut b = WriteBatch::default();
                b.delete(raw_key(1, i));
                b.put(raw_key(2, i), PAYLOAD);
                db.write(b).expect("raw lease");
                let mut b = WriteBatch::default();
                b.delete(raw_key(2, i));
                b.put(raw_key(4, i), PAYLOAD);
                db.write(b).expect("raw complete");
            };
            if mode == "raw" {
                measured(n, |i| {
                    put(i);
                    pair(i);
                });
            } else {
                for i in 0..n {
                    put(i);
                }
                measured(n, pair);
            }
        }
        other => panic!("unknown mode {other:?}"),
    }
}
