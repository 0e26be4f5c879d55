//! The operator API at 100,000 scopes: the overview carries the top scopes
//! only (its JSON stays small), and `/api/v1/scopes` pages through every
//! scope exactly once. The overview's time beside a one-scope store is
//! measured and printed as a ratio, never asserted.

mod common;

use std::collections::HashSet;
use std::io::Write;
use std::time::Instant;

use common::http::Http;
use serde_json::json;
use telha_jobs::{EnqueueOptions, NewJob, Scope};
use telha_jobs_server::ServeOptions;

const SCOPES: u32 = 100_000;
const OVERVIEW_MAX_BYTES: usize = 100 * 1024;

fn nth(i: u32) -> Scope {
    let mut b = [0u8; 16];
    b[0] = 0x7e;
    b[12..].copy_from_slice(&i.to_be_bytes());
    Scope::from_bytes(b)
}

fn served() -> common::Served {
    common::served_with(
        common::config(),
        ServeOptions {
            ui: true,
            metrics_listen: Some("127.0.0.1:0".into()),
            ..ServeOptions::default()
        },
    )
}

/// One pending job in each of `scopes` scopes; scope `i < 20` holds
/// `22 - i`, so the top of the pending order is known.
fn seed(s: &common::Served, scopes: u32) {
    let jobs: Vec<NewJob> = (0..scopes)
        .flat_map(|i| std::iter::repeat_n(i, if i < 20 { 22 - i as usize } else { 1 }))
        .map(|i| NewJob {
            options: EnqueueOptions {
                scope: Some(nth(i)),
                ..EnqueueOptions::default()
            },
            ..NewJob::new("embed", vec![])
        })
        .collect();
    for chunk in jobs.chunks(10_000) {
        s.queue.enqueue_many(chunk.to_vec()).unwrap();
    }
}

/// The median of `runs` GETs of the overview, and its last body.
fn overview(h: &Http, runs: usize) -> (f64, Vec<u8>) {
    let mut t = Vec::new();
    let mut body = Vec::new();
    for _ in 0..runs {
        let s = Instant::now();
        let a = h.get("/api/v1/overview");
        t.push(s.elapsed());
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        body = a.body;
    }
    t.sort();
    (t[t.len() / 2].as_secs_f64() * 1000.0, body)
}

#[test]
fn the_overview_stays_small_at_100_000_scopes_and_the_scopes_view_pages_through_all() {
    let one = served();
    seed(&one, 1);
    let many = served();
    let started = Instant::now();
    seed(&many, SCOPES);
    let seeded = started.elapsed();
    let h1 = Http::new(one.server.as_ref().unwrap().metrics_addr().unwrap());
    let h = Http::new(many.server.as_ref().unwrap().metrics_addr().unwrap());
    overview(&h1, 3);
    overview(&h, 3);
    let (t1, _) = overview(&h1, 21);
    let (t, body) = overview(&h, 21);

    assert!(
        body.len() < OVERVIEW_MAX_BYTES,
        "the overview is {} bytes at {SCOPES} scopes",
        body.len()
    );
    let o: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let total = u64::from(SCOPES) + (2..=21).sum::<u64>();
    assert_eq!(o["stats"]["total"]["pending"], json!(total));
    let top: Vec<(&String, u64)> = o["stats"]["by_scope"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(s, c)| (s, c["pending"].as_u64().unwrap()))
        .collect();
    assert_eq!(top.len(), 20);
    for (i, (s, n)) in top.iter().enumerate() {
        assert_eq!(**s, nth(i as u32).to_string(), "the most pending first");
        assert_eq!(*n, 22 - i as u64);
    }
    assert!(o["stats"]["scopes_next"].is_string(), "more scopes exist");

    // The scopes view: by name, 1,000 a page, every scope once.
    let mut seen = HashSet::new();
    let mut path = "/api/v1/scopes?order=name&limit=1000".to_string();
    let mut pages = 0;
    let mut prev: Option<String> = None;
    loop {
        let a = h.get(&path);
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        let p = a.json();
        pages += 1;
        for row in p["scopes"].as_array().unwrap() {
            let s = row["scope"].as_str().unwrap().to_string();
            assert!(prev.as_ref().is_none_or(|x| *x < s), "ascending");
            prev = Some(s.clone());
            assert!(seen.insert(s), "a scope listed twice");
        }
        match p["next"].as_str() {
            Some(n) => path = format!("/api/v1/scopes?order=name&limit=1000&after={n}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), SCOPES as usize);
    assert_eq!(pages, 100);
    // A prefix search: the 16 scopes whose id ends in 0..f after this prefix.
    let prefix = &nth(0).to_string()[..35];
    let p = h.get(&format!("/api/v1/scopes?prefix={prefix}")).json();
    assert_eq!(p["scopes"].as_array().unwrap().len(), 16);
    assert_eq!(h.get("/api/v1/scopes?order=oldest").status, 400);
    assert_eq!(h.get("/api/v1/scopes?after=nope&order=pending").status, 400);

    // Straight to stderr: libtest captures print!, and this line is the
    // test's report.
    let _ = writeln!(
        std::io::stderr(),
        "ui overview at {SCOPES} scopes (seeded in {:.1} s): {} bytes, median of 21 {t:.2} ms; \
         one-scope store {t1:.2} ms; ratio {:.2}x",
        seeded.as_secs_f64(),
        body.len(),
        t / t1
    );
}
