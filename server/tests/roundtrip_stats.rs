//! The stats and metrics RPCs through `RemoteQueue` against an in-process
//! server: the opt-in oldest-ready age and the wait/run histograms.

mod common;

use telha_jobs::{EnqueueOptions, JobStore, LeaseOptions};

#[test]
fn stats_carry_the_oldest_ready_age_and_the_metrics_the_histograms() {
    let s = common::served();
    let c = s.client();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let opts = EnqueueOptions::default().run_at(now - 90_000);
    c.enqueue("ocr", b"{}", opts).unwrap();
    let asked = telha_jobs::StatsQuery {
        oldest_ready: true,
        ..Default::default()
    };
    let st = c.stats_with(&asked).unwrap();
    let age = st.oldest_ready_ms["ocr"];
    assert!((90_000..150_000).contains(&age), "{age}");
    assert_eq!(st.by_kind, s.queue.stats().unwrap().by_kind);
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    c.complete(&job.token(), None).unwrap();
    let m = c.metrics().unwrap();
    assert!(
        m.contains("telha_jobs_wait_seconds_count{kind=\"ocr\"} 1\n"),
        "{m}"
    );
    assert!(m.contains("telha_jobs_run_seconds_count{kind=\"ocr\",outcome=\"completed\"} 1\n"));
    assert!(m.contains("telha_jobs_oldest_ready_seconds{kind=\"ocr\"} 0\n"));
}
