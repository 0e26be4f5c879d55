//! `show` of a poison job whose log folded its early attempts into one
//! `attempt` line each.

use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{EnqueueOptions, LeaseOptions, ManualClock, Queue};

use crate::support::telha;

#[test]
fn show_groups_folded_attempts_before_the_full_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut config = crate::support::config();
    config.backoff.base = Duration::from_millis(1);
    config.backoff.cap = Duration::from_millis(1);
    let q = Queue::open_with_clock(&path, config, clock.clone()).unwrap();
    let id = q
        .enqueue("embed", b"", EnqueueOptions::default().max_attempts(100))
        .unwrap()
        .id;
    for i in 0..100 {
        let j = q
            .lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
        q.fail(&j.token(), &format!("boom {i}"), true).unwrap();
        clock.advance(Duration::from_millis(5));
    }
    let info = q.get(&id).unwrap().unwrap();
    assert_eq!(info.state, telha_jobs::State::Dead);
    let folded = info
        .events
        .iter()
        .filter(|e| e.transition == "attempt")
        .count();
    assert!(folded > 0, "the log folded nothing: {:?}", info.events);
    q.close();
    drop(q);

    let text = telha(&path, &["jobs", "show", &id.to_string()])
        .ok()
        .to_string();
    let head = text
        .find("earlier attempts, one line each")
        .expect("a heading for the folded attempts");
    let full = text.find("then in full:").expect("a heading for the rest");
    assert!(head < full, "{text}");
    let attempt_lines = text[head..full]
        .lines()
        .filter(|l| l.contains(" attempt "))
        .count();
    assert_eq!(attempt_lines, folded, "{text}");
    assert!(text.contains("100 failed of 100 allowed"), "{text}");
    let v = telha(&path, &["--json", "jobs", "show", &id.to_string()]).json();
    let marked = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["folded"] == true && e["transition"] == "attempt")
        .count();
    assert_eq!(marked, folded);
}
