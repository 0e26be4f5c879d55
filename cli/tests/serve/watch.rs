//! `telha jobs watch` through a real `telha serve`: one line per committed
//! transition, filtered, in commit order; refused without --server.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, JobStore, LeaseOptions};

use crate::support::{serve, telha};

#[test]
fn watch_prints_each_transition_of_the_server_as_a_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = s.client();
    let mut child = telha()
        .args(["--server", &s.url, "--json", "jobs", "watch"])
        .args(["--kind", "embed", "--count", "6", "--for", "60s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Subscribed once the server counts it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.metrics().unwrap().contains("telha_jobs_subscriptions 1") {
        assert!(Instant::now() < deadline, "the watch never subscribed");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.enqueue("other", b"x", EnqueueOptions::default()).unwrap();
    let ids: Vec<_> = (0..2)
        .map(|_| {
            c.enqueue("embed", b"x", EnqueueOptions::default())
                .unwrap()
                .id
        })
        .collect();
    let opts = LeaseOptions::default().kind("embed").unwrap();
    while let Some(j) = c.lease_next("w1", &opts).unwrap() {
        c.complete(&j.token(), None).unwrap();
    }
    let lines: Vec<serde_json::Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.len(), 6, "{lines:?}");
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let of = |id: &telha_jobs::JobId| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["id"] == id.to_string())
            .map(|l| l["transition"].as_str().unwrap().to_string())
            .collect()
    };
    for id in &ids {
        assert_eq!(of(id), ["enqueued", "leased", "completed"], "{lines:?}");
    }
    assert!(lines.iter().all(|l| l["kind"] == "embed"));
    let leased = lines.iter().find(|l| l["transition"] == "leased").unwrap();
    assert_eq!(leased["worker_id"], "w1");
    assert_eq!(leased["attempt"], 1);
}

#[test]
fn watch_needs_a_server_and_known_transitions() {
    let dir = tempfile::tempdir().unwrap();
    let o = telha()
        .args(["--db", dir.path().to_str().unwrap(), "jobs", "watch"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--server"),
        "{o:?}"
    );
    let o = telha()
        .args(["--server", "http://127.0.0.1:9", "jobs", "watch"])
        .args(["--transition", "exploded"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown transition"),
        "{o:?}"
    );
}

#[test]
fn show_prints_the_latest_progress_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let c = s.client();
    let id = c
        .enqueue("embed", b"x", EnqueueOptions::default())
        .unwrap()
        .id;
    let j = c
        .lease_next("w1", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    // 0x01 + msgpack "42%": what the bindings write for the string "42%".
    let p = b"\x01\xa342%".to_vec();
    assert!(c.heartbeat(&[j.token()], &[Some(p)], "w1").unwrap()[0].is_ok());
    let o = telha()
        .args(["--server", &s.url, "jobs", "show", &id.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("progress") && l.contains("\"42%\"")),
        "{text}"
    );
    let o = telha()
        .args([
            "--server",
            &s.url,
            "--json",
            "jobs",
            "show",
            &id.to_string(),
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["progress"]["value"], "42%", "{v}");
}
