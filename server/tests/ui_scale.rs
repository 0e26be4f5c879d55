//! The operator API on a store of 1,000,000 jobs: the overview, the
//! first page of a filtered list, a tag's list and the search box's find
//! must not scan (every job carries one of 100,000 tags, 10 jobs each). Timings are measured and
//! printed (the closing note and README report them), never asserted:
//! only the answers' contents are checked.

mod common;

use std::io::Write;
use std::time::Instant;

use common::http::Http;
use serde_json::json;
use telha_jobs::{EnqueueOptions, LeaseOptions, NewJob, Scope};
use telha_jobs_server::ServeOptions;

const JOBS: usize = 1_000_000;
const DEAD: usize = 1_000;
const SCOPES: u64 = 20;
const KINDS: [&str; 5] = ["ingest", "embed", "cascade", "email", "report"];

fn median_ms(h: &Http, path: &str, runs: usize) -> (f64, serde_json::Value) {
    let mut t = Vec::new();
    let mut last = json!(null);
    for _ in 0..runs {
        let s = Instant::now();
        let a = h.get(path);
        t.push(s.elapsed());
        assert_eq!(
            a.status,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&a.body)
        );
        last = a.json();
    }
    t.sort();
    (t[t.len() / 2].as_secs_f64() * 1000.0, last)
}

#[test]
fn overview_and_filtered_pages_answer_without_a_scan_at_a_million_jobs() {
    let (s, h) = common::ui(ServeOptions::default());
    let q = &s.queue;
    let seed = Instant::now();
    let scopes: Vec<Scope> = (0..SCOPES)
        .map(|i| format!("00000000-0000-0000-0000-{i:012x}").parse().unwrap())
        .collect();
    let mut n = 0usize;
    while n < JOBS - DEAD {
        let batch: Vec<NewJob> = (n..(n + 10_000).min(JOBS - DEAD))
            .map(|i| NewJob {
                options: EnqueueOptions {
                    scope: Some(scopes[(i / KINDS.len()) % scopes.len()]),
                    tags: vec![format!("order-{}", i % 100_000)],
                    ..EnqueueOptions::default()
                },
                ..NewJob::new(
                    KINDS[i % KINDS.len()],
                    format!("{{\"n\":{i}}}").into_bytes(),
                )
            })
            .collect();
        n += batch.len();
        q.enqueue_many(batch).unwrap();
    }
    let dead: Vec<NewJob> = (0..DEAD)
        .map(|i| NewJob {
            options: EnqueueOptions {
                scope: Some(scopes[i % scopes.len()]),
                max_attempts: Some(1),
                idempotency_key: Some(format!("poison-{i}")),
                ..EnqueueOptions::default()
            },
            ..NewJob::new("poison", b"x".to_vec())
        })
        .collect();
    q.enqueue_many(dead).unwrap();
    let o = LeaseOptions {
        kinds: vec!["poison".parse().unwrap()],
        ..LeaseOptions::default()
    };
    for j in q.lease_many("seeder", DEAD, &o).unwrap() {
        q.fail(&j.token(), "poisoned", false).unwrap();
    }
    let seeded = seed.elapsed();

    let (overview, ov) = median_ms(&h, "/api/v1/overview", 7);
    assert_eq!(ov["stats"]["total"]["total"], json!(JOBS));
    assert_eq!(ov["stats"]["by_kind"]["poison"]["dead"], json!(DEAD));
    let (dead_page, dp) = median_ms(&h, "/api/v1/jobs?state=dead&limit=50", 7);
    assert_eq!(dp["jobs"].as_array().unwrap().len(), 50);
    let (kind_page, kp) = median_ms(&h, "/api/v1/jobs?state=dead&kind=poison&limit=50", 7);
    assert_eq!(kp["jobs"][0]["kind"], json!("poison"));
    let scope = scopes[3];
    let (scope_page, sp) = median_ms(
        &h,
        &format!("/api/v1/jobs?scope={scope}&state=pending&kind=embed&limit=50"),
        7,
    );
    assert_eq!(sp["jobs"].as_array().unwrap().len(), 50);
    let (pending_page, _) = median_ms(&h, "/api/v1/jobs?state=pending&limit=50", 7);
    let first = dp["jobs"][0]["id"].as_str().unwrap().to_string();
    let (one, _) = median_ms(&h, &format!("/api/v1/jobs/{first}"), 7);
    let (tag_page, tp) = median_ms(&h, "/api/v1/jobs?tag=order-4711&limit=50", 7);
    assert_eq!(tp["jobs"].as_array().unwrap().len(), 10);
    let (find_tag, ft) = median_ms(&h, "/api/v1/find?text=order-4711", 7);
    assert_eq!(ft["matched"], json!(["tag"]));
    assert_eq!(ft["by_tag"]["jobs"].as_array().unwrap().len(), 10);
    // An idempotency key is found in its scope: poison-7 went to scopes[7].
    let (find_key, fk) = median_ms(
        &h,
        &format!("/api/v1/find?text=poison-7&scope={}", scopes[7]),
        7,
    );
    assert_eq!(fk["matched"], json!(["key"]));
    let (find_id, fi) = median_ms(&h, &format!("/api/v1/find?text={first}"), 7);
    assert_eq!(fi["by_id"]["id"], json!(first));
    // Straight to stderr: libtest captures print!, and this line is the
    // test's report (make test shows it).
    let _ = writeln!(
        std::io::stderr(),
        "ui api at {JOBS} jobs ({SCOPES} scopes, seeded in {:.1} s), median of 7 on this machine: \
         overview {overview:.2} ms, dead page {dead_page:.2} ms, dead+kind page {kind_page:.2} ms, \
         scope+state+kind page {scope_page:.2} ms, pending page {pending_page:.2} ms, one job {one:.2} ms, \
         tag page (10 jobs) {tag_page:.2} ms, find a tag {find_tag:.2} ms, find a key {find_key:.2} ms, \
         find an id {find_id:.2} ms",
        seeded.as_secs_f64()
    );
}
