//! `telha jobs cancel | delete | pause | resume | ls | stats` through a real
//! `telha serve` (`--server`), with a worker holding a lease over gRPC.

use std::process::Output;

use telha_jobs::{EnqueueOptions, ErrorKind, JobStore, LeaseOptions, State};

use crate::support::{serve, telha};

fn cli(url: &str, args: &[&str]) -> Output {
    telha()
        .arg("--server")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn an_operator_cancel_through_the_server_stops_a_remote_worker_and_ends_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let (url, c) = (s.url.clone(), s.client());
    let held = c
        .enqueue("embed", b"long", EnqueueOptions::default())
        .unwrap()
        .id;
    let waiting = c
        .enqueue("embed", b"next", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(job.id, held);

    // Delete of the leased job is refused (exit 2), by id both are cancelled.
    let o = cli(&url, &["jobs", "delete", &held.to_string()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cancel it first"),
        "{o:?}"
    );
    let v = json(&cli(
        &url,
        &[
            "--json",
            "jobs",
            "cancel",
            &held.to_string(),
            &waiting.to_string(),
        ],
    ));
    assert_eq!(v["results"][0]["outcome"], "requested", "{v}");
    assert_eq!(v["results"][1]["outcome"], "cancelled", "{v}");

    // The worker's next heartbeat answers CANCELLED; its settle records it.
    let answers = c.extend(&[job.token()], "w").unwrap();
    assert_eq!(
        answers[0].as_ref().unwrap_err().kind(),
        ErrorKind::Cancelled
    );
    let e = c.complete(&job.token(), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!(c.get(&held).unwrap().unwrap().state, State::Cancelled);

    let st = json(&cli(&url, &["--json", "jobs", "stats"]));
    assert_eq!(st["total"]["cancelled"], 2, "{st}");
    // Cancelled jobs cannot be cancelled again; they can be deleted.
    let o = cli(&url, &["jobs", "cancel", &held.to_string()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = cli(
        &url,
        &["jobs", "delete", &held.to_string(), &waiting.to_string()],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(c.get(&held).unwrap().is_none());
    let o = cli(&url, &["jobs", "delete", &held.to_string()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
}

#[test]
fn pause_filter_cancel_and_ls_through_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path(), &["--listen", "127.0.0.1:0"], &[]);
    let (url, c) = (s.url.clone(), s.client());
    for _ in 0..3 {
        c.enqueue("ingest:pdf", b"p", EnqueueOptions::default())
            .unwrap();
    }
    let embed = c
        .enqueue("embed", b"e", EnqueueOptions::default())
        .unwrap()
        .id;
    let v = json(&cli(
        &url,
        &["--json", "jobs", "pause", "--kind", "ingest:*"],
    ));
    assert_eq!(v["changed"], true, "{v}");
    let ls = cli(&url, &["jobs", "ls"]);
    let text = String::from_utf8_lossy(&ls.stdout);
    assert!(text.starts_with("paused: kind:ingest:*\n"), "{text}");
    assert!(text.contains("pending (paused)"), "{text}");
    // The server's workers lease around the paused family.
    let j = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(j.id, embed);
    assert!(c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .is_none());
    // A filter cancel without --yes and without a terminal changes nothing.
    let o = cli(&url, &["jobs", "cancel", "--kind", "ingest:*"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(c.stats().unwrap().total.pending, 3);
    let v = json(&cli(
        &url,
        &["--json", "jobs", "cancel", "--kind", "ingest:*", "--yes"],
    ));
    assert_eq!(v["cancelled"], 3, "{v}");
    let v = json(&cli(
        &url,
        &["--json", "jobs", "resume", "--kind", "ingest:*"],
    ));
    assert_eq!(v["changed"], true, "{v}");
    assert!(c.paused().unwrap().is_empty());
    let o = cli(&url, &["jobs", "pause", "--scope", "nil"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
